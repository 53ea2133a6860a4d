/*
 * util_int.h - internal helpers shared by libtickd's modules: assertions,
 * growable arrays, small math.  Not part of the public API.
 */
#ifndef TICKD_UTIL_INT_H
#define TICKD_UTIL_INT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/alloc.h"
#include "tickd/log.h"

/* Log file, line and expression, then abort (Redis serverAssert). */
#define TK_ASSERT(x)                                                           \
    do {                                                                       \
        if (__builtin_expect(!(x), 0))                                         \
            tk__assert_fail(#x, __FILE__, __LINE__);                           \
    } while (0)

/* Defensive checks for can't-happen branches (SQLite's ALWAYS/NEVER): they
 * assert in debug builds and evaluate to the expression otherwise. */
#ifdef NDEBUG
#define TK_ALWAYS(x) (x)
#define TK_NEVER(x) (x)
#else
#define TK_ALWAYS(x) ((x) ? 1 : (tk__assert_fail(#x, __FILE__, __LINE__), 0))
#define TK_NEVER(x) ((x) ? (tk__assert_fail("!(" #x ")", __FILE__, __LINE__), 1) : 0)
#endif

#define TK_LIKELY(x) __builtin_expect(!!(x), 1)
#define TK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TK_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TK_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

__attribute__((noreturn)) void tk__assert_fail(const char *expr, const char *file,
                                               int line);

/*
 * Grow `*p` (elements of `elem` bytes, capacity `*cap`) to hold at least
 * `need` elements; doubles, aborts on OOM (tk_realloc).
 */
static inline void tk__grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return;
    size_t n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    *p = tk_realloc(*p, n * elem);
    *cap = n;
}

/* The same, returning -1 instead of aborting when memory runs out. */
static inline int tk__try_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 8;
    while (n < need)
        n *= 2;
    void *q = tk_try_realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

#define TK_GROW(arr, cap, need) tk__grow((void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif
