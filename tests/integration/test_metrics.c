/*
 * test_metrics.c - the HTTP endpoint of [metrics] (src/daemon/metrics.c)
 * against the real daemon: a live /metrics scrape checked by `promtool
 * check metrics` and by its content, /healthz turning 503 when the world
 * cannot keep its floor and back, 404 and 405, a Unix socket listener, the
 * connection bound, config errors, per-method request statistics in
 * engine.stats, shortest reals on the wire, and a real Prometheus server
 * (Debian package prometheus, installed by `make deps`) scraping tickd and
 * answering `up` and a TPS query through its HTTP API.
 *
 * Ports: each daemon gets a free localhost port (bound to port 0 by the
 * test, read back, released just before the daemon binds it).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* ---- helpers ------------------------------------------------------------------------ */

/* Keep `p` reachable until the test process exits (strings and buffers
 * handed out below live as long as the test, as the harness's do). */
static void *keep(void *p)
{
    static void **kept;
    static size_t n, cap;
    if (n == cap) {
        cap = cap ? cap * 2 : 64;
        kept = realloc(kept, cap * sizeof *kept);
        ck_assert_ptr_nonnull(kept);
    }
    kept[n++] = p;
    return p;
}

static char *xfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xfmt(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    ck_assert_int_ge(vasprintf(&s, fmt, ap), 0);
    va_end(ap);
    return keep(s);
}

/* A TCP port on 127.0.0.1 that nothing listens on right now. */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

typedef struct http_resp {
    int status;        /* 0: no complete answer before the deadline */
    const char *head;  /* status line and headers                  */
    const char *body;
} http_resp;

