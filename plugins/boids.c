/*
 * boids.c - an example tickd plugin: flocking (Reynolds' boids) with
 * separation, alignment and cohesion over a spatial grid, and an optional
 * leader to seek.  Built by `make` as build/plugins/boids.so; load it with
 *
 *   [plugins]
 *   load = build/plugins/boids.so
 *
 * and spawn: tickctl entity.spawn class=boids count=200 'props={"vx":1}'
 *
 * What it shows:
 *  - per-instance state and typed props declared to the host (the host
 *    validates requests, fills the state, renders entity.get and snapshots);
 *  - reading other entities' state: every boid steers by its neighbours, read
 *    from a snapshot of the whole flock taken at the first boid tick of each
 *    frame (so the order in which boids tick does not matter);
 *  - a prerequisite: a boid with a `leader` ticks after the leader's actor
 *    tick (an attached child), so it seeks the leader's position of this
 *    frame;
 *  - a batch tick: the scheduler hands runs of boids to `boids_batch` as
 *    their states, consecutive in memory (tkp_run); it does exactly what
 *    `boids_tick` does for each, minus the per-call cost - batched and
 *    unbatched runs give identical results (tested);
 *  - pointer lifetimes: the snapshot keeps state pointers for one frame
 *    only (the host may move states between frames, after destroys).
 *
 * It uses nothing but tickd/plugin.h and libm.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/plugin.h"

typedef struct boid {
    double x, y, z;        /* position (z stays as given: a 2D flock)   */
    double vx, vy, vz;     /* velocity, units per s                     */
    uint64_t leader;       /* entity to seek (ticks before us), 0: none */
    double radius;         /* neighbour radius, units                   */
    double max_speed;      /* units per s                               */
    double separation;     /* weights of the three rules and the seek   */
    double alignment;
    double cohesion;
    double seek;
    uint64_t slot;         /* index in this frame's snapshot (not a prop) */
} boid;

#define P(name, field, def, lo, hi)                                            \
    {name, TKP_PROP_NUMBER, offsetof(boid, field), def, lo, hi, false}

static const tkp_prop boid_props[] = {
    P("x", x, 0, -1e12, 1e12),
    P("y", y, 0, -1e12, 1e12),
    P("z", z, 0, -1e12, 1e12),
    P("vx", vx, 0, -1e6, 1e6),
    P("vy", vy, 0, -1e6, 1e6),
    P("vz", vz, 0, -1e6, 1e6),
    {"leader", TKP_PROP_ID, offsetof(boid, leader), 0, 0, 9e15, false},
    P("radius", radius, 5, 0.01, 1e6),
    P("max_speed", max_speed, 10, 0, 1e6),
    P("separation", separation, 1.5, 0, 1e3),
    P("alignment", alignment, 1.0, 0, 1e3),
    P("cohesion", cohesion, 1.0, 0, 1e3),
    P("seek", seek, 0.5, 0, 1e3),
};

/* ---- the frame's snapshot of the flock ---------------------------------- */

typedef struct snap {
    double x, y, vx, vy;   /* at the first boid tick of the frame */
    boid *b;
    int32_t next;          /* next in its grid cell, -1 ends      */
} snap;

static struct {
    const void *host;      /* whose frame it is (one world per process) */
    uint64_t serial;       /* ctx->serial: never repeats, even after world.load */
    snap *s;
    size_t n, cap;
    int32_t *cells;        /* hash of grid cells -> first snap index    */
    size_t ncells;         /* power of two                              */
    double cell;           /* cell size = the largest radius            */
} F;

static const tkp_class boids_class;

static void collect(void *ud, tkp_obj *o)
{
    const tkp_ctx *c = ud;
    boid *b = c->api->state(o);
    if (F.n == F.cap) {
        size_t cap = F.cap ? F.cap * 2 : 256;
        snap *s = realloc(F.s, cap * sizeof *s);
        if (!s)
            return; /* this boid steers by what was collected so far */
        F.s = s;
        F.cap = cap;
    }
    b->slot = F.n;
    F.s[F.n++] = (snap){b->x, b->y, b->vx, b->vy, b, -1};
}

static inline size_t cell_hash(int64_t cx, int64_t cy, size_t mask)
{
    uint64_t h = (uint64_t)cx * 0x9E3779B97F4A7C15ull ^ (uint64_t)cy * 0xC2B2AE3D27D4EB4Full;
    return (size_t)(h ^ (h >> 29)) & mask;
}

static inline int64_t cell_of(double v) { return (int64_t)floor(v / F.cell); }

/* Take the snapshot once per frame (whichever boid ticks first). */
static void ensure_snapshot(const tkp_ctx *c)
{
    if (F.host == c->host && F.serial == c->serial && F.s)
        return;
    F.host = c->host;
    F.serial = c->serial;
    F.n = 0;
    c->api->for_each(c, &boids_class, collect, (void *)c);
    F.cell = 1;
    for (size_t i = 0; i < F.n; i++)
        if (F.s[i].b->radius > F.cell)
            F.cell = F.s[i].b->radius;
    size_t want = 64;
    while (want < F.n * 2)
        want *= 2;
    if (want != F.ncells) {
        int32_t *cells = realloc(F.cells, want * sizeof *cells);
        if (!cells) {
            F.n = 0; /* no flock this frame: boids only seek and move */
            return;
        }
        F.cells = cells;
        F.ncells = want;
    }
    memset(F.cells, 0xff, F.ncells * sizeof *F.cells);
    for (size_t i = 0; i < F.n; i++) {
        size_t h = cell_hash(cell_of(F.s[i].x), cell_of(F.s[i].y), F.ncells - 1);
        F.s[i].next = F.cells[h];
        F.cells[h] = (int32_t)i;
    }
}

