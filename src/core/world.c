/*
 * world.c - the world: levels, the world clocks, pause, dilation, and the
 * order of one world tick (Unreal's UWorld::Tick).
 *
 * The world tick, in order (UE-SEMANTICS 2.2 for a dedicated server):
 *   time update (2.1) -> if not paused: StartFrame, pre_physics,
 *   start_physics, during_physics, end_physics, post_physics, timer manager,
 *   tickables, post_update_work, last_demotable (+ newly-spawned drain),
 *   EndFrame; if paused: the pause frame (even_when_paused functions), then
 *   the tickables (only when_paused ones tick).
 * The pause flag is sampled once at the start of the tick.  A pending
 * world step makes a paused frame run as unpaused.
 *
 * What this file does not do: schedule tick functions (tick.c), timers
 * (timer.c), tickables (tickable.c), pacing or the frame counter's owner
 * logic (engine.c).
 */
#include <ctype.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tick_int.h"
#include "tickable_int.h"
#include "timer_int.h"
#include "world_int.h"

#include "tickd/error.h"
#include "tickd/timer.h"

int tk__world_error(tk_world_t *w, int code, const char *fmt, ...)
{
    if (w) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->errbuf, sizeof w->errbuf, fmt, ap);
        va_end(ap);
    }
    return code;
}

const char *tk_world_last_error(const tk_world_t *w) { return w ? w->errbuf : ""; }

void tk_world_set_user(tk_world_t *w, void *user) { w->user = user; }
void *tk_world_user(const tk_world_t *w) { return w->user; }

/* ---- levels ------------------------------------------------------------ */

static inline uint32_t level_index(tk_level_id id) { return id & 0xffffu; }
static inline uint16_t level_gen(tk_level_id id) { return (uint16_t)(id >> 16); }
static inline tk_level_id level_make(uint32_t idx, uint16_t gen)
{
    return ((tk_level_id)gen << 16) | idx;
}

tk__level *tk__level_get(const tk_world_t *w, tk_level_id id)
{
    if (id == TK_LEVEL_NONE)
        id = TK_LEVEL_PERSISTENT;
    uint32_t idx = level_index(id);
    if (idx >= w->n_levels_cap)
        return NULL;
    tk__level *l = &w->levels[idx];
    if (!l->alive || l->gen != level_gen(id))
        return NULL;
    return l;
}

static int valid_level_name(const char *name)
{
    size_t n = 0;
    for (const char *p = name; *p; p++, n++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || c == '_' || c == '.' || c == '-'))
            return 0;
    }
    return n >= 1 && n <= TK_LEVEL_NAME_MAX;
}

int tk_level_find(const tk_world_t *w, const char *name, tk_level_id *out)
{
    if (!w || !name || !out)
        return TK_EINVAL;
    for (size_t i = 0; i < w->n_levels_cap; i++) {
        const tk__level *l = &w->levels[i];
        if (l->alive && strcmp(l->name, name) == 0) {
            *out = level_make((uint32_t)i, l->gen);
            return 0;
        }
    }
    return TK_ENOENT;
}

int tk_level_add(tk_world_t *w, const char *name, tk_level_id *out)
{
    TK_PAR_GUARD(w, "tk_level_add");
    if (!w || !name)
        return TK_EINVAL;
    if (!valid_level_name(name))
        return tk__world_error(w, TK_EINVAL,
                               "level name must be 1..%d characters of [A-Za-z0-9_.-]",
                               TK_LEVEL_NAME_MAX);
    tk_level_id existing;
    if (tk_level_find(w, name, &existing) == 0)
        return tk__world_error(w, TK_EEXIST, "level '%s' already exists", name);
    if (w->n_levels_live >= TK_LEVEL_MAX)
        return tk__world_error(w, TK_ELIMIT, "too many levels (max %d)", TK_LEVEL_MAX);
    size_t idx = 0;
    while (idx < w->n_levels_cap && w->levels[idx].alive)
        idx++;
    if (idx == w->n_levels_cap) {
        size_t old = w->n_levels_cap;
        TK_GROW(w->levels, w->n_levels_cap, idx + 1);
        memset(w->levels + old, 0, (w->n_levels_cap - old) * sizeof *w->levels);
    }
    tk__level *l = &w->levels[idx];
    uint16_t gen = (uint16_t)(l->gen + 1);
    if (gen == 0)
        gen = 1;
    memset(l, 0, sizeof *l);
    l->gen = gen;
    l->alive = true;
    l->order = w->level_order_next++;
    snprintf(l->name, sizeof l->name, "%s", name);
    w->n_levels_live++;
    if (out)
        *out = level_make((uint32_t)idx, gen);
    return 0;
}

