/*
 * oslab_int.h - an ordered slab: the registry under the tickables (tickable.c)
 * and the core ticker's delegates (ticker.c).
 *
 * An array of caller-sized elements, each starting with a tk__oslab_link,
 * threaded in the order they were added.  An id is generation << 32 | index;
 * the generation is never 0 and is bumped on release, so a stale id is
 * detected even once its index is reused (free indexes are reused LIFO).
 * Removal during a caller's pass is "doom": the id is stale at once but the
 * element stays linked, so the walk goes on; after the pass the caller pops
 * the doomed elements, in removal order, and releases them.
 *
 * Costs: lookup, add, release and doom O(1), add amortised (the array grows);
 * add_at too, plus the indexes it skips.  Nothing else allocates.
 *
 * What it deliberately is not: a walk policy or iterator (callers walk head
 * and link.next themselves), an owner of the payload (no free_ud: release
 * zeroes the element, read it first), stable in memory (an add may move the
 * array: re-read by index), thread-safe, or shrinking.
 */
#ifndef TICKD_OSLAB_INT_H
#define TICKD_OSLAB_INT_H

#include <stddef.h>
#include <stdint.h>

#define TK__OSLAB_NIL UINT32_MAX /* "no element" in the lists */

enum tk__oslab_state { TK__OSLAB_FREE = 0, TK__OSLAB_LIVE = 1, TK__OSLAB_DOOMED = 2 };

/* The first member of every element; read-only for the callers. */
typedef struct tk__oslab_link {
    uint32_t gen;        /* generation, never 0; bumped on release */
    uint32_t prev, next; /* order list; the free list while FREE   */
    uint32_t pend_next;  /* doomed list, while DOOMED              */
    uint32_t ext;        /* index part of its id: its own index, or
                            a restored id's (an alias, see add_at) */
    uint8_t state;       /* enum tk__oslab_state                   */
} tk__oslab_link;

typedef struct tk__oslab_alias {
    uint64_t id;         /* 0 = empty */
    uint32_t idx;
} tk__oslab_alias;

typedef struct tk__oslab {
    void *base;                    /* element array                   */
    size_t elem, cap;              /* element size, elements allocated */
    uint32_t used;                 /* indexes ever handed out         */
    uint32_t head, tail;           /* order list, NIL when empty      */
    uint32_t free_head;            /* free list, LIFO                 */
    uint32_t pend_head, pend_tail; /* doomed list, in removal order   */
    size_t live;                   /* LIVE elements                   */
    tk__oslab_alias *atab;         /* restored id -> index, for ids whose
                                      index lies far past `used`; linear
                                      probing, empty in most slabs      */
    size_t acap, aused;
} tk__oslab;

static inline void *tk__oslab_at(const tk__oslab *s, uint32_t idx)
{
    return (char *)s->base + (size_t)idx * s->elem;
}

static inline uint64_t tk__oslab_id(const tk__oslab *s, uint32_t idx)
{
    const tk__oslab_link *l = tk__oslab_at(s, idx);
    return ((uint64_t)l->gen << 32) | l->ext;
}

/* `elem` is sizeof the caller's element type.  deinit frees the array only. */
void tk__oslab_init(tk__oslab *s, size_t elem);
void tk__oslab_deinit(tk__oslab *s);
/* The LIVE element `id` names, or NULL for an unknown, stale or removed id. */
void *tk__oslab_lookup(const tk__oslab *s, uint64_t id);
/* Append a LIVE element (zeroed past its link); *idx gets its index.
 * TK_ENOMEM if the array cannot grow, TK_ELIMIT past 2^32 - 1 elements. */
int tk__oslab_add(tk__oslab *s, uint32_t *idx);
/* The same under a given id, whose index must be free (snapshot restore);
 * indexes skipped over become free with generation 1.  An id whose index
 * lies far past the indexes in use (more than 2 per live element + 1024), or
 * whose index holds an alias, is placed at any free index and found through
 * the alias table: memory follows the live elements, never the ids' values.
 * TK_EINVAL for generation 0 or index NIL, TK_EEXIST if the id is live or
 * its index is not free, TK_ENOMEM. */
int tk__oslab_add_at(tk__oslab *s, uint64_t id);
/* The index of the LIVE or DOOMED element `id` names, or NIL. */
uint32_t tk__oslab_index(const tk__oslab *s, uint64_t id);
/* Unlink a LIVE or DOOMED element, zero it and free its index. */
void tk__oslab_release(tk__oslab *s, uint32_t idx);
/* Remove a LIVE element during a pass: stale id, still linked. */
void tk__oslab_doom(tk__oslab *s, uint32_t idx);
/* The oldest doomed element, still linked (release it), or NIL. */
uint32_t tk__oslab_pop_doomed(tk__oslab *s);
/* The ids the next adds take from the free list, in that order (then new
 * indexes follow, ascending, with generation 1): up to `cap` into `out`;
 * returns how many there are. */
size_t tk__oslab_free_ids(const tk__oslab *s, uint64_t *out, size_t cap);
/* Make the free list these ids (free indexes, each once), in this order,
 * with these generations; free indexes not listed follow in ascending
 * order with generation 1; indexes past the last live or listed one are
 * forgotten (never used), so a slab restored in place after a clear ends as
 * a fresh one would.  TK_EINVAL (nothing changed: an index not free, listed
 * twice, NIL, generation 0 or past the wrap), TK_ENOMEM. */
int tk__oslab_restore_free(tk__oslab *s, const uint64_t *ids, size_t n);

#endif
