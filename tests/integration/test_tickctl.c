/*
 * test_tickctl.c - tickctl against the real daemon: `tickctl stats` (the
 * one-line summary; --json and --compact for machines) and `tickctl --watch
 * stats` (a table with its header repeated, or JSON lines on a pipe), reals
 * printed in their shortest form, batches on the command line and scripts
 * on stdin (`-`: the three line forms, answers in input order, pipelining,
 * exit statuses), "did you mean" for methods and parameters, and the help
 * table against the methods tickd answers.
 *
 * tickctl is $BUILD/tickctl (default build/tickctl).  The daemon runs the
 * harness's config: unlimited tick rate at a fixed dt of 0.01 s, so the
 * once-a-second stats event comes every 100 frames, many times a second.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *tickctl_bin(void)
{
    static char path[512];
    const char *b = getenv("BUILD");
    snprintf(path, sizeof path, "%s/tickctl", b && *b ? b : "build");
    return path;
}

/* Start tickctl with `args` (NULL-terminated, after the program and
 * "-s SOCK"), stdin from `in_path` (NULL: inherited), stdout to `out_path`,
 * stderr to out_path".err". */
static pid_t spawn_in(tkit_daemon *d, const char *const *args, const char *in_path,
                      const char *out_path)
{
    const char *argv[32];
    int n = 0;
    argv[n++] = tickctl_bin();
    argv[n++] = "-s";
    argv[n++] = tkit_sock(d);
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    char err_path[600];
    snprintf(err_path, sizeof err_path, "%s.err", out_path);
    pid_t parent = getpid();
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(127);
        if (in_path) {
            int i = open(in_path, O_RDONLY);
            if (i < 0)
                _exit(127);
            dup2(i, 0);
        }
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static pid_t spawn(tkit_daemon *d, const char *const *args, const char *out_path)
{
    return spawn_in(d, args, NULL, out_path);
}

/* Wait for `pid` with a deadline; its exit code. */
static int reap(pid_t pid)
{
    double deadline = tkit_now() + tkit_scale(10);
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (tkit_now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            ck_abort_msg("tickctl did not exit in time");
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ck_assert_msg(WIFEXITED(status), "tickctl died of signal %d", WTERMSIG(status));
    return WEXITSTATUS(status);
}

/* Run tickctl to completion; its stdout (owned by the harness). */
static const char *run_ctl(tkit_daemon *d, const char *const *args, int want_code)
{
    const char *out = tkit_path(d, "ctl.out");
    int code = reap(spawn(d, args, out));
    char err_path[600];
    snprintf(err_path, sizeof err_path, "%s.err", out);
    ck_assert_msg(code == want_code, "tickctl exit %d, stderr:\n%s", code,
                  tkit_slurp(err_path));
    const char *text = tkit_slurp(out);
    ck_assert_ptr_nonnull(text);
    return text;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(tickctl_stats_summary)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":12034}");
    tkit_wait_frames(c, 300);
    static const char *const args[] = {"stats", NULL};
    const char *out = run_ctl(d, args, 0);
    ck_assert_uint_eq(count_lines(out), 1);
    double tps, tps1m, p50, p99, max;
    char ents[32];
    unsigned long over;
    int n = sscanf(out,
                   "TPS %lf (1m %lf) \xc2\xb7 MSPT %lf/%lf/%lf ms (p50/p99/max) \xc2\xb7 %31s "
                   "entities \xc2\xb7 %lu overrun",
                   &tps, &tps1m, &p50, &p99, &max, ents, &over);
    ck_assert_msg(n == 7, "summary does not parse (%d fields): %s", n, out);
    ck_assert_str_eq(ents, "12,034");
    ck_assert(tps > 0 && tps1m > 0);
    ck_assert(p50 <= p99 && p99 <= max);
    /* The same numbers from engine.stats: overruns at least those printed. */
    ck_assert_int_ge(tkit_geti(tkit_ok(c, "engine.stats", NULL), "overruns"), (long long)over);

    /* --json: the engine.stats object, pretty; --compact: one line. */
    static const char *const json_args[] = {"--json", "stats", NULL};
    out = run_ctl(d, json_args, 0);
    json_t *j = json_loads(out, 0, NULL);
    ck_assert_msg(j && json_is_real(json_object_get(j, "tps_1s")), "not engine.stats: %s", out);
    ck_assert_int_gt(count_lines(out), 10);
    json_decref(j);
    static const char *const compact_args[] = {"--compact", "stats", NULL};
    out = run_ctl(d, compact_args, 0);
    ck_assert_uint_eq(count_lines(out), 1);
    ck_assert_ptr_nonnull(strstr(out, "\"entities\":12034"));

    /* stats takes no parameters; --table goes with --watch. */
    static const char *const bad[] = {"stats", "x=1", NULL};
    run_ctl(d, bad, 2);
    static const char *const bad2[] = {"--table", "stats", NULL};
    run_ctl(d, bad2, 2);
    tkit_finish(d);
}
END_TEST

/* Lines in the file at `path` so far (0 if it does not exist yet). */
static size_t file_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;
    if (!f)
        return 0;
    for (int ch; (ch = getc(f)) != EOF;)
        n += ch == '\n';
    fclose(f);
    return n;
}

