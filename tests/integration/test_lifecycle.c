/*
 * test_lifecycle.c - the daemon as a process: command line (--version,
 * --help, --check-config, --frames, flags over the config file), the config
 * file (shipped file, errors naming file, line and key, refusal to start),
 * the socket file (mode, stale file replaced, a live daemon's socket never
 * stolen, removed on exit), signals (SIGTERM, SIGINT, SIGHUP reload) and
 * engine.shutdown, snapshots across a restart.
 *
 * Each test starts its own daemon(s) in a fresh directory; every wait has a
 * deadline.  Not here: the protocol's framing (test_protocol.c), methods
 * (test_methods.c), many clients (test_clients.c).
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* Run tickd with `args` (no config generated unless asked), wait for its
 * exit and return the exit code; a signal death fails the test. */
static int run_to_exit(tkit_daemon **out, const char *const *args, const char *config_text)
{
    tkit_opts o = {.args = args, .config_text = config_text, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1, "tickd %s did not exit within the deadline", args[0]);
    ck_assert_msg(WIFEXITED(st), "tickd %s died by signal %d; stderr:\n%s", args[0], WTERMSIG(st),
                  tkit_stderr(d));
    *out = d;
    return WEXITSTATUS(st);
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* ---- command line ---------------------------------------------------------------- */

START_TEST(lifecycle_version)
{
    static const char *const args[] = {"--version", NULL};
    tkit_daemon *d;
    ck_assert_int_eq(run_to_exit(&d, args, NULL), 0);
    const char *out = tkit_stdout(d);
    ck_assert_msg(strstr(out, "tickd"), "--version printed: %s", out);
    ck_assert_msg(strpbrk(out, "0123456789"), "--version printed no version: %s", out);
    ck_assert_msg(!file_exists(tkit_sock(d)), "--version created a socket");
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_help)
{
    static const char *const args[] = {"--help", NULL};
    tkit_daemon *d;
    ck_assert_int_eq(run_to_exit(&d, args, NULL), 0);
    const char *out = tkit_stdout(d);
    static const char *const flags[] = {"--config",   "--socket",       "--tick-rate",
                                        "--fixed-dt", "--frames",       "--log-level",
                                        "--version",  "--check-config", NULL};
    for (int i = 0; flags[i]; i++)
        ck_assert_msg(strstr(out, flags[i]), "--help does not mention %s:\n%s", flags[i], out);
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_unknown_flag)
{
    static const char *const args[] = {"--no-such-flag", NULL};
    tkit_daemon *d;
    /* Usage errors exit 2 (as --help documents), with a message. */
    ck_assert_int_eq(run_to_exit(&d, args, NULL), 2);
    ck_assert_msg(strlen(tkit_stderr(d)) > 0, "no message for an unknown flag");
    ck_assert_msg(!file_exists(tkit_sock(d)), "a usage error created a socket");
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_bad_flag_values)
{
    static const char *const a1[] = {"--config", "@CONFIG@", "--tick-rate", "fast", NULL};
    static const char *const a2[] = {"--config", "@CONFIG@", "--fixed-dt", "-1", NULL};
    static const char *const a3[] = {"--config", "@CONFIG@", "--log-level", "loud", NULL};
    static const char *const a4[] = {"--config", "@CONFIG@", "--frames", "many", NULL};
    const char *const *all[] = {a1, a2, a3, a4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        tkit_opts o = {.args = all[i], .no_wait = true};
        tkit_daemon *d = tkit_start(&o);
        int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
        ck_assert_msg(st != -1, "tickd %s %s kept running", all[i][2], all[i][3]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0,
                      "tickd %s %s: want a non-zero exit, status %d", all[i][2], all[i][3], st);
        ck_assert_msg(strstr(tkit_stderr(d), all[i][2]) || strstr(tkit_stderr(d), all[i][3]),
                      "the error does not name %s: %s", all[i][2], tkit_stderr(d));
        tkit_free(d);
    }
}
END_TEST

/* ---- --check-config --------------------------------------------------------------- */

START_TEST(lifecycle_check_config_good)
{
    static const char *const args[] = {"--check-config", "--config", "@CONFIG@", NULL};
    tkit_daemon *d;
    tkit_opts o = {.args = args, .no_wait = true};
    d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "--check-config of a good file: status %d, stderr:\n%s", st, tkit_stderr(d));
    ck_assert_msg(!file_exists(tkit_sock(d)), "--check-config created the socket");
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_check_config_shipped)
{
    /* The shipped config/tickd.ini (tests run from the repository root). */
    char *shipped = realpath("config/tickd.ini", NULL);
    ck_assert_msg(shipped != NULL, "config/tickd.ini not found from %s", getcwd(NULL, 0));
    const char *const args[] = {"--check-config", "--config", shipped, NULL};
    tkit_daemon *d;
    int code = run_to_exit(&d, args, NULL);
    ck_assert_msg(code == 0, "--check-config config/tickd.ini: exit %d, stderr:\n%s", code,
                  tkit_stderr(d));
    free(shipped);
    tkit_free(d);
}
END_TEST

