/*
 * timer.c - the world's timer manager: Unreal's FTimerManager semantics
 * (UE-SEMANTICS 4, tickd/timer.h) on a hierarchical timing wheel.
 *
 * What it is
 * ----------
 * Timers live in a slab of records (index-linked, with a free list) and, while
 * active, in one list of a hierarchical timing wheel over the manager's
 * internal time in nanoseconds.  A pass (tk__timers_tick) advances internal
 * time by the world's dilated dt, pulls every timer with expiry < new time out
 * of the slots it crosses into a scratch array, sorts that due set by
 * (expiry, seq), and fires it in that order with Unreal's catch-up; then the
 * timers that were pending are activated.
 *
 * What it deliberately is not: it has no clock of its own (time is the dt the
 * world hands in), no threads, and no bMaxOncePerFrame or level-collection
 * context (the server has one collection).
 *
 * The wheel (in the manner of Linux's kernel/time/timer.c)
 * --------------------------------------------------------
 * A wheel tick is 2^20 ns (1.048576 ms): game timers are set in tens of ms to
 * minutes, and a 60 Hz frame (16.7 ms) crosses about 16 level-0 slots.  There
 * are 8 levels of 64 slots; each level's slot is 64 times coarser than the one
 * below:
 *
 *   level  slot granularity        holds expiries up to (ahead of the clock)
 *     0       1.048576 ms             67.1 ms
 *     1      67.1 ms                   4.29 s
 *     2       4.29 s                 274.9 s   (4.6 min)
 *     3     274.9 s                    4.89 h
 *     4       4.89 h                  13.0 days
 *     5      13.0 days                 2.28 years
 *     6       2.28 years             146 years
 *     7     146 years                  beyond the int64 range (292 years)
 *
 * Internal time and expiries are int64 ns (a paused due timer keeps a
 * negative remaining time, as Unreal's does), so expiry ticks have at most 43
 * bits and level 7 covers everything: nothing is ever beyond the last level.
 * Arming saturates at INT64_MAX (libuv's overflow clamping); such a timer
 * never fires.
 *
 * Placement: with c = the wheel clock (internal time >> 20) and e = the expiry
 * tick (clamped to >= c), a timer goes to the level of the highest bit where e
 * and c differ (6 bits per level), in slot (e >> 6*level) & 63.  So level k
 * holds only timers in c's current level-(k+1) "epoch", in slots strictly
 * after c's own level-k slot (level 0: at or after it).  Consequences:
 *  - every timer on level k expires after every timer on levels below k, and
 *    within a level, slot order is time order;
 *  - when the clock moves from c to c', level k only needs the slots in
 *    ((c >> 6k), (c' >> 6k)] (level 0: [c, c']); a level whose position did
 *    not change is not looked at, and neither is any level above it.
 * A 64-bit occupancy bitmap per level lets a pass visit only non-empty slots
 * in its range (ctz), so a 16.7 ms pass looks at level 0's ~16 crossed slots
 * and, once every 4 frames, one level-1 slot.
 *
 * Each slot is 8 doubly linked lists ("lanes", chosen by record index) of
 * record indices, so set and clear are O(1).  A pass from internal time T to
 * T' (clock c -> c') visits the crossed slots, level 0 first.  Each timer
 * there with expiry < T' is due: it goes to the scratch array.  The others
 * (only in the slot that holds c' at each level) are re-placed relative to
 * c', which puts them on a lower level (Linux's old cascade); levels are
 * visited bottom-up so a re-placed timer is never visited twice.  Every timer
 * descends at most 7 times in its life.  Walking a list is a chain of
 * dependent cache misses, so all the lists of a level's crossed slots (at
 * least 8, the lanes, even for a single slot) are walked side by side, one
 * record of each in turn with the next one prefetched: the misses overlap.
 *
 * Why ordering is exact: all due timers are collected before any fires, so
 * slot granularity never affects order.  Because of the placement rule the
 * slots are visited in time order (levels bottom-up, slots by ascending index
 * - valid slots never wrap within a level), so the due set is ordered by a
 * stable bucket pass on the slot each entry came from, then a sort of each
 * slot's group alone (a distribution pass into 64 buckets over the group's
 * expiry range, then an introsort of each bucket): O(d log s) at worst for d
 * due timers from slots of at most s, near O(d) for spread-out expiries.
 * Ties on expiry fire in set order (seq), libuv's (deadline, seq) key;
 * Unreal's binary heap leaves ties arbitrary.
 *
 * Records are split by use: a 32-byte "hot" part (expiry, seq, handle and the
 * list links packed in one word) that the wheel works on, and a 64-byte
 * "cold" part (callback, ud, owner, rate, counters) read when a timer is set,
 * fired, queried or freed; both arrays are cache-line aligned.  At 1M timers
 * the wheel's working set is 32 MB instead of 96.
 *
 * Complexity:
 *   set, clear, pause, unpause   O(1) (owner index: O(1) expected)
 *   pass                         O(slots crossed with timers + due + cascaded)
 *                                + O(d log s) sort; no allocation once the
 *                                scratch array has grown to the largest pass
 *   clear_owner                  O(timers of that owner)
 *   next_due                     O(timers in the earliest non-empty slot)
 *   get, exists                  O(1); tk_timer_next O(slab) per full walk
 *
 * Clearing is immediate: the record is unlinked and freed at once, and a due
 * set entry keeps the full handle, so an entry whose timer was cleared (even
 * if its slot was reused by a new timer meanwhile), paused or made pending is
 * recognised and skipped (the role of Redis's cancel-during-dispatch mark).
 * The one deferral: the free_ud of a timer cleared inside its own callback
 * runs when that callback returns, so the callback never loses its ud.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/clock.h"
#include "tickd/error.h"
#include "tickd/timer.h"
#include "timer_int.h"
#include "util_int.h"
#include "world_int.h"

#define NIL 0xFFFFFFu /* 24-bit null index (TK_TIMER_MAX - 1 is the last) */
#define IDX_BITS 24
#define IDX_MASK ((UINT64_C(1) << IDX_BITS) - 1)
/* Serials wrap below 2^29, so handles (serial << 24 | index) stay JSON-safe
 * integers (below 2^53). */
#define SERIAL_MAX TK_TIMER_SERIAL_MAX

#define WHEEL_TICK_SHIFT 20 /* level-0 slot: 2^20 ns = 1.048576 ms */
#define WHEEL_BITS 6
#define WHEEL_SLOTS 64
#define WHEEL_LANES 8       /* lists per slot, walked side by side */
#define WHEEL_LEVELS 8
#define WHEEL_LISTS (WHEEL_LEVELS * WHEEL_SLOTS * WHEEL_LANES)

#define OWNER_SMALL 16 /* clear_owner snapshots this many handles on stack */
#define CACHE_LINE 64

/* Where an existing record is linked. */
enum {
    IN_NONE = 0,    /* paused, executing */
    IN_WHEEL = 1,   /* active, in a wheel list */
    IN_PENDING = 2, /* pending array */
    IN_DUE = 3      /* active, in this pass's due set, not fired yet */
};

/* What the wheel works on; two records per cache line. */
typedef struct hot {
    int64_t expire;       /* ns: absolute internal time when active or
                             executing, remaining time when pending/paused  */
    uint64_t seq;         /* set order: breaks expiry ties                  */
    uint64_t handle;      /* serial << 24 | index; 0 = free record          */
    uint64_t next : 24;   /* wheel list; free list                          */
    uint64_t prev : 24;   /* wheel list; position in the pending array      */
    uint64_t list : 12;   /* (level * 64 + slot) * 8 + lane while IN_WHEEL  */
    uint64_t where : 2;   /* IN_*                                           */
    uint64_t status : 2;  /* tk_timer_status                                */
} hot;

/* The rest of a timer; one cache line. */
typedef struct cold {
    int64_t rate;         /* ns, >= 1 (0 for set_for_next_tick)             */
    uint64_t fired;       /* expiries run so far (callback invocations)     */
    uint64_t owner;       /* 0 = none                                       */
    tk_timer_fn fn;       /* may be NULL                                    */
    void *ud;
    void (*free_ud)(void *ud);
    uint32_t onext, oprev;/* owner list links                               */
    bool loop;
} cold;

