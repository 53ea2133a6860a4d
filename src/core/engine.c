/*
 * engine.c - the engine loop: pacing, time, hooks and the frame counter, in
 * the order written down in engine.h.
 *
 * Pacing (engine.h has the rules): `unreal` is Unreal's max tick rate, the
 * deadline of a frame is the previous frame's start + period, so work time
 * is absorbed and a late frame is not caught up (its dt is simply longer);
 * `steady` keeps the deadlines on a grid (grid_ns: the point the last frame
 * was due at), so lateness is paid back, and re-anchors the grid once a
 * frame is more than TK_PACING_STEADY_MAX_BEHIND periods late.  Both share
 * one wait loop; only the base of the deadline differs.
 *
 * The wait is a hook; the default hook sleeps with clock_nanosleep
 * (TIMER_ABSTIME) and spins the last TK_CLOCK_SPIN_NS.  The thread's timer
 * slack is lowered to 1 ns so the kernel wakes us on time (it is inherited
 * by threads created after tk_engine_new).
 *
 * The clock is read once per frame for time; statistics read it again to
 * measure work, which never influences the simulation.
 */
#include <math.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "pool_int.h"
#include "ticker_int.h"
#include "world_int.h"

#include "tickd/error.h"

#define GAP_WINDOW_S 10           /* gap_max_ms_10s                  */
#define GAP_RING (GAP_WINDOW_S + 1)

struct tk_engine {
    tk_world_t *world;
    struct tk__ticker *ticker;
    tk_frame_stats *fstats;
    tk__pool *pool;          /* workers when threads > 1, else NULL        */
    uint64_t split_ns;       /* parallel work worth splitting (tick.c)     */

    double tick_rate;        /* Hz, 0 = unlimited                          */
    uint64_t fixed_dt_ns;    /* 0 = real time                              */
    uint64_t max_dt_ns;      /* 0 = no clamp                               */
    uint64_t max_frames;     /* tk_engine_run limit, 0 = none              */
    tk_pacing pacing;        /* how deadlines are placed                   */
    bool unpaced;            /* sprint                                     */
    bool stop;               /* tk_engine_stop called                      */
    bool started;            /* a frame has run                            */
    bool deferred;           /* in the request hooks (tk__engine_deferred) */
    bool next_dt_set;        /* tk_engine_set_next_dt: next_dt_ns is the
                                next frame's raw dt                        */
    uint64_t next_dt_ns;
    uint64_t frame_dt_ns;    /* raw dt of the frame being run (step 2 on)   */

    tk_clock_fn clock;
    void *clock_ud;
    tk_wait_fn wait;
    void *wait_ud;
    void (*pre_world)(void *ud, tk_engine_t *e);
    void (*post_frame)(void *ud, tk_engine_t *e, const tk_frame_info *f);
    void *hook_ud;

    uint64_t last_start_ns;  /* start of the previous frame (after wait)   */
    uint64_t grid_ns;        /* steady: the grid point the previous frame
                                was due at (its start when unpaced, unreal
                                or re-anchored); the next deadline is
                                grid_ns + period                           */
    uint64_t dropped_ns;     /* steady: time given up by re-anchoring during
                                the current run of late frames             */
    uint64_t overruns;       /* frames whose work exceeded the period      */
    uint64_t behind_ns;      /* how far behind its pace the loop is (engine.h,
                                tk_engine_stats.behind_s)                  */
    uint64_t carry_ns[2];    /* work of the wait hook / last post_frame, by
                                tk_work_kind, for the next frame           */
    uint64_t carry_cpu_ns;   /* CPU time of the last post_frame            */
    uint64_t gap_max[GAP_RING]; /* largest frame gap per second ...       */
    uint64_t gap_sec[GAP_RING]; /* ... and the second (start_ns / 1e9) + 1 */
    tk_frame_info last;
};

