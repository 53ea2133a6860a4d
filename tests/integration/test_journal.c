/*
 * test_journal.c - suite "journal": world.hash, exact snapshot restores, the
 * command journal (recovery after SIGKILL, torn and corrupt records, the
 * rewrite at each snapshot), tickd --replay and the determinism of a mixed
 * world replayed from its journal.
 */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *hash_of(tkit_conn *c)
{
    json_t *r = tkit_ok(c, "world.hash", NULL);
    const char *h = tkit_gets(r, "hash");
    ck_assert_uint_eq(strlen(h), 32);
    return h;
}

/* Frames run only when asked: the daemons of this suite run at a tick rate
 * of one frame per 1000 s, so the world stands between requests, and
 * engine.sprint runs exactly `n` frames (fixed dt). */
static const char *const frozen[] = {"engine.tick_rate=0.001", NULL};

static void step(tkit_conn *c, int n)
{
    json_t *r = tkit_ok(c, "engine.sprint", "{\"frames\":%d}", n);
    ck_assert_int_eq(tkit_geti(r, "frames"), n);
}

/*
 * A world with a bit of everything the hash and a snapshot must carry:
 * levels, movers with velocities, interval counters with life spans (one
 * paused), a spawner part-way through its spawns, a follower, protocol
 * timers with actions and equal expiries set out of slot order, cleared
 * timers and removed tickables (free slots), tickables of two classes.
 */
static void build_mixed(tkit_conn *c)
{
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"mover\",\"count\":5,\"level\":\"arena\",\"props\":{\"vx\":1.5,\"vy\":-0.25}}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"counter\",\"count\":3,\"life_span\":0.37,\"tick\":{\"interval\":0.03}}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"spawner\",\"props\":{\"spawn\":{\"class\":\"counter\",\"life_span\":0.2},"
            "\"every\":2,\"max_total\":4}}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"follower\",\"props\":{\"target\":1}}");
    json_t *t[6];
    for (int i = 0; i < 6; i++)
        t[i] = tkit_ok(c, "timer.set",
                       "{\"rate\":0.05,\"loop\":%s,\"action\":{\"method\":\"entity.set_props\","
                       "\"params\":{\"id\":2,\"props\":{\"x\":%d}}}}",
                       i % 2 ? "true" : "false", i);
    tkit_ok(c, "timer.clear", "{\"handle\":%lld}", tkit_geti(t[1], "handle"));
    tkit_ok(c, "timer.clear", "{\"handle\":%lld}", tkit_geti(t[4], "handle"));
    /* Two timers with equal expiries, in the slots just freed (LIFO): set
     * in the order slot 4, slot 1. */
    tkit_ok(c, "timer.set",
            "{\"rate\":0.07,\"action\":{\"method\":\"entity.spawn\",\"params\":{\"class\":\"counter\"}}}");
    tkit_ok(c, "timer.set",
            "{\"rate\":0.07,\"action\":{\"method\":\"entity.destroy\",\"params\":{\"ids\":[3]}}}");
    json_t *k1 = tkit_ok(c, "tickable.add", "{\"class\":\"counter\",\"tick_type\":\"always\"}");
    tkit_ok(c, "tickable.add", "{\"class\":\"mover\",\"tick_type\":\"always\",\"props\":{\"vz\":2}}");
    tkit_ok(c, "tickable.remove", "{\"id\":%lld}", tkit_geti(k1, "id"));
    step(c, 3);
    /* A life span paused part-way. */
    json_t *e = tkit_ok(c, "entity.get", "{\"id\":7}");
    json_t *lt = tkit_ok(c, "timer.list", NULL);
    for (size_t i = 0; i < json_array_size(tkit_get(lt, "timers")); i++) {
        json_t *tm = json_array_get(tkit_get(lt, "timers"), i);
        if (tkit_find(tm, "owner") && tkit_geti(tm, "owner") == 7)
            tkit_ok(c, "timer.pause", "{\"handle\":%lld}", tkit_geti(tm, "handle"));
    }
    ck_assert(tkit_getd(e, "life_span") > 0);
}

/*
 * world.hash and world.save at one frame boundary (a batch), then frames
 * until the save child is reaped (the world runs frames only when asked):
 * the hash of the world the file holds; *frames gets the frames run.
 */
static const char *hash_and_save(tkit_conn *c, int *frames)
{
    tkit_sendf(c, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.hash\"},"
                  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"world.save\"}]\n");
    *frames = 0;
    double deadline = tkit_now() + tkit_scale(20);
    while (tkit_stashed(c) == 0) {
        ck_assert_msg(tkit_now() < deadline, "world.save did not answer");
        step(c, 1);
        (*frames)++;
    }
    json_t *r = tkit_recv(c);
    ck_assert(json_is_array(r));
    json_t *h = NULL;
    for (size_t i = 0; i < json_array_size(r); i++) {
        json_t *m = json_array_get(r, i);
        tkit_assert_result(m);
        if (tkit_geti(m, "id") == 1) {
            h = tkit_get(m, "result.hash");
        }
    }
    ck_assert_ptr_nonnull(h);
    return json_string_value(h);
}

/* world.hash is layout-independent: the world restored from its snapshot
 * hashes the same, and goes on exactly as the saved one did (the same
 * hashes after the same frames, new handles and ids included). */
