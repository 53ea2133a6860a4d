/*
 * test_sim.c - the entity layer's dense storage (src/sim/store.c) through
 * the sim's API: destroys leave storage dense and survivors' states intact,
 * batch ticks give exactly what one-by-one ticks give, a class's batch gets
 * its run's own states, instances that move keep their timers, and the
 * compact header's links (tick slot, level index, 53-bit id) read back, and
 * the id table finds every entity's row as rows move.  Worlds
 * run unpaced with a fixed dt; nothing here depends on wall-clock time.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/sim/sim.h"
#include "../check_main.h"

#define DT (1.0 / 60.0)

static uint64_t rng(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD2Dull;
}

typedef struct world {
    tk_engine_t *e;
    tk_world_t *w;
    tks_sim *s;
} world;

static world world_new(void)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = DT;
    world w;
    ck_assert_int_eq(tk_engine_new(&d, &w.e), 0);
    w.w = tk_engine_world(w.e);
    w.s = tks_new(w.e, NULL);
    return w;
}

static void world_free(world *w)
{
    tks_free(w->s);
    tk_engine_free(w->e);
}

static void frames(world *w, int n)
{
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(tk_engine_frame(w->e), 0);
}

/* ---- props --------------------------------------------------------------------- */

#define KV(k, x) ((tks_prop_kv){(k), {.type = TKS_V_NUMBER, .num = (x)}})

typedef struct xyz {
    double v[3];
    int seen;
} xyz;

static void read_xyz(void *ud, const tks_prop_desc *d, const tks_value *v)
{
    xyz *p = ud;
    int i = !strcmp(d->name, "x") ? 0 : !strcmp(d->name, "y") ? 1 : !strcmp(d->name, "z") ? 2 : -1;
    if (i >= 0) {
        p->v[i] = v->num;
        p->seen++;
    }
}

/* x, y, z of entity `id`'s actor (comp -1) or component. */
static xyz pos_of(world *w, tks_id id, int comp)
{
    const tks_entity *e = tks_entity_get(w->s, id);
    ck_assert_msg(e != NULL, "entity %llu is gone", (unsigned long long)id);
    xyz p = {{0, 0, 0}, 0};
    tks_entity_props(w->s, e, comp, read_xyz, &p);
    ck_assert_int_eq(p.seen, 3);
    return p;
}

static void storage(world *w, const char *cls, tks_storage_info *out)
{
    const tks_class *c = tks_class_find(w->s, cls);
    ck_assert_ptr_nonnull(c);
    tks_class_storage(c, out);
}

/* ---- a mixed world --------------------------------------------------------------- */

/*
 * Spawn entity number k of a mixed workload: movers (some with a dilation,
 * some on an interval), counters, counters with a mover component, and
 * followers of an earlier mover.  `batch` is every function's tick.batch.
 */
static tks_id spawn_mixed(world *w, uint64_t k, bool batch, tks_id *movers, size_t n_movers)
{
    tks_spawn_req r;
    tks_spawn_req_init(&r);
    r.tick.batch = batch;
    tks_prop_kv kv[6] = {KV("x", (double)k),    KV("y", -(double)k),     KV("z", 0.25),
                         KV("vx", 1.0 + k % 7), KV("vy", 0.5 * (k % 3)), KV("vz", -1.0)};
    tks_component_req comp = {.cls = "mover", .props = kv, .n_props = 6};
    tk_tick_spec_default(&comp.tick);
    comp.tick.batch = batch;
    tks_prop_kv target;
    switch (k % 8) {
    case 0:
    case 1:
    case 2:
    case 5:
        r.cls = "mover";
        r.props = kv;
        r.n_props = 6;
        if (k % 16 == 5)
            r.dilation = 0.5;
        if (k % 32 == 2)
            r.tick.interval = 0.05;
        break;
    case 3:
        r.cls = "counter";
        break;
    case 4:
        r.cls = "counter";
        r.components = &comp;
        r.n_components = 1;
        break;
    default: {
        /* A follower of a live mover of the list (the same in both worlds). */
        tks_id t = 0;
        for (size_t i = 0; i < n_movers && !t; i++)
            if (tks_entity_get(w->s, movers[(k + i) % n_movers]))
                t = movers[(k + i) % n_movers];
        if (!t) {
            r.cls = "counter";
            break;
        }
        r.cls = "follower";
        target = KV("target", (double)t);
        r.props = &target;
        r.n_props = 1;
        break;
    }
    }
    tks_id id;
    char err[TKS_ERR_MAX];
    ck_assert_msg(tks_spawn(w->s, &r, &id, err) == 0, "spawn %llu: %s", (unsigned long long)k, err);
    return id;
}

