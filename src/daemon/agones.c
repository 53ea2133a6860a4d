/*
 * agones.c - the Agones SDK server's REST API, client side (agones.h).
 *
 * Four channels, each one evhttp connection to 127.0.0.1:PORT with at most
 * one request in flight:
 *   control  a FIFO of requests: POST /ready (retried), GET /gameserver,
 *            PUT /metadata/annotation (or label), POST /allocate and
 *            /reserve for the protocol;
 *   health   POST /health, from the frame loop's beat;
 *   watch    GET /watch/gameserver, a chunked stream of JSON lines, read as
 *            it comes (a fresh connection per attempt: its timeouts end once
 *            the headers are in, as the stream may rest for hours);
 *   bye      POST /shutdown at a graceful shutdown, on its own connection so
 *            that a stalled control request cannot hold it back.
 * Requests other than the watch say "Connection: close": a keep-alive
 * connection that the server drops at the moment a request goes out would
 * fail that request; one short localhost connection per request is cheap.
 *
 * libevent 2.1's client calls: the request callback with req NULL after an
 * error (the error callback first, with errno as it was), or with a request
 * whose response code is 0 when no connection could be made.  A connection
 * is never freed inside its own callbacks: the watch's is freed from an
 * event made active for it (watch_reset), the others only at shutdown.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "agones.h"
#include "daemon.h"

typedef enum op_kind { K_READY, K_GAMESERVER, K_META, K_PASS } op_kind;

/* A control request, queued until the one before it is answered. */
typedef struct op {
    struct op *next;
    op_kind kind;
    enum evhttp_cmd_type cmd;
    char path[32];              /* "/reserve"                                  */
    char *body;                 /* JSON text (owned), or NULL                  */
    tkd_call *call;             /* K_PASS: the protocol call; NULL: an action  */
    char method[24];            /* K_PASS: "agones.reserve"                    */
} op;

typedef struct chan {
    struct tkd_agones *a;
    const char *what;                   /* for messages: "health"              */
    struct evhttp_connection *evcon;    /* NULL until first used               */
    struct evhttp_request *req;         /* in flight (owned by libevent)       */
    int error;                          /* evhttp_request_error of the failure
                                           being reported, -1: none            */
    uint64_t sent_ns;                   /* monotonic, when `req` was made      */
    int sys_errno;                      /* errno at that failure               */
} chan;

typedef enum watch_state {
    W_OFF,       /* not started, or stopped                              */
    W_WAIT,      /* waiting for the retry timer                          */
    W_OPEN,      /* request sent, headers not yet in                     */
    W_STREAM     /* reading the stream                                   */
} watch_state;

struct tkd_agones {
    tkd *d;
    unsigned port;
    char sdk[32];               /* "127.0.0.1:9358": messages, Host header     */
    chan ctl, health, watch, bye;

    op *queue, *queue_tail;     /* control requests not yet sent               */
    size_t queued;              /* K_PASS among them                           */
    op *cur;                    /* the control request in flight               */
    struct event *kick;         /* sends the next control request             */

    bool started, stopping;
    bool ready;                 /* POST /ready was accepted (2xx)              */
    unsigned ready_tries;       /* failed tries so far                         */
    struct event *ready_timer;

    watch_state wstate;
    unsigned watch_tries;       /* failed attempts since the last message      */
    struct event *watch_timer;  /* next attempt                                */
    struct event *watch_reset;  /* frees the watch connection                  */
    tkd_agones_lines lines;
    uint64_t stream_lines;      /* GameServers read on the current stream      */

    uint64_t next_health_ns;    /* monotonic; 0 = at once                      */
    uint64_t next_meta_ns;
    unsigned meta_inflight;     /* metadata requests not yet answered          */
    long long meta_tps, meta_entities; /* last written; -1 = none             */

    tkd_agones_gs gs;           /* the GameServer as last seen                 */
    bool known;                 /* gs holds one                                */
    bool reachable;             /* the last request got an HTTP answer         */
    bool down_logged;           /* "not answering" was logged                  */
    uint64_t down_ns;           /* monotonic, when it was; answers to requests
                                   made before do not count as "again"        */
    bool ready_warned;          /* a refused /ready was logged                 */
    uint64_t gen;               /* bumped when tkd_agones_info changes         */

    bool bye_done, bye_ok;      /* POST /shutdown answered / with 2xx          */
    char bye_why[160];
};

/* ---- parsing ---------------------------------------------------------------------------- */

void tkd_agones_lines_init(tkd_agones_lines *l, size_t max)
{
    memset(l, 0, sizeof *l);
    l->max = max;
}

