/*
 * pool.c - the engine's worker threads (pool_int.h).
 *
 * A section is published in one 64-bit word, `claim`: the section's
 * generation in the high half, the chunks not yet taken in the low half.  A
 * thread takes a chunk with a compare-and-swap that keeps the generation, so
 * a worker that wakes late, after the section ended or while the next one
 * runs, can never take a chunk of a section it did not see published: the
 * job, its argument and the chunk count it reads after a successful take
 * belong to that section, which cannot end before that chunk is done.
 * `done` counts finished chunks; the caller returns when it reaches n.
 *
 *   caller                               worker
 *   job, ud, n, done = 0                 (spins on `seq`, then sleeps on it)
 *   claim = gen << 32 | n   (release)
 *   seq++, futex wake if sleepers
 *   takes chunks, runs them              takes chunks (CAS on claim), runs
 *   waits for done == n                  them, done++ (release)
 *   (spins, then sleeps on `done`)       wakes the caller if it sleeps
 *
 * Sleeping: a worker spins WORKER_SPIN_NS on `seq` after its last chunk
 * (the next section of a frame often follows within microseconds), then
 * announces itself in `sleepers` and waits on the futex; the caller bumps
 * `seq` before reading `sleepers` and the worker reads `seq` again after
 * announcing itself, both sequentially consistent, so a wake-up is never
 * lost (and FUTEX_WAIT compares the word atomically).  The caller's wait for
 * the last chunks works the same way on `done` and `joiner`.  All
 * synchronization of the data is by the atomics; the futexes only sleep.
 *
 * What this file does not do: decide what is worth a section or how to cut
 * it (tick.c does, from measured costs), or run anything but chunks.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pool_int.h"
#include "util_int.h"

#include "tickd/clock.h"

#define WORKER_SPIN_NS 50000u /* a worker's spin after a section, ns   */
#define JOIN_SPIN_NS 200000u  /* the caller's spin for the last chunks */

struct tk__pool {
    unsigned threads;             /* the caller + workers                  */
    pthread_t *tids;              /* workers                               */
    _Atomic uint64_t claim;       /* gen << 32 | chunks not yet taken      */
    _Atomic uint32_t done;        /* chunks finished (futex of the caller) */
    _Atomic uint32_t seq;         /* bumped per section (futex of workers) */
    _Atomic uint32_t sleepers;    /* workers waiting on seq                */
    _Atomic uint32_t joiner;      /* the caller waits on done              */
    _Atomic bool stop;            /* workers exit                          */
    uint32_t gen;                 /* generation of the last section        */
    /* The section (written before claim is published, read after a take). */
    tk__pool_job job;
    void *ud;
    uint32_t n;
};

typedef struct worker_arg {
    tk__pool *p;
    unsigned id;
} worker_arg;

static long futex(_Atomic uint32_t *addr, int op, uint32_t val)
{
    return syscall(SYS_futex, (uint32_t *)addr, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Take a chunk of section `gen`: its index, or -1 when none is left (or the
 * section is no longer `gen`). */
static int64_t take(tk__pool *p, uint32_t gen)
{
    uint64_t cur = atomic_load_explicit(&p->claim, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(cur >> 32) != gen || (uint32_t)cur == 0)
            return -1;
        if (atomic_compare_exchange_weak_explicit(&p->claim, &cur, cur - 1,
                                                  memory_order_acq_rel, memory_order_acquire))
            return (int64_t)(p->n - (uint32_t)cur);
    }
}

/* Run chunks of section `gen` until none is left. */
static void work(tk__pool *p, uint32_t gen, unsigned id)
{
    int64_t k;
    while ((k = take(p, gen)) >= 0) {
        uint32_t n = p->n;
        p->job(p->ud, (uint32_t)k, id);
        uint32_t d = atomic_fetch_add_explicit(&p->done, 1, memory_order_seq_cst) + 1;
        if (d == n && atomic_load_explicit(&p->joiner, memory_order_seq_cst))
            futex(&p->done, FUTEX_WAKE, 1);
    }
}

static void *worker_main(void *arg)
{
    worker_arg a = *(worker_arg *)arg;
    tk_free(arg);
    tk__pool *p = a.p;
    char name[16];
    snprintf(name, sizeof name, "tickd-worker-%u", a.id);
    pthread_setname_np(pthread_self(), name);
    uint32_t seen = 0; /* generation last worked on */
    for (;;) {
        uint32_t s = atomic_load_explicit(&p->seq, memory_order_seq_cst);
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            break;
        uint32_t gen = (uint32_t)(atomic_load_explicit(&p->claim, memory_order_acquire) >> 32);
        if (gen != seen) {
            seen = gen;
            work(p, gen, a.id);
            continue;
        }
        /* Nothing new: spin a while, then sleep until seq moves. */
        uint64_t end = tk_clock_now_ns() + WORKER_SPIN_NS;
        bool moved = false;
        for (unsigned i = 1;; i++) {
            if (atomic_load_explicit(&p->seq, memory_order_relaxed) != s) {
                moved = true;
                break;
            }
            cpu_relax();
            if ((i & 63) == 0 && tk_clock_now_ns() >= end)
                break;
        }
        if (moved)
            continue;
        atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_seq_cst);
        while (atomic_load_explicit(&p->seq, memory_order_seq_cst) == s &&
               !atomic_load_explicit(&p->stop, memory_order_acquire))
            futex(&p->seq, FUTEX_WAIT, s);
        atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_seq_cst);
    }
    return NULL;
}

