/*
 * ticker.c - the engine's core ticker (tickd/ticker.h; Unreal's FTSTicker,
 * UE-SEMANTICS 6).
 *
 * Delegates live in an ordered slab (oslab_int.h): handles are slot index +
 * generation, so a stale handle is detected in O(1), and the slots are
 * threaded in the order the delegates were added.  A pass (tk__ticker_tick):
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
 * itself from its callback, or a false return) dooms the delegate; the list
 * is only unlinked after the pass (in removal order), so the walk is never
 * disturbed.
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

#include "tickd/clock.h"
#include "tickd/engine.h"
#include "tickd/error.h"
#include "ticker_int.h"
#include "oslab_int.h"
#include "world_int.h"

#define NIL TK__OSLAB_NIL

typedef struct del {
    tk__oslab_link l;           /* first: gen, order, state                */
    tk_ticker_fn fn;            /* callback                                */
    void *ud;                   /* its user data                           */
    uint64_t fire_ns;           /* ticker time at which it is due          */
    uint64_t delay_ns;          /* ns between calls                        */
} del;

struct tk__ticker {
    tk__oslab s;                /* the delegates                           */
    uint64_t time_ns;           /* ticker time (CurrentTime)               */
    bool in_pass;               /* inside tk__ticker_tick                  */
};

/* tk__oslab_at with a constant stride (elem is sizeof(del)): passes are hot. */
static del *del_at(const struct tk__ticker *t, uint32_t i) { return (del *)t->s.base + i; }

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

struct tk__ticker *tk__ticker_new(void)
{
    struct tk__ticker *t = tk_calloc(1, sizeof *t);
    tk__oslab_init(&t->s, sizeof(del));
    return t;
}

void tk__ticker_free(struct tk__ticker *t)
{
    if (!t)
        return;
    TK_ASSERT(!t->in_pass);
    tk__oslab_deinit(&t->s);
    tk_free(t);
}

uint64_t tk__ticker_time_ns(const struct tk__ticker *t)
{
    return t->time_ns;
}

size_t tk__ticker_count(const struct tk__ticker *t)
{
    return t->s.live;
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
    int rc = tk__oslab_add(&t->s, &idx);
    if (rc)
        return rc;
    del *e = del_at(t, idx);
    uint64_t delay_ns = tk_s_to_ns(delay);
    *e = (del){.l = e->l, .fn = fn, .ud = ud, .fire_ns = sat_add(t->time_ns, delay_ns),
               .delay_ns = delay_ns};
    if (out)
        *out = tk__oslab_id(&t->s, idx);
    return 0;
}

int tk__ticker_remove(struct tk__ticker *t, tk_ticker_handle h)
{
    if (!tk__oslab_lookup(&t->s, h))
        return TK_ENOENT;
    if (t->in_pass)
        tk__oslab_doom(&t->s, (uint32_t)h); /* unlinked after the pass */
    else
        tk__oslab_release(&t->s, (uint32_t)h);
    return 0;
}

/*
 * One pass (see the file header).  Not reentrant: a delegate must not run
 * the engine's frame.
 */
void tk__ticker_tick(struct tk__ticker *t, double dt)
{
    TK_ASSERT(!t->in_pass);
    if (t->s.live == 0)
        return;
    t->time_ns = sat_add(t->time_ns, tk_s_to_ns(dt));
    t->in_pass = true;
    for (uint32_t i = t->s.head; i != NIL; i = del_at(t, i)->l.next) {
        /* Re-read by index after every call: an add may move the array. */
        del *e = del_at(t, i);
        if (e->l.state != TK__OSLAB_LIVE || e->fire_ns > t->time_ns)
            continue;
        bool keep = e->fn(e->ud, dt);
        e = del_at(t, i);
        if (e->l.state != TK__OSLAB_LIVE)
            continue;               /* removed from inside the call */
        if (keep)
            e->fire_ns = sat_add(t->time_ns, e->delay_ns);
        else
            tk__oslab_doom(&t->s, i);
    }
    t->in_pass = false;
    for (uint32_t i; (i = tk__oslab_pop_doomed(&t->s)) != NIL;)
        tk__oslab_release(&t->s, i);
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