void tkd_agones_lines_free(tkd_agones_lines *l)
{
    free(l->buf);
    memset(l, 0, sizeof *l);
}

/* Append n bytes to the partial line; false past max. */
static bool lines_add(tkd_agones_lines *l, const char *p, size_t n)
{
    if (n == 0)
        return true; /* l->buf may still be NULL */
    if (n > l->max - l->len)
        return false;
    if (l->len + n > l->cap) {
        size_t cap = l->cap ? l->cap : 4096;
        while (cap < l->len + n)
            cap *= 2;
        if (cap > l->max)
            cap = l->max;
        char *b = realloc(l->buf, cap);
        if (!b)
            return false;
        l->buf = b;
        l->cap = cap;
    }
    memcpy(l->buf + l->len, p, n);
    l->len += n;
    return true;
}

int tkd_agones_lines_feed(tkd_agones_lines *l, const char *p, size_t n, tkd_agones_line_fn fn,
                          void *ud)
{
    int rc = 0;
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t part = nl ? (size_t)(nl - p) : n;
        if (l->skipping) {
            if (nl)
                l->skipping = false;
        } else if (!lines_add(l, p, part)) {
            l->len = 0;
            l->skipping = !nl;
            rc = -1;
        } else if (nl) {
            size_t len = l->len;
            if (len && l->buf[len - 1] == '\r')
                len--;
            if (len)
                fn(ud, l->buf, len);
            l->len = 0;
        }
        if (!nl)
            break;
        p = nl + 1;
        n -= part + 1;
    }
    return rc;
}

static bool letters(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
            return false;
    return true;
}

