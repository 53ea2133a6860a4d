/*
 * m_entity.c - entity.*: spawn, destroy (by ids or selectors), get, list, set_props.
 */
#include <stdio.h>
#include <string.h>

#include "methods_int.h"

/* ---- entities ---------------------------------------------------------------------------- */

static void m_entity_spawn(req *r)
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
    if (r->client && sr.count * (1 + sr.n_components) > SLICE_FUNCS &&
        (!d->offline || d->replay)) {
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
    memset(sel, 0, sizeof *sel);
    sel->level = TK_LEVEL_NONE;
    const tkd_val *first = arg(r, "first"), *count = arg(r, "count");
    const char *level = arg(r, "level")->str, *cls = arg(r, "class")->str;
    bool rf = first->given, rc = count->given;
    sel->first = first->u;
    sel->count = count->u;
    if (rf != rc) {
        fail(r, -32602, "%s: required with %s (a range of ids, as entity.spawn answers)",
             rf > 0 ? "count" : "first", rf > 0 ? "first" : "count");
        return -1;
    }
    sel->range = rf;
    if (level && tk_level_find(r->d->world, level, &sel->level) != 0) {
        fail(r, -32001, "level: level '%s' does not exist", level);
        return -1;
    }
    if (cls && !(sel->cls = tks_class_find(r->d->sim, cls))) {
        fail(r, -32602, "class: unknown class '%s'", cls);
        return -1;
    }
    return sel->range || level || cls ? 1 : 0;
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

static void m_entity_destroy(req *r)
{
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
    if (r->client && n > SLICE_FUNCS && (!r->d->offline || r->d->replay)) {
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
    ok(r, destroyed_result(destroyed));
}

static void m_entity_get(req *r)
{
    uint64_t id = arg(r, "id")->u;
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

static void m_entity_list(req *r)
{
    const char *level = arg(r, "level")->str, *cls = arg(r, "class")->str;
    uint64_t offset = arg(r, "offset")->u, limit = arg(r, "limit")->u;
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

static void m_entity_set_props(req *r)
{
    uint64_t id = arg(r, "id")->u;
    json_t *props = arg(r, "props")->json;
    tkd_arena a = {0};
    tks_prop_kv *kv;
    size_t n;
    if (!read_props(r, props, &a, &kv, &n))
        return;
    char err[TKS_ERR_MAX];
    int rc = tks_entity_set_props(r->d->sim, id, kv, n, err);
    tkd_arena_free(&a);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    ok(r, json_object());
}

/* ---- the table ------------------------------------------------------------------- */

const tkd_field tkd__selector_fields[] = {
    P_INT("first", 0, 1, 1ull << 53, "first id of a range (with count), as entity.spawn answers"),
    P_INT("count", 0, 1, 1ull << 53, "ids in the range (with first)"),
    P_STR("level", 0, "entities of this level"), P_STR("class", 0, "entities of this class"),
    {0}};

static const tkd_field id_item = {.name = "id", .type = TKD_T_INT, .lo = 1, .hi = UINT64_MAX};
#define P_IDS(n, d) {.name = n, .type = TKD_T_ARR, .items = &id_item, .desc = d}

static const tkd_field spawn_result_fields[] = {
    O_ARR("ids", "the new ids (count <= 1000)"),
    O_INT("first", "the first new id (count > 1000; the ids are consecutive)"),
    O_INT("count", "with first"), {0}};

static const tkd_field destroy_params[] = {
    P_IDS("ids", "entity ids, all of which must exist (not with selectors)"),
    {.name = "selectors", .type = TKD_T_INCLUDE, .fields = tkd__selector_fields},
    {0}};
static const tkd_field destroy_result[] = {R_INT("destroyed", NULL), {0}};

static const tkd_field get_params[] = {
    P_INT("id", TKD_F_REQUIRED, 1, UINT64_MAX, "entity id"), {0}};
static const tkd_field get_result[] = {
    R_INT("id", NULL), R_STR("class", NULL), R_STR("level", NULL), R_OBJ("props", NULL),
    {.name = "tick", .type = TKD_T_OBJ, .flags = TKD_F_REQUIRED, .fields = tkd_tick_report_fields,
     .ref = "tick_report", .desc = "the actor tick"},
    R_ARR("components", "each {class, props, tick}"),
    R_ARR("prerequisites", "entity ids, or {id, component}"), R_NUM("time_dilation", NULL),
    {.name = "life_span", .type = TKD_T_NUM, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .min = -HUGE_VAL, .max = HUGE_VAL, .desc = "s left (null: forever)"},
    {0}};

static const tkd_field list_params[] = {
    P_STR("level", 0, "only this level's"), P_STR("class", 0, "only this class's"),
    {.name = "page", .type = TKD_T_INCLUDE, .fields = tkd__page_params}, {0}};
static const tkd_field list_result[] = {
    R_INT("total", "entities that match"), R_ARR("ids", NULL),
    O_BOOL("truncated", "the page was cut to fit a reply"), O_INT("next_offset", "with truncated"),
    {0}};

static const tkd_field set_props_params[] = {
    P_INT("id", TKD_F_REQUIRED, 1, UINT64_MAX, "entity id"),
    P_OBJ("props", TKD_F_REQUIRED, "props of the entity's class to set"), {0}};

const tkd_method tkd__entity_methods[] = {
    {"entity.spawn", m_entity_spawn, tkd_spawn_fields, spawn_result_fields, "spawn entities",
     "All or nothing; past 8192 tick functions in slices."},
    {"entity.destroy", m_entity_destroy, destroy_params, destroy_result,
     "destroy entities by ids or by selectors (those matching all given)",
     "All or nothing; past 8192 entities in slices."},
    {"entity.get", m_entity_get, get_params, get_result,
     "an entity's class, level, props, tick report, components and prerequisites", NULL},
    {"entity.list", m_entity_list, list_params, list_result, "ids of entities, filtered, paged",
     NULL},
    {"entity.set_props", m_entity_set_props, set_props_params, tkd__empty_result,
     "set an entity's props", NULL},
    {0}};