/* Connect to 127.0.0.1:port, or to the Unix socket `path` when port is 0. */
static int http_connect(int port, const char *path)
{
    int fd;
    if (port) {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
    } else {
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

/* One HTTP/1.0 request; reads until the server closes or `seconds` pass. */
static http_resp http_req(int port, const char *path, const char *method, const char *target,
                          double seconds)
{
    http_resp r = {0, "", ""};
    int fd = http_connect(port, path);
    ck_assert_msg(fd >= 0, "cannot connect to the metrics listener: %s", strerror(errno));
    char *req = xfmt("%s %s HTTP/1.0\r\nHost: localhost\r\n\r\n", method, target);
    ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    double deadline = tkit_now() + tkit_scale(seconds);
    for (;;) {
        double left = deadline - tkit_now();
        if (left <= 0)
            break;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        if (len + 4096 > cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n <= 0) {
            buf[len] = '\0';
            char *sep = strstr(buf, "\r\n\r\n");
            if (sep && sscanf(buf, "HTTP/1.%*d %d", &r.status) == 1) {
                *sep = '\0';
                r.head = buf;
                r.body = sep + 4;
            }
            break;
        }
        len += (size_t)n;
    }
    close(fd);
    keep(buf);
    return r;
}

static http_resp get(int port, const char *target) { return http_req(port, NULL, "GET", target, 10); }

/* Run a program with its stdin from `in_file` (or /dev/null); stdout and
 * stderr go to files in `dir`; returns the exit code (-1: killed at the
 * deadline) and the output in *out. */
static int run(const char *dir, const char *const *argv, const char *in_file, const char **out)
{
    char *out_path = xfmt("%s/run.out", dir);
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int in = open(in_file ? in_file : "/dev/null", O_RDONLY);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || o < 0)
            _exit(127);
        dup2(in, 0);
        dup2(o, 1);
        dup2(o, 2);
        execvp(argv[0], (char *const *)argv);
        dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    double deadline = tkit_now() + tkit_scale(30);
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (tkit_now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            *out = tkit_slurp(out_path);
            return -1;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    *out = tkit_slurp(out_path);
    if (!*out)
        *out = "";
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool have(const char *cmd)
{
    char *c = xfmt("command -v %s >/dev/null 2>&1", cmd);
    return system(c) == 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A daemon with metrics on a free port; `extra` more config edits. */
static tkit_daemon *start_with_metrics(int *port, const char *const *extra)
{
    *port = free_port();
    static const char *edits[16];
    size_t n = 0;
    edits[n++] = xfmt("metrics.listen=127.0.0.1:%d", *port);
    for (size_t i = 0; extra && extra[i] && n < 15; i++)
        edits[n++] = extra[i];
    edits[n] = NULL;
    tkit_opts o = {.config = edits};
    return tkit_start(&o);
}

/* ---- scrape --------------------------------------------------------------------------- */

START_TEST(metrics_scrape_valid)
{
    int port;
    tkit_daemon *d = start_with_metrics(&port, NULL);
    tkit_conn *c = tkit_connect(d);
    /* Some requests to count: results, an unknown method, invalid params. */
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":3}");
    tkit_ok(c, "engine.stats", NULL);
    tkit_err(c, TKIT_METHOD_NOT_FOUND, NULL, "no.such_method", NULL);
    tkit_err(c, TKIT_INVALID_PARAMS, NULL, "entity.get", "{\"bogus\":1}");
    tkit_wait_frames(c, 2);

    http_resp r = get(port, "/metrics");
    ck_assert_int_eq(r.status, 200);
    ck_assert_msg(strstr(r.head, "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"),
                  "content type:\n%s", r.head);
    static const char *const want[] = {
        "# TYPE tickd_frame_work_seconds histogram\n",
        "tickd_frame_work_seconds_bucket{le=\"+Inf\"} ",
        "tickd_frame_work_seconds_sum ",
        "tickd_frame_work_seconds_count ",
        "# TYPE tickd_frames_total counter\n",
        "tickd_ticks_per_second{window=\"1s\"} ",
        "tickd_ticks_per_second{window=\"10s\"} ",
        "tickd_ticks_per_second{window=\"1m\"} ",
        "tickd_target_tick_rate_hertz ",
        "tickd_overruns_total ",
        "tickd_entities 3\n",
        "tickd_tick_functions{state=\"enabled\"} 3\n",
        "tickd_timers{status=\"active\"} 0\n",
        "tickd_tickables 0\n",
        "tickd_requests_total{method=\"entity.spawn\"} 1\n",
        "tickd_requests_total{method=\"(unknown)\"} 1\n",
        "tickd_request_errors_total{method=\"(unknown)\",code=\"-32601\"} 1\n",
        "tickd_request_errors_total{method=\"entity.get\",code=\"-32602\"} 1\n",
        "tickd_request_seconds_total{method=\"engine.stats\"} ",
        "tickd_events_dropped_total ",
        "tickd_clients 1\n",
        "tickd_connections_accepted_total ",
        "tickd_resident_memory_bytes ",
        "tickd_start_time_seconds ",
        "tickd_build_info{version=\"",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(r.body, want[i]), "no \"%s\" in the scrape:\n%s", want[i], r.body);

    /* promtool (Debian package prometheus) validates the exposition. */
    ck_assert_msg(have("promtool"), "promtool not found: `make deps` installs the Debian "
                                    "package prometheus");
    const char *file = tkit_write_file(d, "scrape.txt", r.body);
    const char *out = NULL;
    static const char *argv[] = {"promtool", "check", "metrics", NULL};
    int rc = run(tkit_dir(d), argv, file, &out);
    ck_assert_msg(rc == 0, "promtool check metrics: exit %d\n%s\nscrape:\n%s", rc, out, r.body);

    /* The same counts in engine.stats "methods". */
    json_t *st = tkit_ok(c, "engine.stats", NULL);
    json_t *spawn = json_object_get(tkit_get(st, "methods"), "entity.spawn");
    ck_assert_ptr_nonnull(spawn);
    ck_assert_int_eq(tkit_geti(spawn, "calls"), 1);
    tkit_finish(d);
}
END_TEST

/* engine.stats "methods": calls, errors, ms, max_ms, and codes. */
START_TEST(metrics_engine_stats_methods)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.status", NULL);
    tkit_ok(c, "world.status", NULL);
    tkit_err(c, TKIT_INVALID_PARAMS, NULL, "world.status", "{\"x\":1}");
    tkit_err(c, TKIT_METHOD_NOT_FOUND, NULL, "nope", NULL);
    json_t *m = tkit_get(tkit_ok(c, "engine.stats", NULL), "methods");
    json_t *ws = json_object_get(m, "world.status");
    ck_assert_ptr_nonnull(ws);
    ck_assert_int_eq(tkit_geti(ws, "calls"), 3);
    ck_assert_int_eq(tkit_geti(ws, "errors"), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(tkit_get(ws, "codes"), "-32602")), 1);
    ck_assert(tkit_getd(ws, "ms") >= tkit_getd(ws, "max_ms"));
    ck_assert(tkit_getd(ws, "max_ms") > 0);
    json_t *unk = json_object_get(m, "(unknown)");
    ck_assert_ptr_nonnull(unk);
    ck_assert_int_eq(tkit_geti(unk, "errors"), 1);
    /* Only methods called at least once (engine.stats itself: this call
     * is counted after its answer is built). */
    ck_assert_ptr_null(json_object_get(m, "entity.spawn"));
    tkit_finish(d);
}
END_TEST

/* Reals on the wire in their shortest form, integers as integers. */
START_TEST(metrics_wire_reals_shortest)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    json_t *ids = tkit_ok(c, "entity.spawn",
                          "{\"class\":\"mover\",\"props\":{\"vx\":0.1,\"vy\":0.3,\"x\":1e300}}");
    long long id = json_integer_value(json_array_get(json_object_get(ids, "ids"), 0));
    char *req = xfmt("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"entity.get\",\"params\":"
                     "{\"id\":%lld}}\n",
                     id);
    tkit_send_raw(c, req, strlen(req));
    const char *line = tkit_read_line(c, tkit_scale(10), NULL);
    ck_assert_ptr_nonnull(line);
    ck_assert_msg(strstr(line, "\"vx\":0.1,") && strstr(line, "\"vy\":0.3,") &&
                      strstr(line, "\"x\":1e300,") && strstr(line, "\"time_dilation\":1.0"),
                  "reals not in their shortest form:\n%s", line);
    ck_assert_msg(!strstr(line, "0000000"), "float noise on the wire:\n%s", line);
    tkit_finish(d);
}
END_TEST

