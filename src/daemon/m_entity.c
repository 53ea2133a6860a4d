/*
 * m_entity.c - entity.*: spawn, destroy (by ids or selectors), get, list, set_props.
 */
#include <stdio.h>
#include <string.h>

#include "methods_int.h"

/* ---- entities ---------------------------------------------------------------------------- */

void m_entity_spawn(req *r)
{
    tkd_arena a = {0};
    tkd_perr pe;
    tks_spawn_req sr;
    if (tkd_p_spawn(r->params, "", &a, 0, &sr, &pe) < 0) {
        tkd_arena_free(&a);
        {
            fail_p(r, &pe);
            return;
        }
    }
    char err[TKS_ERR_MAX];
    tkd *d = r->d;
    if (r->call && sr.count * (1 + sr.n_components) > SLICE_FUNCS && !d->offline) {
        int rc = tks_spawn_check(d->sim, &sr, err);
        if (rc) {
            tkd_arena_free(&a);
            fail_tk(r, rc, err);
            return;
        }
        tkd_job *j = tk_calloc(1, sizeof *j);
        j->kind = JOB_SPAWN;
        j->req = tks_spawn_req_clone(&sr);
        tkd_arena_free(&a);
        j->first = tks_reserve_ids(d->sim, sr.count);
        job_add(r, j);
        return;
    }
    tks_id first;
    int rc = tks_spawn(d->sim, &sr, &first, err);
    tkd_arena_free(&a);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    ok(r, spawn_result(first, sr.count));
}

/* Reads the selector keys: 1 if any was given, 0 if none, -1 (answered)
 * on a bad one. */
int read_selector(req *r, selector *sel)
{
    tkd_perr pe;
    memset(sel, 0, sizeof *sel);
    sel->level = TK_LEVEL_NONE;
    const char *level = NULL, *cls = NULL;
    int rf = tkd_p_u64(r->params, "first", "", 1, (1ull << 53), &sel->first, &pe);
    if (rf < 0)
        goto bad;
    int rc = tkd_p_u64(r->params, "count", "", 1, (1ull << 53), &sel->count, &pe);
    if (rc < 0)
        goto bad;
    if ((rf > 0) != (rc > 0)) {
        fail(r, -32602, "%s: required with %s (a range of ids, as entity.spawn answers)",
             rf > 0 ? "count" : "first", rf > 0 ? "first" : "count");
        return -1;
    }
    sel->range = rf > 0;
    int rl = tkd_p_str(r->params, "level", "", &level, &pe);
    if (rl < 0)
        goto bad;
    int rk = tkd_p_str(r->params, "class", "", &cls, &pe);
    if (rk < 0)
        goto bad;
    if (level && tk_level_find(r->d->world, level, &sel->level) != 0) {
        fail(r, -32001, "level: level '%s' does not exist", level);
        return -1;
    }
    if (cls && !(sel->cls = tks_class_find(r->d->sim, cls))) {
        fail(r, -32602, "class: unknown class '%s'", cls);
        return -1;
    }
    return sel->range || level || cls ? 1 : 0;
bad:
    fail_p(r, &pe);
    return -1;
}

typedef struct sel_ctx {
    const selector *sel;
    tks_id *ids;
    size_t n, cap;
} sel_ctx;

static void sel_push(sel_ctx *c, tks_id id)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->ids = tk_realloc(c->ids, c->cap * sizeof *c->ids);
    }
    c->ids[c->n++] = id;
}

static void sel_one(void *ud, const tks_entity *e)
{
    sel_ctx *c = ud;
    tks_id id = tks_entity_id(e);
    if (c->sel->range && (id < c->sel->first || id - c->sel->first >= c->sel->count))
        return;
    sel_push(c, id);
}

