/*
 * tickable.c - tickable objects (tickd/tickable.h; Unreal's
 * FTickableGameObject, UE-SEMANTICS 5).
 *
 * The registry is an ordered slab (oslab_int.h): ids are slot index +
 * generation, so a stale id is detected in O(1), and the slots are threaded
 * in the order the tickables were added.  Add and remove are O(1); a pass
 * walks the list and costs one branch per tickable that does not tick.
 *
 * Mid-pass changes (a callback may add, remove or change any tickable,
 * including itself) never disturb the current iteration:
 *   - the pass remembers the list's tail when it starts and stops there, so a
 *     tickable added during the pass (appended after that tail) first ticks
 *     in the next pass;
 *   - a tickable removed during the pass is marked "doomed" and stays linked
 *     until the pass ends: its id is stale at once, it does not tick if it
 *     had not been reached, and its slot is released (and free_ud called)
 *     after the pass, in the order of removal;
 *   - type, enabled and when_paused are read when the entry is reached, so a
 *     change to an entry not yet reached affects the current pass (as
 *     Unreal's SetTickableTickType).
 * No memory is allocated by a pass; the slot array grows only in
 * tk_tickable_add and tk_tickable_restore.
 *
 * What this module deliberately is not: it has no world-less tickables (every
 * tickable belongs to its world and ticks with the world's dilated dt), no
 * NewObject type (the type is given at creation), no IsTickableInEditor, and
 * it does not time the pass (the world does, for statistics).
 */
#include <math.h>
#include <string.h>

#include "tickd/error.h"
#include "tickd/tickable.h"
#include "tickable_int.h"
#include "oslab_int.h"

#define NIL TK__OSLAB_NIL

typedef struct slot {
    tk__oslab_link l;           /* first: gen, order, state               */
    uint8_t type;               /* tk_tickable_type                       */
    bool enabled;               /* IsTickable(), for CONDITIONAL          */
    bool when_paused;           /* IsTickableWhenPaused()                 */
    tk_tickable_fn fn;          /* callback                               */
    void *ud;                   /* its user data                          */
    void (*free_ud)(void *ud);  /* called once when released; may be NULL */
    uint64_t ticks;             /* times ticked                           */
    uint64_t last_frame;        /* w->frame of the last tick; 0 if never  */
    double accum_dt;            /* s, sum of the dt handed to it          */
} slot;

struct tk__tickables {
    tk__oslab s;                /* the slots                              */
    bool in_pass;               /* inside tk__tickables_tick              */
};

static const char *const type_names[] = {"always", "conditional", "never"};

const char *tk_tickable_type_name(tk_tickable_type t)
{
    if ((unsigned)t >= TK_ARRAY_LEN(type_names))
        return "unknown";
    return type_names[t];
}

int tk_tickable_type_parse(const char *s, tk_tickable_type *out)
{
    if (!s || !out)
        return TK_EINVAL;
    for (unsigned i = 0; i < TK_ARRAY_LEN(type_names); i++) {
        if (strcmp(s, type_names[i]) == 0) {
            *out = (tk_tickable_type)i;
            return 0;
        }
    }
    return TK_EINVAL;
}

/* tk__oslab_at with a constant stride (elem is sizeof(slot)): passes are hot. */
static slot *slot_at(const struct tk__tickables *t, uint32_t i) { return (slot *)t->s.base + i; }

/* The live slot `id` names; NULL, with the world's error set, if none. */
static slot *find(tk_world_t *w, tk_tickable_id id)
{
    slot *s = tk__oslab_lookup(&w->tickables->s, id);
    if (!s)
        tk__world_error(w, TK_ENOENT, "tickable %llu not found", (unsigned long long)id);
    return s;
}

/*
 * Unlink, release and then call free_ud, in that order, so that free_ud may
 * itself use the tickable API (the registry is consistent when it runs).
 */
static void destroy_now(struct tk__tickables *t, uint32_t idx)
{
    void *ud = slot_at(t, idx)->ud;
    void (*free_ud)(void *) = slot_at(t, idx)->free_ud;
    tk__oslab_release(&t->s, idx);
    if (free_ud)
        free_ud(ud);
}

struct tk__tickables *tk__tickables_new(void)
{
    struct tk__tickables *t = tk_calloc(1, sizeof *t);
    tk__oslab_init(&t->s, sizeof(slot));
    return t;
}

/*
 * Free every tickable (calling its free_ud, in the order they were added)
 * and the registry.  Must not be called during a pass.  NULL is a no-op.
 */
void tk__tickables_free(tk_world_t *w, struct tk__tickables *t)
{
    (void)w;
    if (!t)
        return;
    TK_ASSERT(!t->in_pass);
    /* Pop from the head each time: a free_ud that adds or removes tickables
     * leaves the list consistent for the next iteration. */
    while (t->s.head != NIL)
        destroy_now(t, t->s.head);
    tk__oslab_deinit(&t->s);
    tk_free(t);
}

/* The second half of add and restore: a slot for a validated desc, at `id`
 * if it is not 0 (restore, with counters) or after the tail. */
