/*
 * params.c - JSON params in, JSON results out (params.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "params.h"

#define MAX_DEPTH 8

int tkd_code_from_tk(int tk_err)
{
    switch (tk_err) {
    case TK_EINVAL:
        return -32602;
    case TK_ENOENT:
        return -32001;
    case TK_ESTATE:
        return -32002;
    case TK_ELIMIT:
        return -32003;
    default:
        return -32603;
    }
}

int tkd_perr_set(tkd_perr *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->code = code;
    return -1;
}

/* ---- arena ----------------------------------------------------------------- */

void *tkd_arena_alloc(tkd_arena *a, size_t n)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 16;
        a->p = tk_realloc(a->p, a->cap * sizeof *a->p);
    }
    void *p = tk_calloc(1, n ? n : 1);
    a->p[a->n++] = p;
    return p;
}

char *tkd_arena_strdup(tkd_arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = tkd_arena_alloc(a, n);
    memcpy(p, s, n);
    return p;
}

void tkd_arena_free(tkd_arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        tk_free(a->p[i]);
    tk_free(a->p);
    memset(a, 0, sizeof *a);
}

/* ---- readers ---------------------------------------------------------------- */

static const char *name_of(char *buf, size_t n, const char *path, const char *key)
{
    if (path && path[0])
        snprintf(buf, n, "%s.%s", path, key);
    else
        snprintf(buf, n, "%s", key);
    return buf;
}

int tkd_p_keys(const json_t *obj, const char *path, const char *const *allowed, tkd_perr *e)
{
    if (!obj)
        return 0;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        bool ok = false;
        for (size_t i = 0; allowed[i] && !ok; i++)
            ok = strcmp(allowed[i], k) == 0;
        if (!ok) {
            char nb[256];
            return tkd_perr_set(e, -32602, "%s: unknown parameter", name_of(nb, sizeof nb, path, k));
        }
    }
    return 0;
}

static json_t *get(const json_t *obj, const char *key)
{
    return obj ? json_object_get(obj, key) : NULL;
}

int tkd_p_u64(const json_t *obj, const char *key, const char *path, uint64_t min, uint64_t max,
              uint64_t *out, tkd_perr *e)
{
    json_t *v = get(obj, key);
    if (!v)
        return 0;
    char nb[256];
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || (uint64_t)x < min || (uint64_t)x > max)
            return tkd_perr_set(e, -32602, "%s: must be an integer in [%llu, %llu]",
                                name_of(nb, sizeof nb, path, key), (unsigned long long)min,
                                (unsigned long long)max);
        *out = (uint64_t)x;
        return 1;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x == floor(x) && x >= (double)min && x <= (double)max && x < 9.2e18) {
            *out = (uint64_t)x;
            return 1;
        }
    }
    return tkd_perr_set(e, -32602, "%s: must be an integer in [%llu, %llu]",
                        name_of(nb, sizeof nb, path, key), (unsigned long long)min,
                        (unsigned long long)max);
}

int tkd_p_num(const json_t *obj, const char *key, const char *path, double min, double max,
              double *out, tkd_perr *e)
{
    json_t *v = get(obj, key);
    if (!v)
        return 0;
    char nb[256];
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return tkd_perr_set(e, -32602, "%s: must be a number", name_of(nb, sizeof nb, path, key));
    double x = json_number_value(v);
    if (x < min || x > max)
        return tkd_perr_set(e, -32602, "%s: must be in [%g, %g]", name_of(nb, sizeof nb, path, key),
                            min, max);
    *out = x;
    return 1;
}

int tkd_p_bool(const json_t *obj, const char *key, const char *path, bool *out, tkd_perr *e)
{
    json_t *v = get(obj, key);
    if (!v)
        return 0;
    char nb[256];
    if (!json_is_boolean(v))
        return tkd_perr_set(e, -32602, "%s: must be true or false",
                            name_of(nb, sizeof nb, path, key));
    *out = json_is_true(v);
    return 1;
}

int tkd_p_str(const json_t *obj, const char *key, const char *path, const char **out, tkd_perr *e)
{
    json_t *v = get(obj, key);
    if (!v)
        return 0;
    char nb[256];
    if (!json_is_string(v))
        return tkd_perr_set(e, -32602, "%s: must be a string", name_of(nb, sizeof nb, path, key));
    *out = json_string_value(v);
    if (strlen(*out) != json_string_length(v))
        return tkd_perr_set(e, -32602, "%s: must not contain NUL", name_of(nb, sizeof nb, path, key));
    return 1;
}

