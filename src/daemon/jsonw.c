/*
 * jsonw.c - the daemon's JSON writer (jsonw.h): compact text, shortest
 * round-trip reals, jansson's escaping for everything else.
 *
 * The text is built in one growable buffer (doubling, so O(n) in total);
 * strings are copied in runs between the bytes that need escaping, and
 * UTF-8 is checked as jansson checks it (no overlong forms, no surrogates,
 * nothing above U+10FFFF).
 */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

typedef struct wbuf {
    char *data;     /* jansson-allocated; NULL after a failure        */
    size_t len;     /* bytes written                                  */
    size_t cap;     /* bytes allocated                                */
    bool failed;    /* out of memory or invalid input                 */
    json_malloc_t m;
    json_free_t f;
} wbuf;

static bool reserve(wbuf *b, size_t n)
{
    if (b->failed)
        return false;
    if (b->len + n + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1)
        cap *= 2;
    char *p = b->m(cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    if (b->len)
        memcpy(p, b->data, b->len);
    if (b->data)
        b->f(b->data);
    b->data = p;
    b->cap = cap;
    return true;
}

static void put(wbuf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
}

static void putc_(wbuf *b, char c)
{
    if (!reserve(b, 1))
        return;
    b->data[b->len++] = c;
}

/* ---- reals ------------------------------------------------------------------------ */

/* Decimal digits of v (no sign) at the end of `end`; returns the start. */
static char *utoa_rev(char *end, uint64_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

size_t tkd_jsonw_real(char *buf, double d)
{
    if (!isfinite(d)) {
        memcpy(buf, "null", 5);
        return 4;
    }
    /* Fast path: an integral value below 1e15 prints the same with %.15g
     * as in decimal, and always reads back. */
    if (d == floor(d) && fabs(d) < 1e15) {
        char tmp[24];
        char *end = tmp + sizeof tmp;
        char *p = utoa_rev(end, (uint64_t)fabs(d));
        size_t n = 0;
        if (signbit(d))
            buf[n++] = '-';
        memcpy(buf + n, p, (size_t)(end - p));
        n += (size_t)(end - p);
        memcpy(buf + n, ".0", 3);
        return n + 2;
    }
    int len = 0;
    for (int prec = 15; prec <= 17; prec++) {
        len = snprintf(buf, TKD_JSONW_REAL_MAX, "%.*g", prec, d);
        if (prec == 17 || strtod(buf, NULL) == d)
            break;
    }
    size_t n = (size_t)len;
    /* A locale with a decimal comma (the daemon never sets one, but a
     * plugin might): JSON needs a point. */
    char *comma = strchr(buf, ',');
    if (comma)
        *comma = '.';
    char *e = strchr(buf, 'e');
    if (e) {
        /* "1e+300" -> "1e300", "1e-05" -> "1e-5" (jansson's style). */
        char *s = e + 1, *t = e + 1;
        if (*t == '+')
            t++;
        else if (*t == '-')
            s++, t++;
        while (*t == '0' && t[1])
            t++;
        if (t != s) {
            memmove(s, t, strlen(t) + 1);
            n = strlen(buf);
        }
    } else if (!strchr(buf, '.')) {
        memcpy(buf + n, ".0", 3);
        n += 2;
    }
    return n;
}

/* ---- strings ---------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left) and its code
 * point, or 0 if it is not valid (jansson's rules). */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
    } else {
        return 0;
    }
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

static void put_u(wbuf *b, uint32_t v)
{
    static const char hex[] = "0123456789ABCDEF";
    char esc[6] = {'\\', 'u', hex[(v >> 12) & 15], hex[(v >> 8) & 15], hex[(v >> 4) & 15],
                   hex[v & 15]};
    put(b, esc, sizeof esc);
}

static void put_string(wbuf *b, const char *str, size_t n, size_t flags)
{
    const unsigned char *s = (const unsigned char *)str;
    bool slash = flags & JSON_ESCAPE_SLASH, ascii = flags & JSON_ENSURE_ASCII;
    if (!reserve(b, n + 2))
        return;
    b->data[b->len++] = '"';
    size_t run = 0; /* start of the bytes still to copy verbatim */
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && !(slash && c == '/')) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t len = utf8_seq(s + i, n - i, &cp);
            if (!len) {
                b->failed = true;
                return;
            }
            if (!ascii) {
                i += len;
                continue;
            }
            put(b, str + run, i - run);
            if (cp < 0x10000) {
                put_u(b, cp);
            } else {
                cp -= 0x10000;
                put_u(b, 0xD800 | (cp >> 10));
                put_u(b, 0xDC00 | (cp & 0x3FF));
            }
            i += len;
            run = i;
            continue;
        }
        put(b, str + run, i - run);
        switch (c) {
        case '"': put(b, "\\\"", 2); break;
        case '\\': put(b, "\\\\", 2); break;
        case '/': put(b, "\\/", 2); break;
        case '\b': put(b, "\\b", 2); break;
        case '\f': put(b, "\\f", 2); break;
        case '\n': put(b, "\\n", 2); break;
        case '\r': put(b, "\\r", 2); break;
        case '\t': put(b, "\\t", 2); break;
        default: put_u(b, c);
        }
        i++;
        run = i;
    }
    put(b, str + run, n - run);
    putc_(b, '"');
}