/* CPU time of the calling thread (ns; a system call, two per frame). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * TK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint64_t default_clock(void *ud)
{
    (void)ud;
    return tk_clock_now_ns();
}

static void default_wait(void *ud, uint64_t deadline_ns)
{
    (void)ud;
    if (deadline_ns)
        tk_clock_sleep_until(deadline_ns, TK_CLOCK_SPIN_NS);
}

struct tk__ticker *tk__engine_ticker(tk_engine_t *e) { return e->ticker; }
struct tk__pool *tk__engine_pool(const tk_engine_t *e) { return e->pool; }
uint64_t tk__engine_split_ns(const tk_engine_t *e) { return e->split_ns; }
bool tk__engine_deferred(const tk_engine_t *e) { return e->deferred; }

void tk_engine_desc_default(tk_engine_desc *d)
{
    memset(d, 0, sizeof *d);
    d->tick_rate = 60;
    d->max_dt = 0.4;
    d->time_dilation = 1.0;
}

static int check_rate(double v, double max) { return isfinite(v) && v >= 0 && v <= max; }

const char *tk_pacing_name(tk_pacing p)
{
    switch (p) {
    case TK_PACING_UNREAL: return "unreal";
    case TK_PACING_STEADY: return "steady";
    }
    return NULL;
}

int tk_pacing_parse(const char *name, tk_pacing *out)
{
    if (name && !strcmp(name, "unreal"))
        *out = TK_PACING_UNREAL;
    else if (name && !strcmp(name, "steady"))
        *out = TK_PACING_STEADY;
    else
        return TK_EINVAL;
    return 0;
}

int tk_engine_new(const tk_engine_desc *d, tk_engine_t **out)
{
    if (!d || !out)
        return TK_EINVAL;
    if (!check_rate(d->tick_rate, 1e6) || !check_rate(d->fixed_dt, 1e6) ||
        !check_rate(d->max_dt, 1e6) || !(isfinite(d->time_dilation) && d->time_dilation >= 0) ||
        !tk_pacing_name(d->pacing) || d->threads > TK_ENGINE_MAX_THREADS ||
        !(d->split_min_us == 0 || (isfinite(d->split_min_us) && d->split_min_us > 0 &&
                                   d->split_min_us <= 1e6)))
        return TK_EINVAL;
    tk__pool *pool = NULL;
    if (d->threads > 1 && !(pool = tk__pool_new(d->threads)))
        return TK_ENOMEM;
    tk_engine_t *e = tk_calloc(1, sizeof *e);
    e->pool = pool;
    e->split_ns = (uint64_t)llround((d->split_min_us ? d->split_min_us : TK_ENGINE_SPLIT_MIN_US) * 1e3);
    e->tick_rate = d->tick_rate;
    e->fixed_dt_ns = tk_s_to_ns(d->fixed_dt);
    e->max_dt_ns = tk_s_to_ns(d->max_dt);
    e->max_frames = d->max_frames;
    e->pacing = d->pacing;
    e->clock = d->clock ? d->clock : default_clock;
    e->clock_ud = d->clock_ud;
    e->wait = d->wait ? d->wait : default_wait;
    e->wait_ud = d->wait_ud;
    e->pre_world = d->pre_world;
    e->post_frame = d->post_frame;
    e->hook_ud = d->hook_ud;
    e->ticker = tk__ticker_new();
    e->fstats = tk_frame_stats_new();
    tk__world_new(e, d->time_dilation, &e->world);
    tk_world_set_stats_clock(e->world, e->clock, e->clock_ud);
#ifdef PR_SET_TIMERSLACK
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
    *out = e;
    return 0;
}

void tk_engine_free(tk_engine_t *e)
{
    if (!e)
        return;
    tk__world_free(e->world);
    tk__ticker_free(e->ticker);
    tk_frame_stats_free(e->fstats);
    tk__pool_free(e->pool);
    tk_free(e);
}

int tk_engine_swap_world(tk_engine_t *e, tk_world_t *w, tk_world_t **old)
{
    if (e && TK_UNLIKELY(e->world->par))
        return tk__par_refuse(e->world, "tk_engine_swap_world");
    if (!e || !w || !old)
        return TK_EINVAL;
    tk_world_t *o = e->world;
    if (w == o || w->engine)
        return tk__world_error(o, TK_EINVAL, "only a world of its own (tk_world_new) can be swapped in");
    if (o->in_frame || w->in_frame)
        return tk__world_error(o, TK_ESTATE, "worlds are swapped between frames only");
    tk__world_adopt(w, o);
    w->engine = e;
    o->engine = NULL;
    e->world = w;
    *old = o;
    return 0;
}

tk_world_t *tk_engine_world(tk_engine_t *e) { return e->world; }
tk_engine_t *tk_world_engine(tk_world_t *w) { return w->engine; }

static uint64_t period_ns(const tk_engine_t *e)
{
    if (e->unpaced || e->tick_rate <= 0)
        return 0;
    double p = 1e9 / e->tick_rate;
    return p < 1e15 ? (uint64_t)llround(p) : UINT64_C(1000000000000000); /* tiny rates: 11 days */
}

