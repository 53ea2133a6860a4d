/*
 * ids.c - entities by id, walks in id order, and the side table of what few
 * entities have (extras).
 *
 * The id table maps an id to its entity's actor row: a hash table of blocks
 * of TKS_IDB consecutive ids (sim_int.h), narrow (a chunk and a row index
 * per id) or wide (a row pointer per id).  Both it and the block list grow
 * with the live entities, never with the ids' values: a snapshot may name
 * any id below 2^53.  Rows move only by compaction (store.c), which tells
 * the table (tks__id_move): a move within the chunk rewrites a row index, a
 * move to another chunk widens a narrow block, and a wide block whose
 * entities end up in one chunk is narrowed again.  Ids come from a counter that only grows, so blocks are
 * created in id order and the block list is sorted, except after restores
 * (a snapshot's ids come in any order): a walk sorts it first, unless another
 * walk is under way.  A freed block leaves a NULL in the list (found through
 * the block's `li`), squeezed out when they are half of it.
 *
 * Extras (custom dilation, life span timer, the spec of a function never
 * registered, components) live in an open-addressing table by id, so an
 * entity without any costs nothing for them.  Its actor row says whether it
 * has one (TKS_OBJ_EXTRA).
 */
#include <string.h>

#include "sim_int.h"

static inline size_t id_hash(uint64_t id)
{
    id ^= id >> 33;
    id *= 0xff51afd7ed558ccdull;
    id ^= id >> 33;
    return (size_t)id;
}

/* ---- blocks: narrow and wide ---------------------------------------------------- */

static size_t blk_bytes(bool wide)
{
    return offsetof(tks_idblock, slot) + TKS_IDB * (wide ? sizeof(tks_obj *) : sizeof(uint16_t));
}

static inline uint16_t *blk_rows(tks_idblock *b) { return (uint16_t *)b->slot; }
static inline tks_obj **blk_objs(tks_idblock *b) { return (tks_obj **)b->slot; }

/* Put `nb` where `sl`'s block was (hash slot and block list) and free the
 * old one. */
static void blk_replace(tks_sim *s, tks_idslot *sl, tks_idblock *nb)
{
    tk_free(sl->b);
    sl->b = nb;
    s->blist[nb->li] = nb;
}

/* A narrow block whose rows are about to leave its chunk: a pointer per id. */
static tks_idblock *blk_widen(tks_sim *s, tks_idslot *sl)
{
    tks_idblock *b = sl->b, *w = tk_malloc(blk_bytes(true));
    memcpy(w, b, offsetof(tks_idblock, slot));
    w->wide = 1;
    w->n_ch = 0;
    for (unsigned i = 0; i < TKS_IDB; i++) {
        blk_objs(w)[i] = tks__idb_get(b, i);
        w->n_ch += blk_objs(w)[i] != NULL;
    }
    blk_replace(s, sl, w);
    return w;
}

/* A wide block's rows are all in its chunk again (n_ch == live): narrow. */
static void blk_narrow(tks_sim *s, tks_idslot *sl)
{
    tks_idblock *b = sl->b, *n = tk_malloc(blk_bytes(false));
    memcpy(n, b, offsetof(tks_idblock, slot));
    n->wide = 0;
    n->n_ch = 0;
    for (unsigned i = 0; i < TKS_IDB; i++) {
        tks_obj *o = blk_objs(b)[i];
        TKS_ALWAYS(!o || tks_chunk_of(o) == b->ch);
        blk_rows(n)[i] = o ? o->row : TKS_IDB_NONE;
    }
    blk_replace(s, sl, n);
}

/* Slot i of wide block `b` becomes `o` (NULL: none), keeping n_ch. */
static void wide_set(tks_idblock *b, unsigned i, tks_obj *o)
{
    tks_obj **e = blk_objs(b);
    if (e[i] && tks_chunk_of(e[i]) == b->ch)
        b->n_ch--;
    e[i] = o;
    if (o && tks_chunk_of(o) == b->ch)
        b->n_ch++;
}

