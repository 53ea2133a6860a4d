/*
 * m_world.c - world.*: status, pause, steps, time dilation, trace, save and load.
 */
#include <stdio.h>
#include <string.h>

#include "methods_int.h"

void m_world_step_stop(req *r)
{
    NOKEYS();
    tkd *d = r->d;
    /* Answer the waiters first: what each ran is read off the queue. */
    size_t n = stop_waiters(d, W_STEP);
    uint64_t dropped = tk_world_step_stop(d->world);
    if (n || dropped)
        tk_log_info("world.step_stop: %llu pending step%s dropped",
                    (unsigned long long)dropped, dropped == 1 ? "" : "s");
    ok(r, json_object());
}

/* ---- world ------------------------------------------------------------------------ */

static json_t *levels_names(tkd *d)
{
    json_t *a = json_array();
    for (size_t i = 0; i < tk_level_count(d->world); i++)
        json_array_append_new(a, json_string(tk_level_name(d->world, tk_level_at(d->world, i))));
    return a;
}

void m_world_status(req *r)
{
    NOKEYS();
    tkd *d = r->d;
    tk_world_time t;
    tk_world_get_time(d->world, &t);
    json_t *o = json_object();
    json_object_set_new(o, "frame", jid(t.frame));
    json_object_set_new(o, "world_time", json_real(t.world_time));
    json_object_set_new(o, "real_time", json_real(t.real_time));
    json_object_set_new(o, "unpaused_time", json_real(t.unpaused_time));
    json_object_set_new(o, "paused", json_boolean(t.paused));
    json_object_set_new(o, "time_dilation", json_real(t.time_dilation));
    json_object_set_new(o, "levels", levels_names(d));
    json_object_set_new(o, "entities", jid(tks_entity_count(d->sim)));
    json_object_set_new(o, "steps_pending", jid(tk_world_steps_pending(d->world)));
    ok(r, o);
}

static void paused_result(req *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "paused", json_boolean(tk_world_paused(r->d->world)));
    ok(r, o);
}

void m_world_pause(req *r)
{
    NOKEYS();
    tk_world_set_paused(r->d->world, true);
    paused_result(r);
}

void m_world_unpause(req *r)
{
    NOKEYS();
    tk_world_set_paused(r->d->world, false);
    paused_result(r);
}

void m_world_step(req *r)
{
    KEYS("frames");
    tkd_perr pe;
    uint64_t n = 1;
    int rc = tkd_p_u64(r->params, "frames", "", 1, 1000000000ull, &n, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "frames: required");
        return;
    }
    tkd *d = r->d;
    if (!tk_world_paused(d->world)) {
        fail(r, -32002, "the world is not paused (world.pause first)");
        return;
    }
    uint64_t before = tk_world_steps_pending(d->world);
    tk_world_step(d->world, n);
    tkd_waiter *w = tk_calloc(1, sizeof *w);
    w->kind = W_STEP;
    w->call = r->call;
    w->steps_before = before;
    w->frames = n;
    add_waiter(d, w);
    defer(r);
}

void m_world_set_time_dilation(req *r)
{
    KEYS("value");
    tkd_perr pe;
    double v;
    int rc = tkd_p_num(r->params, "value", "", -1e300, 1e300, &v, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "value: required");
        return;
    }
    double applied;
    tk_world_set_time_dilation(r->d->world, v, &applied);
    json_t *o = json_object();
    json_object_set_new(o, "value", json_real(applied));
    ok(r, o);
}

/* world.trace and engine.profile live in profile.c. */
void m_world_trace(req *r)
{
    r->answered = true;
    tkd_prof_world_trace(r->d, r->call, r->params);
}

static void snapshot_method(req *r, bool save)
{
    KEYS("path");
    tkd_perr pe;
    const char *path = NULL;
    READ(tkd_p_str(r->params, "path", "", &path, &pe));
    if (r->d->offline)
        path = NULL; /* never a path from the input */
    char err[TKD_ERR_MAX];
    json_t *info = NULL;
    int rc;
    if (save && !r->d->offline) {
        /* Written by a child process; answered when it is done. */
        rc = tkd_snapshot_save_bg(r->d, path, r->call, "world.save", err, sizeof err);
        if (rc)
            fail(r, rc, "%s", err);
        else
            defer(r);
        return;
    }
    if (!save && !r->d->offline && r->call) {
        /* Read and checked on a thread of its own; applied at a frame
         * boundary in its turn among the requests in slices. */
        for (tkd_job *j = r->d->jobs; j; j = j->next)
            if (j->kind == JOB_LOAD) {
                fail(r, -32002, "a world.load of %s is in progress; retry when it has answered",
                     tkd_snapshot_load_path(j->load));
                return;
            }
        tkd_snapload *l = NULL;
        rc = tkd_snapshot_load_start(r->d, path, &l, err, sizeof err);
        if (rc) {
            fail(r, rc, "%s", err);
            return;
        }
        tkd_job *j = tk_calloc(1, sizeof *j);
        j->kind = JOB_LOAD;
        j->load = l;
        job_add(r, j);
        return;
    }
    rc = save ? tkd_snapshot_save(r->d, path, &info, err, sizeof err)
              : tkd_snapshot_load(r->d, path, &info, err, sizeof err);
    if (rc) {
        fail(r, rc, "%s", err);
        return;
    }
    tk_log_info("world.%s: %s (%lld entities)", save ? "save" : "load",
                json_string_value(json_object_get(info, "path")),
                (long long)json_integer_value(json_object_get(info, "entities")));
    ok(r, info);
}

void m_world_save(req *r) { snapshot_method(r, true); }
void m_world_load(req *r) { snapshot_method(r, false); }
