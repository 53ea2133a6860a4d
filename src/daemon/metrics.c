/*
 * metrics.c - /metrics and /healthz over libevent's evhttp (metrics.h).
 *
 * Connections are counted through the bufferevent each one gets: evhttp asks
 * make_bev() for it, and a pass-through filter around the socket tells
 * conn_gone() when evhttp frees it.  At max_connections every listener is
 * disabled, and enabled again once one connection has gone.
 *
 * The exposition reads the engine.stats object (tkd_stats_json), so the
 * two can never disagree, plus the control server's counters and the
 * frame-time histogram kept here.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "daemon.h"
#include "metrics.h"

/* Frame-time histogram bounds (seconds), as written in the le labels. */
static const char *const bucket_text[] = {"0.0001", "0.00025", "0.0005", "0.001", "0.002",
                                          "0.004",  "0.008",   "0.0166", "0.025", "0.05",
                                          "0.1",    "0.25",    "0.5",    "1",     "2.5"};
#define NBUCKETS (sizeof bucket_text / sizeof bucket_text[0])

#define MAX_LISTEN 8   /* addresses in [metrics] listen                  */
#define MAX_PENDING 1024 /* connections accepted in one loop pass: at most
                            max_connections (<= 1024), as a listener stops
                            accepting the moment it reaches the limit    */

struct tkd_metrics {
    tkd *d;
    struct evhttp *http;
    struct evhttp_bound_socket *bound[MAX_LISTEN];
    char *unix_path[MAX_LISTEN]; /* socket files to unlink (owned), or NULL */
    size_t nbound;
    size_t open;                 /* connections now                          */
    struct bufferevent *pending[MAX_PENDING]; /* accepted, not yet adopted   */
    size_t npending;
    struct event *adopt;         /* adopts the pending connections           */
    bool paused;                 /* listeners disabled at max_connections    */
    bool closing;                /* tkd_metrics_free under way               */
    uint64_t bucket_ns[NBUCKETS];        /* ns, upper bounds                 */
    uint64_t buckets[NBUCKETS + 1];      /* frames per bucket; last: +Inf    */
    uint64_t frames;             /* frames recorded                          */
    double work_s;               /* s, sum of their work                     */
    double start_time;           /* s since the epoch, when this started     */
    uint64_t scrapes;            /* /metrics answered                        */
};

/* ---- addresses ------------------------------------------------------------------- */

typedef struct addr {
    struct sockaddr_storage ss;
    socklen_t len;
    const char *unix_path; /* points into the item, or NULL for TCP */
} addr;

static int parse_addr(const char *item, addr *out, char *reason, size_t rlen)
{
    memset(out, 0, sizeof *out);
    const char *path = NULL;
    if (!strncmp(item, "unix:", 5))
        path = item + 5;
    else if (item[0] == '/')
        path = item;
    if (path) {
        struct sockaddr_un *un = (struct sockaddr_un *)&out->ss;
        if (path[0] != '/') {
            snprintf(reason, rlen, "a Unix socket path must be absolute (unix:/path)");
            return -1;
        }
        if (strlen(path) >= sizeof un->sun_path) {
            snprintf(reason, rlen, "Unix socket path longer than %zu bytes",
                     sizeof un->sun_path - 1);
            return -1;
        }
        un->sun_family = AF_UNIX;
        memcpy(un->sun_path, path, strlen(path) + 1);
        out->len = (socklen_t)sizeof *un;
        out->unix_path = path;
        return 0;
    }
    char tmp[128];
    if (!strncmp(item, "localhost:", 10)) {
        snprintf(tmp, sizeof tmp, "127.0.0.1:%s", item + 10);
        item = tmp;
    }
    const char *colon = strrchr(item, ':');
    if (!colon || colon[1] == '\0' || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
        atol(colon + 1) < 1 || atol(colon + 1) > 65535) {
        snprintf(reason, rlen,
                 "not an address: expected IP:PORT (port 1-65535), [IPv6]:PORT, "
                 "localhost:PORT, unix:/path or /path");
        return -1;
    }
    int len = (int)sizeof out->ss;
    if (evutil_parse_sockaddr_port(item, (struct sockaddr *)&out->ss, &len) != 0) {
        snprintf(reason, rlen, "not an IP address with a port (a host name is not resolved; "
                               "use a literal IP or localhost)");
        return -1;
    }
    out->len = (socklen_t)len;
    return 0;
}