/* A bad file: exit 1, and stderr names "<file>:<line>:" and "[section] key". */
static void check_bad_config(const char *text, int line, const char *section_key)
{
    static const char *const args[] = {"--check-config", "--config", "@CONFIG@", NULL};
    tkit_daemon *d;
    int code = run_to_exit(&d, args, text);
    const char *err = tkit_stderr(d);
    ck_assert_msg(code == 1, "--check-config of a bad file: exit %d, want 1; stderr:\n%s", code,
                  err);
    char where[600];
    snprintf(where, sizeof where, "%s:%d:", tkit_config_path(d), line);
    ck_assert_msg(strstr(err, where), "stderr does not name '%s':\n%s", where, err);
    ck_assert_msg(strstr(err, section_key), "stderr does not name '%s':\n%s", section_key, err);
    tkit_free(d);
}

START_TEST(lifecycle_check_config_unknown_key)
{
    check_bad_config("[engine]\ntick_rate = 60\nbogus_key = 1\n", 3, "[engine] bogus_key");
}
END_TEST

START_TEST(lifecycle_check_config_unknown_section)
{
    check_bad_config("; comment\n[nosuch]\nkey = 1\n", 2, "[nosuch]: unknown section");
}
END_TEST

START_TEST(lifecycle_check_config_out_of_range)
{
    check_bad_config("[engine]\ntick_rate = 20000\n", 2, "[engine] tick_rate");
    check_bad_config("[control]\nmax_clients = 0\n", 2, "[control] max_clients");
    check_bad_config("[world]\ntime_dilation = 50\n", 2, "[world] time_dilation");
    check_bad_config("[control]\nmax_line = 10\n", 2, "[control] max_line");
}
END_TEST

START_TEST(lifecycle_check_config_malformed_value)
{
    check_bad_config("[engine]\nfixed_dt = soon\n", 2, "[engine] fixed_dt");
    check_bad_config("[log]\nlevel = loud\n", 2, "[log] level");
    check_bad_config("[snapshot]\nsave_on_exit = perhaps\n", 2, "[snapshot] save_on_exit");
    check_bad_config("[control]\nsocket_mode = 0666\n", 2, "[control] socket_mode");
}
END_TEST

START_TEST(lifecycle_check_config_missing_file)
{
    static const char *const args[] = {"--check-config", "--config", "@DIR@/absent.ini", NULL};
    tkit_daemon *d;
    int code = run_to_exit(&d, args, NULL);
    ck_assert_msg(code == 1, "--check-config of a missing file: exit %d", code);
    ck_assert_msg(strstr(tkit_stderr(d), "absent.ini"), "stderr does not name the file: %s",
                  tkit_stderr(d));
    tkit_free(d);
}
END_TEST

/* A plugin that does not load is blamed on where the list came from: the
 * --set flag that gave it, or the file. */
