/*
 * daemon.c - the daemon's lifecycle and frame-loop hooks (daemon.h).
 *
 *   init:   engine (from config) -> entity layer -> levels -> event base ->
 *           control socket -> signals (libevent evsignal: handlers only set
 *           flags) -> "ready" (READY=1 to systemd, notify.h).
 *   frame:  wait hook = libevent loop until the deadline (precise timer),
 *           then a short spin; pre_world = SIGHUP reload + the queued
 *           requests (deferred commands); post_frame = answered-later
 *           requests, frame/overrun events, the "can't keep up" warning,
 *           replies flushed before the next wait (Redis beforeSleep),
 *           the systemd watchdog ping (also from a long idle wait, never
 *           while a frame runs).
 *   fini:   answer what is pending, stop accepting, flush, close, remove
 *           the socket file.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "metrics.h"
#include "replay.h"
#include "snapshot.h"

#define DRAIN_MARGIN_NS 500000ull /* stop running requests this long before it */
#define JOB_SLICE_NS 2000000ull   /* requests in slices between two socket passes */

/* ---- events ---------------------------------------------------------------- */

static bool subscribed(tkd *d, tkd_topic t) { return tkd_server_topic_subscribers(d->srv, t) > 0; }

static void on_slow_tick(void *ud, tk_tick_id id, void *target, tk_class_id cls, uint64_t ns,
                         size_t n)
{
    (void)target;
    tkd *d = ud;
    if (ns > d->cur_slowest.ns) {
        const char *cname = tk_tick_class_name(d->world, cls);
        tk_tick_info ti;
        const char *g = tk_tick_get(d->world, id, &ti) == 0 ? tk_group_name(ti.actual_group) : "?";
        d->cur_slowest.ns = ns;
        snprintf(d->cur_slowest.what, sizeof d->cur_slowest.what, "class %s in %s%s",
                 cname ? cname : "?", g, n > 1 ? " (batch)" : "");
    }
    if (!subscribed(d, TKD_TOPIC_SLOW_TICK))
        return;
    int comp = -1;
    const tks_entity *e = tks_tick_owner(d->sim, id, &comp);
    json_t *p = json_object();
    json_object_set_new(p, "entity", e ? json_integer((json_int_t)tks_entity_id(e)) : json_null());
    json_object_set_new(p, "component", comp < 0 ? json_null() : json_integer(comp));
    const char *cn = tk_tick_class_name(d->world, cls);
    json_object_set_new(p, "class", json_string(cn ? cn : "?"));
    json_object_set_new(p, "ms", json_real((double)ns / 1e6));
    if (n > 1)
        json_object_set_new(p, "batch", json_integer((json_int_t)n));
    json_object_set_new(p, "frame", json_integer((json_int_t)tk_world_frame(d->world)));
    tkd_server_publish(d->srv, TKD_TOPIC_SLOW_TICK, p);
}

/* Set on the thread that runs frames and owns the event loop. */
static _Thread_local bool t_frame_thread;

/* Warnings and errors to `log` subscribers.  Only the frame thread's: the
 * server is not touched from other threads (a world.load building aside,
 * saves); theirs are in the log all the same. */
static void on_log_forward(void *ud, tk_log_level level, const char *msg)
{
    tkd *d = ud;
    if (!t_frame_thread || !d->srv || !subscribed(d, TKD_TOPIC_LOG))
        return;
    json_t *p = json_object();
    json_object_set_new(p, "level", json_string(tk_log_level_name(level)));
    json_object_set_new(p, "message", json_string(msg));
    tkd_server_publish(d->srv, TKD_TOPIC_LOG, p);
}

static bool stats_tick(void *ud, double dt)
{
    (void)dt;
    tkd *d = ud;
    tkd_logging_flush(); /* report floods that stopped */
    if (subscribed(d, TKD_TOPIC_STATS))
        tkd_server_publish(d->srv, TKD_TOPIC_STATS, tkd_stats_json(d));
    return true;
}

/* systemd's STATUS= line: "tick rate 60 Hz, 59.9 TPS, 1000 entities". */
static void status_text(tkd *d, char *buf, size_t len)
{
    tk_engine_stats st;
    tk_engine_get_stats(d->engine, &st);
    char rate[32] = "unlimited";
    if (st.target_hz > 0)
        snprintf(rate, sizeof rate, "%g Hz", st.target_hz);
    snprintf(buf, len, "tick rate %s, %.1f TPS, %llu entities", rate, st.tps_1s,
             (unsigned long long)tks_entity_count(d->sim));
}

static bool status_tick(void *ud, double dt)
{
    (void)dt;
    tkd *d = ud;
    char buf[128];
    status_text(d, buf, sizeof buf);
    tkd_notify_status(&d->notify, buf);
    return true;
}

/* ---- hooks ----------------------------------------------------------------------- */