int tkd_agones_parse(const char *text, size_t len, bool wrapped, tkd_agones_gs *out, char *why,
                     size_t whylen)
{
    memset(out, 0, sizeof *out);
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    if (!root) {
        snprintf(why, whylen, "not JSON (line %d, column %d)", jerr.line, jerr.column);
        return -1;
    }
    int rc = -1;
    json_t *gs = root;
    if (!json_is_object(root)) {
        snprintf(why, whylen, "not a JSON object");
        goto done;
    }
    if (wrapped) {
        gs = json_object_get(root, "result");
        if (!gs) {
            snprintf(why, whylen, json_object_get(root, "error")
                                      ? "an error message instead of a GameServer"
                                      : "no \"result\" member");
            goto done;
        }
        if (!json_is_object(gs)) {
            snprintf(why, whylen, "\"result\" is not an object");
            goto done;
        }
    }
    json_t *status = json_object_get(gs, "status");
    json_t *state = json_is_object(status) ? json_object_get(status, "state") : NULL;
    if (!json_is_string(state)) {
        snprintf(why, whylen, "no status.state string");
        goto done;
    }
    const char *st = json_string_value(state);
    if (!letters(st, TKD_AGONES_STATE_MAX)) {
        snprintf(why, whylen, "status.state is not a state name (1 to %d letters)",
                 TKD_AGONES_STATE_MAX);
        goto done;
    }
    snprintf(out->state, sizeof out->state, "%s", st);
    json_t *meta = json_object_get(gs, "object_meta");
    json_t *name = json_is_object(meta) ? json_object_get(meta, "name") : NULL;
    const char *nm = json_is_string(name) ? json_string_value(name) : "";
    bool printable = strlen(nm) <= TKD_AGONES_NAME_MAX;
    for (const char *c = nm; printable && *c; c++)
        printable = *c > 0x20 && *c < 0x7f;
    if (printable)
        snprintf(out->name, sizeof out->name, "%s", nm);
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* ---- plumbing ----------------------------------------------------------------------------- */

static double cfg_timeout(const tkd_agones *a) { return a->d->cfg.agones_timeout_s; }

static struct timeval tv_of(double s)
{
    if (s < 0)
        s = 0;
    struct timeval tv = {(time_t)s, (suseconds_t)((s - floor(s)) * 1e6)};
    return tv;
}

/* The delay before try number `tries` (1 = first retry): 0.1 s doubling,
 * at most [agones] retry_max_s. */
static double backoff(const tkd_agones *a, unsigned tries)
{
    double s = TKD_AGONES_BACKOFF_MIN;
    for (unsigned i = 1; i < tries && s < a->d->cfg.agones_retry_max_s; i++)
        s *= 2;
    return s < a->d->cfg.agones_retry_max_s ? s : a->d->cfg.agones_retry_max_s;
}

static void chan_error(enum evhttp_request_error e, void *arg)
{
    chan *c = arg;
    c->sys_errno = errno;
    c->error = (int)e;
}

/*
 * What became of a request: 1 for a 2xx answer; otherwise 0 with the
 * reason in `why` and *status the HTTP status (0: no answer).
 */
static int outcome(chan *c, struct evhttp_request *req, int *status, char *why, size_t len)
{
    *status = req ? evhttp_request_get_response_code(req) : 0;
    if (*status >= 200 && *status < 300)
        return 1;
    if (*status) {
        snprintf(why, len, "HTTP %d from the SDK server at %s", *status, c->a->sdk);
    } else if (req) {
        snprintf(why, len, "no connection to the SDK server at %s", c->a->sdk);
    } else {
        const char *e;
        switch (c->error) {
        case EVREQ_HTTP_TIMEOUT: e = "no answer in time"; break;
        case EVREQ_HTTP_EOF: e = "the connection closed before an answer"; break;
        case EVREQ_HTTP_INVALID_HEADER: e = "a malformed answer"; break;
        case EVREQ_HTTP_BUFFER_ERROR: e = "a read or write error"; break;
        case EVREQ_HTTP_DATA_TOO_LONG: e = "an answer over the size bound"; break;
        case EVREQ_HTTP_REQUEST_CANCEL: e = "cancelled"; break;
        default: e = "a connection error"; break;
        }
        if (c->error == EVREQ_HTTP_TIMEOUT)
            snprintf(why, len, "no answer within %g s from the SDK server at %s", cfg_timeout(c->a),
                     c->a->sdk);
        else if (c->sys_errno && c->sys_errno != EINPROGRESS && c->sys_errno != EAGAIN &&
                 c->error != EVREQ_HTTP_DATA_TOO_LONG && c->error != EVREQ_HTTP_INVALID_HEADER)
            snprintf(why, len, "%s (%s), SDK server at %s", e, strerror(c->sys_errno), c->a->sdk);
        else
            snprintf(why, len, "%s, SDK server at %s", e, c->a->sdk);
    }
    return 0;
}

/* The SDK server answered something (or nothing) to a request made at
 * `sent_ns`: log its going and coming once each way.  An answer to a
 * request made before it went away does not bring it back. */
static void note_reach(tkd_agones *a, bool answered, uint64_t sent_ns, const char *what,
                       const char *why)
{
    if (answered && a->down_logged && sent_ns < a->down_ns)
        return;
    if (answered == a->reachable && (answered || a->down_logged))
        return;
    if (!answered && !a->down_logged) {
        a->down_ns = tk_clock_now_ns();
        tk_log_warn("agones: the SDK server does not answer (%s: %s); tickd keeps trying "
                    "(POST /ready and the watch with backoff up to %g s, health pings every "
                    "%g s)",
                    what, why, a->d->cfg.agones_retry_max_s, a->d->cfg.agones_health_period_s);
        a->down_logged = true;
    } else if (answered && a->down_logged) {
        tk_log_info("agones: the SDK server at %s answers again", a->sdk);
        a->down_logged = false;
    }
    if (answered != a->reachable) {
        a->reachable = answered;
        a->gen++;
    }
}

/* Send a request on `c` (creating its connection): NULL when libevent
 * could not take it (out of memory). */
static struct evhttp_request *send_req(chan *c, enum evhttp_cmd_type cmd, const char *path,
                                       const char *body, void (*done)(struct evhttp_request *,
                                                                      void *),
                                       bool stream)
{
    tkd_agones *a = c->a;
    if (!c->evcon) {
        c->evcon = evhttp_connection_base_new(a->d->base, NULL, "127.0.0.1", (ev_uint16_t)a->port);
        if (!c->evcon)
            return NULL;
        evhttp_connection_set_max_headers_size(c->evcon, TKD_AGONES_MAX_HEADERS);
        evhttp_connection_set_max_body_size(c->evcon,
                                            stream ? TKD_AGONES_WATCH_MAX : TKD_AGONES_MAX_BODY);
    }
    struct timeval tv = tv_of(cfg_timeout(a));
    evhttp_connection_set_timeout_tv(c->evcon, &tv);
    struct evhttp_request *req = evhttp_request_new(done, c);
    if (!req)
        return NULL;
    c->error = -1;
    c->sys_errno = 0;
    c->sent_ns = tk_clock_now_ns();
    evhttp_request_set_error_cb(req, chan_error);
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Host", a->sdk);
    evhttp_add_header(h, "Accept", "application/json");
    evhttp_add_header(h, "User-Agent", "tickd/" TKD_VERSION);
    if (!stream)
        evhttp_add_header(h, "Connection", "close");
    if (body) {
        char n[24];
        snprintf(n, sizeof n, "%zu", strlen(body));
        evhttp_add_header(h, "Content-Type", "application/json");
        evhttp_add_header(h, "Content-Length", n);
        evbuffer_add(evhttp_request_get_output_buffer(req), body, strlen(body));
    }
    if (stream)
        return req; /* the caller adds its callbacks, then makes it */
    if (evhttp_make_request(c->evcon, req, cmd, path) != 0)
        return NULL; /* freed by libevent */
    c->req = req;
    return req;
}

/* ---- the GameServer ------------------------------------------------------------------- */

static void apply_gs(tkd_agones *a, const tkd_agones_gs *gs)
{
    bool changed = !a->known || strcmp(gs->state, a->gs.state) != 0;
    bool renamed = a->known && strcmp(gs->name, a->gs.name) != 0;
    if (!changed && !renamed)
        return;
    char prev[sizeof a->gs.state];
    snprintf(prev, sizeof prev, "%s", a->known ? a->gs.state : "");
    bool had = a->known;
    a->gs = *gs;
    a->known = true;
    a->gen++;
    if (!changed)
        return;
    tk_log_info("agones: GameServer %s is %s%s%s%s", gs->name[0] ? gs->name : "(unnamed)",
                gs->state, had ? " (was " : "", had ? prev : "", had ? ")" : "");
    tkd *d = a->d;
    if (d->srv && tkd_server_topic_subscribers(d->srv, TKD_TOPIC_AGONES) > 0) {
        json_t *p = json_object();
        json_object_set_new(p, "state", json_string(gs->state));
        json_object_set_new(p, "previous", had ? json_string(prev) : json_null());
        json_object_set_new(p, "name", gs->name[0] ? json_string(gs->name) : json_null());
        json_object_set_new(p, "frame", json_integer((json_int_t)tk_world_frame(d->world)));
        tkd_server_publish(d->srv, TKD_TOPIC_AGONES, p);
    }
}

/* ---- control channel --------------------------------------------------------------- */

static void ctl_done(struct evhttp_request *req, void *arg);

static void op_free(op *o)
{
    if (!o)
        return;
    free(o->body);
    free(o);
}

/* Answer a pass-through that will not be sent or was cut off. */
static void op_abandon(tkd_agones *a, op *o, int code, const char *msg)
{
    if (o->kind != K_PASS)
        return;
    if (o->call) {
        tkd_call_error(o->call, code, NULL, "%s: %s", o->method, msg);
    } else {
        a->d->action_errors++;
        tk_log_warn("timer action %s failed: %s", o->method, msg);
    }
}

static void ctl_push(tkd_agones *a, op *o)
{
    o->next = NULL;
    if (a->queue_tail)
        a->queue_tail->next = o;
    else
        a->queue = o;
    a->queue_tail = o;
    if (o->kind == K_PASS)
        a->queued++;
    event_active(a->kick, EV_TIMEOUT, 0);
}

static op *op_new(op_kind kind, enum evhttp_cmd_type cmd, const char *path, const char *body)
{
    op *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->kind = kind;
    o->cmd = cmd;
    snprintf(o->path, sizeof o->path, "%s", path);
    if (body && !(o->body = strdup(body))) {
        free(o);
        return NULL;
    }
    return o;
}

/* Send the next control request, if none is in flight. */
static void ctl_next(tkd_agones *a)
{
    while (!a->cur && a->queue && !a->stopping) {
        op *o = a->queue;
        a->queue = o->next;
        if (!a->queue)
            a->queue_tail = NULL;
        if (o->kind == K_PASS)
            a->queued--;
        a->cur = o;
        if (send_req(&a->ctl, o->cmd, o->path, o->body, ctl_done, false))
            return;
        a->cur = NULL;
        a->ctl.req = NULL;
        op_abandon(a, o, -32603, "cannot make an HTTP request (out of memory)");
        if (o->kind == K_META)
            a->meta_inflight--;
        op_free(o);
    }
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    ctl_next(arg);
}

static void queue_ready(tkd_agones *a)
{
    op *o = op_new(K_READY, EVHTTP_REQ_POST, "/ready", "{}");
    if (o)
        ctl_push(a, o);
}

static void on_ready_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    queue_ready(arg);
}