/* After a change to a wide block (live > 0): narrow it if its rows are all in
 * its chunk; if none is, count them in the chunk of its first entity
 * (O(TKS_IDB), once per time the chunk it counted in empties of its rows). */
static void wide_settle(tks_sim *s, tks_idslot *sl)
{
    tks_idblock *b = sl->b;
    if (b->n_ch == 0) {
        tks_obj **e = blk_objs(b);
        b->ch = NULL;
        for (unsigned i = 0; i < TKS_IDB; i++) {
            if (!e[i])
                continue;
            if (!b->ch)
                b->ch = tks_chunk_of(e[i]);
            b->n_ch += tks_chunk_of(e[i]) == b->ch;
        }
    }
    if (b->n_ch == b->live)
        blk_narrow(s, sl);
}

/* blk_set's other cases: a narrow block widened, or a wide one. */
static __attribute__((noinline)) void blk_set_slow(tks_sim *s, tks_idslot *sl, unsigned i,
                                                   tks_obj *o)
{
    tks_idblock *b = sl->b->wide ? sl->b : blk_widen(s, sl);
    wide_set(b, i, o);
    wide_settle(s, sl);
}

/* Slot i of the block of `sl` becomes row `o` (not NULL). */
static inline void blk_set(tks_sim *s, tks_idslot *sl, unsigned i, tks_obj *o)
{
    tks_idblock *b = sl->b;
    if (!b->wide && tks_chunk_of(o) == b->ch)
        blk_rows(b)[i] = o->row; /* below TKS_IDB_NONE: store.c's ROWS_MAX */
    else
        blk_set_slow(s, sl, i, o);
}

const tks_entity *tks_entity_get(const tks_sim *s, tks_id id)
{
    return (const tks_entity *)tks__entity(s, id);
}

static void ids_insert_raw(tks_sim *s, uint64_t key, tks_idblock *b)
{
    size_t m = s->ids_cap - 1, h = tks__idb_home(s, key);
    while (s->ids[h].key)
        h = (h + 1) & m;
    s->ids[h].key = key;
    s->ids[h].b = b;
}

/* Squeeze the NULLs out of the block list (no walk under way). */
static void blist_squeeze(tks_sim *s)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n_blist; i++) {
        if (s->blist[i]) {
            s->blist[k] = s->blist[i];
            s->blist[k]->li = (uint32_t)k;
            k++;
        }
    }
    s->n_blist = k;
    s->n_blist_dead = 0;
}

static int block_cmp(const void *a, const void *b)
{
    uint64_t x = (*(tks_idblock *const *)a)->key, y = (*(tks_idblock *const *)b)->key;
    return x < y ? -1 : x > y;
}

/* Before a walk in id order: the block list sorted (restores may append out
 * of order).  Sorting is a cache, not a change. */
static void blist_prepare(tks_sim *s)
{
    if (!s->blist_unsorted || s->iterating)
        return;
    blist_squeeze(s);
    qsort(s->blist, s->n_blist, sizeof *s->blist, block_cmp);
    for (size_t i = 0; i < s->n_blist; i++)
        s->blist[i]->li = (uint32_t)i;
    s->blist_unsorted = false;
}

static void blist_add(tks_sim *s, tks_idblock *b)
{
    if (!s->iterating && s->n_blist_dead > 64 && s->n_blist_dead * 2 > s->n_blist)
        blist_squeeze(s);
    if (s->n_blist == s->cap_blist) {
        s->cap_blist = s->cap_blist ? s->cap_blist * 2 : 64;
        s->blist = tk_realloc(s->blist, s->cap_blist * sizeof *s->blist);
    }
    if (b->key < s->blist_max)
        s->blist_unsorted = true;
    else
        s->blist_max = b->key;
    b->li = (uint32_t)s->n_blist;
    s->blist[s->n_blist++] = b;
}

