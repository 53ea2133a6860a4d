/*
 * util.c - tickd-load's small helpers: allocation that must succeed, a
 * growable byte buffer, the monotonic clock.
 *
 * A load generator that runs out of memory has no useful way to go on (its
 * figures would be wrong), so every allocation here either succeeds or ends
 * the process with a message and status 2.  Not here: anything that knows
 * about JSON-RPC or scenarios.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "load.h"

void tk__load_oom(void)
{
    fputs("tickd-load: out of memory\n", stderr);
    exit(TK_LOAD_EXIT_USAGE);
}

void *tk__load_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        tk__load_oom();
    return p;
}

void *tk__load_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        tk__load_oom();
    return p;
}

void *tk__load_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        tk__load_oom();
    return q;
}

char *tk__load_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tk__load_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

char *tk__load_strf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        tk__load_oom();
    return s;
}

void tk__load_buf_reserve(tk_load_buf_t *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > SIZE_MAX / 2)
            tk__load_oom();
        cap *= 2;
    }
    b->data = tk__load_xrealloc(b->data, cap);
    b->cap = cap;
}

void tk__load_buf_append(tk_load_buf_t *b, const void *p, size_t n)
{
    tk__load_buf_reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tk__load_buf_puts(tk_load_buf_t *b, const char *s) { tk__load_buf_append(b, s, strlen(s)); }

void tk__load_buf_printf(tk_load_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char small[256];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        tk__load_oom(); /* only an encoding error: not produced by our formats */
    if ((size_t)n < sizeof small) {
        tk__load_buf_append(b, small, (size_t)n);
    } else {
        tk__load_buf_reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void tk__load_buf_free(tk_load_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

uint64_t tk__load_now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0) {
        /* Only possible without CLOCK_MONOTONIC, i.e. not on Linux. */
        fprintf(stderr, "tickd-load: clock_gettime: %s\n", strerror(errno));
        exit(TK_LOAD_EXIT_USAGE);
    }
    return (uint64_t)ts.tv_sec * (uint64_t)TK_LOAD_NS_PER_S + (uint64_t)ts.tv_nsec;
}
