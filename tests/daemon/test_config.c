/*
 * test_config.c - suite "config": the config table, the ini reader, every
 * error kind with its file/line/key message, command-line overrides, SIGHUP
 * reload, and the dumps.
 *
 * Every test that needs a file writes it into a fresh temp directory (the
 * fixture), so messages name a known path.  The shipped config/tickd.ini is
 * read relative to the repository root, where `make check` runs the tests.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/daemon/config.h"
#include "tickd/error.h"
#include "../check_main.h"

#define SHIPPED "config/tickd.ini"

static char g_dir[128];         /* temp dir of the current test               */
static char g_files[16][192];   /* files written into it                      */
static int g_nfiles;

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/tkd_config_XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
    g_nfiles = 0;
}

static void teardown(void)
{
    for (int i = 0; i < g_nfiles; i++)
        unlink(g_files[i]);
    rmdir(g_dir);
}

/* Write `text` to <dir>/<name>; returns the path (valid for the test). */
static const char *write_file(const char *name, const char *text)
{
    char *path = NULL;
    for (int i = 0; i < g_nfiles; i++) {
        const char *base = strrchr(g_files[i], '/') + 1;
        if (strcmp(base, name) == 0)
            path = g_files[i];
    }
    if (!path) {
        ck_assert_int_lt(g_nfiles, 16);
        path = g_files[g_nfiles++];
        snprintf(path, sizeof g_files[0], "%s/%s", g_dir, name);
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* Load `text` as a file into a default config; returns rc, message in err. */
static int load_text(tkd_config *c, const char *text, char *err, size_t errlen)
{
    const char *p = write_file("t.ini", text);
    return tkd_config_load(c, p, err, errlen);
}

/* Expect `text` to fail with exactly "<path>:<rest>". */
static void expect_error(const char *text, const char *rest)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512], want[512];
    int rc = load_text(&c, text, err, sizeof err);
    ck_assert_int_eq(rc, TK_EINVAL);
    snprintf(want, sizeof want, "%s/t.ini:%s", g_dir, rest);
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(c.path);
    tkd_config_free(&c);
}

static void text_of(const tkd_config *c, const char *section, const char *name,
                    char *buf, size_t len)
{
    const tkd_config_key *k = tkd_config_find(section, name);
    ck_assert_ptr_nonnull(k);
    tkd_config_format(c, k, buf, len);
}

/* Every key has the same canonical text in both configs. */
static void assert_same(const tkd_config *a, const tkd_config *b)
{
    size_t n;
    const tkd_config_key *keys = tkd_config_keys(&n);
    for (size_t i = 0; i < n; i++) {
        char x[512], y[512];
        tkd_config_format(a, &keys[i], x, sizeof x);
        tkd_config_format(b, &keys[i], y, sizeof y);
        ck_assert_msg(strcmp(x, y) == 0, "[%s] %s: '%s' != '%s'",
                      keys[i].section, keys[i].name, x, y);
    }
}

/* ---- defaults and the table ------------------------------------------- */

START_TEST(config_defaults)
{
    tkd_config c;
    tkd_config_init(&c);
    ck_assert_double_eq(c.tick_rate, 60);
    ck_assert_double_eq(c.fixed_dt, 0);
    ck_assert_double_eq(c.max_dt, 0.4);
    ck_assert_int_eq(c.pacing, TK_PACING_STEADY);
    ck_assert_uint_eq(c.levels.count, 1);
    ck_assert_str_eq(c.levels.items[0], "persistent");
    ck_assert_double_eq(c.time_dilation, 1.0);
    ck_assert_uint_eq(c.max_entities, 10000000);
    ck_assert_str_eq(c.socket, "run/tickd.sock");
    ck_assert_uint_eq(c.socket_mode, 0660);
    ck_assert_uint_eq(c.max_clients, 256);
    ck_assert_uint_eq(c.max_line, 1048576);
    ck_assert_uint_eq(c.max_pending, 16384);
    ck_assert_uint_eq(c.max_batch, 10000);
    ck_assert_uint_eq(c.max_output, 16777216);
    ck_assert_double_eq(c.slow_tick_ms, 5);
    ck_assert_str_eq(c.snapshot_path, "run/tickd.snapshot.json");
    ck_assert(!c.snapshot_dir || !c.snapshot_dir[0]);
    ck_assert(!c.save_on_exit);
    ck_assert(!c.load_on_start);
    ck_assert_double_eq(c.autosave_s, 0);
    ck_assert(!c.journal_path || !c.journal_path[0]);
    ck_assert_int_eq(c.journal_fsync, TKD_FSYNC_EVERYSEC);
    ck_assert_uint_eq(c.journal_hash_every, 600);
    ck_assert_uint_eq(c.journal_rewrite_bytes, (size_t)64 << 20);
    ck_assert_uint_eq(c.plugins.count, 0);
    ck_assert_int_eq(c.log_level, TK_LOG_INFO);
    ck_assert_ptr_null(c.path);
    ck_assert_uint_eq(c.n_overrides, 0);
    tkd_config_free(&c);
    tkd_config_free(&c); /* a second free is a no-op */
}
END_TEST

/* [instance] name: empty (none) or a world name as tickctl --world finds
 * it; anything else names the key and the reason. */