/* ---- values ----------------------------------------------------------------------- */

typedef struct kv {
    const char *key;
    size_t klen;
    json_t *value;
} kv;

static int kv_cmp(const void *a, const void *b)
{
    const kv *x = a, *y = b;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    return x->klen < y->klen ? -1 : x->klen > y->klen;
}

static void put_value(wbuf *b, const json_t *v, size_t flags);

static void put_object(wbuf *b, const json_t *v, size_t flags)
{
    /* json_object_iter takes a non-const object but does not modify it. */
    json_t *obj = (json_t *)v;
    size_t n = json_object_size(obj);
    putc_(b, '{');
    if (n && (flags & JSON_SORT_KEYS)) {
        kv *items = b->m(n * sizeof *items);
        if (!items) {
            b->failed = true;
            return;
        }
        size_t k = 0;
        for (void *it = json_object_iter(obj); it && k < n; it = json_object_iter_next(obj, it)) {
            items[k].key = json_object_iter_key(it);
            items[k].klen = json_object_iter_key_len(it);
            items[k].value = json_object_iter_value(it);
            k++;
        }
        qsort(items, k, sizeof *items, kv_cmp);
        for (size_t i = 0; i < k && !b->failed; i++) {
            if (i)
                putc_(b, ',');
            put_string(b, items[i].key, items[i].klen, flags);
            putc_(b, ':');
            put_value(b, items[i].value, flags);
        }
        b->f(items);
    } else {
        bool first = true;
        for (void *it = json_object_iter(obj); it && !b->failed;
             it = json_object_iter_next(obj, it)) {
            if (!first)
                putc_(b, ',');
            first = false;
            put_string(b, json_object_iter_key(it), json_object_iter_key_len(it), flags);
            putc_(b, ':');
            put_value(b, json_object_iter_value(it), flags);
        }
    }
    putc_(b, '}');
}

static void put_value(wbuf *b, const json_t *v, size_t flags)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        put_object(b, v, flags);
        return;
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        putc_(b, '[');
        for (size_t i = 0; i < n && !b->failed; i++) {
            if (i)
                putc_(b, ',');
            put_value(b, json_array_get(v, i), flags);
        }
        putc_(b, ']');
        return;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v), flags);
        return;
    case JSON_INTEGER: {
        char tmp[24];
        char *end = tmp + sizeof tmp;
        json_int_t i = json_integer_value(v);
        uint64_t u = i < 0 ? (uint64_t)0 - (uint64_t)i : (uint64_t)i;
        char *p = utoa_rev(end, u);
        if (i < 0)
            *--p = '-';
        put(b, p, (size_t)(end - p));
        return;
    }
    case JSON_REAL: {
        char tmp[TKD_JSONW_REAL_MAX];
        put(b, tmp, tkd_jsonw_real(tmp, json_real_value(v)));
        return;
    }
    case JSON_TRUE:
        put(b, "true", 4);
        return;
    case JSON_FALSE:
        put(b, "false", 5);
        return;
    case JSON_NULL:
        put(b, "null", 4);
        return;
    }
}

char *tkd_jsonw_dump(const json_t *json, size_t flags, size_t *len)
{
    if (!json || !(flags & JSON_COMPACT))
        return NULL;
    if (!(flags & JSON_ENCODE_ANY) && !json_is_object(json) && !json_is_array(json))
        return NULL;
    wbuf b = {0};
    json_get_alloc_funcs(&b.m, &b.f);
    put_value(&b, json, flags);
    if (reserve(&b, 0))
        b.data[b.len] = '\0';
    if (b.failed) {
        if (b.data)
            b.f(b.data);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.data;
}

void tkd_jsonw_free(char *text)
{
    if (!text)
        return;
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    f(text);
}
