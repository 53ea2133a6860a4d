/*
 * test_load.c - tickd-load against a real daemon: the shipped short
 * scenario (scripts/scenarios/smoke.jsonl, three seconds) and the shape of
 * every report it writes (text, --json, --csv, --svg), the --slo exit status
 * both ways, expected errors apart from unexpected ones, failed checks,
 * references to saved ids, README's CI recipe against a daemon on the
 * shipped config (as `make run` starts it), the default socket's fallbacks,
 * the scenario search and its error, the usage and connection errors, and
 * an interrupted run.
 *
 * Each test starts its own daemon at 60 Hz in real time (the generated
 * config with tick_rate = 60 and fixed_dt = 0: tickd-load measures TPS and
 * MSPT of a paced daemon).  tickd-load is $TICKD_LOAD_BIN if set, else
 * $BUILD/tickd-load, else build/tickd-load; it runs as a child process with
 * its stdout and stderr in files, and every wait for it has a deadline.
 * The assertions are on structure and on counts the scenarios fix (requests
 * sent, errors by code, checks, entities), never on timing figures.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SMOKE          "scripts/scenarios/smoke.jsonl"
#define RUN_DEADLINE_S 60.0 /* s (scaled): one tickd-load run */

/* Requests smoke.jsonl sends: 1 + 20 + 40 + 10 + 100 + 10 + 1 + 1. */
#define SMOKE_REQUESTS 183
/* Checks it makes: 20 + 10 + 10 + 1 + 1 expects on requests, 2 check lines. */
#define SMOKE_CHECKS 44

static const char *const daemon_config[] = {"engine.tick_rate=60", "engine.fixed_dt=0", NULL};

/* One tickd-load process. */
typedef struct load_run {
    pid_t pid;
    int status;      /* wait status once exited */
    const char *dir; /* its own directory: stdout, stderr, reports */
    const char *out; /* its stdout (after load_wait) */
    const char *err; /* its stderr (after load_wait) */
    const char *cwd; /* working directory to run in (NULL: the test's) */
    const char *const *env; /* environment edits: "NAME=value", "-NAME" */
} load_run_t;

static const char *load_bin(void)
{
    const char *env = getenv("TICKD_LOAD_BIN");
    if (env && env[0])
        return env;
    const char *b = getenv("BUILD");
    static char path[512];
    snprintf(path, sizeof path, "%s/tickd-load", b && b[0] ? b : "build");
    return path;
}

/* "<run dir>/<name>" (one of a few rotating static buffers). */
static const char *in_dir(const load_run_t *r, const char *name)
{
    static char buf[8][600];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", r->dir, name);
    return buf[k];
}

/* Prepare a run: its directory (for report paths) before the arguments. */
static void load_init(load_run_t *r)
{
    memset(r, 0, sizeof *r);
    r->pid = -1;
    r->dir = tkit_tmpdir();
}