/* Destroy about `frac` of the live entities of ids [1, n], chosen by seed. */
static void destroy_some(world *w, tks_id n, double frac, uint64_t seed)
{
    tks_id *ids = malloc(n * sizeof *ids);
    size_t m = 0;
    for (tks_id id = 1; id <= n; id++)
        if (tks_entity_get(w->s, id) && (double)(rng(&seed) % 1000) < frac * 1000)
            ids[m++] = id;
    size_t done;
    char err[TKS_ERR_MAX];
    ck_assert_int_eq(tks_destroy(w->s, ids, m, &done, err), 0);
    ck_assert_uint_eq(done, m);
    free(ids);
}

/* ---- destroys keep storage dense ---------------------------------------------------- */

START_TEST(sim_destroys_keep_storage_dense)
{
    world w = world_new();
    const uint64_t n = 6000;
    tks_id movers[64];
    size_t nm = 0;
    for (uint64_t k = 0; k < n; k++) {
        tks_id id = spawn_mixed(&w, k, true, movers, nm);
        if (k % 8 == 0 && nm < 64)
            movers[nm++] = id;
    }
    frames(&w, 3);
    destroy_some(&w, n, 0.5, 18);
    tks_storage_info si;
    storage(&w, "mover", &si);
    ck_assert_uint_gt(si.holes, 0);
    uint64_t live = si.live;

    /* What every survivor holds now (actors and components). */
    xyz *want = calloc(n + 1, sizeof *want);
    xyz *want_c = calloc(n + 1, sizeof *want_c);
    for (tks_id id = 1; id <= n; id++) {
        const tks_entity *e = tks_entity_get(w.s, id);
        if (!e)
            continue;
        if (!strcmp(tks_class_name(tks_entity_class(e)), "mover"))
            want[id] = pos_of(&w, id, -1);
        if (tks_entity_component_count(e))
            want_c[id] = pos_of(&w, id, 0);
    }
    /* Paused frames tick no mover, but the stores compact between them. */
    tk_world_set_paused(w.w, true);
    frames(&w, 3);
    storage(&w, "mover", &si);
    ck_assert_uint_eq(si.holes, 0);
    ck_assert_uint_eq(si.live, live);
    ck_assert_uint_ge(si.rows, si.live);
    storage(&w, "counter", &si);
    ck_assert_uint_eq(si.holes, 0);
    for (tks_id id = 1; id <= n; id++) {
        const tks_entity *e = tks_entity_get(w.s, id);
        if (!e)
            continue;
        if (want[id].seen) {
            xyz got = pos_of(&w, id, -1);
            ck_assert_msg(!memcmp(got.v, want[id].v, sizeof got.v),
                          "entity %llu moved from (%g %g %g) to (%g %g %g)", (unsigned long long)id,
                          want[id].v[0], want[id].v[1], want[id].v[2], got.v[0], got.v[1],
                          got.v[2]);
        }
        if (want_c[id].seen) {
            xyz got = pos_of(&w, id, 0);
            ck_assert(!memcmp(got.v, want_c[id].v, sizeof got.v));
        }
    }
    /* Destroying everything frees every chunk at once. */
    destroy_some(&w, n, 1.0, 1);
    storage(&w, "mover", &si);
    ck_assert_uint_eq(si.live, 0);
    ck_assert_uint_eq(si.chunks, 0);
    ck_assert_uint_eq(tks_entity_count(w.s), 0);
    free(want);
    free(want_c);
    world_free(&w);
}
END_TEST

/* ---- batch == one by one -------------------------------------------------------------- */

