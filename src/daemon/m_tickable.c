/*
 * m_tickable.c - tickable.*: add, set, remove, get, list.
 */

#include "methods_int.h"

/* ---- tickables ------------------------------------------------------------------------ */

void m_tickable_add(req *r)
{
    KEYS("class", "tick_type", "when_paused", "props");
    tkd_perr pe;
    const char *cls, *tt = "conditional";
    bool when_paused = false;
    json_t *props = NULL;
    if (!need_str(r, "class", &cls))
        return;
    READ(tkd_p_str(r->params, "tick_type", "", &tt, &pe));
    READ(tkd_p_bool(r->params, "when_paused", "", &when_paused, &pe));
    READ(tkd_p_obj(r->params, "props", "", &props, &pe));
    tk_tickable_type type;
    if (tk_tickable_type_parse(tt, &type) != 0) {
        fail(r, -32602, "tick_type: must be always, conditional or never");
        return;
    }
    tkd_arena a = {0};
    tks_prop_kv *kv;
    size_t n;
    if (!read_props(r, props, &a, &kv, &n))
        return;
    char err[TKS_ERR_MAX];
    tk_tickable_id id;
    int rc = tks_tickable_add(r->d->sim, cls, type, when_paused, kv, n, &id, err);
    tkd_arena_free(&a);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "id", jid(id));
    ok(r, o);
}

static bool read_tickable(req *r, tk_tickable_id *out)
{
    tkd_perr pe;
    uint64_t v;
    int rc = tkd_p_u64(r->params, "id", "", 1, UINT64_MAX, &v, &pe);
    if (rc < 0) {
        fail_p(r, &pe);
        return false;
    }
    if (rc == 0) {
        fail(r, -32602, "id: required");
        return false;
    }
    tk_tickable_info info;
    if (tk_tickable_get(r->d->world, v, &info) != 0) {
        fail(r, -32001, "id: tickable %llu does not exist", (unsigned long long)v);
        return false;
    }
    *out = v;
    return true;
}

void m_tickable_set(req *r)
{
    KEYS("id", "enabled", "when_paused", "tick_type");
    tkd_perr pe;
    tk_tickable_id id;
    if (!read_tickable(r, &id))
        return;
    bool en, wp;
    const char *tt;
    int has_en, has_wp, has_tt;
    READ(has_en = tkd_p_bool(r->params, "enabled", "", &en, &pe));
    READ(has_wp = tkd_p_bool(r->params, "when_paused", "", &wp, &pe));
    READ(has_tt = tkd_p_str(r->params, "tick_type", "", &tt, &pe));
    tk_tickable_type type = TK_TICKABLE_CONDITIONAL;
    if (has_tt && tk_tickable_type_parse(tt, &type) != 0) {
        fail(r, -32602, "tick_type: must be always, conditional or never");
        return;
    }
    if (has_en)
        tk_tickable_set_enabled(r->d->world, id, en);
    if (has_wp)
        tk_tickable_set_when_paused(r->d->world, id, wp);
    if (has_tt)
        tk_tickable_set_type(r->d->world, id, type);
    ok(r, json_object());
}

void m_tickable_remove(req *r)
{
    KEYS("id");
    tk_tickable_id id;
    if (!read_tickable(r, &id))
        return;
    tk_tickable_remove(r->d->world, id);
    ok(r, json_object());
}

static void put_prop(void *ud, const tks_prop_desc *d, const tks_value *v)
{
    json_object_set_new(ud, d->name, tkd_j_value(d, v));
}

static json_t *tickable_json(tkd *d, tk_tickable_id id)
{
    tk_tickable_info i;
    if (tk_tickable_get(d->world, id, &i) != 0)
        return NULL;
    const tks_class *c = tks_tickable_class(d->sim, id);
    json_t *o = json_object();
    json_object_set_new(o, "id", jid(id));
    json_object_set_new(o, "class", c ? json_string(tks_class_name(c)) : json_null());
    json_object_set_new(o, "tick_type", json_string(tk_tickable_type_name(i.type)));
    json_object_set_new(o, "enabled", json_boolean(i.enabled));
    json_object_set_new(o, "when_paused", json_boolean(i.when_paused));
    json_object_set_new(o, "ticks", jid(i.ticks));
    json_object_set_new(o, "last_frame", i.ticks ? jid(i.last_frame) : json_null());
    json_object_set_new(o, "accum_dt", json_real(i.accum_dt));
    json_t *props = json_object();
    tks_tickable_props(d->sim, id, put_prop, props);
    json_object_set_new(o, "props", props);
    return o;
}

void m_tickable_get(req *r)
{
    KEYS("id");
    tk_tickable_id id;
    if (!read_tickable(r, &id))
        return;
    ok(r, tickable_json(r->d, id));
}

void m_tickable_list(req *r)
{
    list_reply(r, "tickables", tk_tickable_next, tickable_json, tk_tickable_count(r->d->world));
}
