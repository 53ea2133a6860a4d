/*
 * m_engine.c - engine.*: info, stats, tick rate, sprints, profile, shutdown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "methods_int.h"

/* ---- engine --------------------------------------------------------------------- */

uint64_t rss_bytes(void)
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

json_t *mspt_json(const tk_mspt *m)
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
void m_engine_info(req *r)
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

void m_engine_stats(req *r)
{
    NOKEYS();
    ok(r, tkd_stats_json(r->d));
}

void m_engine_set_tick_rate(req *r)
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

void m_engine_sprint(req *r)
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

void m_engine_sprint_stop(req *r)
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

void m_engine_shutdown(req *r)
{
    NOKEYS();
    tk_log_info("engine.shutdown requested%s", r->call ? "" : " by a timer action");
    r->d->shutdown = true;
    tk_engine_stop(r->d->engine);
    ok(r, json_object());
}

void m_engine_profile(req *r)
{
    r->answered = true;
    tkd_prof_engine_profile(r->d, r->call, r->params);
}