/* Run `--watch stats` with `extra` options until `lines` lines arrived
 * (so tickctl has subscribed, its signal handlers in place), then SIGINT
 * (exit 0); returns the output.  Each call writes a file of its own. */
static const char *watch(tkit_daemon *d, const char *extra, size_t lines)
{
    static int calls;
    const char *args[] = {"--watch", "stats", extra, NULL};
    char name[32];
    snprintf(name, sizeof name, "watch%d.out", calls++);
    const char *out = tkit_path(d, name);
    unlink(out);
    pid_t pid = spawn(d, args, out);
    double deadline = tkit_now() + tkit_scale(10);
    const char *text = "";
    while (tkit_now() < deadline) {
        if (file_lines(out) >= lines)
            break;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGINT);
    ck_assert_int_eq(reap(pid), 0);
    text = tkit_slurp(out);
    ck_assert_msg(text && count_lines(text) >= lines, "%zu lines, want %zu:\n%s",
                  text ? count_lines(text) : 0, lines, text ? text : "");
    return text;
}

START_TEST(tickctl_watch_table)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":1500}");
    /* Table: header, 20 rows, header again, rows. */
    const char *t = watch(d, "--table", 24);
    char *copy = strdup(t);
    size_t i = 0;
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save), i++) {
        if (i % 21 == 0) {
            ck_assert_msg(strstr(line, "frame") && strstr(line, "TPS") && strstr(line, "p99 ms"),
                          "line %zu is not the header: %s", i, line);
            continue;
        }
        unsigned long long frame, ticks, over, clients, dropped;
        double tps, tps1m, p50, p99, max;
        char ents[32];
        int n = sscanf(line, "%llu %lf %lf %lf %lf %lf %31s %llu %llu %llu %llu", &frame, &tps,
                       &tps1m, &p50, &p99, &max, ents, &ticks, &over, &clients, &dropped);
        ck_assert_msg(n == 11, "row %zu does not parse (%d fields): %s", i, n, line);
        ck_assert_str_eq(ents, "1,500");
        ck_assert_uint_ge(clients, 2);
    }
    free(copy);

    /* On a pipe the default stays JSON lines, as --json gives anywhere. */
    const char *p = watch(d, "--timeout=5", 3);
    json_t *j = json_loadb(p, strcspn(p, "\n"), 0, NULL);
    ck_assert_msg(j != NULL, "not a JSON line: %s", p);
    ck_assert_str_eq(json_string_value(json_object_get(j, "method")), "event.stats");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "params"),
                                                         "entities")),
                     1500);
    json_decref(j);
    tkit_finish(d);
}
END_TEST

/* tickctl prints reals as the daemon sends them: shortest round-trip. */
START_TEST(tickctl_reals_shortest)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = tkit_ok(c, "entity.spawn",
                        "{\"class\":\"mover\",\"props\":{\"vx\":0.1,\"vy\":0.3,\"x\":1e300}}");
    char *id = strdup(tkit_dump(json_array_get(json_object_get(r, "ids"), 0)));
    char *arg = NULL;
    ck_assert_int_ge(asprintf(&arg, "id=%s", id), 0);
    const char *args[] = {"--compact", "entity.get", arg, NULL};
    const char *out = run_ctl(d, args, 0);
    ck_assert_msg(strstr(out, "\"vx\":0.1,") && strstr(out, "\"vy\":0.3,") &&
                      strstr(out, "\"x\":1e300,"),
                  "reals: %s", out);
    free(arg);
    free(id);
    tkit_finish(d);
}
END_TEST

/* ---- batches and scripts -------------------------------------------------------- */

/* Run tickctl with stdin `input` (written to a file); its stdout, and its
 * stderr in *err. */
