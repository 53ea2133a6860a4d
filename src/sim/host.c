/*
 * host.c - the plugin host: the services a class gets through tkp_api
 * (tickd/plugin.h), the context of its calls, and the timers it sets.
 * Built-in and plugin classes get exactly these services.
 *
 * Threads: a tick that runs as parallel work (thread-safe classes,
 * any_thread instances; tickd/plugin.h) may run on a worker.  The services
 * that read (state, entity, component, class_of, entity_position,
 * entity_state) touch nothing that changes meanwhile, and log is
 * thread-safe; those that change the world (spawn, timers, prerequisites)
 * or walk the id table with its iteration marks (for_each) are refused while
 * parallel work runs (tk_tick_guard: logged, once per run).
 *
 * Not here: loading plugins (plugin.c), registering classes (sim.c), the
 * tick trampolines (store.c).
 */
#include <stdio.h>
#include <string.h>

#include "sim_int.h"

static const tkp_api host_api;

tkp_ctx tks__ctx(tks_sim *s, const tk_tick_ctx *tc)
{
    tkp_ctx c;
    c.api = &host_api;
    c.host = s;
    c.frame = tc ? tc->frame : tk_world_frame(s->w);
    c.serial = tk_world_serial(s->w);
    c.group = tc ? (int)tc->group : -1;
    c.pause_frame = tc ? tc->pause_frame : false;
    c.thread = tc ? (int)tc->thread : 0;
    return c;
}

void tks__obj_fini(tks_sim *s, tks_obj *o)
{
    const tks_class *c = tks_obj_class(o);
    if (c->p->destroy && !(s->frame_hooks_off && tks__frame_only(c))) {
        tkp_ctx ctx = tks__ctx(s, NULL);
        c->p->destroy(o, &ctx);
    }
    tks__free_state_props(c, tks_obj_state(o));
}

/* ---- the props given (check, create) ---------------------------------------------- */

/* The props given to a class's check hook. */
struct tkp_props {
    const tks_prop_kv *kv;
    size_t n;
};

int tks__class_check(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, size_t n,
                     const tkp_ctx *ctx, char *why, size_t len)
{
    tkp_props pr = {kv, n};
    tkp_ctx own = ctx ? *ctx : tks__ctx(s, NULL);
    return c->p->check(&pr, &own, why, len);
}

static const tks_value *prop_find(const tkp_props *p, const char *key)
{
    for (size_t i = 0; p && i < p->n; i++)
        if (strcmp(p->kv[i].key, key) == 0)
            return &p->kv[i].v;
    return NULL;
}

static bool api_prop_has(const tkp_props *p, const char *key) { return prop_find(p, key) != NULL; }

static int api_prop_number(const tkp_props *p, const char *key, double *out)
{
    const tks_value *v = prop_find(p, key);
    if (!v || v->type != TKS_V_NUMBER)
        return -1;
    *out = v->num;
    return 0;
}

static int api_prop_bool(const tkp_props *p, const char *key, bool *out)
{
    const tks_value *v = prop_find(p, key);
    if (!v || v->type != TKS_V_BOOL)
        return -1;
    *out = v->b;
    return 0;
}

static int api_prop_string(const tkp_props *p, const char *key, const char **out)
{
    const tks_value *v = prop_find(p, key);
    if (v && v->type == TKS_V_STRING) {
        *out = v->str;
        return 0;
    }
    if (v && v->type == TKS_V_SPAWN && v->self && !v->spawn) {
        *out = "self"; /* the JSON string "self", read as a spawn's */
        return 0;
    }
    return -1;
}

static int api_prop_ids(const tkp_props *p, const char *key, const tkp_id **ids, size_t *n)
{
    const tks_value *v = prop_find(p, key);
    if (!v || v->type != TKS_V_IDS)
        return -1;
    *ids = v->ids;
    *n = v->n_ids;
    return 0;
}

/* ---- instances ---------------------------------------------------------------------- */

static void *api_state(tkp_obj *o) { return tks_obj_state(o); }
static tkp_id api_entity(const tkp_obj *o) { return o->comp == -2 ? 0 : o->id; }
static int api_component(const tkp_obj *o) { return o->comp; }
static const tkp_class *api_class_of(const tkp_obj *o) { return tks_obj_class(o)->p; }

/* ---- other entities -------------------------------------------------------------------- */

static bool api_entity_position(const tkp_ctx *c, tkp_id id, double out[3])
{
    return tks__entity_pos(c->host, id, out);
}

static void *api_entity_state(const tkp_ctx *c, tkp_id id, const tkp_class *cls)
{
    tks_obj *e = tks__entity(c->host, id);
    if (!e || (cls && tks_obj_class(e)->p != cls))
        return NULL;
    return tks_row_state(e);
}

static void api_for_each(const tkp_ctx *c, const tkp_class *cls, void (*fn)(void *, tkp_obj *),
                         void *ud)
{
    tks_sim *s = c->host;
    if (tk_tick_guard(s->w, "for_each"))
        return;
    tks_iter it;
    tks__iter_begin(s, &it);
    for (tks_obj *e; (e = tks__iter_next(s, &it));) {
        tks_id id = e->id;
        if (tks_obj_class(e)->p == cls)
            fn(ud, e);
        /* fn may have destroyed the entity. */
        e = tks__entity(s, id);
        for (size_t j = 0; e && j < tks__n_comps(s, e); j++) {
            tks_obj *o = tks__comp(s, e, (int)j);
            if (tks_obj_class(o)->p == cls)
                fn(ud, o);
            e = tks__entity(s, id);
        }
    }
    tks__iter_end(s, &it);
    for (size_t i = 0; i < s->n_tickables; i++) {
        tk_tickable_info info;
        if (tk_tickable_get(s->w, s->tickables[i], &info) != 0 || !info.ud)
            continue;
        tks_tickable *t = info.ud;
        if (t->cls->p == cls)
            fn(ud, &t->obj);
    }
}

