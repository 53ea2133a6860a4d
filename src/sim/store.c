/*
 * store.c - dense class storage: the rows of every class's actors and
 * components, and the tick trampolines that hand them to the class.
 *
 * Layout.  A class's store is a list of chunks.  A chunk holds up to `cap`
 * rows: an array of 16-byte headers (tkp_obj: tick function, entity id,
 * level, row index, role, flags) and, 64-byte aligned after it, an array of
 * states `stride` bytes apart (the class's state_size rounded up to 8).  A
 * class's first chunk has 16 rows, each next one twice as many up to about
 * 4 MiB (at most 65535 rows; a state of 1 MiB gets four rows per chunk):
 * 65535 movers (48-byte states).  Chunks are big because a jump from one
 * chunk's states to the next's costs the stream its prefetch: measured on
 * this project's machine, a loop over 1M movers in chunks of 900 rows took
 * 1.6 - 1.9x the time of one contiguous array, 1.2x with 3640 rows, 1.0 -
 * 1.05x with 58000 (and 1.0x with 900-row pieces laid end to end).
 *
 *      chunk 0            chunk 1                        chunk 2 (appends)
 *   +-----------+  +---------------------------+  +-------------------------+
 *   | hdr[0..n) |  | hdr[0..n)                 |  | hdr[0..n)   free        |
 *   | states    |  | states                    |  | states      free        |
 *   +-----------+  +---------------------------+  +-------------------------+
 *
 * Order.  Rows are appended at the end of the last chunk in the order their
 * tick functions are registered (a spawn appends the actor's row and its
 * components', then registers their functions in that order; restores
 * likewise), and nothing ever reorders them: compaction keeps the order.  The
 * scheduler runs the functions of a lane in registration order too (tick.h),
 * so a run of a class's functions is, wherever no function of it is missing
 * (disabled, interval, unregistered, in another lane), a stretch of
 * consecutive rows: the batch trampoline hands the class pointer + stride.
 * It finds where the targets stop being consecutive rows by a binary search
 * (see stretch) and splits the run there and at chunk ends, so a run that
 * does not map to storage whole is still ticked exactly, in order, in
 * shorter pieces; a run that does costs one comparison per chunk, not a read
 * per instance.
 *
 * Destroys.  A destroyed row is marked dead: a hole, not reused.  Trailing
 * dead rows are trimmed at once and a chunk left with dead rows only is
 * freed at once; nothing moves then.  The other holes are closed by the
 * compaction pass (tks__compact), which the sim runs once per frame from the
 * engine's core ticker, after the world tick: it slides a chunk's live rows
 * down over its holes and merges a chunk into the one before it when both fit
 * in one, moving at most about a budget of rows per pass (the rest waits for
 * the next frame).  A moved row gets its new address in the scheduler
 * (tk_tick_set_target), in the id table (actors) or in its entity's extra
 * (components).  This is the only place that moves rows, hence the pointer
 * lifetimes tickd/plugin.h promises.
 *
 * Not here: what rows mean (spawn.c, entity.c), the id table (ids.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sim_int.h"
#include "tickd/log.h"

#define CHUNK_BYTES      (4096u * 1024u) /* target size of a full-size chunk     */
#define CHUNK_FIRST_ROWS 16u             /* rows of a class's first chunk           */
#define ROWS_MAX         65535u          /* rows a chunk can index (tkp_obj.row; the
                                            id table's TKS_IDB_NONE is not a row)   */
_Static_assert(ROWS_MAX <= TKS_IDB_NONE, "a chunk's rows are below the id table's none");

static void chunk_free(const tks_store *st, tks_chunk *c);

void tks__store_init(tks_store *st, tks_sim *s, const tks_class *cls)
{
    memset(st, 0, sizeof *st);
    st->sim = s;
    st->cls = cls;
    st->stride = (cls->p->state_size + 7) & ~(size_t)7;
    size_t rows = CHUNK_BYTES / (sizeof(tks_obj) + st->stride);
    if (rows < 1)
        rows = 1;
    if (rows > ROWS_MAX)
        rows = ROWS_MAX;
    st->cap_max = (uint32_t)rows;
    st->cap_next = st->cap_max < CHUNK_FIRST_ROWS ? st->cap_max : CHUNK_FIRST_ROWS;
}