int tkd_metrics_check_listen(const char *item, char *reason, size_t rlen)
{
    addr a;
    return parse_addr(item, &a, reason, rlen);
}

/* A listening socket for `a`; -1 with `err` set.  A stale Unix socket file
 * is replaced; one that something still accepts on is not. */
static int open_listener(const addr *a, const char *item, char *err, size_t errlen)
{
    int fam = ((const struct sockaddr *)&a->ss)->sa_family;
    if (a->unix_path) {
        struct stat st;
        if (lstat(a->unix_path, &st) == 0) {
            if (!S_ISSOCK(st.st_mode)) {
                snprintf(err, errlen, "[metrics] listen = %s: %s exists and is not a socket",
                         item, a->unix_path);
                return -1;
            }
            int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (probe >= 0 && connect(probe, (const struct sockaddr *)&a->ss, a->len) == 0) {
                close(probe);
                snprintf(err, errlen, "[metrics] listen = %s: something is listening on %s",
                         item, a->unix_path);
                return -1;
            }
            if (probe >= 0)
                close(probe);
            unlink(a->unix_path);
        }
    }
    int fd = socket(fam, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "[metrics] listen = %s: socket: %s", item, strerror(errno));
        return -1;
    }
    int one = 1;
    if (!a->unix_path)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)&a->ss, a->len) != 0) {
        snprintf(err, errlen, "[metrics] listen = %s: %s", item, strerror(errno));
        close(fd);
        return -1;
    }
    if (listen(fd, 16) != 0) {
        snprintf(err, errlen, "[metrics] listen = %s: %s", item, strerror(errno));
        close(fd);
        if (a->unix_path)
            unlink(a->unix_path);
        return -1;
    }
    if (a->unix_path)
        chmod(a->unix_path, 0660);
    return fd;
}

/* ---- connection bound ------------------------------------------------------------ */

static void set_accepting(tkd_metrics *m, bool on)
{
    if (m->closing || m->paused == !on)
        return;
    m->paused = !on;
    for (size_t i = 0; i < m->nbound; i++) {
        struct evconnlistener *l = evhttp_bound_socket_get_listener(m->bound[i]);
        if (on)
            evconnlistener_enable(l);
        else
            evconnlistener_disable(l);
    }
}

static void conn_closed(struct evhttp_connection *evcon, void *ud)
{
    (void)evcon;
    tkd_metrics *m = ud;
    if (m->open)
        m->open--;
    if (m->open < m->d->cfg.metrics_max_connections)
        set_accepting(m, true);
}

/*
 * evhttp creates a connection's bufferevent through make_bev() and only
 * then the connection around it, so the connection is adopted a moment
 * later, from an event made active here: by then the bufferevent's callback
 * argument is the connection (evhttp's own), whose close callback counts it
 * out.  The reference taken here keeps the bufferevent readable meanwhile;
 * if evhttp already freed it (its callbacks are cleared), it is counted out
 * at once.
 */
static struct bufferevent *make_bev(struct event_base *base, void *ud)
{
    tkd_metrics *m = ud;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!bev || m->npending == MAX_PENDING)
        return bev; /* NULL: evhttp fails the connection; full: cannot be */
    bufferevent_incref(bev);
    m->pending[m->npending++] = bev;
    m->open++;
    if (m->open >= m->d->cfg.metrics_max_connections)
        set_accepting(m, false);
    event_active(m->adopt, EV_TIMEOUT, 0);
    return bev;
}

static void adopt(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    tkd_metrics *m = ud;
    for (size_t i = 0; i < m->npending; i++) {
        void *arg = NULL;
        bufferevent_getcb(m->pending[i], NULL, NULL, NULL, &arg);
        if (arg)
            evhttp_connection_set_closecb(arg, conn_closed, m);
        else
            conn_closed(NULL, m);
        bufferevent_decref(m->pending[i]);
    }
    m->npending = 0;
}

/* ---- exposition ------------------------------------------------------------------- */

/* Label value escaping of the text format: \\, \" and \n. */
static void put_label(struct evbuffer *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            evbuffer_add(b, "\\\\", 2);
        else if (*s == '"')
            evbuffer_add(b, "\\\"", 2);
        else if (*s == '\n')
            evbuffer_add(b, "\\n", 2);
        else
            evbuffer_add(b, s, 1);
    }
}