int tkd_p_obj(const json_t *obj, const char *key, const char *path, json_t **out, tkd_perr *e)
{
    json_t *v = get(obj, key);
    if (!v)
        return 0;
    char nb[256];
    if (!json_is_object(v))
        return tkd_perr_set(e, -32602, "%s: must be an object", name_of(nb, sizeof nb, path, key));
    *out = v;
    return 1;
}

int tkd_p_arr(const json_t *obj, const char *key, const char *path, json_t **out, tkd_perr *e)
{
    json_t *v = get(obj, key);
    if (!v)
        return 0;
    char nb[256];
    if (!json_is_array(v))
        return tkd_perr_set(e, -32602, "%s: must be an array", name_of(nb, sizeof nb, path, key));
    *out = v;
    return 1;
}

static int as_id(const json_t *v, tks_id *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 1) {
        *out = (tks_id)json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        if (x >= 1 && x == floor(x) && x < 9e15) {
            *out = (tks_id)x;
            return 1;
        }
    }
    return 0;
}

int tkd_p_ids(const json_t *obj, const char *key, const char *path, tkd_arena *a, tks_id **out,
              size_t *n, tkd_perr *e)
{
    json_t *arr;
    int rc = tkd_p_arr(obj, key, path, &arr, e);
    if (rc <= 0)
        return rc;
    size_t len = json_array_size(arr);
    tks_id *ids = len ? tkd_arena_alloc(a, len * sizeof *ids) : NULL;
    char nb[256];
    for (size_t i = 0; i < len; i++)
        if (!as_id(json_array_get(arr, i), &ids[i]))
            return tkd_perr_set(e, -32602, "%s[%zu]: must be an entity id (integer >= 1)",
                                name_of(nb, sizeof nb, path, key), i);
    *out = ids;
    *n = len;
    return 1;
}

/* ---- declarative params ------------------------------------------------------- */

/* Where a value sits, formatted only for an error message: "<path>.<key>",
 * "<path>[<idx>]" or "<path>". */
typedef struct where {
    const char *path;
    const char *key;  /* NULL: an array element (idx) or the path itself */
    long idx;         /* -1: none */
} where;

static const char *where_str(char *buf, size_t n, const where *w)
{
    if (w->key)
        return name_of(buf, n, w->path, w->key);
    if (w->idx >= 0)
        snprintf(buf, n, "%s[%ld]", w->path, w->idx);
    else
        snprintf(buf, n, "%s", w->path);
    return buf;
}

