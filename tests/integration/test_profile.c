/*
 * test_profile.c - engine.profile, world.trace's starts, durations and spans,
 * and the tickctl commands built on them (top, trace), against the real
 * daemon and the real tickctl binary.
 *
 * Times are never compared with thresholds: the tests check accounting
 * (calls, frames, keys, order), structure and nesting, which hold on any
 * machine.  Every test starts its own daemon (tick_rate 0, fixed_dt 0.01).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

/* A world with something in every source: counters in two levels, unbatched
 * movers in post_physics, a burner, a looping timer with an action and a
 * tickable. */
static void populate(tkit_conn *c)
{
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":50}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":20,\"level\":\"arena\"}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"mover\",\"count\":30,\"tick\":{\"group\":\"post_physics\","
            "\"batch\":false}}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"burner\",\"props\":{\"work_us\":300},"
            "\"tick\":{\"group\":\"during_physics\"}}");
    tkit_ok(c, "timer.set",
            "{\"rate\":0.01,\"loop\":true,\"action\":{\"method\":\"world.status\"}}");
    tkit_ok(c, "tickable.add", "{\"class\":\"counter\",\"tick_type\":\"always\"}");
}

/* The row of `arr` whose fields match (NULL = any), or NULL. */
static json_t *find_row(json_t *arr, const char *k1, const char *v1, const char *k2,
                        const char *v2, const char *k3, const char *v3)
{
    size_t i;
    json_t *r;
    json_array_foreach(arr, i, r) {
        if (k1 && strcmp(tkit_gets(r, k1), v1))
            continue;
        if (k2 && strcmp(tkit_gets(r, k2), v2))
            continue;
        if (k3 && strcmp(tkit_gets(r, k3), v3))
            continue;
        return r;
    }
    return NULL;
}

static void assert_descending(json_t *arr, const char *what)
{
    double prev = INFINITY;
    size_t i;
    json_t *r;
    json_array_foreach(arr, i, r) {
        double ms = tkit_getd(r, "ms");
        ck_assert_msg(ms >= 0 && ms <= prev, "%s not sorted by ms: %s", what, tkit_dump(arr));
        prev = ms;
    }
}

START_TEST(profile_accounts_every_source)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    populate(c);
    json_t *p = tkit_ok(c, "engine.profile", "{\"frames\":20}");
    ck_assert_int_eq(tkit_geti(p, "frames"), 20);
    ck_assert(tkit_getd(p, "seconds") > 0);
    ck_assert(tkit_getd(p, "work_ms") >= tkit_getd(p, "ticks_ms"));

    json_t *cls = tkit_get(p, "classes");
    assert_descending(cls, "classes");
    /* Every function ran once a frame, in its group and level. */
    json_t *r = find_row(cls, "class", "counter", "group", "pre_physics", "level", "persistent");
    ck_assert_msg(r, "no counter/pre_physics/persistent row: %s", tkit_dump(cls));
    ck_assert_int_eq(tkit_geti(r, "calls"), 50 * 20);
    r = find_row(cls, "class", "counter", "group", "pre_physics", "level", "arena");
    ck_assert_msg(r, "no counter row for level arena: %s", tkit_dump(cls));
    ck_assert_int_eq(tkit_geti(r, "calls"), 20 * 20);
    r = find_row(cls, "class", "mover", "group", "post_physics", "level", "persistent");
    ck_assert_msg(r, "no mover row: %s", tkit_dump(cls));
    ck_assert_int_eq(tkit_geti(r, "calls"), 30 * 20);
    r = find_row(cls, "class", "burner", "group", "during_physics", NULL, NULL);
    ck_assert_msg(r, "no burner row: %s", tkit_dump(cls));
    ck_assert_int_eq(tkit_geti(r, "calls"), 20);
    ck_assert(tkit_getd(r, "ms_per_frame") > 0 && tkit_getd(r, "pct") > 0);

    json_t *tm = tkit_get(p, "timers");
    r = find_row(tm, "method", "world.status", NULL, NULL, NULL, NULL);
    ck_assert_msg(r && tkit_geti(r, "calls") >= 15, "timer actions: %s", tkit_dump(tm));
    json_t *tb = tkit_get(p, "tickables");
    r = find_row(tb, "class", "counter", NULL, NULL, NULL, NULL);
    ck_assert_msg(r && tkit_geti(r, "calls") == 20, "tickables: %s", tkit_dump(tb));

    /* The burner runs 300 µs a tick: each of its ticks is timed on its own
     * from its second run on, and it is the slowest. */
    json_t *slow = tkit_get(p, "slowest");
    ck_assert(json_array_size(slow) >= 1 && json_array_size(slow) <= 20);
    assert_descending(slow, "slowest");
    ck_assert_str_eq(tkit_gets(slow, "[0].class"), "burner");
    ck_assert_str_eq(tkit_gets(slow, "[0].group"), "during_physics");
    ck_assert_str_eq(tkit_gets(slow, "[0].level"), "persistent");
    ck_assert(json_is_integer(tkit_get(slow, "[0].entity")));
    ck_assert(json_is_null(tkit_get(slow, "[0].component")));
    ck_assert(tkit_geti(slow, "[0].frame") >= 0);

    json_t *h = tkit_get(p, "histogram");
    long long sum = 0;
    size_t i;
    json_array_foreach(h, i, r) {
        sum += tkit_geti(r, "count");
        ck_assert(tkit_getd(r, "lo_ms") >= 0);
    }
    ck_assert_int_eq(sum, 20);
    ck_assert(json_array_size(h) > 1);
    ck_assert(json_is_null(json_object_get(json_array_get(h, json_array_size(h) - 1), "hi_ms")));
    ck_assert(tkit_getd(p, "groups_ms.during_physics") > 0);
    tkit_finish(d);
}
END_TEST

