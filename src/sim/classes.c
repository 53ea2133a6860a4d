/*
 * classes.c - the built-in entity classes (PROTOCOL.md "Built-in classes").
 * Each is usable as an actor, a component and a tickable.
 *
 *   counter   nothing but being counted (the core keeps the counters)
 *   mover     x, y, z += v * dt each tick (batch form)
 *   spawner   every `every`-th tick spawns `spawn` (or a copy of itself)
 *             until it spawned `max_total` times
 *   follower  prerequisite on its target's actor tick (an attached child);
 *             copies the target's position each tick
 *   burner    busy-works `work_us` microseconds each tick (load tests)
 */
#include <stddef.h>
#include <time.h>

#include "sim_int.h"

/* ---- counter --------------------------------------------------------------- */

static void counter_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)target;
    (void)dt;
    (void)ctx;
}

static void counter_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    (void)targets;
    (void)n;
    (void)dt;
    (void)ctx;
}

/* ---- mover ------------------------------------------------------------------- */

typedef struct mover {
    double x, y, z;     /* position    */
    double vx, vy, vz;  /* units per s */
} mover;

static const tks_prop_desc mover_props[] = {
    {"x", TKS_PROP_NUMBER, offsetof(mover, x), 0, -1e300, 1e300, false},
    {"y", TKS_PROP_NUMBER, offsetof(mover, y), 0, -1e300, 1e300, false},
    {"z", TKS_PROP_NUMBER, offsetof(mover, z), 0, -1e300, 1e300, false},
    {"vx", TKS_PROP_NUMBER, offsetof(mover, vx), 0, -1e300, 1e300, false},
    {"vy", TKS_PROP_NUMBER, offsetof(mover, vy), 0, -1e300, 1e300, false},
    {"vz", TKS_PROP_NUMBER, offsetof(mover, vz), 0, -1e300, 1e300, false},
};

static inline void mover_step(mover *m, float dt)
{
    m->x += m->vx * dt;
    m->y += m->vy * dt;
    m->z += m->vz * dt;
}

static void mover_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)ctx;
    mover_step(tks_obj_state(target), dt);
}

static void mover_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < n; i++)
        mover_step(tks_obj_state(targets[i]), dt);
}

/* ---- spawner --------------------------------------------------------------------- */

typedef struct spawner {
    tks_spawn_req *spawn;  /* template; NULL with self */
    bool self;             /* must follow `spawn` (TKS_PROP_SPAWN layout) */
    uint64_t every;        /* ticks between spawns */
    uint64_t max_total;    /* spawns in all */
    uint64_t ticks;        /* ticks so far */
    uint64_t spawned;      /* spawns so far */
} spawner;

static const tks_prop_desc spawner_props[] = {
    {"spawn", TKS_PROP_SPAWN, offsetof(spawner, spawn), 0, 0, 0, true},
    {"every", TKS_PROP_COUNT, offsetof(spawner, every), 1, 1, 1e15, false},
    {"max_total", TKS_PROP_COUNT, offsetof(spawner, max_total), 1, 0, 1e15, false},
};

static void spawner_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    tks_obj *o = target;
    spawner *sp = tks_obj_state(o);
    sp->ticks++;
    if (sp->ticks % sp->every != 0 || sp->spawned >= sp->max_total)
        return;
    tks_sim *s = tks_of_world(ctx->world);
    char err[TKS_ERR_MAX];
    tks_id first;
    int rc = sp->self ? tks__spawn_self(s, o, err) : tks_spawn(s, sp->spawn, &first, err);
    if (rc == 0)
        sp->spawned++;
    else
        tks__spawn_failed(s, err);
}

/* ---- follower ---------------------------------------------------------------------- */

typedef struct follower {
    uint64_t target;       /* entity id followed            */
    double x, y, z;        /* copied from the target        */
    tk_tick_id linked;     /* prerequisite added for target */
} follower;

static const tks_prop_desc follower_props[] = {
    {"target", TKS_PROP_ID, offsetof(follower, target), 0, 1, 9e15, true},
    {"x", TKS_PROP_NUMBER, offsetof(follower, x), 0, -1e300, 1e300, false},
    {"y", TKS_PROP_NUMBER, offsetof(follower, y), 0, -1e300, 1e300, false},
    {"z", TKS_PROP_NUMBER, offsetof(follower, z), 0, -1e300, 1e300, false},
};

static void follower_link(tks_sim *s, tks_obj *o)
{
    follower *f = tks_obj_state(o);
    f->linked = TK_TICK_NONE;
    if (o->tick == TK_TICK_NONE)
        return;
    const tks_entity *t = tks_entity_get(s, f->target);
    tk_tick_id tt = t ? tks_entity_tick(t, -1) : TK_TICK_NONE;
    if (tt == TK_TICK_NONE || tt == o->tick)
        return;
    if (tk_tick_add_prerequisite(tks_world(s), o->tick, tt) == 0)
        f->linked = tt;
}

static int follower_init(tks_sim *s, tks_obj *o, char err[TKS_ERR_MAX])
{
    (void)err;
    follower_link(s, o);
    return 0;
}

static void follower_props_changed(tks_sim *s, tks_obj *o, const void *old)
{
    const follower *was = old;
    follower *f = tks_obj_state(o);
    if (was->target == f->target)
        return;
    if (was->linked != TK_TICK_NONE && tk_tick_alive(tks_world(s), was->linked) &&
        o->tick != TK_TICK_NONE)
        tk_tick_remove_prerequisite(tks_world(s), o->tick, was->linked);
    follower_link(s, o);
}

static void follower_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    tks_obj *o = target;
    follower *f = tks_obj_state(o);
    double pos[3];
    if (tks__entity_pos(tks_of_world(ctx->world), f->target, pos)) {
        f->x = pos[0];
        f->y = pos[1];
        f->z = pos[2];
    }
}

/* ---- burner ------------------------------------------------------------------------- */

typedef struct burner {
    double work_us;        /* busy work per tick, microseconds */
} burner;

static const tks_prop_desc burner_props[] = {
    {"work_us", TKS_PROP_NUMBER, offsetof(burner, work_us), 50, 0, 1e6, false},
};

static void burner_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    burner *b = tks_obj_state(target);
    uint64_t end = tk_clock_now_ns() + (uint64_t)(b->work_us * 1000.0);
    volatile uint64_t sink = 0;
    while (tk_clock_now_ns() < end)
        for (int i = 0; i < 64; i++)
            sink += (uint64_t)i;
    (void)sink;
}

/* ---- the table ---------------------------------------------------------------------- */

#define PROPS(p) p, sizeof(p) / sizeof((p)[0])

const tks_class tks_builtin_classes[] = {
    {.name = "counter", .state_size = 0, .props = NULL, .n_props = 0, .tick = counter_tick,
     .tick_batch = counter_batch, .pos_offset = -1},
    {.name = "mover", .state_size = sizeof(mover), PROPS(mover_props), .tick = mover_tick,
     .tick_batch = mover_batch, .pos_offset = offsetof(mover, x)},
    {.name = "spawner", .state_size = sizeof(spawner), PROPS(spawner_props),
     .tick = spawner_tick, .pos_offset = -1},
    {.name = "follower", .state_size = sizeof(follower), PROPS(follower_props),
     .tick = follower_tick, .init = follower_init, .props_changed = follower_props_changed,
     .pos_offset = offsetof(follower, x)},
    {.name = "burner", .state_size = sizeof(burner), PROPS(burner_props), .tick = burner_tick,
     .pos_offset = -1},
};

const size_t tks_n_builtin_classes = sizeof tks_builtin_classes / sizeof tks_builtin_classes[0];