START_TEST(config_instance_name)
{
    tkd_config c;
    tkd_config_init(&c);
    ck_assert(!c.instance_name || !c.instance_name[0]);
    char err[256];
    static const char *const good[] = {"alpha", "World-2", "a.b_c", "0", NULL};
    for (size_t i = 0; good[i]; i++) {
        ck_assert_int_eq(tkd_config_set(&c, "instance", "name", good[i], "t", err, sizeof err), 0);
        ck_assert_str_eq(c.instance_name, good[i]);
    }
    static const struct {
        const char *v, *why;
    } bad[] = {{"-x", "must start with a letter or a digit"},
               {".hidden", "must start with a letter or a digit"},
               {"a/b", "contains '/'"},
               {"a b", "contains byte 0x20"},
               {"x\\y", "contains '\\'"},
               {"01234567890123456789012345678901234567890123456789012345678901234",
                "longer than 64"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(tkd_config_set(&c, "instance", "name", bad[i].v, "t", err, sizeof err),
                         TK_EINVAL);
        ck_assert_msg(strstr(err, "[instance] name") && strstr(err, bad[i].why), "%s: %s",
                      bad[i].v, err);
        ck_assert_str_eq(c.instance_name, "0"); /* unchanged */
    }
    ck_assert_int_eq(tkd_config_set(&c, "instance", "name", "", "t", err, sizeof err), 0);
    ck_assert_str_eq(c.instance_name, "");
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_table)
{
    size_t n;
    const tkd_config_key *keys = tkd_config_keys(&n);
    ck_assert_uint_eq(n, 51);
    static const char *const reloadable[] = {
        "engine.tick_rate",    "engine.max_dt",       "engine.pacing",       "engine.threads",
        "engine.split_min_us",       "world.time_dilation",
        "world.max_entities",  "world.max_memory",  "control.max_clients", "control.max_line",
        "control.max_pending", "control.max_batch",   "control.max_output",
        "control.max_input",   "control.request_budget_ms", "control.idle_timeout_s",
        "control.line_timeout_s", "stats.slow_request_ms", "stats.lag_warn_ms",
        "stats.slow_tick_ms",  "snapshot.autosave_s", "log.level",
        "metrics.healthz_min_tps", "metrics.healthz_stall_s", "metrics.max_connections",
        "world.max_tick_functions", "world.max_template_bytes", "agones.health_period_s",
        "agones.metadata_s", "agones.timeout_s", "agones.retry_max_s", "journal.fsync",
        "journal.hash_every", "journal.rewrite_mb"};
    for (size_t i = 0; i < n; i++) {
        const tkd_config_key *k = &keys[i];
        char full[64];
        snprintf(full, sizeof full, "%s.%s", k->section, k->name);
        bool want = false;
        for (size_t j = 0; j < sizeof reloadable / sizeof *reloadable; j++)
            want |= strcmp(full, reloadable[j]) == 0;
        ck_assert_msg(k->reloadable == want, "%s reloadable", full);
        ck_assert_ptr_eq(tkd_config_find(k->section, k->name), k);
        ck_assert_msg(k->min <= k->max, "%s range", full);
        ck_assert_msg(k->help && strlen(k->help) > 10, "%s help", full);
        ck_assert_str_ne(tkd_config_type_name(k->type), "unknown");
        /* The default reads back to itself through a set. */
        tkd_config c;
        tkd_config_init(&c);
        char before[256], after[256], err[256];
        tkd_config_format(&c, k, before, sizeof before);
        ck_assert_int_eq(tkd_config_set(&c, k->section, k->name, k->def, "t",
                                        err, sizeof err),
                         0);
        tkd_config_format(&c, k, after, sizeof after);
        ck_assert_str_eq(before, after);
        tkd_config_free(&c);
    }
    ck_assert_ptr_null(tkd_config_find("engine", "nope"));
    ck_assert_ptr_null(tkd_config_find("nope", "tick_rate"));
    ck_assert_ptr_null(tkd_config_find(NULL, "tick_rate"));
}
END_TEST

/* ---- the shipped file ------------------------------------------------- */

START_TEST(config_shipped_file_is_defaults)
{
    tkd_config def, c;
    tkd_config_init(&def);
    tkd_config_init(&c);
    char err[512] = "";
    int rc = tkd_config_load(&c, SHIPPED, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_str_eq(c.path, SHIPPED);
    /* The one exception: the shipped file turns the metrics listener on. */
    ck_assert_uint_eq(c.metrics_listen.count, 1);
    ck_assert_str_eq(c.metrics_listen.items[0], "127.0.0.1:8497");
    ck_assert_int_eq(tkd_config_set(&c, "metrics", "listen", "", NULL, err, sizeof err), 0);
    assert_same(&def, &c);
    tkd_config_free(&def);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_shipped_file_lists_every_key)
{
    FILE *f = fopen(SHIPPED, "r");
    ck_assert_ptr_nonnull(f);
    size_t n;
    const tkd_config_key *keys = tkd_config_keys(&n);
    int found[64] = {0};
    ck_assert_uint_le(n, 64);
    char line[512], section[512] = "";
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '[') {
            char *end = strchr(line, ']');
            ck_assert_ptr_nonnull(end);
            *end = '\0';
            snprintf(section, sizeof section, "%s", line + 1);
            continue;
        }
        for (size_t i = 0; i < n; i++) {
            size_t kl = strlen(keys[i].name);
            if (strcmp(section, keys[i].section) == 0 &&
                strncmp(line, keys[i].name, kl) == 0 &&
                strncmp(line + kl, " =", 2) == 0)
                found[i]++;
        }
    }
    fclose(f);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(found[i] == 1, "[%s] %s appears %d times in %s",
                      keys[i].section, keys[i].name, found[i], SHIPPED);
}
END_TEST

/* ---- every type ------------------------------------------------------- */