START_TEST(profile_params_and_limits)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_err(c, TKIT_INVALID_PARAMS, "seconds, frames", "engine.profile",
             "{\"seconds\":1,\"frames\":3}");
    tkit_err(c, TKIT_INVALID_PARAMS, "seconds", "engine.profile", "{\"seconds\":0}");
    tkit_err(c, TKIT_INVALID_PARAMS, "seconds", "engine.profile", "{\"seconds\":601}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "engine.profile", "{\"frames\":36001}");
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "engine.profile", "{\"frames\":0}");
    tkit_err(c, TKIT_INVALID_PARAMS, "framez", "engine.profile", "{\"framez\":3}");
    /* Not as a timer action: there is nowhere to answer. */
    tkit_err(c, TKIT_INVALID_PARAMS, "engine.profile", "timer.set",
             "{\"rate\":1,\"action\":{\"method\":\"engine.profile\"}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "world.trace", "timer.set",
             "{\"rate\":1,\"action\":{\"method\":\"world.trace\",\"params\":{\"frames\":1}}}");

    /* One running profile per connection; another connection may run one.
     * The two calls go in one write, so that no frame runs between them
     * (pause frames count: two of them end the first profile). */
    tkit_ok(c, "world.pause", NULL);
    static const char two[] =
        "{\"jsonrpc\":\"2.0\",\"id\":9001,\"method\":\"engine.profile\",\"params\":{\"frames\":2}}\n"
        "{\"jsonrpc\":\"2.0\",\"id\":9002,\"method\":\"engine.profile\",\"params\":{\"frames\":1}}\n";
    tkit_send_raw(c, two, sizeof two - 1);
    long long id = 9001;
    tkit_assert_error(tkit_recv_id(c, 9002), TKIT_INVALID_STATE, "already running");
    tkit_conn *c2 = tkit_connect(d);
    long long id2 = tkit_send_request(c2, "engine.profile", "{\"frames\":1}");
    tkit_ok(c2, "world.unpause", NULL);
    json_t *r2 = tkit_assert_result(tkit_recv_id(c2, id2));
    ck_assert_int_eq(tkit_geti(r2, "frames"), 1);
    json_t *r = tkit_assert_result(tkit_recv_id(c, id));
    ck_assert_int_eq(tkit_geti(r, "frames"), 2);
    /* Done: the connection may profile again, by time. */
    r = tkit_ok(c, "engine.profile", "{\"seconds\":0.05}");
    ck_assert(tkit_getd(r, "seconds") >= 0.05);
    ck_assert(tkit_geti(r, "frames") >= 1);
    ck_assert_int_eq(json_array_size(tkit_get(r, "classes")), 0);
    tkit_finish(d);
}
END_TEST