/* ---- healthz ------------------------------------------------------------------------- */

/* Poll /healthz until it answers `status`; returns the last answer. */
static http_resp healthz_until(int port, int status, double seconds)
{
    double deadline = tkit_now() + tkit_scale(seconds);
    http_resp r;
    for (;;) {
        r = get(port, "/healthz");
        if (r.status == status || tkit_now() > deadline)
            return r;
        sleep_ms(100);
    }
}

START_TEST(metrics_healthz)
{
    int port;
    static const char *const extra[] = {"engine.tick_rate=20", "!engine.fixed_dt",
                                        "metrics.healthz_min_tps=12", NULL};
    tkit_daemon *d = start_with_metrics(&port, extra);
    tkit_conn *c = tkit_connect(d);
    http_resp r = healthz_until(port, 200, 10);
    ck_assert_msg(r.status == 200, "healthz: %d %s", r.status, r.body);
    ck_assert_str_eq(r.body, "ok\n");

    /* A burner of 150 ms per tick holds the loop under 7 TPS: below the
     * floor of 12. */
    json_t *ids = tkit_ok(c, "entity.spawn", "{\"class\":\"burner\",\"props\":{\"work_us\":150000}}");
    r = healthz_until(port, 503, 15);
    ck_assert_msg(r.status == 503, "healthz with a burner: %d %s", r.status, r.body);
    ck_assert_msg(strstr(r.body, "TPS") && strstr(r.body, "floor of 12"), "reason: %s", r.body);

    /* Without it the loop recovers, and so does /healthz. */
    tkit_ok(c, "entity.destroy", "{\"ids\":%s}", tkit_dump(json_object_get(ids, "ids")));
    r = healthz_until(port, 200, 15);
    ck_assert_msg(r.status == 200, "healthz after the burner: %d %s", r.status, r.body);

    /* Other paths and methods. */
    ck_assert_int_eq(get(port, "/nope").status, 404);
    ck_assert_int_eq(get(port, "/").status, 404);
    r = http_req(port, NULL, "POST", "/metrics", 10);
    ck_assert_int_eq(r.status, 405);
    ck_assert_msg(strstr(r.head, "\r\nAllow: GET"), "405 without Allow:\n%s", r.head);
    ck_assert_int_eq(http_req(port, NULL, "DELETE", "/healthz", 10).status, 405);
    tkit_finish(d);
}
END_TEST