START_TEST(lifecycle_check_config_plugin_origin)
{
    static const char *const flag[] = {"--check-config", "--config", "@CONFIG@", "--set",
                                       "plugins.load=@DIR@/absent.so", NULL};
    tkit_daemon *d;
    int code = run_to_exit(&d, flag, NULL);
    const char *err = tkit_stderr(d);
    ck_assert_msg(code == 1, "exit %d, stderr:\n%s", code, err);
    ck_assert_msg(strstr(err, "tickd: --set: [plugins] load: ") && strstr(err, "absent.so"),
                  "the flag is not blamed:\n%s", err);
    ck_assert_msg(!strstr(err, tkit_config_path(d)), "the file is blamed for a flag:\n%s", err);
    tkit_free(d);

    static const char *const file[] = {"--check-config", "--config", "@CONFIG@", NULL};
    code = run_to_exit(&d, file, "[plugins]\nload = ./absent.so\n");
    err = tkit_stderr(d);
    ck_assert_msg(code == 1, "exit %d, stderr:\n%s", code, err);
    char where[600];
    snprintf(where, sizeof where, "tickd: %s: [plugins] load: ", tkit_config_path(d));
    ck_assert_msg(strstr(err, where), "the file is not blamed:\n%s", err);
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_bad_config_refuses_start)
{
    /* Without --check-config: the same error, exit 1, no socket. */
    static const char *const cfg[] = {"engine.max_dt=-3", NULL};
    tkit_opts o = {.config = cfg, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1, "tickd started on a bad config");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d, stderr:\n%s", st,
                  tkit_stderr(d));
    char where[600];
    snprintf(where, sizeof where, "%s:", tkit_config_path(d));
    ck_assert_msg(strstr(tkit_stderr(d), where) && strstr(tkit_stderr(d), "max_dt"),
                  "stderr does not name file and key:\n%s", tkit_stderr(d));
    ck_assert_msg(!file_exists(tkit_sock(d)), "a refused start left a socket file");
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_missing_plugin_refuses_start)
{
    static const char *const cfg[] = {"plugins.load=@DIR@/no-such-plugin.so", NULL};
    tkit_opts o = {.config = cfg, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1, "tickd started without its plugin");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
    ck_assert_msg(strstr(tkit_stderr(d), "no-such-plugin.so"),
                  "stderr does not name the plugin:\n%s", tkit_stderr(d));
    tkit_free(d);
}
END_TEST

/* ---- the config file and flags ------------------------------------------------------- */

