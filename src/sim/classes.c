/*
 * classes.c - the built-in entity classes (PROTOCOL.md "Built-in classes"),
 * written against the plugin ABI (tickd/plugin.h) and nothing else: they get
 * no service a plugin could not get.  Each is usable as an actor, a component
 * and a tickable.
 *
 *   counter   nothing but being counted (the core keeps the counters);
 *             thread-safe
 *   mover     x, y, z += v * dt each tick (batch form: a loop over the
 *             run's states); thread-safe: it writes its own state only
 *   spawner   every `every`-th tick spawns `spawn` (or a copy of itself)
 *             until it spawned `max_total` times (its progress, `ticks`
 *             and `spawned`, are props too)
 *   follower  prerequisite on its target's actor tick (an attached child);
 *             copies the target's position each tick (batch form)
 *   burner    busy-works `work_us` microseconds each tick (load tests)
 */
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "tickd/clock.h"
#include "tickd/plugin.h"
#include "sim_int.h"

#define CLASS(...) ((const tkp_class){.abi = TICKD_PLUGIN_ABI, __VA_ARGS__})

/* ---- counter --------------------------------------------------------------- */

static void counter_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    (void)o;
    (void)dt;
    (void)c;
}

static void counter_batch(const tkp_run *run, float dt, const tkp_ctx *c)
{
    (void)run;
    (void)dt;
    (void)c;
}

static const tkp_class counter_class =
    CLASS(.name = "counter", .position = -1, .tick = counter_tick, .tick_batch = counter_batch,
          .flags = TKP_CLASS_THREAD_SAFE);

/* ---- mover ------------------------------------------------------------------- */

typedef struct mover {
    double x, y, z;     /* position    */
    double vx, vy, vz;  /* units per s */
} mover;

static const tkp_prop mover_props[] = {
    {"x", TKP_PROP_NUMBER, offsetof(mover, x), 0, -1e300, 1e300, false},
    {"y", TKP_PROP_NUMBER, offsetof(mover, y), 0, -1e300, 1e300, false},
    {"z", TKP_PROP_NUMBER, offsetof(mover, z), 0, -1e300, 1e300, false},
    {"vx", TKP_PROP_NUMBER, offsetof(mover, vx), 0, -1e300, 1e300, false},
    {"vy", TKP_PROP_NUMBER, offsetof(mover, vy), 0, -1e300, 1e300, false},
    {"vz", TKP_PROP_NUMBER, offsetof(mover, vz), 0, -1e300, 1e300, false},
};

static inline void mover_step(mover *m, float dt)
{
    m->x += m->vx * dt;
    m->y += m->vy * dt;
    m->z += m->vz * dt;
}

static void mover_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    mover_step(c->api->state(o), dt);
}

/* The run's states are consecutive movers (the stride is sizeof(mover), a
 * multiple of 8): a plain loop over memory. */
_Static_assert(sizeof(mover) % 8 == 0, "the host's stride is the state size");

static void mover_batch(const tkp_run *run, float dt, const tkp_ctx *c)
{
    (void)c;
    mover *m = run->states;
    for (size_t i = 0, n = run->n; i < n; i++)
        mover_step(&m[i], dt);
}

static const tkp_class mover_class =
    CLASS(.name = "mover", .state_size = sizeof(mover), .props = mover_props,
          .n_props = sizeof mover_props / sizeof mover_props[0], .position = offsetof(mover, x),
          .tick = mover_tick, .tick_batch = mover_batch, .flags = TKP_CLASS_THREAD_SAFE);

/* ---- spawner --------------------------------------------------------------------- */

typedef struct spawner {
    tkp_spawn_ref spawn;   /* what to spawn (host-owned)  */
    uint64_t every;        /* ticks between spawns        */
    uint64_t max_total;    /* spawns in all               */
    uint64_t ticks;        /* ticks so far                */
    uint64_t spawned;      /* spawns so far               */
    uint64_t failures;     /* spawns refused (limits)     */
} spawner;

/* Its progress (ticks, spawned) is state like its settings: props, so that
 * entity.get shows it and a snapshot keeps it (a restored spawner goes on
 * where it was instead of starting over). */
static const tkp_prop spawner_props[] = {
    {"spawn", TKP_PROP_SPAWN, offsetof(spawner, spawn), 0, 0, 0, true},
    {"every", TKP_PROP_COUNT, offsetof(spawner, every), 1, 1, 1e15, false},
    {"max_total", TKP_PROP_COUNT, offsetof(spawner, max_total), 1, 0, 1e15, false},
    {"ticks", TKP_PROP_COUNT, offsetof(spawner, ticks), 0, 0, 9e15, false},
    {"spawned", TKP_PROP_COUNT, offsetof(spawner, spawned), 0, 0, 9e15, false},
};