START_TEST(journal_hash_snapshot_roundtrip)
{
    tkit_opts oa = {.config = frozen};
    tkit_daemon *a = tkit_start(&oa);
    tkit_conn *ca = tkit_connect(a);
    build_mixed(ca);
    ck_assert_str_eq(hash_of(ca), hash_of(ca)); /* stable while nothing runs */
    int ran = 0;
    const char *h0 = hash_and_save(ca, &ran);
    (void)h0; /* B runs a frame at start: compared after the same frames below */
    const char *text = tkit_slurp(tkit_path(a, "snapshot.json"));
    ck_assert_ptr_nonnull(text);
    /* Another daemon, started from that file. */
    const char *cfg[] = {"snapshot.load_on_start=true", "engine.tick_rate=0.001", NULL};
    const char *files[] = {"snapshot.json", text, NULL};
    tkit_opts ob = {.config = cfg, .files = files};
    tkit_daemon *b = tkit_start(&ob);
    tkit_conn *cb = tkit_connect(b);
    /* Its first frame ran at start, as the first of `ran` did in the first. */
    ck_assert_int_ge(ran, 1);
    if (ran > 1)
        step(cb, ran - 1);
    if (strcmp(hash_of(cb), hash_of(ca)))
        printf("a: %s\nb: %s\n", tkit_dump(tkit_ok(ca, "world.hash", NULL)),
               tkit_dump(tkit_ok(cb, "world.hash", NULL))), fflush(stdout);
    ck_assert_str_eq(hash_of(cb), hash_of(ca));
    /* The same requests and frames: the same worlds. */
    for (int round = 0; round < 6; round++) {
        json_t *ta = tkit_ok(ca, "timer.set", "{\"rate\":0.02}");
        json_t *tb = tkit_ok(cb, "timer.set", "{\"rate\":0.02}");
        ck_assert_int_eq(tkit_geti(ta, "handle"), tkit_geti(tb, "handle"));
        json_t *ka = tkit_ok(ca, "tickable.add", "{\"class\":\"counter\"}");
        json_t *kb = tkit_ok(cb, "tickable.add", "{\"class\":\"counter\"}");
        ck_assert_int_eq(tkit_geti(ka, "id"), tkit_geti(kb, "id"));
        step(ca, 4);
        step(cb, 4);
        ck_assert_str_eq(hash_of(ca), hash_of(cb));
    }
    tkit_finish(b);
    tkit_finish(a);
}
END_TEST


/* ---- the journal ----------------------------------------------------------------------- */

/* A daemon whose snapshot and journal live in `dir` (shared by restarts),
 * at 200 Hz with a fixed dt, recording the world hash after every frame. */
static tkit_daemon *start_journaled(const char *dir, const char *fsync, const char *const *extra,
                                    bool wait)
{
    char jp[600], sp[600], fs[64];
    snprintf(jp, sizeof jp, "journal.path=%s/journal", dir);
    snprintf(sp, sizeof sp, "snapshot.path=%s/snapshot.json", dir);
    snprintf(fs, sizeof fs, "journal.fsync=%s", fsync);
    const char **cfg = calloc(24, sizeof *cfg);
    size_t n = 0;
    cfg[n++] = strdup(jp);
    cfg[n++] = strdup(sp);
    cfg[n++] = strdup(fs);
    cfg[n++] = "journal.hash_every=1";
    cfg[n++] = "engine.tick_rate=200";
    for (size_t i = 0; extra && extra[i] && n < 22; i++)
        cfg[n++] = extra[i];
    tkit_opts o = {.config = cfg, .no_wait = !wait};
    tkit_daemon *d = tkit_start(&o); /* the config is written: cfg no longer needed */
    for (size_t i = 0; i < 3; i++)
        free((char *)cfg[i]);
    free(cfg);
    return d;
}