static void same_movers(world *a, world *b, tks_id n, const char *when)
{
    for (tks_id id = 1; id <= n; id++) {
        const tks_entity *ea = tks_entity_get(a->s, id), *eb = tks_entity_get(b->s, id);
        ck_assert_msg(!ea == !eb, "%s: entity %llu lives in one world only", when,
                      (unsigned long long)id);
        if (!ea)
            continue;
        for (int comp = -1; comp < (int)tks_entity_component_count(ea); comp++) {
            const tks_class *c =
                comp < 0 ? tks_entity_class(ea) : tks_entity_component_class(ea, (size_t)comp);
            if (strcmp(tks_class_name(c), "mover") && strcmp(tks_class_name(c), "follower"))
                continue;
            xyz pa = pos_of(a, id, comp), pb = pos_of(b, id, comp);
            ck_assert_msg(!memcmp(pa.v, pb.v, sizeof pa.v),
                          "%s: entity %llu (%d): batched (%.17g %.17g %.17g), one by one "
                          "(%.17g %.17g %.17g)",
                          when, (unsigned long long)id, comp, pa.v[0], pa.v[1], pa.v[2], pb.v[0],
                          pb.v[1], pb.v[2]);
        }
    }
}

START_TEST(sim_batch_matches_one_by_one)
{
    world a = world_new(), b = world_new();
    tks_id ma[64], mb[64];
    size_t nma = 0, nmb = 0;
    uint64_t k = 0;
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 2500; i++, k++) {
            tks_id ia = spawn_mixed(&a, k, true, ma, nma);
            tks_id ib = spawn_mixed(&b, k, false, mb, nmb);
            ck_assert_uint_eq(ia, ib);
            if (k % 8 == 0 && nma < 64) {
                ma[nma++] = ia;
                mb[nmb++] = ib;
            }
        }
        /* Some functions off: runs end there. */
        for (tks_id id = 3 + (tks_id)round; id <= k; id += 97) {
            const tks_entity *ea = tks_entity_get(a.s, id), *eb = tks_entity_get(b.s, id);
            if (ea && tks_entity_tick(ea, -1) != TK_TICK_NONE) {
                tk_tick_set_enabled(a.w, tks_entity_tick(ea, -1), false);
                tk_tick_set_enabled(b.w, tks_entity_tick(eb, -1), false);
            }
        }
        frames(&a, 5);
        frames(&b, 5);
        same_movers(&a, &b, k, "after spawns");
        destroy_some(&a, k, 0.3, 100 + (uint64_t)round);
        destroy_some(&b, k, 0.3, 100 + (uint64_t)round);
        /* Mid-compaction frames, then settled ones. */
        frames(&a, 7);
        frames(&b, 7);
        same_movers(&a, &b, k, "after destroys");
    }
    tks_storage_info si;
    storage(&a, "mover", &si);
    ck_assert_uint_eq(si.holes, 0);
    world_free(&a);
    world_free(&b);
}
END_TEST

/* ---- a class's batch gets its run ------------------------------------------------------- */

typedef struct runner {
    uint64_t id; /* the entity, set at create  */
    uint64_t ticks;
    double pad[2];
} runner;

static uint64_t g_calls, g_ticked, g_bad, g_stride_bad;

static void runner_create(tkp_obj *o, const tkp_ctx *c)
{
    runner *r = c->api->state(o);
    r->id = c->api->entity(o);
}

static void runner_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    runner *r = c->api->state(o);
    r->ticks++;
}

static void runner_batch(const tkp_run *run, float dt, const tkp_ctx *c)
{
    g_calls++;
    if (run->stride != sizeof(runner))
        g_stride_bad++;
    for (size_t i = 0; i < run->n; i++) {
        runner *r = (runner *)((unsigned char *)run->states + i * run->stride);
        if (r != c->api->state(run->objs[i]) || r->id != c->api->entity(run->objs[i]))
            g_bad++;
        r->ticks++;
        g_ticked++;
    }
}

static const tkp_prop runner_props[] = {
    {"ticks", TKP_PROP_COUNT, offsetof(runner, ticks), 0, 0, 1e15, false},
};

static const tkp_class runner_class = {
    .abi = TICKD_PLUGIN_ABI,
    .name = "runner",
    .state_size = sizeof(runner),
    .props = runner_props,
    .n_props = 1,
    .position = -1,
    .create = runner_create,
    .tick = runner_tick,
    .tick_batch = runner_batch,
};

