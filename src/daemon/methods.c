/*
 * methods.c - every method of PROTOCOL.md, run on the frame thread at the
 * frame boundary (or from a timer action, mid-frame).
 *
 * A handler reads and checks all of its params first, then changes state:
 * a request that fails validation changes nothing.  "Answered later"
 * methods (world.step, engine.sprint) keep their call in a waiter that the
 * post-frame hook completes; engine.profile and world.trace live in
 * profile.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "params.h"
#include "snapshot.h"

#define LIST_MAX         1000000
#define SPAWN_IDS_MAX    1000

typedef struct req {
    tkd *d;
    tkd_call *call; /* NULL: a timer action */
    const char *method;
    json_t *params; /* borrowed, may be NULL */
    bool answered;
    int code;       /* error code answered with, 0 = none (reqstats) */
} req;

typedef enum { W_STEP, W_SPRINT } waiter_kind;

struct tkd_waiter {
    tkd_waiter *next;
    waiter_kind kind;
    tkd_call *call;        /* NULL: nobody to answer */
    uint64_t steps_before; /* W_STEP: done when pending steps drop to this */
    uint64_t frames_left;  /* W_SPRINT */
    uint64_t frames;       /* asked for */
    uint64_t start_ns;
    tk_frame_stats *fs;
};

/* ---- answering ---------------------------------------------------------------- */

static void ok(req *r, json_t *result)
{
    r->answered = true;
    if (r->call)
        tkd_call_reply(r->call, result);
    else
        json_decref(result);
}

#ifndef TKD_PLUGIN_DIR
#define TKD_PLUGIN_DIR "/usr/local/lib/tickd/plugins"
#endif

/* The classes of the plugins that come with tickd (the sources in plugins/). */
static const struct {
    const char *cls, *file;
} shipped_classes[] = {{"boids", "boids.so"}};

/* An "unknown class 'x'" error says where classes come from: the shipped
 * plugin that has it, or the classes there are. */
static void class_hint(tkd *d, char *msg, size_t cap)
{
    static const char pre[] = "unknown class '";
    const char *p = strstr(msg, pre);
    const char *q = p ? strchr(p + sizeof pre - 1, '\'') : NULL;
    if (!q)
        return;
    p += sizeof pre - 1;
    size_t n = strlen(msg), len = (size_t)(q - p);
    for (size_t i = 0; i < sizeof shipped_classes / sizeof *shipped_classes; i++) {
        if (strlen(shipped_classes[i].cls) == len && !strncmp(p, shipped_classes[i].cls, len)) {
            snprintf(msg + n, cap - n,
                     " (it comes with tickd's plugin %s: add its path, build/plugins/%s in the "
                     "source tree or %s/%s once installed, to [plugins] load and restart)",
                     shipped_classes[i].file, shipped_classes[i].file, TKD_PLUGIN_DIR,
                     shipped_classes[i].file);
            return;
        }
    }
    int w = snprintf(msg + n, cap - n, " (classes:");
    for (size_t i = 0; w > 0 && (size_t)w < cap - n && i < tks_class_count(d->sim); i++)
        w += snprintf(msg + n + w, cap - n - (size_t)w, "%s %s", i ? "," : "",
                      tks_class_name(tks_class_at(d->sim, i)));
    if (w > 0 && (size_t)w < cap - n)
        snprintf(msg + n + w, cap - n - (size_t)w, "; plugins add more: [plugins] load)");
}

static void failv(req *r, int code, const char *fmt, va_list ap)
{
    char msg[TKD_ERR_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (code == -32602)
        class_hint(r->d, msg, sizeof msg);
    r->answered = true;
    r->code = code;
    if (r->call) {
        tkd_call_error(r->call, code, NULL, "%s", msg);
    } else {
        r->d->action_errors++;
        tk_log_warn("timer action %s failed (%d): %s", r->method, code, msg);
    }
}

static void fail(req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(req *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(r, code, fmt, ap);
    va_end(ap);
}

static void fail_p(req *r, const tkd_perr *e) { fail(r, e->code, "%s", e->msg); }

static void fail_tk(req *r, int tk_err, const char *msg)
{
    fail(r, tkd_code_from_tk(tk_err), "%s", msg);
}

static void defer(req *r)
{
    r->answered = true;
    if (r->call)
        tkd_call_defer(r->call);
}

/* Check params' names; on error answer and return false. */
static bool keys(req *r, const char *const *allowed)
{
    tkd_perr e;
    if (tkd_p_keys(r->params, "", allowed, &e)) {
        fail_p(r, &e);
        return false;
    }
    return true;
}

#define KEYS(...)                                                                                  \
    do {                                                                                           \
        static const char *const k_[] = {__VA_ARGS__, NULL};                                       \
        if (!keys(r, k_))                                                                          \
            return;                                                                                \
    } while (0)
#define NOKEYS()                                                                                   \
    do {                                                                                           \
        static const char *const k_[] = {NULL};                                                    \
        if (!keys(r, k_))                                                                          \
            return;                                                                                \
    } while (0)

/* Run a reader; on error answer and return from the handler. */
#define READ(expr)                                                                                 \
    do {                                                                                           \
        if ((expr) < 0) {                                                                          \
            fail_p(r, &pe);                                                                        \
            return;                                                                                \
        }                                                                                          \
    } while (0)

static json_t *jid(uint64_t v) { return json_integer((json_int_t)v); }

/*
 * What one reply may hold: the client's control.max_output less room for
 * the envelope, so a listing is never computed past what could be sent.
 * Timer actions (no client) get the same bound.
 */
static size_t out_budget(req *r)
{
    size_t cap = TKD_SERVER_DEFAULT_MAX_OUTPUT;
    if (r->d->srv) {
        tkd_server_limits l;
        tkd_server_get_limits(r->d->srv, &l);
        cap = l.max_output;
    }
    return cap > 8192 ? cap - 4096 : cap / 2;
}

/* When a listing of rich items (timers, tickables, tick functions) stops
 * computing: [control] request_budget_ms after it started, so that a big
 * page costs the frame loop no more than the requests of one frame.  The
 * first LIST_TIMED items always come: a small page is never cut. */
#define LIST_TIMED 256
static uint64_t list_deadline(req *r)
{
    double ms = r->d->cfg.request_budget_ms > 0 ? r->d->cfg.request_budget_ms : 4;
    return tk_clock_now_ns() + (uint64_t)(ms * 1e6);
}

/* A page cut short: {"truncated": true, "next_offset"} in its result. */
static void page_cut(json_t *o, uint64_t next_offset)
{
    json_object_set_new(o, "truncated", json_true());
    json_object_set_new(o, "next_offset", jid(next_offset));
}

/* Add the encoded size of `item` (and a comma) to *used; false if that
 * passes `budget` (then *used is unchanged). */
static bool fits(size_t *used, size_t budget, const json_t *item)
{
    size_t n = json_dumpb(item, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) + 1;
    if (*used + n > budget)
        return false;
    *used += n;
    return true;
}

/* ---- engine --------------------------------------------------------------------- */

static uint64_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2)
            res = 0;
        fclose(f);
    }
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