_Static_assert(sizeof(hot) == 32, "hot record is half a cache line");
_Static_assert(sizeof(cold) <= CACHE_LINE, "cold record fits a cache line");
_Static_assert(WHEEL_LISTS <= 4096, "list ids fit hot.list");

typedef struct due_ent {
    int64_t expire;       /* ns, the sort key                               */
    uint64_t seq;         /* tie-break                                      */
    uint64_t handle;      /* full handle: detects cleared / reused records  */
    uint32_t rank;        /* level * 64 + slot it came from (visit order)   */
    uint32_t idx;         /* its record (an aliased handle's slot is not)   */
} due_ent;

typedef struct alias_ent {
    uint64_t handle;      /* 0 = empty                                      */
    uint32_t idx;         /* record holding it                              */
} alias_ent;

typedef struct owner_ent {
    uint64_t owner;       /* 0 = empty bucket                               */
    uint32_t head;        /* first record of this owner's list              */
} owner_ent;

struct tk__timers {
    hot *hot;             /* the slab, hot parts (CACHE_LINE aligned)       */
    cold *cold;           /* the slab, cold parts (CACHE_LINE aligned)      */
    void *hot_mem;        /* the allocations behind them                    */
    void *cold_mem;
    size_t cap_recs;      /* records allocated                              */
    uint32_t n_recs;      /* records ever used (high-water mark)            */
    uint32_t free_head;   /* free list through hot.next                     */
    uint64_t serial;      /* last serial handed out (1 .. 2^40-1)           */
    uint64_t seq;         /* last seq handed out                            */

    int64_t now;          /* ns, internal time (InternalTime)               */
    int64_t clk;          /* wheel clock: now >> WHEEL_TICK_SHIFT           */
    uint64_t last_ticked; /* world frame of the last pass; UINT64_MAX never */

    uint32_t heads[WHEEL_LISTS];         /* wheel lists, NIL = empty        */
    uint64_t occupied[WHEEL_LEVELS];     /* bit i: slot i has a timer       */
    uint32_t *pend;       /* pending records, in no particular order;
                             cap_recs entries, so never grown alone         */

    size_t n_active;      /* active + executing                             */
    size_t n_paused;
    size_t n_pending;     /* = entries in pend                              */

    due_ent *due;         /* scratch: this pass's due set, kept between passes */
    due_ent *due2;        /* scratch for the bucket pass of the sort        */
    size_t due_cap;       /* entries allocated (each of due, due2)          */
    size_t n_due;         /* entries collected this pass                    */
    size_t fire_pos;      /* entry being fired                              */
    bool in_pass;         /* inside tk__timers_tick                         */

    uint32_t exec;        /* record executing, NIL if none                  */
    uint64_t exec_handle; /* its handle                                     */
    void (*exec_free)(void *ud); /* free_ud deferred until its callback returns */
    void *exec_free_ud;

    alias_ent *atab;      /* restored handles whose slot is not their record:
                             handle -> record, linear probing (see
                             tk_timer_restore); 0 entries in most worlds   */
    size_t acap, aused;   /* table size (power of two, 0 = none), entries   */
    owner_ent *otab;      /* owner -> list head, linear probing             */
    unsigned obits;       /* table size = 1 << obits; 0 = no table          */
    size_t oused;         /* owners in the table                            */
};

/* ---- small helpers ---------------------------------------------------- */

static inline int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline double ns_to_s(int64_t ns) { return (double)ns / 1e9; }

/*
 * HasBeenTickedThisFrame.  Code the engine runs in its request hooks (the
 * wait and pre_world hooks: the daemon's requests) is Unreal's deferred
 * commands: FEngineLoop::Tick runs them at the end of the previous frame,
 * after the core ticker and before GFrameCounter++, so there "this frame" is
 * the frame that just ran (engine.h, step 3).
 */
static inline bool ticked_this_frame(const tk_world_t *w)
{
    uint64_t last = w->timers->last_ticked;
    if (last == w->frame)
        return true;
    return w->engine && tk__engine_deferred(w->engine) && last != UINT64_MAX &&
           last + 1 == w->frame;
}

static inline size_t live_count(const struct tk__timers *t)
{
    return t->n_active + t->n_paused + t->n_pending;
}

static inline size_t alias_home(const struct tk__timers *t, uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (size_t)h & (t->acap - 1);
}

static uint32_t alias_find(const struct tk__timers *t, tk_timer_handle h)
{
    if (!t->aused)
        return NIL;
    for (size_t i = alias_home(t, h);; i = (i + 1) & (t->acap - 1)) {
        if (t->atab[i].handle == h)
            return t->atab[i].idx;
        if (!t->atab[i].handle)
            return NIL;
    }
}

/* Room for one more alias: 0, or -1 (nothing changed) out of memory. */
static int alias_reserve(struct tk__timers *t)
{
    if ((t->aused + 1) * 2 <= t->acap)
        return 0;
    size_t cap = t->acap ? t->acap * 2 : 64;
    alias_ent *nt = tk_try_malloc(cap * sizeof *nt);
    if (!nt)
        return -1;
    memset(nt, 0, cap * sizeof *nt);
    alias_ent *old = t->atab;
    size_t ocap = t->acap;
    t->atab = nt;
    t->acap = cap;
    for (size_t k = 0; k < ocap; k++) {
        if (!old[k].handle)
            continue;
        size_t i = alias_home(t, old[k].handle);
        while (nt[i].handle)
            i = (i + 1) & (cap - 1);
        nt[i] = old[k];
    }
    tk_free(old);
    return 0;
}

static void alias_put(struct tk__timers *t, uint64_t h, uint32_t idx)
{
    size_t i = alias_home(t, h);
    while (t->atab[i].handle)
        i = (i + 1) & (t->acap - 1);
    t->atab[i].handle = h;
    t->atab[i].idx = idx;
    t->aused++;
}

/* Remove alias h (present), backward-shift deletion. */
static void alias_del(struct tk__timers *t, uint64_t h)
{
    size_t m = t->acap - 1, i = alias_home(t, h);
    while (t->atab[i].handle != h)
        i = (i + 1) & m;
    for (size_t j = i;;) {
        j = (j + 1) & m;
        if (!t->atab[j].handle)
            break;
        size_t home = alias_home(t, t->atab[j].handle);
        if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
            continue;
        t->atab[i] = t->atab[j];
        i = j;
    }
    t->atab[i].handle = 0;
    t->aused--;
}

/* Record index of a live handle, or NIL. */
static inline uint32_t lookup(const struct tk__timers *t, tk_timer_handle h)
{
    uint32_t idx = (uint32_t)(h & IDX_MASK);
    if (h == TK_TIMER_NONE)
        return NIL;
    if (idx < t->n_recs && t->hot[idx].handle == h)
        return idx;
    return alias_find(t, h);
}

static int unknown_handle(tk_world_t *w, tk_timer_handle h)
{
    return tk__world_error(w, TK_ENOENT,
                           "timer handle %llu is unknown (never set, cleared "
                           "or finished)",
                           (unsigned long long)h);
}

static inline void *align_up(void *p)
{
    return (void *)(((uintptr_t)p + CACHE_LINE - 1) & ~(uintptr_t)(CACHE_LINE - 1));
}

/* ---- the wheel -------------------------------------------------------- */

/*
 * Link record `idx` (active, with an absolute expiry) into the wheel slot
 * its expiry belongs to, relative to the current wheel clock.  An expiry
 * already behind the clock goes to the clock's own level-0 slot, which every
 * pass visits.
 */