START_TEST(lifecycle_default_config_file)
{
    /* Without --config, tickd reads config/tickd.ini of its working
     * directory: here a copy of the shipped file (socket run/tickd.sock). */
    const char *shipped = tkit_slurp("config/tickd.ini");
    ck_assert_msg(shipped != NULL, "cannot read config/tickd.ini");
    /* Without its metrics port, which another test run may hold. */
    char *copy = strdup(shipped), *at = strstr(copy, "\nlisten = 127.0.0.1:8497\n");
    ck_assert_msg(at != NULL, "config/tickd.ini: no metrics listen line");
    memset(at + strlen("\nlisten = "), ' ', strlen("127.0.0.1:8497")); /* "listen =" */
    const char *const files[] = {"config/tickd.ini", copy, "run/.keep", "", NULL};
    static const char *const args[] = {NULL};
    tkit_opts o = {.args = args, .files = files, .sock = "run/tickd.sock"};
    tkit_daemon *d = tkit_start(&o);
    free(copy);
    tkit_conn *c = tkit_connect(d);
    json_t *st = tkit_ok(c, "engine.stats", NULL);
    ck_assert_double_eq_tol(tkit_getd(st, "target_hz"), 60.0, 1e-9);
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_flags_override_config)
{
    static const char *const cfg[] = {"engine.tick_rate=30", NULL};
    static const char *const args[] = {"--config", "@CONFIG@", "--tick-rate", "50", NULL};
    tkit_opts o = {.config = cfg, .args = args};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz"), 50.0, 1e-9);
    /* A reload that changes the file's tick_rate keeps the flag's value,
     * and applies the other reloadable change. */
    tkit_write_file(d, "tickd.ini",
                    "[engine]\ntick_rate = 40\nfixed_dt = 0.01\n[control]\nsocket = @SOCK@\n"
                    "max_batch = 77\n[snapshot]\npath = @DIR@/snapshot.json\n");
    tkit_signal(d, SIGHUP);
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    while (!strstr(tkit_stderr(d), "max_batch")) {
        ck_assert_msg(tkit_now() < deadline, "SIGHUP: no log line about max_batch:\n%s",
                      tkit_stderr(d));
        tkit_wait_frames(c, 1);
    }
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz"), 50.0, 1e-9);
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_sighup_reload)
{
    static const char *const cfg[] = {"engine.tick_rate=0", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz"), 0.0, 1e-9);
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "engine.info", NULL), "pacing"), "steady");
    tkit_ok(c, "world.pause", NULL);
    /* tick_rate and pacing are reloadable; fixed_dt needs a restart (kept). */
    tkit_write_file(d, "tickd.ini",
                    "[engine]\ntick_rate = 500\nfixed_dt = 0.02\npacing = unreal\n"
                    "[control]\nsocket = @SOCK@\n[snapshot]\npath = @DIR@/snapshot.json\n");
    tkit_signal(d, SIGHUP);
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    for (;;) {
        double hz = tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz");
        if (hz == 500.0)
            break;
        ck_assert_msg(tkit_now() < deadline, "SIGHUP did not apply tick_rate (still %g)", hz);
    }
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "engine.info", NULL), "pacing"), "unreal");
    const char *err = tkit_stderr(d);
    ck_assert_msg(strstr(err, "tick_rate"), "the reload did not log tick_rate:\n%s", err);
    ck_assert_msg(strstr(err, "[engine] pacing = unreal (was steady)"),
                  "the reload did not log pacing:\n%s", err);
    ck_assert_msg(strstr(err, "fixed_dt"), "the reload did not log fixed_dt:\n%s", err);
    /* fixed_dt kept its running value: one step advances 0.01 s. */
    double t0 = tkit_getd(tkit_ok(c, "world.status", NULL), "world_time");
    tkit_ok(c, "world.step", "{\"frames\":1}");
    double t1 = tkit_getd(tkit_ok(c, "world.status", NULL), "world_time");
    ck_assert_double_eq_tol(t1 - t0, 0.01, 1e-9);
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_sighup_bad_config_changes_nothing)
{
    static const char *const cfg[] = {"engine.tick_rate=250", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_write_file(d, "tickd.ini",
                    "[engine]\ntick_rate = 100\n[control]\nsocket = @SOCK@\nmystery = 1\n");
    tkit_signal(d, SIGHUP);
    char where[600];
    snprintf(where, sizeof where, "%s:5:", tkit_config_path(d));
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    while (!strstr(tkit_stderr(d), where)) {
        ck_assert_msg(tkit_now() < deadline, "a bad reload did not log '%s':\n%s", where,
                      tkit_stderr(d));
        tkit_wait_frames(c, 1);
    }
    ck_assert_msg(strstr(tkit_stderr(d), "mystery"), "the error does not name the key:\n%s",
                  tkit_stderr(d));
    /* Still running, on the old values. */
    ck_assert_double_eq_tol(tkit_getd(tkit_ok(c, "engine.stats", NULL), "target_hz"), 250.0, 1e-9);
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_config_levels)
{
    static const char *const cfg[] = {"world.levels=persistent, arena,lobby", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    json_t *levels = tkit_get(tkit_ok(c, "level.list", NULL), "levels");
    bool seen[3] = {false, false, false};
    size_t i;
    json_t *l;
    json_array_foreach(levels, i, l)
    {
        const char *n = tkit_gets(l, "name");
        seen[0] |= strcmp(n, "persistent") == 0;
        seen[1] |= strcmp(n, "arena") == 0;
        seen[2] |= strcmp(n, "lobby") == 0;
    }
    ck_assert_msg(seen[0] && seen[1] && seen[2], "levels: %s", tkit_dump(levels));
    ck_assert_int_eq(json_array_size(levels), 3);
    tkit_finish(d);
}
END_TEST

/* ---- --frames ----------------------------------------------------------------------- */

START_TEST(lifecycle_frames)
{
    /* 100 frames at 100 Hz: about a second; then a graceful exit.  A
     * subscriber sees frame events up to the last frame, then the close. */
    static const char *const cfg[] = {"engine.tick_rate=100", NULL};
    static const char *const args[] = {"--config", "@CONFIG@", "--frames", "100", NULL};
    tkit_opts o = {.config = cfg, .args = args};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "events.subscribe", "{\"topics\":[\"frame\"]}");
    ck_assert_msg(tkit_wait_eof(c, TKIT_DEADLINE_S), "--frames 100: no close within deadline");
    long long last = -1;
    size_t events = 0;
    while (tkit_stashed(c) > 0) {
        json_t *m = tkit_recv(c);
        json_t *method = json_object_get(m, "method");
        if (!json_is_string(method))
            continue;
        ck_assert_str_eq(json_string_value(method), "event.frame");
        long long f = tkit_geti(m, "params.frame");
        ck_assert_msg(f > last, "frame events out of order: %lld after %lld", f, last);
        last = f;
        events++;
    }
    ck_assert_msg(events > 0, "no frame event before the end");
    ck_assert_msg(last >= 98 && last <= 100, "last frame event %lld, want the 100th frame", last);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "--frames: status %d, stderr:\n%s", st, tkit_stderr(d));
    ck_assert_msg(!file_exists(tkit_sock(d)), "--frames left the socket file");
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_frames_fast)
{
    static const char *const args[] = {"--config", "@CONFIG@", "--frames", "5000", NULL};
    tkit_opts o = {.args = args, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1, "--frames 5000 at an unlimited rate did not end");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d, stderr:\n%s", st,
                  tkit_stderr(d));
    ck_assert_msg(!file_exists(tkit_sock(d)), "--frames left the socket file");
    tkit_free(d);
}
END_TEST

