/*
 * probe.c - a test plugin that exercises the whole entity-class ABI
 * (tickd/plugin.h) and reports what it saw through its own props, so the
 * integration tests (tests/integration/test_plugins.c) can observe every
 * hook through the protocol alone.
 *
 * Two classes:
 *
 *   probe   props of every type (number, count, id, bool, spawn, string,
 *           ids); a `check` hook that refuses `armed` with a `level` above
 *           50, the label "forbidden" and a friend named twice; `create`
 *           records where the instance lives (api->component, api->entity,
 *           api->class_of) and starts a looping timer (api->timer_set) when
 *           `timer_rate` > 0; each tick counts `steps`, moves `x` by
 *           `level` * dt (a position, so a built-in follower can follow a
 *           probe), copies its `peer`'s level (api->entity_state) into
 *           `seen`, and at tick number `spawn_at` spawns its `offspring`
 *           (api->spawn; a refusal is counted and logged with api->log);
 *           counts in `friends_seen` the `friends` that have a position;
 *           `props_changed` counts changes, keeps the old level and the
 *           length of the old label, and restarts the timer
 *           (api->timer_clear) when `timer_rate` changed;
 *           `destroy` counts (create, destroy and props_changed also count
 *           the calls that came on a thread other than the one that loaded
 *           the plugin, tickd's frame thread).  `spare`, a second spawn
 *           prop, is never used:
 *           it shows how an unset spawn prop travels (copies, snapshots).
 *           No batch form: it spawns from its tick.
 *   tally   each tick copies the process-wide counts of probe creates and
 *           destroys (and off_thread), and walks every live probe (api->for_each) for their
 *           number, the sum of their levels and whether they came in entity
 *           id order with tickables last.  It has a batch form, which
 *           counts its ticks in `batched` and, in `bad_runs`, the ones whose
 *           state in the run (tkp_run) was not the instance's.
 *
 * tickd_plugin_init checks the host's api table.  What it deliberately is
 * not: an example to copy (plugins/boids.c is); probe favours observability
 * over sense.  Probe ticks also watch ctx->frame and ctx->serial go by, and
 * tally reports how often either went back (world.load rewinds the frame,
 * never the serial).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "tickd/plugin.h"

/* ---- probe ------------------------------------------------------------------ */

typedef struct probe {
    double x, y, z;            /* position; x += level * dt each tick          */
    double level;              /* units per s, [0, 100]                        */
    uint64_t steps;            /* ticks of this instance                       */
    uint64_t peer;             /* entity whose probe actor's level is copied   */
    double seen;               /* peer's level at the last tick, -1: none      */
    bool armed;                /* with level > 50: refused by the check hook   */
    bool class_ok;             /* api->class_of gave this class at create      */
    double role;               /* api->component at create: -1, index or -2   */
    uint64_t owner;            /* api->entity at create (0: a tickable)        */
    uint64_t changes;          /* props_changed calls                          */
    double old_level;          /* level before the last entity.set_props       */
    double timer_rate;         /* s between timer calls, 0: no timer           */
    uint64_t timer_fires;      /* timer calls                                  */
    tkp_spawn_ref offspring;   /* what to spawn at tick `spawn_at`             */
    tkp_spawn_ref spare;       /* a spawn prop probe never uses (stays unset)  */
    uint64_t spawn_at;         /* tick number of the spawn, 0: never           */
    uint64_t spawned;          /* spawns that succeeded                        */
    uint64_t spawn_errors;     /* spawns refused                               */
    const char *label;         /* up to 16 bytes                               */
    tkp_ids friends;           /* up to 4 entities                             */
    uint64_t friends_seen;     /* friends with a position at the last tick     */
    uint64_t old_label_len;    /* strlen of the label before set_props         */
    uint64_t timer;            /* handle of the timer, 0: none (not a prop)    */
} probe;