START_TEST(profile_answered_at_shutdown)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    long long id = tkit_send_request(c, "engine.profile", "{\"seconds\":600}");
    long long tid = tkit_send_request(c, "world.trace", "{\"frames\":600}");
    tkit_conn *c2 = tkit_connect(d);
    tkit_ok(c2, "world.status", NULL);
    tkit_ok(c2, "engine.shutdown", NULL);
    tkit_assert_error(tkit_recv_id(c, id), TKIT_SHUTTING_DOWN, "profile");
    /* The trace may have hit its output bound first; else it is cut short. */
    json_t *t = tkit_recv_id(c, tid);
    if (!tkit_find(t, "result"))
        tkit_assert_error(t, TKIT_SHUTTING_DOWN, "trace");
    ck_assert_int_eq(tkit_wait_exit(d, TKIT_DEADLINE_S), 0);
    tkit_free(d);
}
END_TEST

/* The ticks of a traced frame with their start and duration, the spans of
 * its groups, timers and tickables, each tick inside its group's span. */
START_TEST(trace_starts_durations_spans)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    populate(c);
    tkit_err(c, TKIT_INVALID_PARAMS, "frames", "world.trace", "{\"frames\":601}");
    json_t *r = tkit_ok(c, "world.trace", "{\"frames\":3}");
    ck_assert(!tkit_getb(r, "truncated"));
    json_t *frames = tkit_get(r, "frames");
    ck_assert_int_eq(json_array_size(frames), 3);
    size_t i, k;
    json_t *f, *t, *s;
    double prev_start = -1;
    int timer = 0;
    json_array_foreach(frames, i, f) {
        double fs = tkit_getd(f, "start");
        ck_assert(fs > prev_start);
        prev_start = fs;
        double fdur = tkit_getd(f, "dur");
        ck_assert(fdur >= 0);
        json_t *ticks = tkit_get(f, "ticks");
        ck_assert_int_eq(json_array_size(ticks), 50 + 20 + 30 + 1);
        json_t *spans = tkit_get(f, "spans");
        int groups = 0, timers = 0, tickables = 0, tickable = 0;
        json_array_foreach(spans, k, s) {
            const char *kind = tkit_gets(s, "kind");
            double st = tkit_getd(s, "start"), du = tkit_getd(s, "dur");
            ck_assert(du >= 0 && st + du <= fdur + 1e-9);
            ck_assert(st >= 0 || !strcmp(kind, "requests"));
            groups += !strcmp(kind, "group");
            timers += !strcmp(kind, "timers");
            timer += !strcmp(kind, "timer");
            tickables += !strcmp(kind, "tickables");
            tickable += !strcmp(kind, "tickable");
            if (!strcmp(kind, "timer"))
                ck_assert_str_eq(tkit_gets(s, "method"), "world.status");
        }
        ck_assert_int_eq(groups, 8);
        ck_assert_int_eq(timers, 1);
        ck_assert_int_eq(tickables, 1);
        ck_assert_int_eq(tickable, 1);
        /* Ticks follow each other on one thread; workers' ticks (thread
         * >= 1: runs split when their expected work passes split_min_us,
         * as a sanitized build's may) overlap the frame thread's. */
        double prev[64];
        for (int q = 0; q < 64; q++)
            prev[q] = -1;
        json_array_foreach(ticks, k, t) {
            /* the old fields, and the new ones */
            ck_assert(json_is_integer(tkit_get(t, "entity")));
            ck_assert(json_is_null(tkit_get(t, "component")));
            const char *g = tkit_gets(t, "group");
            ck_assert_str_eq(tkit_gets(t, "kind"), "tick");
            double st = tkit_getd(t, "start"), du = tkit_getd(t, "dur");
            long long th = tkit_geti(t, "thread");
            ck_assert(th >= 0 && th < 64);
            ck_assert_msg(du >= 0 && st >= prev[th], "%s", tkit_dump(t));
            prev[th] = st + du;
            json_t *gs = NULL;
            size_t m;
            json_array_foreach(spans, m, s) {
                if (!strcmp(tkit_gets(s, "kind"), "group") && !strcmp(tkit_gets(s, "group"), g))
                    gs = s;
            }
            ck_assert_msg(gs, "no span for group %s", g);
            (void)i;
            ck_assert_msg(st >= tkit_getd(gs, "start") &&
                              st + du <= tkit_getd(gs, "start") + tkit_getd(gs, "dur") + 1e-9,
                          "tick %s outside its group %s", tkit_dump(t), tkit_dump(gs));
        }
    }
    ck_assert_int_ge(timer, 1);

    /* Requests executed at a traced frame's boundary appear as a span. */
    tkit_ok(c, "engine.set_tick_rate", "{\"hz\":100}");
    long long id = tkit_send_request(c, "world.trace", "{\"frames\":40}");
    tkit_conn *c2 = tkit_connect(d);
    tkit_ok(c2, "world.status", NULL); /* maybe run with the trace, before it began */
    for (int q = 0; q < 5; q++)
        tkit_ok(c2, "world.status", NULL);
    r = tkit_assert_result(tkit_recv_id(c, id));
    long long requests = 0;
    json_array_foreach(tkit_get(r, "frames"), i, f) {
        json_array_foreach(tkit_get(f, "spans"), k, s) {
            if (!strcmp(tkit_gets(s, "kind"), "requests")) {
                /* run at the frame boundary: while waiting for the frame
                 * (before its start) or at its start */
                requests += tkit_geti(s, "n");
                ck_assert(tkit_getd(s, "dur") >= 0);
                ck_assert(tkit_getd(s, "start") + tkit_getd(s, "dur") <= tkit_getd(f, "dur"));
            }
        }
    }
    ck_assert_int_ge(requests, 5);
    tkit_finish(d);
}
END_TEST

