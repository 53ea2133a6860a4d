/*
 * tickable.c - tickable objects (tickd/tickable.h; Unreal's
 * FTickableGameObject, UE-SEMANTICS 5).
 *
 * The registry is a slot array (ids are slot index + generation, so a stale
 * id is detected in O(1)) threaded by a doubly linked list in the order the
 * tickables were added.  Add and remove are O(1); a pass walks the list and
 * costs one branch per tickable that does not tick.
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
 * tk_tickable_add.
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

#define NIL UINT32_MAX          /* "no slot" in the lists below */

enum slot_state {
    SLOT_FREE = 0,              /* on the free list                       */
    SLOT_LIVE = 1,              /* registered                             */
    SLOT_DOOMED = 2             /* removed during a pass, still linked    */
};

typedef struct slot {
    tk_tickable_fn fn;          /* callback                               */
    void *ud;                   /* its user data                          */
    void (*free_ud)(void *ud);  /* called once when released; may be NULL */
    uint64_t ticks;             /* times ticked                           */
    uint64_t last_frame;        /* w->frame of the last tick; 0 if never  */
    double accum_dt;            /* s, sum of the dt handed to it          */
    uint32_t gen;               /* generation, never 0; bumped on release */
    uint32_t prev, next;        /* order list (next: free list if FREE)   */
    uint32_t pend_next;         /* doomed list, while SLOT_DOOMED         */
    uint8_t type;               /* tk_tickable_type                       */
    uint8_t state;              /* enum slot_state                        */
    bool enabled;               /* IsTickable(), for CONDITIONAL          */
    bool when_paused;           /* IsTickableWhenPaused()                 */
} slot;