/* tickd --replay JOURNAL [more args]: its exit status; *out its stdout. */
static int run_replay(const char *journal, const char *const *more, const char **out,
                      const char **err)
{
    const char *args[16] = {"--config", "@CONFIG@", "--replay", journal};
    size_t n = 4;
    for (size_t i = 0; more && more[i]; i++)
        args[n++] = more[i];
    args[n] = NULL;
    tkit_opts o = {.args = args, .no_wait = true};
    tkit_daemon *r = tkit_start(&o);
    int st = tkit_wait_exit(r, 60);
    ck_assert_msg(st != -1, "tickd --replay did not end");
    if (out)
        *out = tkit_stdout(r);
    if (err)
        *err = tkit_stderr(r);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

/* The number after "needle" in text, or -1. */
static long long number_after(const char *text, const char *needle)
{
    const char *p = text ? strstr(text, needle) : NULL;
    return p ? atoll(p + strlen(needle)) : -1;
}

/* Every acknowledged change is there after a SIGKILL, and the world the
 * recovery built is the one a clean replay of the journal gives: the
 * recovered daemon records a hash after every frame and tickd --replay
 * checks them all. */
START_TEST(journal_sigkill_recovery)
{
    const char *dir = tkit_tmpdir();
    long long acked[64];
    int n = 0;
    for (int round = 0; round < 3; round++) {
        tkit_daemon *d = start_journaled(dir, "always", NULL, true);
        tkit_conn *c = tkit_connect(d);
        /* What the previous rounds acknowledged is all there. */
        for (int i = 0; i < n; i++) {
            json_t *e = tkit_ok(c, "entity.get", "{\"id\":%lld}", acked[i]);
            ck_assert_int_eq((long long)tkit_getd(e, "props.vx"), i);
        }
        for (int k = 0; k < 8; k++, n++) {
            json_t *r = tkit_ok(c, "entity.spawn",
                                "{\"class\":\"mover\",\"props\":{\"vx\":%d},\"life_span\":%d}", n,
                                100 + n);
            acked[n] = tkit_geti(r, "ids[0]");
        }
        tkit_ok(c, "timer.set", "{\"rate\":0.02,\"loop\":true,\"action\":{\"method\":"
                                "\"entity.set_props\",\"params\":{\"id\":%lld,\"props\":{\"x\":0}}}}",
                acked[0]);
        tkit_wait_frames(c, 5);
        tkit_stop(d, SIGKILL);
        tkit_free(d);
    }
    /* The last recovery, then a clean end. */
    tkit_daemon *d = start_journaled(dir, "always", NULL, true);
    tkit_conn *c = tkit_connect(d);
    for (int i = 0; i < n; i++)
        ck_assert_int_eq((long long)tkit_getd(tkit_ok(c, "entity.get", "{\"id\":%lld}", acked[i]),
                                              "props.vx"),
                         i);
    tkit_wait_frames(c, 3);
    ck_assert_ptr_nonnull(strstr(tkit_stderr(d), "ended without one (a crash)"));
    tkit_finish(d);
    char jp[600];
    snprintf(jp, sizeof jp, "%s/journal", dir);
    const char *out = NULL, *err = NULL;
    int rc = run_replay(jp, NULL, &out, &err);
    ck_assert_msg(rc == 0, "replay failed (%d): %s %s", rc, out, err);
    long long frames = number_after(out, "requests, ");
    (void)frames;
    ck_assert_int_gt(number_after(out, "slices, "), 0); /* hashes checked */
    ck_assert_ptr_nonnull(strstr(out, "a graceful shutdown"));
}
END_TEST

/* The last record cut short (a crash mid-write) is dropped with a warning
 * naming its offset; a bad record before the end refuses the start,
 * naming file and offset, unless --journal-truncate-corrupt. */
START_TEST(journal_torn_tail_and_corruption)
{
    const char *dir = tkit_tmpdir();
    tkit_daemon *d = start_journaled(dir, "everysec", NULL, true);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":3}");
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    tkit_wait_frames(c, 3);
    tkit_finish(d);
    char jp[600];
    snprintf(jp, sizeof jp, "%s/journal", dir);
    struct stat st;
    ck_assert_int_eq(stat(jp, &st), 0);
    off_t size = st.st_size;
    /* A torn tail: half a record. */
    FILE *f = fopen(jp, "ab");
    ck_assert_ptr_nonnull(f);
    fwrite("\x40\x00\x00\x00\x12\x34", 1, 6, f);
    fclose(f);
    d = start_journaled(dir, "everysec", NULL, true);
    c = tkit_connect(d);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "level.list", NULL), "levels[1].entities"), 0);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 3);
    char needle[120];
    snprintf(needle, sizeof needle, "the last record, at offset %lld, is incomplete", (long long)size);
    ck_assert_msg(strstr(tkit_stderr(d), needle), "no warning naming offset %lld: %s",
                  (long long)size, tkit_stderr(d));
    tkit_finish(d);
    /* A flipped byte in the middle: refused, naming the file and offset. */
    ck_assert_int_eq(stat(jp, &st), 0);
    FILE *g = fopen(jp, "r+b");
    ck_assert_ptr_nonnull(g);
    long at = (long)(st.st_size / 2);
    fseek(g, at, SEEK_SET);
    int ch = fgetc(g);
    fseek(g, at, SEEK_SET);
    fputc(ch ^ 0x5a, g);
    fclose(g);
    d = start_journaled(dir, "everysec", NULL, false);
    int rc = tkit_wait_exit(d, 20);
    ck_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    ck_assert_msg(strstr(tkit_stderr(d), jp) && strstr(tkit_stderr(d), "offset ") &&
                      strstr(tkit_stderr(d), "corrupt before its end"),
                  "%s", tkit_stderr(d));
    tkit_free(d);
    /* --journal-truncate-corrupt: cut there, start, say so. */
    char jpa[620], spa[620];
    snprintf(jpa, sizeof jpa, "journal.path=%s", jp);
    snprintf(spa, sizeof spa, "snapshot.path=%s/snapshot.json", dir);
    const char *cfg[] = {jpa, spa, "engine.tick_rate=200", NULL};
    const char *args[] = {"--config", "@CONFIG@", "--journal-truncate-corrupt", NULL};
    tkit_opts o = {.config = cfg, .args = args};
    d = tkit_start(&o);
    ck_assert_ptr_nonnull(strstr(tkit_stderr(d), "--journal-truncate-corrupt"));
    tkit_finish(d);
}
END_TEST

/* Each snapshot of the base starts a new journal; a crash between the
 * snapshot's rename and the journal's leaves the new pair, completed at
 * the next start; a crash before the snapshot's rename, the old pair. */
