/*
 * pool.c - ids saved from responses and the "$name" references that use
 * them in later requests.
 *
 * A request line with "save": "movers" appends the ids its successful
 * results name ("ids", "first"+"count", "id" or "handle") to the pool
 * "movers", oldest first.  A string in a later line's params that is a
 * reference is replaced, when that request is sent, by ids of the pool:
 *
 *   "$movers"        every id of the pool, as an array
 *   "$movers[0]"     the oldest id; "$movers[-1]" the newest (one integer)
 *   "$movers[:100]"  the 100 oldest, as an array; "$movers[-10:]" the 10
 *                    newest; "$movers[a:b]" ids a..b-1 (Python slices)
 *   "$$text"         the literal string "$text" (not a reference)
 *
 * A line with "consume": true removes the ids it used from their pools, so
 * "entity.destroy" of "$spawned[:100]" every tick of a churn never destroys
 * an id twice.  A reference that resolves to nothing (empty pool, index out
 * of range, empty slice) makes that request skipped, not sent.
 *
 * Pools store ranges of consecutive ids, since tickd hands out consecutive
 * ids for one spawn: a million entities spawned in batches are a handful of
 * ranges.  Index lookups walk the ranges (O(ranges)).
 *
 * What it deliberately is not: a general template language (no arithmetic,
 * no string interpolation, no random picks).
 */
#include <stdlib.h>
#include <string.h>

#include "load.h"

/* A parsed reference. */
typedef enum { REF_ALL, REF_INDEX, REF_SLICE } ref_kind_t;

typedef struct ref {
    const char *name; /* points into the string, after '$' */
    size_t name_len;  /* bytes of the name */
    ref_kind_t kind;
    long long i;       /* REF_INDEX: the index */
    long long a, b;    /* REF_SLICE: bounds */
    bool has_a, has_b; /* REF_SLICE: bounds given */
} ref_t;

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && ((c >= '0' && c <= '9') || c == '-'));
}

/* Parse an optionally signed integer at *p; advances *p.  false if none. */
static bool parse_int(const char **p, long long *out)
{
    const char *s = *p;
    char *end;
    if (!((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')))
        return false;
    *out = strtoll(s, &end, 10);
    *p = end;
    return true;
}

/* Parse `s` (which starts with '$' but not "$$") as a reference.  0 or -1. */
static int parse_ref(const char *s, ref_t *r)
{
    memset(r, 0, sizeof *r);
    const char *p = s + 1;
    if (!name_char(*p, true))
        return -1;
    r->name = p;
    while (name_char(*p, false))
        p++;
    r->name_len = (size_t)(p - r->name);
    if (!*p) {
        r->kind = REF_ALL;
        return 0;
    }
    if (*p != '[')
        return -1;
    p++;
    long long v;
    bool have = parse_int(&p, &v);
    if (*p == ']' && have) {
        r->kind = REF_INDEX;
        r->i = v;
        return p[1] ? -1 : 0;
    }
    if (*p != ':')
        return -1;
    r->kind = REF_SLICE;
    r->has_a = have;
    r->a = have ? v : 0;
    p++;
    r->has_b = parse_int(&p, &r->b);
    if (*p != ']' || p[1])
        return -1;
    return 0;
}

/* ---- pools ------------------------------------------------------------- */

tk_load_pool_t *tk__load_pool_get(tk_load_pools_t *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++)
        if (strcmp(ps->p[i].name, name) == 0)
            return &ps->p[i];
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 8;
        ps->p = tk__load_xrealloc(ps->p, ps->cap * sizeof *ps->p);
    }
    tk_load_pool_t *p = &ps->p[ps->n++];
    memset(p, 0, sizeof *p);
    p->name = tk__load_xstrdup(name);
    return p;
}

void tk__load_pools_free(tk_load_pools_t *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->p[i].name);
        free(ps->p[i].r);
    }
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

/* Append ids [first, first+count), merging with the newest range. */
static void pool_push(tk_load_pool_t *p, uint64_t first, uint64_t count)
{
    if (count == 0)
        return;
    p->n += count;
    p->saved += count;
    if (p->nr && p->r[p->nr - 1].first + p->r[p->nr - 1].count == first) {
        p->r[p->nr - 1].count += count;
        return;
    }
    if (p->nr == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->r = tk__load_xrealloc(p->r, p->cap * sizeof *p->r);
    }
    p->r[p->nr].first = first;
    p->r[p->nr].count = count;
    p->nr++;
}

static bool id_of(const json_t *v, uint64_t *id)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *id = (uint64_t)json_integer_value(v);
    return true;
}