static void on_wake(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    tkd *d = ud;
    event_base_loopbreak(d->base);
}

static void exec_call(void *ud, tkd_call *call);

/* [snapshot] load_on_start: a missing file is a fresh start, a bad one
 * refuses to start (its error names the JSON path). */
static int load_snapshot_at_start(tkd *d, char *err, size_t errlen)
{
    const char *path = d->cfg.snapshot_path;
    struct stat st;
    if (stat(path, &st) != 0) {
        tk_log_info("snapshot: %s does not exist, starting with an empty world", path);
        return 0;
    }
    char e2[512];
    json_t *info = NULL;
    int rc = tkd_snapshot_load(d, NULL, &info, e2, sizeof e2);
    if (rc) {
        snprintf(err, errlen, "[snapshot] load_on_start: %s", e2);
        return -1;
    }
    tk_log_info("snapshot: loaded %s (%lld entities, %lld timers, %lld tickables)", path,
                (long long)json_integer_value(json_object_get(info, "entities")),
                (long long)json_integer_value(json_object_get(info, "timers")),
                (long long)json_integer_value(json_object_get(info, "tickables")));
    json_decref(info);
    /* Levels the config asks for that the snapshot did not have. */
    for (size_t i = 0; i < d->cfg.levels.count; i++) {
        tk_level_id l;
        char serr[TKS_ERR_MAX];
        if (tk_level_find(d->world, d->cfg.levels.items[i], &l) != 0 &&
            tks_level_add(d->sim, d->cfg.levels.items[i], serr) != 0) {
            snprintf(err, errlen, "[world] levels: %s", serr);
            return -1;
        }
    }
    return 0;
}

static void save_snapshot(tkd *d, const char *why)
{
    char err[512];
    json_t *info = NULL;
    if (tkd_snapshot_save(d, NULL, &info, err, sizeof err) != 0) {
        tk_log_error("snapshot (%s): %s", why, err);
        return;
    }
    tk_log_info("snapshot (%s): saved %s (%lld entities, %lld bytes)", why, d->cfg.snapshot_path,
                (long long)json_integer_value(json_object_get(info, "entities")),
                (long long)json_integer_value(json_object_get(info, "bytes")));
    json_decref(info);
}

/* [snapshot] autosave_s, on the core ticker (between frames). */
static bool autosave_tick(void *ud, double dt)
{
    (void)dt;
    tkd *d = ud;
    /* In a child process; skipped while another save runs. */
    char err[512];
    int rc = tkd_snapshot_save_bg(d, NULL, NULL, "autosave", err, sizeof err);
    if (rc == TKD_SNAPSHOT_BUSY)
        tk_log_debug("snapshot (autosave): skipped: %s", err);
    else if (rc)
        tk_log_error("snapshot (autosave): %s", err);
    return true;
}

/*
 * Between frames the world is at a frame boundary: requests that arrived are
 * executed now rather than at the next frame's start (lower latency, and the
 * queue keeps draining at socket speed), as long as they leave the frame its
 * deadline.  Whatever is left runs in the next frame's pre_world hook.
 */
static void drain_between_frames(tkd *d, uint64_t deadline)
{
    if (tkd_rec_backlogged(d))
        return; /* the journal's disk is behind: requests wait in their queues */
    uint64_t t0 = tk_clock_now_ns(), now = t0;
    uint64_t until = deadline - DRAIN_MARGIN_NS;
    size_t n = 0;
    while (now < until) {
        /* Requests in slices first: they came before what is still queued. */
        bool jobs = d->jobs && tkd_jobs_run(d, until);
        size_t ran = tkd_server_drain_until(d->srv, exec_call, d, until);
        n += ran;
        now = tk_clock_now_ns();
        if (!jobs && !ran) /* nothing more now (a load may be reading aside) */
            break;
    }
    tkd_rec_commit(d);
    if (now > t0)
        tk_engine_add_work(d->engine, TK_WORK_REQUESTS, now - t0);
    if (n && tkd_prof_active(d->prof))
        tkd_prof_requests(d, n, t0, now - t0);
}

/* Time the control socket's callbacks spent (reading, framing, parsing,
 * writing) belongs to the next frame's accounting too. */
static void account_io(tkd *d)
{
    uint64_t ns = tkd_server_take_busy_ns(d->srv);
    if (ns)
        tk_engine_add_work(d->engine, TK_WORK_OTHER, ns);
}

/*
 * The time requests may take at a frame's start: [control] request_budget_ms,
 * or, when frames run back to back (unpaced, or behind: no idle time to run
 * them in), as much as the last frame's own work if that is more, so that
 * requests always get at least half of the frame thread.
 */