static void ctl_done(struct evhttp_request *req, void *arg)
{
    chan *c = arg;
    tkd_agones *a = c->a;
    op *o = a->cur;
    a->cur = NULL;
    c->req = NULL;
    if (!o)
        return;
    int status;
    char why[224];
    int ok = outcome(c, req, &status, why, sizeof why);
    const char *verb = o->cmd == EVHTTP_REQ_GET ? "GET" : o->cmd == EVHTTP_REQ_PUT ? "PUT" : "POST";
    char what[64];
    snprintf(what, sizeof what, "%s %s", verb, o->path);
    note_reach(a, status != 0, c->sent_ns, what, why);
    switch (o->kind) {
    case K_READY:
        if (ok) {
            a->ready = true;
            a->gen++;
            tk_log_info("agones: POST /ready accepted by the SDK server at %s%s", a->sdk,
                        a->ready_tries ? " (after retries)" : "");
        } else {
            a->ready_tries++;
            if (status && !a->ready_warned) {
                tk_log_warn("agones: POST /ready: %s; retrying with backoff", why);
                a->ready_warned = true;
            } else {
                tk_log_debug("agones: POST /ready: %s (try %u)", why, a->ready_tries);
            }
            struct timeval tv = tv_of(backoff(a, a->ready_tries));
            evtimer_add(a->ready_timer, &tv);
        }
        break;
    case K_GAMESERVER:
        if (ok) {
            struct evbuffer *b = evhttp_request_get_input_buffer(req);
            size_t n = evbuffer_get_length(b);
            const char *text = (const char *)evbuffer_pullup(b, -1);
            tkd_agones_gs gs;
            char perr[128];
            /* Asked when the watch opened; a line the watch delivered since
             * is as new or newer. */
            if (text && tkd_agones_parse(text, n, false, &gs, perr, sizeof perr) == 0) {
                if (!a->stream_lines)
                    apply_gs(a, &gs);
            }
            else
                tk_log_warn("agones: GET /gameserver: the answer is unusable: %s",
                            text ? perr : "empty");
        } else {
            tk_log_debug("agones: GET /gameserver: %s", why);
        }
        break;
    case K_META:
        a->meta_inflight--;
        if (!ok) {
            tk_log_debug("agones: %s: %s", what, why);
            a->meta_tps = a->meta_entities = -1; /* written again next time */
        }
        break;
    case K_PASS:
        if (ok) {
            if (o->call)
                tkd_call_reply(o->call, json_object());
        } else if (o->call) {
            json_t *data = NULL;
            if (status) {
                data = json_object();
                json_object_set_new(data, "http_status", json_integer(status));
            }
            tkd_call_error(o->call, -32002, data, "%s: %s: %s", o->method, what, why);
        } else {
            a->d->action_errors++;
            tk_log_warn("timer action %s failed: %s: %s", o->method, what, why);
        }
        break;
    }
    op_free(o);
    event_active(a->kick, EV_TIMEOUT, 0);
}