START_TEST(journal_rewrite_pairs)
{
    const char *dir = tkit_tmpdir();
    char jp[600], np[620], sp[600], cmd[4000];
    snprintf(jp, sizeof jp, "%s/journal", dir);
    snprintf(np, sizeof np, "%s/journal.new", dir);
    snprintf(sp, sizeof sp, "%s/snapshot.json", dir);
    tkit_daemon *d = start_journaled(dir, "always", NULL, true);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":5,\"props\":{\"vx\":1}}");
    tkit_wait_frames(c, 20);
    tkit_ok(c, "world.save", NULL); /* the first snapshot: the base of a new journal */
    struct stat st;
    ck_assert_int_eq(stat(sp, &st), 0);
    ck_assert_int_ne(stat(np, &st), 0); /* switched */
    /* Keep this pair, then another snapshot and more changes. */
    snprintf(cmd, sizeof cmd, "cp %s %s.old && cp %s %s.old", jp, jp, sp, sp);
    ck_assert_int_eq(system(cmd), 0);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":2}");
    tkit_wait_frames(c, 5);
    tkit_ok(c, "world.save", NULL);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":4}"); /* 12 entities */
    tkit_wait_frames(c, 5);
    tkit_stop(d, SIGKILL);
    tkit_free(d);
    /* The crash between the two renames: the new snapshot, the old journal
     * and the new one as .new. */
    snprintf(cmd, sizeof cmd, "mv %s %s && cp %s.old %s", jp, np, jp, jp);
    ck_assert_int_eq(system(cmd), 0);
    /* tickd --replay of the old journal names the pair; of the new one, replays it. */
    const char *out = NULL, *err = NULL;
    ck_assert_int_eq(run_replay(jp, NULL, &out, &err), 1);
    ck_assert_msg(strstr(err, "journal.new continues that snapshot"), "%s", err);
    ck_assert_msg(run_replay(np, NULL, &out, &err) == 0, "%s\n%s", out, err);
    d = start_journaled(dir, "always", NULL, true);
    c = tkit_connect(d);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 11);
    ck_assert_ptr_nonnull(strstr(tkit_stderr(d), "a snapshot's rewrite that a crash interrupted"));
    ck_assert_int_ne(stat(np, &st), 0);
    tkit_stop(d, SIGKILL);
    tkit_free(d);
    /* The crash before the snapshot's rename: the old pair (which got every
     * record) and a stray new journal, removed. */
    snprintf(cmd, sizeof cmd, "cp %s %s && cp %s.old %s && cp %s.old %s", jp, np, sp, sp, jp, jp);
    ck_assert_int_eq(system(cmd), 0);
    d = start_journaled(dir, "always", NULL, true);
    c = tkit_connect(d);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 5);
    ck_assert_ptr_nonnull(strstr(tkit_stderr(d), "did not complete"));
    ck_assert_int_ne(stat(np, &st), 0);
    tkit_finish(d);
    /* A journal whose snapshot is another: refused, naming both. */
    snprintf(cmd, sizeof cmd, "cp %s.old %s && cp %s.old %s", jp, jp, sp, sp);
    ck_assert_int_eq(system(cmd), 0);
    d = start_journaled(dir, "always", NULL, true);
    c = tkit_connect(d);
    tkit_ok(c, "world.save", NULL);
    tkit_finish(d);
    snprintf(cmd, sizeof cmd, "cp %s.old %s", jp, jp);
    ck_assert_int_eq(system(cmd), 0);
    d = start_journaled(dir, "always", NULL, false);
    int rc = tkit_wait_exit(d, 20);
    ck_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    ck_assert_msg(strstr(tkit_stderr(d), "holds another id"), "%s", tkit_stderr(d));
    tkit_free(d);
}
END_TEST


/*
 * Determinism: a mixed world run live, journaled, then replayed by tickd
 * --replay, which checks the world hash the live run recorded after every
 * frame (every 2nd with `sliced`).  Intervals, prerequisites (and a
 * follower's), spawners (one copying itself), timers whose actions spawn,
 * change ticks and destroy, tickables, global and custom dilation,
 * pause and world.step, a level removed with what it holds, requests done
 * in slices over several frames (a spawn and a destroy of 8,200), and with
 * `snapshots`, world.save (each a new journal on a snapshot of the live
 * world) and world.load in the middle.
 */