/* ---- listeners ----------------------------------------------------------------------- */

START_TEST(metrics_unix_socket)
{
    static const char *const cfg[] = {"metrics.listen=unix:@DIR@/metrics.sock", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    const char *path = tkit_path(d, "metrics.sock");
    http_resp r = http_req(0, path, "GET", "/metrics", 10);
    ck_assert_int_eq(r.status, 200);
    ck_assert_ptr_nonnull(strstr(r.body, "tickd_frames_total "));
    struct stat sb;
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0660);
    tkit_finish(d);
    ck_assert_msg(stat(path, &sb) != 0, "%s left behind", path);
}
END_TEST

/* At max_connections the listener waits; one closing lets the next in. */
START_TEST(metrics_connection_bound)
{
    int port;
    static const char *const extra[] = {"metrics.max_connections=2", NULL};
    tkit_daemon *d = start_with_metrics(&port, extra);
    tkit_conn *c = tkit_connect(d);
    tkit_wait_frames(c, 1);
    /* The two idle connections hold the bound until the listener's
     * inactivity timeout (TKD_METRICS_TIMEOUT_S, 5 s) closes them: an
     * attempt counts only if the third request went out well before it (a
     * daemon under valgrind may be too slow for one). */
    int a = -1, b = -1;
    bool counted = false;
    for (int attempt = 0; attempt < 5 && !counted; attempt++) {
        if (a >= 0) {
            close(a);
            close(b);
            tkit_wait_frames(c, 2); /* counted out */
        }
        double t0 = tkit_now();
        a = http_connect(port, NULL);
        b = http_connect(port, NULL);
        ck_assert(a >= 0 && b >= 0);
        tkit_wait_frames(c, 3); /* both accepted */
        http_resp r = http_req(port, NULL, "GET", "/healthz", 0.5);
        if (tkit_now() - t0 > 3.5)
            continue;
        ck_assert_msg(r.status == 0, "a third connection was served: %d", r.status);
        counted = true;
    }
    /* Under valgrind every attempt may be too slow: the bound is then not
     * observed, only what follows. */
    ck_assert_msg(counted || tkit_valgrind(), "no attempt reached the third request within 3.5 s");
    close(a);
    http_resp r = get(port, "/healthz");
    ck_assert_int_eq(r.status, 200);
    close(b);
    tkit_finish(d);
}
END_TEST

START_TEST(metrics_config_errors)
{
    /* A malformed address: --check-config names file, line and key. */
    static const char *const cfg[] = {"metrics.listen=127.0.0.1", NULL};
    static const char *const args[] = {"--check-config", "--config", "@CONFIG@", NULL};
    tkit_opts o = {.config = cfg, .args = args, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    ck_assert_int_eq(WEXITSTATUS(tkit_wait_exit(d, 10)), 1);
    ck_assert_msg(strstr(tkit_stderr(d), "tickd.ini:") &&
                      strstr(tkit_stderr(d), "[metrics] listen = 127.0.0.1"),
                  "stderr:\n%s", tkit_stderr(d));

    /* A port in use: the daemon refuses to start and says which. */
    int port = free_port();
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(fd, 1), 0);
    static const char *cfg2[2];
    cfg2[0] = xfmt("metrics.listen=127.0.0.1:%d", port);
    tkit_opts o2 = {.config = cfg2, .no_wait = true};
    tkit_daemon *d2 = tkit_start(&o2);
    ck_assert_int_eq(WEXITSTATUS(tkit_wait_exit(d2, 10)), 1);
    ck_assert_msg(strstr(tkit_stderr(d2), xfmt("[metrics] listen = 127.0.0.1:%d", port)) &&
                      strstr(tkit_stderr(d2), "in use"),
                  "stderr:\n%s", tkit_stderr(d2));
    close(fd);
}
END_TEST

