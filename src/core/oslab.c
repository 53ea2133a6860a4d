/*
 * oslab.c - an ordered slab with generations (oslab_int.h).
 */
#include <stdbool.h>
#include <string.h>

#include "oslab_int.h"
#include "tickd/error.h"
#include "util_int.h"

#define NIL TK__OSLAB_NIL
/* Generations wrap below 2^21, so ids (generation << 32 | index) stay JSON-safe
 * integers (below 2^53) however often a slot is reused. */
#define GEN_MAX ((1u << 21) - 1)

static inline tk__oslab_link *lnk(const tk__oslab *s, uint32_t i) { return tk__oslab_at(s, i); }

/* Unlink from the order list (tail given) or the free list (tail NULL). */
static void unlink_from(tk__oslab *s, uint32_t idx, uint32_t *head, uint32_t *tail)
{
    tk__oslab_link *l = lnk(s, idx);
    if (l->prev != NIL)
        lnk(s, l->prev)->next = l->next;
    else
        *head = l->next;
    if (l->next != NIL)
        lnk(s, l->next)->prev = l->prev;
    else if (tail)
        *tail = l->prev;
}

/* Zero an element (FREE) with generation `gen` and push it on the free list
 * (doubly linked, so that add_at takes any index off it in O(1)). */
static void free_push(tk__oslab *s, uint32_t idx, uint32_t gen)
{
    tk__oslab_link *l = lnk(s, idx);
    memset(l, 0, s->elem);
    *l = (tk__oslab_link){
        .gen = gen, .prev = NIL, .next = s->free_head, .pend_next = NIL, .ext = idx};
    if (s->free_head != NIL)
        lnk(s, s->free_head)->prev = idx;
    s->free_head = idx;
}

/* Make `idx` (a free index or one at or past `used`) a zeroed LIVE element
 * with generation `gen` at the tail of the order list. */
static int place(tk__oslab *s, uint32_t idx, uint32_t gen)
{
    if (idx < s->used) {
        unlink_from(s, idx, &s->free_head, NULL);
    } else {
        if (tk__try_grow(&s->base, &s->cap, (size_t)idx + 1, s->elem) < 0)
            return TK_ENOMEM;
        for (uint32_t k = s->used; k < idx; k++)
            free_push(s, k, 1);
        s->used = idx + 1;
    }
    tk__oslab_link *l = lnk(s, idx);
    memset(l, 0, s->elem);
    *l = (tk__oslab_link){.gen = gen, .prev = s->tail, .next = NIL, .pend_next = NIL,
                          .ext = idx, .state = TK__OSLAB_LIVE};
    if (s->tail != NIL)
        lnk(s, s->tail)->next = idx;
    else
        s->head = idx;
    s->tail = idx;
    s->live++;
    return 0;
}

void tk__oslab_init(tk__oslab *s, size_t elem)
{
    TK_ASSERT(elem >= sizeof(tk__oslab_link));
    *s = (tk__oslab){.elem = elem, .head = NIL, .tail = NIL, .free_head = NIL};
    s->pend_head = s->pend_tail = NIL;
}

void tk__oslab_deinit(tk__oslab *s)
{
    tk_free(s->base);
    tk_free(s->atab);
}

/* ---- aliases: restored ids kept at another index ---------------------------- */

static inline size_t alias_home(const tk__oslab *s, uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id & (s->acap - 1);
}

static uint32_t alias_find(const tk__oslab *s, uint64_t id)
{
    if (!s->aused)
        return NIL;
    for (size_t i = alias_home(s, id);; i = (i + 1) & (s->acap - 1)) {
        if (s->atab[i].id == id)
            return s->atab[i].idx;
        if (!s->atab[i].id)
            return NIL;
    }
}

static void alias_insert(tk__oslab *s, uint64_t id, uint32_t idx)
{
    size_t i = alias_home(s, id);
    while (s->atab[i].id)
        i = (i + 1) & (s->acap - 1);
    s->atab[i] = (tk__oslab_alias){id, idx};
    s->aused++;
}