static uint64_t request_budget_ns(tkd *d)
{
    uint64_t b = (uint64_t)(d->cfg.request_budget_ms * 1e6);
    const tk_frame_info *last = tk_engine_last_frame(d->engine);
    if (last && (last->period_ns == 0 || last->gap_ns > last->period_ns + last->period_ns / 20)) {
        uint64_t own = last->work_ns > last->requests_ns ? last->work_ns - last->requests_ns : 0;
        if (own > b)
            b = own;
    }
    return b;
}

/*
 * The engine's wait: serve the sockets until the frame is due, with one
 * wake-up per frame.  The libevent loop runs until TK_CLOCK_SPIN_NS before
 * the deadline (a precise timer: a timerfd, no slack), with the requests
 * that arrived run between frames, and the engine calls again until the
 * deadline; the last stretch is one pass over the sockets and the spin of
 * tk_clock_sleep_until.  That is the wait of a bare clock_nanosleep loop
 * (one hrtimer wake-up, then the same spin), with the socket served in it:
 * the bench's pacing_jitter_ratio compares the two.  A second sleep for the
 * last stretch (the loop until 0.5 ms before, then clock_nanosleep) was
 * measured worse on a loaded 2-vCPU VM: each wake-up is another chance to
 * wait for a CPU, and frames more than 1 ms late doubled.  Deadline 0
 * (behind, or unpaced): one bounded pass, no wait.
 */
static void wait_hook(void *ud, uint64_t deadline)
{
    tkd *d = ud;
    if (d->replay) { /* the journal's frames run back to back */
        if (d->srv)
            tkd_server_flush(d->srv);
        return;
    }
    tkd_rec_release(d);
    tkd_server_flush(d->srv);
    if (d->frame_done) {
        /* The start of the idle time, the frame's events on their way: a
         * save starts here (the copy and fork fit in the rest of the period). */
        d->frame_done = false;
        if (!d->shutdown)
            tkd_snapshot_frame_end(d);
    }
    if (deadline == 0 || d->shutdown) {
        /* Behind (or unpaced): one bounded pass over the sockets; shutting
         * down: read everything that was sent, it will be answered. */
        tkd_server_set_deadline(d->srv, d->shutdown ? 0 : tk_clock_now_ns() + request_budget_ns(d));
        event_base_loop(d->base, EVLOOP_NONBLOCK);
        tkd_server_flush(d->srv);
        account_io(d);
        return;
    }
    uint64_t now = tk_clock_now_ns();
    tkd_notify_watchdog(&d->notify, now); /* a long idle wait between frames */
    tkd_agones_tick(d->agones, now);      /* the same for Agones' health pings */
    if (!d->reload && tkd_jobs_ready(d) && deadline > now + DRAIN_MARGIN_NS) {
        /* A request in slices can go on: the idle time is its, in slices
         * of JOB_SLICE_NS with a pass over the sockets between them, to
         * the drain margin before the deadline (the engine calls again
         * for the rest of the wait). */
        tkd_server_set_deadline(d->srv, deadline);
        d->idle_deadline_ns = deadline;
        do {
            event_base_loop(d->base, EVLOOP_NONBLOCK);
            uint64_t until = now + JOB_SLICE_NS + DRAIN_MARGIN_NS;
            drain_between_frames(d, until < deadline ? until : deadline);
            tkd_server_flush(d->srv);
            now = tk_clock_now_ns();
        } while (tkd_jobs_ready(d) && now + DRAIN_MARGIN_NS < deadline && !d->shutdown);
        d->idle_deadline_ns = 0;
        account_io(d);
        if (now + DRAIN_MARGIN_NS < deadline)
            return; /* done with time left: the engine waits as usual */
        tkd_server_set_deadline(d->srv, deadline);
        event_base_loop(d->base, EVLOOP_NONBLOCK);
        tkd_server_flush(d->srv);
        account_io(d);
        tk_clock_sleep_until(deadline, TK_CLOCK_SPIN_NS);
        return;
    }
    if (deadline > now + TK_CLOCK_SPIN_NS) {
        uint64_t ns = deadline - now - TK_CLOCK_SPIN_NS;
        uint64_t ping = tkd_notify_watchdog_due(&d->notify);
        if (ping > now && ping - now < ns)
            ns = ping - now; /* the engine calls again until the deadline */
        uint64_t beat = tkd_agones_due(d->agones);
        if (beat > now && beat - now < ns)
            ns = beat - now;
        struct timeval tv = {(time_t)(ns / 1000000000ull), (suseconds_t)((ns % 1000000000ull) / 1000)};
        event_add(d->wake, &tv);
        tkd_server_set_deadline(d->srv, deadline);
        event_base_loop(d->base, EVLOOP_ONCE);
        event_del(d->wake);
        if (!d->reload) {
            d->idle_deadline_ns = deadline;
            drain_between_frames(d, deadline);
            d->idle_deadline_ns = 0;
        }
        tkd_server_flush(d->srv);
        account_io(d);
        return;
    }
    tkd_server_set_deadline(d->srv, deadline);
    event_base_loop(d->base, EVLOOP_NONBLOCK);
    tkd_server_flush(d->srv);
    account_io(d);
    tk_clock_sleep_until(deadline, TK_CLOCK_SPIN_NS);
}