#define NUM(name, field, def, lo, hi)                                          \
    {name, TKP_PROP_NUMBER, offsetof(probe, field), def, lo, hi, false}
#define CNT(name, field)                                                       \
    {name, TKP_PROP_COUNT, offsetof(probe, field), 0, 0, 1e15, false}

static const tkp_prop probe_props[] = {
    NUM("x", x, 0, -1e9, 1e9),
    NUM("y", y, 0, -1e9, 1e9),
    NUM("z", z, 0, -1e9, 1e9),
    NUM("level", level, 1, 0, 100),
    CNT("steps", steps),
    {"peer", TKP_PROP_ID, offsetof(probe, peer), 0, 0, 0, false},
    NUM("seen", seen, -1, -1, 100),
    {"armed", TKP_PROP_BOOL, offsetof(probe, armed), 0, 0, 1, false},
    {"class_ok", TKP_PROP_BOOL, offsetof(probe, class_ok), 0, 0, 1, false},
    NUM("role", role, -1, -2, 64),
    {"owner", TKP_PROP_COUNT, offsetof(probe, owner), 0, 0, 9e15, false},
    CNT("changes", changes),
    NUM("old_level", old_level, -1, -1, 100),
    NUM("timer_rate", timer_rate, 0, 0, 1000),
    CNT("timer_fires", timer_fires),
    {"offspring", TKP_PROP_SPAWN, offsetof(probe, offspring), 0, 0, 0, false},
    {"spare", TKP_PROP_SPAWN, offsetof(probe, spare), 0, 0, 0, false},
    CNT("spawn_at", spawn_at),
    CNT("spawned", spawned),
    CNT("spawn_errors", spawn_errors),
    {"label", TKP_PROP_STRING, offsetof(probe, label), 0, 0, 16, false},
    {"friends", TKP_PROP_IDS, offsetof(probe, friends), 0, 0, 4, false},
    CNT("friends_seen", friends_seen),
    CNT("old_label_len", old_label_len),
};

static const tkp_class probe_class;

/* Creates and destroys of probe instances in this process. */
static uint64_t g_created, g_destroyed;
/* The thread that loaded the plugin (tickd's frame thread), and the create,
 * destroy and props_changed calls that came on another one. */
static pthread_t g_frame_thread;
static uint64_t g_off_thread;

static void on_frame_thread(void)
{
    if (!pthread_equal(pthread_self(), g_frame_thread))
        g_off_thread++;
}
/* ctx->frame and ctx->serial of the last probe tick, and how often a tick saw
 * a smaller one than the tick before. */
static uint64_t g_frame, g_serial, g_frame_back, g_serial_back;

/* The timer finds its instance where it is now (it may have moved since
 * the timer was set): ud is unused. */
static void on_timer(void *ud, tkp_obj *o, const tkp_ctx *c)
{
    probe *p = c->api->state(o);
    p->timer_fires++;
}

static void start_timer(probe *p, tkp_obj *o, const tkp_ctx *c)
{
    p->timer = 0;
    if (p->timer_rate > 0)
        p->timer = c->api->timer_set(c, o, p->timer_rate, true, on_timer, NULL);
}

/* Refuse an armed probe with a level above 50 (the given props only). */
static int probe_check(const tkp_props *pr, const tkp_ctx *c, char *err, size_t errlen)
{
    bool armed = false;
    double level = 1;
    if (c->api->prop_bool(pr, "armed", &armed) == 0 && armed &&
        c->api->prop_number(pr, "level", &level) == 0 && level > 50) {
        snprintf(err, errlen, "armed: an armed probe needs a level of at most 50 (got %g)", level);
        return -1;
    }
    const char *label;
    if (c->api->prop_string(pr, "label", &label) == 0 && strcmp(label, "forbidden") == 0) {
        snprintf(err, errlen, "label: \"forbidden\" is forbidden");
        return -1;
    }
    const tkp_id *ids;
    size_t n;
    if (c->api->prop_ids(pr, "friends", &ids, &n) == 0)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < i; j++)
                if (ids[i] == ids[j]) {
                    snprintf(err, errlen, "friends: entity %llu named twice",
                             (unsigned long long)ids[i]);
                    return -1;
                }
    return 0;
}

