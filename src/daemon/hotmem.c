/*
 * hotmem.c - hot regions excluded from a save child's fork, handed to it as
 * a copy (hotmem.h).
 *
 * The shadow is a shared anonymous mapping: shared, so that the fork does
 * not write-protect it (the parent fills it again at the next save without
 * a fault), and anonymous shmem, so that the child can mremap parts of it
 * to the regions' addresses.  It is created and touched by a thread, since
 * first touches cost as much as the copy-on-write faults it avoids.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hotmem.h"
#include "tickd/alloc.h"

enum { IDLE = 0, GROWING = 1, GROWN = 2 };

struct tkd_hotmem {
    char *shadow;           /* MAP_SHARED | MAP_ANONYMOUS, or NULL     */
    size_t cap;             /* its bytes                               */
    /* growth, on a thread */
    pthread_t th;
    atomic_int state;       /* IDLE, GROWING, GROWN                    */
    size_t want;            /* GROWING: bytes asked for                */
    char *grown;            /* GROWN: the new mapping, or NULL (failed) */
    size_t failed;          /* bytes a growth could not map (0: none)   */
    /* the regions of the fork in progress */
    struct iovec *reg;
    size_t *off;            /* each region's place in the shadow       */
    size_t *cum;            /* n + 1 prefix sums of the bytes copied   */
    size_t n, reg_cap;
    /* the copy, in pieces claimed by the frame thread and a helper */
    size_t pieces;          /* COPY_PIECE bytes each (the last less)   */
    atomic_size_t next;     /* the next piece to claim                 */
    atomic_size_t done;     /* pieces copied                           */
    atomic_bool helper_live; /* a helper (detached) may still touch
                                next: waited for before the next copy */
};

static size_t page_size(void)
{
    static size_t ps;
    if (!ps) {
        long v = sysconf(_SC_PAGESIZE);
        ps = v > 0 ? (size_t)v : 4096;
    }
    return ps;
}

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

tkd_hotmem *tkd_hotmem_new(void)
{
    tkd_hotmem *h = tk_calloc(1, sizeof *h);
    atomic_init(&h->state, IDLE);
    atomic_init(&h->helper_live, false);
    return h;
}

static void join_growth(tkd_hotmem *h)
{
    if (atomic_load(&h->state) == IDLE)
        return;
    pthread_join(h->th, NULL);
    if (!h->grown)
        h->failed = h->want;
    if (h->grown) {
        if (h->shadow)
            munmap(h->shadow, h->cap);
        h->shadow = h->grown;
        h->cap = h->want;
        h->grown = NULL;
    }
    atomic_store(&h->state, IDLE);
}

static void join_helper(tkd_hotmem *h);

void tkd_hotmem_free(tkd_hotmem *h)
{
    if (!h)
        return;
    join_growth(h);
    join_helper(h);
    if (h->shadow)
        munmap(h->shadow, h->cap);
    tk_free(h->reg);
    tk_free(h->off);
    tk_free(h->cum);
    tk_free(h);
}

static void *grow_thread(void *arg)
{
    tkd_hotmem *h = arg;
    char *m = mmap(NULL, h->want, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        h->grown = NULL;
    } else {
        /* Touch every page now: the copy into it must not fault. */
        size_t ps = page_size();
        for (size_t i = 0; i < h->want; i += ps)
            ((volatile char *)m)[i] = 0;
        h->grown = m;
    }
    atomic_store_explicit(&h->state, GROWN, memory_order_release);
    return NULL;
}

bool tkd_hotmem_ready(tkd_hotmem *h, size_t bytes)
{
    int st = atomic_load_explicit(&h->state, memory_order_acquire);
    if (st == GROWING)
        return false;
    if (st == GROWN)
        join_growth(h);
    if (h->cap >= bytes)
        return true;
    /* A shadow that size could not be mapped: go on without (the save
     * forks with copy-on-write; tkd_hotmem_before_fork says so). */
    if (h->failed && h->failed <= bytes + bytes / 4 + (1u << 20))
        return true;
    h->want = round_up(bytes + bytes / 4 + (1u << 20), page_size());
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&h->state, GROWING);
    int rc = pthread_create(&h->th, NULL, grow_thread, h);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        atomic_store(&h->state, IDLE);
    return false;
}

/*
 * The copy before a fork is cut into pieces that the frame thread and one
 * helper thread claim in turn (one core copies well below what memory
 * allows).  The frame thread never waits for a piece nobody has claimed: if
 * the helper is slow to start (a busy machine) the frame thread copies
 * everything itself, and it waits at most for the piece the helper is
 * copying.
 */
#define COPY_PIECE (1u << 20)
/* Below this the helper costs more than it saves. */
#define COPY_SPLIT_MIN (4u << 20)