static void put_num(struct evbuffer *b, double v)
{
    char num[TKD_JSONW_REAL_MAX];
    if (isnan(v))
        evbuffer_add(b, "NaN", 3);
    else if (isinf(v))
        evbuffer_add_printf(b, "%cInf", v > 0 ? '+' : '-');
    else if (v == floor(v) && fabs(v) < 1e15)
        evbuffer_add_printf(b, "%.0f", v);
    else
        evbuffer_add(b, num, tkd_jsonw_real(num, v));
}

static void head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{label="value"} v, or name v when label is NULL. */
static void sample(struct evbuffer *b, const char *name, const char *label, const char *value,
                   double v)
{
    evbuffer_add_printf(b, "%s", name);
    if (label) {
        evbuffer_add_printf(b, "{%s=\"", label);
        put_label(b, value);
        evbuffer_add(b, "\"}", 2);
    }
    evbuffer_add(b, " ", 1);
    put_num(b, v);
    evbuffer_add(b, "\n", 1);
}

static double num(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

typedef struct req_ctx {
    struct evbuffer *b;
    int pass;
} req_ctx;

static void put_method(void *ud, const char *name, const tkd_reqstat *st)
{
    req_ctx *c = ud;
    switch (c->pass) {
    case 0:
        sample(c->b, "tickd_requests_total", "method", name, (double)st->calls);
        break;
    case 1:
        for (size_t i = 0; i < TKD_REQSTATS_NCODES; i++) {
            if (!st->by_code[i])
                continue;
            char code[16];
            if (tkd_reqstats_code_at(i))
                snprintf(code, sizeof code, "%d", tkd_reqstats_code_at(i));
            else
                snprintf(code, sizeof code, "other");
            evbuffer_add(c->b, "tickd_request_errors_total{method=\"", 35);
            put_label(c->b, name);
            evbuffer_add_printf(c->b, "\",code=\"%s\"} %" PRIu64 "\n", code, st->by_code[i]);
        }
        break;
    case 2:
        sample(c->b, "tickd_request_seconds_total", "method", name, (double)st->ns / 1e9);
        break;
    case 3:
        sample(c->b, "tickd_request_max_seconds", "method", name, (double)st->max_ns / 1e9);
        break;
    }
}

static void exposition(tkd_metrics *m, struct evbuffer *b)
{
    tkd *d = m->d;
    json_t *st = tkd_stats_json(d);
    tkd_server_stats ss;
    memset(&ss, 0, sizeof ss);
    if (d->srv)
        tkd_server_get_stats(d->srv, &ss);

    head(b, "tickd_build_info", "gauge", "Build of the running daemon (always 1).");
    evbuffer_add(b, "tickd_build_info{version=\"", 26);
    put_label(b, TKD_VERSION);
    evbuffer_add(b, "\",protocol=\"1\"} 1\n", 18);
    head(b, "tickd_start_time_seconds", "gauge",
         "When the daemon started, in seconds since the Unix epoch.");
    sample(b, "tickd_start_time_seconds", NULL, NULL, m->start_time);
    head(b, "tickd_resident_memory_bytes", "gauge", "Resident set size of the daemon.");
    sample(b, "tickd_resident_memory_bytes", NULL, NULL, num(st, "rss_bytes"));

    head(b, "tickd_frames_total", "counter", "Frames run since start.");
    sample(b, "tickd_frames_total", NULL, NULL, num(st, "frame"));
    head(b, "tickd_overruns_total", "counter", "Frames whose work exceeded the target period.");
    sample(b, "tickd_overruns_total", NULL, NULL, num(st, "overruns"));
    head(b, "tickd_target_tick_rate_hertz", "gauge", "Max tick rate; 0 = unlimited.");
    sample(b, "tickd_target_tick_rate_hertz", NULL, NULL, num(st, "target_hz"));
    head(b, "tickd_ticks_per_second", "gauge",
         "Frames per second (TPS) over the last 1 s, 10 s and 1 min.");
    sample(b, "tickd_ticks_per_second", "window", "1s", num(st, "tps_1s"));
    sample(b, "tickd_ticks_per_second", "window", "10s", num(st, "tps_10s"));
    sample(b, "tickd_ticks_per_second", "window", "1m", num(st, "tps_1m"));
    head(b, "tickd_frame_work_window_seconds", "gauge",
         "Work per frame (MSPT) over the last 10 s: mean, p50, p95, p99, max.");
    json_t *mspt = json_object_get(st, "mspt");
    static const char *const mk[] = {"mean", "p50", "p95", "p99", "max"};
    for (size_t i = 0; i < 5; i++)
        sample(b, "tickd_frame_work_window_seconds", "stat", mk[i], num(mspt, mk[i]) / 1e3);

    head(b, "tickd_frame_work_seconds", "histogram",
         "Work per frame (sleep excluded), since start.");
    uint64_t cum = 0;
    for (size_t i = 0; i < NBUCKETS; i++) {
        cum += m->buckets[i];
        evbuffer_add_printf(b, "tickd_frame_work_seconds_bucket{le=\"%s\"} %" PRIu64 "\n",
                            bucket_text[i], cum);
    }
    cum += m->buckets[NBUCKETS];
    evbuffer_add_printf(b, "tickd_frame_work_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n", cum);
    evbuffer_add(b, "tickd_frame_work_seconds_sum ", 29);
    put_num(b, m->work_s);
    evbuffer_add_printf(b, "\ntickd_frame_work_seconds_count %" PRIu64 "\n", m->frames);

    head(b, "tickd_frame_gap_max_seconds", "gauge",
         "Largest gap between two frame starts over the last 10 s (what clients feel).");
    sample(b, "tickd_frame_gap_max_seconds", NULL, NULL, num(st, "gap_max_ms_10s") / 1e3);
    head(b, "tickd_last_frame_work_seconds", "gauge",
         "The last frame's work by part: requests, ticks, timers, tickables, ticker, other.");
    json_t *split = json_object_get(st, "split_ms");
    static const char *const parts[] = {"requests", "ticks", "timers", "tickables", "ticker",
                                        "other"};
    for (size_t i = 0; i < 6; i++)
        sample(b, "tickd_last_frame_work_seconds", "part", parts[i], num(split, parts[i]) / 1e3);
    json_t *thr = json_object_get(st, "threads");
    head(b, "tickd_tick_threads", "gauge",
         "Threads that run ticks, the frame thread included ([engine] threads).");
    sample(b, "tickd_tick_threads", NULL, NULL, num(thr, "threads"));
    head(b, "tickd_last_frame_worker_seconds", "gauge",
         "Tick work the last frame did on worker threads (summed over them).");
    sample(b, "tickd_last_frame_worker_seconds", NULL, NULL, num(thr, "worker_ms") / 1e3);
    head(b, "tickd_slow_requests_total", "counter",
         "Requests and timer actions over [stats] slow_request_ms.");
    sample(b, "tickd_slow_requests_total", NULL, NULL, num(st, "slow_requests"));
    head(b, "tickd_log_suppressed_total", "counter",
         "Log messages suppressed by flood control.");
    sample(b, "tickd_log_suppressed_total", NULL, NULL, num(st, "log_suppressed"));

    head(b, "tickd_entities", "gauge", "Live entities.");
    sample(b, "tickd_entities", NULL, NULL, num(st, "entities"));
    head(b, "tickd_tick_functions", "gauge", "Registered tick functions by state.");
    json_t *tf = json_object_get(st, "tick_functions");
    static const char *const tk[] = {"enabled", "disabled", "cooling_down"};
    for (size_t i = 0; i < 3; i++)
        sample(b, "tickd_tick_functions", "state", tk[i], num(tf, tk[i]));
    head(b, "tickd_timers", "gauge", "Timers by status.");
    json_t *tm = json_object_get(st, "timers");
    static const char *const tmk[] = {"active", "paused", "pending"};
    for (size_t i = 0; i < 3; i++)
        sample(b, "tickd_timers", "status", tmk[i], num(tm, tmk[i]));
    head(b, "tickd_timer_actions_total", "counter", "Timer actions run.");
    sample(b, "tickd_timer_actions_total", NULL, NULL, num(st, "timer_actions"));
    head(b, "tickd_tickables", "gauge", "Registered tickable objects.");
    sample(b, "tickd_tickables", NULL, NULL, num(st, "tickables"));

    req_ctx rc = {b, 0};
    static const char *const rh[][3] = {
        {"tickd_requests_total", "counter",
         "Requests executed per method (timer actions included); method \"(unknown)\" "
         "counts names that are not methods."},
        {"tickd_request_errors_total", "counter",
         "Requests answered with an error, per method and JSON-RPC code."},
        {"tickd_request_seconds_total", "counter", "Time spent executing requests per method."},
        {"tickd_request_max_seconds", "gauge", "Longest single execution per method since start."},
    };
    for (rc.pass = 0; rc.pass < 4; rc.pass++) {
        head(b, rh[rc.pass][0], rh[rc.pass][1], rh[rc.pass][2]);
        tkd_reqstats_foreach(&d->reqstats, tkd_method_names(), put_method, &rc);
    }
    head(b, "tickd_control_messages_total", "counter",
         "Request objects received on the control socket (batch members one each, an "
         "unparsable line one).");
    sample(b, "tickd_control_messages_total", NULL, NULL, (double)ss.requests);
    head(b, "tickd_control_errors_total", "counter",
         "Error responses produced by the control socket, parse and limit errors included.");
    sample(b, "tickd_control_errors_total", NULL, NULL, (double)ss.errors);
    head(b, "tickd_clients", "gauge", "Open control socket connections.");
    sample(b, "tickd_clients", NULL, NULL, (double)ss.clients);
    head(b, "tickd_connections_accepted_total", "counter", "Control socket connections accepted.");
    sample(b, "tickd_connections_accepted_total", NULL, NULL, (double)ss.accepted);
    head(b, "tickd_connections_rejected_total", "counter",
         "Control socket connections refused over control.max_clients.");
    sample(b, "tickd_connections_rejected_total", NULL, NULL, (double)ss.rejected);
    head(b, "tickd_client_timeouts_total", "counter",
         "Clients closed by control.idle_timeout_s or control.line_timeout_s.");
    sample(b, "tickd_client_timeouts_total", NULL, NULL, (double)ss.timeouts);
    head(b, "tickd_requests_refused_input_total", "counter",
         "Requests refused over control.max_input.");
    sample(b, "tickd_requests_refused_input_total", NULL, NULL, (double)ss.input_refused);
    head(b, "tickd_events_sent_total", "counter", "Event notifications queued to subscribers.");
    sample(b, "tickd_events_sent_total", NULL, NULL, (double)ss.events_sent);
    head(b, "tickd_events_dropped_total", "counter",
         "Event notifications dropped for subscribers that could not keep up.");
    sample(b, "tickd_events_dropped_total", NULL, NULL, (double)ss.events_dropped);
    head(b, "tickd_metrics_scrapes_total", "counter", "Answers to GET /metrics.");
    sample(b, "tickd_metrics_scrapes_total", NULL, NULL, (double)++m->scrapes);
    json_decref(st);
}

/* ---- health ------------------------------------------------------------------------ */

/* 0 when healthy, else 503 with the reason in `why`. */
static int health(tkd_metrics *m, char *why, size_t len)
{
    tkd *d = m->d;
    tk_engine_stats st;
    tk_engine_get_stats(d->engine, &st);
    uint64_t now = tk_clock_now_ns();
    double window = d->cfg.metrics_healthz_stall_s;
    if (st.target_hz > 0 && 2.0 / st.target_hz > window)
        window = 2.0 / st.target_hz;
    double since = st.last.start_ns && now > st.last.start_ns
                       ? (double)(now - st.last.start_ns) / 1e9
                       : 0.0;
    if (st.frame > 0 && since > window) {
        snprintf(why, len, "stalled: no frame started for %.1f s (window %.1f s)\n", since,
                 window);
        return 503;
    }
    double floor_tps = d->cfg.metrics_healthz_min_tps;
    if (floor_tps < 0)
        floor_tps = st.target_hz / 2.0;
    if (floor_tps > 0 && st.frame > 0 && st.tps_1s < floor_tps) {
        snprintf(why, len, "slow: %.1f TPS over the last second, below the floor of %g TPS\n",
                 st.tps_1s, floor_tps);
        return 503;
    }
    snprintf(why, len, "ok\n");
    return 200;
}

/* ---- requests ----------------------------------------------------------------------- */

static void reply_text(struct evhttp_request *req, int code, const char *reason,
                       const char *body)
{
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(req, 500, NULL);
        return;
    }
    evbuffer_add(b, body, strlen(body));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; charset=utf-8");
    evhttp_send_reply(req, code, reason, b);
    evbuffer_free(b);
}

