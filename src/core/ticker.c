/*
 * ticker.c - the engine's core ticker (tickd/ticker.h; Unreal's FTSTicker,
 * UE-SEMANTICS 6).
 *
 * Delegates live in a slot array (handles are slot index + generation, so a
 * stale handle is detected in O(1)) threaded by a doubly linked list in the
 * order they were added.  A pass (tk__ticker_tick):
 *   1. returns at once if no delegate is registered: the ticker's time does
 *      not advance (Unreal's "if empty, return without advancing");
 *   2. time += dt;
 *   3. walks the list to its end as it is at each step, so a delegate added
 *      during the pass is processed in the same pass (a 0-delay one fires at
 *      once); a delegate whose fire time is still ahead is skipped; a due one
 *      is called with the frame's dt (not the time since its last call) and,
 *      if it returns true, is rescheduled to time + delay (no catch-up: the
 *      skew accumulates, as in Unreal), otherwise removed.
 * Removal during a pass (tk_ticker_remove, including a delegate removing
 * itself from its callback, or a false return) marks the delegate; the list
 * is only unlinked after the pass, so the walk is never disturbed.
 *
 * Time is kept in integer nanoseconds, so "due at exactly time + delay"
 * means exactly that (Unreal keeps doubles).  No memory is allocated by a
 * pass.
 *
 * What it deliberately is not: thread-safe (Unreal's ticker accepts adds from
 * any thread; tickd's frame thread is the only caller, see world.h), nor a
 * timer manager (no pause, no catch-up, no free_ud).
 */
#include <math.h>
#include <string.h>

#include "tickd/clock.h"
#include "tickd/engine.h"
#include "tickd/error.h"
#include "ticker_int.h"
#include "world_int.h"

#define NIL UINT32_MAX          /* "no slot" in the lists below */

enum del_state {
    DEL_FREE = 0,               /* on the free list                        */
    DEL_LIVE = 1,               /* registered                              */
    DEL_DOOMED = 2              /* removed during a pass, still linked     */
};

typedef struct del {
    tk_ticker_fn fn;            /* callback                                */
    void *ud;                   /* its user data                           */
    uint64_t fire_ns;           /* ticker time at which it is due          */
    uint64_t delay_ns;          /* ns between calls                        */
    uint32_t gen;               /* generation, never 0; bumped on release  */
    uint32_t prev, next;        /* order list (next: free list if FREE)    */
    uint32_t pend_next;         /* doomed list, while DEL_DOOMED           */
    uint8_t state;              /* enum del_state                          */
} del;

struct tk__ticker {
    del *d;                     /* slot array                              */
    size_t cap;                 /* slots allocated                         */
    uint32_t used;              /* slots ever handed out (high water)      */
    uint32_t head, tail;        /* order list, NIL when empty              */
    uint32_t free_head;         /* free slots, LIFO                        */
    uint32_t pend_head;         /* doomed slots                            */
    size_t live;                /* registered, not removed                 */
    uint64_t time_ns;           /* ticker time (CurrentTime)               */
    bool in_pass;               /* inside tk__ticker_tick                  */
};

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static del *lookup(const struct tk__ticker *t, tk_ticker_handle h)
{
    uint32_t idx = (uint32_t)h;
    uint32_t gen = (uint32_t)(h >> 32);
    if (gen == 0 || idx >= t->used)
        return NULL;
    del *e = &t->d[idx];
    if (e->gen != gen || e->state != DEL_LIVE)
        return NULL;
    return e;
}

static void unlink_release(struct tk__ticker *t, uint32_t idx)
{
    del *e = &t->d[idx];
    if (e->prev != NIL)
        t->d[e->prev].next = e->next;
    else
        t->head = e->next;
    if (e->next != NIL)
        t->d[e->next].prev = e->prev;
    else
        t->tail = e->prev;
    e->prev = NIL;
    e->state = DEL_FREE;
    e->fn = NULL;
    e->ud = NULL;
    e->gen = e->gen + 1 ? e->gen + 1 : 1;
    e->next = t->free_head;
    t->free_head = idx;
}

/* Remove a live delegate: at once outside a pass, marked during one. */
static void doom(struct tk__ticker *t, uint32_t idx)
{
    t->live--;
    if (!t->in_pass) {
        unlink_release(t, idx);
        return;
    }
    t->d[idx].state = DEL_DOOMED;
    t->d[idx].pend_next = t->pend_head;
    t->pend_head = idx;
}

struct tk__ticker *tk__ticker_new(void)
{
    struct tk__ticker *t = tk_calloc(1, sizeof *t);
    t->head = t->tail = NIL;
    t->free_head = NIL;
    t->pend_head = NIL;
    return t;
}