int tk_level_remove(tk_world_t *w, tk_level_id id)
{
    TK_PAR_GUARD(w, "tk_level_remove");
    if (!w)
        return TK_EINVAL;
    tk__level *l = id != TK_LEVEL_NONE ? tk__level_get(w, id) : NULL;
    if (!l)
        return tk__world_error(w, TK_ENOENT, "no such level");
    if (level_index(id) == 0)
        return tk__world_error(w, TK_ESTATE, "the persistent level cannot be removed");
    tk__ticks_remove_level(w, id);
    TK_ASSERT(l->n_ticks == 0);
    l->alive = false;
    w->n_levels_live--;
    return 0;
}

const char *tk_level_name(const tk_world_t *w, tk_level_id id)
{
    const tk__level *l = tk__level_get(w, id);
    return l ? l->name : NULL;
}

size_t tk_level_tick_count(const tk_world_t *w, tk_level_id id)
{
    const tk__level *l = tk__level_get(w, id);
    return l ? l->n_ticks : 0;
}

size_t tk_level_count(const tk_world_t *w) { return w->n_levels_live; }

tk_level_id tk_level_at(const tk_world_t *w, size_t i)
{
    /* Live levels in creation order: the i-th smallest `order`.  Levels are
     * few (<= TK_LEVEL_MAX), so a selection pass is fine. */
    uint32_t floor = 0;
    bool have_floor = false;
    for (size_t k = 0; k <= i; k++) {
        size_t best = SIZE_MAX;
        for (size_t j = 0; j < w->n_levels_cap; j++) {
            const tk__level *l = &w->levels[j];
            if (!l->alive || (have_floor && l->order <= floor))
                continue;
            if (best == SIZE_MAX || l->order < w->levels[best].order)
                best = j;
        }
        if (best == SIZE_MAX)
            return TK_LEVEL_NONE;
        if (k == i)
            return level_make((uint32_t)best, w->levels[best].gen);
        floor = w->levels[best].order;
        have_floor = true;
    }
    return TK_LEVEL_NONE;
}

/* ---- creation ---------------------------------------------------------- */

int tk__world_new(tk_engine_t *e, double dilation, tk_world_t **out)
{
    tk_world_t *w = tk_calloc(1, sizeof *w);
    /* Each world of the process gets its own range of serials. */
    static _Atomic uint64_t worlds;
    w->serial = atomic_fetch_add(&worlds, 1) << 40;
    w->engine = e;
    w->dilation = 1.0;
    if (dilation > 0)
        w->dilation = fmin(fmax(dilation, TK_DILATION_MIN), TK_DILATION_MAX);
    w->ticks = tk__ticks_new();
    w->timers = tk__timers_new();
    w->tickables = tk__tickables_new();
    tk_level_id p;
    int rc = tk_level_add(w, "persistent", &p);
    TK_ASSERT(rc == 0 && p == TK_LEVEL_PERSISTENT);
    *out = w;
    return 0;
}

void tk__world_free(tk_world_t *w)
{
    if (!w)
        return;
    tk__tickables_free(w, w->tickables);
    tk__timers_free(w, w->timers);
    tk__ticks_free(w->ticks);
    tk_free(w->levels);
    tk_free(w);
}

int tk_world_new(double dilation, tk_world_t **out)
{
    if (!out || !(isfinite(dilation) && dilation >= 0))
        return TK_EINVAL;
    return tk__world_new(NULL, dilation, out);
}

void tk_world_free(tk_world_t *w)
{
    if (!w)
        return;
    TK_ASSERT(!w->engine);
    tk__world_free(w);
}

void tk__world_adopt(tk_world_t *to, tk_world_t *from)
{
    /* The serial goes on from where it was: a frame number never seen
     * twice (tk_world_serial), whatever the new world's frame counter. */
    to->serial = from->serial;
    to->stats_clock = from->stats_clock;
    to->stats_clock_ud = from->stats_clock_ud;
    to->fstats = from->fstats;
    to->frame_paused = from->frame_paused;
    /* Steps asked for (world.step) are still owed while the new world is
     * paused; tk_world_set_paused(false) would drop them, so does this. */
    to->steps = to->paused ? from->steps : 0;
    from->steps = 0;
    if (from->prof_on) {
        tk_profiler p = from->prof;
        tk_world_set_profiler(from, NULL);
        tk_world_set_profiler(to, &p);
    }
    tk__ticks_move_hooks(to, from);
}