static void mixed_run(const char *dir, const char *const *extra, bool snapshots)
{
    tkit_daemon *d = start_journaled(dir, "everysec", extra, true);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    tkit_ok(c, "level.add", "{\"name\":\"doomed\"}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"mover\",\"count\":40,\"level\":\"arena\",\"props\":{\"vx\":1.25,\"vy\":-3}}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"counter\",\"count\":10,\"prerequisites\":[1],"
            "\"tick\":{\"interval\":0.03,\"group\":\"post_physics\"}}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"tick\":{\"high_priority\":true,"
                               "\"interval\":0.011,\"even_when_paused\":true}}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"follower\",\"props\":{\"target\":1}}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"spawner\",\"level\":\"doomed\",\"props\":{\"spawn\":{\"class\":"
            "\"counter\",\"level\":\"doomed\",\"life_span\":0.1},\"every\":3,\"max_total\":6}}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"spawner\",\"props\":{\"spawn\":\"self\",\"every\":4,"
                               "\"max_total\":1},\"life_span\":0.3}");
    tkit_ok(c, "entity.spawn",
            "{\"class\":\"mover\",\"time_dilation\":0.5,\"props\":{\"vz\":2},"
            "\"components\":[{\"class\":\"counter\",\"tick\":{\"interval\":0.02}}]}");
    tkit_ok(c, "timer.set", "{\"rate\":0.05,\"loop\":true,\"action\":{\"method\":\"entity.spawn\","
                            "\"params\":{\"class\":\"counter\",\"life_span\":0.07}}}");
    tkit_ok(c, "timer.set", "{\"rate\":0.2,\"action\":{\"method\":\"tick.set\",\"params\":{"
                            "\"id\":2,\"interval\":0.02}}}");
    tkit_ok(c, "timer.set", "{\"rate\":0.05,\"action\":{\"method\":\"entity.destroy\","
                            "\"params\":{\"ids\":[3]}}}");
    tkit_ok(c, "tickable.add", "{\"class\":\"counter\",\"tick_type\":\"always\"}");
    tkit_ok(c, "tickable.add",
            "{\"class\":\"mover\",\"tick_type\":\"always\",\"when_paused\":true,\"props\":{\"vz\":1}}");
    tkit_ok(c, "world.set_time_dilation", "{\"value\":1.5}");
    tkit_wait_frames(c, 20);
    if (snapshots)
        tkit_ok(c, "world.save", NULL);
    /* In slices: its answer comes after several frames. */
    json_t *big = tkit_ok(c, "entity.spawn",
                          "{\"class\":\"counter\",\"count\":8200,\"level\":\"arena\"}");
    ck_assert_int_eq(tkit_geti(big, "count"), 8200);
    tkit_ok(c, "tick.add_prerequisite", "{\"id\":5,\"prerequisite\":{\"id\":2}}");
    tkit_ok(c, "tick.set", "{\"id\":4,\"group\":\"during_physics\",\"end_group\":\"post_physics\"}");
    tkit_wait_frames(c, 10);
    tkit_ok(c, "world.pause", NULL);
    tkit_wait_frames(c, 3);
    tkit_ok(c, "world.step", "{\"frames\":4}");
    tkit_ok(c, "timer.set", "{\"rate\":0.01,\"action\":{\"method\":\"world.unpause\"}}");
    tkit_ok(c, "world.step", "{\"frames\":3}");
    tkit_ok(c, "level.remove", "{\"name\":\"doomed\"}");
    tkit_ok(c, "entity.destroy", "{\"first\":%lld,\"count\":8200}", tkit_geti(big, "first"));
    tkit_ok(c, "world.set_time_dilation", "{\"value\":0.75}");
    if (snapshots) {
        tkit_ok(c, "world.save", "{\"path\":\"other.json\"}");
        tkit_wait_frames(c, 5);
        tkit_ok(c, "world.load", "{\"path\":\"other.json\"}");
        tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":3,\"props\":{\"vx\":7}}");
    }
    tkit_wait_frames(c, 15);
    tkit_finish(d);
}

static void replay_checks_all(const char *dir, int min_hashes, const char *const *more)
{
    char jp[600];
    snprintf(jp, sizeof jp, "%s/journal", dir);
    const char *out = NULL, *err = NULL;
    int rc = run_replay(jp, more, &out, &err);
    ck_assert_msg(rc == 0, "the replay differs (%d):\n%s\n%s", rc, out, err);
    long long hashes = number_after(out, "slices, ");
    ck_assert_msg(hashes >= min_hashes, "only %lld hashes checked:\n%s", hashes, out);
}

/* A mixed run journaled (with fixed dt `fixed_dt`, or the real clock) on
 * `live_threads` tick threads and replayed on `replay_threads`: every
 * recorded hash equal, at least `min_hashes` of them.  With threads, every
 * run of parallel work is split (split_min_us 0.001), so that the movers and
 * counters do tick on the workers. */
static void determinism_threads(const char *fixed_dt, bool snapshots, long long min_hashes,
                                int live_threads, int replay_threads)
{
    const char *dir = tkit_tmpdir();
    char sd[620], lt[64], rt[64];
    snprintf(sd, sizeof sd, "snapshot.dir=%s", dir);
    snprintf(lt, sizeof lt, "engine.threads=%d", live_threads);
    snprintf(rt, sizeof rt, "engine.threads=%d", replay_threads);
    const char *extra[] = {fixed_dt, sd, lt, "engine.split_min_us=0.001", NULL};
    mixed_run(dir, extra, snapshots);
    const char *more[] = {"--set", rt, "--set", "engine.split_min_us=0.001", NULL};
    replay_checks_all(dir, min_hashes, more);
}

static void determinism(const char *fixed_dt, bool snapshots, long long min_hashes)
{
    determinism_threads(fixed_dt, snapshots, min_hashes, 1, 1);
}

START_TEST(journal_determinism_mixed) { determinism("engine.fixed_dt=0.005", false, 40); }
END_TEST

/* The same world on four tick threads, replayed on one, and on one,
 * replayed on three: the worker pool changes no hash. */
START_TEST(journal_determinism_threads)
{
    determinism_threads("engine.fixed_dt=0.005", false, 40, 4, 1);
    determinism_threads("engine.fixed_dt=0.005", true, 15, 1, 3);
}
END_TEST

/* The same with snapshots in the middle: the journal restarts on a
 * snapshot of the live world, whose replay must give the hashes the live
 * world recorded after it. */
START_TEST(journal_determinism_snapshots) { determinism("engine.fixed_dt=0.005", true, 15); }
END_TEST

/* Real time (no fixed dt): every frame's dt is journaled, so the replay
 * sees the same clock. */
START_TEST(journal_determinism_real_dt) { determinism("engine.fixed_dt=0", false, 40); }
END_TEST

/* ---- tickd --replay ----------------------------------------------------------------------- */

/* The journal's records, as journal.h lays them out (read here on its own:
 * the tests know the format, not the daemon's code). */
typedef struct jrec {
    long off;
    char type;
    unsigned len;
    const unsigned char *p;
} jrec;

