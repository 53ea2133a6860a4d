/*
 * jsonout.c - tickctl's JSON writer: a jansson value as pretty (indented) or
 * compact text, appended to a growable buffer.
 *
 * Why not json_dumps: jansson prints every real with 17 significant digits,
 * so a world_time of 12.3 would read 12.300000000000001.  Here a real gets
 * the shortest text that parses back to the same double (12.3), which is what
 * a person reading the output, or a script comparing it, expects.  The layout
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

/*
 * Append the shortest decimal text of `d` that reads back (strtod) as `d`,
 * laid out as Python's repr does: positional for decimal exponents in
 * [-4, 16) (0.0001, 12.3, 100.0), scientific otherwise (1e-05, 1e+22).  It
 * always has a '.' or an exponent, so it stays a real when parsed again.
 * `d` is finite: jansson never holds NaN or infinities.
 */
static void put_real(tk_ctl_buf_t *b, double d)
{
    char sci[40]; /* "%.16e" of a double needs at most 24 bytes + NUL */
    char fix[48]; /* positional form: at most 16 + 4 + 17 digits, sign, '.' */
    int prec;
    for (prec = 1; prec < 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, d);
        if (strtod(sci, NULL) == d)
            break;
    }
    if (prec == 17)
        snprintf(sci, sizeof sci, "%.16e", d);

    const char *e = strchr(sci, 'e');
    int exp10 = e ? atoi(e + 1) : 0;
    if (exp10 >= -4 && exp10 < 16) {
        int decimals = prec - 1 - exp10;
        snprintf(fix, sizeof fix, "%.*f", decimals > 0 ? decimals : 0, d);
        if (strtod(fix, NULL) == d) {
            tk__ctl_buf_puts(b, fix);
            if (!strchr(fix, '.'))
                tk__ctl_buf_puts(b, ".0");
            return;
        }
    }
    /* Scientific: drop the mantissa's trailing zeros ("1.50e+22" -> "1.5e+22")
     * and a bare '.'. */
    size_t mant = e ? (size_t)(e - sci) : strlen(sci);
    size_t keep = mant;
    if (memchr(sci, '.', mant)) {
        while (keep > 0 && sci[keep - 1] == '0')
            keep--;
        if (keep > 0 && sci[keep - 1] == '.')
            keep--;
    }
    tk__ctl_buf_append(b, sci, keep);
    tk__ctl_buf_puts(b, sci + mant);
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