/* ---- time -------------------------------------------------------------- */

int tk_world_set_time_dilation(tk_world_t *w, double value, double *applied)
{
    TK_PAR_GUARD(w, "tk_world_set_time_dilation");
    if (!w || isnan(value))
        return tk__world_error(w, TK_EINVAL, "time dilation must be a number");
    double v = fmin(fmax(value, TK_DILATION_MIN), TK_DILATION_MAX);
    w->dilation = v;
    if (applied)
        *applied = v;
    return 0;
}

double tk_world_time_dilation(const tk_world_t *w) { return w->dilation; }

void tk_world_set_paused(tk_world_t *w, bool paused)
{
    TK_PAR_GUARD_VOID(w, "tk_world_set_paused");
    w->paused = paused;
    if (!paused)
        w->steps = 0;
}

bool tk_world_paused(const tk_world_t *w) { return w->paused; }

int tk_world_step(tk_world_t *w, uint64_t frames)
{
    TK_PAR_GUARD(w, "tk_world_step");
    if (!w || frames == 0)
        return tk__world_error(w, TK_EINVAL, "frames must be >= 1");
    if (!w->paused)
        return tk__world_error(w, TK_ESTATE, "the world is not paused");
    w->steps += frames;
    return 0;
}

uint64_t tk_world_steps_pending(const tk_world_t *w) { return w->steps; }

uint64_t tk_world_step_stop(tk_world_t *w)
{
    if (w && TK_UNLIKELY(w->par)) {
        tk__par_refuse(w, "tk_world_step_stop");
        return 0;
    }
    uint64_t n = w->steps;
    w->steps = 0;
    return n;
}

uint64_t tk_world_time_ns(const tk_world_t *w) { return w->time_ns; }
uint64_t tk_world_unpaused_time_ns(const tk_world_t *w) { return w->unpaused_ns; }
uint64_t tk_world_frame(const tk_world_t *w) { return w->frame; }
uint64_t tk_world_real_time_ns(const tk_world_t *w) { return w->real_ns; }
uint64_t tk_world_frames_done(const tk_world_t *w) { return w->frame + (w->ticked ? 1 : 0); }
uint64_t tk_world_serial(const tk_world_t *w) { return w->serial; }

void tk_world_get_time(const tk_world_t *w, tk_world_time *out)
{
    out->frame = w->frame;
    out->world_time = tk_ns_to_s(w->time_ns);
    out->unpaused_time = tk_ns_to_s(w->unpaused_ns);
    out->real_time = tk_ns_to_s(w->real_ns);
    out->dt = tk_ns_to_s(w->dt_ns);
    out->raw_dt = tk_ns_to_s(w->raw_dt_ns);
    out->time_dilation = w->dilation;
    out->paused = w->paused;
    out->in_frame = w->in_frame;
}

void tk_world_get_frame_stats(const tk_world_t *w, tk_world_frame_stats *out)
{
    *out = w->fstats;
}

void tk_world_set_stats_clock(tk_world_t *w, uint64_t (*clock)(void *), void *ud)
{
    w->stats_clock = clock;
    w->stats_clock_ud = ud;
}

int tk_world_set_profiler(tk_world_t *w, const tk_profiler *p)
{
    TK_PAR_GUARD(w, "tk_world_set_profiler");
    if (p && !p->fn)
        return tk__world_error(w, TK_EINVAL, "a profiler needs a callback");
    if (p)
        w->prof = *p;
    else
        memset(&w->prof, 0, sizeof w->prof);
    w->prof_on = p != NULL;
    tk__ticks_profiler_changed(w);
    return 0;
}

bool tk_world_profiling(const tk_world_t *w) { return w->prof_on; }

/*
 * FixupDeltaSeconds: dilation * clamp(raw, Min, Max), in ns.
 */
static uint64_t world_dt(const tk_world_t *w, uint64_t raw_ns)
{
    const uint64_t lo = (uint64_t)(TK_MIN_FRAME_S * 1e9), hi = (uint64_t)(TK_MAX_FRAME_S * 1e9);
    uint64_t c = raw_ns < lo ? lo : raw_ns > hi ? hi : raw_ns;
    if (w->dilation == 1.0)
        return c;
    uint64_t d = (uint64_t)llround((double)c * w->dilation);
    return d ? d : 1;
}