void tks__store_fini(tks_store *st)
{
    for (size_t i = 0; i < st->n_chunks; i++)
        chunk_free(st, st->chunks[i]);
    tk_free(st->chunks);
    st->chunks = NULL;
    st->n_chunks = st->cap_chunks = 0;
    st->live = st->dead = 0;
}

static void trim(tks_store *st, tks_chunk *c);

/* Bytes of a chunk of `cap` rows (as chunk_new allocates it). */
static size_t chunk_bytes(const tks_store *st, uint32_t cap)
{
    return offsetof(tks_chunk, hdr) + (size_t)cap * sizeof(tks_obj) + 63 + (size_t)cap * st->stride;
}

void tks_class_storage(const tks_class *c, tks_storage_info *out)
{
    const tks_store *st = &c->store;
    memset(out, 0, sizeof *out);
    out->live = st->live;
    out->holes = st->dead;
    out->chunks = st->n_chunks;
    out->stride = st->stride;
    for (size_t i = 0; i < st->n_chunks; i++) {
        out->rows += st->chunks[i]->cap;
        out->bytes += chunk_bytes(st, st->chunks[i]->cap);
    }
}

/*
 * Chunks of HOT_MIN bytes or more are mappings of their own (whole pages),
 * so that a save child can be forked without them and handed a copy
 * (tks_hot_regions, daemon/hotmem.h): the frame writes their states every
 * frame, and copy-on-write would trap on each of those pages.
 */
#define HOT_MIN (64u << 10)

static size_t page_round(size_t n)
{
    static size_t ps;
    if (!ps) {
        long v = sysconf(_SC_PAGESIZE);
        ps = v > 0 ? (size_t)v : 4096;
    }
    return (n + ps - 1) / ps * ps;
}

static void *chunk_alloc(size_t bytes)
{
    if (bytes < HOT_MIN)
        return tk_malloc(bytes);
    void *p = mmap(NULL, page_round(bytes), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        tk_log_error("out of memory mapping %zu bytes of entity storage", page_round(bytes));
        abort();
    }
    return p;
}

static void chunk_free(const tks_store *st, tks_chunk *c)
{
    size_t bytes = chunk_bytes(st, c->cap);
    if (bytes < HOT_MIN)
        tk_free(c);
    else
        munmap(c, page_round(bytes));
}

size_t tks_hot_regions(const tks_sim *s, struct iovec *out, size_t *used, size_t max)
{
    size_t n = 0, ps = page_round(1);
    for (size_t k = 0; k < tks_class_count(s); k++) {
        const tks_store *st = &tks_class_at(s, k)->store;
        for (size_t i = 0; i < st->n_chunks; i++) {
            const tks_chunk *c = st->chunks[i];
            size_t bytes = chunk_bytes(st, c->cap);
            if (bytes < HOT_MIN)
                continue;
            if (n < max) {
                /* The states' pages: the headers before them are written
                 * only by spawns and destroys, and fork as usual. */
                uintptr_t lo = (uintptr_t)c->states / ps * ps;
                uintptr_t hi = (uintptr_t)c + page_round(bytes);
                out[n].iov_base = (void *)lo;
                out[n].iov_len = hi - lo;
                if (used) {
                    size_t u = page_round((uintptr_t)c->states + (size_t)c->n * c->stride - lo);
                    used[n] = u < hi - lo ? u : hi - lo;
                }
            }
            n++;
        }
    }
    return n;
}

static tks_chunk *chunk_new(tks_store *st, uint32_t cap)
{
    size_t head = offsetof(tks_chunk, hdr) + (size_t)cap * sizeof(tks_obj);
    /* 63 spare bytes: the states start on a cache line. */
    tks_chunk *c = chunk_alloc(chunk_bytes(st, cap));
    c->st = st;
    c->states = (unsigned char *)(((uintptr_t)c + head + 63) & ~(uintptr_t)63);
    c->stride = st->stride;
    c->n = 0;
    c->cap = cap;
    c->n_dead = 0;
    if (st->n_chunks == st->cap_chunks) {
        st->cap_chunks = st->cap_chunks ? st->cap_chunks * 2 : 4;
        st->chunks = tk_realloc(st->chunks, st->cap_chunks * sizeof *st->chunks);
    }
    c->index = (uint32_t)st->n_chunks;
    st->chunks[st->n_chunks++] = c;
    return c;
}

