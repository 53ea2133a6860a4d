/*
 * fuzz.h - what the fuzz targets share: their entry points, and small
 * helpers for a quiet, self-contained offline daemon.
 *
 * Each tests/fuzz/fuzz_<name>.c defines tkd_fuzz_<name>(data, size).  Two
 * drivers call them: tests/fuzz/libfuzzer.c (clang + libFuzzer, `make fuzz`)
 * and tests/fuzz/replay.c (a plain main that replays the stored corpora,
 * run by `make check`).  A target returns 0 for every input; a broken
 * invariant is reported on stderr and aborts the process, which both drivers
 * count as a failure (as they do a sanitizer report or a crash).
 *
 * The helpers are `static inline` so that each target stays one translation
 * unit that links alone against libtickdd + libtickd (the libFuzzer build
 * links one target per binary).  What this header deliberately does not do:
 * choose inputs, or know any method or invariant of a particular target.
 */
#ifndef TICKD_FUZZ_H
#define TICKD_FUZZ_H

#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon/daemon.h"
#include "daemon/params.h"
#include "daemon/snapshot.h"
#include "tickd/log.h"

/* The targets (one per tests/fuzz/fuzz_<name>.c). */
int tkd_fuzz_request(const uint8_t *data, size_t size);
int tkd_fuzz_config(const uint8_t *data, size_t size);
int tkd_fuzz_snapshot(const uint8_t *data, size_t size);
int tkd_fuzz_agones(const uint8_t *data, size_t size);
int tkd_fuzz_journal(const uint8_t *data, size_t size);

/* Live entities allowed in fuzzed daemons: small, so that a runaway spawner
 * or a big `count` costs milliseconds, not seconds, per input. */
#define TKD_FUZZ_MAX_ENTITIES "2000"

static inline void tkd_fuzz_fail(const char *who, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 2, 3)));

static inline void tkd_fuzz_rmdir(const char *dir, int depth);

/* Remove what is in directory `dir` (not `dir` itself), down to `depth`
 * levels of subdirectories (the targets write files only: 0).  Errors are
 * ignored: this is cleanup. */
static inline void tkd_fuzz_empty_dir(const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[512];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p)
                continue;
            if (depth > 0)
                tkd_fuzz_rmdir(p, depth - 1); /* a file: nothing happens */
            unlink(p);
        }
        closedir(d);
    }
}

/* Remove directory `dir` and what is in it (as tkd_fuzz_empty_dir). */
static inline void tkd_fuzz_rmdir(const char *dir, int depth)
{
    tkd_fuzz_empty_dir(dir, depth);
    rmdir(dir);
}

/*
 * A private temp directory of this translation unit, created on first use
 * and removed at exit (a sanitizer report leaves it behind; the replay runs
 * its children with TMPDIR in a directory of its own and removes that).
 * $TMPDIR when set, else /dev/shm when it is usable (snapshot saves fsync,
 * which costs nothing on tmpfs), else /tmp.  Aborts if no directory can be
 * made: a target cannot run without one.
 */
static inline char *tkd_fuzz_dir_buf_(void)
{
    static char dir[256]; /* "" until created */
    return dir;
}

static inline void tkd_fuzz_dir_cleanup_(void) { tkd_fuzz_rmdir(tkd_fuzz_dir_buf_(), 0); }

static inline const char *tkd_fuzz_tmpdir(void)
{
    char *dir = tkd_fuzz_dir_buf_();
    if (dir[0])
        return dir;
    const char *env = getenv("TMPDIR");
    const char *bases[] = {env && *env ? env : "/dev/shm", "/dev/shm", "/tmp"};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        snprintf(dir, 256, "%s/tickd-fuzz-XXXXXX", bases[i]);
        if (mkdtemp(dir)) {
            atexit(tkd_fuzz_dir_cleanup_);
            return dir;
        }
    }
    dir[0] = '\0';
    tkd_fuzz_fail("setup", "cannot create a temp directory");
}

/*
 * Report a broken invariant of target `who` and abort (libFuzzer saves the
 * input as a crash; the replay reports the file).  The temp directory is
 * removed first: abort() skips the atexit cleanup.  Never returns.
 */
static inline void tkd_fuzz_fail(const char *who, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz_%s: invariant broken: ", who);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
    if (tkd_fuzz_dir_buf_()[0])
        tkd_fuzz_dir_cleanup_();
    abort();
}

/*
 * Log handler of the fuzzed process (installed with the level at error, so
 * warnings - every failed method logs one - are dropped before formatting).
 * Error lines are expected for some hostile inputs (a runaway spawner is
 * logged at error, as Unreal does), so they are not shown unless
 * TICKD_FUZZ_LOG is set in the environment.  A message that says it is "a
 * bug" is one: the daemon logs so where it detects a can't-happen state (a
 * snapshot load that failed half-way), and the fuzzer must stop there.
 */
