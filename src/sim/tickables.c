/*
 * tickables.c - tickable objects made of entity classes (world.add_tickable):
 * each is one allocation, its tkp_obj header followed by its class state,
 * ticked by the core's tickables pass.  Unlike actors and components they do
 * not live in the class stores: there are few of them and the core keeps
 * their address as user data, so they never move.
 */
#include "sim_int.h"

void tks__remember_tickable(tks_sim *s, tk_tickable_id id)
{
    /* Compact out the ones already removed before growing. */
    if (s->n_tickables == s->cap_tickables) {
        size_t k = 0;
        for (size_t i = 0; i < s->n_tickables; i++) {
            tk_tickable_info info;
            if (tk_tickable_get(s->w, s->tickables[i], &info) == 0)
                s->tickables[k++] = s->tickables[i];
        }
        s->n_tickables = k;
        if (k * 2 >= s->cap_tickables) {
            s->cap_tickables = s->cap_tickables ? s->cap_tickables * 2 : 16;
            s->tickables = tk_realloc(s->tickables, s->cap_tickables * sizeof *s->tickables);
        }
    }
    s->tickables[s->n_tickables++] = id;
}

void tks__tickable_tick(void *ud, float dt, tk_world_t *w)
{
    tks_tickable *t = ud;
    tkp_ctx c = tks__ctx(tks_of_world(w), NULL);
    t->cls->p->tick(&t->obj, dt, &c);
}

void tks__tickable_free(void *ud)
{
    tks_tickable *t = ud;
    tks__obj_fini(t->sim, &t->obj);
    if (t->id)
        tk_timer_clear_owner(t->sim->w, tickable_owner(t->id));
    tk_free(t);
}

static tks_tickable *tickable_new(tks_sim *s, const tks_class *c, const tks_prop_kv *props,
                                  size_t n_props)
{
    tks_tickable *t = tk_calloc(1, sizeof *t + c->p->state_size);
    t->obj.tslot = 0;
    t->obj.comp = -2;
    t->cls = c;
    t->sim = s;
    tks__set_default_props(c, t->state);
    tks__apply_props(s, c, t->state, props, n_props);
    return t;
}

/* The core refused it: never created, so no destroy hook. */
static void tickable_discard(tks_tickable *t)
{
    tks__free_state_props(t->cls, t->state);
    tk_free(t);
}

/* Registered under `id`: the create hook runs now, so that the timers it sets
 * are owned by the tickable. */
static void tickable_created(tks_sim *s, tks_tickable *t, tk_tickable_id id)
{
    t->id = id;
    tks__remember_tickable(s, id);
    if (t->cls->p->create && s->defer_creates && tks__frame_only(t->cls)) {
        /* Built aside: on the frame thread, once live (tks_run_deferred_creates). */
        if (s->n_later_tb == s->cap_later_tb) {
            s->cap_later_tb = s->cap_later_tb ? s->cap_later_tb * 2 : 16;
            s->later_tb = tk_realloc(s->later_tb, s->cap_later_tb * sizeof *s->later_tb);
        }
        s->later_tb[s->n_later_tb++] = id;
    } else if (t->cls->p->create) {
        tkp_ctx ctx = tks__ctx(s, NULL);
        t->cls->p->create(&t->obj, &ctx);
    }
}

int tks_tickable_add(tks_sim *s, const char *cls, tk_tickable_type type, bool when_paused,
                     const tks_prop_kv *props, size_t n_props, tk_tickable_id *out,
                     char err[TKS_ERR_MAX])
{
    const tks_class *c = tks_class_find(s, cls);
    if (!c)
        return tks__errf(err, TK_EINVAL, "class: unknown class '%s'", cls ? cls : "");
    int rc = tks__check_props(s, c, props, n_props, "props", 0, &tks__live_mode, err);
    if (rc)
        return rc;
    tks_tickable *t = tickable_new(s, c, props, n_props);
    tk_tickable_desc d = {0};
    d.type = type;
    d.enabled = true;
    d.when_paused = when_paused;
    d.fn = tks__tickable_tick;
    d.ud = t;
    d.free_ud = tks__tickable_free;
    tk_tickable_id id;
    rc = tk_tickable_add(s->w, &d, &id);
    if (rc) {
        tickable_discard(t);
        return tks__errf(err, rc, "%s", tk_world_last_error(s->w));
    }
    tickable_created(s, t, id);
    *out = t->id;
    return 0;
}

int tks_tickable_restore(tks_sim *s, const char *cls, const tk_tickable_desc *desc,
                         const tks_prop_kv *props, size_t n_props, tk_tickable_id id,
                         uint64_t ticks, uint64_t last_frame, double accum_dt,
                         char err[TKS_ERR_MAX])
{
    const tks_class *c = tks_class_find(s, cls);
    if (!c)
        return tks__errf(err, TK_EINVAL, "class: unknown class '%s'", cls ? cls : "");
    int rc = tks__check_props(s, c, props, n_props, "props", 0, &tks__restored_mode, err);
    if (rc)
        return rc;
    tks_tickable *t = tickable_new(s, c, props, n_props);
    tk_tickable_desc d = *desc;
    d.fn = tks__tickable_tick;
    d.ud = t;
    d.free_ud = tks__tickable_free;
    rc = tk_tickable_restore(s->w, &d, id, ticks, last_frame, accum_dt);
    if (rc) {
        tickable_discard(t);
        return tks__errf(err, rc, "%s", tk_world_last_error(s->w));
    }
    tickable_created(s, t, id);
    return 0;
}

const tks_class *tks_tickable_class(const tks_sim *s, tk_tickable_id id)
{
    tk_tickable_info info;
    if (tk_tickable_get(s->w, id, &info) != 0 || !info.ud)
        return NULL;
    return ((tks_tickable *)info.ud)->cls;
}

void tks_tickable_props(const tks_sim *s, tk_tickable_id id, tks_prop_visit_fn fn, void *ud)
{
    tk_tickable_info info;
    if (tk_tickable_get(s->w, id, &info) != 0 || !info.ud)
        return;
    tks_tickable *t = info.ud;
    tks__visit_props(t->cls, t->state, fn, ud);
}