/* Free an empty (or all-dead) chunk. */
static void chunk_drop(tks_store *st, tks_chunk *c)
{
    size_t i = c->index;
    st->dead -= c->n_dead;
    memmove(&st->chunks[i], &st->chunks[i + 1], (st->n_chunks - i - 1) * sizeof *st->chunks);
    st->n_chunks--;
    for (size_t k = i; k < st->n_chunks; k++)
        st->chunks[k]->index = (uint32_t)k;
    chunk_free(st, c);
}

tks_obj *tks__store_append(tks_store *st, tks_id id, tk_level_id level, int comp)
{
    tks_chunk *c = st->n_chunks ? st->chunks[st->n_chunks - 1] : NULL;
    if (!c || c->n == c->cap) {
        c = chunk_new(st, st->cap_next);
        if (st->cap_next < st->cap_max)
            st->cap_next = st->cap_next * 2 < st->cap_max ? st->cap_next * 2 : st->cap_max;
    }
    uint32_t r = c->n++;
    tks_obj *o = &c->hdr[r];
    TKS_ALWAYS(id < (1ull << 53));
    o->tslot = 0;
    o->id = id;
    o->lslot = (uint16_t)level;
    o->row = (uint16_t)r;
    o->comp = (int8_t)comp;
    o->flags = 0;
    memset(c->states + (size_t)r * c->stride, 0, c->stride);
    st->live++;
    return o;
}

void tks__store_kill(tks_obj *o)
{
    tks_chunk *c = tks_chunk_of(o);
    tks_store *st = c->st;
    TKS_ALWAYS(!(o->flags & TKS_OBJ_DEAD));
    o->flags |= TKS_OBJ_DEAD;
    o->tslot = 0;
    c->n_dead++;
    st->live--;
    st->dead++;
    st->pending = true;
    /* Trailing holes go at once: nothing moves. */
    trim(st, c);
}

/* Row `o` now lives at `o` (it moved): tell whoever points at it. */
static void relink(tks_sim *s, tks_obj *o)
{
    if (o->tslot)
        TKS_ALWAYS(tk_tick_set_target(s->w, tks_obj_tick(s, o), o) == 0);
    if (o->comp == -1) {
        tks__id_move(s, o->id, o);
    } else {
        tks_extra *x = tks__extra(s, o->id);
        TKS_ALWAYS(x && o->comp < x->n_comps);
        x->comps[o->comp].o = o;
    }
}

/* Move row `from` of chunk `a` to row `to` of chunk `b` (a free row). */
static void move_row(tks_sim *s, tks_chunk *a, uint32_t from, tks_chunk *b, uint32_t to)
{
    tks_obj *dst = &b->hdr[to];
    *dst = a->hdr[from];
    dst->row = (uint16_t)to;
    memcpy(b->states + (size_t)to * b->stride, a->states + (size_t)from * a->stride, a->stride);
    relink(s, dst);
}

/* Drop the dead rows at the end of `c` (nothing moves); frees it if it
 * empties. */
static void trim(tks_store *st, tks_chunk *c)
{
    while (c->n && (c->hdr[c->n - 1].flags & TKS_OBJ_DEAD)) {
        c->n--;
        c->n_dead--;
        st->dead--;
    }
    if (c->n == 0)
        chunk_drop(st, c);
}

/* Slide the live rows of `c` down over its holes, moving at most `budget`
 * rows: an interrupted pass leaves the holes it has not closed yet as a gap
 * before the rows it has not reached, and the next pass goes on from there.
 * May free `c`.  Returns the rows moved. */
static uint64_t close_holes(tks_store *st, tks_chunk *c, uint64_t budget)
{
    uint32_t r = 0;
    while (r < c->n && !(c->hdr[r].flags & TKS_OBJ_DEAD))
        r++;
    uint32_t w = r;
    uint64_t moved = 0;
    for (; r < c->n && moved < budget; r++) {
        if (c->hdr[r].flags & TKS_OBJ_DEAD)
            continue;
        move_row(st->sim, c, r, c, w);
        /* The row it left is a hole now, the one it filled is not. */
        c->hdr[r].flags |= TKS_OBJ_DEAD;
        c->hdr[r].tslot = 0;
        moved++;
        w++;
    }
    trim(st, c);
    return moved;
}

