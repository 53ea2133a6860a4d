/*
 * world_int.h - the world's private structure, shared by the core modules
 * (world.c, tick.c, timer.c, tickable.c, engine.c).  The daemon never
 * includes this file: it uses the public headers only.
 */
#ifndef TICKD_WORLD_INT_H
#define TICKD_WORLD_INT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tickd/engine.h"
#include "tickd/tick.h"
#include "tickd/world.h"
#include "util_int.h"

struct tk__ticks;      /* tick.c     */
struct tk__timers;     /* timer.c    */
struct tk__tickables;  /* tickable.c */

typedef struct tk__level {
    char name[TK_LEVEL_NAME_MAX + 1];
    uint16_t gen;            /* generation of this slot; 0 = never used   */
    bool alive;
    size_t n_ticks;          /* tick functions registered in it           */
    uint32_t order;          /* creation order, for tk_level_at           */
} tk__level;

struct tk_world {
    tk_engine_t *engine;     /* owner (may be NULL in unit tests)          */

    /* time, all in ns (see world.h) */
    uint64_t frame;          /* frames completed (GFrameCounter)           */
    uint64_t serial;         /* like frame, never restored (tk_world_serial) */
    uint64_t time_ns;        /* world time, stops while paused             */
    uint64_t unpaused_ns;    /* unpaused time                              */
    uint64_t real_ns;        /* real time, undilated                       */
    uint64_t dt_ns;          /* world dt of the current/last frame         */
    uint64_t raw_dt_ns;      /* raw dt of the current/last frame           */
    double dilation;         /* global time dilation                       */
    bool paused;             /* requested pause state                      */
    bool frame_paused;       /* the current/last frame is a pause frame    */
    bool in_frame;           /* inside tk__world_tick                      */
    bool par;                /* a parallel section runs (tick.c): the world
                                must not change (TK_PAR_GUARD)             */
    _Atomic uint32_t par_refused; /* calls refused in the current section  */
    bool ticked;             /* the world ticked; the frame has not ended
                                (tk__world_end_frame): tk_world_frames_done */
    uint64_t steps;          /* frames to run unpaused while paused        */

    /* levels: slot 0 unused so that TK_LEVEL_NONE == 0 */
    tk__level *levels;
    size_t n_levels_cap;     /* slots allocated                            */
    size_t n_levels_live;
    uint32_t level_order_next;

    struct tk__ticks *ticks;
    struct tk__timers *timers;
    struct tk__tickables *tickables;

    /* statistics */
    uint64_t (*stats_clock)(void *ud);
    void *stats_clock_ud;
    tk_world_frame_stats fstats;
    bool prof_on;            /* a profiler is installed (tk_world_set_profiler) */
    tk_profiler prof;        /* the profiler, when prof_on                  */

    void *user;              /* tk_world_set_user                          */
    char errbuf[256];        /* tk_world_last_error                        */
};

/* Set the world's last-error sentence and return `code` (for `return
 * tk__world_error(w, TK_EINVAL, "interval must be ...")`). */
int tk__world_error(tk_world_t *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Create / free a world (the engine owns it). */
int tk__world_new(tk_engine_t *e, double dilation, tk_world_t **out);
void tk__world_free(tk_world_t *w);
/* What belongs to the engine moves from `from` to `to` (tk_engine_swap_world). */
void tk__world_adopt(tk_world_t *to, tk_world_t *from);

/* The engine's worker pool (pool_int.h), NULL with one thread. */
struct tk__pool *tk__engine_pool(const tk_engine_t *e);
/* ns of expected parallel work worth splitting over the pool. */
uint64_t tk__engine_split_ns(const tk_engine_t *e);

/* A call made while a parallel section runs (w->par): logged (once per
 * section, naming `what` and the class ticking), TK_ESTATE.  tick.c. */
int tk__par_refuse(tk_world_t *w, const char *what);

/* First line of a call that changes the world: refused in a parallel
 * section. */
#define TK_PAR_GUARD(w, what)                                                  \
    do {                                                                       \
        if (TK_UNLIKELY((w) && (w)->par))                                      \
            return tk__par_refuse((w), (what));                                \
    } while (0)
/* The same for a call without a result: refused and ignored. */
#define TK_PAR_GUARD_VOID(w, what)                                             \
    do {                                                                       \
        if (TK_UNLIKELY((w) && (w)->par)) {                                    \
            tk__par_refuse((w), (what));                                       \
            return;                                                            \
        }                                                                      \
    } while (0)

/* The engine is in its request hooks (wait, pre_world): the previous
 * frame's deferred commands, before its frame counter moved (timer.c). */
bool tk__engine_deferred(const tk_engine_t *e);

/* One world tick with the raw dt (step 4 of a frame, engine.h). */
void tk__world_tick(tk_world_t *w, uint64_t raw_dt_ns);
/* The frame counter + 1, at the very end of the frame. */
void tk__world_end_frame(tk_world_t *w);

/* Level slot for a live id, or NULL. */
tk__level *tk__level_get(const tk_world_t *w, tk_level_id id);

/* Monotonic ns for statistics (0 when no stats clock is set). */
static inline uint64_t tk__world_stats_now(const tk_world_t *w)
{
    return w->stats_clock ? w->stats_clock(w->stats_clock_ud) : 0;
}

/* Report a profiling event (only while w->prof_on). */
static inline void tk__world_prof(tk_world_t *w, tk_prof_kind kind, uint64_t start_ns,
                                  uint64_t ns, uint32_t n)
{
    tk_prof_event ev = {.kind = kind, .start_ns = start_ns, .ns = ns, .n = n,
                        .pause_frame = w->frame_paused};
    w->prof.fn(w->prof.ud, &ev);
}

#endif