static const char *run_script(tkit_daemon *d, const char *const *args, const char *input,
                              int want_code, const char **err)
{
    static int calls;
    char name[32];
    snprintf(name, sizeof name, "script%d.in", calls);
    const char *in = tkit_write_file(d, name, input);
    snprintf(name, sizeof name, "script%d.out", calls++);
    const char *out = tkit_path(d, name);
    int code = reap(spawn_in(d, args, in, out));
    char err_path[600];
    snprintf(err_path, sizeof err_path, "%s.err", out);
    const char *e = tkit_slurp(err_path);
    ck_assert_msg(code == want_code, "tickctl exit %d, want %d; stderr:\n%s", code, want_code, e);
    if (err)
        *err = e ? e : "";
    const char *text = tkit_slurp(out);
    ck_assert_ptr_nonnull(text);
    return text;
}

/* Line `i` (from 0) of `text` parsed as JSON (owned by the harness; fails
 * the test when it is not JSON). */
static json_t *json_line(const char *text, size_t i)
{
    const char *p = text;
    for (size_t k = 0; k < i; k++) {
        p = strchr(p, '\n');
        ck_assert_msg(p, "no line %zu in:\n%s", i, text);
        p++;
    }
    return tkit_json("%.*s", (int)strcspn(p, "\n"), p);
}

START_TEST(tickctl_batch)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    uint64_t before = tkit_frame(c);
    /* README's example: the trace covers exactly the stepped frames. */
    static const char *const trace_step[] = {
        "--compact",
        "[{\"method\":\"world.trace\",\"params\":{\"frames\":2}},"
        "{\"method\":\"world.step\",\"params\":{\"frames\":2}}]",
        NULL};
    const char *out = run_ctl(d, trace_step, 0);
    ck_assert_uint_eq(count_lines(out), 2);
    json_t *trace = json_line(out, 0), *step = json_line(out, 1);
    json_t *frames = json_object_get(trace, "frames");
    ck_assert_uint_eq(json_array_size(frames), 2);
    long long last = tkit_geti(step, "frame");
    long long f0 = tkit_geti(json_array_get(frames, 0), "frame");
    ck_assert_int_ge(last, (long long)before + 2);
    ck_assert_int_gt(f0, (long long)before);
    ck_assert_int_eq(tkit_geti(json_array_get(frames, 1), "frame"), f0 + 1);
    ck_assert_int_le(f0 + 1, last);

    /* Explicit ids are kept; errors go to stderr, located, with a hint;
     * the other answers still print, in order; exit 1. */
    static const char *const mixed[] = {
        "--compact",
        "[{\"method\":\"level.list\",\"id\":\"mine\"},{\"method\":\"entitty.spawn\"},"
        "{\"method\":\"entity.spawn\",\"params\":{\"class\":\"counter\",\"levl\":\"x\"}},"
        "{\"jsonrpc\":\"2.0\",\"method\":\"world.status\",\"id\":7}]",
        NULL};
    const char *err;
    out = run_script(d, mixed, "", 1, &err);
    ck_assert_uint_eq(count_lines(out), 2);
    ck_assert_msg(strstr(out, "\"levels\":[") && strstr(out, "\"paused\":true"), "%s", out);
    ck_assert_msg(strstr(out, "levels") < strstr(out, "paused"), "answers out of order:\n%s", out);
    static const char *const lines[] = {
        "tickctl: request 2: error -32601: method not found: entitty.spawn\n"
        "tickctl: did you mean 'entity.spawn'?\n",
        "tickctl: request 3: error -32602: levl: unknown parameter\n"
        "tickctl: did you mean 'level'?\n",
        NULL};
    for (size_t i = 0; lines[i]; i++)
        ck_assert_msg(strstr(err, lines[i]), "stderr lacks:\n%s\nin:\n%s", lines[i], err);

    /* Usage errors, before anything is sent: exit 2. */
    static const char *const bad[][3] = {
        {"[]", NULL},
        {"[1]", NULL},
        {"[{\"params\":{}}]", NULL},
        {"[{\"method\":\"world.status\",\"parms\":{}}]", NULL},
        {"[{\"method\":\"world.status\",\"id\":null}]", NULL},
        {"[{\"method\":\"world.status\"}", NULL},
        {"[{\"method\":\"world.status\"}]", "x=1"},
        {"[{\"method\":\"entity.spawn\",\"params\":{\"class\":\"counter\"}},{\"id\":1}]", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        run_ctl(d, bad[i], 2);
    run_script(d, bad[3], "", 2, &err);
    ck_assert_msg(strstr(err, "unknown member \"parms\"") && strstr(err, "did you mean 'params'"),
                  "%s", err);
    static const char *const with_id[] = {"--id", "3", "[{\"method\":\"world.status\"}]", NULL};
    run_ctl(d, with_id, 2);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 0); /* not sent */
    tkit_finish(d);
}
END_TEST