START_TEST(config_types_parse)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    int rc = load_text(&c,
                       "[engine]\n"
                       "tick_rate = 1.5e2\n"
                       "fixed_dt: 0.0166   ; colon form, inline comment\n"
                       "max_dt = 1\n"
                       "[world]\n"
                       "levels =  a , b c,d  \n"
                       "time_dilation = 0.0001\n"
                       "max_entities = 100000000\n"
                       "[control]\n"
                       "socket = /tmp/x;y.sock\n"
                       "socket_mode = 640\n"
                       "max_clients = 1\n"
                       "max_line = 64k\n"
                       "max_pending = 7\n"
                       "max_batch = 1000000\n"
                       "max_output = 1GiB\n"
                       "[stats]\n"
                       "slow_tick_ms = 0\n"
                       "[snapshot]\n"
                       "path = snap.json\n"
                       "save_on_exit = YES\n"
                       "load_on_start = on\n"
                       "autosave_s = 86400\n"
                       "[plugins]\n"
                       "load = ./a.so, /usr/lib/b.so\n"
                       "[log]\n"
                       "level = warning\n",
                       err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_double_eq(c.tick_rate, 150);
    ck_assert_double_eq(c.fixed_dt, 0.0166);
    ck_assert_double_eq(c.max_dt, 1);
    ck_assert_uint_eq(c.levels.count, 3);
    ck_assert_str_eq(c.levels.items[0], "a");
    ck_assert_str_eq(c.levels.items[1], "b c");
    ck_assert_str_eq(c.levels.items[2], "d");
    ck_assert_double_eq(c.time_dilation, 0.0001);
    ck_assert_uint_eq(c.max_entities, 100000000);
    ck_assert_str_eq(c.socket, "/tmp/x;y.sock");
    ck_assert_uint_eq(c.socket_mode, 0640);
    ck_assert_uint_eq(c.max_clients, 1);
    ck_assert_uint_eq(c.max_line, 65536);
    ck_assert_uint_eq(c.max_pending, 7);
    ck_assert_uint_eq(c.max_batch, 1000000);
    ck_assert_uint_eq(c.max_output, 1073741824);
    ck_assert_double_eq(c.slow_tick_ms, 0);
    ck_assert_str_eq(c.snapshot_path, "snap.json");
    ck_assert(c.save_on_exit);
    ck_assert(c.load_on_start);
    ck_assert_double_eq(c.autosave_s, 86400);
    ck_assert_uint_eq(c.plugins.count, 2);
    ck_assert_str_eq(c.plugins.items[0], "./a.so");
    ck_assert_str_eq(c.plugins.items[1], "/usr/lib/b.so");
    ck_assert_int_eq(c.log_level, TK_LOG_WARN);

    /* Canonical texts. */
    char t[256];
    text_of(&c, "engine", "tick_rate", t, sizeof t);
    ck_assert_str_eq(t, "150");
    text_of(&c, "engine", "fixed_dt", t, sizeof t);
    ck_assert_str_eq(t, "0.0166");
    text_of(&c, "world", "levels", t, sizeof t);
    ck_assert_str_eq(t, "a, b c, d");
    text_of(&c, "control", "socket_mode", t, sizeof t);
    ck_assert_str_eq(t, "0640");
    text_of(&c, "control", "max_line", t, sizeof t);
    ck_assert_str_eq(t, "65536");
    text_of(&c, "snapshot", "save_on_exit", t, sizeof t);
    ck_assert_str_eq(t, "true");
    text_of(&c, "log", "level", t, sizeof t);
    ck_assert_str_eq(t, "warn");
    /* Truncated like snprintf, with the full length returned. */
    const tkd_config_key *lv = tkd_config_find("world", "levels");
    ck_assert_uint_eq(tkd_config_format(&c, lv, t, 4), strlen("a, b c, d"));
    ck_assert_str_eq(t, "a, ");
    ck_assert_uint_eq(tkd_config_format(&c, lv, NULL, 0), 9);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_bool_words)
{
    static const char *const yes[] = {"true", "True", "yes", "ON", "1"};
    static const char *const no[] = {"false", "FALSE", "no", "off", "0"};
    tkd_config c;
    tkd_config_init(&c);
    char err[256];
    for (size_t i = 0; i < 5; i++) {
        ck_assert_int_eq(tkd_config_set(&c, "snapshot", "save_on_exit", yes[i],
                                        "t", err, sizeof err),
                         0);
        ck_assert(c.save_on_exit);
        ck_assert_int_eq(tkd_config_set(&c, "snapshot", "save_on_exit", no[i],
                                        "t", err, sizeof err),
                         0);
        ck_assert(!c.save_on_exit);
    }
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_bytes_suffixes)
{
    static const struct {
        const char *text;
        size_t value;
    } cases[] = {
        {"65536", 65536},  {"64k", 65536},          {"64KB", 65536},
        {"64kib", 65536},  {"1m", 1048576},         {"16MiB", 16777216},
        {"1g", 1073741824}, {"1GB", 1073741824},
    };
    tkd_config c;
    tkd_config_init(&c);
    char err[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = tkd_config_set(&c, "control", "max_output", cases[i].text, "t",
                                err, sizeof err);
        ck_assert_msg(rc == 0, "%s: %s", cases[i].text, err);
        ck_assert_uint_eq(c.max_output, cases[i].value);
    }
    ck_assert_int_eq(tkd_config_set(&c, "control", "max_output", "2g", "t",
                                    err, sizeof err),
                     TK_EINVAL);
    ck_assert_str_eq(err, "t: [control] max_output = 2g: out of range "
                          "[65536, 1073741824]");
    ck_assert_int_eq(tkd_config_set(&c, "control", "max_output", "1t", "t",
                                    err, sizeof err),
                     TK_EINVAL);
    ck_assert_str_eq(err, "t: [control] max_output = 1t: not a byte count "
                          "(digits, optionally followed by k, m or g)");
    ck_assert_uint_eq(c.max_output, 1073741824);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_empty_values)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    /* `key = ; comment` is the empty value in inih r55: an empty list. */
    int rc = load_text(&c,
                       "[plugins]\nload = ; none\n"
                       "[world]\nlevels =\n",
                       err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_uint_eq(c.plugins.count, 0);
    ck_assert_uint_eq(c.levels.count, 0);
    tkd_config_free(&c);

    expect_error("[engine]\ntick_rate = ; Hz\n",
                 "2: [engine] tick_rate = : empty value");
    expect_error("[control]\nsocket =\n",
                 "2: [control] socket = : empty value");
    expect_error("[snapshot]\nsave_on_exit =\n",
                 "2: [snapshot] save_on_exit = : empty value");
}
END_TEST

