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
    uint64_t id, comp = 0;
    int rc = tkd_p_u64(obj, "id", path, 1, UINT64_MAX, &id, &pe);
    if (rc < 0) {
        fail_p(r, &pe);
        return -1;
    }
    if (rc == 0) {
        fail(r, -32602, "%s%sid: required", path, path[0] ? "." : "");
        return -1;
    }
    int has_comp = tkd_p_u64(obj, "component", path, 0, TKS_MAX_COMPONENTS - 1, &comp, &pe);
    if (has_comp < 0) {
        fail_p(r, &pe);
        return -1;
    }
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

void m_tick_set(req *r)
{
    static const char *const allowed[] = {"id",      "component",           "ids",
                                          "first",   "count",               "level",
                                          "class",   "group",               "end_group",
                                          "interval", "enabled",            "even_when_paused",
                                          "high_priority", "batch",         "on_dedicated_server",
                                          "any_thread", NULL};
    if (!keys(r, allowed))
        return;
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
    KEYS("id", "component", "prerequisite");
    tk_tick_id t, p;
    if (read_target(r, r->params, "", &t) < 0)
        return;
    json_t *po = json_object_get(r->params, "prerequisite");
    if (!po) {
        fail(r, -32602, "prerequisite: required");
        return;
    }
    if (json_is_integer(po)) {
        /* Shorthand: an entity id for its actor tick. */
        json_t *tmp = json_pack("{s:O}", "id", po);
        int rc = read_target(r, tmp, "prerequisite", &p);
        json_decref(tmp);
        if (rc < 0)
            return;
    } else if (json_is_object(po)) {
        static const char *const pk[] = {"id", "component", NULL};
        tkd_perr pe;
        if (tkd_p_keys(po, "prerequisite", pk, &pe)) {
            fail_p(r, &pe);
            return;
        }
        if (read_target(r, po, "prerequisite", &p) < 0)
            return;
    } else {
        {
            fail(r, -32602, "prerequisite: must be a target {\"id\", \"component\"?}");
            return;
        }
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

void m_tick_add_prerequisite(req *r) { m_tick_prereq(r, true); }
void m_tick_remove_prerequisite(req *r) { m_tick_prereq(r, false); }

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

void m_tick_dump(req *r)
{
    tk_tick_counts tc;
    tk_tick_get_counts(r->d->world, &tc);
    list_reply(r, "ticks", tk_tick_next, tick_dump_json, tc.registered);
}