unsigned tkd_threads(unsigned configured)
{
    if (configured)
        return configured;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > TK_ENGINE_MAX_THREADS ? TK_ENGINE_MAX_THREADS : (unsigned)n;
}

static void reload_change(void *ud, const tkd_config_key *key, const char *old_text,
                          const char *new_text, bool needs_restart)
{
    tkd *d = ud;
    if (needs_restart) {
        tk_log_warn("config: [%s] %s changed (%s -> %s) but needs a restart to apply", key->section,
                    key->name, old_text, new_text);
        return;
    }
    tk_log_info("config: [%s] %s = %s (was %s)", key->section, key->name, new_text, old_text);
    const char *s = key->section, *n = key->name;
    if (!strcmp(s, "engine") && !strcmp(n, "tick_rate"))
        tk_engine_set_tick_rate(d->engine, d->cfg.tick_rate);
    else if (!strcmp(s, "engine") && !strcmp(n, "max_dt"))
        tk_engine_set_max_dt(d->engine, d->cfg.max_dt);
    else if (!strcmp(s, "engine") && !strcmp(n, "pacing"))
        tk_engine_set_pacing(d->engine, d->cfg.pacing);
    else if (!strcmp(s, "engine") && !strcmp(n, "threads")) {
        if (tk_engine_set_threads(d->engine, tkd_threads(d->cfg.threads)) != 0)
            tk_log_error("config: [engine] threads = %u: %s; still %u", d->cfg.threads,
                         tk_world_last_error(d->world), tk_engine_threads(d->engine));
    } else if (!strcmp(s, "engine") && !strcmp(n, "split_min_us"))
        tk_engine_set_split_min(d->engine, d->cfg.split_min_us);
    else if (!strcmp(s, "world") && !strcmp(n, "time_dilation"))
        tk_world_set_time_dilation(d->world, d->cfg.time_dilation, NULL);
    else if (!strcmp(s, "world") && !strcmp(n, "max_entities"))
        tks_set_max_entities(d->sim, d->cfg.max_entities);
    else if (!strcmp(s, "world") && !strcmp(n, "max_tick_functions"))
        tks_set_max_tick_functions(d->sim, d->cfg.max_tick_functions);
    else if (!strcmp(s, "world") && !strcmp(n, "max_template_bytes"))
        tks_set_max_template_bytes(d->sim, d->cfg.max_template_bytes);
    else if (!strcmp(s, "journal") && !strcmp(n, "fsync") && d->journal)
        tkd_journal_set_fsync(d->journal, d->cfg.journal_fsync);
    /* What the world follows goes to the journal (a replay follows it too). */
    if (!strcmp(s, "world"))
        tkd_rec_config(d, s, n);
    else if (!strcmp(s, "control") && !strcmp(n, "max_clients"))
        tkd_server_set_max_clients(d->srv, d->cfg.max_clients);
    else if (!strcmp(s, "control") && !strcmp(n, "max_line"))
        tkd_server_set_max_line(d->srv, d->cfg.max_line);
    else if (!strcmp(s, "control") && !strcmp(n, "max_pending"))
        tkd_server_set_max_pending(d->srv, d->cfg.max_pending);
    else if (!strcmp(s, "control") && !strcmp(n, "max_batch"))
        tkd_server_set_max_batch(d->srv, d->cfg.max_batch);
    else if (!strcmp(s, "control") && !strcmp(n, "max_output"))
        tkd_server_set_max_output(d->srv, d->cfg.max_output);
    else if (!strcmp(s, "control") && !strcmp(n, "max_input"))
        tkd_server_set_max_input(d->srv, d->cfg.max_input);
    else if (!strcmp(s, "control") &&
             (!strcmp(n, "idle_timeout_s") || !strcmp(n, "line_timeout_s")))
        tkd_server_set_timeouts(d->srv, (uint64_t)(d->cfg.idle_timeout_s * 1e3),
                                (uint64_t)(d->cfg.line_timeout_s * 1e3));
    else if (!strcmp(s, "stats") && !strcmp(n, "slow_tick_ms"))
        tk_world_set_slow_tick(d->world, (uint64_t)(d->cfg.slow_tick_ms * 1e6), on_slow_tick, d);
    else if (!strcmp(s, "log") && !strcmp(n, "level"))
        tk_log_set_level(d->cfg.log_level);
    else if (!strcmp(s, "snapshot") && !strcmp(n, "autosave_s")) {
        if (d->autosave_ticker)
            tk_ticker_remove(d->engine, d->autosave_ticker);
        d->autosave_ticker = TK_TICKER_NONE;
        if (d->cfg.autosave_s > 0)
            tk_ticker_add(d->engine, d->cfg.autosave_s, autosave_tick, d, &d->autosave_ticker);
    }
}