START_TEST(config_crlf_and_comments)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    int rc = load_text(&c,
                       "; a comment\r\n"
                       "# another\r\n"
                       "\r\n"
                       "[engine]\r\n"
                       "tick_rate = 30 ; Hz\r\n"
                       "max_dt = 0.25\r\n",
                       err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_double_eq(c.tick_rate, 30);
    ck_assert_double_eq(c.max_dt, 0.25);
    tkd_config_free(&c);
}
END_TEST

/* ---- every error kind ------------------------------------------------- */

START_TEST(config_error_unknown_section)
{
    expect_error("[engine]\ntick_rate = 30\n[bogus]\nx = 1\n", "3: [bogus]: unknown section");
    /* Even with no keys in it. */
    expect_error("[engine]\ntick_rate = 30\n[physics]\n; nothing yet\n",
                 "3: [physics]: unknown section");
}
END_TEST

START_TEST(config_error_unknown_key)
{
    expect_error("[engine]\ntickrate = 30\n",
                 "2: [engine] tickrate = 30: unknown key");
    expect_error("[world]\ntick_rate = 30\n",
                 "2: [world] tick_rate = 30: unknown key (tick_rate is in "
                 "[engine])");
    /* Names are case-sensitive. */
    expect_error("[engine]\nTick_Rate = 30\n",
                 "2: [engine] Tick_Rate = 30: unknown key");
}
END_TEST

START_TEST(config_error_key_outside_section)
{
    expect_error("tick_rate = 30\n[engine]\n",
                 "1: tick_rate = 30: key outside of any [section]");
}
END_TEST

START_TEST(config_error_bad_number)
{
    expect_error("[engine]\n\n\n\n\n\n\n\n\n\n\ntick_rate = abc\n",
                 "12: [engine] tick_rate = abc: not a number");
    expect_error("[engine]\ntick_rate = 60hz\n",
                 "2: [engine] tick_rate = 60hz: not a number");
    expect_error("[engine]\nmax_dt = nan\n",
                 "2: [engine] max_dt = nan: not a finite number");
    expect_error("[engine]\nmax_dt = inf\n",
                 "2: [engine] max_dt = inf: not a finite number");
    expect_error("[control]\nmax_clients = -1\n",
                 "2: [control] max_clients = -1: not an unsigned integer");
    expect_error("[control]\nmax_clients = 1.5\n",
                 "2: [control] max_clients = 1.5: not an unsigned integer");
    expect_error("[control]\nmax_line = 1x\n",
                 "2: [control] max_line = 1x: not a byte count (digits, "
                 "optionally followed by k, m or g)");
}
END_TEST

START_TEST(config_error_out_of_range)
{
    expect_error("[engine]\ntick_rate = 10000.5\n",
                 "2: [engine] tick_rate = 10000.5: out of range [0, 10000]");
    expect_error("[engine]\ntick_rate = -1\n",
                 "2: [engine] tick_rate = -1: out of range [0, 10000]");
    expect_error("[world]\ntime_dilation = 0\n",
                 "2: [world] time_dilation = 0: out of range [0.0001, 20]");
    expect_error("[world]\nmax_entities = 0\n",
                 "2: [world] max_entities = 0: out of range [1, 100000000]");
    expect_error("[control]\nmax_clients = 99999999999999999999999\n",
                 "2: [control] max_clients = 99999999999999999999999: out of "
                 "range [1, 65535]");
    expect_error("[control]\nmax_line = 63\n",
                 "2: [control] max_line = 63: out of range [64, 1073741824]");
    expect_error("[snapshot]\nautosave_s = 86401\n",
                 "2: [snapshot] autosave_s = 86401: out of range [0, 86400]");
}
END_TEST

START_TEST(config_error_bad_bool)
{
    expect_error("[snapshot]\nsave_on_exit = maybe\n",
                 "2: [snapshot] save_on_exit = maybe: not a boolean "
                 "(true/false, yes/no, on/off, 1/0)");
}
END_TEST

START_TEST(config_error_bad_mode)
{
    expect_error("[control]\nsocket_mode = 0680\n",
                 "2: [control] socket_mode = 0680: not an octal mode (e.g. "
                 "0660)");
    expect_error("[control]\nsocket_mode = rw-rw----\n",
                 "2: [control] socket_mode = rw-rw----: not an octal mode "
                 "(e.g. 0660)");
    expect_error("[control]\nsocket_mode = 01660\n",
                 "2: [control] socket_mode = 01660: out of range [0000, "
                 "0777]");
}
END_TEST