static int werr(tkd_perr *e, const where *w, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int werr(tkd_perr *e, const where *w, const char *fmt, ...)
{
    char nb[256], msg[TKD_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tkd_perr_set(e, -32602, "%s: %s", where_str(nb, sizeof nb, w), msg);
}

static int check_rows(const json_t *obj, const tkd_field *fields, const char *path, bool strict,
                      tkd_val *vals, size_t *nv, tkd_perr *e);

/* Does `v` have the JSON type `f` asks for (alternatives of TKD_T_ANY)? */
static bool type_fits(const json_t *v, const tkd_field *f)
{
    switch (f->type) {
    case TKD_T_INT:
        return json_is_integer(v) || (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
    case TKD_T_NUM:
        return json_is_number(v);
    case TKD_T_BOOL:
        return json_is_boolean(v);
    case TKD_T_STR:
        return json_is_string(v);
    case TKD_T_OBJ:
        return json_is_object(v);
    case TKD_T_ARR:
        return json_is_array(v);
    case TKD_T_NULL:
        return json_is_null(v);
    default:
        return true;
    }
}

static const char *type_word(tkd_type t)
{
    static const char *const w[] = {"an integer", "a number", "true or false", "a string",
                                    "an object",  "an array", "any value",     "null"};
    return (unsigned)t < sizeof w / sizeof *w ? w[t] : "?";
}

/* Check one value against row `f`; fill `out` (may be NULL). */
static int check_value(json_t *v, const tkd_field *f, const where *w, tkd_val *out, tkd_perr *e)
{
    tkd_val tmp;
    tkd_val *o = out ? out : &tmp;
    o->given = true;
    o->json = v;
    switch (f->type) {
    case TKD_T_INT: {
        uint64_t x = 0;
        bool okv = false;
        if (json_is_integer(v)) {
            json_int_t i = json_integer_value(v);
            okv = i >= 0 && (uint64_t)i >= f->lo && (uint64_t)i <= f->hi;
            x = (uint64_t)i;
        } else if (json_is_real(v)) {
            double d = json_real_value(v);
            okv = d == floor(d) && d >= (double)f->lo && d <= (double)f->hi && d < 9.2e18;
            x = okv ? (uint64_t)d : 0;
        }
        if (!okv) {
            if (f->hi == UINT64_MAX)
                return werr(e, w, "must be an integer >= %llu", (unsigned long long)f->lo);
            return werr(e, w, "must be an integer in [%llu, %llu]", (unsigned long long)f->lo,
                        (unsigned long long)f->hi);
        }
        o->u = x;
        o->num = (double)x;
        return 0;
    }
    case TKD_T_NUM: {
        if (!json_is_number(v) || !isfinite(json_number_value(v)))
            return werr(e, w, "must be a number");
        double x = json_number_value(v);
        if ((f->flags & TKD_F_EXCL_MIN) ? !(x > f->min) : x < f->min)
            return werr(e, w, "must be %s %g", (f->flags & TKD_F_EXCL_MIN) ? "more than" : "at least",
                        f->min);
        if (x > f->max)
            return werr(e, w, "must be at most %g", f->max);
        o->num = x;
        return 0;
    }
    case TKD_T_BOOL:
        if (!json_is_boolean(v))
            return werr(e, w, "must be true or false");
        o->b = json_is_true(v);
        return 0;
    case TKD_T_STR: {
        if (!json_is_string(v))
            return werr(e, w, "must be a string");
        const char *s = json_string_value(v);
        if (strlen(s) != json_string_length(v))
            return werr(e, w, "must not contain NUL");
        o->str = s;
        if (f->enums) {
            size_t i = 0;
            while (f->enums[i] && strcmp(f->enums[i], s))
                i++;
            if (!f->enums[i]) {
                char list[256];
                size_t n = 0;
                list[0] = 0;
                for (size_t k = 0; f->enums[k] && n < sizeof list; k++)
                    n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", k ? ", " : "",
                                          f->enums[k]);
                return werr(e, w, "'%.64s' is not one of: %s", s, list);
            }
            o->ix = i;
        }
        return 0;
    }
    case TKD_T_OBJ: {
        if (!json_is_object(v))
            return werr(e, w, "must be an object");
        if (!f->fields)
            return 0;
        char nb[256];
        size_t nv = 0;
        return check_rows(v, f->fields, where_str(nb, sizeof nb, w), true, NULL, &nv, e);
    }
    case TKD_T_ARR: {
        if (!json_is_array(v))
            return werr(e, w, "must be an array");
        size_t n = json_array_size(v);
        if (f->hi && n > f->hi)
            return werr(e, w, "at most %llu items", (unsigned long long)f->hi);
        if (!f->items)
            return 0;
        char nb[256];
        where_str(nb, sizeof nb, w);
        for (size_t i = 0; i < n; i++) {
            where wi = {nb, NULL, (long)i};
            if (check_value(json_array_get(v, i), f->items, &wi, NULL, e) < 0)
                return -1;
        }
        return 0;
    }
    case TKD_T_ANY:
        if (!f->items)
            return 0;
        for (const tkd_field *a = f->items; a->name; a++)
            if (type_fits(v, a))
                return check_value(v, a, w, NULL, e);
        {
            char list[256];
            size_t n = 0;
            list[0] = 0;
            for (const tkd_field *a = f->items; a->name && n < sizeof list; a++)
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                                      a == f->items ? "" : " or ", a->desc ? a->desc : type_word(a->type));
            return werr(e, w, "must be %s", list);
        }
    case TKD_T_NULL:
        if (!json_is_null(v))
            return werr(e, w, "must be null");
        return 0;
    case TKD_T_INCLUDE:
        break;
    }
    return werr(e, w, "internal error: no such type");
}

static bool row_named(const tkd_field *fields, const char *k)
{
    for (const tkd_field *f = fields; f->name; f++) {
        if (f->type == TKD_T_INCLUDE ? row_named(f->fields, k) : !strcmp(f->name, k))
            return true;
    }
    return false;
}

static int check_rows(const json_t *obj, const tkd_field *fields, const char *path, bool strict,
                      tkd_val *vals, size_t *nv, tkd_perr *e)
{
    if (strict && obj) {
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)obj, k, v) {
            if (!row_named(fields, k)) {
                char nb[256];
                return tkd_perr_set(e, -32602, "%s: unknown parameter",
                                    name_of(nb, sizeof nb, path, k));
            }
        }
    }
    for (const tkd_field *f = fields; f->name; f++) {
        if (f->type == TKD_T_INCLUDE) {
            if (check_rows(obj, f->fields, path, false, vals, nv, e) < 0)
                return -1;
            continue;
        }
        tkd_val *out = NULL;
        if (vals) {
            if (*nv >= TKD_MAX_FIELDS) {
                tk_log_error("params: a table has more than %d rows", TKD_MAX_FIELDS);
                abort();
            }
            out = &vals[*nv];
            memset(out, 0, sizeof *out);
        }
        (*nv)++;
        json_t *v = obj ? json_object_get(obj, f->name) : NULL;
        where w = {path, f->name, -1};
        if (!v) {
            if (f->flags & TKD_F_REQUIRED)
                return werr(e, &w, "required");
            if (out && (f->flags & TKD_F_DEFAULT)) {
                out->u = f->def >= 0 ? (uint64_t)f->def : 0; /* a negative default: a number param */
                out->num = f->def;
                out->b = f->def != 0;
                out->str = f->def_str;
                if (f->enums && f->def_str)
                    for (size_t i = 0; f->enums[i]; i++)
                        if (!strcmp(f->enums[i], f->def_str))
                            out->ix = i;
            }
            continue;
        }
        if (check_value(v, f, &w, out, e) < 0)
            return -1;
    }
    return 0;
}

int tkd_p_check(const json_t *obj, const tkd_field *fields, const char *path, bool strict,
                tkd_val *vals, tkd_perr *e)
{
    size_t nv = 0;
    return check_rows(obj, fields, path ? path : "", strict, vals, &nv, e);
}

static const tkd_val *find_val(const tkd_field *fields, const tkd_val *vals, size_t *i,
                               const char *name)
{
    for (const tkd_field *f = fields; f->name; f++) {
        if (f->type == TKD_T_INCLUDE) {
            const tkd_val *v = find_val(f->fields, vals, i, name);
            if (v)
                return v;
            continue;
        }
        if (!strcmp(f->name, name))
            return &vals[*i];
        (*i)++;
    }
    return NULL;
}

const tkd_val *tkd_p_val(const tkd_field *fields, const tkd_val *vals, const char *name)
{
    size_t i = 0;
    const tkd_val *v = fields ? find_val(fields, vals, &i, name) : NULL;
    if (!v) {
        tk_log_error("params: no row '%s' in the table read", name);
        abort();
    }
    return v;
}

/* ---- the shared tables ------------------------------------------------------------ */

const char *const tkd_group_names[] = {"pre_physics",  "start_physics",    "during_physics",
                                       "end_physics",  "post_physics",     "post_update_work",
                                       "last_demotable", NULL};

#define TICK_BOOL(n, d, text)                                                                      \
    {.name = n, .type = TKD_T_BOOL, .flags = TKD_F_DEFAULT, .def = d, .desc = text}

const tkd_field tkd_tick_spec_fields[] = {
    {.name = "group", .type = TKD_T_STR, .enums = tkd_group_names, .flags = TKD_F_DEFAULT,
     .def_str = "pre_physics", .desc = "tick group the function starts in"},
    {.name = "end_group", .type = TKD_T_STR, .enums = tkd_group_names,
     .desc = "group it must finish by (not earlier than group; absent: the same as group)"},
    {.name = "interval", .type = TKD_T_NUM, .min = -HUGE_VAL, .max = 1e9, .flags = TKD_F_DEFAULT,
     .desc = "seconds between ticks (0 or less: every frame)"},
    TICK_BOOL("enabled", 1, "ticks at all"),
    TICK_BOOL("even_when_paused", 0, "ticks while the world is paused"),
    TICK_BOOL("high_priority", 0, "runs first in its group"),
    TICK_BOOL("batch", 1, "may run in its class's batch form"),
    TICK_BOOL("on_dedicated_server", 1, "registered at all (false: never ticks)"),
    TICK_BOOL("any_thread", 0, "may run on a worker thread"),
    {0}};

/* ---- tick specs --------------------------------------------------------------- */

const char *const tkd_tick_spec_keys[] = {
    "group", "end_group", "interval", "enabled", "even_when_paused", "high_priority",
    "batch", "on_dedicated_server", "any_thread", NULL};

