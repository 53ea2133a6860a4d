/*
 * m_engine.c - engine.*: info, stats, tick rate, sprints, profile, shutdown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "journal.h"
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

/* What the last frame's ticks did on worker threads (engine.stats). */
static json_t *threads_json(tkd *d, const tk_world_frame_stats *fs)
{
    json_t *o = json_object();
    json_object_set_new(o, "threads", jid(tk_engine_threads(d->engine)));
    json_object_set_new(o, "runs", jid(fs->sections));
    json_object_set_new(o, "runs_split", jid(fs->sections_split));
    json_object_set_new(o, "parallel_ticks", jid(fs->par_ticks));
    json_object_set_new(o, "worker_ticks", jid(fs->worker_ticks));
    json_object_set_new(o, "worker_ms", ms(fs->worker_ns));
    json_t *g = json_object();
    for (int i = 0; i < TK_GROUP_COUNT; i++)
        json_object_set_new(g, tk_group_name((tk_group)i), ms(fs->group_worker_ns[i]));
    json_object_set_new(o, "groups_worker_ms", g);
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
    json_object_set_new(o, "threads", threads_json(d, &fs));
    json_object_set_new(o, "start_frame_ms", json_real((double)fs.start_frame_ns / 1e6));
    json_object_set_new(o, "timers_ms", json_real((double)fs.timers_ns / 1e6));
    json_object_set_new(o, "tickables_ms", json_real((double)fs.tickables_ns / 1e6));
    json_object_set_new(o, "ticks_run_last_frame", jid(fs.ticks_run));
    json_object_set_new(o, "overruns", jid(st.overruns));
    json_object_set_new(o, "behind_s", json_real(st.behind_s));
    json_object_set_new(o, "last_frame_ms", ms(st.last.work_ns));
    json_object_set_new(o, "last_frame_cpu_ms", ms(st.last.cpu_ns));
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
    if (d->journal) {
        tkd_journal_stats js;
        tkd_journal_get_stats(d->journal, &js);
        json_t *j = json_object();
        json_object_set_new(j, "path", json_string(tkd_journal_path(d->journal)));
        json_object_set_new(j, "fsync", json_string(tkd_fsync_name(tkd_journal_fsync(d->journal))));
        json_object_set_new(j, "size", jid(js.size));
        json_object_set_new(j, "records", jid(js.records));
        json_object_set_new(j, "bytes", jid(js.bytes));
        json_object_set_new(j, "writes", jid(js.batches));
        json_object_set_new(j, "write_max_ms", json_real(js.write_max_ms));
        json_object_set_new(j, "fsyncs", jid(js.fsyncs));
        json_object_set_new(j, "fsync_max_ms", json_real(js.fsync_max_ms));
        json_object_set_new(j, "backlog_bytes", jid(js.backlog_bytes));
        json_object_set_new(j, "rewrites", jid(js.rewrites));
        json_object_set_new(j, "failing", json_boolean(js.failing));
        json_object_set_new(o, "journal", j);
    }
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
    json_object_set_new(o, "threads", json_integer((json_int_t)tk_engine_threads(d->engine)));
    json_object_set_new(o, "config", d->cfg.path ? json_string(d->cfg.path) : json_null());
    json_object_set_new(o, "instance", d->cfg.instance_name && *d->cfg.instance_name
                                           ? json_string(d->cfg.instance_name)
                                           : json_null());
    json_object_set_new(o, "agones", tkd_agones_info(d->agones));
    return o;
}

/* engine.info is asked for often (tools poll it) and rarely changes: its
 * text is kept and rebuilt only when one of its variable fields changed. */
static void m_engine_info(req *r)
{
    tkd *d = r->d;
    double rate = tk_engine_tick_rate(d->engine), fixed = tk_engine_fixed_dt(d->engine);
    tk_pacing pacing = tk_engine_pacing(d->engine);
    uint64_t agen = tkd_agones_info_gen(d->agones);
    unsigned threads = tk_engine_threads(d->engine);
    if (!d->info_text || rate != d->info_rate || fixed != d->info_fixed ||
        pacing != d->info_pacing || threads != d->info_threads ||
        agen != d->info_agones_gen) {
        json_t *o = engine_info_json(d);
        free(d->info_text);
        d->info_text = tkd_jsonw_dump(o, JSON_COMPACT, NULL);
        json_decref(o);
        d->info_rate = rate;
        d->info_fixed = fixed;
        d->info_pacing = pacing;
        d->info_threads = threads;
        d->info_agones_gen = agen;
    }
    r->answered = true;
    if (r->call && d->info_text)
        tkd_call_reply_text(r->call, d->info_text);
    else if (r->call)
        tkd_call_reply(r->call, engine_info_json(d));
}

