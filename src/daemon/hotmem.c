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
    size_t *off;
    size_t n, reg_cap;
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

void tkd_hotmem_free(tkd_hotmem *h)
{
    if (!h)
        return;
    join_growth(h);
    if (h->shadow)
        munmap(h->shadow, h->cap);
    tk_free(h->reg);
    tk_free(h->off);
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

/* Copies of [from, to) bytes of the regions into the shadow (a half of the
 * whole: the copy before a fork is split between the frame thread and one
 * more, since one core copies well below what memory allows). */
typedef struct copy_part {
    const tkd_hotmem *h;
    size_t from, to;
} copy_part;

static void copy_range(const tkd_hotmem *h, size_t from, size_t to)
{
    for (size_t i = 0; i < h->n && from < to; i++) {
        size_t a = h->off[i], b = a + h->reg[i].iov_len;
        if (b <= from || a >= to)
            continue;
        size_t lo = from > a ? from : a, hi = to < b ? to : b;
        memcpy(h->shadow + lo, (const char *)h->reg[i].iov_base + (lo - a), hi - lo);
    }
}

static void *copy_thread(void *arg)
{
    const copy_part *c = arg;
    copy_range(c->h, c->from, c->to);
    return NULL;
}

/* Below this the second thread costs more than it saves. */
#define COPY_SPLIT_MIN (4u << 20)

int tkd_hotmem_before_fork(tkd_hotmem *h, const struct iovec *regions, size_t n, char *err,
                           size_t errlen)
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
    if (n > h->reg_cap) {
        h->reg_cap = n;
        h->reg = tk_realloc(h->reg, n * sizeof *h->reg);
        h->off = tk_realloc(h->off, n * sizeof *h->off);
    }
    size_t off = 0;
    h->n = 0;
    for (size_t i = 0; i < n; i++) {
        if (!regions[i].iov_len)
            continue;
        if (madvise(regions[i].iov_base, regions[i].iov_len, MADV_DONTFORK) != 0) {
            int e = errno;
            tkd_hotmem_after_fork(h);
            snprintf(err, errlen, "madvise(MADV_DONTFORK): %s", strerror(e));
            return -1;
        }
        h->reg[h->n] = regions[i];
        h->off[h->n] = off;
        h->n++;
        off += regions[i].iov_len;
    }
    /* The second half on a thread of its own while this one copies the
     * first (a page boundary between them). */
    size_t mid = off >= COPY_SPLIT_MIN ? off / 2 / ps * ps : off;
    copy_part part = {h, mid, off};
    pthread_t th;
    bool split = false;
    if (mid < off) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        split = pthread_create(&th, NULL, copy_thread, &part) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    copy_range(h, 0, split ? mid : off);
    if (split)
        pthread_join(th, NULL);
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