static void wheel_add(struct tk__timers *t, uint32_t idx)
{
    hot *r = &t->hot[idx];
    int64_t tick = r->expire > 0 ? r->expire >> WHEEL_TICK_SHIFT : 0;
    if (tick < t->clk)
        tick = t->clk;
    uint64_t diff = (uint64_t)(tick ^ t->clk);
    unsigned lvl = diff ? (unsigned)(63 - __builtin_clzll(diff)) / WHEEL_BITS : 0;
    TK_ASSERT(lvl < WHEEL_LEVELS);
    unsigned i = (unsigned)(tick >> (lvl * WHEEL_BITS)) & (WHEEL_SLOTS - 1);
    unsigned l = (lvl * WHEEL_SLOTS + i) * WHEEL_LANES + (idx & (WHEEL_LANES - 1));

    uint32_t head = t->heads[l];
    r->list = l;
    r->where = IN_WHEEL;
    r->prev = NIL;
    r->next = head;
    if (head != NIL)
        t->hot[head].prev = idx;
    t->heads[l] = idx;
    t->occupied[lvl] |= UINT64_C(1) << i;
}

/* True if every lane of slot `s` (level * 64 + index) is empty. */
static inline bool slot_empty(const struct tk__timers *t, unsigned s)
{
    const uint32_t *h = &t->heads[s * WHEEL_LANES];
    uint32_t all = NIL;
    for (unsigned k = 0; k < WHEEL_LANES; k++)
        all &= h[k];
    return all == NIL;
}

static void wheel_del(struct tk__timers *t, uint32_t idx)
{
    hot *r = &t->hot[idx];
    unsigned l = (unsigned)r->list, s = l / WHEEL_LANES;
    uint32_t next = (uint32_t)r->next, prev = (uint32_t)r->prev;
    if (prev != NIL)
        t->hot[prev].next = next;
    else
        t->heads[l] = next;
    if (next != NIL)
        t->hot[next].prev = prev;
    if (t->heads[l] == NIL && slot_empty(t, s))
        t->occupied[s / WHEEL_SLOTS] &= ~(UINT64_C(1) << (s % WHEEL_SLOTS));
    r->where = IN_NONE;
}

/* The pending set is an array (cap_recs entries, so no growth here); a
 * record knows its position, so removal is a swap with the last. */
static void pend_add(struct tk__timers *t, uint32_t idx)
{
    TK_ASSERT(t->n_pending < t->cap_recs);
    hot *r = &t->hot[idx];
    r->where = IN_PENDING;
    r->prev = (uint32_t)t->n_pending;
    t->pend[t->n_pending++] = idx;
}

static void pend_del(struct tk__timers *t, uint32_t idx)
{
    hot *r = &t->hot[idx];
    uint32_t last = t->pend[--t->n_pending];
    t->pend[r->prev] = last;
    t->hot[last].prev = r->prev;
    r->where = IN_NONE;
}

/* Bits a..b of a word (inclusive, a <= b < 64). */
static inline uint64_t bit_range(unsigned a, unsigned b)
{
    return (~UINT64_C(0) >> (63 - b)) & (~UINT64_C(0) << a);
}

/* ---- sorting the due set ---------------------------------------------- */

static inline bool due_less(const due_ent *a, const due_ent *b)
{
    return a->expire < b->expire || (a->expire == b->expire && a->seq < b->seq);
}

static inline void due_swap(due_ent *a, due_ent *b)
{
    due_ent x = *a;
    *a = *b;
    *b = x;
}

static void insertion_sort(due_ent *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        due_ent x = a[i];
        size_t j = i;
        while (j > 0 && due_less(&x, &a[j - 1])) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

static void sift_down(due_ent *a, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && due_less(&a[c], &a[c + 1]))
            c++;
        if (!due_less(&a[root], &a[c]))
            return;
        due_swap(&a[root], &a[c]);
        root = c;
    }
}

static void heap_sort(due_ent *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        due_swap(&a[0], &a[end]);
        sift_down(a, 0, end);
    }
}

/*
 * Introsort of a slot's group: quicksort (median of three, Hoare partition,
 * recursion on the smaller side), heap sort past `depth`, insertion sort for
 * small ranges.  Keys are unique (seq), so no three-way partition is needed.
 */
static void due_sort(due_ent *a, size_t n, unsigned depth)
{
    while (n > 16) {
        if (depth-- == 0) {
            heap_sort(a, n);
            return;
        }
        size_t mid = n / 2;
        if (due_less(&a[mid], &a[0]))
            due_swap(&a[mid], &a[0]);
        if (due_less(&a[n - 1], &a[0]))
            due_swap(&a[n - 1], &a[0]);
        if (due_less(&a[n - 1], &a[mid]))
            due_swap(&a[n - 1], &a[mid]);
        due_ent p = a[mid];
        size_t i = 0, j = n - 1;
        for (;;) {
            while (due_less(&a[i], &p))
                i++;
            while (due_less(&p, &a[j]))
                j--;
            if (i >= j)
                break;
            due_swap(&a[i], &a[j]);
            i++;
            j--;
        }
        /* [0, j] <= p <= [j + 1, n), both non-empty */
        size_t left = j + 1;
        if (left < n - left) {
            due_sort(a, left, depth);
            a += left;
            n -= left;
        } else {
            due_sort(a + left, n - left, depth);
            n = left;
        }
    }
    insertion_sort(a, n);
}

/*
 * Sort one slot's group a[0..n) using `tmp` (n entries) as scratch: a
 * distribution pass on the group's own expiry range into 64 buckets (a slot's
 * timers are spread over its width), then each bucket by due_sort.  Exact:
 * buckets are ordered ranges of expiry, and ties stay in one bucket.
 */
static void group_sort(due_ent *a, size_t n, due_ent *tmp)
{
    if (n <= 32) {
        due_sort(a, n, 64);
        return;
    }
    int64_t lo = a[0].expire, hi = a[0].expire;
    for (size_t k = 1; k < n; k++) {
        lo = TK_MIN(lo, a[k].expire);
        hi = TK_MAX(hi, a[k].expire);
    }
    uint64_t span = (uint64_t)(hi - lo);
    if (span == 0) {
        due_sort(a, n, 64); /* one expiry: by seq */
        return;
    }
    int bits = 64 - __builtin_clzll(span);
    unsigned sh = bits > 6 ? (unsigned)(bits - 6) : 0; /* span >> sh < 64 */
    uint32_t count[65];
    memset(count, 0, sizeof count);
    for (size_t k = 0; k < n; k++)
        count[((uint64_t)(a[k].expire - lo) >> sh) + 1]++;
    for (unsigned b = 0; b < 64; b++)
        count[b + 1] += count[b];
    for (size_t k = 0; k < n; k++)
        tmp[count[(uint64_t)(a[k].expire - lo) >> sh]++] = a[k];
    size_t start = 0;
    for (unsigned b = 0; b < 64; b++) {
        due_sort(tmp + start, count[b] - start, 64);
        start = count[b];
    }
    memcpy(a, tmp, n * sizeof *a);
}

/* ---- owner index ------------------------------------------------------ */

static inline size_t owner_home(const struct tk__timers *t, uint64_t owner)
{
    return (size_t)((owner * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - t->obits));
}

/* Bucket of `owner`, or SIZE_MAX. */
static size_t owner_find(const struct tk__timers *t, uint64_t owner)
{
    if (!t->obits)
        return SIZE_MAX;
    size_t mask = ((size_t)1 << t->obits) - 1;
    for (size_t i = owner_home(t, owner);; i = (i + 1) & mask) {
        if (t->otab[i].owner == owner)
            return i;
        if (t->otab[i].owner == 0)
            return SIZE_MAX;
    }
}

/*
 * Make room for one more owner (load factor <= 1/2).  Returns 0, or -1 with
 * nothing changed when memory runs out.
 */
static int owner_reserve(struct tk__timers *t)
{
    size_t cap = t->obits ? (size_t)1 << t->obits : 0;
    if ((t->oused + 1) * 2 <= cap)
        return 0;
    unsigned nbits = t->obits ? t->obits + 1 : 4;
    owner_ent *nt = tk_try_calloc((size_t)1 << nbits, sizeof *nt);
    if (!nt)
        return -1;
    owner_ent *old = t->otab;
    t->otab = nt;
    t->obits = nbits;
    size_t mask = ((size_t)1 << nbits) - 1;
    for (size_t k = 0; k < cap; k++) {
        if (!old[k].owner)
            continue;
        size_t i = owner_home(t, old[k].owner);
        while (nt[i].owner)
            i = (i + 1) & mask;
        nt[i] = old[k];
    }
    tk_free(old);
    return 0;
}