int tkd_p_tick_spec(const json_t *obj, const char *path, bool only_spec, tk_tick_spec *spec,
                    tkd_perr *e)
{
    if (!obj)
        return 0;
    /* The rows of tkd_tick_spec_fields, in order. */
    enum { GROUP, END_GROUP, INTERVAL, ENABLED, PAUSED, HIGH, BATCH, DEDICATED, ANY_THREAD };
    tkd_val v[TKD_MAX_FIELDS];
    if (tkd_p_check(obj, tkd_tick_spec_fields, path, only_spec, v, e) < 0)
        return -1;
    tk_tick_spec s = *spec;
    tk_group old_group = s.group;
    if (v[GROUP].given)
        tk_group_parse(v[GROUP].str, &s.group);
    if (v[END_GROUP].given)
        tk_group_parse(v[END_GROUP].str, &s.end_group);
    /* A new group without an end group keeps "end = group" semantics. */
    if (v[GROUP].given && !v[END_GROUP].given &&
        (s.end_group == TK_GROUP_SAME || s.end_group == old_group))
        s.end_group = TK_GROUP_SAME;
    if (v[INTERVAL].given)
        s.interval = v[INTERVAL].num > 0 ? v[INTERVAL].num : 0;
    bool *flags[] = {&s.enabled, &s.even_when_paused, &s.high_priority, &s.batch,
                     &s.on_dedicated_server, &s.any_thread};
    for (int i = ENABLED; i <= ANY_THREAD; i++)
        if (v[i].given)
            *flags[i - ENABLED] = v[i].b;
    if (s.end_group != TK_GROUP_SAME && s.end_group < s.group) {
        char nb[256];
        return tkd_perr_set(e, -32602, "%s: end_group is earlier than group",
                            name_of(nb, sizeof nb, path, "end_group"));
    }
    *spec = s;
    return 1;
}

/* ---- props and spawns ---------------------------------------------------------- */

int tkd_p_props(const json_t *obj, const char *path, tkd_arena *a, int depth, tks_prop_kv **out,
                size_t *n, tkd_perr *e)
{
    *out = NULL;
    *n = 0;
    if (!obj)
        return 0;
    size_t len = json_object_size(obj);
    if (!len)
        return 1;
    tks_prop_kv *kv = tkd_arena_alloc(a, len * sizeof *kv);
    size_t i = 0;
    const char *k;
    json_t *v;
    char nb[256];
    json_object_foreach((json_t *)obj, k, v) {
        kv[i].key = tkd_arena_strdup(a, k);
        tks_value *val = &kv[i].v;
        if (json_is_number(v)) {
            val->type = TKS_V_NUMBER;
            val->num = json_number_value(v);
        } else if (json_is_boolean(v)) {
            val->type = TKS_V_BOOL;
            val->b = json_is_true(v);
        } else if (json_is_string(v) && strcmp(json_string_value(v), "self") == 0) {
            val->type = TKS_V_SPAWN;
            val->self = true;
        } else if (json_is_string(v)) {
            val->type = TKS_V_STRING;
            val->str = tkd_arena_strdup(a, json_string_value(v));
        } else if (json_is_object(v)) {
            if (depth >= MAX_DEPTH)
                return tkd_perr_set(e, -32602, "%s: nested too deep",
                                    name_of(nb, sizeof nb, path, k));
            tks_spawn_req *r = tkd_arena_alloc(a, sizeof *r);
            if (tkd_p_spawn(v, name_of(nb, sizeof nb, path, k), a, depth + 1, r, e) < 0)
                return -1;
            val->type = TKS_V_SPAWN;
            val->spawn = r;
        } else if (json_is_null(v)) {
            val->type = TKS_V_SPAWN; /* an unset spawn prop */
        } else if (json_is_array(v)) {
            tks_id *ids = json_array_size(v) ? tkd_arena_alloc(a, json_array_size(v) * sizeof *ids)
                                             : NULL;
            val->type = TKS_V_IDS;
            for (size_t j = 0; j < json_array_size(v); j++) {
                if (!as_id(json_array_get(v, j), &ids[j])) {
                    val->type = TKS_V_OTHER;
                    break;
                }
            }
            val->ids = ids;
            val->n_ids = json_array_size(v);
        } else {
            val->type = TKS_V_OTHER;
        }
        i++;
    }
    *out = kv;
    *n = len;
    return 1;
}

static const tkd_field component_fields[] = {
    {.name = "class", .type = TKD_T_STR, .flags = TKD_F_REQUIRED, .desc = "component class"},
    {.name = "tick", .type = TKD_T_OBJ, .fields = tkd_tick_spec_fields, .ref = "tick_spec",
     .desc = "its tick function's spec"},
    {.name = "props", .type = TKD_T_OBJ, .desc = "the class's props (engine.info lists classes)"},
    {0}};