START_TEST(config_error_world_writable_mode)
{
    expect_error("[control]\nsocket_mode = 0666\n",
                 "2: [control] socket_mode = 0666: world-writable mode (o+w) "
                 "is not allowed");
    expect_error("[control]\nsocket_mode = 0772\n",
                 "2: [control] socket_mode = 0772: world-writable mode (o+w) "
                 "is not allowed");
    /* Others may read and search, never write. */
    tkd_config c;
    tkd_config_init(&c);
    char err[256];
    ck_assert_int_eq(load_text(&c, "[control]\nsocket_mode = 0775\n", err,
                               sizeof err),
                     0);
    ck_assert_uint_eq(c.socket_mode, 0775);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_error_bad_level)
{
    expect_error("[log]\nlevel = verbose\n",
                 "2: [log] level = verbose: not a log level (error, warn, "
                 "info, debug)");
}
END_TEST

START_TEST(config_error_empty_list_item)
{
    expect_error("[world]\nlevels = a,,b\n",
                 "2: [world] levels = a,,b: item 2 of the list is empty");
    expect_error("[plugins]\nload = a.so,\n",
                 "2: [plugins] load = a.so,: item 2 of the list is empty");
    expect_error("[world]\nlevels = , a\n",
                 "2: [world] levels = , a: item 1 of the list is empty");
}
END_TEST

START_TEST(config_error_syntax)
{
    expect_error("[engine]\ntick_rate = 30\nthis is junk\n",
                 "3: syntax error: 'this is junk' is not a [section], key = "
                 "value or comment");
    expect_error("\n[engine\ntick_rate = 30\n",
                 "2: syntax error: '[engine' is not a [section], key = value "
                 "or comment");
}
END_TEST

START_TEST(config_error_first_wins)
{
    /* A bad value before a syntax error ... */
    expect_error("[engine]\ntick_rate = x\nmax_dt = y\njunk\n",
                 "2: [engine] tick_rate = x: not a number");
    /* ... and a syntax error before a bad value. */
    expect_error("[engine]\njunk\ntick_rate = x\n",
                 "2: syntax error: 'junk' is not a [section], key = value or "
                 "comment");
    /* An unknown section after a bad value. */
    expect_error("[log]\nlevel = loud\n[nope]\na = 1\n",
                 "2: [log] level = loud: not a log level (error, warn, info, "
                 "debug)");
}
END_TEST

START_TEST(config_error_duplicate_key)
{
    expect_error("[engine]\ntick_rate = 30\n[world]\nlevels = a\n[engine]\n"
                 "tick_rate = 40\n",
                 "6: [engine] tick_rate = 40: set twice (first at line 2)");
}
END_TEST

START_TEST(config_error_continuation_line)
{
    /* inih reads an indented line as more of the previous value. */
    expect_error("[engine]\ntick_rate = 30\n  max_dt = 1\n",
                 "3: [engine] tick_rate = max_dt = 1: indented line read as a "
                 "continuation of the previous value (start keys in column "
                 "1)");
    /* An indented first key of a section is read as a key, and accepted. */
    tkd_config c;
    tkd_config_init(&c);
    char err[256] = "";
    ck_assert_int_eq(load_text(&c, "[engine]\n  tick_rate = 30\n", err,
                               sizeof err),
                     0);
    ck_assert_double_eq(c.tick_rate, 30);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_error_long_line)
{
    char text[600];
    char pad[400];
    memset(pad, 'a', sizeof pad - 1);
    pad[sizeof pad - 1] = '\0';
    snprintf(text, sizeof text, "[world]\nlevels = x\n; %s\n", pad);
    tkd_config c;
    tkd_config_init(&c);
    char err[256];
    ck_assert_int_eq(load_text(&c, text, err, sizeof err), TK_EINVAL);
    char want[256];
    snprintf(want, sizeof want, "%s/t.ini:3: line too long (at most ", g_dir);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    ck_assert_uint_eq(c.levels.count, 1); /* unchanged */
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_bom_and_nul_byte)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    /* A UTF-8 byte order mark is skipped. */
    int rc = load_text(&c, "\xEF\xBB\xBF[engine]\ntick_rate = 45\n", err,
                       sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_double_eq(c.tick_rate, 45);
    /* A NUL byte would hide the rest of its line from inih. */
    const char *p = write_file("nul.ini", "");
    static const char text[] = "[engine]\ntick_rate = 30\0 junk\n";
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
    fclose(f);
    ck_assert_int_eq(tkd_config_load(&c, p, err, sizeof err), TK_EINVAL);
    char want[512];
    snprintf(want, sizeof want, "%s:2: line contains a NUL byte", p);
    ck_assert_str_eq(err, want);
    ck_assert_double_eq(c.tick_rate, 45);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_error_missing_file)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512], want[512];
    snprintf(want, sizeof want, "%s/none.ini", g_dir);
    ck_assert_int_eq(tkd_config_load(&c, want, err, sizeof err), TK_ENOENT);
    strcat(want, ": cannot open: No such file or directory");
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(tkd_config_load(&c, g_dir, err, sizeof err), TK_EIO);
    ck_assert_ptr_null(c.path);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_bad_file_changes_nothing)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    const char *good = write_file("good.ini", "[engine]\ntick_rate = 30\n"
                                              "[world]\nlevels = a, b\n");
    ck_assert_int_eq(tkd_config_load(&c, good, err, sizeof err), 0);
    const char *bad = write_file("bad.ini", "[engine]\ntick_rate = 10\n"
                                            "[world]\nlevels = c\n"
                                            "[log]\nlevel = loud\n");
    ck_assert_int_eq(tkd_config_load(&c, bad, err, sizeof err), TK_EINVAL);
    ck_assert_double_eq(c.tick_rate, 30);
    ck_assert_uint_eq(c.levels.count, 2);
    ck_assert_str_eq(c.path, good);
    tkd_config_free(&c);
}
END_TEST