tk__pool *tk__pool_new(unsigned threads)
{
    TK_ASSERT(threads >= 2 && threads <= TK_ENGINE_MAX_THREADS);
    tk__pool *p = tk_calloc(1, sizeof *p);
    p->threads = 1;
    p->tids = tk_calloc(threads - 1, sizeof *p->tids);
    /* Workers take no signal: the frame thread handles them. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 1; i < threads; i++) {
        worker_arg *a = tk_malloc(sizeof *a);
        *a = (worker_arg){p, i};
        int rc = pthread_create(&p->tids[i - 1], NULL, worker_main, a);
        if (rc != 0) {
            tk_free(a);
            tk_log_error("cannot start worker thread %u of %u: %s", i, threads - 1,
                         strerror(rc));
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            tk__pool_free(p);
            return NULL;
        }
        p->threads++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return p;
}

void tk__pool_free(tk__pool *p)
{
    if (!p)
        return;
    atomic_store_explicit(&p->stop, true, memory_order_release);
    atomic_fetch_add_explicit(&p->seq, 1, memory_order_seq_cst);
    futex(&p->seq, FUTEX_WAKE, INT_MAX);
    for (unsigned i = 1; i < p->threads; i++)
        pthread_join(p->tids[i - 1], NULL);
    tk_free(p->tids);
    tk_free(p);
}

unsigned tk__pool_threads(const tk__pool *p) { return p ? p->threads : 1; }

void tk__pool_run(tk__pool *p, uint32_t n, tk__pool_job job, void *ud, unsigned want)
{
    if (n == 0)
        return;
    uint32_t gen = ++p->gen;
    p->job = job;
    p->ud = ud;
    p->n = n;
    atomic_store_explicit(&p->done, 0, memory_order_relaxed);
    atomic_store_explicit(&p->claim, (uint64_t)gen << 32 | n, memory_order_release);
    atomic_fetch_add_explicit(&p->seq, 1, memory_order_seq_cst);
    if (want > 1 && n > 1 && atomic_load_explicit(&p->sleepers, memory_order_seq_cst))
        futex(&p->seq, FUTEX_WAKE, (uint32_t)TK_MIN(want - 1, n - 1));
    work(p, gen, 0);
    /* The last chunks: spin while they are likely to end soon, then sleep. */
    uint64_t end = 0;
    for (unsigned i = 1; atomic_load_explicit(&p->done, memory_order_acquire) != n; i++) {
        cpu_relax();
        if ((i & 63) != 0)
            continue;
        uint64_t now = tk_clock_now_ns();
        if (!end) {
            end = now + JOIN_SPIN_NS;
            continue;
        }
        if (now < end)
            continue;
        atomic_store_explicit(&p->joiner, 1, memory_order_seq_cst);
        uint32_t d;
        while ((d = atomic_load_explicit(&p->done, memory_order_seq_cst)) != n)
            futex(&p->done, FUTEX_WAIT, d);
        atomic_store_explicit(&p->joiner, 0, memory_order_relaxed);
        break;
    }
    atomic_thread_fence(memory_order_acquire);
}