static void do_reload(tkd *d)
{
    char err[512];
    d->reload = false;
    tkd_notify_reloading(&d->notify);
    tk_log_info("SIGHUP: reloading %s", d->cfg.path ? d->cfg.path : "(built-in defaults)");
    int n = tkd_config_reload(&d->cfg, NULL, reload_change, d, err, sizeof err);
    if (n < 0)
        tk_log_error("reload failed, nothing changed: %s", err);
    else
        tk_log_info("reload done: %d setting%s changed", n, n == 1 ? "" : "s");
    char status[128];
    status_text(d, status, sizeof status);
    tkd_notify_ready(&d->notify, status);
}

static void exec_call(void *ud, tkd_call *call)
{
    tkd *d = ud;
    tkd_exec(d, call, tkd_call_method(call), tkd_call_params(call));
}

bool tkd_note_request(tkd *d, const char *method, uint64_t ns, bool action)
{
    if (ns > d->cur_slowest.ns) {
        d->cur_slowest.ns = ns;
        snprintf(d->cur_slowest.what, sizeof d->cur_slowest.what, "%s %s",
                 action ? "timer action" : "request", method);
    }
    double ms = (double)ns / 1e6;
    if (d->cfg.slow_request_ms <= 0 || ms < d->cfg.slow_request_ms)
        return false;
    d->slow_requests++;
    if (d->srv && subscribed(d, TKD_TOPIC_SLOW_REQUEST)) {
        json_t *p = json_object();
        json_object_set_new(p, "method", json_string(method));
        json_object_set_new(p, "ms", json_real(ms));
        json_object_set_new(p, "source", json_string(action ? "timer" : "client"));
        json_object_set_new(p, "frame", json_integer((json_int_t)tk_world_frame(d->world)));
        tkd_server_publish(d->srv, TKD_TOPIC_SLOW_REQUEST, p);
    }
    return true;
}

/* Deferred commands at the frame's start: queued requests in arrival order,
 * for at most [control] request_budget_ms (at least one runs); the rest keep
 * their order for the idle time after this frame or the next frame. */
static void pre_world(void *ud, tk_engine_t *e)
{
    (void)e;
    tkd *d = ud;
    if (d->replay)
        return; /* the boundary's records were applied before the frame */
    if (d->reload)
        do_reload(d);
    uint64_t t0 = tkd_prof_active(d->prof) ? tk_clock_now_ns() : 0;
    size_t n = 0;
    if (d->shutdown) {
        n = tkd_server_drain(d->srv, exec_call, d);
    } else if (!tkd_rec_backlogged(d)) {
        uint64_t until = tk_clock_now_ns() + request_budget_ns(d);
        if (d->jobs)
            tkd_jobs_run(d, until);
        n = tkd_server_drain_until(d->srv, exec_call, d, until);
    }
    /* The frame about to tick, after the requests of its boundary. */
    tkd_rec_frame(d);
    tkd_rec_commit(d);
    if (t0)
        tkd_prof_requests(d, n, t0, tk_clock_now_ns() - t0);
}

/* The lag line: how far behind, and what was slowest in the worst frame of
 * the streak (a request, a timer action, or a tick class and its group). */