static void copy_piece(const tkd_hotmem *h, size_t k)
{
    size_t a = k * COPY_PIECE, b = a + COPY_PIECE;
    if (b > h->cum[h->n])
        b = h->cum[h->n];
    /* The region holding byte a: the last i with cum[i] <= a. */
    size_t lo = 0, hi = h->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (h->cum[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    for (size_t i = lo; a < b && i < h->n; i++) {
        if (h->cum[i + 1] <= a)
            continue;
        size_t in = a - h->cum[i], end = b < h->cum[i + 1] ? b : h->cum[i + 1];
        memcpy(h->shadow + h->off[i] + in, (const char *)h->reg[i].iov_base + in, end - a);
        a = end;
    }
}

static void claim_and_copy(tkd_hotmem *h)
{
    size_t k;
    while ((k = atomic_fetch_add_explicit(&h->next, 1, memory_order_relaxed)) < h->pieces) {
        copy_piece(h, k);
        atomic_fetch_add_explicit(&h->done, 1, memory_order_release);
    }
}

static void *copy_thread(void *arg)
{
    tkd_hotmem *h = arg;
    claim_and_copy(h);
    atomic_store_explicit(&h->helper_live, false, memory_order_release); /* its last touch */
    return NULL;
}

/* The helper is detached (a joinable thread left running across the fork
 * would count as leaked in the child); it is done long before the next
 * copy, which still makes sure. */
static void join_helper(tkd_hotmem *h)
{
    while (atomic_load_explicit(&h->helper_live, memory_order_acquire))
        sched_yield();
}

int tkd_hotmem_before_fork(tkd_hotmem *h, const struct iovec *regions, const size_t *used,
                           size_t n, char *err, size_t errlen)
{
    size_t ps = page_size(), total = 0;
    for (size_t i = 0; i < n; i++) {
        if ((uintptr_t)regions[i].iov_base % ps || regions[i].iov_len % ps) {
            snprintf(err, errlen, "hot region %zu is not whole pages", i);
            return -1;
        }
        total += regions[i].iov_len;
    }
    if (total > h->cap || atomic_load(&h->state) == GROWING) {
        snprintf(err, errlen, "the shadow holds %zu bytes, %zu needed", h->cap, total);
        return -1;
    }
    join_helper(h);
    if (n > h->reg_cap) {
        h->reg_cap = n;
        h->reg = tk_realloc(h->reg, n * sizeof *h->reg);
        h->off = tk_realloc(h->off, n * sizeof *h->off);
        h->cum = tk_realloc(h->cum, (n + 1) * sizeof *h->cum);
    }
    size_t off = 0;
    h->n = 0;
    h->cum[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (!regions[i].iov_len)
            continue;
        if (madvise(regions[i].iov_base, regions[i].iov_len, MADV_DONTFORK) != 0) {
            int e = errno;
            tkd_hotmem_after_fork(h);
            snprintf(err, errlen, "madvise(MADV_DONTFORK): %s", strerror(e));
            return -1;
        }
        size_t u = used && used[i] < regions[i].iov_len ? used[i] : regions[i].iov_len;
        h->reg[h->n] = regions[i];
        h->off[h->n] = off;
        h->cum[h->n + 1] = h->cum[h->n] + u;
        h->n++;
        off += regions[i].iov_len;
    }
    size_t bytes = h->cum[h->n];
    h->pieces = (bytes + COPY_PIECE - 1) / COPY_PIECE;
    atomic_store_explicit(&h->next, 0, memory_order_relaxed);
    atomic_store_explicit(&h->done, 0, memory_order_relaxed);
    if (bytes >= COPY_SPLIT_MIN) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_t th;
        atomic_store_explicit(&h->helper_live, true, memory_order_relaxed);
        if (pthread_create(&th, &attr, copy_thread, h) != 0)
            atomic_store_explicit(&h->helper_live, false, memory_order_relaxed);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    claim_and_copy(h);
    /* At most the helper's piece in flight. */
    while (atomic_load_explicit(&h->done, memory_order_acquire) < h->pieces)
        sched_yield();
    return 0;
}

int tkd_hotmem_in_child(tkd_hotmem *h)
{
    for (size_t i = 0; i < h->n; i++) {
        void *p = mremap(h->shadow + h->off[i], h->reg[i].iov_len, h->reg[i].iov_len,
                         MREMAP_MAYMOVE | MREMAP_FIXED, h->reg[i].iov_base);
        if (p == MAP_FAILED)
            return -1;
    }
    return 0;
}

void tkd_hotmem_after_fork(tkd_hotmem *h)
{
    for (size_t i = 0; i < h->n; i++)
        madvise(h->reg[i].iov_base, h->reg[i].iov_len, MADV_DOFORK);
    h->n = 0;
}