uint64_t tk__load_pool_save(tk_load_pool_t *p, const json_t *result)
{
    uint64_t before = p->saved, id, count;
    const json_t *ids = json_object_get(result, "ids");
    if (json_is_array(ids)) {
        size_t i;
        const json_t *v;
        json_array_foreach(ids, i, v)
        {
            if (id_of(v, &id))
                pool_push(p, id, 1);
        }
    } else if (id_of(json_object_get(result, "first"), &id) &&
               id_of(json_object_get(result, "count"), &count)) {
        pool_push(p, id, count);
    } else if (id_of(json_object_get(result, "id"), &id) ||
               id_of(json_object_get(result, "handle"), &id)) {
        pool_push(p, id, 1);
    }
    return p->saved - before;
}

/* The id at index `i` (0 = oldest, i < p->n). */
static uint64_t pool_at(const tk_load_pool_t *p, uint64_t i)
{
    for (size_t k = 0; k < p->nr; k++) {
        if (i < p->r[k].count)
            return p->r[k].first + i;
        i -= p->r[k].count;
    }
    return 0; /* not reached: callers check i < p->n */
}

/* Append ids of indexes [a, b) to the array `arr`. */
static void pool_slice(const tk_load_pool_t *p, uint64_t a, uint64_t b, json_t *arr)
{
    uint64_t off = 0;
    for (size_t k = 0; k < p->nr && off < b; k++) {
        uint64_t lo = off, hi = off + p->r[k].count;
        for (uint64_t i = lo > a ? lo : a; i < hi && i < b; i++)
            if (json_array_append_new(arr, json_integer((json_int_t)(p->r[k].first + i - lo))))
                tk__load_oom();
        off = hi;
    }
}

/* Remove the ids of indexes [a, b). */
static void pool_remove(tk_load_pool_t *p, uint64_t a, uint64_t b)
{
    if (a >= b)
        return;
    tk_load_range_t *out = tk__load_xmalloc((p->nr + 1) * sizeof *out);
    size_t no = 0;
    uint64_t off = 0;
    for (size_t k = 0; k < p->nr; k++) {
        uint64_t lo = off, hi = off + p->r[k].count, first = p->r[k].first;
        off = hi;
        if (hi <= a || lo >= b) {
            out[no++] = p->r[k];
            continue;
        }
        if (lo < a)
            out[no++] = (tk_load_range_t){first, a - lo};
        if (hi > b)
            out[no++] = (tk_load_range_t){first + (b - lo), hi - b};
    }
    free(p->r);
    p->r = out;
    p->nr = no;
    p->cap = p->nr + 1;
    p->n -= b - a;
}

/* ---- references -------------------------------------------------------- */

/* Count the references in `v`; `path` names it in messages. */
static int scan_value(json_t *v, const char *path, void (*seen)(void *, const char *), void *arg,
                      char **err)
{
    int n = 0;
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (s[0] != '$' || s[1] == '$')
            return 0;
        ref_t r;
        if (parse_ref(s, &r) < 0) {
            *err = tk__load_strf("%s: \"%s\" is not a reference ($name, $name[i], "
                                 "$name[a:b]; write $$ for a literal $)",
                                 path, s);
            return -1;
        }
        char *name = tk__load_xmalloc(r.name_len + 1);
        memcpy(name, r.name, r.name_len);
        name[r.name_len] = '\0';
        if (seen)
            seen(arg, name);
        free(name);
        return 1;
    }
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        json_object_foreach(v, k, m)
        {
            char *sub = tk__load_strf("%s.%s", path, k);
            int c = scan_value(m, sub, seen, arg, err);
            free(sub);
            if (c < 0)
                return -1;
            n += c;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m)
        {
            char *sub = tk__load_strf("%s[%zu]", path, i);
            int c = scan_value(m, sub, seen, arg, err);
            free(sub);
            if (c < 0)
                return -1;
            n += c;
        }
    }
    return n;
}

int tk__load_refs_scan(json_t *v, void (*seen)(void *arg, const char *name), void *arg, char **err)
{
    return scan_value(v, "params", seen, arg, err);
}

/* One use of a pool by a rendered request, for "consume". */
typedef struct span {
    tk_load_pool_t *pool;
    uint64_t a, b; /* indexes [a, b) */
} span_t;

typedef struct render {
    tk_load_pools_t *ps;
    span_t *spans;
    size_t nspans, cap;
    char *why; /* set when a reference resolves to nothing */
} render_t;