static void lag_account(tkd *d, const tk_frame_info *f)
{
    struct tkd_culprit c = d->cur_slowest;
    if (!c.ns || c.ns * 2 < f->work_ns) {
        /* Nothing single stood out: name the phase that took the most. */
        tk_world_frame_stats fs;
        tk_world_get_frame_stats(d->world, &fs);
        uint64_t ticks = f->world_ns > fs.timers_ns + fs.tickables_ns
                             ? f->world_ns - fs.timers_ns - fs.tickables_ns : 0;
        int gmax = 0;
        for (int i = 1; i < TK_GROUP_COUNT; i++)
            if (fs.group_ns[i] > fs.group_ns[gmax])
                gmax = i;
        struct { const char *what; uint64_t ns; } ph[] = {
            {"requests", f->requests_ns}, {"ticks", ticks}, {"timers", fs.timers_ns},
            {"tickables", fs.tickables_ns}, {"core ticker", f->ticker_ns},
            {"events and other", f->other_ns}};
        size_t best = 0;
        for (size_t i = 1; i < sizeof ph / sizeof ph[0]; i++)
            if (ph[i].ns > ph[best].ns)
                best = i;
        c.ns = ph[best].ns;
        if (best == 1)
            snprintf(c.what, sizeof c.what, "ticks in %s", tk_group_name((tk_group)gmax));
        else
            snprintf(c.what, sizeof c.what, "%s", ph[best].what);
    }
    d->cur_slowest.ns = 0;
    d->cur_slowest.what[0] = '\0';
    double behind_s = tk_engine_behind_s(d->engine);
    if (behind_s <= 0) {
        d->lag_worst.ns = 0;
        d->lag_worst_work_ns = 0;
        d->lag_prev = c;
        d->lag_prev_work_ns = f->work_ns;
        return;
    }
    /* A long frame makes the next one late: the streak starts with it. */
    if (!d->lag_worst_work_ns && d->lag_prev_work_ns) {
        d->lag_worst = d->lag_prev;
        d->lag_worst_work_ns = d->lag_prev_work_ns;
    }
    if (f->work_ns >= d->lag_worst_work_ns) {
        d->lag_worst_work_ns = f->work_ns;
        d->lag_worst = c;
    }
    d->lag_prev = c;
    d->lag_prev_work_ns = f->work_ns;
    if (behind_s * 1e3 < d->cfg.lag_warn_ms || d->sprinting)
        return;
    unsigned long suppressed = 0;
    if (!tkd_ratelimit_allow(&d->behind_rl, (double)f->start_ns / 1e9, &suppressed))
        return;
    tk_engine_stats st;
    tk_engine_get_stats(d->engine, &st);
    tk_log_warn("can't keep up: running %.0f ms / %.0f frames behind, slowest: %s %.1f ms "
                "(frame %.1f ms, target %.2f ms; mspt p50 %.2f ms)%s",
                st.behind_s * 1e3,
                f->period_ns ? st.behind_s * 1e9 / (double)f->period_ns : 0.0,
                d->lag_worst.what[0] ? d->lag_worst.what : "?", (double)d->lag_worst.ns / 1e6,
                (double)d->lag_worst_work_ns / 1e6, (double)f->period_ns / 1e6, st.mspt.p50,
                suppressed ? " (more warnings suppressed)" : "");
    d->lag_worst.ns = 0;
    d->lag_worst_work_ns = 0;
}

static void post_frame(void *ud, tk_engine_t *e, const tk_frame_info *f)
{
    (void)e;
    tkd *d = ud;
    tkd_methods_post_frame(d, f);
    if (d->replay) {
        tkd_replay_post_frame(d, f);
        if (!d->srv) { /* a recovery, before the socket opens */
            tkd_notify_watchdog(&d->notify, f->start_ns + f->work_ns);
            return;
        }
    } else {
        tkd_rec_post_frame(d, f);
    }
    tkd_metrics_frame(d->metrics, f);
    if (d->srv && subscribed(d, TKD_TOPIC_FRAME)) {
        json_t *p = json_object();
        json_object_set_new(p, "frame", json_integer((json_int_t)f->frame));
        json_object_set_new(p, "dt", json_real((double)f->world_dt_ns / 1e9));
        json_object_set_new(p, "ms", json_real((double)f->work_ns / 1e6));
        json_object_set_new(p, "gap_ms", json_real((double)f->gap_ns / 1e6));
        json_object_set_new(p, "cpu_ms", json_real((double)f->cpu_ns / 1e6));
        json_object_set_new(p, "split", tkd_frame_split_json(d, f));
        tkd_server_publish(d->srv, TKD_TOPIC_FRAME, p);
    }
    if (f->overrun && d->srv && subscribed(d, TKD_TOPIC_OVERRUN)) {
        json_t *p = json_object();
        json_object_set_new(p, "frame", json_integer((json_int_t)f->frame));
        json_object_set_new(p, "ms", json_real((double)f->work_ns / 1e6));
        json_object_set_new(p, "target_ms", json_real((double)f->period_ns / 1e6));
        tkd_server_publish(d->srv, TKD_TOPIC_OVERRUN, p);
    }
    lag_account(d, f);
    tkd_notify_watchdog(&d->notify, f->start_ns + f->work_ns); /* a frame completed */
    d->frame_done = true;
    tkd_agones_tick(d->agones, f->start_ns + f->work_ns);
    if (d->shutdown)
        tk_engine_stop(d->engine);
}

void tkd_serve_once(tkd *d, int timeout_ms)
{
    if (!d->srv)
        return;
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    event_add(d->wake, &tv);
    tkd_server_set_deadline(d->srv, 0);
    event_base_loop(d->base, timeout_ms > 0 ? EVLOOP_ONCE : EVLOOP_NONBLOCK);
    event_del(d->wake);
    tkd_server_drain(d->srv, exec_call, d);
    tkd_server_flush(d->srv);
}

/* The journal's writer made more replies safe: let them go. */
static void on_journal(evutil_socket_t fd, short what, void *ud)
{
    (void)fd;
    (void)what;
    tkd *d = ud;
    tkd_journal_ack(d->journal);
    tkd_rec_release(d);
}

static uint64_t journal_gate(void *ud)
{
    tkd *d = ud;
    return d->journal ? tkd_journal_gate(d->journal) : 0;
}

/* ---- signals ----------------------------------------------------------------------- */