static void record_gap(tk_engine_t *e, uint64_t start, uint64_t gap)
{
    uint64_t sec = start / 1000000000ull + 1; /* + 1: 0 marks an empty slot */
    size_t i = (size_t)(sec % GAP_RING);
    if (e->gap_sec[i] != sec) {
        e->gap_sec[i] = sec;
        e->gap_max[i] = 0;
    }
    if (gap > e->gap_max[i])
        e->gap_max[i] = gap;
}

void tk_engine_add_work(tk_engine_t *e, tk_work_kind kind, uint64_t ns)
{
    if ((unsigned)kind < 2)
        e->carry_ns[kind] += ns;
}

int tk_engine_frame(tk_engine_t *e)
{
    uint64_t period = period_ns(e);
    uint64_t now = e->clock(e->clock_ud);
    bool first = !e->started;
    if (!e->started) {
        /* Unreal starts LastRealTime 0.1 ms in the past so the first delta is
         * not zero; with a period we start one period in the past so the
         * first frame runs at once with a nominal dt. */
        e->last_start_ns = now - (period ? period : 100000);
        e->grid_ns = e->last_start_ns;
        e->started = true;
    }

    /* Steps 1 to 3 run the hooks that serve requests: Unreal's deferred
     * commands of the previous frame, before its frame counter moved (timers
     * set there are active at once, timer.c). */
    e->deferred = true;

    /* 1. Pace: the deadline is base + period, base the previous frame's
     * start (unreal) or grid point (steady). */
    uint64_t wait_start = now;
    uint64_t deadline = 0;
    if (period) {
        uint64_t base = e->pacing == TK_PACING_STEADY ? e->grid_ns : e->last_start_ns;
        deadline = base + period;
        if (now >= deadline && e->world->frame > 0) {
            /* Behind schedule: no wait, but the hook still polls once (the
             * daemon's socket must not starve while frames overrun). */
            e->wait(e->wait_ud, 0);
            now = e->clock(e->clock_ud);
        }
        /* The wait hook may change the tick rate (a request handled while
         * waiting): the deadline follows the current one. */
        while (!e->stop) {
            period = period_ns(e);
            deadline = base + period;
            if (!period || now >= deadline)
                break;
            e->wait(e->wait_ud, deadline);
            now = e->clock(e->clock_ud);
        }
    } else {
        e->wait(e->wait_ud, 0);
        now = e->clock(e->clock_ud);
    }

    /* 2. Time: the one clock read that drives the frame. */
    uint64_t start = now;
    uint64_t gap = first ? 0 : start - e->last_start_ns;
    uint64_t real = start - e->last_start_ns;
    uint64_t raw = e->fixed_dt_ns ? e->fixed_dt_ns : real;
    if (e->max_dt_ns && raw > e->max_dt_ns)
        raw = e->max_dt_ns;
    if (e->next_dt_set) {
        raw = e->next_dt_ns;
        e->next_dt_set = false;
    }
    e->frame_dt_ns = raw;
    if (!period)
        deadline = 0;
    if (period && e->pacing == TK_PACING_STEADY) {
        /* Steady: stay on the grid (what this frame is late is paid back by
         * the next deadline), unless it is too far behind: then the grid
         * starts again here and that time is dropped.  Behind: how late
         * this start is, plus what was dropped since the loop last kept up
         * (within 5% of a period: ordinary wake-up jitter). */
        uint64_t late = start > deadline ? start - deadline : 0;
        if (late > (uint64_t)TK_PACING_STEADY_MAX_BEHIND * period) {
            e->dropped_ns += late;
            e->grid_ns = start;
            e->behind_ns = e->dropped_ns;
        } else {
            e->grid_ns = deadline;
            if (late <= period / 20)
                e->dropped_ns = 0;
            e->behind_ns = late + e->dropped_ns;
        }
    } else {
        /* Unreal: lateness accumulated over consecutive slow frames; a frame
         * within 5% of its period (ordinary wake-up jitter) means the loop
         * keeps up. */
        if (period && real > period + period / 20)
            e->behind_ns += real - period;
        else
            e->behind_ns = 0;
        e->grid_ns = start;
        e->dropped_ns = 0;
    }
    e->last_start_ns = start;
    uint64_t cpu0 = thread_cpu_ns();

    /* 3. Deferred commands. */
    uint64_t t_req = start;
    if (e->pre_world) {
        e->pre_world(e->hook_ud, e);
        t_req = e->clock(e->clock_ud);
    }
    e->deferred = false;

    /* 4. World. */
    tk__world_tick(e->world, raw);
    uint64_t t_world = e->clock(e->clock_ud);

    /* 5. Core ticker (raw, undilated, also while paused). */
    tk__ticker_tick(e->ticker, tk_ns_to_s(raw));

    uint64_t end = e->clock(e->clock_ud);
    uint64_t cpu1 = thread_cpu_ns();
    tk_frame_info *f = &e->last;
    f->frame = e->world->frame;
    f->start_ns = start;
    f->raw_dt_ns = raw;
    f->world_dt_ns = e->world->dt_ns;
    f->requests_ns = (t_req - start) + e->carry_ns[TK_WORK_REQUESTS];
    f->world_ns = t_world - t_req;
    f->ticker_ns = end - t_world;
    f->other_ns = e->carry_ns[TK_WORK_OTHER];
    f->work_ns = f->requests_ns + f->world_ns + f->ticker_ns + f->other_ns;
    f->carried_ns = e->carry_ns[TK_WORK_REQUESTS] + e->carry_ns[TK_WORK_OTHER];
    e->carry_ns[TK_WORK_REQUESTS] = e->carry_ns[TK_WORK_OTHER] = 0;
    f->cpu_ns = (cpu1 - cpu0) + e->carry_cpu_ns;
    e->carry_cpu_ns = 0;
    f->gap_ns = gap;
    record_gap(e, start, gap);
    f->wait_ns = start - wait_start;
    f->period_ns = period;
    f->deadline_ns = deadline;
    f->overrun = period && f->work_ns > period;
    f->paused = e->world->frame_paused;
    if (f->overrun)
        e->overruns++;
    tk_frame_stats_add(e->fstats, start, f->work_ns);
    if (e->post_frame) {
        e->post_frame(e->hook_ud, e, f);
        e->carry_ns[TK_WORK_OTHER] += e->clock(e->clock_ud) - end;
        e->carry_cpu_ns = thread_cpu_ns() - cpu1;
    }

    tk__world_end_frame(e->world);
    return 0;
}