/* ---- signals and shutdown ----------------------------------------------------------------- */

static void stop_with(int sig)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":100}");
    struct stat sb;
    ck_assert_int_eq(lstat(tkit_sock(d), &sb), 0);
    int st = tkit_stop(d, sig);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "signal %d: status %d, stderr:\n%s", sig,
                  st, tkit_stderr(d));
    ck_assert_msg(!file_exists(tkit_sock(d)), "signal %d left the socket file", sig);
    ck_assert_msg(tkit_wait_eof(c, TKIT_DEADLINE_S), "the client was not closed");
    tkit_free(d);
}

START_TEST(lifecycle_sigterm) { stop_with(SIGTERM); }
END_TEST

START_TEST(lifecycle_sigint) { stop_with(SIGINT); }
END_TEST

START_TEST(lifecycle_engine_shutdown)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_conn *other = tkit_connect(d);
    tkit_ok(other, "engine.info", NULL);
    json_t *r = tkit_ok(c, "engine.shutdown", NULL);
    ck_assert_msg(json_is_object(r) && json_object_size(r) == 0, "engine.shutdown -> %s",
                  tkit_dump(r));
    ck_assert_msg(tkit_wait_eof(c, TKIT_DEADLINE_S), "the caller was not closed");
    ck_assert_msg(tkit_wait_eof(other, TKIT_DEADLINE_S), "another client was not closed");
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "engine.shutdown: status %d, stderr:\n%s", st, tkit_stderr(d));
    ck_assert_msg(!file_exists(tkit_sock(d)), "engine.shutdown left the socket file");
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_shutdown_answers_pipelined)
{
    /* engine.shutdown followed by more requests in the same write: each
     * gets an answer (a result, or -32004 shutting down) before the close. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    char buf[8192];
    size_t n = (size_t)snprintf(buf, sizeof buf,
                                "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"engine.shutdown\"}\n");
    for (int i = 1; i <= 20; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n,
                              "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"world.status\"}\n", i);
    tkit_send_raw(c, buf, n);
    ck_assert_msg(tkit_wait_eof(c, TKIT_DEADLINE_S), "no close after engine.shutdown");
    int answered = 0;
    bool shutdown_ok = false;
    while (tkit_stashed(c) > 0) {
        json_t *m = tkit_recv(c);
        long long id = tkit_geti(m, "id");
        if (id == 0) {
            tkit_assert_result(m);
            shutdown_ok = true;
        } else if (json_object_get(m, "error")) {
            tkit_assert_error(m, TKIT_SHUTTING_DOWN, NULL);
        } else {
            tkit_assert_result(m);
        }
        answered++;
    }
    ck_assert_msg(shutdown_ok, "engine.shutdown got no result");
    ck_assert_int_eq(answered, 21);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_shutdown_answers_pending_step)
{
    /* A world.step that cannot finish before the shutdown is answered
     * -32004 (shutting down) rather than dropped. */
    static const char *const cfg[] = {"engine.tick_rate=100", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    long long id = tkit_send_request(c, "world.step", "{\"frames\":1000000}");
    tkit_ok(c, "engine.info", NULL); /* the step is queued */
    tkit_signal(d, SIGTERM);
    json_t *r = tkit_recv_id(c, id);
    tkit_assert_error(r, TKIT_SHUTTING_DOWN, NULL);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    tkit_free(d);
}
END_TEST

/* ---- the socket file -------------------------------------------------------------------- */

static unsigned sock_mode(const char *path)
{
    struct stat sb;
    ck_assert_msg(lstat(path, &sb) == 0, "no socket file at %s", path);
    ck_assert_msg(S_ISSOCK(sb.st_mode), "%s is not a socket", path);
    return (unsigned)(sb.st_mode & 0777);
}

START_TEST(lifecycle_socket_mode_default)
{
    tkit_daemon *d = tkit_start(NULL);
    ck_assert_uint_eq(sock_mode(tkit_sock(d)), 0660);
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_socket_mode_config)
{
    static const char *const cfg[] = {"control.socket_mode=0600", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    ck_assert_uint_eq(sock_mode(tkit_sock(d)), 0600);
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_socket_mode_world_writable_refused)
{
    static const char *const cfg[] = {"control.socket_mode=0666", NULL};
    tkit_opts o = {.config = cfg, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 1, "socket_mode 0666: status %d",
                  st);
    ck_assert_msg(strstr(tkit_stderr(d), "socket_mode"), "stderr:\n%s", tkit_stderr(d));
    ck_assert_msg(!file_exists(tkit_sock(d)), "a world-writable socket was created");
    tkit_free(d);
}
END_TEST

START_TEST(lifecycle_socket_flag)
{
    static const char *const args[] = {"--config", "@CONFIG@", "--socket", "@DIR@/other.sock",
                                       NULL};
    tkit_opts o = {.args = args};
    tkit_daemon *d = tkit_start(&o);
    ck_assert_msg(strstr(tkit_sock(d), "other.sock"), "harness socket %s", tkit_sock(d));
    ck_assert_msg(!file_exists(tkit_path(d, "tickd.sock")), "the config's socket was bound too");
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_second_daemon_refused)
{
    tkit_daemon *a = tkit_start(NULL);
    tkit_conn *ca = tkit_connect(a);
    tkit_ok(ca, "entity.spawn", "{\"class\":\"counter\"}");
    char edit[700];
    snprintf(edit, sizeof edit, "control.socket=%s", tkit_sock(a));
    const char *const cfg[] = {edit, NULL};
    tkit_opts o = {.config = cfg, .no_wait = true};
    tkit_daemon *b = tkit_start(&o);
    int st = tkit_wait_exit(b, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1, "a second daemon kept running on a live socket");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0, "second daemon: status %d", st);
    ck_assert_msg(strstr(tkit_stderr(b), tkit_sock(a)),
                  "the second daemon's error does not name the socket:\n%s", tkit_stderr(b));
    /* The first one still owns its socket and answers on it. */
    tkit_conn *again = tkit_connect(a);
    json_t *st_a = tkit_ok(again, "world.status", NULL);
    ck_assert_int_eq(tkit_geti(st_a, "entities"), 1);
    tkit_ok(ca, "engine.info", NULL);
    tkit_free(b);
    tkit_finish(a);
}
END_TEST

START_TEST(lifecycle_stale_socket_replaced)
{
    /* A socket file nobody listens on (a dead daemon's) is replaced. */
    const char *dir = tkit_tmpdir();
    char path[600];
    snprintf(path, sizeof path, "%s/stale.sock", dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    ck_assert_uint_lt(strlen(path), sizeof sa.sun_path);
    memcpy(sa.sun_path, path, strlen(path) + 1);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    close(fd);
    ck_assert(file_exists(path));
    char edit[700];
    snprintf(edit, sizeof edit, "control.socket=%s", path);
    const char *const cfg[] = {edit, NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "engine.info", NULL), "name"), "tickd");
    tkit_finish(d);
}
END_TEST

