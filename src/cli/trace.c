/*
 * trace.c - `tickctl trace`: world.trace as a Chrome Trace Event Format file,
 * which Perfetto (ui.perfetto.dev) and chrome://tracing open.
 *
 *   tickctl [-s PATH | -w NAME] trace [--frames N] [-o FILE]
 *
 * The file is one JSON object {"traceEvents": [...], "displayTimeUnit": "ms",
 * "otherData": {...}}.  Every span is a complete event (ph "X") with ts and
 * dur in µs on one timeline: ts = the frame's start (µs since the first traced
 * frame's start) + the span's start within its frame (negative for requests
 * run while waiting for the frame), the whole shifted so that none is < 0.  Tracks (tid) of
 * process 1 ("tickd"):
 *   tid 1        "frame": one span per frame (its work), and inside it the
 *                requests, timers (with each timer action nested) and
 *                tickables (with each tickable) spans
 *   tid 10 + g   one per tick group g (pre_physics = 10 ... newly_spawned =
 *                17): the group's span with the tick functions the frame
 *                thread ran inside
 *   tid 100 + t  one per worker thread t seen (tickd's [engine] threads):
 *                the tick functions it ran, which overlap the frame
 *                thread's and each other's
 * plus metadata events (ph "M") naming the process and tracks and ordering
 * them.  Times are exact: the daemon reports ns as µs with three decimals, and
 * sums are done in integer ns, so a child never pokes out of its parent by a
 * rounding error.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickctl_int.h"

#define FRAME_TID 1
#define GROUP_TID0 10
#define WORKER_TID0 100
#define N_GROUPS 8

static const char *const group_names[N_GROUPS] = {
    "pre_physics",  "start_physics",    "during_physics", "end_physics",
    "post_physics", "post_update_work", "last_demotable", "newly_spawned"};

static int group_index(const char *g)
{
    for (int i = 0; g && i < N_GROUPS; i++)
        if (!strcmp(group_names[i], g))
            return i;
    return -1;
}

/* µs (a JSON number with up to 3 decimals) -> integer ns. */
static long long ns_of(const json_t *v)
{
    return json_is_number(v) ? llround(json_number_value(v) * 1000.0) : 0;
}

/* Integer ns -> µs with three decimals, exactly. */
static void put_us(tk_ctl_buf_t *b, long long ns)
{
    char s[48];
    snprintf(s, sizeof s, "%s%lld.%03lld", ns < 0 ? "-" : "", llabs(ns) / 1000,
             llabs(ns) % 1000);
    tk__ctl_buf_puts(b, s);
}

static void put_json(tk_ctl_buf_t *b, const json_t *v) { tk__ctl_json_append(b, v, 0); }

/* One complete event; `args` is borrowed (may be NULL). */
static void put_x(tk_ctl_buf_t *b, bool *first, const char *name, const char *cat, int tid,
                  long long ts, long long dur, const json_t *args)
{
    tk__ctl_buf_puts(b, *first ? "\n" : ",\n");
    *first = false;
    json_t *jn = json_string(name ? name : "?");
    tk__ctl_buf_puts(b, "{\"ph\":\"X\",\"pid\":1,\"tid\":");
    char s[24];
    snprintf(s, sizeof s, "%d", tid);
    tk__ctl_buf_puts(b, s);
    tk__ctl_buf_puts(b, ",\"name\":");
    put_json(b, jn);
    json_decref(jn);
    tk__ctl_buf_puts(b, ",\"cat\":\"");
    tk__ctl_buf_puts(b, cat);
    tk__ctl_buf_puts(b, "\",\"ts\":");
    put_us(b, ts);
    tk__ctl_buf_puts(b, ",\"dur\":");
    put_us(b, dur < 0 ? 0 : dur);
    tk__ctl_buf_puts(b, ",\"args\":");
    if (args)
        put_json(b, args);
    else
        tk__ctl_buf_puts(b, "{}");
    tk__ctl_buf_puts(b, "}");
}

static void put_meta(tk_ctl_buf_t *b, bool *first, const char *what, int tid, const char *key,
                     json_t *val)
{
    tk__ctl_buf_puts(b, *first ? "\n" : ",\n");
    *first = false;
    json_t *o = json_pack("{s:s,s:s,s:i,s:i,s:{s:o}}", "ph", "M", "name", what, "pid", 1, "tid",
                          tid, "args", key, val);
    if (!o)
        tk__ctl_oom();
    put_json(b, o);
    json_decref(o);
}

