/*
 * tickd/timer.h - the world's timer manager, with Unreal's FTimerManager
 * semantics (UE-SEMANTICS 4).
 *
 * The manager is ticked once per frame with the world's dilated dt, after
 * post_physics and before the tickables, never while the world is paused.
 * Its internal time advances by that dt; a timer expires only when internal
 * time is strictly greater than its expiry.
 *
 * Rules:
 *  - A timer set while the manager has not yet ticked this frame is
 *    *pending*: it is activated at the end of this frame's pass with expiry =
 *    internal time (after the advance) + delay, so the frame's own dt does not
 *    count toward it.  Set after the pass (or from a callback, which runs
 *    inside the pass) it is pending too if the pass has not finished, else
 *    active at once.
 *  - "This frame" follows Unreal's GFrameCounter: code in the engine's wait
 *    and pre_world hooks (the daemon's requests) is Unreal's deferred
 *    commands, run at the end of the frame that just ran, before its counter
 *    moved; there a timer set or unpaused is active at once (expiry = now +
 *    delay) if that frame ticked the manager (not a pause frame).  Other code
 *    between two tk_engine_frame calls runs after the counter moved.
 *  - A looping timer fires CallCount = trunc((now - expiry) / rate) + 1 times
 *    back to back and moves its expiry by CallCount * rate.
 *  - Timers due in one pass fire in expiry order, ties in the order they were
 *    set (libuv's (deadline, seq) key; Unreal's heap leaves ties arbitrary).
 *  - Clearing is immediate and invisible at once; clearing an executing timer
 *    stops its remaining calls this pass.  Pause keeps the remaining time;
 *    unpause during or before the pass makes it pending (activated at the end
 *    of the pass), after the pass active at once.
 *  - Callbacks may set, clear, pause or unpause any timer, their own included.
 *  - set_for_next_tick: active with expiry = current internal time, so it
 *    fires in the next pass in which time advances (this frame's pass if set
 *    before it, else next frame's).
 *  - * rate <= 0 is TK_EINVAL in tickd (Unreal silently clears the handle).
 *
 * Handles are 64-bit: slot index in the low 24 bits, a serial number in the
 * 29 bits above (1 .. 2^29-1, wrapping), so a handle is below 2^53 (exact in
 * a JSON double).  A cleared or finished timer's handle is not confused with
 * a new timer's until the serial wraps (536 million timer sets later, and
 * then only in the same slot).  At most TK_TIMER_MAX timers exist at once.
 *
 * Data structure: see the header comment of src/core/timer.c (a hierarchical
 * timing wheel with exact (expiry, seq) ordering inside the due slot).
 */
#ifndef TICKD_TIMER_H
#define TICKD_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "world.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t tk_timer_handle;
#define TK_TIMER_NONE ((tk_timer_handle)0)
#define TK_TIMER_MAX ((1u << 24) - 1)
#define TK_TIMER_SERIAL_MAX ((UINT64_C(1) << 29) - 1) /* largest serial of a handle */

typedef enum tk_timer_status {
    TK_TIMER_PENDING = 0,
    TK_TIMER_ACTIVE = 1,
    TK_TIMER_PAUSED = 2,
    TK_TIMER_EXECUTING = 3
} tk_timer_status;

const char *tk_timer_status_name(tk_timer_status s); /* "pending", ... */

/* Called once per expiry (CallCount times for a catch-up). */
typedef void (*tk_timer_fn)(void *ud, tk_timer_handle h, tk_world_t *w);

typedef struct tk_timer_desc {
    double rate;            /* s, > 0, finite                                 */
    bool loop;
    double first_delay;     /* s; < 0 means `rate` (Unreal's FirstDelay = -1)  */
    tk_timer_fn fn;         /* may be NULL: a pollable clock                  */
    void *ud;               /* passed to fn; owned by the timer if free_ud    */
    void (*free_ud)(void *ud); /* called when the timer is gone for good      */
    uint64_t owner;         /* for tk_timer_clear_owner; 0 = none             */
} tk_timer_desc;

/* Set a timer.  Validates first; TK_ELIMIT past TK_TIMER_MAX. */
int tk_timer_set(tk_world_t *w, const tk_timer_desc *desc, tk_timer_handle *out);

/* SetTimerForNextTick: desc->rate, loop and first_delay are ignored. */
int tk_timer_set_for_next_tick(tk_world_t *w, const tk_timer_desc *desc,
                               tk_timer_handle *out);

/* Each returns TK_ENOENT for an unknown, cleared or finished handle. */
int tk_timer_clear(tk_world_t *w, tk_timer_handle h);
int tk_timer_pause(tk_world_t *w, tk_timer_handle h);   /* no-op if paused   */
int tk_timer_unpause(tk_world_t *w, tk_timer_handle h); /* no-op if !paused  */

