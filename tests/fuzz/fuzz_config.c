/*
 * fuzz_config.c - fuzz target "config": bytes as an ini file, read with
 * tkd_config_load (inih + the config table).
 *
 * Each input is written to a file in a private temp directory and loaded
 * into a config that is not the defaults (a few keys set, and a remembered
 * command-line override of [log] level), so that "unchanged" is a real
 * check.  Then:
 *  - on error: the code is TK_EINVAL (the file exists and is readable), the
 *    message is one line that names the file, no key's canonical text
 *    changed and the config still names no file (config.h: "on any error
 *    nothing in c changes");
 *  - on success: the config names the file, the override still wins, the
 *    config written back with tkd_config_write loads into a fresh config
 *    with every key's canonical text equal (the writer and the reader
 *    agree, for every value the reader accepts), and a reload of the same
 *    file changes nothing.
 *
 * What this target deliberately does not do: apply a config (that is the
 * daemon's job: sockets, plugins, levels) - the reader is what faces
 * untrusted text.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon/config.h"
#include "fuzz.h"
#include "tickd/alloc.h"
#include "tickd/error.h"

#define FAIL(...) tkd_fuzz_fail("config", __VA_ARGS__)

static char g_in[320];  /* the input, as a file          */
static char g_out[320]; /* the config written back        */

/* Canonical texts of every key of `c` (tk_malloc'd array of tk_strdup'd
 * strings, `n` of them). */
static char **texts(const tkd_config *c, size_t *n)
{
    const tkd_config_key *keys = tkd_config_keys(n);
    char **v = tk_malloc(*n * sizeof *v);
    for (size_t i = 0; i < *n; i++) {
        size_t len = tkd_config_format(c, &keys[i], NULL, 0);
        v[i] = tk_malloc(len + 1);
        tkd_config_format(c, &keys[i], v[i], len + 1);
    }
    return v;
}

static void free_texts(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        tk_free(v[i]);
    tk_free(v);
}

/* Abort unless `c`'s texts are `want`; `what` names the comparison. */
static void same_texts(const tkd_config *c, char **want, const char *what)
{
    size_t n;
    const tkd_config_key *keys = tkd_config_keys(&n);
    char **got = texts(c, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(got[i], want[i]) != 0)
            FAIL("%s: [%s] %s is \"%s\", expected \"%s\"", what, keys[i].section, keys[i].name,
                 got[i], want[i]);
    free_texts(got, n);
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        FAIL("cannot write %s", path);
}

/* The config each input is loaded into: not the defaults. */
static void base_config(tkd_config *c)
{
    char err[512];
    tkd_config_init(c);
    if (tkd_config_set(c, "engine", "tick_rate", "30", "base", err, sizeof err) ||
        tkd_config_set(c, "world", "levels", "persistent, arena", "base", err, sizeof err) ||
        tkd_config_set(c, "control", "max_line", "64k", "base", err, sizeof err) ||
        tkd_config_override(c, "log", "level", "debug", "--log-level", err, sizeof err))
        FAIL("base config: %s", err);
}

static void check_written_back(const tkd_config *c, char **want)
{
    FILE *f = fopen(g_out, "w");
    if (!f)
        FAIL("cannot write %s", g_out);
    int rc = tkd_config_write(c, f);
    if (fclose(f) != 0 || rc != 0)
        FAIL("tkd_config_write failed (%d)", rc);
    tkd_config back;
    tkd_config_init(&back);
    char err[1024];
    rc = tkd_config_load(&back, g_out, err, sizeof err);
    if (rc != 0)
        FAIL("a config written by tkd_config_write does not load (%d): %s", rc, err);
    same_texts(&back, want, "written back and loaded");
    tkd_config_free(&back);
}

int tkd_fuzz_config(const uint8_t *data, size_t size)
{
    if (!g_in[0]) {
        tkd_fuzz_quiet();
        snprintf(g_in, sizeof g_in, "%s/fuzz.ini", tkd_fuzz_tmpdir());
        snprintf(g_out, sizeof g_out, "%s/written.ini", tkd_fuzz_tmpdir());
    }
    write_file(g_in, data, size);

    tkd_config c;
    base_config(&c);
    size_t n;
    char **before = texts(&c, &n);
    char err[1024];
    memset(err, 0, sizeof err);
    int rc = tkd_config_load(&c, g_in, err, sizeof err);
    if (rc != 0) {
        if (rc != TK_EINVAL)
            FAIL("load of a readable file returned %d (%s): %s", rc, tk_strerror(rc), err);
        if (!strstr(err, g_in))
            FAIL("the error does not name the file %s: \"%s\"", g_in, err);
        if (strchr(err, '\n'))
            FAIL("the error is not one line: \"%s\"", err);
        same_texts(&c, before, "after a failed load");
        if (c.path)
            FAIL("a failed load set the config's path to %s", c.path);
    } else {
        if (!c.path || strcmp(c.path, g_in) != 0)
            FAIL("a successful load did not record the file (path %s)", c.path ? c.path : "-");
        if (c.log_level != TK_LOG_DEBUG)
            FAIL("the --log-level override lost to the file (level %d)", (int)c.log_level);
        size_t m;
        char **after = texts(&c, &m);
        check_written_back(&c, after);
        int changed = tkd_config_reload(&c, g_in, NULL, NULL, err, sizeof err);
        if (changed != 0)
            FAIL("reloading the same file returned %d: %s", changed, err);
        same_texts(&c, after, "after reloading the same file");
        free_texts(after, m);
    }
    free_texts(before, n);
    tkd_config_free(&c);
    return 0;
}
