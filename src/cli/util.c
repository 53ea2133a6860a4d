/*
 * util.c - tickctl's growable byte buffer, must-succeed allocation and
 * formatted heap strings.
 *
 * tickctl is a short-lived process, so running out of memory is reported on
 * stderr and ends it with status 1 (there is nothing to degrade to).  It does
 * not link libtickd, hence its own small wrappers instead of tk_malloc.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tickctl_int.h"

void tk__ctl_oom(void)
{
    /* No stdio: it may need the memory we just failed to get. */
    static const char msg[] = "tickctl: out of memory\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n; /* nothing left to report a failed report to */
    _exit(TK_CTL_EXIT_FAIL);
}

void tk__ctl_buf_reserve(tk_ctl_buf_t *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len)
        tk__ctl_oom();
    size_t need = b->len + extra;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        tk__ctl_oom();
    b->data = p;
    b->cap = cap;
}

void tk__ctl_buf_append(tk_ctl_buf_t *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    tk__ctl_buf_reserve(b, n);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void tk__ctl_buf_puts(tk_ctl_buf_t *b, const char *s)
{
    tk__ctl_buf_append(b, s, strlen(s));
}

void tk__ctl_buf_putc(tk_ctl_buf_t *b, char c)
{
    tk__ctl_buf_reserve(b, 1);
    b->data[b->len++] = c;
}

void tk__ctl_buf_free(tk_ctl_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *tk__ctl_strf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        tk__ctl_oom();
    return s;
}

bool tk__ctl_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        size_t more;
        unsigned cp, min;
        if (c >= 0xc2 && c <= 0xdf) {
            more = 1, cp = c & 0x1f, min = 0x80;
        } else if (c >= 0xe0 && c <= 0xef) {
            more = 2, cp = c & 0x0f, min = 0x800;
        } else if (c >= 0xf0 && c <= 0xf4) {
            more = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false; /* continuation byte, overlong lead, or > U+10FFFF */
        }
        if ((size_t)(end - p) < more)
            return false;
        for (size_t i = 0; i < more; i++, p++) {
            if ((*p & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (*p & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
    }
    return true;
}