static int api_prerequisite(const tkp_ctx *c, tkp_obj *o, tkp_id target, bool add)
{
    tks_sim *s = c->host;
    if (tk_tick_guard(s->w, add ? "add_prerequisite" : "remove_prerequisite"))
        return -1;
    tks_obj *t = tks__entity(s, target);
    if (!o->tslot || !t || !t->tslot || t->tslot == o->tslot)
        return -1;
    tk_tick_id ot = tks_obj_tick(s, o), tt = tks_obj_tick(s, t);
    int rc = add ? tk_tick_add_prerequisite(s->w, ot, tt) : tk_tick_remove_prerequisite(s->w, ot, tt);
    return rc ? -1 : 0;
}

static int api_add_prerequisite(const tkp_ctx *c, tkp_obj *o, tkp_id target)
{
    return api_prerequisite(c, o, target, true);
}

static int api_remove_prerequisite(const tkp_ctx *c, tkp_obj *o, tkp_id target)
{
    return api_prerequisite(c, o, target, false);
}

/* ---- actions ------------------------------------------------------------------------------ */

static int api_spawn(const tkp_ctx *c, tkp_obj *o, const tkp_spawn_ref *ref, char *err,
                     size_t errlen)
{
    tks_sim *s = c->host;
    if (tk_tick_guard(s->w, "spawn")) {
        if (err && errlen)
            snprintf(err, errlen, "refused: a tick running in parallel may not spawn");
        return -1;
    }
    char e[TKS_ERR_MAX] = "";
    tks_id first;
    int rc = ref->self   ? tks__spawn_self(s, o, e)
             : ref->tmpl ? tks_spawn(s, tks__tmpl_req(ref->tmpl), &first, e)
                         : (snprintf(e, sizeof e, "nothing to spawn"), TK_EINVAL);
    if (rc && err && errlen)
        snprintf(err, errlen, "%s", e);
    return rc ? -1 : 0;
}

/* A class's timer: it finds its instance when it fires (the row may have
 * moved since it was set; the timer is cleared with its owner). */
typedef struct plugin_timer {
    tks_sim *s;
    void (*fn)(void *ud, tkp_obj *o, const tkp_ctx *c);
    void *ud;
    tks_id id;         /* owning entity; 0 for a tickable      */
    int comp;          /* -1 actor, >= 0 component              */
    tks_obj *tickable; /* a tickable (never moves)              */
} plugin_timer;

static void plugin_timer_fire(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)h;
    (void)w;
    plugin_timer *pt = ud;
    tks_obj *o = pt->tickable;
    if (!o) {
        o = tks__entity(pt->s, pt->id);
        if (o && pt->comp >= 0)
            o = tks__comp(pt->s, o, pt->comp);
    }
    TKS_ALWAYS(o != NULL);
    tkp_ctx c = tks__ctx(pt->s, NULL);
    pt->fn(pt->ud, o, &c);
}

static uint64_t api_timer_set(const tkp_ctx *c, tkp_obj *o, double rate, bool loop,
                              void (*fn)(void *ud, tkp_obj *o, const tkp_ctx *c), void *ud)
{
    tks_sim *s = c->host;
    if (!fn || !o || tk_tick_guard(s->w, "timer_set"))
        return 0;
    plugin_timer *pt = tk_malloc(sizeof *pt);
    *pt = (plugin_timer){s, fn, ud, o->id, o->comp, o->comp == -2 ? o : NULL};
    tk_timer_desc td = {0};
    td.rate = rate;
    td.loop = loop;
    td.first_delay = -1;
    td.fn = plugin_timer_fire;
    td.ud = pt;
    td.free_ud = tk_free;
    td.owner = o->comp == -2 ? tickable_owner(tickable_of(o)->id) : o->id;
    tk_timer_handle h;
    if (tk_timer_set(s->w, &td, &h) != 0) {
        tk_free(pt);
        return 0;
    }
    return h;
}

static void api_timer_clear(const tkp_ctx *c, uint64_t handle)
{
    tks_sim *s = c->host;
    if (tk_tick_guard(s->w, "timer_clear"))
        return;
    tk_timer_clear(s->w, handle);
}

static void api_log(const tkp_ctx *c, int level, const char *msg)
{
    (void)c;
    if (level < 0)
        level = 0;
    if (level > 3)
        level = 3;
    tk_log((tk_log_level)level, "%s", msg);
}

static const tkp_api host_api = {
    .abi = TICKD_PLUGIN_ABI,
    .prop_has = api_prop_has,
    .prop_number = api_prop_number,
    .prop_bool = api_prop_bool,
    .prop_string = api_prop_string,
    .prop_ids = api_prop_ids,
    .state = api_state,
    .entity = api_entity,
    .component = api_component,
    .class_of = api_class_of,
    .entity_position = api_entity_position,
    .entity_state = api_entity_state,
    .for_each = api_for_each,
    .add_prerequisite = api_add_prerequisite,
    .remove_prerequisite = api_remove_prerequisite,
    .spawn = api_spawn,
    .timer_set = api_timer_set,
    .timer_clear = api_timer_clear,
    .log = api_log,
};

const tkp_api *tks_api(void) { return &host_api; }