/*
 * Snapshot restore: a timer under its saved handle (its slot must be free) in
 * status pending, active or paused, with `remaining` s (finite; negative for
 * a timer paused while due, as tk_timer_get reports it) and `fired` calls.
 * desc->rate 0 with loop false is a timer of tk_timer_set_for_next_tick.
 * Between passes only.  Later handles never collide with restored ones.
 * Ties on expiry fire in the order the timers were restored.  Restoring into
 * a manager with no live timer, in slot order, costs O(1) per timer; out of
 * slot order a restore may walk the free list.  A handle whose slot lies far
 * past the records in use (more than 2 per live timer + 1024) is kept in any
 * free record and found through an alias table, so memory follows the live
 * timers, never the slots' values; tk_timer_next then lists it in record
 * order rather than slot order.
 */
int tk_timer_restore(tk_world_t *w, const tk_timer_desc *desc, tk_timer_handle h,
                     tk_timer_status status, double remaining, uint64_t fired);

/* Clear every timer whose owner is `owner`; returns how many. */
size_t tk_timer_clear_owner(tk_world_t *w, uint64_t owner);

typedef struct tk_timer_info {
    tk_timer_handle handle;
    tk_timer_status status;
    double rate;            /* s                                             */
    bool loop;
    double elapsed;         /* s (GetTimerElapsed; may be < 0 when pending)  */
    double remaining;       /* s (GetTimerRemaining)                         */
    uint64_t fired;         /* expiries run so far (callback invocations;
                               counted also when fn is NULL)                 */
    uint64_t owner;
    void *ud;
    uint64_t order;         /* tie order: of two timers with the same expiry,
                               the one with the smaller order fires first
                               (comparable within one world only)           */
} tk_timer_info;

int tk_timer_get(const tk_world_t *w, tk_timer_handle h, tk_timer_info *out);
bool tk_timer_exists(const tk_world_t *w, tk_timer_handle h);

/* Iterate live timers in record (= slot, unless aliased) order: *cursor = 0
 * to start; false at end. */
bool tk_timer_next(const tk_world_t *w, uint64_t *cursor, tk_timer_handle *out);

typedef struct tk_timer_counts {
    size_t active, paused, pending;  /* executing counts as active */
} tk_timer_counts;

void tk_timer_get_counts(const tk_world_t *w, tk_timer_counts *out);

/* Internal time of the manager (s) and whether it has ticked this frame. */
double tk_timer_manager_time(const tk_world_t *w);
bool tk_timer_ticked_this_frame(const tk_world_t *w);
/* Whether it ticked in the last frame completed (tk_world_frames_done), the
 * same wherever it is asked between or after frames (unlike "this frame",
 * which depends on where the engine is): what a snapshot keeps. */
bool tk_timer_ticked_last_frame(const tk_world_t *w);

/* Seconds of internal time until the earliest active timer expires, or a
 * negative value if none is active. */
double tk_timer_next_due(const tk_world_t *w);

/* ---- what a snapshot needs beyond the timers (exact restores) ------------
 *
 * Restoring every timer under its handle is not enough for a restored world
 * to go on exactly as the saved one: the handles later timers get, the order
 * of equal expiries and whether the manager ticked in the last frame are
 * state too.  A journal replayed on a snapshot (the daemon's crash
 * recovery) needs them equal.  Saved with the getters below, put back with
 * the restore calls once every timer is restored, between passes.
 */

/* The serial of the last handle handed out (0 before the first). */
uint64_t tk_timer_serial(const tk_world_t *w);

/* The free records' slots in the order the next timers will take them
 * (after them, new records in ascending slot order).  Copies up to `cap`
 * into `out` (out may be NULL with cap 0) and returns how many there are. */
size_t tk_timer_free_slots(const tk_world_t *w, uint32_t *out, size_t cap);

/*
 * Put back the handle allocation state: the serial and the free slots (as
 * tk_timer_free_slots reported them).  Each listed slot must be free and
 * below TK_TIMER_MAX, and listed once; free records not listed follow the
 * listed ones in ascending slot order, and records past the last live or
 * listed one are forgotten (a manager restored after a clear then gives the
 * handles a fresh one would).  TK_EINVAL (nothing changes),
 * TK_ESTATE during a pass, TK_ENOMEM.
 */
int tk_timer_restore_alloc(tk_world_t *w, uint64_t serial, const uint32_t *free_slots,
                           size_t n);

/*
 * Put back the tie order: of the listed live timers (each at most once),
 * h[i] fires before h[j] at an equal expiry when i < j, and all of them
 * after every timer not listed.  (Restore every timer, then call this with
 * all of them sorted by their saved `order`.)  TK_ENOENT for an unknown
 * handle, TK_EINVAL for one listed twice (nothing changes), TK_ESTATE during
 * a pass.
 */
int tk_timer_restore_order(tk_world_t *w, const tk_timer_handle *h, size_t n);

/*
 * Whether the manager ticked in the last frame of the saved world
 * (tk_timer_ticked_last_frame): if so, a timer
 * set or unpaused before the next frame is active at once, as it would have
 * been.  Call after tk_world_restore_time (which forgets it), between frames.
 */
void tk_timer_restore_ticked(tk_world_t *w, bool ticked);

#ifdef __cplusplus
}
#endif
#endif