static void on_signal(evutil_socket_t sig, short what, void *ud)
{
    (void)what;
    tkd *d = ud;
    if (sig == SIGHUP) {
        d->reload = true;
    } else {
        if (!d->shutdown)
            tk_log_info("%s: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        tkd_notify_stopping(&d->notify);
        d->shutdown = true;
        tk_engine_stop(d->engine);
    }
    event_base_loopbreak(d->base);
}

/* ---- lifecycle ---------------------------------------------------------------------- */

int tkd_init(tkd *d, char *err, size_t errlen)
{
    tkd_notify_init(&d->notify);
    tk_engine_desc ed;
    tk_engine_desc_default(&ed);
    ed.tick_rate = d->cfg.tick_rate;
    ed.fixed_dt = d->cfg.fixed_dt;
    ed.max_dt = d->cfg.max_dt;
    ed.pacing = d->cfg.pacing;
    ed.threads = tkd_threads(d->cfg.threads);
    ed.split_min_us = d->cfg.split_min_us;
    ed.time_dilation = d->cfg.time_dilation;
    ed.wait = wait_hook;
    ed.wait_ud = d;
    ed.pre_world = pre_world;
    ed.post_frame = post_frame;
    ed.hook_ud = d;
    int erc = tk_engine_new(&ed, &d->engine);
    if (erc != 0) {
        if (erc == TK_ENOMEM)
            snprintf(err, errlen, "[engine] threads = %u: cannot start the worker threads",
                     ed.threads);
        else
            snprintf(err, errlen, "invalid engine settings");
        return -1;
    }
    d->world = tk_engine_world(d->engine);
    tks_config sc = {.max_entities = d->cfg.max_entities,
                     .max_tick_functions = d->cfg.max_tick_functions,
                     .max_template_bytes = d->cfg.max_template_bytes};
    d->sim = tks_new(d->engine, &sc);
    for (size_t i = 0; i < d->cfg.levels.count; i++) {
        const char *name = d->cfg.levels.items[i];
        if (!strcmp(name, "persistent"))
            continue;
        char serr[TKS_ERR_MAX];
        if (tks_level_add(d->sim, name, serr) != 0) {
            snprintf(err, errlen, "[world] levels: level '%s': %s", name, serr);
            return -1;
        }
    }
    if (d->cfg.slow_tick_ms > 0)
        tk_world_set_slow_tick(d->world, (uint64_t)(d->cfg.slow_tick_ms * 1e6), on_slow_tick, d);
    tkd_ratelimit_init(&d->behind_rl, 15.0);

    struct event_config *ec = event_config_new();
    event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
    d->base = event_base_new_with_config(ec);
    event_config_free(ec);
    if (!d->base) {
        snprintf(err, errlen, "cannot create the event loop");
        return -1;
    }
    d->wake = evtimer_new(d->base, on_wake, d);

    tkd_server_config sc2;
    tkd_server_config_init(&sc2);
    sc2.path = d->cfg.socket;
    sc2.mode = d->cfg.socket_mode;
    sc2.limits.max_clients = d->cfg.max_clients;
    sc2.limits.max_line = d->cfg.max_line;
    sc2.limits.max_pending = d->cfg.max_pending;
    sc2.limits.max_batch = d->cfg.max_batch;
    sc2.limits.max_output = d->cfg.max_output;
    sc2.limits.max_input = d->cfg.max_input;
    sc2.limits.idle_timeout_ms = (uint64_t)(d->cfg.idle_timeout_s * 1e3);
    sc2.limits.line_timeout_ms = (uint64_t)(d->cfg.line_timeout_s * 1e3);
    for (size_t i = 0; i < d->cfg.plugins.count; i++) {
        char perr[TKS_ERR_MAX];
        if (tks_load_plugin(d->sim, d->cfg.plugins.items[i], perr) != 0) {
            snprintf(err, errlen, "[plugins] load: %s", perr);
            return -1;
        }
        tk_log_info("plugin %s loaded", d->cfg.plugins.items[i]);
    }
    if (d->replay_opts) {
        /* tickd --replay: the journal's base, no journal, no saves, the
         * socket only when asked for (--socket). */
        if (tkd_replay_open_tool(d, err, errlen) != 0)
            return -1;
        if (!d->replay_opts->serve)
            goto signals;
        if (tkd_server_new(d->base, &sc2, &d->srv, err, errlen) != 0)
            return -1;
        goto signals;
    }
    tkd_snapshot_remove_stale(d);
    if (d->cfg.journal_path && *d->cfg.journal_path) {
        /* The snapshot and the journal give the world back (load_on_start
         * is for the first start only). */
        if (tkd_rec_start(d, err, errlen) != 0)
            return -1;
    } else if (d->cfg.load_on_start && load_snapshot_at_start(d, err, errlen) != 0) {
        return -1;
    }
    if (d->cfg.autosave_s > 0)
        tk_ticker_add(d->engine, d->cfg.autosave_s, autosave_tick, d, &d->autosave_ticker);
    if (tkd_notify_listen_fd(&sc2.listen_fd, err, errlen) != 0)
        return -1;
    if (tkd_server_new(d->base, &sc2, &d->srv, err, errlen) != 0)
        return -1;
    if (d->journal) {
        tkd_server_set_gate(d->srv, journal_gate, d);
        d->journal_ev = event_new(d->base, tkd_journal_fd(d->journal), EV_READ | EV_PERSIST,
                                  on_journal, d);
        event_add(d->journal_ev, NULL);
    }
    if (d->cfg.readonly_socket && *d->cfg.readonly_socket &&
        tkd_server_add_readonly(d->srv, d->cfg.readonly_socket, d->cfg.readonly_socket_mode, err,
                                errlen) != 0)
        return -1;
    if (tkd_metrics_new(d, &d->metrics, err, errlen) != 0)
        return -1;
    if (tkd_agones_new(d, &d->agones, err, errlen) != 0)
        return -1;

signals:

    d->sig_term = evsignal_new(d->base, SIGTERM, on_signal, d);
    d->sig_int = evsignal_new(d->base, SIGINT, on_signal, d);
    d->sig_hup = evsignal_new(d->base, SIGHUP, on_signal, d);
    event_add(d->sig_term, NULL);
    event_add(d->sig_int, NULL);
    event_add(d->sig_hup, NULL);
    signal(SIGPIPE, SIG_IGN);

    t_frame_thread = true;
    tkd_logging_set_forward(on_log_forward, d);
    if (d->replay_opts)
        return 0;
    tk_ticker_add(d->engine, 1.0, stats_tick, d, &d->stats_ticker);
    tk_log_info("tickd %s ready: socket %s%s%s, %g Hz%s, %zu level%s", TKD_VERSION,
                tkd_server_path(d->srv) ? tkd_server_path(d->srv) : "from systemd (LISTEN_FDS)",
                tkd_server_readonly_path(d->srv) ? ", read-only socket " : "",
                tkd_server_readonly_path(d->srv) ? tkd_server_readonly_path(d->srv) : "",
                d->cfg.tick_rate,
                d->cfg.fixed_dt > 0 ? " (fixed dt)" : "", tk_level_count(d->world),
                tk_level_count(d->world) == 1 ? "" : "s");
    if (tkd_notify_enabled(&d->notify)) {
        char status[128];
        status_text(d, status, sizeof status);
        tkd_notify_ready(&d->notify, status);
        tk_ticker_add(d->engine, TKD_NOTIFY_STATUS_S, status_tick, d, &d->status_ticker);
    }
    /* The socket answers and the world is restored: Ready. */
    tkd_agones_start(d->agones);
    return 0;
}

void tkd_run(tkd *d, uint64_t max_frames)
{
    uint64_t n = 0;
    while (!d->shutdown && (max_frames == 0 || n < max_frames)) {
        tk_engine_frame(d->engine);
        n++;
        if (tk_engine_stopping(d->engine))
            break;
    }
    if (max_frames && n >= max_frames && !d->shutdown)
        tk_log_info("ran %llu frames: shutting down", (unsigned long long)n);
}

void tkd_fini(tkd *d)
{
    if (d->srv) {
        tkd_notify_stopping(&d->notify); /* SIGTERM sent it already */
        tkd_server_shutting_down(d->srv);
        /* Requests that arrived during the last frame still run and answer. */
        tkd_server_drain(d->srv, exec_call, d);
        tkd_methods_shutdown(d); /* requests in slices undone first */
        tkd_snapshot_finish(d);  /* a save child still writing: wait, answer */
        if (d->cfg.save_on_exit && d->sim && !d->replay)
            save_snapshot(d, "save_on_exit");
        tkd_agones_shutdown(d->agones); /* after the save: the pod may go soon */
        tkd_rec_shutdown(d);     /* the journal on the disk; held replies go */
        tkd_server_close_all(d->srv, 2000);
    }
    tkd_agones_free(d->agones);
    d->agones = NULL;
    tkd_rec_fini(d);
    tkd_replay_fini(d);
    tkd_logging_set_forward(NULL, NULL);
    tkd_metrics_free(d->metrics);
    d->metrics = NULL;
    if (d->srv)
        tkd_server_free(d->srv);
    if (d->sig_term)
        event_free(d->sig_term);
    if (d->sig_int)
        event_free(d->sig_int);
    if (d->sig_hup)
        event_free(d->sig_hup);
    if (d->wake)
        event_free(d->wake);
    if (d->base)
        event_base_free(d->base);
    tks_free(d->sim);
    tk_engine_free(d->engine);
    d->srv = NULL;
    d->base = NULL;
    d->sim = NULL;
    d->engine = NULL;
    tkd_notify_fini(&d->notify);
}