static void on_request(struct evhttp_request *req, void *ud)
{
    tkd_metrics *m = ud;
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    if (!path)
        path = "/";
    bool known = !strcmp(path, "/metrics") || !strcmp(path, "/healthz");
    if (!known) {
        reply_text(req, 404, "Not Found", "not found: try /metrics or /healthz\n");
        return;
    }
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET");
        reply_text(req, 405, "Method Not Allowed", "method not allowed: only GET\n");
        return;
    }
    if (!strcmp(path, "/healthz")) {
        char why[256];
        int code = health(m, why, sizeof why);
        reply_text(req, code, code == 200 ? "OK" : "Service Unavailable", why);
        return;
    }
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        evhttp_send_error(req, 500, NULL);
        return;
    }
    exposition(m, b);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      TKD_METRICS_CONTENT_TYPE);
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int tkd_metrics_new(tkd *d, tkd_metrics **out, char *err, size_t errlen)
{
    *out = NULL;
    const tkd_strlist *l = &d->cfg.metrics_listen;
    if (l->count == 0)
        return 0;
    if (l->count > MAX_LISTEN) {
        snprintf(err, errlen, "[metrics] listen: at most %d addresses", MAX_LISTEN);
        return -1;
    }
    tkd_metrics *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "[metrics] listen: out of memory");
        return -1;
    }
    m->d = d;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    m->start_time = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    for (size_t i = 0; i < NBUCKETS; i++)
        m->bucket_ns[i] = (uint64_t)llround(strtod(bucket_text[i], NULL) * 1e9);
    m->http = evhttp_new(d->base);
    if (!m->http) {
        snprintf(err, errlen, "[metrics] listen: cannot create the HTTP server");
        free(m);
        return -1;
    }
    evhttp_set_max_headers_size(m->http, TKD_METRICS_MAX_HEADERS);
    evhttp_set_max_body_size(m->http, TKD_METRICS_MAX_BODY);
    evhttp_set_timeout(m->http, TKD_METRICS_TIMEOUT_S);
    /* Every method reaches on_request, which answers 405 (evhttp: 501). */
    evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                            EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
    m->adopt = event_new(d->base, -1, 0, adopt, m);
    if (!m->adopt) {
        snprintf(err, errlen, "[metrics] listen: cannot create an event");
        goto fail;
    }
    evhttp_set_bevcb(m->http, make_bev, m);
    evhttp_set_gencb(m->http, on_request, m);
    for (size_t i = 0; i < l->count; i++) {
        addr a;
        char reason[256];
        if (parse_addr(l->items[i], &a, reason, sizeof reason) != 0) {
            snprintf(err, errlen, "[metrics] listen = %s: %s", l->items[i], reason);
            goto fail;
        }
        int fd = open_listener(&a, l->items[i], err, errlen);
        if (fd < 0)
            goto fail;
        m->bound[m->nbound] = evhttp_accept_socket_with_handle(m->http, fd);
        if (!m->bound[m->nbound]) {
            close(fd);
            snprintf(err, errlen, "[metrics] listen = %s: cannot serve it", l->items[i]);
            if (a.unix_path)
                unlink(a.unix_path);
            goto fail;
        }
        m->unix_path[m->nbound] = a.unix_path ? strdup(a.unix_path) : NULL;
        m->nbound++;
        tk_log_info("metrics: serving http%s%s/metrics and /healthz", a.unix_path ? "+unix:" : "://",
                    l->items[i] + (strncmp(l->items[i], "unix:", 5) ? 0 : 5));
    }
    *out = m;
    return 0;
fail:
    tkd_metrics_free(m);
    return -1;
}

void tkd_metrics_frame(tkd_metrics *m, const tk_frame_info *f)
{
    if (!m)
        return;
    size_t i = 0;
    while (i < NBUCKETS && f->work_ns > m->bucket_ns[i])
        i++;
    m->buckets[i]++;
    m->frames++;
    m->work_s += (double)f->work_ns / 1e9;
}

void tkd_metrics_free(tkd_metrics *m)
{
    if (!m)
        return;
    m->closing = true;
    if (m->adopt)
        adopt(-1, 0, m); /* drops the references it holds */
    if (m->http)
        evhttp_free(m->http); /* closes listeners and connections */
    if (m->adopt)
        event_free(m->adopt);
    for (size_t i = 0; i < m->nbound; i++) {
        if (m->unix_path[i])
            unlink(m->unix_path[i]);
        free(m->unix_path[i]);
    }
    free(m);
}