START_TEST(lifecycle_socket_path_not_a_socket)
{
    /* A regular file where the socket should go is never deleted. */
    static const char *const files[] = {"taken.sock", "precious data\n", NULL};
    static const char *const cfg[] = {"control.socket=@DIR@/taken.sock", NULL};
    tkit_opts o = {.config = cfg, .files = files, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1, "tickd replaced a regular file with its socket");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) != 0, "status %d", st);
    const char *text = tkit_slurp(tkit_path(d, "taken.sock"));
    ck_assert_msg(text && strcmp(text, "precious data\n") == 0, "the file was changed");
    tkit_free(d);
}
END_TEST

/* ---- snapshots across a restart ---------------------------------------------------------- */

START_TEST(lifecycle_snapshot_save_on_exit_load_on_start)
{
    const char *dir = tkit_tmpdir();
    char snap[700];
    snprintf(snap, sizeof snap, "snapshot.path=%s/world.json", dir);
    const char *const cfg1[] = {snap, "snapshot.save_on_exit=true", "world.levels=persistent,arena",
                                NULL};
    tkit_opts o1 = {.config = cfg1};
    tkit_daemon *a = tkit_start(&o1);
    tkit_conn *c = tkit_connect(a);
    json_t *ids = tkit_get(tkit_ok(c, "entity.spawn",
                                   "{\"class\":\"mover\",\"count\":3,\"level\":\"arena\","
                                   "\"props\":{\"vx\":2.5},\"tick\":{\"group\":\"post_physics\"}}"),
                           "ids");
    long long first = tkit_geti(ids, "[0]");
    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld]}", first);
    tkit_finish(a);

    const char *const cfg2[] = {snap, "snapshot.load_on_start=true",
                                "world.levels=persistent,arena", NULL};
    tkit_opts o2 = {.config = cfg2};
    tkit_daemon *b = tkit_start(&o2);
    c = tkit_connect(b);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 2);
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", first + 1);
    ck_assert_str_eq(tkit_gets(e, "class"), "mover");
    ck_assert_str_eq(tkit_gets(e, "level"), "arena");
    ck_assert_double_eq_tol(tkit_getd(e, "props.vx"), 2.5, 1e-12);
    ck_assert_str_eq(tkit_gets(e, "tick.group"), "post_physics");
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":%lld}", first);
    /* Ids are never reused, across the restart too. */
    long long next = tkit_geti(tkit_ok(c, "entity.spawn", "{\"class\":\"counter\"}"), "ids[0]");
    ck_assert_int_gt(next, first + 2);
    tkit_finish(b);
}
END_TEST