static size_t read_records(const char *path, unsigned char **buf, jrec *recs, size_t cap)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(*buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    size_t k = 0;
    for (long o = 0; o + 9 <= n && k < cap; k++) {
        unsigned len = (*buf)[o] | (*buf)[o + 1] << 8 | (*buf)[o + 2] << 16 | (unsigned)(*buf)[o + 3] << 24;
        recs[k] = (jrec){o, (char)(*buf)[o + 8], len, *buf + o + 9};
        o += 9 + (long)len;
    }
    return k;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* CRC-32C (Castagnoli), bit by bit. */
static uint32_t crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = ~0u;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

/* A finished journal of a small world with a hash after every frame. */
static const char *small_journal(const char *dir)
{
    tkit_daemon *d = start_journaled(dir, "no", NULL, true);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":4,\"props\":{\"vx\":2}}");
    tkit_ok(c, "timer.set", "{\"rate\":0.03,\"loop\":true,\"action\":{\"method\":\"entity.spawn\","
                            "\"params\":{\"class\":\"counter\",\"life_span\":0.05}}}");
    tkit_wait_frames(c, 30);
    tkit_finish(d);
    static char jp[600];
    snprintf(jp, sizeof jp, "%s/journal", dir);
    return jp;
}

/* The recorded hash after `frames` frames completed, or NULL. */
static const char *recorded_hash(const char *jp, uint64_t frames)
{
    unsigned char *buf;
    static jrec recs[20000];
    size_t n = read_records(jp, &buf, recs, 20000);
    static char hex[33];
    for (size_t i = 0; i < n; i++) {
        if (recs[i].type == 'X' && le64(recs[i].p) == frames) {
            for (int k = 0; k < 16; k++)
                snprintf(hex + 2 * k, 3, "%02x", recs[i].p[8 + k]);
            free(buf);
            return hex;
        }
    }
    free(buf);
    return NULL;
}

/* The boundary the first entity.spawn of the journal ran at. */
static uint64_t spawn_boundary(const char *jp)
{
    unsigned char *buf;
    static jrec recs[20000];
    size_t n = read_records(jp, &buf, recs, 20000);
    uint64_t b = UINT64_MAX;
    for (size_t i = 0; i < n && b == UINT64_MAX; i++)
        if (recs[i].type == 'R' && !strcmp((const char *)recs[i].p + 8, "entity.spawn"))
            b = le64(recs[i].p);
    free(buf);
    ck_assert_uint_ne(b, UINT64_MAX);
    return b;
}

/* A replay checks the recorded hashes: one that differs ends it with
 * status 1, naming the frame; --until-frame stops there. */
START_TEST(journal_replay_checks_and_stops)
{
    const char *dir = tkit_tmpdir();
    const char *jp = small_journal(dir);
    const char *out = NULL, *err = NULL;
    ck_assert_int_eq(run_replay(jp, NULL, &out, &err), 0);
    /* Stop at frame 12: the world hash then is the one recorded there. */
    const char *until[] = {"--until-frame", "12", NULL};
    ck_assert_int_eq(run_replay(jp, until, &out, &err), 0);
    const char *h12 = recorded_hash(jp, 12);
    ck_assert_ptr_nonnull(h12);
    char want[80];
    snprintf(want, sizeof want, "frame 12: world hash %s", h12);
    ck_assert_msg(strstr(out, want), "%s (want %s)", out, want);
    /* A recorded hash changed (its checksum made to match): found. */
    unsigned char *buf;
    static jrec recs[20000];
    size_t n = read_records(jp, &buf, recs, 20000);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (recs[i].type == 'X' && le64(recs[i].p) == 17)
            k = i;
    ck_assert_uint_gt(k, 0);
    unsigned char *r = buf + recs[k].off;
    r[9 + 8] ^= 0xff;
    uint32_t c = crc32c(r + 8, recs[k].len + 1);
    for (int b = 0; b < 4; b++)
        r[4 + b] = (unsigned char)(c >> (8 * b));
    char bad[700];
    snprintf(bad, sizeof bad, "%s/bad.journal", dir);
    FILE *f = fopen(bad, "wb");
    struct stat st;
    ck_assert_int_eq(stat(jp, &st), 0);
    fwrite(buf, 1, (size_t)st.st_size, f);
    fclose(f);
    free(buf);
    ck_assert_int_eq(run_replay(bad, NULL, &out, &err), 1);
    ck_assert_msg(strstr(err, "frame 17: the world hash is"), "%s", err);
    /* A journal that is not one: refused, naming it. */
    char junk[700];
    snprintf(junk, sizeof junk, "%s/junk", dir);
    f = fopen(junk, "wb");
    fputs("not a journal at all", f);
    fclose(f);
    ck_assert_int_eq(run_replay(junk, NULL, &out, &err), 1);
    ck_assert_msg(strstr(err, junk), "%s", err);
}
END_TEST

/* --step --socket: the world as it was at the journal's start, served;
 * world.step replays recorded frames (world.trace with it traces them),
 * methods that change the world are refused. */