static int alias_reserve(tk__oslab *s)
{
    if ((s->aused + 1) * 2 <= s->acap)
        return 0;
    size_t cap = s->acap ? s->acap * 2 : 64;
    tk__oslab_alias *nt = tk_try_malloc(cap * sizeof *nt);
    if (!nt)
        return TK_ENOMEM;
    memset(nt, 0, cap * sizeof *nt);
    tk__oslab_alias *old = s->atab;
    size_t ocap = s->acap;
    s->atab = nt;
    s->acap = cap;
    s->aused = 0;
    for (size_t k = 0; k < ocap; k++)
        if (old[k].id)
            alias_insert(s, old[k].id, old[k].idx);
    tk_free(old);
    return 0;
}

static void alias_del(tk__oslab *s, uint64_t id)
{
    size_t m = s->acap - 1, i = alias_home(s, id);
    while (s->atab[i].id != id)
        i = (i + 1) & m;
    for (size_t j = i;;) {
        j = (j + 1) & m;
        if (!s->atab[j].id)
            break;
        size_t h = alias_home(s, s->atab[j].id);
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        s->atab[i] = s->atab[j];
        i = j;
    }
    s->atab[i].id = 0;
    s->aused--;
}

uint32_t tk__oslab_index(const tk__oslab *s, uint64_t id)
{
    uint32_t idx = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (gen == 0)
        return NIL;
    if (idx < s->used) {
        tk__oslab_link *l = lnk(s, idx);
        if (l->gen == gen && l->ext == idx && l->state != TK__OSLAB_FREE)
            return idx;
    }
    uint32_t a = alias_find(s, id);
    return a != NIL && lnk(s, a)->gen == gen && lnk(s, a)->state != TK__OSLAB_FREE ? a : NIL;
}

void *tk__oslab_lookup(const tk__oslab *s, uint64_t id)
{
    uint32_t idx = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (gen == 0)
        return NULL;
    if (idx < s->used) {
        tk__oslab_link *l = lnk(s, idx);
        if (l->gen == gen && l->ext == idx)
            return l->state == TK__OSLAB_LIVE ? l : NULL;
    }
    uint32_t a = alias_find(s, id);
    return a != NIL && lnk(s, a)->state == TK__OSLAB_LIVE ? lnk(s, a) : NULL;
}

int tk__oslab_add(tk__oslab *s, uint32_t *idx)
{
    uint32_t i = s->free_head != NIL ? s->free_head : s->used;
    if (i == NIL)
        return TK_ELIMIT;
    int rc = place(s, i, i < s->used ? lnk(s, i)->gen : 1);
    if (rc == 0)
        *idx = i;
    return rc;
}

int tk__oslab_add_at(tk__oslab *s, uint64_t id)
{
    uint32_t idx = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (gen == 0 || idx == NIL)
        return TK_EINVAL;
    if (alias_find(s, id) != NIL)
        return TK_EEXIST;
    bool alias;
    if (idx < s->used) {
        tk__oslab_link *l = lnk(s, idx);
        if (l->state != TK__OSLAB_FREE && l->ext == idx)
            return TK_EEXIST;
        alias = l->state != TK__OSLAB_FREE; /* an alias holds the index */
    } else {
        alias = (size_t)idx >= 2 * (s->live + 1) + 1024;
    }
    if (!alias)
        return place(s, idx, gen);
    uint32_t i = s->free_head != NIL ? s->free_head : s->used;
    if (i == NIL)
        return TK_ELIMIT;
    if (alias_reserve(s) != 0)
        return TK_ENOMEM;
    int rc = place(s, i, gen);
    if (rc)
        return rc;
    lnk(s, i)->ext = idx;
    alias_insert(s, id, i);
    return 0;
}