void tk__ticker_free(struct tk__ticker *t)
{
    if (!t)
        return;
    TK_ASSERT(!t->in_pass);
    tk_free(t->d);
    tk_free(t);
}

uint64_t tk__ticker_time_ns(const struct tk__ticker *t)
{
    return t->time_ns;
}

size_t tk__ticker_count(const struct tk__ticker *t)
{
    return t->live;
}

/*
 * Register `fn` due at time + delay.  TK_EINVAL for a NULL fn or a delay that
 * is negative, NaN or infinite; TK_ENOMEM if the slot array cannot grow;
 * TK_ELIMIT past 2^32 - 1 slots.  `out` may be NULL.
 */
int tk__ticker_add(struct tk__ticker *t, double delay, tk_ticker_fn fn, void *ud,
                   tk_ticker_handle *out)
{
    if (!fn || !isfinite(delay) || delay < 0)
        return TK_EINVAL;
    uint32_t idx;
    if (t->free_head != NIL) {
        idx = t->free_head;
        t->free_head = t->d[idx].next;
    } else {
        if (t->used == NIL)
            return TK_ELIMIT;
        if (tk__try_grow((void **)&t->d, &t->cap, (size_t)t->used + 1,
                         sizeof *t->d) < 0)
            return TK_ENOMEM;
        idx = t->used++;
        t->d[idx].gen = 1;
    }
    del *e = &t->d[idx];
    uint32_t gen = e->gen;
    memset(e, 0, sizeof *e);
    e->gen = gen;
    e->fn = fn;
    e->ud = ud;
    e->delay_ns = tk_s_to_ns(delay);
    e->fire_ns = sat_add(t->time_ns, e->delay_ns);
    e->state = DEL_LIVE;
    e->pend_next = NIL;
    e->next = NIL;
    e->prev = t->tail;
    if (t->tail != NIL)
        t->d[t->tail].next = idx;
    else
        t->head = idx;
    t->tail = idx;
    t->live++;
    if (out)
        *out = ((uint64_t)gen << 32) | idx;
    return 0;
}

int tk__ticker_remove(struct tk__ticker *t, tk_ticker_handle h)
{
    if (!lookup(t, h))
        return TK_ENOENT;
    doom(t, (uint32_t)h);
    return 0;
}

/*
 * One pass (see the file header).  Not reentrant: a delegate must not run
 * the engine's frame.
 */
void tk__ticker_tick(struct tk__ticker *t, double dt)
{
    TK_ASSERT(!t->in_pass);
    if (t->live == 0)
        return;
    t->time_ns = sat_add(t->time_ns, tk_s_to_ns(dt));
    t->in_pass = true;
    for (uint32_t i = t->head; i != NIL; i = t->d[i].next) {
        /* Re-read by index after every call: an add may move the array. */
        del *e = &t->d[i];
        if (e->state != DEL_LIVE || e->fire_ns > t->time_ns)
            continue;
        bool keep = e->fn(e->ud, dt);
        e = &t->d[i];
        if (e->state != DEL_LIVE)
            continue;               /* removed from inside the call */
        if (keep)
            e->fire_ns = sat_add(t->time_ns, e->delay_ns);
        else
            doom(t, i);
    }
    t->in_pass = false;
    while (t->pend_head != NIL) {
        uint32_t idx = t->pend_head;
        t->pend_head = t->d[idx].pend_next;
        unlink_release(t, idx);
    }
}

int tk_ticker_add(tk_engine_t *e, double delay, tk_ticker_fn fn, void *ud,
                  tk_ticker_handle *out)
{
    tk_world_t *w = tk_engine_world(e);
    if (!fn)
        return tk__world_error(w, TK_EINVAL, "ticker fn is required");
    if (!isfinite(delay) || delay < 0)
        return tk__world_error(w, TK_EINVAL,
                               "ticker delay must be finite and >= 0 (got %g)",
                               delay);
    int rc = tk__ticker_add(tk__engine_ticker(e), delay, fn, ud, out);
    if (rc == TK_ENOMEM)
        return tk__world_error(w, rc, "no memory for a ticker delegate");
    if (rc == TK_ELIMIT)
        return tk__world_error(w, rc, "too many ticker delegates");
    return rc;
}

int tk_ticker_remove(tk_engine_t *e, tk_ticker_handle h)
{
    int rc = tk__ticker_remove(tk__engine_ticker(e), h);
    if (rc == TK_ENOENT)
        return tk__world_error(tk_engine_world(e), rc,
                               "ticker delegate %llu not found",
                               (unsigned long long)h);
    return rc;
}