START_TEST(journal_replay_serves_the_socket)
{
    const char *dir = tkit_tmpdir();
    const char *jp = small_journal(dir);
    const char *args[] = {"--config", "@CONFIG@", "--replay", jp, "--step", "--socket", "@SOCK@",
                          NULL};
    tkit_opts o = {.args = args};
    tkit_daemon *r = tkit_start(&o);
    tkit_conn *c = tkit_connect(r);
    ck_assert_int_eq(tkit_frame(c), 0);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 0);
    json_t *st = tkit_ok(c, "world.step", "{\"frames\":3}");
    ck_assert_int_eq(tkit_geti(st, "frame"), 3);
    ck_assert_str_eq(hash_of(c), recorded_hash(jp, 3));
    /* The frame after the one the spawn was recorded before: the movers are
     * there and have moved. */
    uint64_t spawned_at = spawn_boundary(jp);
    int f = 3;
    if (spawned_at + 2 > 3) {
        f = (int)spawned_at + 2;
        tkit_ok(c, "world.step", "{\"frames\":%d}", f - 3);
    }
    ck_assert_str_eq(hash_of(c), recorded_hash(jp, (uint64_t)f));
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 4);
    ck_assert(tkit_getd(tkit_ok(c, "entity.get", "{\"id\":1}"), "props.x") > 0);
    json_t *tr = tkit_step_traced(c, 2);
    ck_assert_int_eq(json_array_size(tr), 2);
    ck_assert_str_eq(hash_of(c), recorded_hash(jp, (uint64_t)f + 2));
    tkit_err(c, TKIT_INVALID_STATE, "replays a journal", "entity.spawn", "{\"class\":\"counter\"}");
    tkit_finish(r);
}
END_TEST


/* ---- crashes under load -------------------------------------------------------------------------- */

/*
 * A client that streams numbered mutations (entity.spawn of a mover whose vx
 * is the number), pipelined 64 deep, reading the answers as they come; each
 * answer with a result is an acknowledged mutation: (number, entity id).
 */
typedef struct streamer {
    tkit_conn *c;
    long long next;          /* the next number to send              */
    long long inflight;
    char buf[1 << 16];
    size_t len;
    long long *ids;          /* by number: the id acknowledged, or 0 */
    size_t cap;
    long long acked;
} streamer;

static void stream_send(streamer *st)
{
    while (st->inflight < 64) {
        char line[160];
        int n = snprintf(line, sizeof line,
                         "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"entity.spawn\","
                         "\"params\":{\"class\":\"mover\",\"props\":{\"vx\":%lld}}}\n",
                         st->next, st->next);
        if (tkit_try_send(st->c, line, (size_t)n) != 0)
            return;
        st->next++;
        st->inflight++;
    }
}

/* Read what arrived (up to `ms`); false at the end of the stream. */
static bool stream_read(streamer *st, int ms)
{
    struct pollfd p = {tkit_fd(st->c), POLLIN, 0};
    if (poll(&p, 1, ms) <= 0)
        return true;
    ssize_t n = read(p.fd, st->buf + st->len, sizeof st->buf - st->len);
    if (n <= 0)
        return false;
    st->len += (size_t)n;
    char *start = st->buf, *nl;
    while ((nl = memchr(start, '\n', st->len - (size_t)(start - st->buf)))) {
        json_t *j = json_loadb(start, (size_t)(nl - start), 0, NULL);
        json_t *id = json_object_get(j, "id");
        json_t *first = json_object_get(json_object_get(j, "result"), "ids");
        if (json_is_integer(id)) {
            st->inflight--;
            long long k = json_integer_value(id);
            if (first && k >= 0 && (size_t)k < st->cap) {
                st->ids[k] = json_integer_value(json_array_get(first, 0));
                st->acked++;
            }
        }
        json_decref(j);
        start = nl + 1;
    }
    st->len -= (size_t)(start - st->buf);
    memmove(st->buf, start, st->len);
    return true;
}

static unsigned g_seed;

static double rnd(void) { return (double)rand_r(&g_seed) / RAND_MAX; }

/* The world hash the recovery logged ("world hash H at frame F"). */
static const char *recovery_hash(tkit_daemon *d)
{
    const char *p = strstr(tkit_stderr(d), "; world hash ");
    static char h[33];
    if (!p)
        return NULL;
    snprintf(h, sizeof h, "%.32s", p + 13);
    return h;
}

/*
 * `kills` times: stream mutations under load (2,000 movers and a timer
 * spawning short-lived counters), SIGKILL at a random moment, replay the
 * journal as the crash left it (tickd --replay: every recorded hash
 * checked), restart: the recovery's world hash is the replay's, and every
 * acknowledged mutation is there (always, everysec and no alike: SIGKILL
 * keeps the page cache; a power loss would take everysec's last second).
 */