static void m_engine_stats(req *r)
{
    ok(r, tkd_stats_json(r->d));
}

static void m_engine_set_tick_rate(req *r)
{
    double hz = arg(r, "hz")->num;
    tk_engine_set_tick_rate(r->d->engine, hz);
    json_t *o = json_object();
    json_object_set_new(o, "hz", json_real(hz));
    ok(r, o);
}

static void m_engine_sprint(req *r)
{
    uint64_t n = arg(r, "frames")->u;
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

static void m_engine_sprint_stop(req *r)
{
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

static void m_engine_shutdown(req *r)
{
    if (r->d->replay && !r->call) { /* a timer action of the run being replayed */
        ok(r, json_object());
        return;
    }
    tk_log_info("engine.shutdown requested%s", r->call ? "" : " by a timer action");
    r->d->shutdown = true;
    tk_engine_stop(r->d->engine);
    ok(r, json_object());
}

static void m_engine_profile(req *r)
{
    r->answered = true;
    tkd_prof_engine_profile(r->d, r->call, r->params);
}

/* ---- the table ------------------------------------------------------------------- */

static const tkd_field mspt_fields[] = {
    R_NUM("mean", NULL), R_NUM("p50", NULL), R_NUM("p95", NULL), R_NUM("p99", NULL),
    R_NUM("max", NULL), {0}};
#define R_MSPT(n, d)                                                                              \
    {.name = n, .type = TKD_T_OBJ, .flags = TKD_F_REQUIRED, .fields = mspt_fields, .ref = "mspt", \
     .desc = d}

static const tkd_field agones_info_fields[] = {
    R_STR("sdk", "the SDK server, 127.0.0.1:PORT"),
    {.name = "state", .type = TKD_T_STR, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .desc = "GameServer status.state (null: not seen yet)"},
    {.name = "name", .type = TKD_T_STR, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .desc = "GameServer name"},
    R_BOOL("ready", "POST /ready was accepted"),
    R_BOOL("reachable", "the SDK server answered the last request"), {0}};

static const tkd_field info_result[] = {
    R_STR("name", "\"tickd\""), R_STR("version", NULL),
    R_INT("protocol", "protocol version (1)"),
    R_ARR("methods", "every method the daemon answers"),
    R_ARR("classes", "entity classes, plugins' included"), R_INT("pid", NULL),
    {.name = "socket", .type = TKD_T_STR, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE},
    R_NUM("tick_rate", "max tick rate, Hz (0: unlimited)"), R_NUM("fixed_dt", "s (0: real dt)"),
    R_STR("pacing", NULL), R_INT("threads", "threads that run ticks ([engine] threads)"),
    {.name = "config", .type = TKD_T_STR, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .desc = "the config file read"},
    {.name = "instance", .type = TKD_T_STR, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .desc = "[instance] name (null: none)"},
    {.name = "agones", .type = TKD_T_OBJ, .flags = TKD_F_REQUIRED | TKD_F_NULLABLE,
     .fields = agones_info_fields, .desc = "the Agones GameServer (null: Agones is off)"},
    {0}};

static const tkd_field stats_result[] = {
    R_INT("frame", NULL), R_NUM("world_time", "s"), R_NUM("real_time", "s"),
    R_NUM("target_hz", NULL), R_NUM("tps_1s", NULL), R_NUM("tps_10s", NULL), R_NUM("tps_1m", NULL),
    R_MSPT("mspt", "ms per tick over the last minute"),
    R_OBJ("groups", "ms of the last frame per tick group (wall time)"),
    R_OBJ("threads", "the last frame's parallel ticks: threads, runs, runs_split, "
                     "parallel_ticks, worker_ticks, worker_ms, groups_worker_ms"),
    R_NUM("start_frame_ms", NULL),
    R_NUM("timers_ms", NULL), R_NUM("tickables_ms", NULL), R_INT("ticks_run_last_frame", NULL),
    R_INT("overruns", NULL), R_NUM("behind_s", NULL), R_NUM("last_frame_ms", NULL),
    R_NUM("last_frame_cpu_ms",
          "CPU time of the frame thread in the last frame's work (but requests run while waiting)"),
    R_OBJ("split_ms", "the last frame's work: requests, ticks, timers, tickables, ticker, other"),
    R_NUM("gap_ms", NULL), R_NUM("gap_max_ms_10s", NULL), R_INT("slow_requests", NULL),
    R_INT("log_suppressed", NULL), R_INT("entities", NULL),
    R_OBJ("tick_functions", "enabled, disabled, cooling_down"),
    R_OBJ("timers", "active, paused, pending"), R_INT("timer_actions", NULL),
    R_INT("timer_action_errors", NULL), R_INT("tickables", NULL), R_INT("clients", NULL),
    R_INT("requests", NULL), R_INT("errors", NULL), R_INT("events_dropped", NULL),
    R_BOOL("paused", NULL), R_INT("rss_bytes", NULL),
    R_OBJ("methods", "per method: calls, errors, time"),
    O_OBJ("journal", "with [journal] path: path, fsync, size, records, bytes, writes, "
                     "write_max_ms, fsyncs, fsync_max_ms, backlog_bytes, rewrites, failing"),
    {0}};

static const tkd_field tick_rate_params[] = {
    P_NUM("hz", TKD_F_REQUIRED, 0, 10000, "max tick rate in Hz (0: unlimited)"), {0}};
static const tkd_field tick_rate_result[] = {R_NUM("hz", NULL), {0}};

static const tkd_field sprint_params[] = {
    P_INT("frames", TKD_F_REQUIRED, 1, 1000000000, "frames to run unpaced"), {0}};
static const tkd_field sprint_result[] = {
    R_INT("frames", "frames run"), O_BOOL("stopped", "true: engine.sprint_stop ended it"),
    R_NUM("seconds", NULL), R_MSPT("mspt", NULL), {0}};

static const tkd_field profile_params[] = {
    {.name = "seconds", .type = TKD_T_NUM, .flags = TKD_F_DEFAULT | TKD_F_EXCL_MIN, .min = 0,
     .max = PROFILE_MAX_SECONDS, .def = 10, .desc = "how long (not with frames)"},
    P_INT("frames", 0, 1, PROFILE_MAX_FRAMES, "how many frames (not with seconds)"), {0}};
static const tkd_field profile_result[] = {
    R_INT("frames", NULL), R_NUM("seconds", NULL), R_NUM("work_ms", NULL),
    R_NUM("ticks_ms", "summed over the threads that ran them"),
    R_NUM("worker_ms", "of ticks_ms, on worker threads"), R_NUM("timers_ms", NULL), R_NUM("tickables_ms", NULL), R_NUM("requests_ms", NULL),
    R_INT("requests", NULL), R_OBJ("groups_ms", NULL),
    R_ARR("classes", "time per class x group x level, most first"),
    R_ARR("timers", "time per timer action method"), R_ARR("tickables", "time per class"),
    R_ARR("slowest", "the slowest ticks"), R_ARR("histogram", "frames per ms bucket"),
    R_OBJ("sampling", NULL), {0}};

const tkd_method tkd__engine_methods[] = {
    {"engine.info", m_engine_info, tkd__no_params, info_result,
     "the daemon's name, version, protocol, methods and entity classes", NULL},
    {"engine.stats", m_engine_stats, tkd__no_params, stats_result,
     "frame, TPS, ms per tick, group times and counters", NULL},
    {"engine.set_tick_rate", m_engine_set_tick_rate, tick_rate_params, tick_rate_result,
     "set the max tick rate", NULL},
    {"engine.sprint", m_engine_sprint, sprint_params, sprint_result,
     "run frames as fast as possible, then answer with their timing", "Answered later."},
    {"engine.sprint_stop", m_engine_sprint_stop, tkd__no_params, tkd__empty_result,
     "stop running sprints (each answers what it ran, stopped: true)", NULL},
    {"engine.profile", m_engine_profile, profile_params, profile_result,
     "time per class, group and level, timers, tickables and the slowest ticks",
     "Answered later; one per connection."},
    {"engine.shutdown", m_engine_shutdown, tkd__no_params, tkd__empty_result,
     "stop the daemon gracefully", NULL},
    {0}};