START_TEST(sim_batch_gets_its_run)
{
    world w = world_new();
    char err[TKS_ERR_MAX];
    ck_assert_int_eq(tks_register_class(w.s, &runner_class, "test", err), 0);
    /* Runners interleaved with movers, registration shuffled against the
     * other class; then a random half of everything destroyed. */
    const uint64_t n = 20000;
    tks_spawn_req r;
    tks_spawn_req_init(&r);
    char errs[TKS_ERR_MAX];
    for (uint64_t k = 0; k < n; k++) {
        r.cls = k % 2 ? "runner" : "mover";
        tks_id id;
        ck_assert_int_eq(tks_spawn(w.s, &r, &id, errs), 0);
    }
    frames(&w, 2);
    destroy_some(&w, n, 0.5, 7);
    g_calls = g_ticked = g_bad = g_stride_bad = 0;
    frames(&w, 4);
    tks_storage_info si;
    storage(&w, "runner", &si);
    ck_assert_uint_eq(si.holes, 0);
    ck_assert_uint_eq(si.stride, sizeof(runner));
    ck_assert_uint_eq(g_bad, 0);
    ck_assert_uint_eq(g_stride_bad, 0);
    ck_assert_uint_eq(g_ticked, 4 * si.live);
    /* Settled: every frame hands the class one run per chunk. */
    g_calls = g_ticked = 0;
    frames(&w, 10);
    ck_assert_uint_eq(g_bad, 0);
    ck_assert_uint_eq(g_ticked, 10 * si.live);
    ck_assert_uint_eq(g_calls, 10 * si.chunks);
    world_free(&w);
}
END_TEST

/* ---- timers find instances that moved ---------------------------------------------------- */

typedef struct timed {
    uint64_t id;    /* the entity, set at create            */
    uint64_t fires; /* timer calls that found this instance */
    uint64_t wrong; /* timer calls handed another instance  */
} timed;

static void timed_fire(void *ud, tkp_obj *o, const tkp_ctx *c)
{
    timed *t = c->api->state(o);
    if (t->id != c->api->entity(o) || (uint64_t)(uintptr_t)ud != t->id)
        t->wrong++;
    t->fires++;
}

static void timed_create(tkp_obj *o, const tkp_ctx *c)
{
    timed *t = c->api->state(o);
    t->id = c->api->entity(o);
    c->api->timer_set(c, o, 0.05, true, timed_fire, (void *)(uintptr_t)t->id);
}

static void timed_tick(tkp_obj *o, float dt, const tkp_ctx *c) {}

static const tkp_prop timed_props[] = {
    {"fires", TKP_PROP_COUNT, offsetof(timed, fires), 0, 0, 1e15, false},
    {"wrong", TKP_PROP_COUNT, offsetof(timed, wrong), 0, 0, 1e15, false},
};

static const tkp_class timed_class = {
    .abi = TICKD_PLUGIN_ABI,
    .name = "timed",
    .state_size = sizeof(timed),
    .props = timed_props,
    .n_props = 2,
    .position = -1,
    .create = timed_create,
    .tick = timed_tick,
};

typedef struct counts {
    double fires, wrong;
} counts;

static void read_counts(void *ud, const tks_prop_desc *d, const tks_value *v)
{
    counts *c = ud;
    if (!strcmp(d->name, "fires"))
        c->fires = v->num;
    if (!strcmp(d->name, "wrong"))
        c->wrong = v->num;
}

START_TEST(sim_timers_follow_moved_instances)
{
    world w = world_new();
    char err[TKS_ERR_MAX];
    ck_assert_int_eq(tks_register_class(w.s, &timed_class, "test", err), 0);
    tks_spawn_req r;
    tks_spawn_req_init(&r);
    r.cls = "timed";
    r.count = 3000;
    tks_id first;
    ck_assert_int_eq(tks_spawn(w.s, &r, &first, err), 0);
    frames(&w, 4);
    /* The first two thirds go: the survivors move down over them. */
    tks_id ids[2000];
    for (int i = 0; i < 2000; i++)
        ids[i] = first + (tks_id)i;
    size_t done;
    ck_assert_int_eq(tks_destroy(w.s, ids, 2000, &done, err), 0);
    frames(&w, 30);
    tks_storage_info si;
    storage(&w, "timed", &si);
    ck_assert_uint_eq(si.holes, 0);
    ck_assert_uint_eq(si.live, 1000);
    for (tks_id id = first + 2000; id < first + 3000; id++) {
        counts c = {0, 0};
        tks_entity_props(w.s, tks_entity_get(w.s, id), -1, read_counts, &c);
        ck_assert_msg(c.wrong == 0, "entity %llu: %g timer calls on another instance",
                      (unsigned long long)id, c.wrong);
        ck_assert_msg(c.fires >= 5, "entity %llu: %g timer calls", (unsigned long long)id, c.fires);
    }
    world_free(&w);
}
END_TEST