/* ---- set and overrides ------------------------------------------------ */

START_TEST(config_set_errors)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[256];
    ck_assert_int_eq(tkd_config_set(&c, "engine", "tick_rate", " 25 ", NULL,
                                    err, sizeof err),
                     0);
    ck_assert_double_eq(c.tick_rate, 25);
    ck_assert_int_eq(tkd_config_set(&c, "engine", "nope", "1", "--x", err,
                                    sizeof err),
                     TK_ENOENT);
    ck_assert_str_eq(err, "--x: [engine] nope = 1: unknown key");
    ck_assert_int_eq(tkd_config_set(&c, "nope", "x", "1", NULL, err,
                                    sizeof err),
                     TK_ENOENT);
    ck_assert_str_eq(err, "set: [nope] x = 1: unknown section");
    /* A value an ini file could not hold is refused, so dumps reload. */
    ck_assert_int_eq(tkd_config_set(&c, "control", "socket", "a ;b", "--socket",
                                    err, sizeof err),
                     TK_EINVAL);
    ck_assert_str_eq(err, "--socket: [control] socket = a ;b: contains a ';' "
                          "that an ini file reads as a comment");
    ck_assert_int_eq(tkd_config_set(&c, "control", "socket", "a\nb", "--socket",
                                    err, sizeof err),
                     TK_EINVAL);
    ck_assert_str_eq(c.socket, "run/tickd.sock");
    ck_assert_double_eq(c.tick_rate, 25);
    ck_assert_int_eq(tkd_config_set(&c, "engine", "tick_rate", NULL, NULL, err,
                                    sizeof err),
                     TK_EINVAL);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_override_wins)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    ck_assert_int_eq(tkd_config_override(&c, "engine", "tick_rate", "120",
                                          "--tick-rate", err, sizeof err),
                     0);
    ck_assert_double_eq(c.tick_rate, 120);
    ck_assert_int_eq(tkd_config_override(&c, "engine", "tick_rate", "abc",
                                          "--tick-rate", err, sizeof err),
                     TK_EINVAL);
    ck_assert_str_eq(err,
                     "--tick-rate: [engine] tick_rate = abc: not a number");
    ck_assert_double_eq(c.tick_rate, 120);
    ck_assert_int_eq(tkd_config_override_arg(&c, "log.level=debug", "--set",
                                             err, sizeof err),
                     0);
    ck_assert_int_eq(c.log_level, TK_LOG_DEBUG);
    ck_assert_int_eq(tkd_config_override_arg(&c, "log=debug", "--set", err,
                                             sizeof err),
                     TK_EINVAL);
    ck_assert_str_eq(err, "--set: 'log=debug': expected section.key=value");
    ck_assert_int_eq(tkd_config_override_arg(&c, ".x=1", "--set", err,
                                             sizeof err),
                     TK_EINVAL);
    ck_assert_int_eq(tkd_config_override_arg(&c, "log.=1", "--set", err,
                                             sizeof err),
                     TK_EINVAL);
    ck_assert_uint_eq(c.n_overrides, 2);

    const char *p = write_file("o.ini", "[engine]\ntick_rate = 30\n"
                                        "max_dt = 0.1\n[log]\nlevel = error\n");
    ck_assert_int_eq(tkd_config_load(&c, p, err, sizeof err), 0);
    ck_assert_double_eq(c.tick_rate, 120);  /* the flag wins */
    ck_assert_int_eq(c.log_level, TK_LOG_DEBUG);
    ck_assert_double_eq(c.max_dt, 0.1);    /* the file where no flag */

    /* Overriding again replaces the remembered value. */
    ck_assert_int_eq(tkd_config_override(&c, "engine", "tick_rate", "90",
                                          "--tick-rate", err, sizeof err),
                     0);
    ck_assert_uint_eq(c.n_overrides, 2);
    write_file("o.ini", "[engine]\ntick_rate = 20\n");
    ck_assert_int_eq(tkd_config_reload(&c, NULL, NULL, NULL, err, sizeof err),
                     1); /* max_dt back to its default; the flags held */
    ck_assert_double_eq(c.tick_rate, 90);
    ck_assert_int_eq(c.log_level, TK_LOG_DEBUG);
    ck_assert_double_eq(c.max_dt, 0.4);
    tkd_config_free(&c);
}
END_TEST

/* ---- reload ----------------------------------------------------------- */

typedef struct seen {
    int n;
    char lines[32][160];
} seen;

static void record_change(void *ud, const tkd_config_key *key,
                          const char *old_text, const char *new_text,
                          bool needs_restart)
{
    seen *s = ud;
    ck_assert_int_lt(s->n, 32);
    snprintf(s->lines[s->n++], sizeof s->lines[0], "[%s] %s: %s -> %s%s",
             key->section, key->name, old_text, new_text,
             needs_restart ? " (restart)" : "");
}

/* [engine] pacing: the two names, an override, SIGHUP, and the error that
 * names file, line, key and value. */