START_TEST(trace_truncated_at_output_bound)
{
    /* max_output 64 KiB: a trace stops at half of it (about 218 items) and
     * says so. */
    const char *cfg[] = {"control.max_output=65536", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":400}");
    json_t *r = tkit_ok(c, "world.trace", "{\"frames\":50}");
    ck_assert(tkit_getb(r, "truncated"));
    json_t *frames = tkit_get(r, "frames");
    ck_assert_int_ge(json_array_size(frames), 1);
    ck_assert_int_lt(json_array_size(frames), 50);
    ck_assert(json_is_true(
        json_object_get(json_array_get(frames, json_array_size(frames) - 1), "truncated")));
    ck_assert_int_lt(strlen(tkit_dump(r)), 65536 / 2 + 4096);
    /* The connection stays usable. */
    tkit_ok(c, "world.status", NULL);
    /* More than twice the functions a reply holds: not traced at all (every
     * function would be timed for a reply cut short at once). */
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":1600}");
    tkit_err(c, TKIT_LIMIT, "2000 tick functions", "world.trace", "{\"frames\":1}");
    tkit_finish(d);
}
END_TEST

/* ---- the tickctl binary ---------------------------------------------------------- */

static const char *tickctl_bin(void)
{
    static char path[PATH_MAX];
    const char *b = getenv("BUILD");
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/tickctl", b && *b ? b : "build");
    if (!realpath(rel, path) || access(path, X_OK) != 0)
        tkit_fail(__FILE__, __LINE__, "tickctl binary '%s' not found (build it first)", rel);
    return path;
}

/* Run argv with stdout+stderr into *out (harness-owned); returns the exit
 * code.  A signal death or running past the deadline fails the test. */