void tk__oslab_release(tk__oslab *s, uint32_t idx)
{
    tk__oslab_link *l = lnk(s, idx);
    TK_ASSERT(l->state != TK__OSLAB_FREE);
    if (l->state == TK__OSLAB_LIVE)
        s->live--;
    if (l->ext != idx)
        alias_del(s, ((uint64_t)l->gen << 32) | l->ext);
    unlink_from(s, idx, &s->head, &s->tail);
    free_push(s, idx, l->gen >= GEN_MAX ? 1 : l->gen + 1);
}

void tk__oslab_doom(tk__oslab *s, uint32_t idx)
{
    tk__oslab_link *l = lnk(s, idx);
    TK_ASSERT(l->state == TK__OSLAB_LIVE);
    s->live--;
    l->state = TK__OSLAB_DOOMED;
    l->pend_next = NIL;
    if (s->pend_tail != NIL)
        lnk(s, s->pend_tail)->pend_next = idx;
    else
        s->pend_head = idx;
    s->pend_tail = idx;
}

uint32_t tk__oslab_pop_doomed(tk__oslab *s)
{
    uint32_t idx = s->pend_head;
    if (idx != NIL && (s->pend_head = lnk(s, idx)->pend_next) == NIL)
        s->pend_tail = NIL;
    return idx;
}

size_t tk__oslab_free_ids(const tk__oslab *s, uint64_t *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t i = s->free_head; i != NIL; i = lnk(s, i)->next, n++)
        if (n < cap)
            out[n] = ((uint64_t)lnk(s, i)->gen << 32) | i;
    return n;
}

int tk__oslab_restore_free(tk__oslab *s, const uint64_t *ids, size_t n)
{
    /* Indexes past the last live one and the last listed one are forgotten
     * (as never used): a slab restored in place, after a clear, is then the
     * one a fresh restore makes. */
    uint32_t top = 0;
    for (uint32_t k = s->used; k-- > 0;) {
        if (lnk(s, k)->state != TK__OSLAB_FREE) {
            top = k + 1;
            break;
        }
    }
    for (size_t k = 0; k < n; k++) {
        uint32_t idx = (uint32_t)ids[k], gen = (uint32_t)(ids[k] >> 32);
        if (idx == NIL || gen == 0 || gen > GEN_MAX || (ids[k] >> 32) > GEN_MAX)
            return TK_EINVAL;
        if (idx < s->used && lnk(s, idx)->state != TK__OSLAB_FREE)
            return TK_EINVAL;
        if (idx + 1 > top)
            top = idx + 1;
    }
    if (tk__try_grow(&s->base, &s->cap, (size_t)top, s->elem) < 0)
        return TK_ENOMEM;
    uint8_t *seen = n ? tk_try_malloc(top) : NULL;
    if (n && !seen)
        return TK_ENOMEM;
    if (seen)
        memset(seen, 0, top);
    for (size_t k = 0; k < n; k++) {
        if (seen[(uint32_t)ids[k]]) {
            tk_free(seen);
            return TK_EINVAL;
        }
        seen[(uint32_t)ids[k]] = 1;
    }
    for (uint32_t k = s->used; k < top; k++) {
        tk__oslab_link *l = lnk(s, k);
        memset(l, 0, s->elem);
        *l = (tk__oslab_link){.gen = 1, .prev = NIL, .next = NIL, .pend_next = NIL, .ext = k};
    }
    s->used = top;
    /* Rebuild back to front: unlisted free indexes descending (never used:
     * generation 1, as a restore that skips an index makes it), then the
     * listed ones from the last, each with its generation. */
    s->free_head = NIL;
    for (uint32_t k = top; k-- > 0;)
        if (lnk(s, k)->state == TK__OSLAB_FREE && !(seen && seen[k]))
            free_push(s, k, 1);
    for (size_t k = n; k-- > 0;)
        free_push(s, (uint32_t)ids[k], (uint32_t)(ids[k] >> 32));
    tk_free(seen);
    return 0;
}
