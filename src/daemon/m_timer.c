/*
 * m_timer.c - timer.*: protocol timers whose action is a method call.
 */
#include <stdio.h>
#include <string.h>

#include "methods_int.h"

/* ---- timers -------------------------------------------------------------------------- */

typedef struct timer_action {
    tkd *d;
    json_t *action; /* {"method", "params"?} or NULL */
} timer_action;

static void action_free(void *ud)
{
    timer_action *ta = ud;
    json_decref(ta->action);
    tk_free(ta);
}

static void action_fire(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)h;
    (void)w;
    timer_action *ta = ud;
    if (!ta->action)
        return;
    tkd *d = ta->d;
    d->action_runs++;
    /* The action may clear this timer (freeing `ta`): hold the JSON. */
    json_t *act = json_incref(ta->action);
    const char *method = json_string_value(json_object_get(act, "method"));
    uint64_t t0 = tkd_prof_active(d->prof) ? tk_clock_now_ns() : 0;
    tkd_exec(d, NULL, method, json_object_get(act, "params"));
    if (t0)
        tkd_prof_timer_action(d, method, t0, tk_clock_now_ns() - t0);
    json_decref(act);
}

static const char *const forbidden_actions[] = {"world.load", "events.subscribe",
                                                "events.unsubscribe", "engine.profile",
                                                "world.trace", NULL};

int tkd_action_check(const json_t *a, char *why, size_t len)
{
    if (!json_is_object(a)) {
        snprintf(why, len, ": must be an object {\"method\", \"params\"?}");
        return -1;
    }
    static const char *const ak[] = {"method", "params", NULL};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v) {
        bool okk = false;
        for (size_t i = 0; ak[i] && !okk; i++)
            okk = !strcmp(ak[i], k);
        if (!okk) {
            snprintf(why, len, ".%s: unknown parameter", k);
            return -1;
        }
    }
    json_t *m = json_object_get(a, "method");
    if (!json_is_string(m)) {
        snprintf(why, len, ".method: required (a string)");
        return -1;
    }
    if (!tkd_method_exists(json_string_value(m))) {
        snprintf(why, len, ".method: unknown method '%s'", json_string_value(m));
        return -1;
    }
    for (size_t i = 0; forbidden_actions[i]; i++) {
        if (!strcmp(json_string_value(m), forbidden_actions[i])) {
            snprintf(why, len, ".method: %s cannot be a timer action", forbidden_actions[i]);
            return -1;
        }
    }
    json_t *p = json_object_get(a, "params");
    if (p && !json_is_object(p)) {
        snprintf(why, len, ".params: must be an object");
        return -1;
    }
    return 0;
}

/* Read an optional action; NULL-safe. Returns -1 after answering. */
static int read_action(req *r, json_t **out)
{
    *out = NULL;
    json_t *a = json_object_get(r->params, "action");
    if (!a)
        return 0;
    char why[TKD_ERR_MAX];
    if (tkd_action_check(a, why, sizeof why) != 0) {
        fail(r, -32602, "action%s", why);
        return -1;
    }
    *out = json_deep_copy(a);
    return 1;
}

json_t *tkd_timer_action(tkd *d, tk_timer_handle h)
{
    tk_timer_info i;
    if (tk_timer_get(d->world, h, &i) != 0 || i.owner != 0 || !i.ud)
        return NULL;
    const timer_action *ta = i.ud;
    return ta->action ? json_incref(ta->action) : NULL;
}

int tkd_timer_restore(tkd *d, tk_world_t *w, tk_timer_handle h, double rate, bool loop,
                      tk_timer_status status, double remaining, uint64_t fired,
                      const json_t *action)
{
    timer_action *ta = tk_calloc(1, sizeof *ta);
    ta->d = d;
    ta->action = action ? json_deep_copy(action) : NULL;
    tk_timer_desc td = {0};
    td.rate = rate;
    td.loop = loop;
    td.first_delay = -1;
    td.fn = action_fire;
    td.ud = ta;
    td.free_ud = action_free;
    int rc = tk_timer_restore(w, &td, h, status, remaining, fired);
    if (rc)
        action_free(ta);
    return rc;
}

static json_t *timer_json(tkd *d, tk_timer_handle h)
{
    tk_timer_info i;
    if (tk_timer_get(d->world, h, &i) != 0)
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "handle", jid(h));
    json_object_set_new(o, "status", json_string(tk_timer_status_name(i.status)));
    json_object_set_new(o, "rate", json_real(i.rate));
    json_object_set_new(o, "loop", json_boolean(i.loop));
    json_object_set_new(o, "elapsed", json_real(i.elapsed));
    json_object_set_new(o, "remaining", json_real(i.remaining));
    json_object_set_new(o, "fired", jid(i.fired));
    if (i.owner & TKS_OWNER_TICKABLE)
        json_object_set_new(o, "tickable", jid(i.owner & ~TKS_OWNER_TICKABLE));
    else if (i.owner)
        json_object_set_new(o, "owner", jid(i.owner));
    const timer_action *ta = i.ud;
    if (ta && i.owner == 0 && ta->action)
        json_object_set_new(o, "action", json_incref(ta->action));
    return o;
}

