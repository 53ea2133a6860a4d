/*
 * alloc.c - the allocator wrapper of tickd/alloc.h.
 *
 * Must-succeed allocations abort with a log line naming the size; tk_try_*
 * return NULL and honour the fault-injection counter used by tests.
 */
#include <stdlib.h>
#include <string.h>

#include "tickd/alloc.h"
#include "tickd/log.h"

static unsigned long g_fail_after;

static void oom(size_t n)
{
    tk_log(TK_LOG_ERROR, "out of memory allocating %zu bytes", n);
    abort();
}

void *tk_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *tk_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        oom(count * size);
    return p;
}

void *tk_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *tk_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tk_malloc(n);
    memcpy(p, s, n);
    return p;
}

void tk_free(void *p) { free(p); }

static int injected_failure(void)
{
    if (g_fail_after == 0)
        return 0;
    if (--g_fail_after == 0)
        return 1;
    return 0;
}

void *tk_try_malloc(size_t n)
{
    if (injected_failure())
        return NULL;
    return malloc(n ? n : 1);
}

void *tk_try_calloc(size_t count, size_t size)
{
    if (injected_failure())
        return NULL;
    return calloc(count ? count : 1, size ? size : 1);
}

void *tk_try_realloc(void *p, size_t n)
{
    if (injected_failure())
        return NULL;
    return realloc(p, n ? n : 1);
}

void tk_alloc_fail_after(unsigned long n) { g_fail_after = n; }