/* ---- a real Prometheus ------------------------------------------------------------------ */

/* GET the Prometheus API query `target`: the value of the first sample of
 * its result, or NULL (no answer yet, or no sample). */
static const char *prom_value(int port, const char *target)
{
    int fd = http_connect(port, NULL);
    if (fd < 0)
        return NULL;
    close(fd);
    http_resp r = http_req(port, NULL, "GET", target, 5);
    if (r.status != 200)
        return NULL;
    json_t *j = json_loads(r.body, 0, NULL);
    json_t *res = json_array_get(json_object_get(json_object_get(j, "data"), "result"), 0);
    const char *v = json_string_value(json_array_get(json_object_get(res, "value"), 1));
    char *copy = v ? keep(strdup(v)) : NULL;
    json_decref(j);
    return copy;
}

START_TEST(metrics_prometheus_scrapes)
{
    ck_assert_msg(have("prometheus"), "prometheus not found: `make deps` installs the Debian "
                                      "package prometheus");
    int port;
    static const char *const extra[] = {"engine.tick_rate=30", "!engine.fixed_dt", NULL};
    tkit_daemon *d = start_with_metrics(&port, extra);
    int pport = free_port();
    const char *yml = tkit_write_file(
        d, "prometheus.yml",
        xfmt("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
             "scrape_configs:\n  - job_name: tickd\n    static_configs:\n"
             "      - targets: ['127.0.0.1:%d']\n",
             port));
    const char *data = tkit_path(d, "prometheus-data");
    char *listen = xfmt("--web.listen-address=127.0.0.1:%d", pport);
    char *cfg = xfmt("--config.file=%s", yml);
    char *store = xfmt("--storage.tsdb.path=%s", data);
    char *log = xfmt("%s/prometheus.log", tkit_dir(d));
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int o = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(o, 2);
        execlp("prometheus", "prometheus", cfg, store, listen, "--log.level=warn", (char *)NULL);
        _exit(127);
    }
    /* up == 1 for the job, then a TPS value. */
    double deadline = tkit_now() + tkit_scale(20);
    const char *up = NULL, *tps = NULL;
    while (tkit_now() < deadline && !(up && !strcmp(up, "1") && tps)) {
        sleep_ms(250);
        if (!up || strcmp(up, "1"))
            up = prom_value(pport, "/api/v1/query?query=up%7Bjob%3D%22tickd%22%7D");
        else
            tps = prom_value(pport,
                             "/api/v1/query?query=tickd_ticks_per_second%7Bwindow%3D%221s%22%7D");
    }
    kill(pid, SIGTERM);
    int status;
    double stop = tkit_now() + tkit_scale(10);
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (tkit_now() > stop) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        sleep_ms(20);
    }
    ck_assert_msg(up && !strcmp(up, "1"), "prometheus: up is %s; its log:\n%s", up ? up : "(none)",
                  tkit_slurp(log));
    ck_assert_msg(tps && atof(tps) > 0, "prometheus: no TPS value; its log:\n%s", tkit_slurp(log));
    tkit_finish(d);
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *tc = tcase_create("metrics");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, metrics_scrape_valid);
    tcase_add_test(tc, metrics_engine_stats_methods);
    tcase_add_test(tc, metrics_wire_reals_shortest);
    tcase_add_test(tc, metrics_healthz);
    tcase_add_test(tc, metrics_unix_socket);
    tcase_add_test(tc, metrics_connection_bound);
    tcase_add_test(tc, metrics_config_errors);
    tcase_add_test(tc, metrics_prometheus_scrapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(metrics_suite); }