static inline void tkd_fuzz_log(void *ud, tk_log_level level, const char *msg)
{
    (void)ud;
    if (strstr(msg, "(a bug)"))
        tkd_fuzz_fail("log", "the daemon logged a bug: %s", msg);
    if (getenv("TICKD_FUZZ_LOG"))
        fprintf(stderr, "tickd: %s: %s\n", tk_log_level_name(level), msg);
}

static inline void tkd_fuzz_quiet(void)
{
    tk_log_set_level(TK_LOG_ERROR);
    tk_log_set_handler(tkd_fuzz_log, NULL);
}

/*
 * Build an offline daemon in `d` (zeroed here) for target `who`: default
 * config, TKD_FUZZ_MAX_ENTITIES, and world.save/load on `snapshot_path`
 * (the only path offline methods use).  Aborts on failure.
 */
static inline void tkd_fuzz_offline_init(tkd *d, const char *who, const char *snapshot_path)
{
    char err[TKD_ERR_MAX];
    memset(d, 0, sizeof *d);
    tkd_config_init(&d->cfg);
    if (tkd_config_set(&d->cfg, "world", "max_entities", TKD_FUZZ_MAX_ENTITIES, "fuzz", err,
                       sizeof err) != 0 ||
        tkd_config_set(&d->cfg, "snapshot", "path", snapshot_path, "fuzz", err, sizeof err) != 0)
        tkd_fuzz_fail(who, "config: %s", err);
    if (tkd_init_offline(d, err, sizeof err) != 0)
        tkd_fuzz_fail(who, "tkd_init_offline: %s", err);
}

static inline void tkd_fuzz_offline_fini(tkd *d)
{
    tkd_fini_offline(d);
    tkd_config_free(&d->cfg);
}

/*
 * Run one frame of an offline daemon with what the daemon's own hooks do
 * around it: the tick rate is forced to 0 first (offline frames are unpaced
 * by design; an engine.set_tick_rate from the input would otherwise make the
 * frame sleep), and the answered-later requests (world.step, world.trace,
 * engine.sprint) are completed after it, as the post-frame hook does.
 * Aborts unless the frame counter moved by exactly one.
 */
static inline void tkd_fuzz_frame(tkd *d, const char *who)
{
    tk_engine_set_tick_rate(d->engine, 0);
    uint64_t before = tk_world_frame(d->world);
    tk_engine_frame(d->engine);
    uint64_t after = tk_world_frame(d->world);
    if (after != before + 1)
        tkd_fuzz_fail(who, "a frame moved the frame counter from %llu to %llu",
                      (unsigned long long)before, (unsigned long long)after);
    tk_engine_stats st;
    tk_engine_get_stats(d->engine, &st);
    tkd_methods_post_frame(d, &st.last);
}

/* The snapshot document of `d` without its "saved_at" (a new reference). */
static inline json_t *tkd_fuzz_world_doc(tkd *d)
{
    json_t *doc = tkd_snapshot_build(d);
    json_object_del(doc, "saved_at");
    return doc;
}

/*
 * Describe the first difference between two JSON values in `out` (its JSON
 * path, then both values, cut to a few hundred bytes).  Returns false when
 * they are equal.  For failure messages.
 */
static inline bool tkd_fuzz_json_diff(const json_t *a, const json_t *b, char *path, size_t plen,
                                      char *out, size_t olen)
{
    if (json_equal(a, b))
        return false;
    size_t used = strlen(path);
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *va;
        json_object_foreach((json_t *)a, k, va) {
            json_t *vb = json_object_get(b, k);
            snprintf(path + used, plen - used, ".%s", k);
            if (!vb) {
                snprintf(out, olen, "%s: only in the first", path);
                return true;
            }
            if (tkd_fuzz_json_diff(va, vb, path, plen, out, olen))
                return true;
        }
        json_object_foreach((json_t *)b, k, va) {
            if (!json_object_get(a, k)) {
                snprintf(path + used, plen - used, ".%s", k);
                snprintf(out, olen, "%s: only in the second", path);
                return true;
            }
        }
        path[used] = '\0';
    } else if (json_is_array(a) && json_is_array(b)) {
        size_t na = json_array_size(a), nb = json_array_size(b);
        for (size_t i = 0; i < na && i < nb; i++) {
            snprintf(path + used, plen - used, "[%zu]", i);
            if (tkd_fuzz_json_diff(json_array_get(a, i), json_array_get(b, i), path, plen, out,
                                   olen))
                return true;
        }
        path[used] = '\0';
        if (na != nb) {
            snprintf(out, olen, "%s: %zu items against %zu", path[0] ? path : "$", na, nb);
            return true;
        }
    }
    char *ta = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    char *tb = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    snprintf(out, olen, "%s: %.300s against %.300s", path[0] ? path : "$", ta ? ta : "?",
             tb ? tb : "?");
    free(ta);
    free(tb);
    return true;
}

/* Abort with `what` and the first difference unless a equals b. */
static inline void tkd_fuzz_same_json(const char *who, const json_t *a, const json_t *b,
                                      const char *what)
{
    char path[512] = "", diff[1024];
    if (tkd_fuzz_json_diff(a, b, path, sizeof path, diff, sizeof diff))
        tkd_fuzz_fail(who, "%s: %s", what, diff);
}