/* ---- the 16-byte instance header ----------------------------------------------------- */

/* Every live entity's tick function exists and ticks its row. */
static void check_ticks(world *w, tks_id lo, tks_id hi)
{
    for (tks_id id = lo; id <= hi; id++) {
        const tks_entity *e = tks_entity_get(w->s, id);
        if (!e)
            continue;
        tk_tick_id t = tks_entity_tick(e, -1);
        tk_tick_info ti;
        ck_assert_msg(tk_tick_get(w->w, t, &ti) == 0, "entity %llu: no tick function",
                      (unsigned long long)id);
        ck_assert_ptr_eq(ti.target, (const void *)e);
        ck_assert_uint_eq(ti.level, tks_entity_level(e));
    }
}

/*
 * A header keeps its tick function as a slot, its level as an index, and its
 * id in 53 bits: the tick functions of entities spawned after others were
 * destroyed (slots reused), the levels of entities of a level whose index
 * was reused, and ids up to 2^53 - 1 all read back as they were given.
 */
START_TEST(sim_header_links)
{
    world w = world_new();
    char err[TKS_ERR_MAX];
    ck_assert_int_eq(tks_level_add(w.s, "a", err), 0);
    tk_level_id a, b;
    ck_assert_int_eq(tk_level_find(w.w, "a", &a), 0);
    tks_spawn_req r;
    tks_spawn_req_init(&r);
    r.cls = "mover";
    r.count = 100;
    r.level = "a";
    tks_id fa, fp;
    ck_assert_int_eq(tks_spawn(w.s, &r, &fa, err), 0);
    r.level = NULL;
    ck_assert_int_eq(tks_spawn(w.s, &r, &fp, err), 0);
    ck_assert_uint_eq(tks_level_entities(w.s, a), 100);
    ck_assert_uint_eq(tks_entity_level(tks_entity_get(w.s, fa + 7)), a);
    ck_assert_uint_eq(tks_entity_level(tks_entity_get(w.s, fp + 7)), TK_LEVEL_PERSISTENT);
    frames(&w, 2);
    /* Level "a" goes with its entities; "b" takes its index. */
    ck_assert_int_eq(tks_level_remove(w.s, "a", err), 0);
    ck_assert_int_eq(tks_level_add(w.s, "b", err), 0);
    ck_assert_int_eq(tk_level_find(w.w, "b", &b), 0);
    ck_assert_uint_eq(b & 0xffffu, a & 0xffffu);
    ck_assert_uint_ne(b, a);
    ck_assert_uint_eq(tks_level_entities(w.s, a), 0);
    frames(&w, 1);
    /* New entities reuse the tick slots of the destroyed ones. */
    r.level = "b";
    r.count = 60;
    tks_id fb;
    ck_assert_int_eq(tks_spawn(w.s, &r, &fb, err), 0);
    ck_assert_uint_eq(tks_level_entities(w.s, b), 60);
    ck_assert_uint_eq(tks_level_entities(w.s, a), 0);
    ck_assert_uint_eq(tks_entity_level(tks_entity_get(w.s, fb)), b);
    check_ticks(&w, fp, fb + 59);
    /* Destroy some, let the stores move the survivors, check again. */
    size_t done;
    tks_id gone[50];
    for (int i = 0; i < 50; i++)
        gone[i] = fp + (tks_id)i;
    ck_assert_int_eq(tks_destroy(w.s, gone, 50, &done, err), 0);
    frames(&w, 3);
    check_ticks(&w, fp, fb + 59);
    /* The largest id a snapshot may hold. */
    tks_entity_restore er;
    memset(&er, 0, sizeof er);
    er.id = (1ull << 53) - 1;
    er.cls = "counter";
    er.level = "b";
    er.dilation = 1;
    er.life_remaining = -1;
    tk_tick_spec_default(&er.fn.spec);
    ck_assert_int_eq(tks_restore_entity(w.s, &er, err), 0);
    const tks_entity *big = tks_entity_get(w.s, er.id);
    ck_assert_ptr_nonnull(big);
    ck_assert_uint_eq(tks_entity_id(big), er.id);
    ck_assert_uint_eq(tks_entity_level(big), b);
    check_ticks(&w, er.id, er.id);
    world_free(&w);
}
END_TEST

/* ---- the id table under moves ----------------------------------------------------------- */