static int pass(tkd_agones *a, tkd_call *call, const char *method, const char *path,
                const char *body)
{
    if (a->queued >= TKD_AGONES_MAX_QUEUE)
        return -32003;
    op *o = op_new(K_PASS, EVHTTP_REQ_POST, path, body);
    if (!o)
        return -32603;
    o->call = call;
    snprintf(o->method, sizeof o->method, "%s", method);
    ctl_push(a, o);
    return 0;
}

int tkd_agones_allocate(tkd_agones *a, tkd_call *call)
{
    return pass(a, call, "agones.allocate", "/allocate", "{}");
}

int tkd_agones_reserve(tkd_agones *a, tkd_call *call, uint64_t seconds)
{
    char body[64];
    snprintf(body, sizeof body, "{\"seconds\":\"%llu\"}", (unsigned long long)seconds);
    return pass(a, call, "agones.reserve", "/reserve", body);
}

/* ---- watch ------------------------------------------------------------------------- */

static void watch_open(tkd_agones *a);

static void watch_fail(tkd_agones *a, const char *why, bool answered)
{
    if (a->wstate == W_WAIT || a->wstate == W_OFF)
        return;
    a->wstate = W_WAIT;
    a->watch.req = NULL;
    a->watch_tries++;
    note_reach(a, answered, a->watch.sent_ns, "GET /watch/gameserver", why);
    tk_log_debug("agones: GET /watch/gameserver: %s; again in %g s", why,
                 backoff(a, a->watch_tries));
    event_active(a->watch_reset, EV_TIMEOUT, 0);
    struct timeval tv = tv_of(backoff(a, a->watch_tries));
    evtimer_add(a->watch_timer, &tv);
}