/* Put record `idx` (owner != 0) on its owner's list; room was reserved. */
static void owner_link(struct tk__timers *t, uint32_t idx)
{
    cold *r = &t->cold[idx];
    size_t pos = owner_find(t, r->owner);
    r->oprev = NIL;
    if (pos == SIZE_MAX) {
        size_t mask = ((size_t)1 << t->obits) - 1;
        pos = owner_home(t, r->owner);
        while (t->otab[pos].owner)
            pos = (pos + 1) & mask;
        t->otab[pos].owner = r->owner;
        t->oused++;
        r->onext = NIL;
    } else {
        r->onext = t->otab[pos].head;
        t->cold[r->onext].oprev = idx;
    }
    t->otab[pos].head = idx;
}

/* Empty bucket `i` with backward-shift deletion (no tombstones). */
static void owner_erase(struct tk__timers *t, size_t i)
{
    size_t mask = ((size_t)1 << t->obits) - 1;
    for (;;) {
        t->otab[i].owner = 0;
        size_t j = i;
        for (;;) {
            j = (j + 1) & mask;
            if (!t->otab[j].owner) {
                t->oused--;
                return;
            }
            size_t k = owner_home(t, t->otab[j].owner);
            bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
            if (!stays)
                break;
        }
        t->otab[i] = t->otab[j];
        i = j;
    }
}

static void owner_unlink(struct tk__timers *t, uint32_t idx)
{
    cold *r = &t->cold[idx];
    size_t pos = owner_find(t, r->owner);
    if (TK_NEVER(pos == SIZE_MAX))
        return;
    if (r->oprev != NIL)
        t->cold[r->oprev].onext = r->onext;
    else
        t->otab[pos].head = r->onext;
    if (r->onext != NIL)
        t->cold[r->onext].oprev = r->oprev;
    if (t->otab[pos].head == NIL)
        owner_erase(t, pos);
}

/* ---- record lifecycle ------------------------------------------------- */

/*
 * Make room for `need` records (hot and cold parts, and as many pending-array
 * entries, so that making a timer pending never allocates).  All or nothing:
 * returns 0, or -1 with nothing changed when memory runs out.
 */
static int reserve_records(struct tk__timers *t, size_t need)
{
    if (need <= t->cap_recs)
        return 0;
    size_t cap = t->cap_recs ? t->cap_recs : 64;
    while (cap < need)
        cap *= 2;
    void *hm = tk_try_malloc(cap * sizeof(hot) + CACHE_LINE);
    void *cm = hm ? tk_try_malloc(cap * sizeof(cold) + CACHE_LINE) : NULL;
    uint32_t *pend = cm ? tk_try_realloc(t->pend, cap * sizeof *pend) : NULL;
    if (!pend) {
        tk_free(cm);
        tk_free(hm);
        return -1;
    }
    hot *h = align_up(hm);
    cold *c = align_up(cm);
    if (t->n_recs) {
        memcpy(h, t->hot, t->n_recs * sizeof *h);
        memcpy(c, t->cold, t->n_recs * sizeof *c);
    }
    tk_free(t->hot_mem);
    tk_free(t->cold_mem);
    t->hot_mem = hm;
    t->cold_mem = cm;
    t->hot = h;
    t->cold = c;
    t->pend = pend;
    t->cap_recs = cap;
    return 0;
}

/*
 * Remove a live timer for good, whatever its state: unlink it, free the
 * record (its handle is unknown from here on) and call its free_ud - at once,
 * or when its callback returns if it is the timer executing now.  free_ud may
 * call back into the manager; nothing of the record is touched after it.
 */
static void release(struct tk__timers *t, uint32_t idx)
{
    hot *h = &t->hot[idx];
    cold *c = &t->cold[idx];
    if (h->where == IN_WHEEL)
        wheel_del(t, idx);
    else if (h->where == IN_PENDING)
        pend_del(t, idx); /* n_pending counts the pending array */
    if (h->status == TK_TIMER_PAUSED)
        t->n_paused--;
    else if (h->status != TK_TIMER_PENDING)
        t->n_active--;
    if (c->owner)
        owner_unlink(t, idx);

    void (*free_ud)(void *) = c->free_ud;
    void *ud = c->ud;
    bool executing = idx == t->exec && h->handle == t->exec_handle;
    if ((h->handle & IDX_MASK) != idx)
        alias_del(t, h->handle);
    memset(h, 0, sizeof *h);
    memset(c, 0, sizeof *c);
    h->where = IN_NONE;
    h->next = t->free_head;
    t->free_head = idx;

    if (!free_ud)
        return;
    if (executing) {
        t->exec_free = free_ud;
        t->exec_free_ud = ud;
    } else {
        free_ud(ud);
    }
}

/* Take a free record (room was reserved) and give it a new handle. */
static uint32_t take_record(struct tk__timers *t)
{
    uint32_t idx;
    if (t->free_head != NIL) {
        idx = t->free_head;
        t->free_head = (uint32_t)t->hot[idx].next;
    } else {
        idx = t->n_recs++;
    }
    t->serial = t->serial >= SERIAL_MAX ? 1 : t->serial + 1;
    hot *h = &t->hot[idx];
    h->expire = 0;
    h->seq = ++t->seq;
    h->handle = (t->serial << IDX_BITS) | idx;
    h->next = NIL; /* all of the link word: merged into one store */
    h->prev = NIL;
    h->list = 0;
    h->where = IN_NONE;
    h->status = 0;
    memset(&t->cold[idx], 0, sizeof t->cold[idx]);
    return idx;
}

/*
 * Create a timer.  `next_tick`: SetTimerForNextTick (active at the current
 * internal time); otherwise active at now + delay if the manager has ticked
 * this frame, else pending with `delay` remaining.  Arguments are valid;
 * fails with TK_ELIMIT / TK_ENOMEM before changing anything.
 */
static int add_timer(tk_world_t *w, const tk_timer_desc *desc, int64_t rate,
                     bool loop, int64_t delay, bool next_tick,
                     tk_timer_handle *out)
{
    struct tk__timers *t = w->timers;
    if (live_count(t) >= TK_TIMER_MAX)
        return tk__world_error(w, TK_ELIMIT, "too many timers (at most %u)",
                               (unsigned)TK_TIMER_MAX);
    if (t->free_head == NIL && reserve_records(t, (size_t)t->n_recs + 1) < 0)
        return tk__world_error(w, TK_ENOMEM, "out of memory for a new timer");
    if (desc->owner && owner_find(t, desc->owner) == SIZE_MAX &&
        owner_reserve(t) < 0)
        return tk__world_error(w, TK_ENOMEM, "out of memory for a new timer");

    uint32_t idx = take_record(t);
    hot *h = &t->hot[idx];
    cold *c = &t->cold[idx];
    c->rate = rate;
    c->loop = loop;
    c->owner = desc->owner;
    c->fn = desc->fn;
    c->ud = desc->ud;
    c->free_ud = desc->free_ud;
    if (next_tick || ticked_this_frame(w)) {
        h->status = TK_TIMER_ACTIVE;
        h->expire = next_tick ? t->now : sat_add(t->now, delay);
        wheel_add(t, idx);
        t->n_active++;
    } else {
        h->status = TK_TIMER_PENDING;
        h->expire = delay;
        pend_add(t, idx);
    }
    if (c->owner)
        owner_link(t, idx);
    *out = h->handle;
    return 0;
}

/* ---- the pass --------------------------------------------------------- */

/* Grow both due-set buffers to hold `need` entries (must succeed). */
static void due_reserve(struct tk__timers *t, size_t need)
{
    if (need <= t->due_cap)
        return;
    size_t cap = t->due_cap;
    TK_GROW(t->due, cap, need);
    t->due2 = tk_realloc(t->due2, cap * sizeof *t->due2);
    t->due_cap = cap;
}