void tks__id_put(tks_sim *s, tks_id id, tks_obj *o)
{
    TKS_ALWAYS(id != 0);
    tks_idslot *sl = tks__id_slot(s, id);
    if (!sl) {
        if ((s->n_blocks + 1) * 2 > s->ids_cap) {
            tks_idslot *old = s->ids;
            size_t ocap = s->ids_cap;
            s->ids_cap = ocap ? ocap * 2 : 64;
            s->ids_shift = 64u - (unsigned)__builtin_ctzll(s->ids_cap);
            s->ids = tk_calloc(s->ids_cap, sizeof *s->ids);
            for (size_t i = 0; i < ocap; i++)
                if (old[i].key)
                    ids_insert_raw(s, old[i].key, old[i].b);
            tk_free(old);
        }
        /* A new block is narrow, in the chunk of its first row. */
        tks_idblock *b = tk_malloc(blk_bytes(false));
        memset(b, 0, offsetof(tks_idblock, slot));
        memset(b->slot, 0xff, TKS_IDB * sizeof(uint16_t));
        b->key = (id >> TKS_IDB_BITS) + 1;
        b->ch = tks_chunk_of(o);
        ids_insert_raw(s, b->key, b);
        blist_add(s, b);
        s->n_blocks++;
        sl = tks__id_slot(s, id);
    }
    sl->b->live++;
    blk_set(s, sl, id & (TKS_IDB - 1), o);
}

void tks__id_move(tks_sim *s, tks_id id, tks_obj *o)
{
    tks_idslot *sl = tks__id_slot(s, id);
    TKS_ALWAYS(sl && tks__idb_get(sl->b, id & (TKS_IDB - 1)));
    blk_set(s, sl, id & (TKS_IDB - 1), o);
}

void tks__id_drop(tks_sim *s, tks_id id)
{
    tks_idslot *sl = tks__id_slot(s, id);
    tks_idblock *blk = sl->b;
    unsigned i0 = id & (TKS_IDB - 1);
    TKS_ALWAYS(tks__idb_get(blk, i0));
    if (blk->wide)
        wide_set(blk, i0, NULL);
    else
        blk_rows(blk)[i0] = TKS_IDB_NONE;
    if (--blk->live) {
        if (blk->wide)
            wide_settle(s, sl);
        return;
    }
    /* The block's last entity: free it; backward-shift deletion of its
     * slot (no tombstones, lookups stay short). */
    s->blist[blk->li] = NULL;
    s->n_blist_dead++;
    tk_free(blk);
    s->n_blocks--;
    size_t m = s->ids_cap - 1, i = (size_t)(sl - s->ids), j = i;
    for (;;) {
        j = (j + 1) & m;
        if (!s->ids[j].key)
            break;
        size_t h = tks__idb_home(s, s->ids[j].key);
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        s->ids[i] = s->ids[j];
        i = j;
    }
    s->ids[i].key = 0;
    s->ids[i].b = NULL;
}

void tks__ids_free(tks_sim *s)
{
    for (size_t i = 0; i < s->n_blist; i++)
        tk_free(s->blist[i]);
    tk_free(s->blist);
    tk_free(s->ids);
    s->blist = NULL;
    s->ids = NULL;
    s->n_blist = s->cap_blist = s->n_blist_dead = 0;
    s->ids_cap = s->n_blocks = 0;
    s->ids_shift = 0;
    s->blist_max = 0;
    s->blist_unsorted = false;
}

/* ---- walks in id order --------------------------------------------------------- */

void tks__iter_begin(tks_sim *s, tks_iter *it)
{
    blist_prepare(s);
    if (!s->iterating && s->n_blist_dead)
        blist_squeeze(s);
    s->iterating++;
    it->bi = 0;
    it->slot = 0;
}

tks_obj *tks__iter_next(tks_sim *s, tks_iter *it)
{
    while (it->bi < s->n_blist) {
        /* Re-read the block each step: the callback may have freed it. */
        tks_idblock *b = s->blist[it->bi];
        while (b && it->slot < TKS_IDB) {
            tks_obj *o = tks__idb_get(b, it->slot++);
            if (o)
                return o;
        }
        it->bi++;
        it->slot = 0;
    }
    return NULL;
}