void tk__world_tick(tk_world_t *w, uint64_t raw_dt_ns)
{
    /* Unreal samples the pause flag once, at the start of UWorld::Tick. */
    bool paused = w->paused;
    if (paused && w->steps > 0) {
        paused = false;
        w->steps--;
    }
    w->raw_dt_ns = raw_dt_ns;
    w->dt_ns = world_dt(w, raw_dt_ns);
    w->real_ns += raw_dt_ns;
    w->unpaused_ns += w->dt_ns;
    if (!paused)
        w->time_ns += w->dt_ns;
    w->frame_paused = paused;
    w->in_frame = true;
    memset(&w->fstats, 0, sizeof w->fstats);
    w->fstats.pause_frame = paused;
    float dt = (float)tk_ns_to_s(w->dt_ns);

    if (!paused) {
        uint64_t t0 = tk__world_stats_now(w);
        tk__ticks_start_frame(w);
        uint64_t t1 = tk__world_stats_now(w);
        w->fstats.start_frame_ns = t1 - t0;
        for (int g = TK_GROUP_PRE_PHYSICS; g <= TK_GROUP_POST_PHYSICS; g++)
            tk__ticks_run_group(w, (tk_group)g);
        t0 = tk__world_stats_now(w);
        w->fstats.timers_fired = tk__timers_tick(w, w->dt_ns);
        t1 = tk__world_stats_now(w);
        w->fstats.timers_ns = t1 - t0;
        if (w->prof_on)
            tk__world_prof(w, TK_PROF_TIMERS, t0, t1 - t0, (uint32_t)w->fstats.timers_fired);
        w->fstats.tickables_run = tk__tickables_tick(w, dt, false);
        w->fstats.tickables_ns = tk__world_stats_now(w) - t1;
        if (w->prof_on)
            tk__world_prof(w, TK_PROF_TICKABLES, t1, w->fstats.tickables_ns,
                           (uint32_t)w->fstats.tickables_run);
        tk__ticks_run_group(w, TK_GROUP_POST_UPDATE_WORK);
        tk__ticks_run_group(w, TK_GROUP_LAST_DEMOTABLE);
        tk__ticks_end_frame(w);
    } else {
        uint64_t t0 = tk__world_stats_now(w);
        tk__ticks_pause_frame(w);
        uint64_t t1 = tk__world_stats_now(w);
        w->fstats.group_ns[TK_GROUP_PRE_PHYSICS] = t1 - t0;
        w->fstats.tickables_run = tk__tickables_tick(w, dt, true);
        w->fstats.tickables_ns = tk__world_stats_now(w) - t1;
        if (w->prof_on)
            tk__world_prof(w, TK_PROF_TICKABLES, t1, w->fstats.tickables_ns,
                           (uint32_t)w->fstats.tickables_run);
    }
    w->in_frame = false;
    w->ticked = true;
}

void tk__world_end_frame(tk_world_t *w)
{
    w->ticked = false;
    w->frame++;
    w->serial++;
}

int tk_world_restore_time(tk_world_t *w, uint64_t frame, double world_time, double unpaused_time,
                          double real_time)
{
    TK_PAR_GUARD(w, "tk_world_restore_time");
    if (!w || !(world_time >= 0) || !(unpaused_time >= 0) || !(real_time >= 0) ||
        !isfinite(world_time) || !isfinite(unpaused_time) || !isfinite(real_time))
        return tk__world_error(w, TK_EINVAL, "restored times must be finite numbers >= 0");
    return tk_world_restore_time_ns(w, frame, tk_s_to_ns(world_time), tk_s_to_ns(unpaused_time),
                                    tk_s_to_ns(real_time));
}

int tk_world_restore_time_ns(tk_world_t *w, uint64_t frame, uint64_t world_ns,
                             uint64_t unpaused_ns, uint64_t real_ns)
{
    if (!w)
        return TK_EINVAL;
    if (w->in_frame)
        return tk__world_error(w, TK_ESTATE, "clocks cannot be restored during a frame");
    tk_tick_counts tc;
    tk_tick_get_counts(w, &tc);
    tk_timer_counts tm;
    tk_timer_get_counts(w, &tm);
    if (tc.registered || tm.active || tm.paused || tm.pending)
        return tk__world_error(w, TK_ESTATE,
                               "clocks can only be restored while no tick function or timer exists");
    if (tk__timers_restore_time(w, world_ns) != 0)
        return tk__world_error(w, TK_ESTATE, "the timer manager is busy");
    w->frame = frame;
    w->ticked = false;
    w->time_ns = world_ns;
    w->unpaused_ns = unpaused_ns;
    w->real_ns = real_ns;
    tk__ticks_reset_clocks(w);
    return 0;
}