static inline void push_due(struct tk__timers *t, uint32_t idx, uint32_t rank)
{
    hot *r = &t->hot[idx];
    if (TK_UNLIKELY(t->n_due == t->due_cap))
        due_reserve(t, t->n_due + 1);
    due_ent *e = &t->due[t->n_due++];
    e->expire = r->expire;
    e->seq = r->seq;
    e->handle = r->handle;
    e->rank = rank;
    e->idx = idx;
    r->where = IN_DUE;
}

/*
 * Order the due set: a stable bucket pass by the slot each entry came from
 * (slots in visit order are in time order), then a sort of each slot's
 * group by (expiry, seq).
 */
static void sort_due(struct tk__timers *t)
{
    size_t n = t->n_due;
    if (n < 2)
        return;
    uint32_t count[WHEEL_LEVELS * WHEEL_SLOTS + 1];
    memset(count, 0, sizeof count);
    for (size_t k = 0; k < n; k++)
        count[t->due[k].rank + 1]++;
    for (size_t r = 0; r < WHEEL_LEVELS * WHEEL_SLOTS; r++)
        count[r + 1] += count[r];
    for (size_t k = 0; k < n; k++)
        t->due2[count[t->due[k].rank]++] = t->due[k];
    due_ent *x = t->due;
    t->due = t->due2;
    t->due2 = x;

    size_t start = 0; /* due2 is free scratch from here */
    for (size_t k = 1; k <= n; k++) {
        if (k == n || t->due[k].rank != t->due[start].rank) {
            group_sort(t->due + start, k - start, t->due2 + start);
            start = k;
        }
    }
}

/*
 * Advance internal time to `now2` and move every active timer with expiry <
 * now2 from the wheel to the due set, sorted by (expiry, seq); re-place the
 * others met on the way relative to the new clock.  No callback runs here.
 * The lists of a level's crossed slots are walked side by side (see the
 * header comment).
 */
static void collect(struct tk__timers *t, int64_t now2)
{
    int64_t c0 = t->clk, c1 = now2 >> WHEEL_TICK_SHIFT;
    uint32_t cur[WHEEL_SLOTS * WHEEL_LANES], rank[WHEEL_SLOTS * WHEEL_LANES];
    t->now = now2;
    t->clk = c1;
    t->n_due = 0;

    for (unsigned lvl = 0; lvl < WHEEL_LEVELS; lvl++) {
        unsigned sh = lvl * WHEEL_BITS;
        int64_t lo = (c0 >> sh) + (lvl ? 1 : 0), hi = c1 >> sh;
        if (hi < lo)
            break; /* this level's position did not move, nor any above */
        uint64_t mask;
        if (hi - lo >= WHEEL_SLOTS - 1) {
            mask = ~UINT64_C(0);
        } else {
            unsigned a = (unsigned)lo & (WHEEL_SLOTS - 1);
            unsigned b = (unsigned)hi & (WHEEL_SLOTS - 1);
            mask = a <= b ? bit_range(a, b)
                          : bit_range(a, WHEEL_SLOTS - 1) | bit_range(0, b);
        }
        uint64_t bits = t->occupied[lvl] & mask;
        unsigned nch = 0;
        while (bits) {
            unsigned i = (unsigned)__builtin_ctzll(bits);
            bits &= bits - 1;
            unsigned s = lvl * WHEEL_SLOTS + i;
            for (unsigned k = 0; k < WHEEL_LANES; k++) {
                uint32_t *head = &t->heads[s * WHEEL_LANES + k];
                if (*head == NIL)
                    continue;
                __builtin_prefetch(&t->hot[*head]);
                cur[nch] = *head;
                rank[nch++] = s;
                *head = NIL; /* detached: re-placed timers start new lists */
            }
            t->occupied[lvl] &= ~(UINT64_C(1) << i);
        }
        while (nch) {
            for (unsigned c = 0; c < nch;) {
                uint32_t idx = cur[c];
                if (idx == NIL) {
                    nch--;
                    cur[c] = cur[nch];
                    rank[c] = rank[nch];
                    continue;
                }
                hot *r = &t->hot[idx];
                uint32_t next = (uint32_t)r->next;
                if (next != NIL)
                    __builtin_prefetch(&t->hot[next]);
                cur[c] = next;
                if (r->expire < now2)
                    push_due(t, idx, rank[c]);
                else
                    wheel_add(t, idx); /* lands on a lower level */
                c++;
            }
        }
    }
    sort_due(t);
#ifndef NDEBUG
    for (size_t k = 1; k < t->n_due; k++)
        TK_ASSERT(due_less(&t->due[k - 1], &t->due[k]));
#endif
}

/*
 * Fire the due set in order (Unreal's Tick step 2).  An entry is skipped if
 * its timer was cleared, paused or made pending since it was collected.  A
 * looping timer runs CallCount = trunc((now - expire) / rate) + 1 calls back
 * to back, stopping early if a call cleared it or changed its status; if it
 * is still executing afterwards it is re-armed at expire + CallCount * rate
 * (> now, so never again this pass), else a one-shot is removed.  Returns
 * the calls made.
 */
static uint64_t fire(tk_world_t *w, struct tk__timers *t)
{
    uint64_t total = 0;
    for (t->fire_pos = 0; t->fire_pos < t->n_due; t->fire_pos++) {
        if (t->fire_pos + 4 < t->n_due) {
            uint32_t ahead = t->due[t->fire_pos + 4].idx;
            __builtin_prefetch(&t->hot[ahead]);
            __builtin_prefetch(&t->cold[ahead]);
        }
        const due_ent e = t->due[t->fire_pos];
        uint32_t idx = e.idx;
        hot *h = &t->hot[idx];
        if (h->handle != e.handle || h->where != IN_DUE)
            continue;
        h->where = IN_NONE;
        h->status = TK_TIMER_EXECUTING;
        t->exec = idx;
        t->exec_handle = e.handle;

        cold *c = &t->cold[idx];
        uint64_t calls = 1;
        if (c->loop)
            calls = (uint64_t)((t->now - h->expire) / c->rate) + 1;
        if (!c->fn) {
            c->fired += calls;
            total += calls;
        } else {
            for (uint64_t k = 0; k < calls; k++) {
                tk_timer_fn fn = c->fn;
                void *ud = c->ud;
                c->fired++;
                total++;
                fn(ud, e.handle, w);
                h = &t->hot[idx]; /* the slab may have moved */
                c = &t->cold[idx];
                if (h->handle != e.handle || h->status != TK_TIMER_EXECUTING)
                    break;
            }
        }
        t->exec = NIL;
        t->exec_handle = 0;
        if (t->exec_free) {
            void (*free_ud)(void *) = t->exec_free;
            t->exec_free = NULL;
            free_ud(t->exec_free_ud);
            t->exec_free_ud = NULL;
        }

        h = &t->hot[idx];
        c = &t->cold[idx];
        if (h->handle != e.handle || h->status != TK_TIMER_EXECUTING)
            continue; /* cleared, paused or made pending by a callback */
        if (c->loop) {
            int64_t late = t->now - h->expire;
            /* expire + calls * rate without overflow */
            h->expire = sat_add(t->now - late % c->rate, c->rate);
            h->status = TK_TIMER_ACTIVE;
            wheel_add(t, idx);
        } else {
            release(t, idx);
        }
    }
    return total;
}

/* End of the pass: pending timers become active at now + remaining. */
static void activate_pending(struct tk__timers *t)
{
    size_t n = t->n_pending;
    for (size_t k = 0; k < n; k++) {
        if (k + 8 < n)
            __builtin_prefetch(&t->hot[t->pend[k + 8]]);
        uint32_t idx = t->pend[k];
        hot *r = &t->hot[idx];
        r->expire = sat_add(t->now, r->expire);
        r->status = TK_TIMER_ACTIVE;
        wheel_add(t, idx);
    }
    t->n_active += n;
    t->n_pending = 0;
}

