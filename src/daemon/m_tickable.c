/*
 * m_tickable.c - tickable.*: add, set, remove, get, list.
 */

#include "methods_int.h"

/* ---- tickables ------------------------------------------------------------------------ */

static void m_tickable_add(req *r)
{
    const char *cls = arg(r, "class")->str, *tt = arg(r, "tick_type")->str;
    bool when_paused = arg(r, "when_paused")->b;
    json_t *props = arg(r, "props")->json;
    tk_tickable_type type = TK_TICKABLE_CONDITIONAL;
    tk_tickable_type_parse(tt, &type);
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
    uint64_t v = arg(r, "id")->u;
    tk_tickable_info info;
    if (tk_tickable_get(r->d->world, v, &info) != 0) {
        fail(r, -32001, "id: tickable %llu does not exist", (unsigned long long)v);
        return false;
    }
    *out = v;
    return true;
}

static void m_tickable_set(req *r)
{
    tk_tickable_id id;
    if (!read_tickable(r, &id))
        return;
    const tkd_val *en = arg(r, "enabled"), *wp = arg(r, "when_paused"), *tt = arg(r, "tick_type");
    bool has_en = en->given, has_wp = wp->given, has_tt = tt->given;
    tk_tickable_type type = TK_TICKABLE_CONDITIONAL;
    if (has_tt)
        tk_tickable_type_parse(tt->str, &type);
    if (has_en)
        tk_tickable_set_enabled(r->d->world, id, en->b);
    if (has_wp)
        tk_tickable_set_when_paused(r->d->world, id, wp->b);
    if (has_tt)
        tk_tickable_set_type(r->d->world, id, type);
    ok(r, json_object());
}

static void m_tickable_remove(req *r)
{
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

static void m_tickable_get(req *r)
{
    tk_tickable_id id;
    if (!read_tickable(r, &id))
        return;
    ok(r, tickable_json(r->d, id));
}

static void m_tickable_list(req *r)
{
    list_reply(r, "tickables", tk_tickable_next, tickable_json, tk_tickable_count(r->d->world));
}

/* ---- the table ------------------------------------------------------------------- */

static const char *const tick_types[] = {"always", "conditional", "never", NULL};

static const tkd_field add_params[] = {
    P_STR("class", TKD_F_REQUIRED, "tickable class (engine.info lists classes)"),
    {.name = "tick_type", .type = TKD_T_STR, .enums = tick_types, .flags = TKD_F_DEFAULT,
     .def_str = "conditional", .desc = "always, conditional (while enabled) or never"},
    {.name = "when_paused", .type = TKD_T_BOOL, .flags = TKD_F_DEFAULT, .def = 0,
     .desc = "ticks while the world is paused"},
    P_OBJ("props", 0, "the class's props"), {0}};
static const tkd_field id_result[] = {R_INT("id", "below 2^53"), {0}};
static const tkd_field id_params[] = {
    P_INT("id", TKD_F_REQUIRED, 1, UINT64_MAX, "tickable id"), {0}};
static const tkd_field set_params[] = {
    P_INT("id", TKD_F_REQUIRED, 1, UINT64_MAX, "tickable id"), P_BOOL("enabled", 0, NULL),
    P_BOOL("when_paused", 0, NULL),
    {.name = "tick_type", .type = TKD_T_STR, .enums = tick_types, .desc = NULL}, {0}};
static const tkd_field get_result[] = {
    R_INT("id", NULL),
    {.name = "class", .type = TKD_T_STR, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE},
    R_STR("tick_type", NULL), R_BOOL("enabled", NULL), R_BOOL("when_paused", NULL),
    R_INT("ticks", NULL),
    {.name = "last_frame", .type = TKD_T_INT, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .hi = UINT64_MAX},
    R_NUM("accum_dt", NULL), R_OBJ("props", NULL), {0}};
static const tkd_field list_result[] = {
    R_ARR("tickables", "each as tickable.get answers"), R_INT("total", NULL),
    O_BOOL("truncated", "the page was cut to fit a reply"), O_INT("next_offset", "with truncated"),
    {0}};

const tkd_method tkd__tickable_methods[] = {
    {"tickable.add", m_tickable_add, add_params, id_result, "add a tickable object", NULL},
    {"tickable.set", m_tickable_set, set_params, tkd__empty_result, "change a tickable", NULL},
    {"tickable.remove", m_tickable_remove, id_params, tkd__empty_result, "remove a tickable",
     NULL},
    {"tickable.get", m_tickable_get, id_params, get_result,
     "a tickable's class, tick type, state and props", NULL},
    {"tickable.list", m_tickable_list, tkd__page_params, list_result,
     "tickables, a page at a time", NULL},
    {0}};