/* The ids the selector matches, in id order (tk_malloc'd, NULL if none). */
tks_id *select_ids(tkd *d, const selector *sel, size_t *n)
{
    sel_ctx c = {sel, NULL, 0, 0};
    if (sel->range && sel->count <= tks_entity_count(d->sim)) {
        /* A range smaller than the world: look its ids up. */
        for (uint64_t k = 0; k < sel->count; k++) {
            const tks_entity *e = tks_entity_get(d->sim, sel->first + k);
            if (e && (sel->level == TK_LEVEL_NONE || tks_entity_level(e) == sel->level) &&
                (!sel->cls || tks_entity_class(e) == sel->cls))
                sel_push(&c, sel->first + k);
        }
    } else {
        tks_entity_list(d->sim, sel->level, sel->cls, 0, UINT64_MAX, sel_one, &c);
    }
    *n = c.n;
    return c.ids;
}

void m_entity_destroy(req *r)
{
    KEYS("ids", "first", "count", "level", "class");
    selector sel;
    int has_sel = read_selector(r, &sel);
    if (has_sel < 0)
        return;
    bool has_ids = json_object_get(r->params, "ids") != NULL;
    if (has_sel && has_ids) {
        fail(r, -32602, "ids: give either ids or selectors (first and count, level, class)");
        return;
    }
    if (!has_sel && !has_ids) {
        fail(r, -32602, "ids: required (or selectors: first and count, level, class)");
        return;
    }
    tkd_arena a = {0};
    tkd_perr pe;
    tks_id *ids = NULL, *selected = NULL;
    size_t n = 0;
    if (has_sel) {
        ids = selected = select_ids(r->d, &sel, &n);
        if (n == 0) {
            json_t *o = json_object();
            json_object_set_new(o, "destroyed", jid(0));
            ok(r, o);
            return;
        }
    } else if (tkd_p_ids(r->params, "ids", "", &a, &ids, &n, &pe) < 0) {
        tkd_arena_free(&a);
        fail_p(r, &pe);
        return;
    }
    char err[TKS_ERR_MAX];
    size_t destroyed;
    if (r->call && n > SLICE_FUNCS && !r->d->offline) {
        /* All-or-nothing validation first, then in slices. */
        for (size_t i = 0; i < n && !selected; i++) {
            if (!tks_entity_get(r->d->sim, ids[i])) {
                fail(r, -32001, "ids[%zu]: entity %llu does not exist", i,
                     (unsigned long long)ids[i]);
                tkd_arena_free(&a);
                return;
            }
        }
        tkd_job *j = tk_calloc(1, sizeof *j);
        j->kind = JOB_DESTROY;
        if (selected) {
            j->ids = selected;
        } else {
            j->ids = tk_malloc(n * sizeof *ids);
            memcpy(j->ids, ids, n * sizeof *ids);
        }
        j->n_ids = n;
        tkd_arena_free(&a);
        job_add(r, j);
        return;
    }
    int rc = tks_destroy(r->d->sim, ids, n, &destroyed, err);
    tkd_arena_free(&a);
    tk_free(selected);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "destroyed", jid(destroyed));
    ok(r, o);
}

void m_entity_get(req *r)
{
    KEYS("id");
    tkd_perr pe;
    uint64_t id;
    int rc = tkd_p_u64(r->params, "id", "", 1, UINT64_MAX, &id, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "id: required");
        return;
    }
    tkd *d = r->d;
    const tks_entity *e = tks_entity_get(d->sim, id);
    if (!e) {
        fail(r, -32001, "id: entity %llu does not exist", (unsigned long long)id);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", jid(id));
    json_object_set_new(o, "class", json_string(tks_class_name(tks_entity_class(e))));
    json_object_set_new(o, "level", json_string(tk_level_name(d->world, tks_entity_level(e))));
    json_object_set_new(o, "props", tkd_j_props(d->sim, e, -1));
    json_object_set_new(
        o, "tick",
        tkd_j_tick_report(d->world, tks_entity_tick(e, -1), tks_entity_tick_spec(d->sim, e, -1)));
    json_t *cs = json_array();
    for (size_t i = 0; i < tks_entity_component_count(e); i++) {
        json_t *c = json_object();
        json_object_set_new(c, "class",
                            json_string(tks_class_name(tks_entity_component_class(e, i))));
        json_object_set_new(c, "props", tkd_j_props(d->sim, e, (int)i));
        json_object_set_new(c, "tick",
                            tkd_j_tick_report(d->world, tks_entity_tick(e, (int)i),
                                              tks_entity_tick_spec(d->sim, e, (int)i)));
        json_array_append_new(cs, c);
    }
    json_object_set_new(o, "components", cs);
    json_object_set_new(o, "prerequisites", prereq_ids(d, tks_entity_tick(e, -1)));
    json_object_set_new(o, "time_dilation", json_real(tks_entity_dilation(e)));
    double life = tks_entity_life_remaining(d->sim, e);
    json_object_set_new(o, "life_span", life >= 0 ? json_real(life) : json_null());
    ok(r, o);
}

