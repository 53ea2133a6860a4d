/* split.c - see split.h. */
#include <pthread.h>
#include <stdlib.h>

#include "split.h"

struct bench_split {
    unsigned threads;
    pthread_t *tids;
    pthread_mutex_t mu;
    pthread_cond_t go, done;
    unsigned long gen;      /* bumped per run                  */
    unsigned left;          /* helpers still running this run  */
    int stop;
    void (*fn)(void *, size_t, size_t);
    void *ud;
    size_t n;
};

typedef struct helper {
    bench_split *s;
    unsigned k;             /* its part                        */
} helper;

static void part(const bench_split *s, unsigned k, size_t *lo, size_t *hi)
{
    *lo = s->n * k / s->threads;
    *hi = s->n * (k + 1) / s->threads;
}

static void *helper_main(void *arg)
{
    helper h = *(helper *)arg;
    free(arg);
    bench_split *s = h.s;
    unsigned long seen = 0;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->gen == seen && !s->stop)
            pthread_cond_wait(&s->go, &s->mu);
        if (s->stop)
            break;
        seen = s->gen;
        pthread_mutex_unlock(&s->mu);
        size_t lo, hi;
        part(s, h.k, &lo, &hi);
        s->fn(s->ud, lo, hi);
        pthread_mutex_lock(&s->mu);
        if (--s->left == 0)
            pthread_cond_signal(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

bench_split *bench_split_new(unsigned threads)
{
    bench_split *s = calloc(1, sizeof *s);
    if (!s)
        abort();
    s->threads = threads ? threads : 1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->go, NULL);
    pthread_cond_init(&s->done, NULL);
    s->tids = calloc(s->threads, sizeof *s->tids);
    for (unsigned k = 1; k < s->threads; k++) {
        helper *h = malloc(sizeof *h);
        if (!h)
            abort();
        *h = (helper){s, k};
        if (pthread_create(&s->tids[k], NULL, helper_main, h) != 0)
            abort();
    }
    return s;
}

void bench_split_free(bench_split *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->mu);
    for (unsigned k = 1; k < s->threads; k++)
        pthread_join(s->tids[k], NULL);
    pthread_cond_destroy(&s->go);
    pthread_cond_destroy(&s->done);
    pthread_mutex_destroy(&s->mu);
    free(s->tids);
    free(s);
}

void bench_split_run(bench_split *s, void (*fn)(void *, size_t, size_t), void *ud, size_t n)
{
    pthread_mutex_lock(&s->mu);
    s->fn = fn;
    s->ud = ud;
    s->n = n;
    s->left = s->threads - 1;
    s->gen++;
    pthread_cond_broadcast(&s->go);
    pthread_mutex_unlock(&s->mu);
    size_t lo, hi;
    part(s, 0, &lo, &hi);
    fn(ud, lo, hi);
    pthread_mutex_lock(&s->mu);
    while (s->left)
        pthread_cond_wait(&s->done, &s->mu);
    pthread_mutex_unlock(&s->mu);
}