static json_t *mspt_json(const tk_mspt *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "mean", json_real(m->mean));
    json_object_set_new(o, "p50", json_real(m->p50));
    json_object_set_new(o, "p95", json_real(m->p95));
    json_object_set_new(o, "p99", json_real(m->p99));
    json_object_set_new(o, "max", json_real(m->max));
    return o;
}

static json_t *ms(uint64_t ns) { return json_real((double)ns / 1e6); }

json_t *tkd_frame_split_json(tkd *d, const tk_frame_info *f)
{
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(d->world, &fs);
    uint64_t other = fs.timers_ns + fs.tickables_ns;
    json_t *o = json_object();
    json_object_set_new(o, "requests", ms(f->requests_ns));
    json_object_set_new(o, "ticks", ms(f->world_ns > other ? f->world_ns - other : 0));
    json_object_set_new(o, "timers", ms(fs.timers_ns));
    json_object_set_new(o, "tickables", ms(fs.tickables_ns));
    json_object_set_new(o, "ticker", ms(f->ticker_ns));
    json_object_set_new(o, "other", ms(f->other_ns));
    return o;
}

json_t *tkd_stats_json(tkd *d)
{
    tk_engine_stats st;
    tk_engine_get_stats(d->engine, &st);
    tk_world_time t;
    tk_world_get_time(d->world, &t);
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(d->world, &fs);
    tk_tick_counts tc;
    tk_tick_get_counts(d->world, &tc);
    tk_timer_counts tm;
    tk_timer_get_counts(d->world, &tm);
    tkd_server_stats ss;
    memset(&ss, 0, sizeof ss);
    if (d->srv)
        tkd_server_get_stats(d->srv, &ss);
    json_t *o = json_object();
    json_object_set_new(o, "frame", jid(st.frame));
    json_object_set_new(o, "world_time", json_real(t.world_time));
    json_object_set_new(o, "real_time", json_real(t.real_time));
    json_object_set_new(o, "target_hz", json_real(st.target_hz));
    json_object_set_new(o, "tps_1s", json_real(st.tps_1s));
    json_object_set_new(o, "tps_10s", json_real(st.tps_10s));
    json_object_set_new(o, "tps_1m", json_real(st.tps_1m));
    json_object_set_new(o, "mspt", mspt_json(&st.mspt));
    json_t *g = json_object();
    for (int i = 0; i < TK_GROUP_COUNT; i++)
        json_object_set_new(g, tk_group_name((tk_group)i), json_real((double)fs.group_ns[i] / 1e6));
    json_object_set_new(o, "groups", g);
    json_object_set_new(o, "start_frame_ms", json_real((double)fs.start_frame_ns / 1e6));
    json_object_set_new(o, "timers_ms", json_real((double)fs.timers_ns / 1e6));
    json_object_set_new(o, "tickables_ms", json_real((double)fs.tickables_ns / 1e6));
    json_object_set_new(o, "ticks_run_last_frame", jid(fs.ticks_run));
    json_object_set_new(o, "overruns", jid(st.overruns));
    json_object_set_new(o, "behind_s", json_real(st.behind_s));
    json_object_set_new(o, "last_frame_ms", ms(st.last.work_ns));
    json_object_set_new(o, "split_ms", tkd_frame_split_json(d, &st.last));
    json_object_set_new(o, "gap_ms", ms(st.last.gap_ns));
    json_object_set_new(o, "gap_max_ms_10s", json_real(st.gap_max_ms_10s));
    json_object_set_new(o, "slow_requests", jid(d->slow_requests));
    json_object_set_new(o, "log_suppressed", jid(tkd_logging_suppressed()));
    json_object_set_new(o, "entities", jid(tks_entity_count(d->sim)));
    json_t *tf = json_object();
    json_object_set_new(tf, "enabled", jid(tc.enabled));
    json_object_set_new(tf, "disabled", jid(tc.disabled));
    json_object_set_new(tf, "cooling_down", jid(tc.cooling_down));
    json_object_set_new(o, "tick_functions", tf);
    json_t *tj = json_object();
    json_object_set_new(tj, "active", jid(tm.active));
    json_object_set_new(tj, "paused", jid(tm.paused));
    json_object_set_new(tj, "pending", jid(tm.pending));
    json_object_set_new(o, "timers", tj);
    json_object_set_new(o, "timer_actions", jid(d->action_runs));
    json_object_set_new(o, "timer_action_errors", jid(d->action_errors));
    json_object_set_new(o, "tickables", jid(tk_tickable_count(d->world)));
    json_object_set_new(o, "clients", jid(ss.clients));
    json_object_set_new(o, "requests", jid(ss.requests));
    json_object_set_new(o, "errors", jid(ss.errors + d->action_errors));
    json_object_set_new(o, "events_dropped", jid(ss.events_dropped));
    json_object_set_new(o, "paused", json_boolean(t.paused));
    json_object_set_new(o, "rss_bytes", jid(rss_bytes()));
    json_object_set_new(o, "methods", tkd_reqstats_json(&d->reqstats, tkd_method_names()));
    return o;
}