uint64_t tk__timers_tick(tk_world_t *w, uint64_t dt_ns)
{
    struct tk__timers *t = w->timers;
    TK_ASSERT(t);
    if (t->last_ticked == w->frame || TK_NEVER(t->in_pass))
        return 0;
    int64_t dt = dt_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)dt_ns;

    t->in_pass = true;
    collect(t, sat_add(t->now, dt));
    uint64_t calls = fire(w, t);
    t->n_due = 0;
    t->fire_pos = 0;
    t->last_ticked = w->frame;
    activate_pending(t);
    t->in_pass = false;
    return calls;
}

/* ---- lifecycle -------------------------------------------------------- */

struct tk__timers *tk__timers_new(void)
{
    struct tk__timers *t = tk_calloc(1, sizeof *t);
    for (size_t i = 0; i < WHEEL_LISTS; i++)
        t->heads[i] = NIL;
    t->free_head = NIL;
    t->exec = NIL;
    t->last_ticked = UINT64_MAX;
    return t;
}

/*
 * Free every timer (each free_ud once, in slab order) and the manager.  The
 * world is being freed: free_ud must not call back into the manager.
 */
void tk__timers_free(tk_world_t *w, struct tk__timers *t)
{
    (void)w;
    if (!t)
        return;
    for (uint32_t i = 0; i < t->n_recs; i++) {
        if (!t->hot[i].handle)
            continue;
        void (*free_ud)(void *) = t->cold[i].free_ud;
        void *ud = t->cold[i].ud;
        t->hot[i].handle = 0;
        if (free_ud)
            free_ud(ud);
    }
    tk_free(t->hot_mem);
    tk_free(t->cold_mem);
    tk_free(t->pend);
    tk_free(t->due);
    tk_free(t->due2);
    tk_free(t->otab);
    tk_free(t->atab);
#ifndef NDEBUG
    memset(t, 0xff, sizeof *t);
#endif
    tk_free(t);
}

/* ---- public API ------------------------------------------------------- */

const char *tk_timer_status_name(tk_timer_status s)
{
    switch (s) {
    case TK_TIMER_PENDING:
        return "pending";
    case TK_TIMER_ACTIVE:
        return "active";
    case TK_TIMER_PAUSED:
        return "paused";
    case TK_TIMER_EXECUTING:
        return "executing";
    }
    return "unknown";
}

/* Seconds -> ns for a validated rate or delay (finite, >= 0). */
static int64_t secs_to_ns(double s) { return (int64_t)tk_s_to_ns(s); }

/* The same for a finite time of either sign (a remaining time). */
static int64_t signed_secs_to_ns(double s)
{
    return s < 0 ? -secs_to_ns(-s) : secs_to_ns(s);
}

/*
 * SetTimer.  Validates everything first (desc and out non-NULL, rate > 0,
 * finite and at least 1 ns, first_delay finite); on error nothing changes
 * and the world's last error names the argument.
 */
int tk_timer_set(tk_world_t *w, const tk_timer_desc *desc, tk_timer_handle *out)
{
    TK_PAR_GUARD(w, "tk_timer_set");
    TK_ASSERT(w && w->timers);
    if (!desc)
        return tk__world_error(w, TK_EINVAL, "timer desc must not be NULL");
    if (!out)
        return tk__world_error(w, TK_EINVAL, "out must not be NULL");
    if (!(desc->rate > 0) || !isfinite(desc->rate))
        return tk__world_error(w, TK_EINVAL, "rate must be > 0 and finite");
    int64_t rate = secs_to_ns(desc->rate);
    if (rate < 1)
        return tk__world_error(w, TK_EINVAL, "rate must be at least 1 ns");
    if (!isfinite(desc->first_delay))
        return tk__world_error(w, TK_EINVAL,
                               "first_delay must be finite (< 0 means rate)");
    int64_t delay = desc->first_delay >= 0 ? secs_to_ns(desc->first_delay) : rate;
    return add_timer(w, desc, rate, desc->loop, delay, false, out);
}

/* SetTimerForNextTick: active at the current internal time, rate 0, once. */
int tk_timer_set_for_next_tick(tk_world_t *w, const tk_timer_desc *desc,
                               tk_timer_handle *out)
{
    TK_PAR_GUARD(w, "tk_timer_set_for_next_tick");
    TK_ASSERT(w && w->timers);
    if (!desc)
        return tk__world_error(w, TK_EINVAL, "timer desc must not be NULL");
    if (!out)
        return tk__world_error(w, TK_EINVAL, "out must not be NULL");
    return add_timer(w, desc, 0, false, 0, true, out);
}

/* ClearTimer: immediate; the handle is unknown from here on. */
int tk_timer_clear(tk_world_t *w, tk_timer_handle h)
{
    TK_PAR_GUARD(w, "tk_timer_clear");
    TK_ASSERT(w && w->timers);
    struct tk__timers *t = w->timers;
    uint32_t idx = (uint32_t)(h & IDX_MASK);
    if (idx < t->n_recs)
        __builtin_prefetch(&t->cold[idx]); /* release reads it: overlap */
    idx = lookup(t, h);
    if (idx == NIL)
        return unknown_handle(w, h);
    release(t, idx);
    return 0;
}

/*
 * PauseTimer.  The remaining time (expire - now, negative for a timer that
 * was due) is kept.  An executing timer stops its remaining calls; if it is
 * a one-shot it is removed instead (Unreal's rule).
 */
int tk_timer_pause(tk_world_t *w, tk_timer_handle h)
{
    TK_PAR_GUARD(w, "tk_timer_pause");
    TK_ASSERT(w && w->timers);
    struct tk__timers *t = w->timers;
    uint32_t idx = lookup(t, h);
    if (idx == NIL)
        return unknown_handle(w, h);
    hot *r = &t->hot[idx];
    switch ((tk_timer_status)r->status) {
    case TK_TIMER_PAUSED:
        return 0;
    case TK_TIMER_PENDING:
        pend_del(t, idx);
        break;
    case TK_TIMER_ACTIVE:
        if (r->where == IN_WHEEL)
            wheel_del(t, idx);
        r->where = IN_NONE; /* a due set entry is skipped */
        r->expire -= t->now;
        t->n_active--;
        break;
    case TK_TIMER_EXECUTING:
        if (!t->cold[idx].loop) {
            release(t, idx);
            return 0;
        }
        r->expire -= t->now;
        t->n_active--;
        break;
    }
    r->status = TK_TIMER_PAUSED;
    t->n_paused++;
    return 0;
}

/*
 * UnPauseTimer.  Before the manager's pass has finished this frame (callbacks
 * included) the timer becomes pending and is activated at the end of the
 * pass; after it, active at once at now + remaining.
 */
int tk_timer_unpause(tk_world_t *w, tk_timer_handle h)
{
    TK_PAR_GUARD(w, "tk_timer_unpause");
    TK_ASSERT(w && w->timers);
    struct tk__timers *t = w->timers;
    uint32_t idx = lookup(t, h);
    if (idx == NIL)
        return unknown_handle(w, h);
    hot *r = &t->hot[idx];
    if (r->status != TK_TIMER_PAUSED)
        return 0;
    t->n_paused--;
    if (ticked_this_frame(w)) {
        r->expire = sat_add(t->now, r->expire);
        r->status = TK_TIMER_ACTIVE;
        wheel_add(t, idx);
        t->n_active++;
    } else {
        r->status = TK_TIMER_PENDING;
        pend_add(t, idx);
    }
    return 0;
}

/*
 * ClearAllTimersForObject.  The owner's handles are snapshotted first, so a
 * free_ud that sets or clears timers of the same owner cannot make the walk
 * loop or touch a freed record.
 */