/* The live entities as the test knows them: id -> class (0 mover, 1 counter). */
typedef struct idref {
    tks_id *id;
    int *cls;
    size_t n, cap;
} idref;

static void ref_add(idref *r, tks_id id, int cls)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->id = realloc(r->id, r->cap * sizeof *r->id);
        r->cls = realloc(r->cls, r->cap * sizeof *r->cls);
    }
    r->id[r->n] = id;
    r->cls[r->n++] = cls;
}

static const char *const ref_cls[2] = {"mover", "counter"};

static void ref_spawn(world *w, idref *r, int cls, uint64_t count, const char *level)
{
    tks_spawn_req q;
    tks_spawn_req_init(&q);
    q.cls = ref_cls[cls];
    q.count = count;
    q.level = level;
    tks_id first;
    char err[TKS_ERR_MAX];
    ck_assert_msg(tks_spawn(w->s, &q, &first, err) == 0, "spawn: %s", err);
    for (uint64_t k = 0; k < count; k++)
        ref_add(r, first + k, cls);
}

/* Restore an entity under `id` unless it is taken (by the world or `r`). */
static void ref_restore(world *w, idref *r, tks_id id, int cls)
{
    if (tks_entity_get(w->s, id))
        return;
    tks_entity_restore er;
    memset(&er, 0, sizeof er);
    er.id = id;
    er.cls = ref_cls[cls];
    er.dilation = 1;
    er.life_remaining = -1;
    tk_tick_spec_default(&er.fn.spec);
    char err[TKS_ERR_MAX];
    ck_assert_msg(tks_restore_entity(w->s, &er, err) == 0, "restore %llu: %s",
                  (unsigned long long)id, err);
    ref_add(r, id, cls);
}

/* Destroy about `frac` of the entities `r` holds (chosen by `seed`). */
static void ref_destroy(world *w, idref *r, double frac, uint64_t *seed)
{
    tks_id *gone = malloc((r->n + 1) * sizeof *gone);
    size_t m = 0, k = 0;
    for (size_t i = 0; i < r->n; i++) {
        if ((double)(rng(seed) % 1000) < frac * 1000) {
            gone[m++] = r->id[i];
        } else {
            r->id[k] = r->id[i];
            r->cls[k++] = r->cls[i];
        }
    }
    r->n = k;
    size_t done;
    char err[TKS_ERR_MAX];
    ck_assert_int_eq(tks_destroy(w->s, gone, m, &done, err), 0);
    ck_assert_uint_eq(done, m);
    for (size_t i = 0; i < m; i++)
        ck_assert_ptr_null(tks_entity_get(w->s, gone[i]));
    free(gone);
}

typedef struct walk {
    tks_id *ids;
    size_t n;
} walk;

static void walk_one(void *ud, const tks_entity *e)
{
    walk *wk = ud;
    wk->ids[wk->n++] = tks_entity_id(e);
}

static int id_cmp(const void *a, const void *b)
{
    tks_id x = *(const tks_id *)a, y = *(const tks_id *)b;
    return x < y ? -1 : x > y;
}

/* Every entity of `r` is found by its id, with its class and its own tick
 * function; the neighbours of each id that `r` lacks are not found; a walk
 * in id order gives exactly `r`'s ids, sorted. */
static void ref_check(world *w, const idref *r, const char *when)
{
    ck_assert_uint_eq(tks_entity_count(w->s), r->n);
    tks_id *sorted = malloc((r->n + 1) * sizeof *sorted);
    memcpy(sorted, r->id, r->n * sizeof *sorted);
    qsort(sorted, r->n, sizeof *sorted, id_cmp);
    for (size_t i = 0; i < r->n; i++) {
        const tks_entity *e = tks_entity_get(w->s, r->id[i]);
        ck_assert_msg(e != NULL, "%s: entity %llu not found", when, (unsigned long long)r->id[i]);
        ck_assert_msg(tks_entity_id(e) == r->id[i], "%s: id %llu gives the row of %llu", when,
                      (unsigned long long)r->id[i], (unsigned long long)tks_entity_id(e));
        ck_assert_str_eq(tks_class_name(tks_entity_class(e)), ref_cls[r->cls[i]]);
        tk_tick_info ti;
        ck_assert_int_eq(tk_tick_get(w->w, tks_entity_tick(e, -1), &ti), 0);
        ck_assert_ptr_eq(ti.target, (const void *)e);
        tks_id next = r->id[i] + 1;
        if (!bsearch(&next, sorted, r->n, sizeof *sorted, id_cmp) && next < (1ull << 53))
            ck_assert_msg(!tks_entity_get(w->s, next), "%s: %llu found", when,
                          (unsigned long long)next);
    }
    walk wk = {malloc((r->n + 1) * sizeof *wk.ids), 0};
    ck_assert_uint_eq(tks_entity_list(w->s, TK_LEVEL_NONE, NULL, 0, UINT64_MAX, walk_one, &wk),
                      r->n);
    ck_assert_uint_eq(wk.n, r->n);
    ck_assert(!memcmp(wk.ids, sorted, r->n * sizeof *sorted));
    free(wk.ids);
    free(sorted);
}