START_TEST(config_pacing)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "", text[32];
    ck_assert_int_eq(load_text(&c, "[engine]\npacing = unreal\n", err, sizeof err), 0);
    ck_assert_int_eq(c.pacing, TK_PACING_UNREAL);
    text_of(&c, "engine", "pacing", text, sizeof text);
    ck_assert_str_eq(text, "unreal");
    ck_assert_int_eq(load_text(&c, "[engine]\npacing = steady ; the default\n", err, sizeof err),
                     0);
    ck_assert_int_eq(c.pacing, TK_PACING_STEADY);
    ck_assert_int_eq(tkd_config_override_arg(&c, "engine.pacing=unreal", "--set", err, sizeof err),
                     0);
    ck_assert_int_eq(c.pacing, TK_PACING_UNREAL);
    ck_assert_int_eq(tkd_config_override_arg(&c, "engine.pacing=fast", "--set", err, sizeof err),
                     TK_EINVAL);
    ck_assert_str_eq(err, "--set: [engine] pacing = fast: not a pacing (unreal, steady)");
    ck_assert_int_eq(c.pacing, TK_PACING_UNREAL);
    /* Reloadable: a changed file applies (the override still wins, so
     * clear it first by starting over). */
    tkd_config_free(&c);
    tkd_config_init(&c);
    const char *p = write_file("p.ini", "[engine]\npacing = steady\n");
    ck_assert_int_eq(tkd_config_load(&c, p, err, sizeof err), 0);
    write_file("p.ini", "[engine]\npacing = unreal\n");
    seen s = {0};
    ck_assert_int_eq(tkd_config_reload(&c, NULL, record_change, &s, err, sizeof err), 1);
    ck_assert_int_eq(s.n, 1);
    ck_assert_str_eq(s.lines[0], "[engine] pacing: steady -> unreal");
    ck_assert_int_eq(c.pacing, TK_PACING_UNREAL);
    tkd_config_free(&c);
    expect_error("[engine]\ntick_rate = 60\npacing = Steady\n",
                 "3: [engine] pacing = Steady: not a pacing (unreal, steady)");
    expect_error("[engine]\npacing =\n", "2: [engine] pacing = : empty value");
}
END_TEST

START_TEST(config_reload_reports_changes)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    const char *p = write_file("r.ini", "[engine]\ntick_rate = 60\n"
                                        "[control]\nmax_line = 1m\n");
    ck_assert_int_eq(tkd_config_load(&c, p, err, sizeof err), 0);
    write_file("r.ini", "[engine]\ntick_rate = 30\nfixed_dt = 0.01\n"
                        "[control]\nmax_line = 1048576\n"
                        "socket = /tmp/other.sock\nmax_clients = 8\n"
                        "[world]\nlevels = persistent, arena\n"
                        "[log]\nlevel = debug\n");
    seen s = {0};
    int applied =
        tkd_config_reload(&c, NULL, record_change, &s, err, sizeof err);
    ck_assert_msg(applied == 3, "%d: %s", applied, err);
    ck_assert_int_eq(s.n, 6);
    /* Table order; max_line is unchanged (1m == 1048576). */
    ck_assert_str_eq(s.lines[0], "[engine] tick_rate: 60 -> 30");
    ck_assert_str_eq(s.lines[1], "[engine] fixed_dt: 0 -> 0.01 (restart)");
    ck_assert_str_eq(s.lines[2],
                     "[world] levels: persistent -> persistent, arena "
                     "(restart)");
    ck_assert_str_eq(s.lines[3],
                     "[control] socket: run/tickd.sock -> /tmp/other.sock "
                     "(restart)");
    ck_assert_str_eq(s.lines[4], "[control] max_clients: 256 -> 8");
    ck_assert_str_eq(s.lines[5], "[log] level: info -> debug");
    /* Reloadable keys applied, the others kept. */
    ck_assert_double_eq(c.tick_rate, 30);
    ck_assert_uint_eq(c.max_clients, 8);
    ck_assert_int_eq(c.log_level, TK_LOG_DEBUG);
    ck_assert_double_eq(c.fixed_dt, 0);
    ck_assert_str_eq(c.socket, "run/tickd.sock");
    ck_assert_uint_eq(c.levels.count, 1);

    /* The same file again: the restart keys still differ, nothing applies. */
    s.n = 0;
    ck_assert_int_eq(tkd_config_reload(&c, NULL, record_change, &s, err,
                                       sizeof err),
                     0);
    ck_assert_int_eq(s.n, 3);
    ck_assert_str_eq(s.lines[0], "[engine] fixed_dt: 0 -> 0.01 (restart)");
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_reload_bad_file_changes_nothing)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    const char *p = write_file("r.ini", "[engine]\ntick_rate = 50\n");
    ck_assert_int_eq(tkd_config_load(&c, p, err, sizeof err), 0);
    write_file("r.ini", "[engine]\ntick_rate = 20\nmax_dt = 99\n");
    seen s = {0};
    ck_assert_int_eq(tkd_config_reload(&c, NULL, record_change, &s, err,
                                       sizeof err),
                     TK_EINVAL);
    char want[512];
    snprintf(want, sizeof want,
             "%s:3: [engine] max_dt = 99: out of range [0, 10]", p);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(s.n, 0);
    ck_assert_double_eq(c.tick_rate, 50);
    ck_assert_double_eq(c.max_dt, 0.4);

    /* A vanished file is an error too, not a return to defaults. */
    unlink(p);
    ck_assert_int_eq(tkd_config_reload(&c, NULL, record_change, &s, err,
                                       sizeof err),
                     TK_ENOENT);
    ck_assert_double_eq(c.tick_rate, 50);
    ck_assert_str_eq(c.path, p);
    tkd_config_free(&c);
}
END_TEST