uint64_t tk_engine_run(tk_engine_t *e)
{
    uint64_t n = 0;
    e->stop = false;
    while (!e->stop && (e->max_frames == 0 || n < e->max_frames)) {
        tk_engine_frame(e);
        n++;
    }
    return n;
}

void tk_engine_stop(tk_engine_t *e)
{
    TK_PAR_GUARD_VOID(e->world, "tk_engine_stop");
    e->stop = true;
}
bool tk_engine_stopping(const tk_engine_t *e) { return e->stop; }

int tk_engine_set_tick_rate(tk_engine_t *e, double hz)
{
    if (e && TK_UNLIKELY(e->world->par))
        return tk__par_refuse(e->world, "tk_engine_set_tick_rate");
    if (!check_rate(hz, 1e6))
        return tk__world_error(e->world, TK_EINVAL, "tick rate must be a finite number >= 0");
    e->tick_rate = hz;
    return 0;
}
double tk_engine_tick_rate(const tk_engine_t *e) { return e->tick_rate; }

int tk_engine_set_fixed_dt(tk_engine_t *e, double s)
{
    if (e && TK_UNLIKELY(e->world->par))
        return tk__par_refuse(e->world, "tk_engine_set_fixed_dt");
    if (!check_rate(s, 1e6))
        return tk__world_error(e->world, TK_EINVAL, "fixed dt must be a finite number >= 0");
    e->fixed_dt_ns = tk_s_to_ns(s);
    return 0;
}
double tk_engine_fixed_dt(const tk_engine_t *e) { return tk_ns_to_s(e->fixed_dt_ns); }

int tk_engine_set_max_dt(tk_engine_t *e, double s)
{
    if (e && TK_UNLIKELY(e->world->par))
        return tk__par_refuse(e->world, "tk_engine_set_max_dt");
    if (!check_rate(s, 1e6))
        return tk__world_error(e->world, TK_EINVAL, "max dt must be a finite number >= 0");
    e->max_dt_ns = tk_s_to_ns(s);
    return 0;
}
double tk_engine_max_dt(const tk_engine_t *e) { return tk_ns_to_s(e->max_dt_ns); }