static const tkd_field spawn_prereq = {.name = "id", .type = TKD_T_INT, .lo = 1, .hi = UINT64_MAX,
                                       .desc = "entity id"};

const tkd_field tkd_spawn_fields[] = {
    {.name = "class", .type = TKD_T_STR, .flags = TKD_F_REQUIRED,
     .desc = "entity class (engine.info lists them; plugins add more)"},
    {.name = "level", .type = TKD_T_STR, .desc = "level to spawn into (absent: persistent)"},
    {.name = "count", .type = TKD_T_INT, .lo = 1, .hi = TKS_MAX_SPAWN, .flags = TKD_F_DEFAULT,
     .def = 1, .desc = "how many (consecutive ids)"},
    {.name = "tick", .type = TKD_T_OBJ, .fields = tkd_tick_spec_fields, .ref = "tick_spec",
     .desc = "the actor tick's spec"},
    {.name = "components", .type = TKD_T_ARR, .hi = TKS_MAX_COMPONENTS,
     .items = &(const tkd_field){.name = "component", .type = TKD_T_OBJ,
                                 .fields = component_fields, .ref = "component"},
     .desc = "components, each with its own tick function"},
    {.name = "prerequisites", .type = TKD_T_ARR, .items = &spawn_prereq,
     .desc = "entities whose actor ticks run before this one's"},
    {.name = "props", .type = TKD_T_OBJ,
     .desc = "the class's props; a spawn prop takes entity.spawn params or \"self\""},
    {.name = "time_dilation", .type = TKD_T_NUM, .min = 0, .max = 1e6, .flags = TKD_F_DEFAULT,
     .def = 1, .desc = "the entity's own time dilation"},
    {.name = "life_span", .type = TKD_T_NUM, .min = 0, .max = 1e12,
     .desc = "seconds of world time before it is destroyed (0: forever)"},
    {0}};

const tkd_field tkd_target_fields[] = {
    {.name = "id", .type = TKD_T_INT, .lo = 1, .hi = UINT64_MAX, .flags = TKD_F_REQUIRED,
     .desc = "entity id"},
    {.name = "component", .type = TKD_T_INT, .lo = 0, .hi = TKS_MAX_COMPONENTS - 1,
     .desc = "component index (absent: the actor tick)"},
    {0}};

int tkd_p_spawn(const json_t *params, const char *path, tkd_arena *a, int depth,
                tks_spawn_req *r, tkd_perr *e)
{
    /* The rows of tkd_spawn_fields, in order. */
    enum { CLASS, LEVEL, COUNT, TICK, COMPONENTS, PREREQS, PROPS, DILATION, LIFE_SPAN };
    tks_spawn_req_init(r);
    char nb[256];
    if (!params)
        return tkd_perr_set(e, -32602, "%s: required", name_of(nb, sizeof nb, path, "class"));
    tkd_val v[TKD_MAX_FIELDS];
    if (tkd_p_check(params, tkd_spawn_fields, path, true, v, e) < 0)
        return -1;
    r->cls = v[CLASS].str;
    r->level = v[LEVEL].str;
    r->count = v[COUNT].u;
    if (v[TICK].given &&
        tkd_p_tick_spec(v[TICK].json, name_of(nb, sizeof nb, path, "tick"), true, &r->tick, e) < 0)
        return -1;
    json_t *comps = v[COMPONENTS].json;
    if (comps) {
        size_t n = json_array_size(comps);
        r->components = n ? tkd_arena_alloc(a, n * sizeof *r->components) : NULL;
        r->n_components = n;
        for (size_t i = 0; i < n; i++) {
            json_t *c = json_array_get(comps, i);
            char cp[256];
            snprintf(cp, sizeof cp, "%s%scomponents[%zu]", path, path[0] ? "." : "", i);
            tks_component_req *cr = &r->components[i];
            tk_tick_spec_default(&cr->tick);
            cr->cls = json_string_value(json_object_get(c, "class"));
            json_t *ct = json_object_get(c, "tick"), *cprops = json_object_get(c, "props");
            char tp[300];
            snprintf(tp, sizeof tp, "%s.tick", cp);
            if (ct && tkd_p_tick_spec(ct, tp, true, &cr->tick, e) < 0)
                return -1;
            snprintf(tp, sizeof tp, "%s.props", cp);
            if (tkd_p_props(cprops, tp, a, depth, &cr->props, &cr->n_props, e) < 0)
                return -1;
        }
    }
    if (tkd_p_ids(params, "prerequisites", path, a, &r->prereqs, &r->n_prereqs, e) < 0)
        return -1;
    if (tkd_p_props(v[PROPS].json, name_of(nb, sizeof nb, path, "props"), a, depth, &r->props,
                    &r->n_props, e) < 0)
        return -1;
    r->dilation = v[DILATION].num;
    if (v[LIFE_SPAN].given)
        r->life_span = v[LIFE_SPAN].num;
    return 1;
}

