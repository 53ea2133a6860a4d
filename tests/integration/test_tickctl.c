/*
 * test_tickctl.c - tickctl's output for people against the real daemon:
 * `tickctl stats` (the one-line summary; --json and --compact for machines)
 * and `tickctl --watch stats` (a table with its header repeated, or JSON
 * lines on a pipe), and reals printed in their shortest form.
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
 * "-s SOCK"), stdout to `out_path`, stderr to out_path".err". */
static pid_t spawn(tkit_daemon *d, const char *const *args, const char *out_path)
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
        dup2(o, 1);
        dup2(e, 2);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    return pid;
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

static Suite *tickctl_suite(void)
{
    Suite *s = suite_create("tickctl");
    TCase *tc = tcase_create("tickctl");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tickctl_stats_summary);
    tcase_add_test(tc, tickctl_watch_table);
    tcase_add_test(tc, tickctl_reals_shortest);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(tickctl_suite); }