static json_t *engine_info_json(tkd *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string("tickd"));
    json_object_set_new(o, "version", json_string(TKD_VERSION));
    json_object_set_new(o, "protocol", json_integer(1));
    json_t *m = json_array();
    for (const char *const *n = tkd_method_names(); *n; n++)
        json_array_append_new(m, json_string(*n));
    json_object_set_new(o, "methods", m);
    json_t *c = json_array();
    for (size_t i = 0; i < tks_class_count(d->sim); i++)
        json_array_append_new(c, json_string(tks_class_name(tks_class_at(d->sim, i))));
    json_object_set_new(o, "classes", c);
    json_object_set_new(o, "pid", json_integer((json_int_t)getpid()));
    json_object_set_new(o, "socket", d->srv ? json_string(tkd_server_path(d->srv)) : json_null());
    json_object_set_new(o, "tick_rate", json_real(tk_engine_tick_rate(d->engine)));
    json_object_set_new(o, "fixed_dt", json_real(tk_engine_fixed_dt(d->engine)));
    json_object_set_new(o, "pacing", json_string(tk_pacing_name(tk_engine_pacing(d->engine))));
    json_object_set_new(o, "config", d->cfg.path ? json_string(d->cfg.path) : json_null());
    return o;
}

/* engine.info is asked for often (tools poll it) and rarely changes: its
 * text is kept and rebuilt only when one of its variable fields changed. */
static void m_engine_info(req *r)
{
    NOKEYS();
    tkd *d = r->d;
    double rate = tk_engine_tick_rate(d->engine), fixed = tk_engine_fixed_dt(d->engine);
    tk_pacing pacing = tk_engine_pacing(d->engine);
    if (!d->info_text || rate != d->info_rate || fixed != d->info_fixed ||
        pacing != d->info_pacing) {
        json_t *o = engine_info_json(d);
        free(d->info_text);
        d->info_text = tkd_jsonw_dump(o, JSON_COMPACT, NULL);
        json_decref(o);
        d->info_rate = rate;
        d->info_fixed = fixed;
        d->info_pacing = pacing;
    }
    r->answered = true;
    if (r->call && d->info_text)
        tkd_call_reply_text(r->call, d->info_text);
    else if (r->call)
        tkd_call_reply(r->call, engine_info_json(d));
}

static void m_engine_stats(req *r)
{
    NOKEYS();
    ok(r, tkd_stats_json(r->d));
}

static void m_engine_set_tick_rate(req *r)
{
    KEYS("hz");
    tkd_perr pe;
    double hz;
    int rc = tkd_p_num(r->params, "hz", "", 0, 10000, &hz, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "hz: required");
        return;
    }
    tk_engine_set_tick_rate(r->d->engine, hz);
    json_t *o = json_object();
    json_object_set_new(o, "hz", json_real(hz));
    ok(r, o);
}

static void add_waiter(tkd *d, tkd_waiter *w)
{
    w->next = d->waiters;
    d->waiters = w;
}

static void m_engine_sprint(req *r)
{
    KEYS("frames");
    tkd_perr pe;
    uint64_t n;
    int rc = tkd_p_u64(r->params, "frames", "", 1, 1000000000ull, &n, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "frames: required");
        return;
    }
    tkd_waiter *w = tk_calloc(1, sizeof *w);
    w->kind = W_SPRINT;
    w->call = r->call;
    w->frames_left = n;
    w->frames = n;
    w->start_ns = tk_clock_now_ns();
    w->fs = tk_frame_stats_new();
    add_waiter(r->d, w);
    r->d->sprinting = true;
    tk_engine_set_unpaced(r->d->engine, true);
    defer(r);
}

static void sprint_done(tkd *d, tkd_waiter *w, uint64_t now, bool stopped);

/* Answer and drop every waiter of `kind` (stopped); how many there were. */
static size_t stop_waiters(tkd *d, waiter_kind kind)
{
    uint64_t now = tk_clock_now_ns();
    uint64_t pending = tk_world_steps_pending(d->world);
    size_t n = 0;
    tkd_waiter **pp = &d->waiters;
    while (*pp) {
        tkd_waiter *w = *pp;
        if (w->kind != kind) {
            pp = &w->next;
            continue;
        }
        if (kind == W_SPRINT) {
            sprint_done(d, w, now, true);
        } else if (w->call) {
            /* Its steps were the ones after steps_before in the queue. */
            uint64_t end = w->steps_before + w->frames;
            uint64_t ran = pending >= end ? 0 : end - pending > w->frames ? w->frames : end - pending;
            json_t *o = json_object();
            json_object_set_new(o, "frame", jid(tk_world_frame(d->world)));
            json_object_set_new(o, "frames", jid(ran));
            json_object_set_new(o, "stopped", json_true());
            tkd_call_reply(w->call, o);
        }
        *pp = w->next;
        tk_frame_stats_free(w->fs);
        tk_free(w);
        n++;
    }
    return n;
}

static void m_engine_sprint_stop(req *r)
{
    NOKEYS();
    tkd *d = r->d;
    size_t n = stop_waiters(d, W_SPRINT);
    if (d->sprinting) {
        d->sprinting = false;
        tk_engine_set_unpaced(d->engine, false);
    }
    if (n)
        tk_log_info("engine.sprint_stop: %zu sprint%s stopped", n, n == 1 ? "" : "s");
    ok(r, json_object());
}

static void m_world_step_stop(req *r)
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