/* One boid's step, from the snapshot (never from other boids' live state). */
static void step(boid *b, float dtf, const tkp_ctx *c)
{
    double dt = dtf;
    double px = b->x, py = b->y, vx = b->vx, vy = b->vy;
    size_t self = (size_t)b->slot;
    if (self < F.n && F.s[self].b == b) {
        px = F.s[self].x;
        py = F.s[self].y;
        vx = F.s[self].vx;
        vy = F.s[self].vy;
    } else {
        self = SIZE_MAX; /* spawned after the snapshot: no neighbours yet */
    }
    double sx = 0, sy = 0, ax = 0, ay = 0, cx = 0, cy = 0;
    size_t count = 0;
    if (self != SIZE_MAX && F.n > 1) {
        double r2 = b->radius * b->radius;
        int64_t gx = cell_of(px), gy = cell_of(py);
        for (int64_t dx = -1; dx <= 1; dx++) {
            for (int64_t dy = -1; dy <= 1; dy++) {
                for (int32_t j = F.cells[cell_hash(gx + dx, gy + dy, F.ncells - 1)]; j >= 0;
                     j = F.s[j].next) {
                    if ((size_t)j == self)
                        continue;
                    const snap *o = &F.s[j];
                    if (cell_of(o->x) != gx + dx || cell_of(o->y) != gy + dy)
                        continue; /* another cell hashed alike */
                    double ox = o->x - px, oy = o->y - py, d2 = ox * ox + oy * oy;
                    if (d2 > r2)
                        continue;
                    if (d2 > 1e-12) {
                        sx -= ox / d2;
                        sy -= oy / d2;
                    }
                    ax += o->vx;
                    ay += o->vy;
                    cx += o->x;
                    cy += o->y;
                    count++;
                }
            }
        }
    }
    double fx = b->separation * sx, fy = b->separation * sy;
    if (count) {
        fx += b->alignment * (ax / (double)count - vx) + b->cohesion * (cx / (double)count - px);
        fy += b->alignment * (ay / (double)count - vy) + b->cohesion * (cy / (double)count - py);
    }
    double lp[3];
    if (b->leader && c->api->entity_position(c, b->leader, lp)) {
        fx += b->seek * (lp[0] - px);
        fy += b->seek * (lp[1] - py);
    }
    vx += fx * dt;
    vy += fy * dt;
    double speed = sqrt(vx * vx + vy * vy);
    if (speed > b->max_speed && speed > 0) {
        vx *= b->max_speed / speed;
        vy *= b->max_speed / speed;
    }
    b->vx = vx;
    b->vy = vy;
    b->x = px + vx * dt;
    b->y = py + vy * dt;
}

static void boids_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    ensure_snapshot(c);
    step(c->api->state(o), dt, c);
}

/* The run's states lie `stride` bytes apart: no lookup per boid. */
static void boids_batch(const tkp_run *run, float dt, const tkp_ctx *c)
{
    ensure_snapshot(c);
    unsigned char *p = run->states;
    for (size_t i = 0; i < run->n; i++, p += run->stride)
        step((boid *)p, dt, c);
}

/* A boid with a leader waits for the leader's tick (an attached child). */
static void boids_create(tkp_obj *o, const tkp_ctx *c)
{
    boid *b = c->api->state(o);
    b->slot = SIZE_MAX;
    if (b->leader)
        c->api->add_prerequisite(c, o, b->leader);
}

static void boids_props_changed(tkp_obj *o, const void *old, const tkp_ctx *c)
{
    const boid *was = old;
    boid *b = c->api->state(o);
    if (was->leader == b->leader)
        return;
    if (was->leader)
        c->api->remove_prerequisite(c, o, was->leader);
    if (b->leader)
        c->api->add_prerequisite(c, o, b->leader);
}

/* Extra check beyond the declarations: a flock needs some speed. */
static int boids_check(const tkp_props *p, const tkp_ctx *c, char *err, size_t len)
{
    double v;
    if (c->api->prop_number(p, "max_speed", &v) == 0 && v == 0 &&
        c->api->prop_has(p, "leader")) {
        strncpy(err, "max_speed: a boid with a leader needs a max_speed above 0", len - 1);
        err[len - 1] = 0;
        return -1;
    }
    return 0;
}

static const tkp_class boids_class = {
    .abi = TICKD_PLUGIN_ABI,
    .name = "boids",
    .state_size = sizeof(boid),
    .props = boid_props,
    .n_props = sizeof boid_props / sizeof boid_props[0],
    .position = offsetof(boid, x),
    .check = boids_check,
    .create = boids_create,
    .tick = boids_tick,
    .tick_batch = boids_batch,
    .props_changed = boids_props_changed,
};

static const tkp_class *const classes[] = {&boids_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    (void)api;
    *n = sizeof classes / sizeof classes[0];
    return classes;
}

__attribute__((destructor)) static void boids_unload(void)
{
    free(F.s);
    free(F.cells);
    memset(&F, 0, sizeof F);
}