/*
 * A snapshot file as tkd_snapshot_save wrote it, mapped read-only (no heap
 * copy: under ASan a big buffer costs more than reading it), with the span
 * of its "saved_at" value, the one member that differs between two saves
 * of the same world.
 */
typedef struct tkd_fuzz_snapfile {
    const char *p;     /* the bytes, or NULL                  */
    size_t n;          /* their count                         */
    size_t at, at_end; /* the saved_at value is [at, at_end)  */
} tkd_fuzz_snapfile;

static inline bool tkd_fuzz_snapfile_map(const char *path, tkd_fuzz_snapfile *f)
{
    static const char key[] = "\"saved_at\":\"";
    memset(f, 0, sizeof *f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            f->p = p;
            f->n = (size_t)st.st_size;
        }
    }
    close(fd);
    if (!f->p)
        return false;
    /* The writer puts it first but for "format" and "version". */
    for (size_t i = 0; i + sizeof key - 1 <= f->n && i < 256; i++) {
        if (memcmp(f->p + i, key, sizeof key - 1) != 0)
            continue;
        size_t at = i + sizeof key - 1;
        const char *q = memchr(f->p + at, '"', f->n - at);
        if (q) {
            f->at = at;
            f->at_end = (size_t)(q - f->p);
        }
        break;
    }
    return true;
}

static inline void tkd_fuzz_snapfile_unmap(tkd_fuzz_snapfile *f)
{
    if (f->p)
        munmap((void *)f->p, f->n);
    f->p = NULL;
}

/* Mix n bytes at p into the 64-bit digest h (eight at a time). */
static inline uint64_t tkd_fuzz_digest(uint64_t h, const char *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    for (; i < n; i++) {
        h = (h ^ (uint8_t)p[i]) * 0x9e3779b97f4a7c15u;
        h ^= h >> 29;
    }
    return h;
}

/* A 64-bit digest of a mapped snapshot file, "saved_at" aside (two saves
 * of one world give the same digest). */
static inline uint64_t tkd_fuzz_snapfile_digest(const tkd_fuzz_snapfile *f)
{
    uint64_t h = tkd_fuzz_digest(f->n, f->p, f->at);
    return tkd_fuzz_digest(h, f->p + f->at_end, f->n - f->at_end);
}

/* A snapshot file's document without "saved_at" (new reference), or NULL. */
static inline json_t *tkd_fuzz_snapfile_doc(const char *path)
{
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    json_object_del(doc, "saved_at");
    return doc;
}

/*
 * Whether the snapshot files `a` and `b` (both written by tkd_snapshot_save)
 * hold the same document, "saved_at" aside.  The same bytes is the quick
 * answer: one writer writes two equal worlds alike.  Otherwise both are
 * parsed and compared as JSON values (member order aside), and `diff` gets
 * the first difference (or why a file could not be read).
 */
static inline bool tkd_fuzz_same_snapfiles(const char *a, const char *b, char *diff, size_t dlen)
{
    tkd_fuzz_snapfile fa, fb;
    bool same = false;
    if (tkd_fuzz_snapfile_map(a, &fa) && tkd_fuzz_snapfile_map(b, &fb)) {
        same = fa.at && fa.at == fb.at && fa.n - fa.at_end == fb.n - fb.at_end &&
               memcmp(fa.p, fb.p, fa.at) == 0 &&
               memcmp(fa.p + fa.at_end, fb.p + fb.at_end, fa.n - fa.at_end) == 0;
        tkd_fuzz_snapfile_unmap(&fb);
    }
    tkd_fuzz_snapfile_unmap(&fa);
    if (same)
        return true;
    json_t *da = tkd_fuzz_snapfile_doc(a), *db = tkd_fuzz_snapfile_doc(b);
    char path[512] = "";
    if (!da || !db)
        snprintf(diff, dlen, "%s cannot be read back as JSON", da ? b : a);
    else
        same = !tkd_fuzz_json_diff(da, db, path, sizeof path, diff, dlen);
    json_decref(da);
    json_decref(db);
    return same;
}

/*
 * Whether any string in `v` (object keys excluded) is "burner".  Inputs that
 * could create a burner are skipped by the targets that run frames: its
 * tick busy-waits up to 1 s (work_us <= 1e6) by design, so a handful of them
 * makes every input a libFuzzer timeout without exercising anything that a
 * counter or mover does not.  The check is on decoded JSON, so an escaped
 * spelling ("\u0062urner") is caught as well.
 */
static inline bool tkd_fuzz_mentions_burner(const json_t *v)
{
    if (json_is_string(v))
        return strcmp(json_string_value(v), "burner") == 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (tkd_fuzz_mentions_burner(json_array_get(v, i)))
                return true;
        return false;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            if (tkd_fuzz_mentions_burner(x))
                return true;
        }
    }
    return false;
}

#endif