START_TEST(tickctl_script)
{
    tkit_daemon *d = tkit_start(NULL);
    static const char script[] =
        "# a comment, then a blank line\n"
        "\n"
        "world.pause\n"
        "entity.spawn class=counter count=3 tick.interval=0.5\n"
        "{\"method\": \"entity.get\", \"params\": {\"id\": 1}}\n"
        "[{\"method\": \"level.add\", \"params\": {\"name\": \"arena\"}}, "
        "{\"method\": \"level.list\"}]\n"
        "entity.spawn {\"class\": \"mover\", \"level\": \"arena\", \"props\": {\"vx\": 1}}\n"
        "  entity.spawn class=mover level=\"arena\" props='{\"vx\": 2.5}'\r\n"
        "world.step frames=5\n"
        "world.status\n"
        "entity.destroy ids=[999999]\n"
        "spawn class=counter\n"
        "timer.set rate=1 action='{\"method\":\"world.status\",\"parms\":{}}'\n"
        "entity.spawn class=counter tick.grup=post_physics\n"
        "entity.list level=arena";
    static const char *const args[] = {"--compact", "-", NULL};
    const char *err;
    const char *out = run_script(d, args, script, 1, &err);
    /* Every result on stdout in input order, one line each. */
    ck_assert_msg(count_lines(out) == 10, "stdout:\n%s\nstderr:\n%s", out, err);
    json_t *j = json_line(out, 0);
    ck_assert(tkit_getb(j, "paused"));
    j = json_line(out, 1);
    ck_assert_int_eq(json_array_size(tkit_get(j, "ids")), 3);
    j = json_line(out, 2);
    ck_assert_int_eq(tkit_geti(j, "id"), 1);
    ck_assert(tkit_getd(j, "tick.interval") == 0.5);
    j = json_line(out, 3);
    ck_assert_msg(json_object_size(j) == 0 || !json_object_get(j, "error"), "level.add");
    j = json_line(out, 4);
    ck_assert_msg(strstr(tkit_dump(j), "\"arena\""), "level.list: %s", tkit_dump(j));
    ck_assert_int_eq(tkit_geti(json_line(out, 5), "ids[0]"), 4);
    ck_assert_int_eq(tkit_geti(json_line(out, 6), "ids[0]"), 5);
    tkit_geti(json_line(out, 7), "frame"); /* world.step, answered later */
    ck_assert(tkit_getb(json_line(out, 8), "paused"));
    ck_assert_int_eq(tkit_geti(json_line(out, 9), "total"), 2); /* the last line, no newline */
    /* Errors on stderr, by input line, with hints, in order. */
    static const char *const errs[] = {
        "tickctl: line 11: error -32001: ",
        "tickctl: line 12: error -32601: method not found: spawn\n"
        "tickctl: did you mean 'entity.spawn'?\n",
        "tickctl: line 13: error -32602: action.parms: unknown parameter\n"
        "tickctl: did you mean 'action.params'?\n",
        "tickctl: line 14: error -32602: tick.grup: unknown parameter\n"
        "tickctl: did you mean 'tick.group'?\n",
        NULL};
    const char *prev = err;
    for (size_t i = 0; errs[i]; i++) {
        const char *at = strstr(err, errs[i]);
        ck_assert_msg(at && at >= prev, "stderr lacks (or out of order):\n%s\nin:\n%s", errs[i],
                      err);
        prev = at;
    }
    /* The mover with vx 2.5: the key=value line's quoting held. */
    tkit_conn *c = tkit_connect(d);
    ck_assert(tkit_getd(tkit_ok(c, "entity.get", "{\"id\":5}"), "props.vx") == 2.5);

    /* Only results: exit 0.  Nothing but comments: exit 0, no output. */
    out = run_script(d, args, "world.status\nlevel.list\n", 0, NULL);
    ck_assert_uint_eq(count_lines(out), 2);
    out = run_script(d, args, "# nothing\n\n", 0, NULL);
    ck_assert_str_eq(out, "");

    /* A line that is not a request: reported, it and what follows are not
     * sent, what came before is answered; exit 2. */
    static const char bad[] = "level.add name=before\n"
                              "level.add name='unclosed\n"
                              "level.add name=after\n";
    out = run_script(d, args, bad, 2, &err);
    ck_assert_uint_eq(count_lines(out), 1);
    ck_assert_msg(strstr(err, "tickctl: line 2: a quote is not closed"), "%s", err);
    json_t *levels = tkit_ok(c, "level.list", NULL);
    ck_assert_msg(strstr(tkit_dump(levels), "\"before\"") && !strstr(tkit_dump(levels), "after"),
                  "%s", tkit_dump(levels));
    static const char *const bad_lines[] = {
        "{\"method\": \"world.status\"\n",            /* bad JSON */
        "{\"method\": \"world.status\", \"parms\": 1}\n", /* unknown member */
        "{\"method\": \"\"}\n",                        /* empty method */
        "[]\n",                                          /* empty batch */
        "world.status x\n",                               /* not key=value */
        "world.status {\"a\": \n",                        /* bad JSON params */
    };
    for (size_t i = 0; i < sizeof bad_lines / sizeof bad_lines[0]; i++) {
        out = run_script(d, args, bad_lines[i], 2, &err);
        ck_assert_msg(strstr(err, "tickctl: line 1: "), "%s", err);
    }
    tkit_finish(d);
}
END_TEST