static void on_watch_line(void *ud, const char *line, size_t len)
{
    tkd_agones *a = ud;
    tkd_agones_gs gs;
    char why[128];
    if (tkd_agones_parse(line, len, true, &gs, why, sizeof why) != 0) {
        tk_log_debug("agones: a watch line ignored: %s", why);
        return;
    }
    a->watch_tries = 0; /* the stream works: a later failure retries at once */
    a->stream_lines++;
    apply_gs(a, &gs);
}

static int watch_headers(struct evhttp_request *req, void *arg)
{
    chan *c = arg;
    tkd_agones *a = c->a;
    if (a->wstate != W_OPEN)
        return 0;
    if (evhttp_request_get_response_code(req) != 200)
        return 0; /* the body is read and the request fails in watch_done */
    a->wstate = W_STREAM;
    /* The stream may rest for as long as the GameServer does not change. */
    struct bufferevent *bev = evhttp_connection_get_bufferevent(c->evcon);
    if (bev)
        bufferevent_set_timeouts(bev, NULL, NULL);
    note_reach(a, true, c->sent_ns, "GET /watch/gameserver", "");
    /* The state now, in case the stream starts with none. */
    op *o = op_new(K_GAMESERVER, EVHTTP_REQ_GET, "/gameserver", NULL);
    if (o)
        ctl_push(a, o);
    return 0;
}

static void watch_chunk(struct evhttp_request *req, void *arg)
{
    chan *c = arg;
    tkd_agones *a = c->a;
    if (a->wstate != W_STREAM || evhttp_request_get_response_code(req) != 200)
        return;
    struct evbuffer *b = evhttp_request_get_input_buffer(req);
    struct evbuffer_iovec v[16];
    int n;
    while ((n = evbuffer_peek(b, -1, NULL, v, 16)) > 0) {
        size_t used = 0;
        for (int i = 0; i < n && i < 16 && a->wstate == W_STREAM; i++) {
            if (tkd_agones_lines_feed(&a->lines, v[i].iov_base, v[i].iov_len, on_watch_line,
                                      a) != 0) {
                char why[96];
                snprintf(why, sizeof why, "a line over %u bytes: the stream is dropped",
                         TKD_AGONES_MAX_LINE);
                tk_log_warn("agones: GET /watch/gameserver: %s", why);
                watch_fail(a, why, true);
            }
            used += v[i].iov_len;
        }
        evbuffer_drain(b, used);
        if (a->wstate != W_STREAM)
            break;
    }
}

static void watch_done(struct evhttp_request *req, void *arg)
{
    chan *c = arg;
    tkd_agones *a = c->a;
    if (a->wstate != W_OPEN && a->wstate != W_STREAM)
        return;
    int status;
    char why[224];
    if (outcome(c, req, &status, why, sizeof why))
        snprintf(why, sizeof why, "the stream ended");
    watch_fail(a, why, status != 0);
}

static void watch_open(tkd_agones *a)
{
    if (a->stopping)
        return;
    tkd_agones_lines_free(&a->lines);
    tkd_agones_lines_init(&a->lines, TKD_AGONES_MAX_LINE);
    a->stream_lines = 0;
    a->wstate = W_OPEN;
    if (a->watch.evcon) /* a fresh connection, with its timeouts, per attempt */
        evhttp_connection_free(a->watch.evcon);
    a->watch.evcon = NULL;
    struct evhttp_request *req = send_req(&a->watch, EVHTTP_REQ_GET, "/watch/gameserver", NULL,
                                          watch_done, true);
    if (req) {
        evhttp_request_set_header_cb(req, watch_headers);
        evhttp_request_set_chunked_cb(req, watch_chunk);
        if (evhttp_make_request(a->watch.evcon, req, EVHTTP_REQ_GET, "/watch/gameserver") == 0) {
            a->watch.req = req;
            return;
        }
    }
    watch_fail(a, "cannot make an HTTP request (out of memory)", false);
}

static void on_watch_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    watch_open(arg);
}

/* Outside libevent's callbacks of that connection: a fresh one next time. */
static void on_watch_reset(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    tkd_agones *a = arg;
    if (a->wstate == W_OPEN || a->wstate == W_STREAM)
        return; /* a new attempt started meanwhile */
    if (a->watch.evcon)
        evhttp_connection_free(a->watch.evcon);
    a->watch.evcon = NULL;
    a->watch.req = NULL;
}

/* ---- health and metadata ------------------------------------------------------------ */

static void health_done(struct evhttp_request *req, void *arg)
{
    chan *c = arg;
    c->req = NULL;
    int status;
    char why[224];
    if (!outcome(c, req, &status, why, sizeof why))
        tk_log_debug("agones: POST /health: %s", why);
    note_reach(c->a, status != 0, c->sent_ns, "POST /health", why);
}