static int add_slot(tk_world_t *w, const tk_tickable_desc *d, tk_tickable_id id, uint64_t ticks,
                    uint64_t last_frame, double accum_dt, tk_tickable_id *out)
{
    struct tk__tickables *t = w->tickables;
    uint32_t idx = (uint32_t)id;
    int rc = id ? tk__oslab_add_at(&t->s, id) : tk__oslab_add(&t->s, &idx);
    if (rc == TK_EEXIST)
        return tk__world_error(w, rc, "tickable id %llu is taken", (unsigned long long)id);
    if (rc == TK_ELIMIT)
        return tk__world_error(w, rc, "too many tickables");
    if (rc)
        return tk__world_error(w, rc, "no memory for a tickable");
    if (id)
        idx = tk__oslab_index(&t->s, id); /* a restored id may be an alias */
    slot *s = slot_at(t, idx);
    *s = (slot){.l = s->l, .type = (uint8_t)d->type, .enabled = d->enabled,
                .when_paused = d->when_paused, .fn = d->fn, .ud = d->ud, .free_ud = d->free_ud,
                .ticks = ticks, .last_frame = last_frame, .accum_dt = accum_dt};
    if (out)
        *out = tk__oslab_id(&t->s, idx);
    return 0;
}

/*
 * Snapshot restore: add a tickable under a given id (its slot must be free),
 * with its counters.  Between passes only.  The order of restored tickables
 * is the order of the calls.
 */
int tk_tickable_restore(tk_world_t *w, const tk_tickable_desc *desc, tk_tickable_id id,
                        uint64_t ticks, uint64_t last_frame, double accum_dt)
{
    TK_PAR_GUARD(w, "tk_tickable_restore");
    struct tk__tickables *t = w->tickables;
    if (!desc || !desc->fn || (unsigned)desc->type > TK_TICKABLE_NEVER)
        return tk__world_error(w, TK_EINVAL, "invalid tickable desc");
    if ((uint32_t)(id >> 32) == 0 || (uint32_t)id == NIL)
        return tk__world_error(w, TK_EINVAL, "invalid tickable id");
    if (t->in_pass)
        return tk__world_error(w, TK_ESTATE, "tickables cannot be restored during a pass");
    if (!isfinite(accum_dt) || accum_dt < 0)
        return tk__world_error(w, TK_EINVAL, "accum_dt must be a finite number >= 0");
    return add_slot(w, desc, id, ticks, last_frame, accum_dt, NULL);
}

/*
 * Register a tickable.  Validates the whole desc first (fn required, type in
 * range); TK_ENOMEM if the slot array cannot grow, TK_ELIMIT past 2^32 - 1
 * slots.  `out` may be NULL.  Called during a pass, the tickable first ticks
 * in the next pass.
 */
int tk_tickable_add(tk_world_t *w, const tk_tickable_desc *desc, tk_tickable_id *out)
{
    TK_PAR_GUARD(w, "tk_tickable_add");
    if (!desc)
        return tk__world_error(w, TK_EINVAL, "tickable desc is NULL");
    if (!desc->fn)
        return tk__world_error(w, TK_EINVAL, "tickable fn is required");
    if ((unsigned)desc->type > TK_TICKABLE_NEVER)
        return tk__world_error(w, TK_EINVAL, "tickable type %d is not always, "
                               "conditional or never", (int)desc->type);
    return add_slot(w, desc, 0, 0, 0, 0, out);
}

/*
 * Remove a tickable; TK_ENOENT for an unknown, stale or already removed id.
 * Outside a pass its free_ud is called before this returns.  During a pass
 * the id goes stale at once, the tickable does not tick again (nor at all,
 * if the pass had not reached it), and free_ud is called after the pass.
 */
int tk_tickable_remove(tk_world_t *w, tk_tickable_id id)
{
    TK_PAR_GUARD(w, "tk_tickable_remove");
    struct tk__tickables *t = w->tickables;
    if (!find(w, id))
        return TK_ENOENT;
    uint32_t idx = tk__oslab_index(&t->s, id); /* not (uint32_t)id: aliases */
    if (t->in_pass)
        tk__oslab_doom(&t->s, idx);
    else
        destroy_now(t, idx);
    return 0;
}

int tk_tickable_set_enabled(tk_world_t *w, tk_tickable_id id, bool enabled)
{
    TK_PAR_GUARD(w, "tk_tickable_set_enabled");
    slot *s = find(w, id);
    if (s)
        s->enabled = enabled;
    return s ? 0 : TK_ENOENT;
}

int tk_tickable_set_when_paused(tk_world_t *w, tk_tickable_id id, bool when_paused)
{
    TK_PAR_GUARD(w, "tk_tickable_set_when_paused");
    slot *s = find(w, id);
    if (s)
        s->when_paused = when_paused;
    return s ? 0 : TK_ENOENT;
}

/* Change the type in place (a NEVER tickable stays registered). */
int tk_tickable_set_type(tk_world_t *w, tk_tickable_id id, tk_tickable_type type)
{
    TK_PAR_GUARD(w, "tk_tickable_set_type");
    if ((unsigned)type > TK_TICKABLE_NEVER)
        return tk__world_error(w, TK_EINVAL, "tickable type %d is not always, "
                               "conditional or never", (int)type);
    slot *s = find(w, id);
    if (s)
        s->type = (uint8_t)type;
    return s ? 0 : TK_ENOENT;
}