size_t tk_timer_clear_owner(tk_world_t *w, uint64_t owner)
{
    if (w && TK_UNLIKELY(w->par)) {
        tk__par_refuse(w, "tk_timer_clear_owner");
        return 0;
    }
    TK_ASSERT(w && w->timers);
    struct tk__timers *t = w->timers;
    if (!owner)
        return 0;
    size_t pos = owner_find(t, owner);
    if (pos == SIZE_MAX)
        return 0;
    size_t n = 0;
    for (uint32_t i = t->otab[pos].head; i != NIL; i = t->cold[i].onext)
        n++;
    tk_timer_handle small[OWNER_SMALL];
    tk_timer_handle *hs = n <= OWNER_SMALL ? small : tk_malloc(n * sizeof *hs);
    size_t k = 0;
    for (uint32_t i = t->otab[pos].head; i != NIL; i = t->cold[i].onext)
        hs[k++] = t->hot[i].handle;

    size_t cleared = 0;
    for (k = 0; k < n; k++) {
        uint32_t idx = lookup(t, hs[k]);
        if (idx != NIL) {
            release(t, idx);
            cleared++;
        }
    }
    if (hs != small)
        tk_free(hs);
    return cleared;
}

/*
 * GetTimerRate / Elapsed / Remaining and the rest in one call.
 * Active: remaining = expire - now, elapsed = rate - remaining.  Executing:
 * remaining 0, elapsed as active.  Pending/paused: remaining = the stored
 * remaining, elapsed = rate - remaining (negative with a long first_delay).
 */
int tk_timer_get(const tk_world_t *w, tk_timer_handle h, tk_timer_info *out)
{
    TK_ASSERT(w && w->timers);
    const struct tk__timers *t = w->timers;
    if (!out)
        return TK_EINVAL;
    uint32_t idx = lookup(t, h);
    if (idx == NIL)
        return TK_ENOENT;
    const hot *r = &t->hot[idx];
    const cold *c = &t->cold[idx];
    int64_t rem;
    if (r->status == TK_TIMER_ACTIVE || r->status == TK_TIMER_EXECUTING)
        rem = r->expire - t->now;
    else
        rem = r->expire;
    int64_t el;
    out->handle = h;
    out->status = (tk_timer_status)r->status;
    out->rate = ns_to_s(c->rate);
    out->loop = c->loop;
    if (__builtin_sub_overflow(c->rate, rem, &el))
        out->elapsed = ns_to_s(c->rate) - ns_to_s(rem);
    else
        out->elapsed = ns_to_s(el);
    out->remaining = r->status == TK_TIMER_EXECUTING ? 0.0 : ns_to_s(rem);
    out->fired = c->fired;
    out->owner = c->owner;
    out->ud = c->ud;
    out->order = r->seq;
    return 0;
}

bool tk_timer_exists(const tk_world_t *w, tk_timer_handle h)
{
    TK_ASSERT(w && w->timers);
    return lookup(w->timers, h) != NIL;
}

bool tk_timer_next(const tk_world_t *w, uint64_t *cursor, tk_timer_handle *out)
{
    TK_ASSERT(w && w->timers);
    const struct tk__timers *t = w->timers;
    if (!cursor || !out)
        return false;
    for (uint64_t i = *cursor; i < t->n_recs; i++) {
        if (t->hot[i].handle) {
            *out = t->hot[i].handle;
            *cursor = i + 1;
            return true;
        }
    }
    *cursor = t->n_recs;
    return false;
}

void tk_timer_get_counts(const tk_world_t *w, tk_timer_counts *out)
{
    TK_ASSERT(w && w->timers);
    if (!out)
        return;
    out->active = w->timers->n_active;
    out->paused = w->timers->n_paused;
    out->pending = w->timers->n_pending;
}

double tk_timer_manager_time(const tk_world_t *w)
{
    TK_ASSERT(w && w->timers);
    return ns_to_s(w->timers->now);
}

bool tk_timer_ticked_last_frame(const tk_world_t *w)
{
    TK_ASSERT(w && w->timers);
    uint64_t last = w->timers->last_ticked, done = tk_world_frames_done(w);
    return last != UINT64_MAX && done > 0 && last + 1 == done;
}

bool tk_timer_ticked_this_frame(const tk_world_t *w)
{
    TK_ASSERT(w && w->timers);
    return ticked_this_frame(w);
}

/*
 * The earliest active timer is on the lowest non-empty level, in its lowest
 * occupied slot (placement rule above); the slot's lists are unsorted, so
 * this is O(timers in that slot).  Inside a pass, a due timer not yet fired
 * makes the answer 0.
 */
double tk_timer_next_due(const tk_world_t *w)
{
    TK_ASSERT(w && w->timers);
    const struct tk__timers *t = w->timers;
    if (t->in_pass) {
        for (size_t k = t->fire_pos; k < t->n_due; k++) {
            const hot *r = &t->hot[t->due[k].idx];
            if (r->handle == t->due[k].handle && r->where == IN_DUE)
                return 0.0;
        }
    }
    for (unsigned lvl = 0; lvl < WHEEL_LEVELS; lvl++) {
        if (!t->occupied[lvl])
            continue;
        unsigned s = lvl * WHEEL_SLOTS + (unsigned)__builtin_ctzll(t->occupied[lvl]);
        int64_t best = INT64_MAX;
        for (unsigned k = 0; k < WHEEL_LANES; k++)
            for (uint32_t i = t->heads[s * WHEEL_LANES + k]; i != NIL;
                 i = (uint32_t)t->hot[i].next)
                best = TK_MIN(best, t->hot[i].expire);
        return best > t->now ? ns_to_s(best - t->now) : 0.0;
    }
    return -1.0;
}

/* ---- snapshots -------------------------------------------------------- */

/*
 * Restore the internal time (world.load): only while no timer exists.
 * Returns 0 or TK_ESTATE.
 */
int tk__timers_restore_time(tk_world_t *w, uint64_t internal_ns)
{
    struct tk__timers *t = w->timers;
    if (live_count(t) != 0 || t->in_pass)
        return TK_ESTATE;
    t->now = internal_ns > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)internal_ns;
    t->clk = t->now >> WHEEL_TICK_SHIFT;
    t->last_ticked = UINT64_MAX;
    return 0;
}

/*
 * Snapshot restore (tickd/timer.h).  The remaining time may be negative for
 * a timer that was paused or unpaused while due (Unreal keeps expire - now).
 * Restored timers get new seqs in restore order, so ties keep the order in
 * which they are restored.
 */
