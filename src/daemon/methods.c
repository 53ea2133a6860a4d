/*
 * methods.c - every method of PROTOCOL.md, run on the frame thread at the
 * frame boundary (or from a timer action, mid-frame): the table and the
 * dispatch (tkd_exec), the answering helpers, the waiters of answered-later
 * calls and the requests done in slices.  The methods themselves are in one
 * file per area: m_engine.c, m_world.c, m_level.c, m_entity.c, m_tick.c,
 * m_timer.c, m_tickable.c, m_events.c, m_agones.c (methods_int.h is what they share).
 *
 * A handler reads and checks all of its params first, then changes state:
 * a request that fails validation changes nothing.  "Answered later"
 * methods (world.step, engine.sprint) keep their call in a waiter that the
 * post-frame hook completes; engine.profile and world.trace live in
 * profile.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods_int.h"
#include "replay.h"

/* ---- answering ---------------------------------------------------------------- */

/* A client's request that changed the world goes to the journal the moment
 * it succeeded (answered, or deferred to answer later), before its reply
 * exists: the reply then waits for the record (the server's gate). */
static void record(req *r)
{
    if (r->recorded || !r->rec)
        return;
    r->recorded = true;
    tkd_rec_request(r->d, r->method, r->params);
}

void ok(req *r, json_t *result)
{
    record(r);
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
    } else if (r->client) {
        /* A recorded request that succeeded when it ran: the replay is
         * not following the run any more. */
        r->d->replay_failures++;
        tk_log_warn("journal: replaying %s failed (%d): %s", r->method, code, msg);
    } else {
        r->d->action_errors++;
        tk_log_warn("timer action %s failed (%d): %s", r->method, code, msg);
    }
}

void fail(req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fail(req *r, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(r, code, fmt, ap);
    va_end(ap);
}

void fail_p(req *r, const tkd_perr *e) { fail(r, e->code, "%s", e->msg); }

void fail_tk(req *r, int tk_err, const char *msg)
{
    fail(r, tkd_code_from_tk(tk_err), "%s", msg);
}

void defer(req *r)
{
    record(r);
    r->answered = true;
    if (r->call)
        tkd_call_defer(r->call);
}

/*
 * What one reply may hold: the client's control.max_output less room for
 * the envelope, so a listing is never computed past what could be sent.
 * Timer actions (no client) get the same bound.
 */
size_t out_budget(req *r)
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
uint64_t list_deadline(req *r)
{
    double ms = r->d->cfg.request_budget_ms > 0 ? r->d->cfg.request_budget_ms : 4;
    return tk_clock_now_ns() + (uint64_t)(ms * 1e6);
}

/* A page cut short: {"truncated": true, "next_offset"} in its result. */
void page_cut(json_t *o, uint64_t next_offset)
{
    json_object_set_new(o, "truncated", json_true());
    json_object_set_new(o, "next_offset", jid(next_offset));
}

/* Add the encoded size of `item` (and a comma) to *used; false if that
 * passes `budget` (then *used is unchanged). */
bool fits(size_t *used, size_t budget, const json_t *item)
{
    size_t n = json_dumpb(item, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY) + 1;
    if (*used + n > budget)
        return false;
    *used += n;
    return true;
}

void add_waiter(tkd *d, tkd_waiter *w)
{
    w->next = d->waiters;
    d->waiters = w;
}

static void sprint_done(tkd *d, tkd_waiter *w, uint64_t now, bool stopped);

/* Answer and drop every waiter of `kind` (stopped); how many there were. */
size_t stop_waiters(tkd *d, waiter_kind kind)
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

json_t *spawn_result(tks_id first, uint64_t count)
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

void job_add(req *r, tkd_job *j)
{
    j->call = r->call;
    tkd_job **pp = &r->d->jobs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = j;
    defer(r);
    if (r->call)
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

json_t *destroyed_result(uint64_t n)
{
    json_t *o = json_object();
    json_object_set_new(o, "destroyed", jid(n));
    return o;
}

/* A job ends with an error: its call answers it; in a replay (nobody to
 * answer), the run being replayed did not fail there: said and counted. */
static void job_error(tkd *d, tkd_job *j, int code, const char *msg)
{
    if (j->call) {
        tkd_call_error(j->call, code, NULL, "%s", msg);
    } else if (d->replay) {
        d->replay_failures++;
        tk_log_warn("journal: replaying %s failed (%d): %s", job_method(j), code, msg);
    }
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
            job_error(d, j, rc, lerr);
            return true;
        }
        tk_log_info("world.load: %s (%lld entities)",
                    json_string_value(json_object_get(info, "path")),
                    (long long)json_integer_value(json_object_get(info, "entities")));
        tkd_rec_loaded(d); /* a snapshot point of the journal */
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
            char msg[TKD_ERR_MAX];
            snprintf(msg, sizeof msg,
                     "%s (the spawn stopped after %llu of %llu entities; nothing is left of it)",
                     err, (unsigned long long)done, (unsigned long long)j->req->count);
            job_error(d, j, rc == TK_ELIMIT ? -32003 : rc == TK_ENOENT ? -32001 : -32602, msg);
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
                job_error(d, j, rc == TK_ESTATE ? -32002 : -32001, err);
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
        do {
            tkd_rec_step(d); /* where a slice falls depends on the clock */
            over = job_step(d, j);
        } while (!over && tk_clock_now_ns() < deadline);
        if (!over)
            return true;
        d->jobs = j->next;
        job_free(j);
        if (tk_clock_now_ns() >= deadline)
            break;
    }
    return tkd_jobs_ready(d);
}