/* ---- rendering ------------------------------------------------------------------- */

json_t *tkd_j_tick_spec(const tk_tick_spec *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "group", json_string(tk_group_name(s->group)));
    tk_group end = s->end_group == TK_GROUP_SAME ? s->group : s->end_group;
    json_object_set_new(o, "end_group", json_string(tk_group_name(end)));
    json_object_set_new(o, "interval", json_real(s->interval));
    json_object_set_new(o, "enabled", json_boolean(s->enabled));
    json_object_set_new(o, "even_when_paused", json_boolean(s->even_when_paused));
    json_object_set_new(o, "high_priority", json_boolean(s->high_priority));
    json_object_set_new(o, "batch", json_boolean(s->batch));
    json_object_set_new(o, "on_dedicated_server", json_boolean(s->on_dedicated_server));
    json_object_set_new(o, "any_thread", json_boolean(s->any_thread));
    return o;
}

/* What tkd_j_tick_report gives (documented as "tick_report"). */
const tkd_field tkd_tick_report_fields[] = {
    {.name = "spec", .type = TKD_T_INCLUDE, .fields = tkd_tick_spec_fields},
    {.name = "state", .type = TKD_T_STR, .flags = TKD_F_REQUIRED,
     .desc = "enabled, disabled or cooling_down"},
    {.name = "registered", .type = TKD_T_BOOL, .desc = "false: not registered (never ticks)"},
    {.name = "actual_group", .type = TKD_T_STR, .desc = "group it runs in (prerequisites may "
                                                       "delay it)"},
    {.name = "actual_end_group", .type = TKD_T_STR},
    {.name = "ticks", .type = TKD_T_INT, .flags = TKD_F_REQUIRED, .hi = UINT64_MAX},
    {.name = "last_frame", .type = TKD_T_INT, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .hi = UINT64_MAX},
    {.name = "last_dt", .type = TKD_T_NUM, .flags = TKD_F_REQUIRED, .min = -HUGE_VAL,
     .max = HUGE_VAL},
    {.name = "accum_dt", .type = TKD_T_NUM, .flags = TKD_F_REQUIRED, .min = -HUGE_VAL,
     .max = HUGE_VAL},
    {.name = "cooldown", .type = TKD_T_NUM, .min = -HUGE_VAL, .max = HUGE_VAL,
     .desc = "seconds until due (cooling_down)"},
    {.name = "time_dilation", .type = TKD_T_NUM, .min = -HUGE_VAL, .max = HUGE_VAL},
    {.name = "cycle", .type = TKD_T_BOOL, .desc = "in a prerequisite cycle"},
    {0}};

json_t *tkd_j_tick_report(tk_world_t *w, tk_tick_id id, const tk_tick_spec *unregistered)
{
    tk_tick_info i;
    if (id == TK_TICK_NONE || tk_tick_get(w, id, &i) != 0) {
        tk_tick_spec def;
        tk_tick_spec_default(&def);
        def.on_dedicated_server = false;
        json_t *o = tkd_j_tick_spec(unregistered ? unregistered : &def);
        json_object_set_new(o, "state", json_string("disabled"));
        json_object_set_new(o, "registered", json_false());
        json_object_set_new(o, "ticks", json_integer(0));
        json_object_set_new(o, "last_frame", json_null());
        json_object_set_new(o, "last_dt", json_real(0));
        json_object_set_new(o, "accum_dt", json_real(0));
        return o;
    }
    json_t *o = tkd_j_tick_spec(&i.spec);
    json_object_set_new(o, "state", json_string(tk_tick_state_name(i.state)));
    json_object_set_new(o, "actual_group", json_string(tk_group_name(i.actual_group)));
    json_object_set_new(o, "actual_end_group", json_string(tk_group_name(i.actual_end_group)));
    json_object_set_new(o, "ticks", json_integer((json_int_t)i.ticks));
    json_object_set_new(o, "last_frame",
                        i.ticks ? json_integer((json_int_t)i.last_frame) : json_null());
    json_object_set_new(o, "last_dt", json_real(i.last_dt));
    json_object_set_new(o, "accum_dt", json_real(i.accum_dt));
    if (i.state == TK_TICK_COOLING_DOWN)
        json_object_set_new(o, "cooldown", json_real(i.cooldown));
    if (i.dilation != 1.0f)
        json_object_set_new(o, "time_dilation", json_real(i.dilation));
    if (i.cycle)
        json_object_set_new(o, "cycle", json_true());
    return o;
}