int tk_timer_restore(tk_world_t *w, const tk_timer_desc *desc, tk_timer_handle h,
                     tk_timer_status status, double remaining, uint64_t fired)
{
    TK_PAR_GUARD(w, "tk_timer_restore");
    TK_ASSERT(w && w->timers);
    struct tk__timers *t = w->timers;
    uint32_t idx = (uint32_t)(h & IDX_MASK);
    uint64_t serial = h >> IDX_BITS;
    if (!desc || !(desc->rate >= 0) || !isfinite(desc->rate) || (desc->rate == 0 && desc->loop))
        return tk__world_error(w, TK_EINVAL,
                               "rate must be > 0 and finite (0: a one-shot next-tick timer)");
    if (serial == 0 || serial > SERIAL_MAX || idx >= TK_TIMER_MAX)
        return tk__world_error(w, TK_EINVAL, "%llu is not a timer handle",
                               (unsigned long long)h);
    if (!isfinite(remaining))
        return tk__world_error(w, TK_EINVAL, "remaining must be a finite number");
    if (status != TK_TIMER_PENDING && status != TK_TIMER_ACTIVE && status != TK_TIMER_PAUSED)
        return tk__world_error(w, TK_EINVAL, "a restored timer is pending, active or paused");
    if (t->in_pass)
        return tk__world_error(w, TK_ESTATE, "timers cannot be restored during a pass");
    if (lookup(t, h) != NIL)
        return tk__world_error(w, TK_EEXIST, "timer handle %llu exists", (unsigned long long)h);
    if (idx < t->n_recs && t->hot[idx].handle != 0 && (t->hot[idx].handle & IDX_MASK) == idx)
        return tk__world_error(w, TK_EEXIST, "timer slot %u is taken", idx);
    if (desc->owner && owner_find(t, desc->owner) == SIZE_MAX && owner_reserve(t) < 0)
        return tk__world_error(w, TK_ENOMEM, "out of memory for a timer");
    if (live_count(t) == 0) {
        /* Nothing live (a load clears first): start the records afresh, so
         * restoring in slot order never searches the free list. */
        t->n_recs = 0;
        t->free_head = NIL;
    }
    /* Records are indexed by slot, so a handle whose slot lies far past the
     * records in use (a snapshot naming slot 16,777,214 for its only timer)
     * would cost every record up to it.  Such a handle, or one whose slot's
     * record already holds another alias, goes to any free record and is
     * found through the alias table: memory stays proportional to the live
     * timers (at most 2 records per live timer + 1024 are made by restores). */
    bool alias = idx < t->n_recs ? t->hot[idx].handle != 0
                                 : (size_t)idx >= 2 * (live_count(t) + 1) + 1024;
    if (alias) {
        if (alias_reserve(t) < 0 ||
            (t->free_head == NIL && reserve_records(t, (size_t)t->n_recs + 1) < 0))
            return tk__world_error(w, TK_ENOMEM, "out of memory for a timer");
        idx = take_record(t);
        alias_put(t, h, idx);
    } else if (idx < t->n_recs) {
        /* unlink slot idx from the free list */
        uint32_t prev = NIL, i = t->free_head;
        while (i != NIL && i != idx) {
            prev = i;
            i = (uint32_t)t->hot[i].next;
        }
        if (i != idx)
            return tk__world_error(w, TK_ESTATE, "timer slot %u is not free", idx);
        if (prev == NIL)
            t->free_head = (uint32_t)t->hot[idx].next;
        else
            t->hot[prev].next = t->hot[idx].next;
    } else {
        if (reserve_records(t, (size_t)idx + 1) < 0)
            return tk__world_error(w, TK_ENOMEM, "out of memory for a timer");
        for (uint32_t k = t->n_recs; k < idx; k++) {
            memset(&t->hot[k], 0, sizeof t->hot[k]);
            memset(&t->cold[k], 0, sizeof t->cold[k]);
            t->hot[k].next = t->free_head;
            t->free_head = k;
        }
        t->n_recs = idx + 1;
    }
    if (serial > t->serial)
        t->serial = serial;
    hot *r = &t->hot[idx];
    cold *c = &t->cold[idx];
    memset(r, 0, sizeof *r);
    memset(c, 0, sizeof *c);
    r->handle = h;
    r->seq = ++t->seq;
    c->rate = secs_to_ns(desc->rate);
    if (c->rate < 1 && desc->rate > 0)
        c->rate = 1;
    c->loop = desc->loop;
    c->owner = desc->owner;
    c->fn = desc->fn;
    c->ud = desc->ud;
    c->free_ud = desc->free_ud;
    c->fired = fired;
    int64_t rem = signed_secs_to_ns(remaining);
    switch (status) {
    case TK_TIMER_ACTIVE:
        r->status = TK_TIMER_ACTIVE;
        r->expire = sat_add(t->now, rem);
        wheel_add(t, idx);
        t->n_active++;
        break;
    case TK_TIMER_PENDING:
        r->status = TK_TIMER_PENDING;
        r->expire = rem;
        pend_add(t, idx);
        break;
    default:
        r->status = TK_TIMER_PAUSED;
        r->expire = rem;
        r->where = IN_NONE;
        t->n_paused++;
        break;
    }
    if (c->owner)
        owner_link(t, idx);
    return 0;
}

/* ---- exact restores (tickd/timer.h) ------------------------------------------------------- */

uint64_t tk_timer_serial(const tk_world_t *w)
{
    TK_ASSERT(w && w->timers);
    return w->timers->serial;
}

size_t tk_timer_free_slots(const tk_world_t *w, uint32_t *out, size_t cap)
{
    TK_ASSERT(w && w->timers);
    const struct tk__timers *t = w->timers;
    size_t n = 0;
    for (uint32_t i = t->free_head; i != NIL; i = (uint32_t)t->hot[i].next, n++)
        if (n < cap)
            out[n] = i;
    return n;
}

int tk_timer_restore_alloc(tk_world_t *w, uint64_t serial, const uint32_t *free_slots, size_t n)
{
    TK_ASSERT(w && w->timers);
    struct tk__timers *t = w->timers;
    if (t->in_pass)
        return tk__world_error(w, TK_ESTATE, "timers cannot be restored during a pass");
    if (serial > SERIAL_MAX)
        return tk__world_error(w, TK_EINVAL, "timer serial %llu is out of range",
                               (unsigned long long)serial);
    /* Records past the last live one and the last listed one are forgotten
     * (as never used): restored in place after a clear, the manager ends as
     * a fresh restore would. */
    uint32_t top = 0;
    for (uint32_t k = t->n_recs; k-- > 0;) {
        if (t->hot[k].handle != 0) {
            top = k + 1;
            break;
        }
    }
    for (size_t k = 0; k < n; k++) {
        uint32_t i = free_slots[k];
        if (i >= TK_TIMER_MAX)
            return tk__world_error(w, TK_EINVAL, "timer slot %u is out of range", i);
        if (i < t->n_recs && t->hot[i].handle != 0)
            return tk__world_error(w, TK_EINVAL, "timer slot %u is not free", i);
        if (i + 1 > top)
            top = i + 1;
    }
    /* Listed once: a mark per record (the records grow to `top` first). */
    if (reserve_records(t, top) < 0)
        return tk__world_error(w, TK_ENOMEM, "out of memory for the timers' free slots");
    uint8_t *seen = n ? tk_try_malloc(top) : NULL;
    if (n && !seen)
        return tk__world_error(w, TK_ENOMEM, "out of memory for the timers' free slots");
    if (seen)
        memset(seen, 0, top);
    for (size_t k = 0; k < n; k++) {
        if (seen[free_slots[k]]) {
            tk_free(seen);
            return tk__world_error(w, TK_EINVAL, "timer slot %u is listed twice", free_slots[k]);
        }
        seen[free_slots[k]] = 1;
    }
    for (uint32_t k = t->n_recs; k < top; k++) {
        memset(&t->hot[k], 0, sizeof t->hot[k]);
        memset(&t->cold[k], 0, sizeof t->cold[k]);
    }
    t->n_recs = top;
    /* Rebuild the list back to front: the unlisted free records in
     * descending order, then the listed ones from the last. */
    t->free_head = NIL;
    for (uint32_t k = top; k-- > 0;) {
        if (t->hot[k].handle == 0 && !(seen && seen[k])) {
            t->hot[k].next = t->free_head;
            t->free_head = k;
        }
    }
    for (size_t k = n; k-- > 0;) {
        t->hot[free_slots[k]].next = t->free_head;
        t->free_head = free_slots[k];
    }
    tk_free(seen);
    t->serial = serial;
    return 0;
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int tk_timer_restore_order(tk_world_t *w, const tk_timer_handle *h, size_t n)
{
    TK_ASSERT(w && w->timers);
    struct tk__timers *t = w->timers;
    if (t->in_pass)
        return tk__world_error(w, TK_ESTATE, "timers cannot be reordered during a pass");
    if (n == 0)
        return 0;
    /* Check first: every handle live, none twice (their records sorted). */
    uint32_t *idx = tk_try_malloc(n * sizeof *idx);
    if (!idx)
        return tk__world_error(w, TK_ENOMEM, "out of memory to reorder timers");
    for (size_t k = 0; k < n; k++) {
        idx[k] = lookup(t, h[k]);
        if (idx[k] == NIL) {
            tk_free(idx);
            return tk__world_error(w, TK_ENOENT, "timer %llu does not exist",
                                   (unsigned long long)h[k]);
        }
    }
    qsort(idx, n, sizeof *idx, u32_cmp);
    for (size_t k = 1; k < n; k++) {
        if (idx[k] == idx[k - 1]) {
            tk_free(idx);
            return tk__world_error(w, TK_EINVAL, "a timer is listed twice");
        }
    }
    tk_free(idx);
    for (size_t k = 0; k < n; k++)
        t->hot[lookup(t, h[k])].seq = ++t->seq;
    return 0;
}

void tk_timer_restore_ticked(tk_world_t *w, bool ticked)
{
    TK_ASSERT(w && w->timers);
    w->timers->last_ticked = ticked && w->frame > 0 ? w->frame - 1 : UINT64_MAX;
}