static void set_timer(req *r, bool next_tick)
{
    tk_timer_desc td = {0};
    td.first_delay = -1;
    if (!next_tick) {
        td.rate = arg(r, "rate")->num;
        td.loop = arg(r, "loop")->b;
        td.first_delay = arg(r, "first_delay")->num;
    }
    json_t *action;
    if (read_action(r, &action) < 0)
        return;
    timer_action *ta = tk_calloc(1, sizeof *ta);
    ta->d = r->d;
    ta->action = action;
    td.fn = action_fire;
    td.ud = ta;
    td.free_ud = action_free;
    tk_timer_handle h;
    int rc = next_tick ? tk_timer_set_for_next_tick(r->d->world, &td, &h)
                       : tk_timer_set(r->d->world, &td, &h);
    if (rc) {
        action_free(ta);
        {
            fail_tk(r, rc, tk_world_last_error(r->d->world));
            return;
        }
    }
    json_t *o = json_object();
    json_object_set_new(o, "handle", jid(h));
    ok(r, o);
}

static void m_timer_set(req *r) { set_timer(r, false); }
static void m_timer_set_for_next_tick(req *r) { set_timer(r, true); }

static bool read_handle(req *r, tk_timer_handle *h)
{
    uint64_t v = arg(r, "handle")->u;
    if (!tk_timer_exists(r->d->world, v)) {
        fail(r, -32001, "handle: no such timer (unknown, cleared or finished)");
        return false;
    }
    *h = v;
    return true;
}

static void m_timer_op(req *r, int (*op)(tk_world_t *, tk_timer_handle))
{
    tk_timer_handle h;
    if (!read_handle(r, &h))
        return;
    int rc = op(r->d->world, h);
    if (rc) {
        fail_tk(r, rc, tk_world_last_error(r->d->world));
        return;
    }
    ok(r, json_object());
}

static void m_timer_clear(req *r) { m_timer_op(r, tk_timer_clear); }
static void m_timer_pause(req *r) { m_timer_op(r, tk_timer_pause); }
static void m_timer_unpause(req *r) { m_timer_op(r, tk_timer_unpause); }

static void m_timer_get(req *r)
{
    tk_timer_handle h;
    if (!read_handle(r, &h))
        return;
    ok(r, timer_json(r->d, h));
}

static void m_timer_list(req *r)
{
    tk_timer_counts tm;
    tk_timer_get_counts(r->d->world, &tm);
    list_reply(r, "timers", tk_timer_next, timer_json, tm.active + tm.paused + tm.pending);
}

/* ---- the table ------------------------------------------------------------------- */

static const tkd_field action_fields[] = {
    P_STR("method", TKD_F_REQUIRED, "a method (not world.load, events.*, engine.profile, "
                                    "world.trace)"),
    P_OBJ("params", 0, "its params"), {0}};
#define P_ACTION                                                                                  \
    {.name = "action", .type = TKD_T_OBJ, .fields = action_fields, .ref = "action",             \
     .desc = "the call to run when the timer fires (absent: none)"}

static const tkd_field set_params[] = {
    P_NUM("rate", TKD_F_REQUIRED, TKD_TIMER_MIN_RATE, 1e9, "period, s"),
    {.name = "loop", .type = TKD_T_BOOL, .flags = TKD_F_DEFAULT, .def = 0,
     .desc = "run every rate seconds (a late one catches up once per period)"},
    {.name = "first_delay", .type = TKD_T_NUM, .flags = TKD_F_DEFAULT, .min = -HUGE_VAL, .max = 1e9,
     .def = -1, .desc = "s before the first run (negative: rate)"},
    P_ACTION, {0}};
static const tkd_field next_tick_params[] = {P_ACTION, {0}};
static const tkd_field handle_result[] = {R_INT("handle", "below 2^53"), {0}};
static const tkd_field handle_params[] = {
    P_INT("handle", TKD_F_REQUIRED, 1, UINT64_MAX, "timer handle"), {0}};
static const tkd_field get_result[] = {
    R_INT("handle", NULL), R_STR("status", "active, paused, pending or ..."),
    R_NUM("rate", "s"), R_BOOL("loop", NULL), R_NUM("elapsed", "s"), R_NUM("remaining", "s"),
    R_INT("fired", NULL), O_INT("tickable", "owner: a tickable's id"),
    O_INT("owner", "owner: an entity id"), O_OBJ("action", "{method, params?}"), {0}};
static const tkd_field list_result[] = {
    R_ARR("timers", "each as timer.get answers"), R_INT("total", NULL),
    O_BOOL("truncated", "the page was cut to fit a reply"), O_INT("next_offset", "with truncated"),
    {0}};

const tkd_method tkd__timer_methods[] = {
    {"timer.set", m_timer_set, set_params, handle_result,
     "start a timer running an action", NULL},
    {"timer.set_for_next_tick", m_timer_set_for_next_tick, next_tick_params, handle_result,
     "run an action on the next frame", NULL},
    {"timer.clear", m_timer_clear, handle_params, tkd__empty_result, "cancel a timer", NULL},
    {"timer.pause", m_timer_pause, handle_params, tkd__empty_result, "pause a timer", NULL},
    {"timer.unpause", m_timer_unpause, handle_params, tkd__empty_result, "resume a paused timer",
     NULL},
    {"timer.get", m_timer_get, handle_params, get_result, "a timer's status, rate and counters",
     NULL},
    {"timer.list", m_timer_list, tkd__page_params, list_result, "timers, a page at a time", NULL},
    {0}};
