/*
 * m_tick.c - tick.*: set (one, ids or selectors), prerequisites, dump.
 */
#include <string.h>

#include "methods_int.h"

json_t *prereq_ids(tkd *d, tk_tick_id id)
{
    json_t *a = json_array();
    if (id == TK_TICK_NONE)
        return a;
    tk_tick_id pre[64];
    size_t n = tk_tick_prerequisites(d->world, id, pre, 64);
    for (size_t i = 0; i < n && i < 64; i++) {
        int comp = -1;
        const tks_entity *e = tks_tick_owner(d->sim, pre[i], &comp);
        if (!e)
            continue;
        if (comp < 0) {
            json_array_append_new(a, jid(tks_entity_id(e)));
        } else {
            json_t *t = json_object();
            json_object_set_new(t, "id", jid(tks_entity_id(e)));
            json_object_set_new(t, "component", json_integer(comp));
            json_array_append_new(a, t);
        }
    }
    return a;
}

/* ---- tick functions ------------------------------------------------------------------ */

/* A target {"id", "component"?} in `obj` (keys at `path`) -> tick function. */
static int read_target(req *r, const json_t *obj, const char *path, tk_tick_id *out)
{
    tkd_perr pe;
    tkd_val v[TKD_MAX_FIELDS];
    if (tkd_p_check(obj, tkd_target_fields, path, false, v, &pe) < 0) {
        fail_p(r, &pe);
        return -1;
    }
    uint64_t id = v[0].u, comp = v[1].u;
    bool has_comp = v[1].given;
    const tks_entity *e = tks_entity_get(r->d->sim, id);
    if (!e) {
        fail(r, -32001, "%s%sid: entity %llu does not exist", path, path[0] ? "." : "",
             (unsigned long long)id);
        return -1;
    }
    if (has_comp && comp >= tks_entity_component_count(e)) {
        fail(r, -32001, "%s%scomponent: entity %llu has no component %llu", path,
             path[0] ? "." : "", (unsigned long long)id, (unsigned long long)comp);
        return -1;
    }
    tk_tick_id t = tks_entity_tick(e, has_comp ? (int)comp : -1);
    if (t == TK_TICK_NONE) {
        fail(r, -32002,
             "%s%sid: that tick function is not registered (on_dedicated_server is false)", path,
             path[0] ? "." : "");
        return -1;
    }
    *out = t;
    return 0;
}