static void crash_soak(const char *fsync, int kills)
{
    const char *dir = tkit_tmpdir();
    char sd[620], jp[600];
    snprintf(sd, sizeof sd, "snapshot.dir=%s", dir);
    snprintf(jp, sizeof jp, "%s/journal", dir);
    const char *extra[] = {sd, "snapshot.autosave_s=0.7", "journal.hash_every=10", NULL};
    streamer st = {0};
    st.cap = 1 << 22;
    st.ids = calloc(st.cap, sizeof *st.ids);
    g_seed = (unsigned)time(NULL);
    long long checked = 0;
    for (int round = 0; round <= kills; round++) {
        tkit_daemon *d = start_journaled(dir, fsync, extra, true);
        if (round > 0)
            ck_assert_msg(recovery_hash(d), "no recovery line: %s", tkit_stderr(d));
        tkit_conn *c = tkit_connect(d);
        /* Every acknowledged mutation is there (ids live, numbers right for a
         * sample). */
        json_t *all = tkit_get(tkit_ok(c, "entity.list", "{\"class\":\"mover\",\"limit\":1000000}"),
                               "ids");
        size_t nl = json_array_size(all);
        long long *live = malloc((nl + 1) * sizeof *live);
        for (size_t i = 0; i < nl; i++)
            live[i] = json_integer_value(json_array_get(all, i));
        for (long long k = 0; k < st.next; k++) {
            if (!st.ids[k])
                continue;
            bool found = false;
            size_t lo = 0, hi = nl;
            while (lo < hi && !found) {
                size_t mid = (lo + hi) / 2;
                if (live[mid] == st.ids[k])
                    found = true;
                else if (live[mid] < st.ids[k])
                    lo = mid + 1;
                else
                    hi = mid;
            }
            ck_assert_msg(found, "round %d (%s): mutation %lld (entity %lld) was acknowledged and "
                                 "is lost",
                          round, fsync, k, st.ids[k]);
            checked++;
            if (rnd() < 0.01 || k == st.next - 1)
                ck_assert_int_eq((long long)tkit_getd(tkit_ok(c, "entity.get", "{\"id\":%lld}",
                                                              st.ids[k]),
                                                      "props.vx"),
                                 k);
        }
        free(live);
        if (round == kills) {
            tkit_finish(d);
            break;
        }
        if (round == 0) {
            tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":2000}");
            tkit_ok(c, "timer.set", "{\"rate\":0.01,\"loop\":true,\"action\":{\"method\":"
                                    "\"entity.spawn\",\"params\":{\"class\":\"counter\","
                                    "\"life_span\":0.05}}}");
        }
        /* A round lasts less than a save of a big world can take, so the
         * autosaves the kills interrupt may never complete, and the journal
         * (every round's frames, replayed by each restart) would grow
         * without bound: every fifth round saves first. */
        if (round % 5 == 4)
            tkit_ok(c, "world.save", NULL);
        /* Stream, and kill at a random moment while requests are in flight. */
        streamer s2 = st;
        s2.c = tkit_connect(d);
        s2.inflight = 0;
        s2.len = 0;
        double until = tkit_now() + 0.05 + 0.4 * rnd();
        while (tkit_now() < until) {
            stream_send(&s2);
            stream_read(&s2, 5);
        }
        tkit_signal(d, SIGKILL);
        while (stream_read(&s2, 200))
            if (s2.inflight <= 0)
                break;
        ck_assert_int_ne(tkit_wait_exit(d, 10), -1);
        st.next = s2.next;
        st.acked = s2.acked;
        tkit_free(d);
        /* The files as the crash left them, replayed offline. */
        const char *out = NULL, *err = NULL;
        int rc = run_replay(jp, NULL, &out, &err);
        if (rc != 0 && strstr(err, ".new continues that snapshot")) {
            /* Killed between a rewrite's snapshot and its journal's switch:
             * the pair is the snapshot and journal.new, as the replay says. */
            char jn[620];
            snprintf(jn, sizeof jn, "%s.new", jp);
            rc = run_replay(jn, NULL, &out, &err);
        }
        ck_assert_msg(rc == 0, "round %d: the replay differs (%d):\n%s\n%s", round, rc, out, err);
        const char *fh = strstr(out, "world hash ");
        ck_assert_ptr_nonnull(fh);
        char want[33];
        snprintf(want, sizeof want, "%.32s", fh + 11);
        /* The next round's recovery must build that world. */
        tkit_daemon *r = start_journaled(dir, fsync, extra, true);
        const char *rh = recovery_hash(r);
        ck_assert_msg(rh && !strcmp(rh, want), "round %d: recovered %s, replayed %s", round,
                      rh ? rh : "(none)", want);
        tkit_stop(r, SIGKILL); /* the next round starts it again (and recovers again) */
        tkit_free(r);
    }
    ck_assert_int_gt(checked, kills);
    if (getenv("CRASH_SOAK_KILLS")) {
        printf("crash-soak: fsync = %s: %d SIGKILLs under load, %lld mutations sent, %lld "
               "acknowledged, all present after every restart (%lld checks); each crash's "
               "journal replayed to the world its restart recovered\n",
               fsync, kills, st.next, st.acked, checked);
        fflush(stdout);
    }
    free(st.ids);
}

START_TEST(journal_crash_under_load)
{
    const char *k = getenv("CRASH_SOAK_KILLS");
    int kills = k ? atoi(k) : 3;
    const char *p = getenv("CRASH_SOAK_FSYNC");
    if (p) {
        crash_soak(p, kills);
        return;
    }
    crash_soak("always", kills);
    crash_soak("everysec", kills > 1 ? kills / 2 + 1 : 1);
}
END_TEST

static Suite *journal_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc = tcase_create("journal");
    const char *to = getenv("CRASH_SOAK_TIMEOUT");
    tcase_set_timeout(tc, to ? atof(to) : 120);
    tcase_add_test(tc, journal_hash_snapshot_roundtrip);
    tcase_add_test(tc, journal_sigkill_recovery);
    tcase_add_test(tc, journal_torn_tail_and_corruption);
    tcase_add_test(tc, journal_rewrite_pairs);
    tcase_add_test(tc, journal_determinism_mixed);
    tcase_add_test(tc, journal_determinism_snapshots);
    tcase_add_test(tc, journal_determinism_real_dt);
    tcase_add_test(tc, journal_determinism_threads);
    tcase_add_test(tc, journal_replay_checks_and_stops);
    tcase_add_test(tc, journal_replay_serves_the_socket);
    suite_add_tcase(s, tc);
    /* make crash-soak runs this case alone (CK_RUN_CASE=crash) with
     * CRASH_SOAK_KILLS, CRASH_SOAK_FSYNC and CRASH_SOAK_TIMEOUT. */
    TCase *tk = tcase_create("crash");
    tcase_set_timeout(tk, to ? atof(to) : 120);
    tcase_add_test(tk, journal_crash_under_load);
    suite_add_tcase(s, tk);
    return s;
}

int main(void) { return tkit_run(journal_suite); }