struct tk__tickables {
    slot *slots;                /* slot array                             */
    size_t cap;                 /* slots allocated                        */
    uint32_t used;              /* slots ever handed out (high water)     */
    uint32_t head, tail;        /* order list, NIL when empty             */
    uint32_t free_head;         /* free slots, LIFO                       */
    uint32_t pend_head, pend_tail; /* doomed slots, in removal order      */
    size_t live;                /* registered, not removed                */
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

static inline tk_tickable_id make_id(uint32_t idx, uint32_t gen)
{
    return ((uint64_t)gen << 32) | idx;
}

/* The slot of a registered (live) tickable, or NULL for an unknown, stale or
 * removed id. */
static slot *lookup(const struct tk__tickables *t, tk_tickable_id id)
{
    uint32_t idx = (uint32_t)id;
    uint32_t gen = (uint32_t)(id >> 32);
    if (gen == 0 || idx >= t->used)
        return NULL;
    slot *s = &t->slots[idx];
    if (s->gen != gen || s->state != SLOT_LIVE)
        return NULL;
    return s;
}

static void unlink_slot(struct tk__tickables *t, uint32_t idx)
{
    slot *s = &t->slots[idx];
    if (s->prev != NIL)
        t->slots[s->prev].next = s->next;
    else
        t->head = s->next;
    if (s->next != NIL)
        t->slots[s->next].prev = s->prev;
    else
        t->tail = s->prev;
    s->prev = s->next = NIL;
}

/* Put an unlinked slot back on the free list; its id goes stale. */
static void release_slot(struct tk__tickables *t, uint32_t idx)
{
    slot *s = &t->slots[idx];
    s->state = SLOT_FREE;
    s->fn = NULL;
    s->ud = NULL;
    s->free_ud = NULL;
    s->gen = s->gen + 1 ? s->gen + 1 : 1;
    s->next = t->free_head;
    t->free_head = idx;
}

/*
 * Unlink, release and then call free_ud, in that order, so that free_ud may
 * itself use the tickable API (the registry is consistent when it runs).
 */
static void destroy_now(struct tk__tickables *t, uint32_t idx)
{
    void *ud = t->slots[idx].ud;
    void (*free_ud)(void *) = t->slots[idx].free_ud;
    unlink_slot(t, idx);
    release_slot(t, idx);
    if (free_ud)
        free_ud(ud);
}

struct tk__tickables *tk__tickables_new(void)
{
    struct tk__tickables *t = tk_calloc(1, sizeof *t);
    t->head = t->tail = NIL;
    t->free_head = NIL;
    t->pend_head = t->pend_tail = NIL;
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
    while (t->head != NIL)
        destroy_now(t, t->head);
    tk_free(t->slots);
    tk_free(t);
}

/*
 * Register a tickable.  Validates the whole desc first (fn required, type in
 * range); TK_ENOMEM if the slot array cannot grow, TK_ELIMIT past 2^32 - 1
 * slots.  `out` may be NULL.  Called during a pass, the tickable first ticks
 * in the next pass.
 */
/*
 * Snapshot restore: add a tickable under a given id (its slot must be free),
 * with its counters.  Between passes only.  The order of restored tickables
 * is the order of the calls.
 */
int tk_tickable_restore(tk_world_t *w, const tk_tickable_desc *desc, tk_tickable_id id,
                        uint64_t ticks, uint64_t last_frame, double accum_dt)
{
    struct tk__tickables *t = w->tickables;
    uint32_t idx = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (!desc || !desc->fn || (unsigned)desc->type > TK_TICKABLE_NEVER)
        return tk__world_error(w, TK_EINVAL, "invalid tickable desc");
    if (gen == 0 || idx == NIL)
        return tk__world_error(w, TK_EINVAL, "invalid tickable id");
    if (t->in_pass)
        return tk__world_error(w, TK_ESTATE, "tickables cannot be restored during a pass");
    if (!isfinite(accum_dt) || accum_dt < 0)
        return tk__world_error(w, TK_EINVAL, "accum_dt must be a finite number >= 0");
    if (idx < t->used) {
        if (t->slots[idx].state != SLOT_FREE)
            return tk__world_error(w, TK_EEXIST, "tickable id %llu is taken",
                                   (unsigned long long)id);
        /* Take it off the free list. */
        uint32_t *pp = &t->free_head;
        while (*pp != NIL && *pp != idx)
            pp = &t->slots[*pp].next;
        if (*pp != idx)
            return tk__world_error(w, TK_ESTATE, "tickable slot %u is not free", idx);
        *pp = t->slots[idx].next;
    } else {
        if (tk__try_grow((void **)&t->slots, &t->cap, (size_t)idx + 1, sizeof *t->slots) < 0)
            return tk__world_error(w, TK_ENOMEM, "no memory for a tickable");
        /* Slots skipped over become free ones. */
        for (uint32_t k = t->used; k < idx; k++) {
            memset(&t->slots[k], 0, sizeof t->slots[k]);
            t->slots[k].gen = 1;
            t->slots[k].state = SLOT_FREE;
            t->slots[k].next = t->free_head;
            t->free_head = k;
        }
        t->used = idx + 1;
    }
    /* Put it at the head of the free list with the wanted generation: the
     * normal add path pops it and keeps that generation. */
    t->slots[idx].gen = gen;
    t->slots[idx].next = t->free_head;
    t->free_head = idx;
    tk_tickable_id got;
    int rc = tk_tickable_add(w, desc, &got);
    if (rc)
        return rc;
    slot *sl = &t->slots[idx];
    sl->ticks = ticks;
    sl->last_frame = last_frame;
    sl->accum_dt = accum_dt;
    return 0;
}

int tk_tickable_add(tk_world_t *w, const tk_tickable_desc *desc, tk_tickable_id *out)
{
    struct tk__tickables *t = w->tickables;
    if (!desc)
        return tk__world_error(w, TK_EINVAL, "tickable desc is NULL");
    if (!desc->fn)
        return tk__world_error(w, TK_EINVAL, "tickable fn is required");
    if ((unsigned)desc->type > TK_TICKABLE_NEVER)
        return tk__world_error(w, TK_EINVAL, "tickable type %d is not always, "
                               "conditional or never", (int)desc->type);

    uint32_t idx;
    if (t->free_head != NIL) {
        idx = t->free_head;
        t->free_head = t->slots[idx].next;
    } else {
        if (t->used == NIL)
            return tk__world_error(w, TK_ELIMIT, "too many tickables");
        if (tk__try_grow((void **)&t->slots, &t->cap, (size_t)t->used + 1,
                         sizeof *t->slots) < 0)
            return tk__world_error(w, TK_ENOMEM, "no memory for a tickable");
        idx = t->used++;
        t->slots[idx].gen = 1;
    }

    slot *s = &t->slots[idx];
    uint32_t gen = s->gen;
    memset(s, 0, sizeof *s);
    s->gen = gen;
    s->fn = desc->fn;
    s->ud = desc->ud;
    s->free_ud = desc->free_ud;
    s->type = (uint8_t)desc->type;
    s->enabled = desc->enabled;
    s->when_paused = desc->when_paused;
    s->state = SLOT_LIVE;
    s->pend_next = NIL;
    s->next = NIL;
    s->prev = t->tail;
    if (t->tail != NIL)
        t->slots[t->tail].next = idx;
    else
        t->head = idx;
    t->tail = idx;
    t->live++;
    if (out)
        *out = make_id(idx, gen);
    return 0;
}

/*
 * Remove a tickable; TK_ENOENT for an unknown, stale or already removed id.
 * Outside a pass its free_ud is called before this returns.  During a pass
 * the id goes stale at once, the tickable does not tick again (nor at all,
 * if the pass had not reached it), and free_ud is called after the pass.
 */
int tk_tickable_remove(tk_world_t *w, tk_tickable_id id)
{
    struct tk__tickables *t = w->tickables;
    slot *s = lookup(t, id);
    if (!s)
        return tk__world_error(w, TK_ENOENT, "tickable %llu not found",
                               (unsigned long long)id);
    uint32_t idx = (uint32_t)id;
    t->live--;
    if (!t->in_pass) {
        destroy_now(t, idx);
        return 0;
    }
    s->state = SLOT_DOOMED;
    s->pend_next = NIL;
    if (t->pend_tail != NIL)
        t->slots[t->pend_tail].pend_next = idx;
    else
        t->pend_head = idx;
    t->pend_tail = idx;
    return 0;
}

int tk_tickable_set_enabled(tk_world_t *w, tk_tickable_id id, bool enabled)
{
    slot *s = lookup(w->tickables, id);
    if (!s)
        return tk__world_error(w, TK_ENOENT, "tickable %llu not found",
                               (unsigned long long)id);
    s->enabled = enabled;
    return 0;
}

int tk_tickable_set_when_paused(tk_world_t *w, tk_tickable_id id, bool when_paused)
{
    slot *s = lookup(w->tickables, id);
    if (!s)
        return tk__world_error(w, TK_ENOENT, "tickable %llu not found",
                               (unsigned long long)id);
    s->when_paused = when_paused;
    return 0;
}

/* Change the type in place (a NEVER tickable stays registered). */
int tk_tickable_set_type(tk_world_t *w, tk_tickable_id id, tk_tickable_type type)
{
    if ((unsigned)type > TK_TICKABLE_NEVER)
        return tk__world_error(w, TK_EINVAL, "tickable type %d is not always, "
                               "conditional or never", (int)type);
    slot *s = lookup(w->tickables, id);
    if (!s)
        return tk__world_error(w, TK_ENOENT, "tickable %llu not found",
                               (unsigned long long)id);
    s->type = (uint8_t)type;
    return 0;
}

int tk_tickable_get(const tk_world_t *w, tk_tickable_id id, tk_tickable_info *out)
{
    if (!out)
        return TK_EINVAL;
    const slot *s = lookup(w->tickables, id);
    if (!s)
        return TK_ENOENT;
    out->id = id;
    out->type = (tk_tickable_type)s->type;
    out->enabled = s->enabled;
    out->when_paused = s->when_paused;
    out->ticks = s->ticks;
    out->last_frame = s->last_frame;
    out->accum_dt = s->accum_dt;
    out->ud = s->ud;
    return 0;
}

size_t tk_tickable_count(const tk_world_t *w)
{
    return w->tickables->live;
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
    uint32_t i;
    if (*cursor == 0) {
        i = t->head;
    } else {
        uint32_t idx = (uint32_t)*cursor;
        uint32_t gen = (uint32_t)(*cursor >> 32);
        if (idx >= t->used || t->slots[idx].gen != gen ||
            t->slots[idx].state == SLOT_FREE)
            return false;
        i = t->slots[idx].next;
    }
    while (i != NIL && t->slots[i].state != SLOT_LIVE)
        i = t->slots[i].next;
    if (i == NIL)
        return false;
    *cursor = make_id(i, t->slots[i].gen);
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
    if (t->head == NIL)
        return 0;

    uint64_t n = 0;
    uint32_t last = t->tail;
    t->in_pass = true;
    for (uint32_t i = t->head;;) {
        /* Re-read the slot by index every time: a callback may grow (move)
         * the array.  Nothing is unlinked during the pass. */
        slot *s = &t->slots[i];
        if (s->state == SLOT_LIVE && wants_tick(s, paused)) {
            s->ticks++;
            s->last_frame = w->frame;
            s->accum_dt += (double)dt;
            n++;
            s->fn(s->ud, dt, w);
        }
        if (i == last)
            break;
        i = t->slots[i].next;
        TK_ASSERT(i != NIL);
    }
    t->in_pass = false;

    /* Release the tickables removed during the pass, in removal order.  A
     * free_ud may use the API freely: the pass is over. */
    while (t->pend_head != NIL) {
        uint32_t idx = t->pend_head;
        t->pend_head = t->slots[idx].pend_next;
        if (t->pend_head == NIL)
            t->pend_tail = NIL;
        destroy_now(t, idx);
    }
    return n;
}
