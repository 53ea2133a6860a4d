/*
 * m_world.c - world.*: status, pause, steps, time dilation, trace, save and load.
 */
#include <stdio.h>
#include <string.h>

#include "hash.h"
#include "methods_int.h"
#include "replay.h"

static void m_world_step_stop(req *r)
{
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

static void m_world_status(req *r)
{
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

static void m_world_pause(req *r)
{
    tk_world_set_paused(r->d->world, true);
    paused_result(r);
}

static void m_world_unpause(req *r)
{
    tk_world_set_paused(r->d->world, false);
    paused_result(r);
}

static void m_world_step(req *r)
{
    uint64_t n = arg(r, "frames")->u;
    tkd *d = r->d;
    if (d->replay && r->call) {
        /* tickd --replay serving: the next n recorded frames. */
        tkd_replay_step_request(d, r->call, n);
        defer(r);
        return;
    }
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

static void m_world_set_time_dilation(req *r)
{
    double v = arg(r, "value")->num;
    double applied;
    tk_world_set_time_dilation(r->d->world, v, &applied);
    json_t *o = json_object();
    json_object_set_new(o, "value", json_real(applied));
    ok(r, o);
}

/* world.trace and engine.profile live in profile.c. */
static void m_world_trace(req *r)
{
    r->answered = true;
    tkd_prof_world_trace(r->d, r->call, r->params);
}

static void snapshot_method(req *r, bool save)
{
    const char *path = arg(r, "path")->str;
    if (r->d->offline)
        path = NULL; /* never a path from the input */
    char err[TKD_ERR_MAX];
    json_t *info = NULL;
    int rc;
    if (save && r->d->replay) {
        /* A timer action of the run being replayed: no file is written. */
        ok(r, json_object());
        return;
    }
    if (save && !r->d->offline) {
        /* Written by a child process; answered when it is done (deferred
         * first: the save may hold the client until it starts). */
        defer(r);
        rc = tkd_snapshot_save_bg(r->d, path, r->call, "world.save", err, sizeof err);
        if (rc)
            fail(r, rc, "%s", err);
        return;
    }
    if (!save && !r->d->offline && r->client) {
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

static void m_world_hash(req *r)
{
    uint8_t h[TKD_HASH_BYTES], sec[TKD_HASH_SECTIONS][TKD_HASH_BYTES];
    char hex[TKD_HASH_HEX];
    tkd_world_hash_sections(r->d, h, sec);
    tkd_hash_hex(h, hex);
    json_t *o = json_object();
    json_object_set_new(o, "hash", json_string(hex));
    json_t *so = json_object();
    for (int i = 0; i < TKD_HASH_SECTIONS; i++) {
        tkd_hash_hex(sec[i], hex);
        json_object_set_new(so, tkd_hash_section_names[i], json_string(hex));
    }
    json_object_set_new(o, "sections", so);
    json_object_set_new(o, "frame", jid(tk_world_frames_done(r->d->world)));
    ok(r, o);
}

static void m_world_save(req *r) { snapshot_method(r, true); }
static void m_world_load(req *r) { snapshot_method(r, false); }

/* ---- the table ------------------------------------------------------------------- */

static const tkd_field status_result[] = {
    R_INT("frame", NULL), R_NUM("world_time", "s, dilated, not while paused"),
    R_NUM("real_time", "s"), R_NUM("unpaused_time", "s"), R_BOOL("paused", NULL),
    R_NUM("time_dilation", NULL), R_ARR("levels", "level names"), R_INT("entities", NULL),
    R_INT("steps_pending", "frames world.step still has to run"), {0}};
static const tkd_field paused_fields[] = {R_BOOL("paused", NULL), {0}};

static const tkd_field step_params[] = {
    P_INT("frames", TKD_F_REQUIRED, 1, 1000000000, "frames to run as if unpaused"), {0}};
static const tkd_field step_result[] = {
    R_INT("frame", "the frame after the last step"),
    O_INT("frames", "world.step_stop: the frames that ran"),
    O_BOOL("stopped", "true: world.step_stop ended it"), {0}};

static const tkd_field dilation_params[] = {
    P_NUM("value", TKD_F_REQUIRED, -HUGE_VAL, HUGE_VAL,
          "time dilation; the world clamps it to [0.0001, 20]"),
    {0}};
static const tkd_field dilation_result[] = {R_NUM("value", "the dilation applied"), {0}};

static const tkd_field trace_params[] = {
    P_INT("frames", TKD_F_REQUIRED, 1, TRACE_MAX_FRAMES, "frames to trace"), {0}};
static const tkd_field trace_result[] = {
    R_ARR("frames", "per frame: frame, start, ms, dur, ticks (start, dur), spans"),
    R_BOOL("truncated", "the trace reached its size limit"), {0}};

static const tkd_field hash_result[] = {
    R_STR("hash", "32 hex digits: SipHash-1-3-128 of the world in a canonical order"),
    R_INT("frame", "frames completed when it was taken"),
    R_OBJ("sections", "the digest of each part: time, counters, levels, entities, timers, "
                      "tickables (the whole hashes these in this order)"),
    {0}};

static const tkd_field snapshot_params[] = {
    P_STR("path", 0, "the file, in [snapshot] dir (absent: [snapshot] path)"), {0}};
static const tkd_field snapshot_result[] = {
    R_STR("path", NULL), R_INT("bytes", NULL), R_INT("entities", NULL), R_INT("timers", NULL),
    R_INT("tickables", NULL), {0}};
static const tkd_field save_result[] = {
    R_STR("path", NULL), R_INT("bytes", NULL), R_INT("entities", NULL), R_INT("timers", NULL),
    R_INT("tickables", NULL),
    O_NUM("copy_ms", "frame thread's time copying the class states before the fork"),
    O_NUM("fork_ms", "frame thread's time in fork()"),
    O_INT("copied_bytes", "bytes of class states copied before the fork"), {0}};

const tkd_method tkd__world_methods[] = {
    {"world.status", m_world_status, tkd__no_params, status_result,
     "frame, world, real and unpaused time, paused, dilation, levels", NULL},
    {"world.pause", m_world_pause, tkd__no_params, paused_fields,
     "pause the world (only even_when_paused ticks run)", NULL},
    {"world.unpause", m_world_unpause, tkd__no_params, paused_fields, "resume the world", NULL},
    {"world.step", m_world_step, step_params, step_result,
     "run frames as if unpaused; the world must be paused", "Answered later."},
    {"world.step_stop", m_world_step_stop, tkd__no_params, paused_fields + 1,
     "drop pending steps (waiting world.step calls answer what ran, stopped: true)", NULL},
    {"world.set_time_dilation", m_world_set_time_dilation, dilation_params, dilation_result,
     "set the world's time dilation", NULL},
    {"world.trace", m_world_trace, trace_params, trace_result,
     "tick functions and spans of the next frames", "Answered later."},
    {"world.save", m_world_save, snapshot_params, save_result, "write a snapshot",
     "Written by a child process; answered when done."},
    {"world.load", m_world_load, snapshot_params, snapshot_result,
     "replace the world by a snapshot", "Read aside, applied at a frame boundary."},
    {"world.hash", m_world_hash, tkd__no_params, hash_result,
     "a digest of the whole world, independent of memory layout",
     "Time, levels, entities with props and tick state, timers, tickables and counters, "
     "in a canonical order (README: world.hash). Equal for a world and the world restored "
     "from its snapshot; the journal records it every [journal] hash_every frames."},
    {0}};
