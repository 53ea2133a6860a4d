/*
 * jsonout.c - tickctl's JSON writer: a jansson value as pretty (indented) or
 * compact text, appended to a growable buffer.
 *
 * Why not json_dumps: jansson prints every real with 17 significant digits,
 * so a world_time of 12.3 would read 12.300000000000001.  Here a real gets
 * the shortest text that parses back to the same double (12.3), written by
 * the daemon's own tkd_jsonw_real (src/daemon/jsonw.c, linked into tickctl),
 * so tickctl and the wire agree.  The layout
 * otherwise follows jansson's JSON_INDENT(n) and JSON_COMPACT: members in the
 * order received, empty containers as {} and [], UTF-8 passed through, only
 * '"', '\\' and control characters escaped.
 *
 * What it deliberately does not do: sort keys, escape non-ASCII, or stream
 * (the whole text is built in memory; a 1,000,000-id listing is ~12 MB).
 * Depth is bounded by the parser (JSON_PARSER_MAX_DEPTH), so recursion is safe.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/jsonw.h"
#include "tickctl_int.h"

/* Append a JSON string literal for the `n` bytes of `s` (may hold NULs). */
static void put_string(tk_ctl_buf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    tk__ctl_buf_reserve(b, n + 2);
    tk__ctl_buf_putc(b, '"');
    size_t run = 0; /* start of the pending run of bytes copied verbatim */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        tk__ctl_buf_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': tk__ctl_buf_puts(b, "\\\""); break;
        case '\\': tk__ctl_buf_puts(b, "\\\\"); break;
        case '\b': tk__ctl_buf_puts(b, "\\b"); break;
        case '\f': tk__ctl_buf_puts(b, "\\f"); break;
        case '\n': tk__ctl_buf_puts(b, "\\n"); break;
        case '\r': tk__ctl_buf_puts(b, "\\r"); break;
        case '\t': tk__ctl_buf_puts(b, "\\t"); break;
        default: {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            tk__ctl_buf_append(b, esc, sizeof esc);
        }
        }
    }
    tk__ctl_buf_append(b, s + run, n - run);
    tk__ctl_buf_putc(b, '"');
}

/* Append the shortest decimal text of `d` that reads back (strtod) as `d`,
 * exactly as the daemon writes it (src/daemon/jsonw.h): "0.1", "2.0",
 * "1e300", "1e-5".  It always has a '.' or an exponent, so it stays a real
 * when parsed again. */
static void put_real(tk_ctl_buf_t *b, double d)
{
    char num[TKD_JSONW_REAL_MAX];
    tk__ctl_buf_append(b, num, tkd_jsonw_real(num, d));
}

/* Newline plus `depth * indent` spaces (pretty mode only). */
static void put_newline(tk_ctl_buf_t *b, int indent, int depth)
{
    size_t n = (size_t)indent * (size_t)depth;
    tk__ctl_buf_reserve(b, n + 1);
    b->data[b->len++] = '\n';
    memset(b->data + b->len, ' ', n);
    b->len += n;
}

static void put_value(tk_ctl_buf_t *b, const json_t *v, int indent, int depth)
{
    char num[32]; /* a json_int_t in decimal: at most 20 bytes + NUL */
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        /* json_object_iter takes a non-const object but does not modify it. */
        json_t *obj = (json_t *)v;
        void *it = json_object_iter(obj);
        if (!it) {
            tk__ctl_buf_puts(b, "{}");
            return;
        }
        tk__ctl_buf_putc(b, '{');
        for (int first = 1; it; it = json_object_iter_next(obj, it), first = 0) {
            if (!first)
                tk__ctl_buf_putc(b, ',');
            if (indent)
                put_newline(b, indent, depth + 1);
            put_string(b, json_object_iter_key(it), json_object_iter_key_len(it));
            tk__ctl_buf_puts(b, indent ? ": " : ":");
            put_value(b, json_object_iter_value(it), indent, depth + 1);
        }
        if (indent)
            put_newline(b, indent, depth);
        tk__ctl_buf_putc(b, '}');
        return;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        if (n == 0) {
            tk__ctl_buf_puts(b, "[]");
            return;
        }
        tk__ctl_buf_putc(b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                tk__ctl_buf_putc(b, ',');
            if (indent)
                put_newline(b, indent, depth + 1);
            put_value(b, json_array_get(v, i), indent, depth + 1);
        }
        if (indent)
            put_newline(b, indent, depth);
        tk__ctl_buf_putc(b, ']');
        return;
    }
    case JSON_STRING:
        put_string(b, json_string_value(v), json_string_length(v));
        return;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        tk__ctl_buf_puts(b, num);
        return;
    case JSON_REAL:
        put_real(b, json_real_value(v));
        return;
    case JSON_TRUE:
        tk__ctl_buf_puts(b, "true");
        return;
    case JSON_FALSE:
        tk__ctl_buf_puts(b, "false");
        return;
    case JSON_NULL:
        tk__ctl_buf_puts(b, "null");
        return;
    }
}

void tk__ctl_json_append(tk_ctl_buf_t *b, const json_t *v, int indent)
{
    put_value(b, v, indent < 0 ? 0 : indent, 0);
}