/* Start tickd-load with `args` (NULL-terminated, after the program name). */
static void load_start(load_run_t *r, const char *const *args)
{
    const char *rel = load_bin();
    ck_assert_msg(access(rel, X_OK) == 0, "%s not built (make %s)", rel, rel);
    static char bin[4096];
    ck_assert_ptr_nonnull(realpath(rel, bin)); /* r->cwd may be elsewhere */
    const char *argv[64];
    int n = 0;
    argv[n++] = bin;
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char out_path[600], err_path[600];
    snprintf(out_path, sizeof out_path, "%s", in_dir(r, "stdout"));
    snprintf(err_path, sizeof err_path, "%s", in_dir(r, "stderr"));
    pid_t parent = getpid();
    r->pid = fork();
    ck_assert_msg(r->pid >= 0, "fork: %s", strerror(errno));
    if (r->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int in = open("/dev/null", O_RDONLY);
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in < 0 || out < 0 || err < 0)
            _exit(127);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        for (size_t i = 0; r->env && r->env[i]; i++) {
            if (r->env[i][0] == '-')
                unsetenv(r->env[i] + 1);
            else if (putenv(strdup(r->env[i])) != 0)
                _exit(127);
        }
        if (r->cwd && chdir(r->cwd) != 0)
            _exit(127);
        execv(bin, (char *const *)argv);
        dprintf(2, "exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
}

/* Wait (with a deadline) for tickd-load to exit; returns its exit code. */
static int load_wait(load_run_t *r)
{
    double deadline = tkit_now() + tkit_scale(RUN_DEADLINE_S);
    for (;;) {
        pid_t w = waitpid(r->pid, &r->status, WNOHANG);
        if (w == r->pid)
            break;
        if (tkit_now() > deadline) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, &r->status, 0);
            ck_abort_msg("tickd-load did not exit within %.0f s", tkit_scale(RUN_DEADLINE_S));
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    r->out = tkit_slurp(in_dir(r, "stdout"));
    r->err = tkit_slurp(in_dir(r, "stderr"));
    if (!r->out)
        r->out = "";
    if (!r->err)
        r->err = "";
    ck_assert_msg(WIFEXITED(r->status), "tickd-load died by signal %d; stderr:\n%s",
                  WTERMSIG(r->status), r->err);
    return WEXITSTATUS(r->status);
}

static int load_run(load_run_t *r, const char *const *args)
{
    load_start(r, args);
    return load_wait(r);
}

static json_t *load_json(const char *path)
{
    const char *text = tkit_slurp(path);
    ck_assert_msg(text, "%s was not written", path);
    return tkit_json("%s", text);
}

/* printf into one of a few rotating static buffers. */
static const char *xenv(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *xenv(const char *fmt, ...)
{
    static char buf[8][4200];
    static int k;
    k = (k + 1) % 8;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf[k], sizeof buf[k], fmt, ap);
    va_end(ap);
    return buf[k];
}

static int count_char(const char *s, char c)
{
    int n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

/* by_method's entry of `method` (a key with a dot, out of tkit_get's reach). */
static json_t *by_method(json_t *report, const char *method)
{
    json_t *m = json_object_get(tkit_get(report, "requests.by_method"), method);
    ck_assert_msg(m, "no by_method.%s in %s", method, tkit_dump(report));
    return m;
}

/* ---- the shipped smoke scenario ------------------------------------------------- */

START_TEST(load_report_structure)
{
    tkit_opts o = {.config = daemon_config};
    tkit_daemon *d = tkit_start(&o);
    load_run_t r;
    load_init(&r);
    const char *json = in_dir(&r, "report.json");
    const char *csv = in_dir(&r, "series.csv");
    const char *svg = in_dir(&r, "chart.svg");
    const char *args[] = {
        "--socket", tkit_sock(d), "--json", json,    "--csv",
        csv,        "--svg",      svg,      "--slo", "errors=1,tps_min=1,mspt_p99=1000",
        SMOKE,      NULL};
    int code = load_run(&r, args);
    ck_assert_msg(code == 0, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);

    /* Text report: the redis-benchmark-like summary and every section. */
    static const char *const sections[] = {"====== smoke ======",
                                           "throughput summary:",
                                           "requests per second",
                                           "latency summary (msec",
                                           "by method",
                                           "entity.spawn",
                                           "0 errors, 1 expected errors",
                                           "errors by code: none",
                                           "expected errors by code",
                                           "-32001",
                                           "TPS achieved:",
                                           "of 60 target",
                                           "MSPT (msec",
                                           "overruns:",
                                           "entities:",
                                           "peak RSS:",
                                           "Checks: 44 passed, 0 failed",
                                           "SLO: kept",
                                           NULL};
    for (int i = 0; sections[i]; i++)
        ck_assert_msg(strstr(r.out, sections[i]), "report lacks \"%s\":\n%s", sections[i], r.out);
    /* stderr is not a terminal here: no progress line. */
    ck_assert_msg(!strchr(r.err, '\r'), "progress line on a non-terminal: %s", r.err);

    /* --json */
    json_t *j = load_json(json);
    ck_assert_str_eq(tkit_gets(j, "tool"), "tickd-load");
    ck_assert_str_eq(tkit_gets(j, "scenario.name"), "smoke");
    ck_assert_int_eq(tkit_geti(j, "run.connections"), 2); /* the scenario's header */
    ck_assert(!tkit_getb(j, "run.interrupted"));
    ck_assert_int_eq(tkit_geti(j, "requests.sent"), SMOKE_REQUESTS);
    ck_assert_int_eq(tkit_geti(j, "requests.answered"), SMOKE_REQUESTS);
    /* The scenario's one refusal it expects (-32001) is an expected error. */
    ck_assert_int_eq(tkit_geti(j, "requests.errors"), 0);
    ck_assert_int_eq(tkit_geti(j, "requests.expected_errors"), 1);
    ck_assert_int_eq(tkit_geti(j, "requests.unanswered"), 0);
    ck_assert_int_eq(tkit_geti(j, "requests.skipped"), 0);
    ck_assert_int_eq(tkit_geti(j, "requests.expected_errors_by_code.-32001"), 1);
    ck_assert_int_eq(json_object_size(tkit_get(j, "requests.errors_by_code")), 0);
    ck_assert(tkit_getd(j, "requests.per_second") > 0);
    ck_assert_int_eq(tkit_geti(j, "requests.latency_ms.n"), SMOKE_REQUESTS);
    double mn = tkit_getd(j, "requests.latency_ms.min");
    double p50 = tkit_getd(j, "requests.latency_ms.p50");
    double p95 = tkit_getd(j, "requests.latency_ms.p95");
    double p99 = tkit_getd(j, "requests.latency_ms.p99");
    double mx = tkit_getd(j, "requests.latency_ms.max");
    ck_assert_msg(0 <= mn && mn <= p50 && p50 <= p95 && p95 <= p99 && p99 <= mx,
                  "latency min %g p50 %g p95 %g p99 %g max %g", mn, p50, p95, p99, mx);
    ck_assert_int_eq(tkit_geti(by_method(j, "entity.spawn"), "sent"), 60);
    ck_assert_int_eq(tkit_geti(by_method(j, "world.status"), "answered"), 100);
    ck_assert_int_eq(tkit_geti(by_method(j, "entity.destroy"), "errors"), 0);
    ck_assert_int_eq(tkit_geti(by_method(j, "entity.destroy"), "expected_errors"), 1);
    ck_assert_int_eq(tkit_geti(by_method(j, "entity.get"), "latency_ms.n"), 10);
    ck_assert(tkit_getd(j, "tickd.target_hz") == 60.0);
    ck_assert(tkit_getd(j, "tickd.frame_budget_ms") > 16.66);
    ck_assert(tkit_getd(j, "tickd.tps") > 0);
    ck_assert(tkit_geti(j, "tickd.frames") > 0);
    ck_assert(tkit_geti(j, "tickd.mspt_ms.n") > 0);
    ck_assert(tkit_getd(j, "tickd.mspt_ms.p50") <= tkit_getd(j, "tickd.mspt_ms.p99"));
    ck_assert(tkit_getd(j, "tickd.mspt_ms.p99") <= tkit_getd(j, "tickd.mspt_ms.max"));
    tkit_geti(j, "tickd.overruns");
    ck_assert_int_eq(tkit_geti(j, "tickd.entities.start"), 0);
    /* 1000 movers + 400 counters - 100 destroyed, then their level removed */
    ck_assert_int_eq(tkit_geti(j, "tickd.entities.end"), 0);
    ck_assert(tkit_geti(j, "tickd.entities.peak") > 0);
    ck_assert(tkit_geti(j, "tickd.entities.peak") <= 1300);
    ck_assert_int_eq(tkit_geti(by_method(j, "level.remove"), "answered"), 1);
    ck_assert(tkit_geti(j, "tickd.rss_bytes.peak") >= tkit_geti(j, "tickd.rss_bytes.start"));
    ck_assert(tkit_geti(j, "tickd.rss_bytes.start") > 0);
    ck_assert_int_eq(tkit_geti(j, "checks.passed"), SMOKE_CHECKS);
    ck_assert_int_eq(tkit_geti(j, "checks.failed"), 0);
    ck_assert_int_eq(json_array_size(tkit_get(j, "checks.failures")), 0);
    ck_assert(tkit_getb(j, "slo.passed"));
    ck_assert_int_eq(json_array_size(tkit_get(j, "slo.rules")), 3);
    ck_assert_str_eq(tkit_gets(j, "slo.rules[0].name"), "errors");
    ck_assert(tkit_getd(j, "slo.rules[0].value") == 0.0);
    ck_assert_str_eq(tkit_gets(j, "slo.rules[1].name"), "tps_min");
    ck_assert_str_eq(tkit_gets(j, "slo.rules[1].bound"), "min");
    ck_assert(tkit_getb(j, "slo.rules[2].ok"));
    ck_assert_int_eq(tkit_geti(j, "pools.movers.saved"), 1000);
    ck_assert_int_eq(tkit_geti(j, "pools.counters.saved"), 400);
    ck_assert_int_eq(tkit_geti(j, "pools.counters.left"), 300);
    ck_assert_int_eq(tkit_geti(j, "exit_code"), 0);
    json_t *series = tkit_get(j, "series");
    size_t nrows = json_array_size(series);
    ck_assert_msg(nrows >= 3, "series: %s", tkit_dump(series));
    double prev_t = -1;
    long long sent = 0;
    for (size_t i = 0; i < nrows; i++) {
        json_t *row = json_array_get(series, i);
        double t = tkit_getd(row, "t");
        ck_assert_msg(t > prev_t, "series not in time order: %s", tkit_dump(series));
        prev_t = t;
        tkit_geti(row, "frame");
        tkit_geti(row, "entities");
        tkit_geti(row, "rss_bytes");
        tkit_geti(row, "overruns");
        tkit_get(row, "mspt_p99");
        sent += tkit_geti(row, "sent");
    }
    ck_assert_int_eq(sent, SMOKE_REQUESTS); /* every request falls in one second */
    ck_assert_int_eq(tkit_geti(json_array_get(series, 0), "entities"), 0);
    ck_assert(tkit_getd(json_array_get(series, 0), "t") == 0.0); /* row 0: the start */
    ck_assert_int_eq(tkit_geti(json_array_get(series, nrows - 1), "entities"), 0);

    /* --csv: a header and one line per row, 16 columns each. */
    const char *c = tkit_slurp(csv);
    ck_assert_msg(c && strncmp(c, "t_s,frame,tps,frames,mspt_p50_ms", 32) == 0, "csv: %s",
                  c ? c : "(none)");
    ck_assert_int_eq(count_char(c, '\n'), (int)nrows + 1);
    ck_assert_int_eq(count_char(c, ','), 15 * ((int)nrows + 1));

    /* --svg: a complete SVG document with its four panels (MSPT with the
     * budget line, TPS with the target, request latency, entities and RSS). */
    const char *s = tkit_slurp(svg);
    ck_assert_msg(s && strncmp(s, "<?xml", 5) == 0, "svg: %.200s", s ? s : "(none)");
    static const char *const parts[] = {"<svg ",
                                        "MSPT (ms of work per frame)",
                                        "frame budget 16.67 ms (60 Hz)",
                                        "p50 per second",
                                        "p99 per second",
                                        "TPS (frames per second)",
                                        ">TPS per second<",
                                        "target 60 Hz",
                                        "request latency (ms)",
                                        ">latency p50 per second<",
                                        ">latency p99 per second<",
                                        ">entities<",
                                        ">RSS (MiB)<",
                                        "time since the start (s)",
                                        "</svg>",
                                        NULL};
    for (int i = 0; parts[i]; i++)
        ck_assert_msg(strstr(s, parts[i]), "svg lacks \"%s\"", parts[i]);
    ck_assert_int_eq(count_char(s, '<'), count_char(s, '>'));
    tkit_finish(d);
}
END_TEST

START_TEST(load_duration_cut)
{
    /* --duration 2.2 ends smoke soon after its deliberate -32001 (at 2.0 s):
     * an expected error, so errors=0 holds; the checks at 2.5 s and the
     * 3 s tail are cut. */
    tkit_opts o = {.config = daemon_config};
    tkit_daemon *d = tkit_start(&o);
    load_run_t r;
    load_init(&r);
    const char *json = in_dir(&r, "report.json");
    const char *args[] = {"--socket", tkit_sock(d),         "--duration", "2.2", "--json", json,
                          "--slo",    "errors=0,tps_min=1", "--quiet",    SMOKE, NULL};
    int code = load_run(&r, args);
    ck_assert_msg(code == 0, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    ck_assert_msg(strstr(r.out, "SLO kept") && strstr(r.out, "0 errors (+1 expected)"),
                  "quiet line: %s", r.out);
    ck_assert_int_eq(count_char(r.out, '\n'), 1);
    json_t *j = load_json(json);
    ck_assert(tkit_getb(j, "slo.passed"));
    ck_assert(tkit_getd(j, "slo.rules[0].value") == 0.0);
    ck_assert_int_eq(tkit_geti(j, "requests.expected_errors"), 1);
    ck_assert_int_eq(tkit_geti(j, "exit_code"), 0);
    ck_assert(tkit_geti(j, "requests.sent") < SMOKE_REQUESTS);
    tkit_finish(d);
}
END_TEST

START_TEST(load_slo_expected_errors)
{
    /* Errors a line expects are reported apart and kept out of errors=0;
     * an error no line expects, or another code than the one expected,
     * counts (and the latter fails its check too). */
    tkit_opts o = {.config = daemon_config};
    tkit_daemon *d = tkit_start(&o);
    static const char expected[] =
        "{\"at\": 0, \"method\": \"entity.destroy\", \"params\": {\"ids\": [999999999]}, "
        "\"repeat\": {\"every\": 0.01, \"count\": 3}, \"expect\": {\"error\": -32001}}\n";
    const char *ok = tkit_write_file(d, "expected.jsonl", expected);
    load_run_t r;
    load_init(&r);
    const char *json = in_dir(&r, "ok.json");
    const char *args[] = {"--socket", tkit_sock(d), "--json", json, "--slo", "errors=0", ok, NULL};
    int code = load_run(&r, args);
    ck_assert_msg(code == 0, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    ck_assert_msg(strstr(r.out, "0 errors, 3 expected errors") &&
                      strstr(r.out, "errors by code: none") &&
                      strstr(r.out, "expected errors by code") && strstr(r.out, "SLO: kept"),
                  "%s", r.out);
    json_t *j = load_json(json);
    ck_assert_int_eq(tkit_geti(j, "requests.errors"), 0);
    ck_assert_int_eq(tkit_geti(j, "requests.expected_errors"), 3);
    ck_assert_int_eq(tkit_geti(j, "requests.expected_errors_by_code.-32001"), 3);
    ck_assert_int_eq(json_object_size(tkit_get(j, "requests.errors_by_code")), 0);
    ck_assert_int_eq(tkit_geti(by_method(j, "entity.destroy"), "expected_errors"), 3);
    ck_assert_int_eq(tkit_geti(by_method(j, "entity.destroy"), "errors"), 0);
    ck_assert_int_eq(tkit_geti(j, "checks.passed"), 3);

    const char *bad = tkit_write_file(
        d, "unexpected.jsonl",
        "{\"at\": 0, \"method\": \"entity.destroy\", \"params\": {\"ids\": [999999999]}, "
        "\"repeat\": {\"every\": 0.01, \"count\": 3}, \"expect\": {\"error\": -32001}}\n"
        "{\"at\": 0, \"method\": \"entity.get\", \"params\": {\"id\": 999999999}}\n"
        "{\"at\": 0, \"method\": \"entity.get\", \"params\": {\"id\": 999999998}, "
        "\"expect\": {\"error\": -32602}}\n");
    load_init(&r);
    json = in_dir(&r, "bad.json");
    const char *args2[] = {"--socket", tkit_sock(d), "--json", json,   "--slo",
                           "errors=0", "--quiet",    bad,      NULL};
    code = load_run(&r, args2);
    ck_assert_msg(code == 1, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    ck_assert_msg(strstr(r.out, "2 errors (+3 expected)") && strstr(r.out, "SLO BROKEN") &&
                      strstr(r.out, "SLO broken: errors <= 0") &&
                      strstr(r.out, "check failed: line 3"),
                  "quiet output: %s", r.out);
    j = load_json(json);
    ck_assert_int_eq(tkit_geti(j, "requests.errors"), 2);
    ck_assert_int_eq(tkit_geti(j, "requests.expected_errors"), 3);
    ck_assert_int_eq(tkit_geti(j, "requests.errors_by_code.-32001"), 2);
    ck_assert_int_eq(tkit_geti(by_method(j, "entity.get"), "errors"), 2);
    ck_assert_int_eq(tkit_geti(j, "checks.failed"), 1);
    ck_assert(!tkit_getb(j, "slo.rules[0].ok"));
    ck_assert(tkit_getd(j, "slo.rules[0].value") == 2.0);
    ck_assert_int_eq(tkit_geti(j, "exit_code"), 1);
    tkit_finish(d);
}
END_TEST

/* ---- as installed software: README's CI recipe, the socket, the scenarios ----------- */

/* A daemon as `make run` starts it: the shipped config/tickd.ini (without
 * its metrics port, which another test run may hold), run/tickd.sock in
 * its working directory. */
static tkit_daemon *start_make_run(void)
{
    const char *shipped = tkit_slurp("config/tickd.ini");
    ck_assert_msg(shipped != NULL, "cannot read config/tickd.ini");
    char *copy = strdup(shipped), *at = strstr(copy, "\nlisten = 127.0.0.1:8497\n");
    ck_assert_msg(at != NULL, "config/tickd.ini: no metrics listen line");
    memset(at + strlen("\nlisten = "), ' ', strlen("127.0.0.1:8497")); /* "listen =" */
    const char *const files[] = {"config/tickd.ini", copy, "run/.keep", "", NULL};
    static const char *const args[] = {"--config", "config/tickd.ini", NULL};
    tkit_opts o = {.args = args, .files = files, .sock = "run/tickd.sock"};
    tkit_daemon *d = tkit_start(&o);
    free(copy);
    return d;
}

START_TEST(load_ci_recipe)
{
    /* README: `tickd-load --quiet --slo errors=0 smoke` from where `make run`
     * runs: the socket is run/tickd.sock of the working directory (no
     * --socket, no TICKD_SOCKET), the scenario is found by name in the
     * source tree holding the executable (the working directory has none). */
    tkit_daemon *d = start_make_run();
    load_run_t r;
    load_init(&r);
    static const char *const env[] = {"-TICKD_SOCKET", NULL};
    r.cwd = tkit_dir(d);
    r.env = env;
    const char *json = in_dir(&r, "ci.json");
    const char *args[] = {"--quiet", "--slo", "errors=0", "--json", json, "smoke", NULL};
    int code = load_run(&r, args);
    ck_assert_msg(code == 0, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    json_t *j = load_json(json);
    ck_assert_str_eq(tkit_gets(j, "run.socket"), "run/tickd.sock");
    const char *path = tkit_gets(j, "scenario.path");
    ck_assert_msg(path[0] == '/' && strstr(path, "/scripts/scenarios/smoke.jsonl"), "%s", path);
    ck_assert_int_eq(tkit_geti(j, "requests.errors"), 0);
    ck_assert_int_eq(tkit_geti(j, "requests.expected_errors"), 1);
    ck_assert_int_eq(tkit_geti(j, "checks.failed"), 0);
    ck_assert(tkit_getd(j, "tickd.target_hz") == 60.0); /* the shipped tick rate */
    tkit_finish(d);
}
END_TEST

START_TEST(load_socket_fallbacks)
{
    /* $TICKD_SOCKET comes before run/tickd.sock, which comes before the
     * system paths; with neither, the error names /run/tickd.sock when it
     * exists (socket activation), else /run/tickd/tickd.sock. */
    tkit_opts o = {.config = daemon_config};
    tkit_daemon *d = tkit_start(&o);
    const char *sc = tkit_write_file(d, "one.jsonl", "{\"at\": 0, \"method\": \"world.status\"}\n");
    load_run_t r;
    load_init(&r);
    const char *env[] = {xenv("TICKD_SOCKET=%s", tkit_sock(d)), NULL};
    r.cwd = r.dir; /* no run/ here */
    r.env = env;
    const char *json = in_dir(&r, "env.json");
    const char *args[] = {"--quiet", "--json", json, sc, NULL};
    int code = load_run(&r, args);
    ck_assert_msg(code == 0, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    ck_assert_str_eq(tkit_gets(load_json(json), "run.socket"), tkit_sock(d));

    load_init(&r);
    static const char *const unset[] = {"-TICKD_SOCKET", NULL};
    r.cwd = r.dir;
    r.env = unset;
    code = load_run(&r, (const char *const[]){"--quiet", sc, NULL});
    ck_assert_msg(code == 2, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    struct stat st;
    const char *want = stat("/run/tickd.sock", &st) == 0 ? "/run/tickd.sock" : "/run/tickd/tickd.sock";
    ck_assert_msg(strstr(r.err, xenv("cannot connect to %s:", want)), "want %s:\n%s", want, r.err);
    tkit_finish(d);
}
END_TEST

START_TEST(load_scenario_not_found)
{
    /* A name found nowhere: every place looked at, in order, and the
     * scenarios of the first directory that has some. */
    load_run_t r;
    load_init(&r);
    r.cwd = r.dir;
    int code = load_run(&r, (const char *const[]){"no-such", NULL});
    ck_assert_msg(code == 2, "exit %d; stderr:\n%s", code, r.err);
    char repo[4096];
    ck_assert_ptr_nonnull(realpath("scripts/scenarios", repo));
    const char *lines[] = {"tickd-load: scenario \"no-such\" not found; looked for:\n",
                           "\n  no-such (a file)\n", "\n  scripts/scenarios/no-such.jsonl\n",
                           xenv("\n  %s/no-such.jsonl\n", repo),
                           "/share/tickd/scenarios/no-such.jsonl\n",
                           xenv("scenarios in %s: burst churn mixed ramp-1m runaway smoke", repo),
                           NULL};
    const char *prev = r.err;
    for (size_t i = 0; lines[i]; i++) {
        const char *at = strstr(r.err, lines[i]);
        ck_assert_msg(at && at >= prev, "lacks (or out of order) \"%s\":\n%s", lines[i], r.err);
        prev = at;
    }
    /* A name with its .jsonl suffix is found like the bare name. */
    load_init(&r);
    r.cwd = r.dir;
    code = load_run(&r, (const char *const[]){"--socket", "/nonexistent/tickd.sock",
                                              "smoke.jsonl", NULL});
    ck_assert_msg(code == 2 && strstr(r.err, "cannot connect") && !strstr(r.err, "not found"),
                  "exit %d:\n%s", code, r.err);
}
END_TEST

/* ---- scenarios written by the tests -------------------------------------------- */

START_TEST(load_check_failed)
{
    tkit_opts o = {.config = daemon_config};
    tkit_daemon *d = tkit_start(&o);
    const char *sc = tkit_write_file(
        d, "fail.jsonl",
        "{\"at\": 0, \"method\": \"entity.spawn\", \"params\": {\"class\": \"counter\", "
        "\"count\": 3}}\n"
        "{\"at\": 0.6, \"expect\": {\"method\": \"world.status\", \"result\": "
        "{\"entities\": {\">=\": 1000}}}}\n"
        "{\"at\": 0.6, \"expect\": {\"method\": \"world.status\", \"result\": "
        "{\"entities\": 3.0, \"levels.#\": 1, \"levels[-1]\": \"persistent\", "
        "\"paused\": {\"!=\": true}, \"frame\": {\">\": 0, \"exists\": true}, "
        "\"nope\": {\"exists\": false}}}}\n"
        "{\"at\": 0.6, \"expect\": {\"method\": \"entity.get\", \"params\": {\"id\": 99}, "
        "\"error\": -32001}}\n"
        "{\"at\": 0.8, \"end\": true}\n");
    load_run_t r;
    load_init(&r);
    const char *json = in_dir(&r, "report.json");
    const char *args[] = {"--socket", tkit_sock(d), "--json", json, sc, NULL};
    int code = load_run(&r, args);
    ck_assert_msg(code == 1, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    ck_assert_msg(strstr(r.out, "Checks: 2 passed, 1 failed"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "FAILED line 2 at 0.60 s: world.status: result.entities = 3, "
                                "expected >= 1000"),
                  "%s", r.out);
    json_t *j = load_json(json);
    ck_assert_int_eq(tkit_geti(j, "checks.failures[0].line"), 2);
    ck_assert_int_eq(tkit_geti(j, "requests.sent"), 1); /* checks are not load */
    ck_assert_int_eq(tkit_geti(j, "exit_code"), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(load_references)
{
    /* Spawn 10 x 5 counters into "a"; destroy them 5 at a time with
     * "$a[:5]" + consume; a destroy before anything was saved is skipped;
     * "$a" (every id) after the pool is empty is skipped too.  A tickable's
     * id is saved from tickable.add, used, and consumed by its removal. */
    tkit_opts o = {.config = daemon_config};
    tkit_daemon *d = tkit_start(&o);
    const char *sc = tkit_write_file(
        d, "refs.jsonl",
        "# ids saved and consumed\n"
        "{\"at\": 0, \"method\": \"entity.destroy\", \"params\": {\"ids\": \"$a[:5]\"}, "
        "\"consume\": true}\n"
        "{\"at\": 0.1, \"method\": \"entity.spawn\", \"params\": {\"class\": \"counter\", "
        "\"count\": 5, \"props\": {}}, \"repeat\": {\"every\": 0.01, \"count\": 10}, "
        "\"save\": \"a\"}\n"
        "{\"at\": 0.1, \"method\": \"tickable.add\", \"params\": {\"class\": \"counter\"}, "
        "\"save\": \"t\"}\n"
        "{\"at\": 1.0, \"method\": \"entity.destroy\", \"params\": {\"ids\": \"$a[:5]\"}, "
        "\"consume\": true, \"repeat\": {\"every\": 0.01, \"count\": 10}, "
        "\"expect\": {\"result\": {\"destroyed\": 5}}}\n"
        "{\"at\": 1.0, \"method\": \"tickable.get\", \"params\": {\"id\": \"$t[0]\"}, "
        "\"expect\": {\"result\": {\"class\": \"counter\"}}}\n"
        "{\"at\": 1.5, \"method\": \"entity.destroy\", \"params\": {\"ids\": \"$a\"}}\n"
        "{\"at\": 1.5, \"method\": \"tickable.remove\", \"params\": {\"id\": \"$t[-1]\"}, "
        "\"consume\": true}\n"
        "{\"at\": 1.6, \"expect\": {\"method\": \"world.status\", \"result\": "
        "{\"entities\": 0}}}\n"
        "{\"at\": 1.6, \"expect\": {\"method\": \"entity.spawn\", \"params\": {\"class\": "
        "\"counter\", \"tick\": {\"group\": \"$$literal\"}}, \"error\": -32602}}\n");
    load_run_t r;
    load_init(&r);
    const char *json = in_dir(&r, "report.json");
    const char *args[] = {"--socket", tkit_sock(d), "--json", json, "--drain", "30", sc, NULL};
    int code = load_run(&r, args);
    ck_assert_msg(code == 0, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    json_t *j = load_json(json);
    ck_assert_int_eq(tkit_geti(j, "requests.skipped"), 2);
    ck_assert_int_eq(tkit_geti(j, "requests.sent"), 23);
    ck_assert_int_eq(tkit_geti(j, "requests.errors"), 0);
    ck_assert_int_eq(tkit_geti(j, "checks.passed"), 13);
    ck_assert_int_eq(tkit_geti(j, "pools.a.saved"), 50);
    ck_assert_int_eq(tkit_geti(j, "pools.a.left"), 0);
    ck_assert_int_eq(tkit_geti(j, "pools.t.saved"), 1);
    ck_assert_int_eq(tkit_geti(j, "pools.t.left"), 0);
    ck_assert_int_eq(tkit_geti(j, "tickd.entities.end"), 0);
    ck_assert_int_eq(tkit_geti(j, "tickd.entities.peak"), 50);
    tkit_finish(d);
}
END_TEST

/* ---- errors before and during a run -------------------------------------------- */

START_TEST(load_usage_errors)
{
    load_run_t r;
    load_init(&r);
    const char *dir = r.dir;
    char bad[600], unsaved[600], conn[600];
    snprintf(bad, sizeof bad, "%s/bad.jsonl", dir);
    snprintf(unsaved, sizeof unsaved, "%s/unsaved.jsonl", dir);
    snprintf(conn, sizeof conn, "%s/conn.jsonl", dir);
    FILE *f = fopen(bad, "w");
    ck_assert(f);
    fputs("\n# a comment\n{\"at\": 0, \"method\": \"world.status\", \"parms\": {}}\n", f);
    fclose(f);
    f = fopen(unsaved, "w");
    ck_assert(f);
    fputs("{\"at\": 0, \"method\": \"entity.destroy\", \"params\": {\"ids\": \"$gone\"}}\n", f);
    fclose(f);
    f = fopen(conn, "w");
    ck_assert(f);
    fputs("{\"at\": 0, \"method\": \"world.status\", \"conn\": 3}\n", f);
    fclose(f);

    ck_assert_int_eq(load_run(&r, (const char *const[]){"--no-such-option", SMOKE, NULL}), 2);
    ck_assert_msg(strstr(r.err, "--no-such-option"), "%s", r.err);
    ck_assert_int_eq(load_run(&r, (const char *const[]){NULL}), 2);
    ck_assert_int_eq(load_run(&r, (const char *const[]){"--slo", "mspt_p99", SMOKE, NULL}), 2);
    ck_assert_int_eq(load_run(&r, (const char *const[]){"--slo", "speed=1", SMOKE, NULL}), 2);
    ck_assert_msg(strstr(r.err, "unknown name \"speed\""), "%s", r.err);
    ck_assert_int_eq(load_run(&r, (const char *const[]){"--connections", "0", SMOKE, NULL}), 2);
    ck_assert_int_eq(load_run(&r, (const char *const[]){bad, NULL}), 2);
    ck_assert_msg(strstr(r.err, "bad.jsonl:3: parms: unknown member"), "%s", r.err);
    ck_assert_int_eq(load_run(&r, (const char *const[]){unsaved, NULL}), 2);
    ck_assert_msg(strstr(r.err, "unsaved.jsonl:1: $gone: no line saves"), "%s", r.err);
    ck_assert_int_eq(load_run(&r, (const char *const[]){"--connections", "2", conn, NULL}), 2);
    ck_assert_msg(strstr(r.err, "conn 3 but the run has 2 connections"), "%s", r.err);
    ck_assert_int_eq(load_run(&r, (const char *const[]){"no-such-scenario", NULL}), 2);
    /* Nothing listens on the socket: a connection error, exit 2. */
    char sock[600];
    snprintf(sock, sizeof sock, "%s/nobody.sock", dir);
    ck_assert_int_eq(load_run(&r, (const char *const[]){"--socket", sock, SMOKE, NULL}), 2);
    ck_assert_msg(strstr(r.err, "cannot connect"), "%s", r.err);
    /* --help and --version exit 0. */
    ck_assert_int_eq(load_run(&r, (const char *const[]){"--help", NULL}), 0);
    ck_assert_msg(strstr(r.out, "--slo") && strstr(r.out, "--svg") && strstr(r.out, "--csv") &&
                      strstr(r.out, "--json") && strstr(r.out, "--target-hz"),
                  "%s", r.out);
    ck_assert_int_eq(load_run(&r, (const char *const[]){"--version", NULL}), 0);
    ck_assert_msg(strncmp(r.out, "tickd-load ", 11) == 0, "%s", r.out);
}
END_TEST

START_TEST(load_interrupted)
{
    /* SIGINT in the middle of a long run: the report is still printed and
     * the exit status is 2 (the run did not happen as asked). */
    tkit_opts o = {.config = daemon_config};
    tkit_daemon *d = tkit_start(&o);
    const char *sc = tkit_write_file(
        d, "long.jsonl",
        "{\"at\": 0, \"method\": \"world.status\", \"repeat\": {\"every\": 0.1, \"count\": "
        "3000}}\n");
    load_run_t r;
    load_init(&r);
    load_start(&r, (const char *const[]){"--socket", tkit_sock(d), "-c", "1", sc, NULL});
    /* Wait until its connections (1 + the monitor) are in: tickd counts
     * them, and the test's own is the third. */
    tkit_conn *c = tkit_connect(d);
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    while (tkit_geti(tkit_ok(c, "engine.stats", NULL), "clients") < 3) {
        ck_assert_msg(tkit_now() < deadline, "tickd-load did not connect");
        tkit_wait_frames(c, 1);
    }
    kill(r.pid, SIGINT);
    int code = load_wait(&r);
    ck_assert_msg(code == 2, "exit %d; stdout:\n%s\nstderr:\n%s", code, r.out, r.err);
    ck_assert_msg(strstr(r.out, "INTERRUPTED"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "throughput summary"), "%s", r.out);
    tkit_finish(d);
}
END_TEST

static Suite *load_suite(void)
{
    Suite *s = suite_create("load");
    TCase *tc = tcase_create("load");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, load_report_structure);
    tcase_add_test(tc, load_duration_cut);
    tcase_add_test(tc, load_slo_expected_errors);
    tcase_add_test(tc, load_ci_recipe);
    tcase_add_test(tc, load_socket_fallbacks);
    tcase_add_test(tc, load_scenario_not_found);
    tcase_add_test(tc, load_check_failed);
    tcase_add_test(tc, load_references);
    tcase_add_test(tc, load_usage_errors);
    tcase_add_test(tc, load_interrupted);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(load_suite); }