typedef struct list_ctx {
    json_t *ids;
} list_ctx;

static void list_one(void *ud, const tks_entity *e)
{
    list_ctx *c = ud;
    json_array_append_new(c->ids, jid(tks_entity_id(e)));
}

void m_entity_list(req *r)
{
    KEYS("level", "class", "offset", "limit");
    tkd_perr pe;
    const char *level = NULL, *cls = NULL;
    uint64_t offset = 0, limit = 100;
    READ(tkd_p_str(r->params, "level", "", &level, &pe));
    READ(tkd_p_str(r->params, "class", "", &cls, &pe));
    READ(tkd_p_u64(r->params, "offset", "", 0, UINT64_MAX, &offset, &pe));
    READ(tkd_p_u64(r->params, "limit", "", 0, LIST_MAX, &limit, &pe));
    tkd *d = r->d;
    tk_level_id l = TK_LEVEL_NONE;
    if (level && tk_level_find(d->world, level, &l) != 0) {
        fail(r, -32001, "level: level '%s' does not exist", level);
        return;
    }
    const tks_class *c = NULL;
    if (cls && !(c = tks_class_find(d->sim, cls))) {
        fail(r, -32602, "class: unknown class '%s'", cls);
        return;
    }
    /* Ids are at most as long as the next one: never list past the reply's
     * size bound. */
    char big[32];
    size_t per_id = (size_t)snprintf(big, sizeof big, "%llu", (unsigned long long)tks_next_id(d->sim)) + 1;
    uint64_t fit = out_budget(r) / per_id;
    bool capped = limit > fit;
    if (capped)
        limit = fit;
    list_ctx lc = {json_array()};
    uint64_t total = tks_entity_list(d->sim, l, c, offset, limit, list_one, &lc);
    json_t *o = json_object();
    json_object_set_new(o, "total", jid(total));
    if (capped && total > offset + json_array_size(lc.ids))
        page_cut(o, offset + json_array_size(lc.ids));
    json_object_set_new(o, "ids", lc.ids);
    ok(r, o);
}

/* The "props" object of a request, into `a`; false (answered, `a` freed) if
 * it is not valid. */
bool read_props(req *r, const json_t *props, tkd_arena *a, tks_prop_kv **kv, size_t *n)
{
    tkd_perr pe;
    if (tkd_p_props(props, "props", a, 0, kv, n, &pe) < 0) {
        tkd_arena_free(a);
        fail_p(r, &pe);
        return false;
    }
    return true;
}

void m_entity_set_props(req *r)
{
    KEYS("id", "props");
    tkd_perr pe;
    uint64_t id;
    json_t *props = NULL;
    int rc = tkd_p_u64(r->params, "id", "", 1, UINT64_MAX, &id, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "id: required");
        return;
    }
    rc = tkd_p_obj(r->params, "props", "", &props, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "props: required");
        return;
    }
    tkd_arena a = {0};
    tks_prop_kv *kv;
    size_t n;
    if (!read_props(r, props, &a, &kv, &n))
        return;
    char err[TKS_ERR_MAX];
    rc = tks_entity_set_props(r->d->sim, id, kv, n, err);
    tkd_arena_free(&a);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    ok(r, json_object());
}
