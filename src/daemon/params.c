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

/* ---- tick specs --------------------------------------------------------------- */

const char *const tkd_tick_spec_keys[] = {
    "group", "end_group", "interval", "enabled", "even_when_paused", "high_priority",
    "batch", "on_dedicated_server", "any_thread", NULL};

static int p_group(const json_t *obj, const char *key, const char *path, tk_group *out,
                   tkd_perr *e)
{
    const char *s;
    int rc = tkd_p_str(obj, key, path, &s, e);
    if (rc <= 0)
        return rc;
    if (tk_group_parse(s, out) != 0) {
        char nb[256];
        return tkd_perr_set(e, -32602,
                            "%s: '%s' is not a tick group (pre_physics, start_physics, "
                            "during_physics, end_physics, post_physics, post_update_work, "
                            "last_demotable)",
                            name_of(nb, sizeof nb, path, key), s);
    }
    return 1;
}

int tkd_p_tick_spec(const json_t *obj, const char *path, bool only_spec, tk_tick_spec *spec,
                    tkd_perr *e)
{
    if (!obj)
        return 0;
    if (only_spec && tkd_p_keys(obj, path, tkd_tick_spec_keys, e))
        return -1;
    tk_tick_spec s = *spec;
    tk_group old_group = s.group;
    int rc, rc_end;
    if ((rc = p_group(obj, "group", path, &s.group, e)) < 0)
        return -1;
    if ((rc_end = p_group(obj, "end_group", path, &s.end_group, e)) < 0)
        return -1;
    /* A new group without an end group keeps "end = group" semantics. */
    if (rc == 1 && rc_end == 0 && (s.end_group == TK_GROUP_SAME || s.end_group == old_group))
        s.end_group = TK_GROUP_SAME;
    double iv = s.interval;
    if (tkd_p_num(obj, "interval", path, -1e300, 1e9, &iv, e) < 0)
        return -1;
    s.interval = iv > 0 ? iv : 0;
    if (tkd_p_bool(obj, "enabled", path, &s.enabled, e) < 0 ||
        tkd_p_bool(obj, "even_when_paused", path, &s.even_when_paused, e) < 0 ||
        tkd_p_bool(obj, "high_priority", path, &s.high_priority, e) < 0 ||
        tkd_p_bool(obj, "batch", path, &s.batch, e) < 0 ||
        tkd_p_bool(obj, "on_dedicated_server", path, &s.on_dedicated_server, e) < 0 ||
        tkd_p_bool(obj, "any_thread", path, &s.any_thread, e) < 0)
        return -1;
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

static const char *const spawn_keys[] = {"class", "level", "count", "tick", "components",
                                         "prerequisites", "props", "time_dilation",
                                         "life_span", NULL};
static const char *const component_keys[] = {"class", "tick", "props", NULL};

int tkd_p_spawn(const json_t *params, const char *path, tkd_arena *a, int depth,
                tks_spawn_req *r, tkd_perr *e)
{
    tks_spawn_req_init(r);
    char nb[256];
    if (!params)
        return tkd_perr_set(e, -32602, "%s: required", name_of(nb, sizeof nb, path, "class"));
    if (tkd_p_keys(params, path, spawn_keys, e))
        return -1;
    int rc = tkd_p_str(params, "class", path, &r->cls, e);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return tkd_perr_set(e, -32602, "%s: required", name_of(nb, sizeof nb, path, "class"));
    if (tkd_p_str(params, "level", path, &r->level, e) < 0)
        return -1;
    if (tkd_p_u64(params, "count", path, 1, TKS_MAX_SPAWN, &r->count, e) < 0)
        return -1;
    json_t *tick = NULL;
    if (tkd_p_obj(params, "tick", path, &tick, e) < 0)
        return -1;
    if (tick && tkd_p_tick_spec(tick, name_of(nb, sizeof nb, path, "tick"), true, &r->tick, e) < 0)
        return -1;
    json_t *comps = NULL;
    if (tkd_p_arr(params, "components", path, &comps, e) < 0)
        return -1;
    if (comps) {
        size_t n = json_array_size(comps);
        if (n > TKS_MAX_COMPONENTS)
            return tkd_perr_set(e, -32602, "%s: at most %d components",
                                name_of(nb, sizeof nb, path, "components"), TKS_MAX_COMPONENTS);
        r->components = n ? tkd_arena_alloc(a, n * sizeof *r->components) : NULL;
        r->n_components = n;
        for (size_t i = 0; i < n; i++) {
            json_t *c = json_array_get(comps, i);
            char cp[256];
            snprintf(cp, sizeof cp, "%s%scomponents[%zu]", path, path[0] ? "." : "", i);
            if (!json_is_object(c))
                return tkd_perr_set(e, -32602, "%s: must be an object", cp);
            if (tkd_p_keys(c, cp, component_keys, e))
                return -1;
            tks_component_req *cr = &r->components[i];
            tk_tick_spec_default(&cr->tick);
            rc = tkd_p_str(c, "class", cp, &cr->cls, e);
            if (rc < 0)
                return -1;
            if (rc == 0)
                return tkd_perr_set(e, -32602, "%s.class: required", cp);
            json_t *ct = NULL, *cprops = NULL;
            if (tkd_p_obj(c, "tick", cp, &ct, e) < 0)
                return -1;
            char tp[300];
            snprintf(tp, sizeof tp, "%s.tick", cp);
            if (ct && tkd_p_tick_spec(ct, tp, true, &cr->tick, e) < 0)
                return -1;
            if (tkd_p_obj(c, "props", cp, &cprops, e) < 0)
                return -1;
            snprintf(tp, sizeof tp, "%s.props", cp);
            if (tkd_p_props(cprops, tp, a, depth, &cr->props, &cr->n_props, e) < 0)
                return -1;
        }
    }
    if (tkd_p_ids(params, "prerequisites", path, a, &r->prereqs, &r->n_prereqs, e) < 0)
        return -1;
    json_t *props = NULL;
    if (tkd_p_obj(params, "props", path, &props, e) < 0)
        return -1;
    if (tkd_p_props(props, name_of(nb, sizeof nb, path, "props"), a, depth, &r->props, &r->n_props,
                    e) < 0)
        return -1;
    if (tkd_p_num(params, "time_dilation", path, 0, 1e6, &r->dilation, e) < 0)
        return -1;
    if (tkd_p_num(params, "life_span", path, 0, 1e12, &r->life_span, e) < 0)
        return -1;
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