static void spawner_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    (void)dt;
    spawner *sp = c->api->state(o);
    sp->ticks++;
    if (sp->ticks % sp->every != 0 || sp->spawned >= sp->max_total)
        return;
    char err[256];
    /* "self" copies the props as they are: the copy starts its own count. */
    uint64_t ticks = sp->ticks, spawned = sp->spawned;
    if (sp->spawn.self)
        sp->ticks = sp->spawned = 0;
    int rc = c->api->spawn(c, o, &sp->spawn, err, sizeof err);
    sp->ticks = ticks;
    sp->spawned = spawned;
    if (rc == 0) {
        sp->spawned++;
        return;
    }
    /* A refused spawn (max_entities, a level removed...): logged at most
     * once a second of 60 Hz frames per spawner, counted always. */
    if (sp->failures++ % 60 == 0) {
        char msg[320];
        snprintf(msg, sizeof msg, "entity %llu could not spawn (%llu times): %s",
                 (unsigned long long)c->api->entity(o), (unsigned long long)sp->failures, err);
        c->api->log(c, 1, msg);
    }
}

static const tkp_class spawner_class =
    CLASS(.name = "spawner", .state_size = sizeof(spawner), .props = spawner_props,
          .n_props = sizeof spawner_props / sizeof spawner_props[0], .position = -1,
          .tick = spawner_tick);

/* ---- follower ---------------------------------------------------------------------- */

typedef struct follower {
    uint64_t target;       /* entity id followed            */
    double x, y, z;        /* copied from the target        */
    uint64_t linked;       /* target it waits for, 0: none  */
} follower;

static const tkp_prop follower_props[] = {
    {"target", TKP_PROP_ID, offsetof(follower, target), 0, 1, 9e15, true},
    {"x", TKP_PROP_NUMBER, offsetof(follower, x), 0, -1e300, 1e300, false},
    {"y", TKP_PROP_NUMBER, offsetof(follower, y), 0, -1e300, 1e300, false},
    {"z", TKP_PROP_NUMBER, offsetof(follower, z), 0, -1e300, 1e300, false},
};

static void follower_create(tkp_obj *o, const tkp_ctx *c)
{
    follower *f = c->api->state(o);
    f->linked = 0;
    if (f->target != c->api->entity(o) && c->api->add_prerequisite(c, o, f->target) == 0)
        f->linked = f->target;
}

static void follower_props_changed(tkp_obj *o, const void *old, const tkp_ctx *c)
{
    const follower *was = old;
    follower *f = c->api->state(o);
    if (was->target == f->target)
        return;
    if (was->linked)
        c->api->remove_prerequisite(c, o, was->linked);
    follower_create(o, c);
}

static void follow(follower *f, const tkp_ctx *c)
{
    double pos[3];
    if (c->api->entity_position(c, f->target, pos)) {
        f->x = pos[0];
        f->y = pos[1];
        f->z = pos[2];
    }
}

static void follower_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    (void)dt;
    follow(c->api->state(o), c);
}

/* Followers of a run read their targets, which ticked before them (their
 * prerequisites): the same as one by one, in any order. */
static void follower_batch(const tkp_run *run, float dt, const tkp_ctx *c)
{
    (void)dt;
    follower *f = run->states;
    for (size_t i = 0; i < run->n; i++)
        follow(&f[i], c);
}

static const tkp_class follower_class =
    CLASS(.name = "follower", .state_size = sizeof(follower), .props = follower_props,
          .n_props = sizeof follower_props / sizeof follower_props[0],
          .position = offsetof(follower, x), .create = follower_create, .tick = follower_tick,
          .tick_batch = follower_batch, .props_changed = follower_props_changed);
_Static_assert(sizeof(follower) % 8 == 0, "the host's stride is the state size");

/* ---- burner ------------------------------------------------------------------------- */

typedef struct burner {
    double work_us;        /* busy work per tick, microseconds */
} burner;

static const tkp_prop burner_props[] = {
    {"work_us", TKP_PROP_NUMBER, offsetof(burner, work_us), 50, 0, 1e6, false},
};

static void burner_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    (void)dt;
    burner *b = c->api->state(o);
    uint64_t end = tk_clock_now_ns() + (uint64_t)(b->work_us * 1000.0);
    volatile uint64_t sink = 0;
    while (tk_clock_now_ns() < end)
        for (int i = 0; i < 64; i++)
            sink += (uint64_t)i;
    (void)sink;
}

static const tkp_class burner_class =
    CLASS(.name = "burner", .state_size = sizeof(burner), .props = burner_props,
          .n_props = sizeof burner_props / sizeof burner_props[0], .position = -1,
          .tick = burner_tick);

/* ---- the table ---------------------------------------------------------------------- */

const tkp_class *const tks_builtin_classes[] = {&counter_class, &mover_class, &spawner_class,
                                                &follower_class, &burner_class};

const size_t tks_n_builtin_classes = sizeof tks_builtin_classes / sizeof tks_builtin_classes[0];