static int run_cmd(const char *const *argv, const char **out)
{
    char outp[PATH_MAX + 16];
    snprintf(outp, sizeof outp, "%s/cmd.out", tkit_tmpdir());
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);
        if (fd < 0 || in < 0)
            _exit(127);
        dup2(in, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    double deadline = tkit_now() + tkit_scale(60);
    int st;
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (tkit_now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            tkit_fail(__FILE__, __LINE__, "%s did not finish in time", argv[0]);
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    const char *text = tkit_slurp(outp);
    *out = text ? text : "";
    ck_assert_msg(WIFEXITED(st), "%s died by signal %d", argv[0], WTERMSIG(st));
    return WEXITSTATUS(st);
}

typedef struct span {
    double ts, dur;
    const char *cat;
} span;

START_TEST(tickctl_trace_writes_chrome_trace)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    populate(c);
    const char *file = tkit_path(d, "trace.json");
    const char *argv[] = {tickctl_bin(), "--socket", tkit_sock(d), "trace", "--frames", "4",
                          "-o",          file,       NULL};
    const char *out;
    ck_assert_msg(run_cmd(argv, &out) == 0, "tickctl trace: %s", out);

    json_error_t je;
    json_t *doc = json_load_file(file, 0, &je);
    ck_assert_msg(doc, "%s is not JSON: line %d: %s", file, je.line, je.text);
    json_t *evs = tkit_get(doc, "traceEvents");
    ck_assert(json_is_array(evs) && json_array_size(evs) > 0);
    ck_assert_int_eq(tkit_geti(doc, "otherData.frames"), 4);

    /* Required fields; per track, the spans in start order. */
    enum { MAXT = 128, WORKER_TID0 = 100 };
    span *tracks[MAXT] = {0};
    size_t n_in[MAXT] = {0};
    int named = 0, frames = 0, ticks = 0, groups = 0;
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e) {
        const char *ph = tkit_gets(e, "ph");
        ck_assert(json_is_integer(tkit_get(e, "pid")));
        long long tid = tkit_geti(e, "tid");
        ck_assert(tid >= 0 && tid < MAXT);
        tkit_gets(e, "name");
        ck_assert(json_is_object(tkit_get(e, "args")));
        if (!strcmp(ph, "M")) {
            named += !strcmp(tkit_gets(e, "name"), "thread_name");
            continue;
        }
        ck_assert_str_eq(ph, "X");
        const char *cat = tkit_gets(e, "cat");
        double ts = tkit_getd(e, "ts"), dur = tkit_getd(e, "dur");
        ck_assert_msg(ts >= 0 && dur >= 0, "negative time: %s", tkit_dump(e));
        frames += !strcmp(cat, "frame");
        ticks += !strcmp(cat, "tick");
        groups += !strcmp(cat, "group");
        if (!tracks[tid])
            tracks[tid] = calloc(json_array_size(evs), sizeof(span));
        tracks[tid][n_in[tid]++] = (span){ts, dur, cat};
    }
    ck_assert_int_ge(named, 9);
    ck_assert_int_eq(frames, 4);
    ck_assert_int_eq(ticks, 4 * (50 + 20 + 30 + 1));
    ck_assert_int_eq(groups, 4 * 8);

    /* Nesting: on each track, sorted by (start, longer first), every span
     * lies inside the innermost open span that overlaps it; ticks sit in a
     * group span, timer actions in "timers", tickables in "tickables". */
    for (int tid = 0; tid < MAXT; tid++) {
        span *v = tracks[tid];
        size_t n = n_in[tid];
        for (size_t a = 1; a < n; a++) { /* insertion sort: small n */
            span x = v[a];
            size_t b = a;
            while (b > 0 && (v[b - 1].ts > x.ts || (v[b - 1].ts == x.ts && v[b - 1].dur < x.dur))) {
                v[b] = v[b - 1];
                b--;
            }
            v[b] = x;
        }
        /* Containers (frame, group, timers, tickables) may hold spans;
         * other spans are leaves and never overlap one another. */
        const span *stack[8];
        int top = 0;
        double leaf_end = -1;
        for (size_t a = 0; a < n; a++) {
            const span *x = &v[a];
            /* (times are exact to the ns; 1e-6 µs absorbs the doubles) */
            while (top > 0 && (stack[top - 1]->ts + stack[top - 1]->dur < x->ts - 1e-6 ||
                               (stack[top - 1]->ts + stack[top - 1]->dur <= x->ts + 1e-6 &&
                                x->dur > 0)))
                top--;
            const span *p = top > 0 ? stack[top - 1] : NULL;
            if (p)
                ck_assert_msg(x->ts + x->dur <= p->ts + p->dur + 1e-6,
                              "track %d: %s [%.3f, +%.3f] overlaps %s [%.3f, +%.3f] without "
                              "nesting",
                              tid, x->cat, x->ts, x->dur, p->cat, p->ts, p->dur);
            bool container = !strcmp(x->cat, "frame") || !strcmp(x->cat, "group") ||
                             !strcmp(x->cat, "timers") || !strcmp(x->cat, "tickables");
            /* Ticks of the frame thread sit in their group's span; a worker's
             * (tid 100 + thread) have a track of their own. */
            if (!strcmp(x->cat, "tick") && tid < WORKER_TID0)
                ck_assert_msg(p && !strcmp(p->cat, "group"),
                              "track %d: a tick at %.3f outside a group span", tid, x->ts);
            if (tid >= WORKER_TID0)
                ck_assert_msg(!strcmp(x->cat, "tick") && !p,
                              "worker track %d: a %s at %.3f", tid, x->cat, x->ts);
            if (!strcmp(x->cat, "timer"))
                ck_assert(p && !strcmp(p->cat, "timers"));
            if (!strcmp(x->cat, "tickable"))
                ck_assert(p && !strcmp(p->cat, "tickables"));
            if (!strcmp(x->cat, "group") || !strcmp(x->cat, "frame"))
                ck_assert_msg(!p, "track %d: a %s inside a %s", tid, x->cat, p->cat);
            if (container) {
                ck_assert(top < 8);
                stack[top++] = x;
            } else {
                ck_assert_msg(x->ts >= leaf_end - 1e-6, "track %d: %s at %.3f overlaps the last",
                              tid, x->cat, x->ts);
                leaf_end = x->ts + x->dur;
            }
        }
        free(v);
    }
    json_decref(doc);

    /* python3's json module reads it too, where python3 is installed. */
    if (access("/usr/bin/python3", X_OK) == 0) {
        const char *py[] = {"/usr/bin/python3", "-c",
                            "import json,sys; d=json.load(open(sys.argv[1])); "
                            "assert all(e['ph'] in 'XM' for e in d['traceEvents'])",
                            file, NULL};
        ck_assert_msg(run_cmd(py, &out) == 0, "python3 json: %s", out);
    }
    /* Bad command lines are usage errors (2). */
    const char *bad[] = {tickctl_bin(), "--socket", tkit_sock(d), "trace", "--frames", "0", NULL};
    ck_assert_int_eq(run_cmd(bad, &out), 2);
    tkit_finish(d);
}
END_TEST