START_TEST(tickctl_script_pipelined)
{
    /* 3,000 lines through a window of 64: every answer, in order (the ids
     * count up), against a daemon that queues at most 64 per client. */
    static const char *const cfg[] = {"control.max_pending=64", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    size_t n = 3000;
    char *script = malloc(n * 64);
    ck_assert_ptr_nonnull(script);
    size_t len = 0;
    for (size_t i = 0; i < n; i++)
        len += (size_t)sprintf(script + len, "%s\n",
                               i % 3 == 0   ? "entity.spawn class=counter"
                               : i % 3 == 1 ? "{\"method\":\"world.status\"}"
                                            : "[{\"method\":\"level.list\"}]");
    static const char *const args[] = {"--compact", "--timeout", "60", "-", NULL};
    const char *out = run_script(d, args, script, 0, NULL);
    free(script);
    ck_assert_uint_eq(count_lines(out), n);
    /* The spawns answered in order: ids 1, 2, 3, ... */
    const char *p = out;
    long long want = 1;
    for (size_t i = 0; i < n; i++, p = strchr(p, '\n') + 1) {
        if (i % 3 != 0)
            continue;
        long long id = -1;
        ck_assert_msg(sscanf(p, "{\"ids\":[%lld]}", &id) == 1 && id == want,
                      "line %zu: %.*s, want id %lld", i, (int)strcspn(p, "\n"), p, want);
        want++;
    }
    tkit_finish(d);
}
END_TEST

START_TEST(tickctl_help_lists_every_method)
{
    /* tickctl's help table (its "did you mean" source) and the methods
     * tickd answers are the same set. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *methods = tkit_get(tkit_ok(c, "engine.info", NULL), "methods");
    static const char *const help[] = {"--help", NULL};
    const char *out = run_ctl(d, help, 0);
    size_t listed = 0;
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "  ", 2) != 0 || l[2] < 'a' || l[2] > 'z')
            continue;
        size_t k = strspn(l + 2, "abcdefghijklmnopqrstuvwxyz_.");
        if (!memchr(l + 2, '.', k) || l[2 + k - 1] == '.' ||
            (l[2 + k] != ' ' && l[2 + k] != '\n'))
            continue;
        char m[64];
        snprintf(m, sizeof m, "%.*s", (int)k, l + 2);
        ck_assert_msg(tkit_has_string(methods, m), "tickctl --help lists %s, tickd does not", m);
        listed++;
    }
    /* Each listed once, and every one of tickd's listed. */
    ck_assert_uint_eq(listed, json_array_size(methods));
    tkit_finish(d);
}
END_TEST

static Suite *tickctl_suite(void)
{
    Suite *s = suite_create("tickctl");
    TCase *tc = tcase_create("tickctl");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tickctl_stats_summary);
    tcase_add_test(tc, tickctl_watch_table);
    tcase_add_test(tc, tickctl_reals_shortest);
    tcase_add_test(tc, tickctl_batch);
    tcase_add_test(tc, tickctl_script);
    tcase_add_test(tc, tickctl_script_pipelined);
    tcase_add_test(tc, tickctl_help_lists_every_method);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(tickctl_suite); }