static uint64_t compact_store(tks_store *st, uint64_t budget)
{
    uint64_t moved = 0;
    for (size_t i = 0; i < st->n_chunks && moved < budget;) {
        tks_chunk *c = st->chunks[i];
        size_t before = st->n_chunks;
        if (c->n_dead)
            moved += close_holes(st, c, budget - moved);
        if (st->n_chunks == before)
            i++;
    }
    /* Neighbours that fit in one chunk become one (order kept). */
    for (size_t i = 0; i + 1 < st->n_chunks && moved < budget;) {
        tks_chunk *a = st->chunks[i], *b = st->chunks[i + 1];
        if (a->n_dead || b->n_dead || a->n + b->n > a->cap || b->n > budget - moved) {
            i++;
            continue;
        }
        for (uint32_t r = 0; r < b->n; r++)
            move_row(st->sim, b, r, a, a->n++);
        moved += b->n;
        b->n = 0;
        chunk_drop(st, b);
    }
    if (moved < budget)
        st->pending = false;
    return moved;
}

uint64_t tks__compact(tks_sim *s, uint64_t budget)
{
    uint64_t moved = 0;
    for (size_t k = 0; k < s->n_classes && moved < budget; k++) {
        size_t i = (s->compact_next + k) % s->n_classes;
        tks_store *st = &s->classes[i]->store;
        if (!st->pending)
            continue;
        moved += compact_store(st, budget - moved);
        if (moved >= budget)
            s->compact_next = i; /* start there next time */
    }
    return moved;
}

/* ---- the trampolines ------------------------------------------------------------ */

void tks__obj_tick(void *target, float dt, tk_tick_ctx *tc)
{
    tks_obj *o = target;
    const tks_store *st = tks_chunk_of(o)->st;
    tkp_ctx c = tks__ctx(st->sim, tc);
    st->cls->p->tick(o, dt, &c);
}

/*
 * How many of o[0..max) are the consecutive rows first, first + 1, ...: the
 * length of the stretch the class can get as pointer + stride.  A run's
 * targets come in registration order (tick.h) and so do rows, so the test
 * o[k - 1] == first + k - 1 holds for every k up to the stretch's end and for
 * none after it (a target past a hole or a missing function is a later row,
 * or a row of a later chunk): a binary search finds the end, and a run that
 * maps to storage whole costs one comparison.  Sanitizer builds (make check's
 * second pass) also check every target of every stretch.
 */
static size_t stretch(tks_obj *const *o, const tks_obj *first, size_t max)
{
    if (o[max - 1] == first + (max - 1))
        return max;
    size_t lo = 1, hi = max - 1; /* the end lies in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (o[mid - 1] == first + (mid - 1))
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

#if defined(__SANITIZE_ADDRESS__) || defined(TKS_CHECK_RUNS)
#define CHECK_STRETCH(o, first, k)                                                                 \
    do {                                                                                           \
        for (size_t j_ = 0; j_ < (k); j_++)                                                        \
            TKS_ALWAYS((o)[j_] == (first) + j_);                                                   \
    } while (0)
#else
#define CHECK_STRETCH(o, first, k) ((void)0)
#endif

void tks__obj_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *tc)
{
    tks_obj *const *o = (tks_obj *const *)targets;
    const tks_store *st = tks_chunk_of(o[0])->st;
    void (*batch)(const tkp_run *, float, const tkp_ctx *) = st->cls->p->tick_batch;
    tkp_ctx c = tks__ctx(st->sim, tc);
    size_t i = 0;
    while (i < n) {
        tks_obj *first = o[i];
        tks_chunk *ch = tks_chunk_of(first);
        size_t max = ch->n - first->row;
        if (max > n - i)
            max = n - i;
        size_t k = stretch(o + i, first, max);
        CHECK_STRETCH(o + i, first, k);
        tkp_run run = {ch->states + (size_t)first->row * ch->stride, ch->stride,
                       (tkp_obj *const *)(o + i), k};
        batch(&run, dt, &c);
        i += k;
    }
}