START_TEST(tickctl_top_blocks)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    populate(c);
    const char *argv[] = {tickctl_bin(), "--socket", tkit_sock(d), "top", "-n", "2", NULL};
    const char *out;
    ck_assert_msg(run_cmd(argv, &out) == 0, "tickctl top: %s", out);
    /* Not a terminal: two plain blocks, no escape sequences. */
    ck_assert_msg(!strchr(out, '\x1b'), "escape codes off a terminal: %s", out);
    const char *b1 = strstr(out, "TPS");
    ck_assert_msg(b1 && strstr(b1 + 3, "TPS"), "two blocks: %s", out);
    ck_assert_msg(strstr(out, "MSPT") && strstr(out, "entities") && strstr(out, "CLASS") &&
                      strstr(out, "burner") && strstr(out, "during_physics") &&
                      strstr(out, "counter") && strstr(out, "timer world.status"),
                  "top output: %s", out);
    const char *once[] = {tickctl_bin(), "--socket", tkit_sock(d), "top", "--once", NULL};
    ck_assert_int_eq(run_cmd(once, &out), 0);
    ck_assert_msg(strstr(out, "TPS") && !strstr(strstr(out, "TPS") + 3, "TPS"), "one: %s", out);
    const char *bad[] = {tickctl_bin(), "--socket", tkit_sock(d), "top", "-n", "x", NULL};
    ck_assert_int_eq(run_cmd(bad, &out), 2);
    tkit_finish(d);
}
END_TEST

static Suite *profile_suite(void)
{
    Suite *s = suite_create("profile");
    TCase *tc = tcase_create("profile");
    tcase_set_timeout(tc, tkit_scale(60));
    tcase_add_test(tc, profile_accounts_every_source);
    tcase_add_test(tc, profile_params_and_limits);
    tcase_add_test(tc, profile_answered_at_shutdown);
    tcase_add_test(tc, trace_starts_durations_spans);
    tcase_add_test(tc, trace_truncated_at_output_bound);
    tcase_add_test(tc, tickctl_trace_writes_chrome_trace);
    tcase_add_test(tc, tickctl_top_blocks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(profile_suite); }