static void probe_create(tkp_obj *o, const tkp_ctx *c)
{
    probe *p = c->api->state(o);
    p->role = c->api->component(o);
    p->owner = c->api->entity(o);
    p->class_ok = c->api->class_of(o) == &probe_class;
    start_timer(p, o, c);
    g_created++;
    on_frame_thread();
}

static void probe_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    probe *p = c->api->state(o);
    p->steps++;
    if (c->frame < g_frame)
        g_frame_back++;
    if (c->serial < g_serial)
        g_serial_back++;
    g_frame = c->frame;
    g_serial = c->serial;
    p->x += p->level * dt;
    const probe *peer = p->peer ? c->api->entity_state(c, p->peer, &probe_class) : NULL;
    p->seen = peer ? peer->level : -1;
    p->friends_seen = 0;
    for (size_t i = 0; i < p->friends.n; i++) {
        double xyz[3];
        if (c->api->entity_position(c, p->friends.ids[i], xyz))
            p->friends_seen++;
    }
    if (p->spawn_at == 0 || p->steps != p->spawn_at)
        return;
    char err[200];
    if (c->api->spawn(c, o, &p->offspring, err, sizeof err) == 0) {
        p->spawned++;
        return;
    }
    p->spawn_errors++;
    char msg[300];
    snprintf(msg, sizeof msg, "probe of entity %llu could not spawn: %s",
             (unsigned long long)c->api->entity(o), err);
    c->api->log(c, 1, msg);
}

static void probe_props_changed(tkp_obj *o, const void *old, const tkp_ctx *c)
{
    const probe *was = old;
    probe *p = c->api->state(o);
    on_frame_thread();
    p->changes++;
    p->old_level = was->level;
    p->old_label_len = strlen(was->label);
    if (was->timer_rate != p->timer_rate) {
        if (p->timer)
            c->api->timer_clear(c, p->timer);
        start_timer(p, o, c);
    }
}

static void probe_destroy(tkp_obj *o, const tkp_ctx *c)
{
    g_destroyed++;
    on_frame_thread();
}

static const tkp_class probe_class = {
    .abi = TICKD_PLUGIN_ABI,
    .name = "probe",
    .state_size = sizeof(probe),
    .props = probe_props,
    .n_props = sizeof probe_props / sizeof probe_props[0],
    .position = offsetof(probe, x),
    .check = probe_check,
    .create = probe_create,
    .tick = probe_tick,
    .props_changed = probe_props_changed,
    .destroy = probe_destroy,
};

/* ---- tally -------------------------------------------------------------------- */

typedef struct tally {
    uint64_t created;          /* probe creates so far (process-wide)          */
    uint64_t destroyed;        /* probe destroys so far                        */
    uint64_t live;             /* probes api->for_each visited                 */
    double level_sum;          /* sum of their levels                          */
    bool ordered;              /* visited in entity id order, tickables last   */
    uint64_t frame_back;       /* probe ticks that saw ctx->frame go back      */
    uint64_t serial_back;      /* probe ticks that saw ctx->serial go back     */
    uint64_t batched;          /* ticks through tally_batch                    */
    uint64_t bad_runs;         /* of those, ticks whose run state was not the
                                  instance's (api->state)                      */
    uint64_t off_thread;       /* probe create, destroy and props_changed
                                  calls off the frame thread (process-wide)  */
} tally;