static void m_engine_shutdown(req *r)
{
    NOKEYS();
    tk_log_info("engine.shutdown requested%s", r->call ? "" : " by a timer action");
    r->d->shutdown = true;
    tk_engine_stop(r->d->engine);
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

static void m_world_pause(req *r)
{
    NOKEYS();
    tk_world_set_paused(r->d->world, true);
    paused_result(r);
}

static void m_world_unpause(req *r)
{
    NOKEYS();
    tk_world_set_paused(r->d->world, false);
    paused_result(r);
}

static void m_world_step(req *r)
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

static void m_world_set_time_dilation(req *r)
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
static void m_world_trace(req *r)
{
    r->answered = true;
    tkd_prof_world_trace(r->d, r->call, r->params);
}

static void m_engine_profile(req *r)
{
    r->answered = true;
    tkd_prof_engine_profile(r->d, r->call, r->params);
}

static json_t *spawn_result(tks_id first, uint64_t count)
{
    json_t *o = json_object();
    if (count > SPAWN_IDS_MAX) {
        json_object_set_new(o, "first", jid(first));
        json_object_set_new(o, "count", jid(count));
    } else {
        json_t *ids = json_array();
        for (uint64_t i = 0; i < count; i++)
            json_array_append_new(ids, jid(first + i));
        json_object_set_new(o, "ids", ids);
    }
    return o;
}

/*
 * Big requests in slices.  A client's spawn that registers more than
 * SLICE_FUNCS tick functions, a destroy of more than SLICE_FUNCS entities
 * and the removal of a level holding more are validated whole first, then
 * carried out STEP entities at a time at frame boundaries, within the
 * request budget and the idle time between frames (Unreal's level
 * streaming adds and removes a level's actors over frames under a time
 * limit the same way).  The call answers when the last slice is done, with
 * the result a request in one piece gives; the client's later requests wait
 * for it (its order is kept), other clients go on.
 *
 * A spawn reserves its ids first (consecutive, counted against
 * max_entities).  If one of its slices fails (its level or a prerequisite
 * was removed meanwhile), the entities spawned so far are destroyed and
 * the call answers the error: all or nothing, as a spawn in one piece.  A
 * destroy skips entities that others destroyed meanwhile and answers how
 * many it destroyed.  Jobs run in the order they were asked; timer actions
 * are never sliced (they run inside the frame, whole).
 */
#define SLICE_FUNCS 8192
#define STEP 512

typedef enum { JOB_SPAWN, JOB_DESTROY, JOB_LEVEL_REMOVE, JOB_LOAD } job_kind;

struct tkd_job {
    tkd_job *next;
    job_kind kind;
    tkd_call *call;         /* completed once when the job ends          */
    uint64_t done;          /* entities spawned / destroyed so far        */
    /* JOB_SPAWN */
    tks_spawn_req *req;     /* deep copy; count = the whole spawn        */
    tks_share *share;       /* its templates, shared by all its slices   */
    tks_id first;
    /* JOB_DESTROY: ids[next_ix..]; JOB_LEVEL_REMOVE: next_ix = next id to look at */
    tks_id *ids;
    size_t n_ids, next_ix;
    /* JOB_LEVEL_REMOVE */
    char *level;
    /* JOB_LOAD: the file read aside (snapshot.h) */
    tkd_snapload *load;
};

static const char *job_method(const tkd_job *j)
{
    return j->kind == JOB_SPAWN     ? "entity.spawn"
           : j->kind == JOB_DESTROY ? "entity.destroy"
           : j->kind == JOB_LOAD    ? "world.load"
                                    : "level.remove";
}

static void job_free(tkd_job *j)
{
    if (j->load)
        tkd_snapshot_load_cancel(j->load);
    tks_share_free(j->share);
    if (j->req)
        tks_spawn_req_free(j->req);
    tk_free(j->ids);
    tk_free(j->level);
    tk_free(j);
}

static void job_add(req *r, tkd_job *j)
{
    j->call = r->call;
    tkd_job **pp = &r->d->jobs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = j;
    defer(r);
    tkd_call_hold_client(r->call);
}

/* Undo a spawn: destroy what it spawned (still there), release the rest. */
static void spawn_undo(tkd *d, tkd_job *j)
{
    tks_id *ids = j->done ? tk_malloc(j->done * sizeof *ids) : NULL;
    size_t n = 0, destroyed = 0;
    for (uint64_t k = 0; k < j->done; k++)
        if (tks_entity_get(d->sim, j->first + k))
            ids[n++] = j->first + k;
    char err[TKS_ERR_MAX];
    if (n)
        tks_destroy(d->sim, ids, n, &destroyed, err);
    tk_free(ids);
    tks_release_ids(d->sim, j->req->count - j->done);
}

static json_t *destroyed_result(uint64_t n)
{
    json_t *o = json_object();
    json_object_set_new(o, "destroyed", jid(n));
    return o;
}

/* One step of a job; true when the job is over (its call completed). */
static bool job_step(tkd *d, tkd_job *j)
{
    char err[TKS_ERR_MAX];
    if (j->kind == JOB_LOAD) {
        /* Read aside; applied whole here, at a frame boundary. */
        char lerr[TKD_ERR_MAX];
        json_t *info = NULL;
        tkd_snapload *l = j->load;
        j->load = NULL;
        int rc = tkd_snapshot_load_finish(d, l, &info, lerr, sizeof lerr);
        if (rc) {
            tkd_call_error(j->call, rc, NULL, "%s", lerr);
            return true;
        }
        tk_log_info("world.load: %s (%lld entities)",
                    json_string_value(json_object_get(info, "path")),
                    (long long)json_integer_value(json_object_get(info, "entities")));
        tkd_call_reply(j->call, info);
        return true;
    }
    if (j->kind == JOB_SPAWN) {
        tks_spawn_req slice = *j->req;
        slice.count = j->req->count - j->done < STEP ? j->req->count - j->done : STEP;
        if (!j->share)
            j->share = tks_share_new();
        int rc = tks_spawn_ids(d->sim, &slice, j->first + j->done, j->share, err);
        if (rc) {
            uint64_t done = j->done;
            spawn_undo(d, j);
            tk_log_warn("entity.spawn of %llu stopped after %llu: %s; those were destroyed",
                        (unsigned long long)j->req->count, (unsigned long long)done, err);
            tkd_call_error(j->call, rc == TK_ELIMIT ? -32003 : rc == TK_ENOENT ? -32001 : -32602,
                           NULL,
                           "%s (the spawn stopped after %llu of %llu entities; nothing is "
                           "left of it)",
                           err, (unsigned long long)done, (unsigned long long)j->req->count);
            return true;
        }
        j->done += slice.count;
        if (j->done < j->req->count)
            return false;
        tkd_call_reply(j->call, spawn_result(j->first, j->req->count));
        return true;
    }
    tks_id batch[STEP];
    size_t n = 0;
    if (j->kind == JOB_DESTROY) {
        while (n < STEP && j->next_ix < j->n_ids) {
            tks_id id = j->ids[j->next_ix++];
            if (tks_entity_get(d->sim, id)) /* others may have destroyed it meanwhile */
                batch[n++] = id;
        }
    } else {
        tk_level_id l;
        if (tk_level_find(d->world, j->level, &l) != 0) { /* removed meanwhile */
            tkd_call_reply(j->call, destroyed_result(j->done));
            return true;
        }
        /* A cursor over the ids, so the whole removal is linear. */
        tks_id end = tks_next_id(d->sim);
        if (!j->next_ix)
            j->next_ix = 1;
        for (size_t seen = 0; n < STEP && seen < 64 * STEP && j->next_ix < end; seen++) {
            const tks_entity *e = tks_entity_get(d->sim, j->next_ix++);
            if (e && tks_entity_level(e) == l)
                batch[n++] = tks_entity_id(e);
        }
        if (n == 0 && j->next_ix < end)
            return false; /* a long stretch of other levels' ids: go on next step */
        if (n == 0 && tks_level_entities(d->sim, l)) {
            j->next_ix = 1; /* spawned into it meanwhile, behind the cursor */
            return false;
        }
        if (n == 0) {
            int rc = tks_level_remove(d->sim, j->level, err);
            if (rc)
                tkd_call_error(j->call, rc == TK_ESTATE ? -32002 : -32001, NULL, "%s", err);
            else
                tkd_call_reply(j->call, destroyed_result(j->done));
            return true;
        }
    }
    size_t destroyed = 0;
    if (n && tks_destroy(d->sim, batch, n, &destroyed, err) == 0)
        j->done += destroyed;
    if (j->kind == JOB_DESTROY && j->next_ix == j->n_ids) {
        tkd_call_reply(j->call, destroyed_result(j->done));
        return true;
    }
    return false;
}

/* Runs jobs in order until the deadline; true while one can go on now (a
 * load whose file is still being read waits, and the jobs behind it). */
static bool jobs_run(tkd *d, uint64_t deadline)
{
    while (d->jobs) {
        tkd_job *j = d->jobs;
        if (j->kind == JOB_LOAD && !tkd_snapshot_load_done(j->load))
            return false;
        bool over;
        do
            over = job_step(d, j);
        while (!over && tk_clock_now_ns() < deadline);
        if (!over)
            return true;
        d->jobs = j->next;
        job_free(j);
        if (tk_clock_now_ns() >= deadline)
            break;
    }
    return d->jobs != NULL &&
           !(d->jobs->kind == JOB_LOAD && !tkd_snapshot_load_done(d->jobs->load));
}

bool tkd_jobs_run(tkd *d, uint64_t deadline)
{
    const char *what = d->jobs ? job_method(d->jobs) : NULL;
    uint64_t t0 = tk_clock_now_ns();
    bool more = jobs_run(d, deadline);
    uint64_t ns = tk_clock_now_ns() - t0;
    if (what && ns > d->cur_slowest.ns) { /* for the lag warning */
        d->cur_slowest.ns = ns;
        snprintf(d->cur_slowest.what, sizeof d->cur_slowest.what, "request %s (%s)", what,
                 strcmp(what, "world.load") ? "in slices" : "applied");
    }
    return more;
}

/* A job that will not finish (shutdown): undo a spawn, answer -32004. */
static void job_cancel(tkd *d, tkd_job *j)
{
    uint64_t done = j->done;
    if (j->kind == JOB_LOAD) {
        /* Read already: applied, as asked (a save_on_exit then holds it). */
        if (tkd_snapshot_load_done(j->load)) {
            job_step(d, j);
            return;
        }
        tkd_call_error(j->call, -32004, NULL,
                       "shutting down before world.load completed (%s was still being read; "
                       "the world was not changed)",
                       tkd_snapshot_load_path(j->load));
    } else if (j->kind == JOB_SPAWN) {
        spawn_undo(d, j);
        tkd_call_error(j->call, -32004, NULL,
                       "shutting down before entity.spawn completed (%llu of %llu were "
                       "spawned and destroyed again)",
                       (unsigned long long)done, (unsigned long long)j->req->count);
    } else {
        tkd_call_error(j->call, -32004, NULL,
                       "shutting down before %s completed (%llu entities destroyed)",
                       job_method(j), (unsigned long long)done);
    }
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

static void m_world_save(req *r) { snapshot_method(r, true); }
static void m_world_load(req *r) { snapshot_method(r, false); }

/* ---- levels ------------------------------------------------------------------------- */

static void m_level_list(req *r)
{
    NOKEYS();
    tkd *d = r->d;
    json_t *a = json_array();
    for (size_t i = 0; i < tk_level_count(d->world); i++) {
        tk_level_id l = tk_level_at(d->world, i);
        json_t *x = json_object();
        json_object_set_new(x, "name", json_string(tk_level_name(d->world, l)));
        json_object_set_new(x, "entities", jid(tks_level_entities(d->sim, l)));
        json_array_append_new(a, x);
    }
    json_t *o = json_object();
    json_object_set_new(o, "levels", a);
    ok(r, o);
}

static bool need_str(req *r, const char *key, const char **out)
{
    tkd_perr pe;
    int rc = tkd_p_str(r->params, key, "", out, &pe);
    if (rc < 0) {
        fail_p(r, &pe);
        return false;
    }
    if (rc == 0) {
        fail(r, -32602, "%s: required", key);
        return false;
    }
    return true;
}

static void m_level_add(req *r)
{
    KEYS("name");
    const char *name;
    if (!need_str(r, "name", &name))
        return;
    char err[TKS_ERR_MAX];
    int rc = tks_level_add(r->d->sim, name, err);
    if (rc) {
        fail(r, rc == TK_EEXIST ? -32602 : tkd_code_from_tk(rc), "%s", err);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    ok(r, o);
}

static void m_level_remove(req *r)
{
    KEYS("name");
    const char *name;
    if (!need_str(r, "name", &name))
        return;
    char err[TKS_ERR_MAX];
    tk_level_id l;
    if (r->call && !r->d->offline && strcmp(name, "persistent") &&
        tk_level_find(r->d->world, name, &l) == 0 && tks_level_entities(r->d->sim, l) > SLICE_FUNCS) {
        tkd_job *j = tk_calloc(1, sizeof *j);
        j->kind = JOB_LEVEL_REMOVE;
        j->level = tk_strdup(name);
        job_add(r, j);
        return;
    }
    uint64_t before = tks_entity_count(r->d->sim);
    int rc = tks_level_remove(r->d->sim, name, err);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    json_t *o = json_object();
    json_object_set_new(o, "destroyed", jid(before - tks_entity_count(r->d->sim)));
    ok(r, o);
}

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
    if (r->call && sr.count * (1 + sr.n_components) > SLICE_FUNCS && !d->offline) {
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

/*
 * Selectors (entity.destroy, tick.set): {"first","count"} (the ids of a
 * spawn's answer), "level", "class", alone or combined; they select the live
 * entities that match all of those given, in id order.  Ids given with
 * "ids" must each exist; a selector that matches nothing is not an error.
 */
typedef struct selector {
    bool range;
    uint64_t first, count;
    tk_level_id level;     /* TK_LEVEL_NONE: any */
    const tks_class *cls;  /* NULL: any          */
} selector;

/* Reads the selector keys: 1 if any was given, 0 if none, -1 (answered)
 * on a bad one. */
static int read_selector(req *r, selector *sel)
{
    tkd_perr pe;
    memset(sel, 0, sizeof *sel);
    sel->level = TK_LEVEL_NONE;
    const char *level = NULL, *cls = NULL;
    int rf = tkd_p_u64(r->params, "first", "", 1, (1ull << 53), &sel->first, &pe);
    if (rf < 0)
        goto bad;
    int rc = tkd_p_u64(r->params, "count", "", 1, (1ull << 53), &sel->count, &pe);
    if (rc < 0)
        goto bad;
    if ((rf > 0) != (rc > 0)) {
        fail(r, -32602, "%s: required with %s (a range of ids, as entity.spawn answers)",
             rf > 0 ? "count" : "first", rf > 0 ? "first" : "count");
        return -1;
    }
    sel->range = rf > 0;
    int rl = tkd_p_str(r->params, "level", "", &level, &pe);
    if (rl < 0)
        goto bad;
    int rk = tkd_p_str(r->params, "class", "", &cls, &pe);
    if (rk < 0)
        goto bad;
    if (level && tk_level_find(r->d->world, level, &sel->level) != 0) {
        fail(r, -32001, "level: level '%s' does not exist", level);
        return -1;
    }
    if (cls && !(sel->cls = tks_class_find(r->d->sim, cls))) {
        fail(r, -32602, "class: unknown class '%s'", cls);
        return -1;
    }
    return sel->range || level || cls ? 1 : 0;
bad:
    fail_p(r, &pe);
    return -1;
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
static tks_id *select_ids(tkd *d, const selector *sel, size_t *n)
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
    KEYS("ids", "first", "count", "level", "class");
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
    if (r->call && n > SLICE_FUNCS && !r->d->offline) {
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
    json_t *o = json_object();
    json_object_set_new(o, "destroyed", jid(destroyed));
    ok(r, o);
}

static json_t *prereq_ids(tkd *d, tk_tick_id id)
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

static void m_entity_get(req *r)
{
    KEYS("id");
    tkd_perr pe;
    uint64_t id;
    int rc = tkd_p_u64(r->params, "id", "", 1, UINT64_MAX, &id, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "id: required");
        return;
    }
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
    KEYS("level", "class", "offset", "limit");
    tkd_perr pe;
    const char *level = NULL, *cls = NULL;
    uint64_t offset = 0, limit = 100;
    READ(tkd_p_str(r->params, "level", "", &level, &pe));
    READ(tkd_p_str(r->params, "class", "", &cls, &pe));
    READ(tkd_p_u64(r->params, "offset", "", 0, UINT64_MAX, &offset, &pe));
    READ(tkd_p_u64(r->params, "limit", "", 0, LIST_MAX, &limit, &pe));
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
static bool read_props(req *r, const json_t *props, tkd_arena *a, tks_prop_kv **kv, size_t *n)
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
    KEYS("id", "props");
    tkd_perr pe;
    uint64_t id;
    json_t *props = NULL;
    int rc = tkd_p_u64(r->params, "id", "", 1, UINT64_MAX, &id, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "id: required");
        return;
    }
    rc = tkd_p_obj(r->params, "props", "", &props, &pe);
    READ(rc);
    if (rc == 0) {
        fail(r, -32602, "props: required");
        return;
    }
    tkd_arena a = {0};
    tks_prop_kv *kv;
    size_t n;
    if (!read_props(r, props, &a, &kv, &n))
        return;
    char err[TKS_ERR_MAX];
    rc = tks_entity_set_props(r->d->sim, id, kv, n, err);
    tkd_arena_free(&a);
    if (rc) {
        fail_tk(r, rc, err);
        return;
    }
    ok(r, json_object());
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

static void m_tick_set(req *r)
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

static void list_reply(req *r, const char *key,
                       bool (*next)(const tk_world_t *, uint64_t *, uint64_t *),
                       json_t *(*item)(tkd *, uint64_t), uint64_t total);

static void m_tick_dump(req *r)
{
    tk_tick_counts tc;
    tk_tick_get_counts(r->d->world, &tc);
    list_reply(r, "ticks", tk_tick_next, tick_dump_json, tc.registered);
}

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
    tkd_perr pe;
    tk_timer_desc td = {0};
    td.first_delay = -1;
    if (!next_tick) {
        KEYS("rate", "loop", "first_delay", "action");
        int rc = tkd_p_num(r->params, "rate", "", -1e300, 1e9, &td.rate, &pe);
        READ(rc);
        if (rc == 0) {
            fail(r, -32602, "rate: required");
            return;
        }
        if (!(td.rate > 0)) {
            fail(r, -32602, "rate: must be > 0 (use timer.clear to stop a timer)");
            return;
        }
        if (td.rate < TKD_TIMER_MIN_RATE) {
            fail(r, -32602, "rate: must be at least %g s (a looping timer runs its action once "
                            "per elapsed period)",
                 TKD_TIMER_MIN_RATE);
            return;
        }
        READ(tkd_p_bool(r->params, "loop", "", &td.loop, &pe));
        READ(tkd_p_num(r->params, "first_delay", "", -1e300, 1e9, &td.first_delay, &pe));
    } else {
        KEYS("action");
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
    tkd_perr pe;
    uint64_t v;
    int rc = tkd_p_u64(r->params, "handle", "", 1, UINT64_MAX, &v, &pe);
    if (rc < 0) {
        fail_p(r, &pe);
        return false;
    }
    if (rc == 0) {
        fail(r, -32602, "handle: required");
        return false;
    }
    if (!tk_timer_exists(r->d->world, v)) {
        fail(r, -32001, "handle: no such timer (unknown, cleared or finished)");
        return false;
    }
    *h = v;
    return true;
}

static void m_timer_op(req *r, int (*op)(tk_world_t *, tk_timer_handle))
{
    KEYS("handle");
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
    KEYS("handle");
    tk_timer_handle h;
    if (!read_handle(r, &h))
        return;
    ok(r, timer_json(r->d, h));
}

/*
 * {key: [item(x) ...], "total"}: the items the core's iterator `next` gives,
 * skipping `offset`, at most `limit` (default 100), and never more than fit
 * in a reply (out_budget): a page cut short says "truncated": true and the
 * "next_offset" to ask for.
 */
static void list_reply(req *r, const char *key,
                       bool (*next)(const tk_world_t *, uint64_t *, uint64_t *),
                       json_t *(*item)(tkd *, uint64_t), uint64_t total)
{
    KEYS("offset", "limit");
    tkd_perr pe;
    uint64_t offset = 0, limit = 100;
    READ(tkd_p_u64(r->params, "offset", "", 0, UINT64_MAX, &offset, &pe));
    READ(tkd_p_u64(r->params, "limit", "", 0, LIST_MAX, &limit, &pe));
    json_t *a = json_array();
    size_t budget = out_budget(r), used = 0;
    uint64_t cur = 0, x, k = 0, until = list_deadline(r);
    bool cut = false;
    while (json_array_size(a) < limit && next(r->d->world, &cur, &x)) {
        if (k++ < offset)
            continue;
        if (json_array_size(a) >= LIST_TIMED && tk_clock_now_ns() >= until) {
            cut = true;
            break;
        }
        json_t *t = item(r->d, x);
        if (!t)
            continue;
        if (!fits(&used, budget, t)) {
            json_decref(t);
            cut = true;
            break;
        }
        json_array_append_new(a, t);
    }
    json_t *o = json_object();
    json_object_set_new(o, key, a);
    json_object_set_new(o, "total", jid(total));
    if (cut)
        page_cut(o, offset + json_array_size(a));
    ok(r, o);
}

static void m_timer_list(req *r)
{
    tk_timer_counts tm;
    tk_timer_get_counts(r->d->world, &tm);
    list_reply(r, "timers", tk_timer_next, timer_json, tm.active + tm.paused + tm.pending);
}

/* ---- tickables ------------------------------------------------------------------------ */

static void m_tickable_add(req *r)
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

static void m_tickable_set(req *r)
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

static void m_tickable_remove(req *r)
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

static void m_tickable_get(req *r)
{
    KEYS("id");
    tk_tickable_id id;
    if (!read_tickable(r, &id))
        return;
    ok(r, tickable_json(r->d, id));
}

static void m_tickable_list(req *r)
{
    list_reply(r, "tickables", tk_tickable_next, tickable_json, tk_tickable_count(r->d->world));
}

/* ---- events ------------------------------------------------------------------------------ */

static int read_topics(req *r, const char *key, unsigned *mask, bool required)
{
    json_t *a = json_object_get(r->params, key);
    if (!a) {
        if (required) {
            fail(r, -32602, "%s: required", key);
            return -1;
        }
        *mask = TKD_TOPIC_ALL;
        return 0;
    }
    if (!json_is_array(a)) {
        fail(r, -32602, "%s: must be an array of topic names", key);
        return -1;
    }
    *mask = 0;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        tkd_topic t;
        if (!json_is_string(v) || tkd_topic_parse(json_string_value(v), &t) != 0) {
            fail(r, -32602, "%s[%zu]: not a topic (frame, stats, overrun, slow_tick, log)", key, i);
            return -1;
        }
        *mask |= TKD_TOPIC_BIT(t);
    }
    return 1;
}

static json_t *topics_json(unsigned mask)
{
    json_t *a = json_array();
    for (unsigned t = 0; t < TKD_TOPIC_COUNT; t++)
        if (mask & TKD_TOPIC_BIT(t))
            json_array_append_new(a, json_string(tkd_topic_name((tkd_topic)t)));
    return a;
}

/* events.subscribe / events.unsubscribe: the connection's topics after the
 * change (and, subscribing, the events it has lost so far). */
static void events_change(req *r, bool subscribe)
{
    KEYS("topics");
    unsigned mask;
    if (read_topics(r, "topics", &mask, subscribe) < 0)
        return;
    tkd_client *c = r->call ? tkd_call_client(r->call) : NULL;
    if (!c) {
        fail(r, -32002, "events need a connection to be sent on");
        return;
    }
    unsigned now = subscribe ? tkd_server_subscribe(c, mask) : tkd_server_unsubscribe(c, mask);
    json_t *o = json_object();
    json_object_set_new(o, "topics", topics_json(now));
    if (subscribe)
        json_object_set_new(o, "dropped", jid(tkd_client_dropped(c)));
    ok(r, o);
}

static void m_events_subscribe(req *r) { events_change(r, true); }
static void m_events_unsubscribe(req *r) { events_change(r, false); }

/* ---- the table --------------------------------------------------------------------------- */

typedef struct method_entry {
    const char *name;
    void (*fn)(req *r);
} method_entry;

static const method_entry methods[] = {
    {"engine.info", m_engine_info},
    {"engine.stats", m_engine_stats},
    {"engine.set_tick_rate", m_engine_set_tick_rate},
    {"engine.sprint", m_engine_sprint},
    {"engine.sprint_stop", m_engine_sprint_stop},
    {"engine.profile", m_engine_profile},
    {"engine.shutdown", m_engine_shutdown},
    {"world.status", m_world_status},
    {"world.pause", m_world_pause},
    {"world.unpause", m_world_unpause},
    {"world.step", m_world_step},
    {"world.step_stop", m_world_step_stop},
    {"world.set_time_dilation", m_world_set_time_dilation},
    {"world.trace", m_world_trace},
    {"world.save", m_world_save},
    {"world.load", m_world_load},
    {"level.list", m_level_list},
    {"level.add", m_level_add},
    {"level.remove", m_level_remove},
    {"entity.spawn", m_entity_spawn},
    {"entity.destroy", m_entity_destroy},
    {"entity.get", m_entity_get},
    {"entity.list", m_entity_list},
    {"entity.set_props", m_entity_set_props},
    {"tick.set", m_tick_set},
    {"tick.add_prerequisite", m_tick_add_prerequisite},
    {"tick.remove_prerequisite", m_tick_remove_prerequisite},
    {"tick.dump", m_tick_dump},
    {"timer.set", m_timer_set},
    {"timer.set_for_next_tick", m_timer_set_for_next_tick},
    {"timer.clear", m_timer_clear},
    {"timer.pause", m_timer_pause},
    {"timer.unpause", m_timer_unpause},
    {"timer.get", m_timer_get},
    {"timer.list", m_timer_list},
    {"tickable.add", m_tickable_add},
    {"tickable.set", m_tickable_set},
    {"tickable.remove", m_tickable_remove},
    {"tickable.get", m_tickable_get},
    {"tickable.list", m_tickable_list},
    {"events.subscribe", m_events_subscribe},
    {"events.unsubscribe", m_events_unsubscribe},
};

#define N_METHODS (sizeof methods / sizeof methods[0])

const char *const *tkd_method_names(void)
{
    static const char *names[N_METHODS + 1];
    if (!names[0])
        for (size_t i = 0; i < N_METHODS; i++)
            names[i] = methods[i].name;
    return names;
}

bool tkd_method_exists(const char *name)
{
    for (size_t i = 0; name && i < N_METHODS; i++)
        if (!strcmp(methods[i].name, name))
            return true;
    return false;
}

/* What a client of the read-only socket may call: what reads and nothing
 * that changes the world, the engine or the files. */
static const char *const readonly_methods[] = {
    "engine.info", "engine.stats", "engine.profile", "world.status", "world.trace", "world.hash",
    "level.list", "entity.get", "entity.list", "tick.dump", "timer.get", "timer.list",
    "tickable.get", "tickable.list", "events.subscribe", "events.unsubscribe", "rpc.discover",
    NULL};

/* Methods that make the world (or the daemon) hold more memory: refused
 * past [world] max_memory (Redis's maxmemory with noeviction). */
static const char *const growing_methods[] = {
    "entity.spawn", "timer.set", "timer.set_for_next_tick", "tickable.add", "level.add",
    "world.load", "tick.add_prerequisite", "entity.set_props", "world.trace", "engine.profile",
    NULL};

static bool grows_state(const char *name)
{
    for (size_t i = 0; name && growing_methods[i]; i++)
        if (!strcmp(growing_methods[i], name))
            return true;
    return false;
}

/* RSS against [world] max_memory, read at most every 20 ms. */
static bool over_memory(tkd *d)
{
    uint64_t now = tk_clock_now_ns();
    if (!d->rss_at_ns || now - d->rss_at_ns > 20000000ull) {
        d->rss_cached = rss_bytes();
        d->rss_at_ns = now;
    }
    return d->rss_cached > d->cfg.max_memory;
}

bool tkd_method_readonly(const char *name)
{
    for (size_t i = 0; name && readonly_methods[i]; i++)
        if (!strcmp(readonly_methods[i], name))
            return true;
    return false;
}

void tkd_exec(tkd *d, tkd_call *call, const char *method, json_t *params)
{
    req r = {d, call, method, params, false, 0};
    uint64_t t0 = tk_clock_now_ns();
    size_t i = 0;
    while (i < N_METHODS && strcmp(methods[i].name, method))
        i++;
    if (i == N_METHODS) {
        fail(&r, -32601, "method not found: %s", method);
    } else if (d->cfg.max_memory && grows_state(method) && over_memory(d)) {
        fail(&r, -32003,
             "memory limit: the daemon uses %llu MiB, over [world] max_memory (%llu MiB); "
             "%s is refused until it drops",
             (unsigned long long)(d->rss_cached >> 20),
             (unsigned long long)(d->cfg.max_memory >> 20), method);
    } else if (call && tkd_call_readonly(call) && !tkd_method_readonly(method)) {
        fail(&r, -32005,
             "%s is not allowed on the read-only socket: use the control socket "
             "([control] socket)",
             method);
    } else {
        methods[i].fn(&r);
        if (!r.answered)
            fail(&r, -32603, "internal error: %s did not answer", method);
    }
    uint64_t ns = tk_clock_now_ns() - t0;
    size_t k = i < N_METHODS ? i : TKD_REQSTATS_UNKNOWN;
    tkd_reqstats_record(&d->reqstats, k, r.code, ns);
    if (tkd_note_request(d, method, ns, call == NULL))
        tkd_reqstats_slow(&d->reqstats, k);
}

/* ---- frame boundary: answered-later requests ------------------------------------------------ */

static void sprint_done(tkd *d, tkd_waiter *w, uint64_t now, bool stopped)
{
    if (w->call) {
        json_t *o = json_object();
        json_object_set_new(o, "frames", jid(w->frames - w->frames_left));
        if (stopped)
            json_object_set_new(o, "stopped", json_true());
        json_object_set_new(o, "seconds", json_real((double)(now - w->start_ns) / 1e9));
        tk_mspt m;
        tk_frame_stats_mspt(w->fs, now, 0, &m);
        json_object_set_new(o, "mspt", mspt_json(&m));
        tkd_call_reply(w->call, o);
    }
    (void)d;
}

void tkd_methods_post_frame(tkd *d, const tk_frame_info *f)
{
    /* Profiles and traces. */
    tkd_prof_post_frame(d, f);
    /* Steps and sprints. */
    uint64_t now = tk_clock_now_ns();
    bool sprinting = false;
    tkd_waiter **pp = &d->waiters;
    while (*pp) {
        tkd_waiter *w = *pp;
        bool done = false;
        if (w->kind == W_STEP) {
            done = tk_world_steps_pending(d->world) <= w->steps_before;
            if (done && w->call) {
                json_t *o = json_object();
                json_object_set_new(o, "frame", jid(f->frame + 1));
                tkd_call_reply(w->call, o);
            }
        } else {
            tk_frame_stats_add(w->fs, f->start_ns, f->work_ns);
            if (--w->frames_left == 0) {
                sprint_done(d, w, now, false);
                done = true;
            } else {
                sprinting = true;
            }
        }
        if (done) {
            *pp = w->next;
            tk_frame_stats_free(w->fs);
            tk_free(w);
            continue;
        }
        pp = &w->next;
    }
    if (d->sprinting && !sprinting) {
        d->sprinting = false;
        tk_engine_set_unpaced(d->engine, false);
    }
}

void tkd_methods_shutdown(tkd *d)
{
    while (d->jobs) {
        tkd_job *j = d->jobs;
        d->jobs = j->next;
        job_cancel(d, j);
        job_free(j);
    }
    free(d->info_text);
    d->info_text = NULL;
    tkd_prof_shutdown(d);
    while (d->waiters) {
        tkd_waiter *w = d->waiters;
        d->waiters = w->next;
        if (w->call)
            tkd_call_error(w->call, -32004, NULL, "shutting down before %s completed",
                           w->kind == W_STEP ? "world.step" : "engine.sprint");
        tk_frame_stats_free(w->fs);
        tk_free(w);
    }
}