bool tkd_jobs_ready(const tkd *d)
{
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

bool tkd_jobs_replay_step(tkd *d)
{
    tkd_job *j = d->jobs;
    if (!j)
        return false;
    if (job_step(d, j)) { /* a load waits for its reading here */
        d->jobs = j->next;
        job_free(j);
    }
    return true;
}

static void job_cancel(tkd *d, tkd_job *j);

bool tkd_jobs_replay_cancel(tkd *d)
{
    tkd_job *j = d->jobs;
    if (!j)
        return false;
    d->jobs = j->next;
    if (j->kind != JOB_LOAD) /* a load cancelled was not applied: nothing to undo */
        job_cancel(d, j);
    job_free(j);
    return true;
}

/* A job that will not finish (shutdown): undo a spawn, answer -32004. */
static void job_cancel(tkd *d, tkd_job *j)
{
    uint64_t done = j->done;
    if (j->kind == JOB_LOAD) {
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

/*
 * {key: [item(x) ...], "total"}: the items the core's iterator `next` gives,
 * skipping `offset`, at most `limit` (default 100), and never more than fit
 * in a reply (out_budget): a page cut short says "truncated": true and the
 * "next_offset" to ask for.
 */
void list_reply(req *r, const char *key,
                       bool (*next)(const tk_world_t *, uint64_t *, uint64_t *),
                       json_t *(*item)(tkd *, uint64_t), uint64_t total)
{
    uint64_t offset = arg(r, "offset")->u, limit = arg(r, "limit")->u;
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

/* ---- the table --------------------------------------------------------------------------- */

const tkd_field tkd__no_params[] = {{0}};
const tkd_field tkd__empty_result[] = {{0}};
const tkd_field tkd__page_params[] = {
    {.name = "offset", .type = TKD_T_INT, .flags = TKD_F_DEFAULT, .lo = 0, .hi = UINT64_MAX,
     .def = 0, .desc = "items to skip"},
    {.name = "limit", .type = TKD_T_INT, .flags = TKD_F_DEFAULT, .lo = 0, .hi = LIST_MAX,
     .def = 100, .desc = "most items in the page (fewer if the reply would pass max_output)"},
    {0}};

/* Each area's rows, in the order engine.info lists the methods (reqstats
 * counts by this order's index). */
static const tkd_method *const areas[] = {
    tkd__engine_methods, tkd__world_methods, tkd__level_methods,    tkd__entity_methods,
    tkd__tick_methods,   tkd__timer_methods, tkd__tickable_methods, tkd__events_methods,
    tkd__agones_methods, tkd__rpc_methods};

#define MAX_METHODS 96
static const tkd_method *all[MAX_METHODS];
static size_t n_methods;

const tkd_method *const *tkd__methods(size_t *n)
{
    if (!n_methods) {
        for (size_t a = 0; a < sizeof areas / sizeof *areas; a++) {
            for (const tkd_method *m = areas[a]; m->name; m++) {
                if (n_methods == MAX_METHODS || n_methods == TKD_REQSTATS_MAX_METHODS) {
                    tk_log_error("methods: more than %d methods", MAX_METHODS);
                    abort();
                }
                all[n_methods++] = m;
            }
        }
    }
    *n = n_methods;
    return all;
}

#define N_METHODS n_methods

const char *const *tkd_method_names(void)
{
    static const char *names[MAX_METHODS + 1];
    size_t n;
    const tkd_method *const *m = tkd__methods(&n);
    if (!names[0])
        for (size_t i = 0; i < n; i++)
            names[i] = m[i]->name;
    return names;
}

/* The index of `name` in the table, or N_METHODS. */
static size_t method_index(const char *name)
{
    size_t n;
    const tkd_method *const *m = tkd__methods(&n);
    size_t i = 0;
    while (name && i < n && strcmp(m[i]->name, name))
        i++;
    return name ? i : n;
}

bool tkd_method_exists(const char *name)
{
    size_t n;
    tkd__methods(&n);
    return method_index(name) < n;
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
    req r = {.d = d, .call = call, .client = call != NULL || d->replay_req, .method = method,
             .params = params};
    char jerr[320];
    uint64_t t0 = tk_clock_now_ns();
    size_t n;
    const tkd_method *const *table = tkd__methods(&n);
    size_t i = method_index(method);
    /* Looked up once: the journal records a client's change when it succeeds. */
    r.rec = call && d->journal && !d->replay && i < N_METHODS && tkd_rec_method(method);
    tkd_perr pe;
    if (i == N_METHODS) {
        fail(&r, -32601, "method not found: %s", method);
    } else if (call && d->replay && !tkd_method_readonly(method) && strcmp(method, "world.step")) {
        fail(&r, -32002,
             "%s: this daemon replays a journal (tickd --replay): it serves the methods that read "
             "and world.step, which replays the next recorded frames",
             method);
    } else if (r.rec && tkd_rec_failing(d, jerr, sizeof jerr)) {
        /* Nothing that changes the world runs while it cannot be recorded. */
        fail(&r, -32603, "%s: refused: %s (retried every second)", method, jerr);
    } else if (d->cfg.max_memory && !d->replay && grows_state(method) && over_memory(d)) {
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
    } else if (r.m = table[i], tkd_p_check(params, r.m->params, "", true, r.v, &pe) < 0) {
        /* What the table refuses never reaches the handler. */
        fail_p(&r, &pe);
    } else {
        r.m->fn(&r);
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
        if (j->kind == JOB_LOAD && tkd_snapshot_load_done(j->load)) {
            /* Read already: applied, as asked (a save_on_exit then holds it). */
            tkd_rec_step(d);
            job_step(d, j);
        } else {
            tkd_rec_cancel(d);
            job_cancel(d, j);
        }
        d->jobs = j->next;
        job_free(j);
    }
    free(d->info_text);
    d->info_text = NULL;
    tkd__discover_free();
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