static Suite *lifecycle_suite(void)
{
    Suite *s = suite_create("lifecycle");
    TCase *tc = tcase_create("lifecycle");
    tcase_set_timeout(tc, tkit_scale(60));
    tcase_add_test(tc, lifecycle_version);
    tcase_add_test(tc, lifecycle_help);
    tcase_add_test(tc, lifecycle_unknown_flag);
    tcase_add_test(tc, lifecycle_bad_flag_values);
    tcase_add_test(tc, lifecycle_check_config_good);
    tcase_add_test(tc, lifecycle_check_config_shipped);
    tcase_add_test(tc, lifecycle_check_config_unknown_key);
    tcase_add_test(tc, lifecycle_check_config_unknown_section);
    tcase_add_test(tc, lifecycle_check_config_out_of_range);
    tcase_add_test(tc, lifecycle_check_config_malformed_value);
    tcase_add_test(tc, lifecycle_check_config_missing_file);
    tcase_add_test(tc, lifecycle_check_config_plugin_origin);
    tcase_add_test(tc, lifecycle_bad_config_refuses_start);
    tcase_add_test(tc, lifecycle_missing_plugin_refuses_start);
    tcase_add_test(tc, lifecycle_default_config_file);
    tcase_add_test(tc, lifecycle_flags_override_config);
    tcase_add_test(tc, lifecycle_sighup_reload);
    tcase_add_test(tc, lifecycle_sighup_bad_config_changes_nothing);
    tcase_add_test(tc, lifecycle_config_levels);
    tcase_add_test(tc, lifecycle_frames);
    tcase_add_test(tc, lifecycle_frames_fast);
    tcase_add_test(tc, lifecycle_sigterm);
    tcase_add_test(tc, lifecycle_sigint);
    tcase_add_test(tc, lifecycle_engine_shutdown);
    tcase_add_test(tc, lifecycle_shutdown_answers_pipelined);
    tcase_add_test(tc, lifecycle_shutdown_answers_pending_step);
    tcase_add_test(tc, lifecycle_socket_mode_default);
    tcase_add_test(tc, lifecycle_socket_mode_config);
    tcase_add_test(tc, lifecycle_socket_mode_world_writable_refused);
    tcase_add_test(tc, lifecycle_socket_flag);
    tcase_add_test(tc, lifecycle_second_daemon_refused);
    tcase_add_test(tc, lifecycle_stale_socket_replaced);
    tcase_add_test(tc, lifecycle_socket_path_not_a_socket);
    tcase_add_test(tc, lifecycle_snapshot_save_on_exit_load_on_start);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(lifecycle_suite); }