START_TEST(config_reload_other_path_and_no_file)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    /* No file at all: defaults, nothing changes. */
    seen s = {0};
    ck_assert_int_eq(tkd_config_reload(&c, NULL, record_change, &s, err,
                                       sizeof err),
                     0);
    ck_assert_int_eq(s.n, 0);
    ck_assert_ptr_null(c.path);
    const char *q = write_file("q.ini", "[stats]\nslow_tick_ms = 2.5\n");
    ck_assert_int_eq(tkd_config_reload(&c, q, record_change, &s, err,
                                       sizeof err),
                     1);
    ck_assert_str_eq(s.lines[0], "[stats] slow_tick_ms: 5 -> 2.5");
    ck_assert_str_eq(c.path, q);
    ck_assert_double_eq(c.slow_tick_ms, 2.5);
    /* Reloading c->path itself (the path argument aliases c->path). */
    ck_assert_int_eq(tkd_config_reload(&c, c.path, NULL, NULL, err, sizeof err),
                     0);
    ck_assert_str_eq(c.path, q);
    tkd_config_free(&c);
}
END_TEST

/* ---- dumps ------------------------------------------------------------ */

typedef struct visit {
    size_t n;
    char tick_rate[64];
    char tick_origin[64];
    int origins;
} visit;

static void on_key(void *ud, const tkd_config_key *key, const char *value,
                   const char *origin)
{
    visit *v = ud;
    v->n++;
    if (origin)
        v->origins++;
    if (strcmp(key->name, "tick_rate") == 0) {
        snprintf(v->tick_rate, sizeof v->tick_rate, "%s", value);
        snprintf(v->tick_origin, sizeof v->tick_origin, "%s",
                 origin ? origin : "(none)");
    }
}

START_TEST(config_foreach_and_write_roundtrip)
{
    tkd_config c;
    tkd_config_init(&c);
    char err[512] = "";
    ck_assert_int_eq(tkd_config_override(&c, "engine", "tick_rate", "33.3",
                                         "--tick-rate", err, sizeof err),
                     0);
    static const char *const sets[][3] = {
        {"engine", "max_dt", "0.1"},
        {"world", "levels", "persistent,arena , lobby"},
        {"world", "time_dilation", "0.3"},
        {"control", "socket", "/run/tickd/tickd.sock"},
        {"control", "socket_mode", "600"},
        {"control", "max_line", "2m"},
        {"snapshot", "load_on_start", "yes"},
        {"plugins", "load", "/a/b.so"},
        {"log", "level", "warning"},
    };
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        ck_assert_int_eq(tkd_config_set(&c, sets[i][0], sets[i][1], sets[i][2],
                                        "t", err, sizeof err),
                         0);

    visit v = {0};
    tkd_config_foreach(&c, on_key, &v);
    size_t n;
    tkd_config_keys(&n);
    ck_assert_uint_eq(v.n, n);
    ck_assert_int_eq(v.origins, 1);
    ck_assert_str_eq(v.tick_rate, "33.3");
    ck_assert_str_eq(v.tick_origin, "--tick-rate");

    /* What tkd_config_write prints loads back to the same values. */
    const char *p = write_file("dump.ini", "");
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(tkd_config_write(&c, f), 0);
    fclose(f);
    tkd_config d;
    tkd_config_init(&d);
    int rc = tkd_config_load(&d, p, err, sizeof err);
    ck_assert_msg(rc == 0, "%s", err);
    assert_same(&c, &d);
    ck_assert_double_eq(d.time_dilation, 0.3);
    ck_assert_uint_eq(d.levels.count, 3);
    tkd_config_free(&d);
    tkd_config_free(&c);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, config_defaults);
    tcase_add_test(tc, config_table);
    tcase_add_test(tc, config_shipped_file_is_defaults);
    tcase_add_test(tc, config_shipped_file_lists_every_key);
    tcase_add_test(tc, config_types_parse);
    tcase_add_test(tc, config_bool_words);
    tcase_add_test(tc, config_bytes_suffixes);
    tcase_add_test(tc, config_empty_values);
    tcase_add_test(tc, config_crlf_and_comments);
    tcase_add_test(tc, config_error_unknown_section);
    tcase_add_test(tc, config_error_unknown_key);
    tcase_add_test(tc, config_error_key_outside_section);
    tcase_add_test(tc, config_error_bad_number);
    tcase_add_test(tc, config_error_out_of_range);
    tcase_add_test(tc, config_error_bad_bool);
    tcase_add_test(tc, config_error_bad_mode);
    tcase_add_test(tc, config_error_world_writable_mode);
    tcase_add_test(tc, config_error_bad_level);
    tcase_add_test(tc, config_pacing);
    tcase_add_test(tc, config_error_empty_list_item);
    tcase_add_test(tc, config_error_syntax);
    tcase_add_test(tc, config_error_first_wins);
    tcase_add_test(tc, config_error_duplicate_key);
    tcase_add_test(tc, config_error_continuation_line);
    tcase_add_test(tc, config_error_long_line);
    tcase_add_test(tc, config_bom_and_nul_byte);
    tcase_add_test(tc, config_error_missing_file);
    tcase_add_test(tc, config_bad_file_changes_nothing);
    tcase_add_test(tc, config_set_errors);
    tcase_add_test(tc, config_override_wins);
    tcase_add_test(tc, config_reload_reports_changes);
    tcase_add_test(tc, config_reload_bad_file_changes_nothing);
    tcase_add_test(tc, config_reload_other_path_and_no_file);
    tcase_add_test(tc, config_foreach_and_write_roundtrip);
    tcase_add_test(tc, config_instance_name);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(config_suite)
