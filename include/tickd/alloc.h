/*
 * tickd/alloc.h - the one allocator wrapper, with an explicit OOM policy.
 *
 * tk_malloc/tk_calloc/tk_realloc/tk_strdup never return NULL: on exhaustion
 * they log the size and abort (Redis zmalloc).  They are for allocations the
 * process cannot run without.  tk_try_* return NULL instead, for optional
 * allocations whose failure is reported to the caller (a big spawn, a client
 * buffer).  tk_alloc_fail_after(n) makes the n-th following tk_try_* call fail
 * (0 = never), so tests reach the OOM paths (SQLite's fault injection).
 */
#ifndef TICKD_ALLOC_H
#define TICKD_ALLOC_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void *tk_malloc(size_t n);
void *tk_calloc(size_t count, size_t size);
void *tk_realloc(void *p, size_t n);
char *tk_strdup(const char *s);
void tk_free(void *p);

void *tk_try_malloc(size_t n);
void *tk_try_calloc(size_t count, size_t size);
void *tk_try_realloc(void *p, size_t n);

/* Fault injection for tests: the n-th next tk_try_* call fails; 0 disarms. */
void tk_alloc_fail_after(unsigned long n);

#ifdef __cplusplus
}
#endif
#endif