static void queue_meta(tkd_agones *a, const char *key, long long v)
{
    char body[96];
    snprintf(body, sizeof body, "{\"key\":\"%s\",\"value\":\"%lld\"}", key, v);
    op *o = op_new(K_META, EVHTTP_REQ_PUT,
                   a->d->cfg.agones_labels ? "/metadata/label" : "/metadata/annotation", body);
    if (!o)
        return;
    a->meta_inflight++;
    ctl_push(a, o);
}

static uint64_t ns_of(double s) { return (uint64_t)(s * 1e9); }

void tkd_agones_tick(tkd_agones *a, uint64_t now_ns)
{
    if (!a || !a->started || a->stopping)
        return;
    if (now_ns >= a->next_health_ns && !a->health.req) {
        a->next_health_ns = now_ns + ns_of(a->d->cfg.agones_health_period_s);
        if (!send_req(&a->health, EVHTTP_REQ_POST, "/health", "{}", health_done, false))
            tk_log_debug("agones: POST /health: cannot make an HTTP request");
    }
    double every = a->d->cfg.agones_metadata_s;
    if (every > 0 && a->ready && now_ns >= a->next_meta_ns && !a->meta_inflight) {
        a->next_meta_ns = now_ns + ns_of(every);
        tk_engine_stats st;
        tk_engine_get_stats(a->d->engine, &st);
        long long tps = llround(st.tps_10s);
        long long ents = (long long)tks_entity_count(a->d->sim);
        if (tps != a->meta_tps || ents != a->meta_entities) {
            a->meta_tps = tps;
            a->meta_entities = ents;
            queue_meta(a, "tps", tps);
            queue_meta(a, "entities", ents);
        }
    }
}

uint64_t tkd_agones_due(const tkd_agones *a)
{
    if (!a || !a->started || a->stopping)
        return 0;
    uint64_t due = a->next_health_ns;
    if (a->d->cfg.agones_metadata_s > 0 && a->ready && a->next_meta_ns < due)
        due = a->next_meta_ns;
    return due ? due : 1;
}

/* ---- lifecycle ------------------------------------------------------------------------ */

int tkd_agones_port(const tkd *d, unsigned *port, char *err, size_t errlen)
{
    const char *env = getenv("AGONES_SDK_HTTP_PORT");
    if (env && *env) {
        char *end;
        errno = 0;
        unsigned long p = strtoul(env, &end, 10);
        if (*end || errno || p < 1 || p > 65535 || env[0] == '-' || env[0] == '+' ||
            env[0] == ' ') {
            snprintf(err, errlen,
                     "AGONES_SDK_HTTP_PORT = %.32s: not a port number (1-65535)", env);
            return -1;
        }
        *port = (unsigned)p;
        return 1;
    }
    if (!d->cfg.agones_enabled)
        return 0;
    *port = d->cfg.agones_port;
    return 1;
}

int tkd_agones_new(tkd *d, tkd_agones **out, char *err, size_t errlen)
{
    *out = NULL;
    unsigned port = 0;
    int on = tkd_agones_port(d, &port, err, errlen);
    if (on <= 0)
        return on;
    tkd_agones *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(err, errlen, "agones: out of memory");
        return -1;
    }
    a->d = d;
    a->port = port;
    snprintf(a->sdk, sizeof a->sdk, "127.0.0.1:%u", port);
    chan *chans[] = {&a->ctl, &a->health, &a->watch, &a->bye};
    const char *names[] = {"control", "health", "watch", "shutdown"};
    for (int i = 0; i < 4; i++) {
        chans[i]->a = a;
        chans[i]->what = names[i];
        chans[i]->error = -1;
    }
    a->meta_tps = a->meta_entities = -1;
    a->kick = event_new(d->base, -1, 0, on_kick, a);
    a->ready_timer = evtimer_new(d->base, on_ready_timer, a);
    a->watch_timer = evtimer_new(d->base, on_watch_timer, a);
    a->watch_reset = event_new(d->base, -1, 0, on_watch_reset, a);
    if (!a->kick || !a->ready_timer || !a->watch_timer || !a->watch_reset) {
        tkd_agones_free(a);
        snprintf(err, errlen, "agones: cannot create events");
        return -1;
    }
    tkd_agones_lines_init(&a->lines, TKD_AGONES_MAX_LINE);
    tk_log_info("agones: driving the GameServer through the SDK server at http://%s "
                "(%s)", a->sdk, getenv("AGONES_SDK_HTTP_PORT") && *getenv("AGONES_SDK_HTTP_PORT")
                                    ? "AGONES_SDK_HTTP_PORT"
                                    : "[agones] enabled, port");
    *out = a;
    return 0;
}

void tkd_agones_start(tkd_agones *a)
{
    if (!a || a->started)
        return;
    a->started = true;
    queue_ready(a);
    watch_open(a);
}

json_t *tkd_agones_info(const tkd_agones *a)
{
    if (!a)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "sdk", json_string(a->sdk));
    json_object_set_new(o, "state", a->known ? json_string(a->gs.state) : json_null());
    json_object_set_new(o, "name",
                        a->known && a->gs.name[0] ? json_string(a->gs.name) : json_null());
    json_object_set_new(o, "ready", json_boolean(a->ready));
    json_object_set_new(o, "reachable", json_boolean(a->reachable));
    return o;
}

uint64_t tkd_agones_info_gen(const tkd_agones *a) { return a ? a->gen : 0; }

static void bye_done(struct evhttp_request *req, void *arg)
{
    chan *c = arg;
    tkd_agones *a = c->a;
    c->req = NULL;
    int status;
    a->bye_ok = outcome(c, req, &status, a->bye_why, sizeof a->bye_why) == 1;
    a->bye_done = true;
}

static void on_bye_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

/* Answer every control request still queued or in flight. */
static void abandon_all(tkd_agones *a, const char *msg)
{
    if (a->cur) {
        if (a->ctl.evcon) { /* drops the request in flight, no callback */
            evhttp_connection_free(a->ctl.evcon);
            a->ctl.evcon = NULL;
            a->ctl.req = NULL;
        }
        op_abandon(a, a->cur, -32004, msg);
        op_free(a->cur);
        a->cur = NULL;
    }
    while (a->queue) {
        op *o = a->queue;
        a->queue = o->next;
        op_abandon(a, o, -32004, msg);
        op_free(o);
    }
    a->queue_tail = NULL;
    a->queued = 0;
}

void tkd_agones_shutdown(tkd_agones *a)
{
    if (!a || a->stopping)
        return;
    /* Requests already on their way may still be answered meanwhile. */
    a->stopping = true;
    evtimer_del(a->ready_timer);
    evtimer_del(a->watch_timer);
    a->wstate = W_OFF;
    if (a->watch.evcon) {
        evhttp_connection_free(a->watch.evcon);
        a->watch.evcon = NULL;
        a->watch.req = NULL;
    }
    uint64_t t0 = tk_clock_now_ns();
    uint64_t deadline = t0 + ns_of(cfg_timeout(a));
    if (send_req(&a->bye, EVHTTP_REQ_POST, "/shutdown", "{}", bye_done, false)) {
        struct event *wake = evtimer_new(a->d->base, on_bye_deadline, a);
        /* Until it is answered, and the control request in flight too (its
         * caller gets the real answer); queued ones are not sent any more. */
        while (wake && (!a->bye_done || a->cur)) {
            uint64_t now = tk_clock_now_ns();
            if (now >= deadline)
                break;
            struct timeval tv = tv_of((double)(deadline - now) / 1e9);
            evtimer_add(wake, &tv);
            event_base_loop(a->d->base, EVLOOP_ONCE);
        }
        if (wake)
            event_free(wake);
    } else {
        snprintf(a->bye_why, sizeof a->bye_why, "cannot make an HTTP request");
    }
    if (a->bye_ok)
        tk_log_info("agones: POST /shutdown accepted by the SDK server at %s", a->sdk);
    else
        tk_log_warn("agones: POST /shutdown: %s", a->bye_done ? a->bye_why
                                                              : "no answer before the deadline");
    if (a->bye_done && a->cur)
        tk_log_warn("agones: a request still unanswered %g s after POST /shutdown was sent",
                    cfg_timeout(a));
    abandon_all(a, "shutting down");
}

void tkd_agones_free(tkd_agones *a)
{
    if (!a)
        return;
    a->stopping = true;
    abandon_all(a, "shutting down");
    chan *chans[] = {&a->ctl, &a->health, &a->watch, &a->bye};
    for (int i = 0; i < 4; i++)
        if (chans[i]->evcon)
            evhttp_connection_free(chans[i]->evcon);
    if (a->kick)
        event_free(a->kick);
    if (a->ready_timer)
        event_free(a->ready_timer);
    if (a->watch_timer)
        event_free(a->watch_timer);
    if (a->watch_reset)
        event_free(a->watch_reset);
    tkd_agones_lines_free(&a->lines);
    free(a);
}