static json_t *j_props_kv(const tks_prop_kv *kv, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++) {
        const tks_value *v = &kv[i].v;
        json_t *x;
        switch (v->type) {
        case TKS_V_NUMBER:
            x = v->num == floor(v->num) && fabs(v->num) < 9e15 ? json_integer((json_int_t)v->num)
                                                                : json_real(v->num);
            break;
        case TKS_V_BOOL:
            x = json_boolean(v->b);
            break;
        case TKS_V_STRING:
            x = json_string(v->str);
            break;
        case TKS_V_IDS:
            x = json_array();
            for (size_t j = 0; j < v->n_ids; j++)
                json_array_append_new(x, json_integer((json_int_t)v->ids[j]));
            break;
        case TKS_V_SPAWN:
            x = v->self ? json_string("self") : tkd_j_spawn(v->spawn);
            break;
        default:
            x = json_null();
        }
        json_object_set_new(o, kv[i].key, x);
    }
    return o;
}

json_t *tkd_j_spawn(const tks_spawn_req *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "class", json_string(r->cls));
    if (r->level)
        json_object_set_new(o, "level", json_string(r->level));
    json_object_set_new(o, "count", json_integer((json_int_t)r->count));
    json_object_set_new(o, "tick", tkd_j_tick_spec(&r->tick));
    if (r->n_components) {
        json_t *cs = json_array();
        for (size_t i = 0; i < r->n_components; i++) {
            json_t *c = json_object();
            json_object_set_new(c, "class", json_string(r->components[i].cls));
            json_object_set_new(c, "tick", tkd_j_tick_spec(&r->components[i].tick));
            json_object_set_new(c, "props",
                                j_props_kv(r->components[i].props, r->components[i].n_props));
            json_array_append_new(cs, c);
        }
        json_object_set_new(o, "components", cs);
    }
    if (r->n_prereqs) {
        json_t *p = json_array();
        for (size_t i = 0; i < r->n_prereqs; i++)
            json_array_append_new(p, json_integer((json_int_t)r->prereqs[i]));
        json_object_set_new(o, "prerequisites", p);
    }
    json_object_set_new(o, "props", j_props_kv(r->props, r->n_props));
    if (r->dilation != 1.0)
        json_object_set_new(o, "time_dilation", json_real(r->dilation));
    if (r->life_span > 0)
        json_object_set_new(o, "life_span", json_real(r->life_span));
    return o;
}

json_t *tkd_j_value(const tks_prop_desc *d, const tks_value *v)
{
    switch (d->type) {
    case TKS_PROP_NUMBER:
        /* JSON has no infinities: the simulation's are shown as strings. */
        if (!isfinite(v->num))
            return json_string(isnan(v->num) ? "nan" : v->num > 0 ? "inf" : "-inf");
        return json_real(v->num);
    case TKS_PROP_COUNT:
    case TKS_PROP_ID:
        return json_integer((json_int_t)v->num);
    case TKS_PROP_BOOL:
        return json_boolean(v->b);
    case TKS_PROP_SPAWN:
        if (v->self)
            return json_string("self");
        return v->spawn ? tkd_j_spawn(v->spawn) : json_null();
    case TKS_PROP_STRING:
        return json_string(v->str);
    case TKS_PROP_IDS: {
        json_t *a = json_array();
        for (size_t i = 0; i < v->n_ids; i++)
            json_array_append_new(a, json_integer((json_int_t)v->ids[i]));
        return a;
    }
    }
    return json_null();
}

static void put_prop(void *ud, const tks_prop_desc *d, const tks_value *v)
{
    json_object_set_new(ud, d->name, tkd_j_value(d, v));
}

json_t *tkd_j_props(const tks_sim *s, const tks_entity *ent, int comp)
{
    json_t *o = json_object();
    tks_entity_props(s, ent, comp, put_prop, o);
    return o;
}