/* Convert a world.trace result into the file's text. */
static int convert(const json_t *res, tk_ctl_buf_t *b, char **err)
{
    const json_t *frames = json_object_get(res, "frames");
    if (!json_is_array(frames)) {
        *err = tk__ctl_strf("the world.trace result has no frames array");
        return -1;
    }
    bool first = true;
    tk__ctl_buf_puts(b, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
    put_meta(b, &first, "process_name", 0, "name", json_string("tickd"));
    put_meta(b, &first, "thread_name", FRAME_TID, "name", json_string("frame"));
    put_meta(b, &first, "thread_sort_index", FRAME_TID, "sort_index", json_integer(0));
    for (int g = 0; g < N_GROUPS; g++) {
        put_meta(b, &first, "thread_name", GROUP_TID0 + g, "name", json_string(group_names[g]));
        put_meta(b, &first, "thread_sort_index", GROUP_TID0 + g, "sort_index",
                 json_integer(g + 1));
    }
    /* A track for each worker thread that ran a tick. */
    size_t i, k;
    const json_t *fr, *sp;
    json_int_t workers = 0;
    json_array_foreach(frames, i, fr) {
        json_array_foreach(json_object_get(fr, "ticks"), k, sp) {
            json_int_t t = json_integer_value(json_object_get(sp, "thread"));
            if (t > workers && t < 10000)
                workers = t;
        }
    }
    for (json_int_t t = 1; t <= workers; t++) {
        char name[32];
        snprintf(name, sizeof name, "worker %" JSON_INTEGER_FORMAT, t);
        put_meta(b, &first, "thread_name", WORKER_TID0 + (int)t, "name", json_string(name));
        put_meta(b, &first, "thread_sort_index", WORKER_TID0 + (int)t, "sort_index",
                 json_integer(N_GROUPS + t));
    }
    /* Requests run while waiting for a frame come before its start: shift
     * the timeline so that the earliest event is at 0 or later. */
    long long shift = 0;
    json_array_foreach(frames, i, fr) {
        long long f0 = ns_of(json_object_get(fr, "start"));
        json_array_foreach(json_object_get(fr, "spans"), k, sp) {
            long long ts = f0 + ns_of(json_object_get(sp, "start"));
            if (-ts > shift)
                shift = -ts;
        }
    }
    json_array_foreach(frames, i, fr) {
        long long f0 = ns_of(json_object_get(fr, "start")) + shift;
        json_t *fa = json_pack("{s:O}", "frame", json_object_get(fr, "frame"));
        char name[64];
        snprintf(name, sizeof name, "frame %" JSON_INTEGER_FORMAT,
                 json_integer_value(json_object_get(fr, "frame")));
        long long fdur = ns_of(json_object_get(fr, "dur"));
        put_x(b, &first, name, "frame", FRAME_TID, f0, fdur, fa);
        json_decref(fa);
        json_array_foreach(json_object_get(fr, "spans"), k, sp) {
            const char *kind = json_string_value(json_object_get(sp, "kind"));
            if (!kind)
                continue;
            long long ts = f0 + ns_of(json_object_get(sp, "start"));
            long long dur = ns_of(json_object_get(sp, "dur"));
            json_t *args = json_pack("{s:O}", "n", json_object_get(sp, "n"));
            if (!strcmp(kind, "group")) {
                const char *g = json_string_value(json_object_get(sp, "group"));
                int gi = group_index(g);
                if (gi >= 0)
                    put_x(b, &first, g, "group", GROUP_TID0 + gi, ts, dur, args);
            } else if (!strcmp(kind, "timer")) {
                put_x(b, &first, json_string_value(json_object_get(sp, "method")), "timer",
                      FRAME_TID, ts, dur, args);
            } else if (!strcmp(kind, "tickable")) {
                put_x(b, &first, json_string_value(json_object_get(sp, "class")), "tickable",
                      FRAME_TID, ts, dur, args);
            } else {
                /* "timers", "tickables", "requests" */
                put_x(b, &first, kind, kind, FRAME_TID, ts, dur, args);
            }
            json_decref(args);
        }
        const json_t *t;
        json_array_foreach(json_object_get(fr, "ticks"), k, t) {
            int gi = group_index(json_string_value(json_object_get(t, "group")));
            if (gi < 0)
                continue;
            json_int_t thread = json_integer_value(json_object_get(t, "thread"));
            json_t *args = json_pack("{s:O,s:O,s:O,s:s,s:I}", "entity",
                                     json_object_get(t, "entity"), "component",
                                     json_object_get(t, "component"), "frame",
                                     json_object_get(fr, "frame"), "group", group_names[gi],
                                     "thread", thread);
            if (!args)
                tk__ctl_oom();
            int tid = thread > 0 && thread <= workers ? WORKER_TID0 + (int)thread
                                                      : GROUP_TID0 + gi;
            put_x(b, &first, json_string_value(json_object_get(t, "class")), "tick", tid,
                  f0 + ns_of(json_object_get(t, "start")), ns_of(json_object_get(t, "dur")), args);
            json_decref(args);
        }
    }
    tk__ctl_buf_puts(b, "\n],\"otherData\":{\"frames\":");
    char s[64];
    snprintf(s, sizeof s, "%zu,\"truncated\":%s}}\n", json_array_size(frames),
             json_is_true(json_object_get(res, "truncated")) ? "true" : "false");
    tk__ctl_buf_puts(b, s);
    return 0;
}

static int usage(const char *fmt, const char *arg)
{
    fputs("tickctl trace: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nusage: tickctl [-s PATH | -w NAME] trace [--frames N] [-o FILE]\n", stderr);
    return TK_CTL_EXIT_USAGE;
}

int tk__ctl_trace_main(int argc, char *argv[], const char *socket)
{
    long frames = 1;
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--frames") || !strcmp(argv[i], "-f")) {
            const char *v = i + 1 < argc ? argv[++i] : "";
            char *end;
            errno = 0;
            frames = strtol(v, &end, 10);
            if (end == v || *end || errno || frames < 1)
                return usage("--frames needs a count >= 1, got '%s'", v);
        } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return usage("%s needs a file name", argv[i]);
            out = argv[++i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: tickctl [-s PATH | -w NAME] trace [--frames N] [-o FILE]\n"
                   "Trace the next N frames (world.trace, default 1) and write them in\n"
                   "Chrome Trace Event Format to FILE (default stdout), for Perfetto\n"
                   "(ui.perfetto.dev) or chrome://tracing.\n");
            return TK_CTL_EXIT_OK;
        } else {
            return usage("unknown argument '%s'", argv[i]);
        }
    }
    tk_ctl_conn_t c;
    int rc = tk__ctl_open(&c, socket);
    if (rc)
        return rc;
    json_t *params = json_pack("{s:I}", "frames", (json_int_t)frames);
    json_t *res = NULL;
    char *err = NULL;
    rc = tk__ctl_rpc(&c, "world.trace", params, &res, &err);
    json_decref(params);
    tk__ctl_conn_close(&c);
    if (rc) {
        fprintf(stderr, "tickctl trace: %s\n", err);
        free(err);
        return rc;
    }
    tk_ctl_buf_t b = {0};
    if (convert(res, &b, &err) < 0) {
        fprintf(stderr, "tickctl trace: %s\n", err);
        free(err);
        json_decref(res);
        tk__ctl_buf_free(&b);
        return TK_CTL_EXIT_FAIL;
    }
    if (json_is_true(json_object_get(res, "truncated")))
        fprintf(stderr, "tickctl trace: truncated after %zu frames (the reply reached half of "
                        "tickd's control.max_output)\n",
                json_array_size(json_object_get(res, "frames")));
    json_decref(res);
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "tickctl trace: %s: %s\n", out, strerror(errno));
        tk__ctl_buf_free(&b);
        return TK_CTL_EXIT_FAIL;
    }
    bool okw = fwrite(b.data, 1, b.len, f) == b.len;
    okw = (out ? fclose(f) == 0 : fflush(f) == 0) && okw;
    tk__ctl_buf_free(&b);
    if (!okw) {
        fprintf(stderr, "tickctl trace: writing %s: %s\n", out ? out : "stdout", strerror(errno));
        return TK_CTL_EXIT_FAIL;
    }
    return TK_CTL_EXIT_OK;
}