static const tkp_prop tally_props[] = {
    {"created", TKP_PROP_COUNT, offsetof(tally, created), 0, 0, 1e15, false},
    {"destroyed", TKP_PROP_COUNT, offsetof(tally, destroyed), 0, 0, 1e15, false},
    {"live", TKP_PROP_COUNT, offsetof(tally, live), 0, 0, 1e15, false},
    {"level_sum", TKP_PROP_NUMBER, offsetof(tally, level_sum), 0, 0, 1e15, false},
    {"ordered", TKP_PROP_BOOL, offsetof(tally, ordered), 0, 0, 1, false},
    {"frame_back", TKP_PROP_COUNT, offsetof(tally, frame_back), 0, 0, 1e15, false},
    {"serial_back", TKP_PROP_COUNT, offsetof(tally, serial_back), 0, 0, 1e15, false},
    {"batched", TKP_PROP_COUNT, offsetof(tally, batched), 0, 0, 1e15, false},
    {"bad_runs", TKP_PROP_COUNT, offsetof(tally, bad_runs), 0, 0, 1e15, false},
    {"off_thread", TKP_PROP_COUNT, offsetof(tally, off_thread), 0, 0, 1e15, false},
};

typedef struct walk {
    const tkp_ctx *c;
    tally *t;
    uint64_t last;             /* entity of the previous instance visited      */
    bool in_tickables;         /* a tickable was visited                       */
} walk;

static void visit(void *ud, tkp_obj *o)
{
    walk *w = ud;
    const probe *p = w->c->api->state(o);
    uint64_t e = w->c->api->entity(o);
    if (e == 0)
        w->in_tickables = true;
    else if (w->in_tickables || e < w->last)
        w->t->ordered = false;
    w->last = e;
    w->t->live++;
    w->t->level_sum += p->level;
}

static void tally_tick(tkp_obj *o, float dt, const tkp_ctx *c)
{
    tally *t = c->api->state(o);
    t->created = g_created;
    t->destroyed = g_destroyed;
    t->off_thread = g_off_thread;
    t->frame_back = g_frame_back;
    t->serial_back = g_serial_back;
    t->live = 0;
    t->level_sum = 0;
    t->ordered = true;
    walk w = {c, t, 0, false};
    c->api->for_each(c, &probe_class, visit, &w);
}

/* Each instance of the run by its tkp_obj (the states are checked to be
 * the run's: a state that is not is counted in bad_runs). */
static void tally_batch(const tkp_run *run, float dt, const tkp_ctx *c)
{
    for (size_t i = 0; i < run->n; i++) {
        tally *t = (tally *)((unsigned char *)run->states + i * run->stride);
        tally_tick(run->objs[i], dt, c);
        if (c->api->state(run->objs[i]) != t)
            t->bad_runs++;
        t->batched++;
    }
}

static const tkp_class tally_class = {
    .abi = TICKD_PLUGIN_ABI,
    .name = "tally",
    .state_size = sizeof(tally),
    .props = tally_props,
    .n_props = sizeof tally_props / sizeof tally_props[0],
    .position = -1,
    .tick = tally_tick,
    .tick_batch = tally_batch,
};

/* ---- exports --------------------------------------------------------------------- */

static const tkp_class *const classes[] = {&probe_class, &tally_class};

const uint32_t tickd_plugin_abi = TICKD_PLUGIN_ABI;

/* Refuse a host whose api table is not the one this plugin was built for. */
int tickd_plugin_init(const tkp_api *api, char *err, size_t errlen);
int tickd_plugin_init(const tkp_api *api, char *err, size_t errlen)
{
    if (!api || api->abi != TICKD_PLUGIN_ABI || !api->state || !api->for_each ||
        !api->entity_state || !api->spawn || !api->timer_set || !api->log ||
        !api->prop_string || !api->prop_ids) {
        snprintf(err, errlen, "host api table is incomplete or of another ABI");
        return -1;
    }
    g_frame_thread = pthread_self();
    return 0;
}

const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n);
const tkp_class *const *tickd_plugin_classes(const tkp_api *api, size_t *n)
{
    *n = sizeof classes / sizeof classes[0];
    return classes;
}