/* The replacement of the string `s` (a new value), or NULL (r->why set). */
static json_t *resolve(render_t *rd, const char *s)
{
    if (s[1] == '$') {
        json_t *lit = json_string(s + 1);
        if (!lit)
            tk__load_oom();
        return lit;
    }
    ref_t r;
    if (parse_ref(s, &r) < 0) { /* checked at load time; defensive */
        rd->why = tk__load_strf("bad reference \"%s\"", s);
        return NULL;
    }
    char name[128];
    size_t nl = r.name_len < sizeof name - 1 ? r.name_len : sizeof name - 1;
    memcpy(name, r.name, nl);
    name[nl] = '\0';
    tk_load_pool_t *p = tk__load_pool_get(rd->ps, name);
    long long n = (long long)p->n;
    long long a, b;
    json_t *out;
    switch (r.kind) {
    case REF_ALL:
        a = 0;
        b = n;
        break;
    case REF_INDEX:
        a = r.i < 0 ? r.i + n : r.i;
        b = a + 1;
        if (a < 0 || a >= n) {
            rd->why = tk__load_strf("%s: index out of range (%lld ids saved)", s, n);
            return NULL;
        }
        break;
    default: /* REF_SLICE */
        a = r.has_a ? (r.a < 0 ? r.a + n : r.a) : 0;
        b = r.has_b ? (r.b < 0 ? r.b + n : r.b) : n;
        a = a < 0 ? 0 : (a > n ? n : a);
        b = b < 0 ? 0 : (b > n ? n : b);
        break;
    }
    if (a >= b) {
        rd->why = tk__load_strf("%s: no ids (%lld saved)", s, n);
        return NULL;
    }
    if (r.kind == REF_INDEX) {
        out = json_integer((json_int_t)pool_at(p, (uint64_t)a));
    } else {
        out = json_array();
        if (out)
            pool_slice(p, (uint64_t)a, (uint64_t)b, out);
    }
    if (!out)
        tk__load_oom();
    if (rd->nspans == rd->cap) {
        rd->cap = rd->cap ? rd->cap * 2 : 4;
        rd->spans = tk__load_xrealloc(rd->spans, rd->cap * sizeof *rd->spans);
    }
    rd->spans[rd->nspans++] = (span_t){p, (uint64_t)a, (uint64_t)b};
    return out;
}

/* Replace references inside `v` in place.  0, or -1 (rd->why set). */
static int render_value(render_t *rd, json_t *v)
{
    if (json_is_object(v)) {
        const char *k;
        json_t *m;
        void *tmp;
        json_object_foreach_safe(v, tmp, k, m)
        {
            if (json_is_string(m) && json_string_value(m)[0] == '$') {
                json_t *r = resolve(rd, json_string_value(m));
                if (!r)
                    return -1;
                if (json_object_set_new(v, k, r))
                    tk__load_oom();
            } else if (render_value(rd, m) < 0) {
                return -1;
            }
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++) {
            json_t *m = json_array_get(v, i);
            if (json_is_string(m) && json_string_value(m)[0] == '$') {
                json_t *r = resolve(rd, json_string_value(m));
                if (!r)
                    return -1;
                if (json_array_set_new(v, i, r))
                    tk__load_oom();
            } else if (render_value(rd, m) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int span_cmp(const void *x, const void *y)
{
    const span_t *a = x, *b = y;
    if (a->pool != b->pool)
        return a->pool < b->pool ? -1 : 1;
    return a->a > b->a ? -1 : (a->a < b->a ? 1 : 0); /* descending start */
}

json_t *tk__load_refs_render(tk_load_pools_t *ps, const json_t *params, bool consume, char **why)
{
    render_t rd = {.ps = ps};
    json_t *copy = json_deep_copy(params);
    if (!copy)
        tk__load_oom();
    if (render_value(&rd, copy) < 0) {
        json_decref(copy);
        free(rd.spans);
        *why = rd.why;
        return NULL;
    }
    if (consume && rd.nspans) {
        /* Per pool, latest spans first, so earlier indexes stay valid;
         * overlapping uses of the same ids are removed once. */
        qsort(rd.spans, rd.nspans, sizeof *rd.spans, span_cmp);
        tk_load_pool_t *prev_pool = NULL;
        uint64_t floor_a = 0;
        for (size_t i = 0; i < rd.nspans; i++) {
            span_t s = rd.spans[i];
            if (s.pool == prev_pool && s.b > floor_a)
                s.b = floor_a;
            if (s.pool != prev_pool || s.a < floor_a) {
                pool_remove(s.pool, s.a, s.b);
                floor_a = s.a;
            }
            prev_pool = s.pool;
        }
    }
    free(rd.spans);
    return copy;
}