static void m_tick_set(req *r)
{
    tkd *d = r->d;
    tkd_perr pe;
    selector sel;
    int has_sel = read_selector(r, &sel);
    if (has_sel < 0)
        return;
    bool has_ids = json_object_get(r->params, "ids") != NULL;
    bool has_id = json_object_get(r->params, "id") != NULL;
    if (has_ids + has_id + (has_sel > 0) != 1) {
        fail(r, -32602, "id: give one of id (with an optional component), ids, or selectors "
                        "(first and count, level, class)");
        return;
    }
    if (!has_id && json_object_get(r->params, "component")) {
        fail(r, -32602, "component: only with id");
        return;
    }
    tkd_arena a = {0};
    tk_tick_id *targets;
    size_t n;
    if (has_id) {
        targets = tkd_arena_alloc(&a, sizeof *targets);
        n = 1;
        if (read_target(r, r->params, "", &targets[0]) < 0) {
            tkd_arena_free(&a);
            return;
        }
    } else if (has_sel) {
        /* The selected entities' actor ticks that are registered. */
        size_t k = 0;
        tks_id *ids = select_ids(d, &sel, &n);
        targets = tkd_arena_alloc(&a, (n ? n : 1) * sizeof *targets);
        for (size_t i = 0; i < n; i++) {
            tk_tick_id t = tks_entity_tick(tks_entity_get(d->sim, ids[i]), -1);
            if (t != TK_TICK_NONE)
                targets[k++] = t;
        }
        n = k;
        tk_free(ids);
    } else {
        tks_id *ids;
        if (tkd_p_ids(r->params, "ids", "", &a, &ids, &n, &pe) < 0) {
            tkd_arena_free(&a);
            fail_p(r, &pe);
            return;
        }
        targets = tkd_arena_alloc(&a, (n ? n : 1) * sizeof *targets);
        for (size_t i = 0; i < n; i++) {
            const tks_entity *e = tks_entity_get(d->sim, ids[i]);
            if (!e) {
                fail(r, -32001, "ids[%zu]: entity %llu does not exist", i,
                     (unsigned long long)ids[i]);
                tkd_arena_free(&a);
                return;
            }
            targets[i] = tks_entity_tick(e, -1);
            if (targets[i] == TK_TICK_NONE) {
                tkd_arena_free(&a);
                fail(r, -32002, "ids[%zu]: the actor tick is not registered", i);
                return;
            }
        }
    }
    /* Validate every new spec first, then apply. */
    tk_tick_spec *specs = tkd_arena_alloc(&a, (n ? n : 1) * sizeof *specs);
    for (size_t i = 0; i < n; i++) {
        tk_tick_info info;
        tk_tick_get(d->world, targets[i], &info);
        specs[i] = info.spec;
        if (info.spec.end_group == info.spec.group)
            specs[i].end_group = TK_GROUP_SAME;
        if (tkd_p_tick_spec(r->params, "", false, &specs[i], &pe) < 0) {
            tkd_arena_free(&a);
            {
                fail_p(r, &pe);
                return;
            }
        }
        if (!specs[i].on_dedicated_server) {
            tkd_arena_free(&a);
            {
                fail(r, -32602,
                     "on_dedicated_server: cannot be turned off on a registered "
                     "tick function");
                return;
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        tk_tick_set_spec(d->world, targets[i], &specs[i]);
    tkd_arena_free(&a);
    json_t *o = json_object();
    if (has_sel)
        json_object_set_new(o, "updated", jid(n));
    ok(r, o);
}

static void m_tick_prereq(req *r, bool add)
{
    tk_tick_id t, p;
    if (read_target(r, r->params, "", &t) < 0)
        return;
    /* The table checked it: an entity id (its actor tick) or a target. */
    json_t *po = arg(r, "prerequisite")->json;
    if (json_is_number(po)) {
        json_t *tmp = json_pack("{s:O}", "id", po);
        int rc = read_target(r, tmp, "prerequisite", &p);
        json_decref(tmp);
        if (rc < 0)
            return;
    } else if (read_target(r, po, "prerequisite", &p) < 0) {
        return;
    }
    int rc = add ? tk_tick_add_prerequisite(r->d->world, t, p)
                 : tk_tick_remove_prerequisite(r->d->world, t, p);
    if (rc == TK_EINVAL) {
        fail(r, -32602, "prerequisite: a tick function cannot be its own prerequisite");
        return;
    }
    if (rc == TK_ENOENT) {
        fail(r, -32001, "prerequisite: not a prerequisite of this tick function");
        return;
    }
    ok(r, json_object());
}

static void m_tick_add_prerequisite(req *r) { m_tick_prereq(r, true); }
static void m_tick_remove_prerequisite(req *r) { m_tick_prereq(r, false); }

static json_t *tick_dump_json(tkd *d, uint64_t id)
{
    tk_tick_info i;
    if (tk_tick_get(d->world, id, &i) != 0)
        return NULL;
    int comp = -1;
    const tks_entity *e = tks_tick_owner(d->sim, id, &comp);
    json_t *x = json_object();
    json_object_set_new(x, "entity", e ? jid(tks_entity_id(e)) : json_null());
    json_object_set_new(x, "component", comp < 0 ? json_null() : json_integer(comp));
    json_object_set_new(x, "class", json_string(tk_tick_class_name(d->world, i.cls)));
    json_object_set_new(x, "state", json_string(tk_tick_state_name(i.state)));
    json_object_set_new(x, "group", json_string(tk_group_name(i.spec.group)));
    json_object_set_new(x, "end_group", json_string(tk_group_name(i.spec.end_group)));
    json_object_set_new(x, "actual_group", json_string(tk_group_name(i.actual_group)));
    json_object_set_new(x, "actual_end_group", json_string(tk_group_name(i.actual_end_group)));
    json_object_set_new(x, "interval", json_real(i.spec.interval));
    if (i.state == TK_TICK_COOLING_DOWN)
        json_object_set_new(x, "cooldown", json_real(i.cooldown));
    json_object_set_new(x, "prerequisites", prereq_ids(d, id));
    return x;
}

static void m_tick_dump(req *r)
{
    tk_tick_counts tc;
    tk_tick_get_counts(r->d->world, &tc);
    list_reply(r, "ticks", tk_tick_next, tick_dump_json, tc.registered);
}

/* ---- the table ------------------------------------------------------------------- */

static const tkd_field set_params[] = {
    P_INT("id", 0, 1, UINT64_MAX, "entity id (not with ids or selectors)"),
    P_INT("component", 0, 0, TKS_MAX_COMPONENTS - 1, "with id: a component's tick function"),
    {.name = "ids", .type = TKD_T_ARR,
     .items = &(const tkd_field){.name = "id", .type = TKD_T_INT, .lo = 1, .hi = UINT64_MAX},
     .desc = "entity ids: their actor ticks"},
    {.name = "selectors", .type = TKD_T_INCLUDE, .fields = tkd__selector_fields},
    {.name = "spec", .type = TKD_T_INCLUDE, .flags = TKD_F_KEEP, .fields = tkd_tick_spec_fields},
    {0}};
static const tkd_field set_result[] = {
    O_INT("updated", "with selectors: the tick functions changed"), {0}};

static const tkd_field prereq_alternatives[] = {
    {.name = "entity", .type = TKD_T_INT, .lo = 1, .hi = UINT64_MAX,
     .desc = "an entity id (its actor tick)"},
    {.name = "target", .type = TKD_T_OBJ, .fields = tkd_target_fields, .ref = "target",
     .desc = "a target {id, component?}"},
    {0}};
static const tkd_field prereq_params[] = {
    P_INT("id", TKD_F_REQUIRED, 1, UINT64_MAX, "entity id"),
    P_INT("component", 0, 0, TKS_MAX_COMPONENTS - 1, "a component's tick function"),
    {.name = "prerequisite", .type = TKD_T_ANY, .flags = TKD_F_REQUIRED,
     .items = prereq_alternatives, .desc = "the tick function to wait for"},
    {0}};

static const tkd_field dump_result[] = {
    R_ARR("ticks", "each {entity, component, class, state, group, end_group, actual_group, "
                   "actual_end_group, interval, cooldown?, prerequisites}"),
    R_INT("total", "registered tick functions"),
    O_BOOL("truncated", "the page was cut to fit a reply"), O_INT("next_offset", "with truncated"),
    {0}};

const tkd_method tkd__tick_methods[] = {
    {"tick.set", m_tick_set, set_params, set_result,
     "change tick functions from the next frame",
     "One of id (with an optional component), ids, or selectors (the actor ticks of the "
     "entities matching all given); absent spec fields are unchanged."},
    {"tick.add_prerequisite", m_tick_add_prerequisite, prereq_params, tkd__empty_result,
     "make a tick function wait for another", NULL},
    {"tick.remove_prerequisite", m_tick_remove_prerequisite, prereq_params, tkd__empty_result,
     "remove a prerequisite", NULL},
    {"tick.dump", m_tick_dump, tkd__page_params, dump_result,
     "every registered tick function, a page at a time", NULL},
    {0}};