/*
 * The id table (a block of ids keeps row indexes while its entities' rows
 * share a chunk, pointers otherwise) against a plain list of what lives: runs
 * of one class, classes interleaved id by id, ids restored at random (lone,
 * and clustered within a block in both classes), destroys that leave holes
 * and chunks that compaction slides and merges, and a level removed with its
 * entities.  After each step every entity is found by its id, with its own
 * row, and nothing else is.
 */
START_TEST(sim_ids_follow_rows)
{
    world w = world_new();
    idref r = {0};
    uint64_t seed = 1811;
    char err[TKS_ERR_MAX];
    ck_assert_int_eq(tks_level_add(w.s, "a", err), 0);
    for (int round = 0; round < 4; round++) {
        char when[64];
        /* Runs of one class, across chunk ends (chunks of 16, 32, ... rows). */
        ref_spawn(&w, &r, 0, 700 + 37 * (uint64_t)round, NULL);
        ref_spawn(&w, &r, 1, 300, round == 1 ? "a" : NULL);
        /* Interleaved id by id. */
        for (int k = 0; k < 600; k++)
            ref_spawn(&w, &r, (int)(rng(&seed) % 2), 1, k % 5 == 0 && round == 1 ? "a" : NULL);
        /* Restored ids: lone ones anywhere below 2^53, and a cluster. */
        tks_id base = (rng(&seed) % (1ull << 40)) << 8;
        for (int k = 0; k < 200; k++) {
            ref_restore(&w, &r, 1 + rng(&seed) % ((1ull << 53) - 2), k % 2);
            ref_restore(&w, &r, base + rng(&seed) % 700, (int)(rng(&seed) % 2));
        }
        tks_restore_done(w.s);
        snprintf(when, sizeof when, "round %d, spawned", round);
        ref_check(&w, &r, when);
        frames(&w, 2);
        ref_destroy(&w, &r, round == 2 ? 0.9 : 0.4, &seed);
        snprintf(when, sizeof when, "round %d, destroyed", round);
        ref_check(&w, &r, when);
        /* Compaction slides rows down and merges chunks between frames. */
        frames(&w, 3);
        snprintf(when, sizeof when, "round %d, compacted", round);
        ref_check(&w, &r, when);
        if (round == 1) {
            tk_level_id a;
            ck_assert_int_eq(tk_level_find(w.w, "a", &a), 0);
            size_t k = 0;
            for (size_t i = 0; i < r.n; i++) {
                if (tks_entity_level(tks_entity_get(w.s, r.id[i])) == a)
                    continue;
                r.id[k] = r.id[i];
                r.cls[k++] = r.cls[i];
            }
            r.n = k;
            ck_assert_int_eq(tks_level_remove(w.s, "a", err), 0);
            ck_assert_int_eq(tks_level_add(w.s, "a", err), 0);
            frames(&w, 3);
            ref_check(&w, &r, "level removed");
        }
    }
    /* All gone. */
    ref_destroy(&w, &r, 1.0, &seed);
    ref_check(&w, &r, "all destroyed");
    frames(&w, 2);
    free(r.id);
    free(r.cls);
    world_free(&w);
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    TCase *tc = tcase_create("sim");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, sim_destroys_keep_storage_dense);
    tcase_add_test(tc, sim_batch_matches_one_by_one);
    tcase_add_test(tc, sim_batch_gets_its_run);
    tcase_add_test(tc, sim_timers_follow_moved_instances);
    tcase_add_test(tc, sim_header_links);
    tcase_add_test(tc, sim_ids_follow_rows);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(sim_suite)