int tk_engine_set_pacing(tk_engine_t *e, tk_pacing p)
{
    if (e && TK_UNLIKELY(e->world->par))
        return tk__par_refuse(e->world, "tk_engine_set_pacing");
    if (!tk_pacing_name(p))
        return tk__world_error(e->world, TK_EINVAL, "pacing must be unreal or steady");
    if (p != e->pacing) {
        e->pacing = p;
        e->grid_ns = e->last_start_ns; /* a steady grid starts at the last start */
        e->dropped_ns = 0;
    }
    return 0;
}
tk_pacing tk_engine_pacing(const tk_engine_t *e) { return e->pacing; }

int tk_engine_set_threads(tk_engine_t *e, unsigned threads)
{
    if (e && TK_UNLIKELY(e->world->par))
        return tk__par_refuse(e->world, "tk_engine_set_threads");
    if (threads > TK_ENGINE_MAX_THREADS)
        return tk__world_error(e->world, TK_EINVAL, "threads must be 1 .. %d",
                               TK_ENGINE_MAX_THREADS);
    if (e->world->in_frame)
        return tk__world_error(e->world, TK_ESTATE, "threads change between frames only");
    if (threads < 1)
        threads = 1;
    if (threads == tk_engine_threads(e))
        return 0;
    tk__pool *pool = NULL;
    if (threads > 1 && !(pool = tk__pool_new(threads)))
        return tk__world_error(e->world, TK_ENOMEM, "cannot start %u worker threads",
                               threads - 1);
    tk__pool_free(e->pool);
    e->pool = pool;
    return 0;
}

unsigned tk_engine_threads(const tk_engine_t *e) { return tk__pool_threads(e->pool); }

int tk_engine_set_split_min(tk_engine_t *e, double us)
{
    if (e && TK_UNLIKELY(e->world->par))
        return tk__par_refuse(e->world, "tk_engine_set_split_min");
    if (!(isfinite(us) && us > 0 && us <= 1e6))
        return tk__world_error(e->world, TK_EINVAL, "split_min must be in (0, 1e6] us");
    e->split_ns = (uint64_t)llround(us * 1e3);
    return 0;
}

double tk_engine_split_min(const tk_engine_t *e) { return (double)e->split_ns / 1e3; }

void tk_engine_set_unpaced(tk_engine_t *e, bool unpaced) { e->unpaced = unpaced; }

void tk_engine_set_next_dt(tk_engine_t *e, uint64_t raw_dt_ns)
{
    e->next_dt_ns = raw_dt_ns;
    e->next_dt_set = true;
}

void tk_engine_run_deferred(tk_engine_t *e, void (*fn)(void *ud), void *ud)
{
    bool was = e->deferred;
    e->deferred = true;
    fn(ud);
    e->deferred = was;
}

uint64_t tk_engine_frame_dt_ns(const tk_engine_t *e) { return e->frame_dt_ns; }

uint64_t tk_engine_frame_count(const tk_engine_t *e) { return e->world->frame; }
uint64_t tk_engine_now(const tk_engine_t *e) { return e->clock(e->clock_ud); }

const tk_frame_info *tk_engine_last_frame(const tk_engine_t *e)
{
    return e->started && e->last.start_ns ? &e->last : NULL;
}

double tk_engine_behind_s(const tk_engine_t *e) { return tk_ns_to_s(e->behind_ns); }

void tk_engine_get_stats(const tk_engine_t *e, tk_engine_stats *out)
{
    memset(out, 0, sizeof *out);
    uint64_t now = e->clock(e->clock_ud);
    out->frame = e->world->frame;
    out->target_hz = e->tick_rate;
    out->tps_1s = tk_frame_stats_tps(e->fstats, now, 1);
    out->tps_10s = tk_frame_stats_tps(e->fstats, now, 10);
    out->tps_1m = tk_frame_stats_tps(e->fstats, now, 60);
    tk_frame_stats_mspt(e->fstats, now, 10, &out->mspt);
    out->overruns = e->overruns;
    out->behind_s = tk_ns_to_s(e->behind_ns);
    uint64_t sec = now / 1000000000ull + 1, gmax = 0;
    for (size_t i = 0; i < GAP_RING; i++)
        if (e->gap_sec[i] && e->gap_sec[i] + GAP_WINDOW_S >= sec && e->gap_max[i] > gmax)
            gmax = e->gap_max[i];
    out->gap_max_ms_10s = (double)gmax / 1e6;
    out->last = e->last;
}