uint64_t tks__iter_skip(tks_sim *s, tks_iter *it, uint64_t k)
{
    uint64_t skipped = 0;
    while (it->slot == 0 && it->bi < s->n_blist) {
        tks_idblock *b = s->blist[it->bi];
        if (b && skipped + b->live > k)
            break;
        skipped += b ? b->live : 0;
        it->bi++;
    }
    return skipped;
}

void tks__iter_end(tks_sim *s, tks_iter *it)
{
    (void)it;
    s->iterating--;
}

/* ---- extras --------------------------------------------------------------------- */

static tks_xslot *x_slot(const tks_sim *s, tks_id id)
{
    if (!s->xs_cap)
        return NULL;
    size_t m = s->xs_cap - 1, h = id_hash(id) & m;
    while (s->xs[h].id) {
        if (s->xs[h].id == id)
            return &s->xs[h];
        h = (h + 1) & m;
    }
    return NULL;
}

static void x_insert_raw(tks_sim *s, tks_id id, tks_extra *x)
{
    size_t m = s->xs_cap - 1, h = id_hash(id) & m;
    while (s->xs[h].id)
        h = (h + 1) & m;
    s->xs[h].id = id;
    s->xs[h].x = x;
}

tks_extra *tks__extra(const tks_sim *s, tks_id id)
{
    tks_xslot *sl = x_slot(s, id);
    return sl ? sl->x : NULL;
}

tks_extra *tks__extra_new(tks_sim *s, tks_obj *actor, size_t n_comps)
{
    TKS_ALWAYS(!(actor->flags & TKS_OBJ_EXTRA));
    if ((s->n_xs + 1) * 2 > s->xs_cap) {
        tks_xslot *old = s->xs;
        size_t ocap = s->xs_cap;
        s->xs_cap = ocap ? ocap * 2 : 64;
        s->xs = tk_calloc(s->xs_cap, sizeof *s->xs);
        for (size_t i = 0; i < ocap; i++)
            if (old[i].id)
                x_insert_raw(s, old[i].id, old[i].x);
        tk_free(old);
    }
    tks_extra *x = tk_calloc(1, sizeof *x + n_comps * sizeof(tks_compref));
    x->dilation = 1.0f;
    x->n_comps = (uint16_t)n_comps;
    x_insert_raw(s, actor->id, x);
    s->n_xs++;
    actor->flags |= TKS_OBJ_EXTRA;
    return x;
}

tks_extra *tks__extra_take(tks_sim *s, tks_id id)
{
    tks_xslot *sl = x_slot(s, id);
    if (!sl)
        return NULL;
    tks_extra *x = sl->x;
    size_t m = s->xs_cap - 1, i = (size_t)(sl - s->xs), j = i;
    for (;;) {
        j = (j + 1) & m;
        if (!s->xs[j].id)
            break;
        size_t h = id_hash(s->xs[j].id) & m;
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        s->xs[i] = s->xs[j];
        i = j;
    }
    s->xs[i].id = 0;
    s->xs[i].x = NULL;
    s->n_xs--;
    return x;
}

void tks__extras_free(tks_sim *s)
{
    for (size_t i = 0; i < s->xs_cap; i++)
        tk_free(s->xs[i].x);
    tk_free(s->xs);
    s->xs = NULL;
    s->xs_cap = s->n_xs = 0;
}

tks_obj *tks__comp(const tks_sim *s, const tks_obj *e, int comp)
{
    if (comp < 0 || !(e->flags & TKS_OBJ_EXTRA))
        return NULL;
    const tks_extra *x = tks__extra(s, e->id);
    return x && comp < x->n_comps ? x->comps[comp].o : NULL;
}

size_t tks__n_comps(const tks_sim *s, const tks_obj *e)
{
    if (!(e->flags & TKS_OBJ_EXTRA))
        return 0;
    const tks_extra *x = tks__extra(s, e->id);
    return x ? x->n_comps : 0;
}