int tk_tickable_get(const tk_world_t *w, tk_tickable_id id, tk_tickable_info *out)
{
    if (!out)
        return TK_EINVAL;
    const slot *s = tk__oslab_lookup(&w->tickables->s, id);
    if (!s)
        return TK_ENOENT;
    *out = (tk_tickable_info){.id = id, .type = (tk_tickable_type)s->type, .enabled = s->enabled,
                              .when_paused = s->when_paused, .ticks = s->ticks,
                              .last_frame = s->last_frame, .accum_dt = s->accum_dt, .ud = s->ud};
    return 0;
}

size_t tk_tickable_count(const tk_world_t *w)
{
    return w->tickables->s.live;
}

/*
 * Iterate in the order added.  *cursor holds the id last returned (0 to
 * start).  Tickables added between calls are reached; if the tickable last
 * returned is removed between two calls outside a pass, the iteration ends
 * (returns false).
 */
bool tk_tickable_next(const tk_world_t *w, uint64_t *cursor, tk_tickable_id *out)
{
    const struct tk__tickables *t = w->tickables;
    uint32_t i = t->s.head;
    if (*cursor != 0) {
        uint32_t idx = tk__oslab_index(&t->s, *cursor);
        if (idx == NIL)
            return false;
        i = slot_at(t, idx)->l.next;
    }
    while (i != NIL && slot_at(t, i)->l.state != TK__OSLAB_LIVE)
        i = slot_at(t, i)->l.next;
    if (i == NIL)
        return false;
    *cursor = tk__oslab_id(&t->s, i);
    if (out)
        *out = *cursor;
    return true;
}

/* Whether a live tickable ticks in a frame whose pause flag is `paused`
 * (Unreal's TickObjects filter for a game world). */
static inline bool wants_tick(const slot *s, bool paused)
{
    if (s->type == TK_TICKABLE_NEVER)
        return false;
    if (s->type == TK_TICKABLE_CONDITIONAL && !s->enabled)
        return false;
    return !paused || s->when_paused;
}

/*
 * One pass, in the order added, over the tickables registered when it
 * starts.  Counters are updated before the callback runs (a callback that
 * reads its own info sees this tick counted).  Returns how many ticked.
 * Not reentrant: a callback must not run the world's frame.
 */
uint64_t tk__tickables_tick(tk_world_t *w, float dt, bool paused)
{
    struct tk__tickables *t = w->tickables;
    TK_ASSERT(!t->in_pass);
    if (t->s.head == NIL)
        return 0;

    uint64_t n = 0;
    uint32_t last = t->s.tail;
    t->in_pass = true;
    for (uint32_t i = t->s.head;;) {
        /* Re-read the slot by index every time: a callback may grow (move)
         * the array.  Nothing is unlinked during the pass. */
        slot *s = slot_at(t, i);
        if (s->l.state == TK__OSLAB_LIVE && wants_tick(s, paused)) {
            s->ticks++;
            s->last_frame = w->frame;
            s->accum_dt += (double)dt;
            n++;
            if (w->prof_on) {
                /* Profiling: each tickable timed (they are few). */
                void *ud = s->ud;
                uint64_t t0 = tk__world_stats_now(w);
                s->fn(ud, dt, w);
                tk_prof_event ev = {.kind = TK_PROF_TICKABLE, .n = 1,
                                    .id = tk__oslab_id(&t->s, i), .target = ud, .start_ns = t0,
                                    .pause_frame = paused};
                ev.ns = tk__world_stats_now(w) - t0;
                w->prof.fn(w->prof.ud, &ev);
            } else {
                s->fn(s->ud, dt, w);
            }
        }
        if (i == last)
            break;
        i = slot_at(t, i)->l.next;
        TK_ASSERT(i != NIL);
    }
    t->in_pass = false;

    /* Release the tickables removed during the pass, in removal order.  A
     * free_ud may use the API freely: the pass is over. */
    for (uint32_t i; (i = tk__oslab_pop_doomed(&t->s)) != NIL;)
        destroy_now(t, i);
    return n;
}

size_t tk_tickable_free_ids(const tk_world_t *w, tk_tickable_id *out, size_t cap)
{
    return tk__oslab_free_ids(&w->tickables->s, out, out ? cap : 0);
}

int tk_tickable_restore_free(tk_world_t *w, const tk_tickable_id *ids, size_t n)
{
    if (!w || (n && !ids))
        return TK_EINVAL;
    if (w->tickables->in_pass)
        return tk__world_error(w, TK_ESTATE, "tickables cannot be restored during a pass");
    int rc = tk__oslab_restore_free(&w->tickables->s, ids, n);
    if (rc == TK_EINVAL)
        return tk__world_error(w, rc, "a free tickable id names a slot in use, twice, or is not an id");
    if (rc)
        return tk__world_error(w, rc, "out of memory for the tickables' free slots");
    return 0;
}
