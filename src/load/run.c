/*
 * run.c - one run of a scenario against tickd: the schedule, open-loop
 * dispatch over the request connections, responses and their latency, the
 * monitor connection's events, and the per-second time series.
 *
 * The loop, in the order it runs (one thread, one ppoll):
 *
 *   now = clock (read once per iteration)
 *   dispatch every instance whose intended time is <= now (and <= the end),
 *     in (time, line) order, from a min-heap of one cursor per line
 *   flush the connections' output queues
 *   ppoll until the next intended time, a readable socket, or 100 ms
 *   read responses: latency = arrival - intended time; events: frames, stats
 *
 * Open loop: an instance is queued at its intended time whatever happened to
 * the earlier ones, and its latency counts from that time, so when tickd
 * stalls the requests that should have gone out meanwhile all show the stall
 * (no coordinated omission).  How late the generator itself queued a request
 * is measured apart ("send lag"), so a saturated generator is visible too.
 *
 * Connections: `connections` request connections carry the load, each
 * instance on the line's "conn" or round robin; one more, the monitor, is
 * subscribed to the `frame` and `stats` events and carries the checks, so an
 * assertion never waits behind the load it observes.  Frame events give
 * exact per-frame work times (MSPT) for the percentiles; stats events (once
 * a second) give the rows of the time series: frame counter, tps_1s,
 * overruns, entities and RSS.  Row 0 is the baseline engine.stats taken
 * just before the start, the last one the final engine.stats.
 *
 * The run ends at the end time: nothing scheduled later is sent; answers to
 * what was sent are awaited up to the drain time; then one engine.stats
 * gives the final figures.  SIGINT/SIGTERM end it at once (no drain).
 *
 * What it deliberately is not: a closed-loop benchmark (no "send the next
 * when the previous answered") or a retrying client.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

#define SETUP_TIMEOUT_NS (10LL * TK_LOAD_NS_PER_S)   /* connect + setup calls */
#define MAX_WAIT_NS      (100LL * 1000 * 1000)       /* longest ppoll: signals, progress */
#define PROGRESS_NS      (250LL * 1000 * 1000)       /* progress line refresh */
#define DEFAULT_TAIL_NS  (2LL * TK_LOAD_NS_PER_S)    /* end without an end line */
#define MAX_UNSENT       ((size_t)256 * 1024 * 1024) /* bytes queued on one connection */

/* A request sent and not yet answered. */
typedef struct flight {
    uint64_t id;      /* JSON-RPC id; 0 = free slot */
    int64_t intended; /* ns after the start */
    uint32_t line;    /* index in sc->lines */
    uint32_t conn;    /* request connection index; nconns = the monitor */
} flight_t;

/* The next instance of one line. */
typedef struct cursor {
    int64_t t;     /* intended time of instance k, ns after the start */
    uint32_t line; /* index in sc->lines */
    uint64_t k;    /* instance index */
} cursor_t;

typedef struct run {
    const tk_load_scenario_t *sc;
    const tk_load_opts_t *opts;
    tk_load_result_t *res;
    tk_load_conn_t *conns; /* nconns request connections */
    int nconns;
    tk_load_conn_t mon; /* the monitor connection */
    uint64_t t0;        /* CLOCK_MONOTONIC ns of the start */
    int64_t now;        /* ns after the start, read once per iteration */
    bool started;       /* t0 is set: events count */
    uint64_t next_id;   /* next JSON-RPC id */
    unsigned rr;        /* round-robin position */
    int64_t end;        /* ns: nothing intended later is sent */
    /* schedule */
    cursor_t *heap; /* min-heap on (t, line) */
    size_t nheap;
    /* in flight: open addressing on id, linear probing */
    flight_t *fl;
    size_t flcap, nfl; /* slots (power of two) / used */
    uint64_t inflight_checks;
    uint32_t *line_method; /* per line: index in res->methods */
    /* baseline and previous stats event */
    uint64_t base_frame, base_overruns, base_dropped;
    uint64_t prev_overruns;
    uint64_t last_frame; /* highest frame event number seen */
    bool frame_seen;
    /* the current second (reset at each stats event) */
    tk_load_hist_t sec_mspt, sec_lat;
    uint64_t sec_sent, sec_answered, sec_errors;
    int64_t first_send;    /* ns, intended time of the first request (-1 none) */
    int64_t last_answer;   /* ns, arrival of the last response */
    int64_t next_progress; /* ns */
} run_t;

/* ---- small helpers ----------------------------------------------------- */

static int64_t rel_now(const run_t *r) { return (int64_t)(tk__load_now_ns() - r->t0); }

static uint64_t u64_of(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return json_integer_value(v) < 0 ? 0 : (uint64_t)json_integer_value(v);
    if (json_is_real(v))
        return json_real_value(v) < 0 ? 0 : (uint64_t)json_real_value(v);
    return 0;
}

static double num_of(const json_t *o, const char *key, double dflt)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static void add_failure(run_t *r, const tk_load_line_t *l, int64_t intended, char *msg)
{
    tk_load_result_t *res = r->res;
    res->checks_failed++;
    if (res->nfailures < TK_LOAD_MAX_FAILURES) {
        if (!res->failures)
            res->failures = tk__load_xcalloc(TK_LOAD_MAX_FAILURES, sizeof *res->failures);
        tk_load_failure_t *f = &res->failures[res->nfailures++];
        f->lineno = l->lineno;
        f->at = (double)intended / 1e9;
        f->msg = msg;
    } else {
        free(msg);
    }
}

/* Count one `code` in the table *codes of *n entries. */
static void count_in(tk_load_code_t **codes, size_t *n, long long code)
{
    size_t i = 0;
    while (i < *n && (*codes)[i].code > code)
        i++; /* sorted by descending code: -32001 before -32602, 0 first */
    if (i < *n && (*codes)[i].code == code) {
        (*codes)[i].n++;
        return;
    }
    *codes = tk__load_xrealloc(*codes, (*n + 1) * sizeof **codes);
    memmove(*codes + i + 1, *codes + i, (*n - i) * sizeof **codes);
    (*codes)[i].code = code;
    (*codes)[i].n = 1;
    (*n)++;
}

static void count_code(tk_load_result_t *res, long long code)
{
    count_in(&res->codes, &res->ncodes, code);
}

/* ---- schedule heap ----------------------------------------------------- */

static bool cur_less(const cursor_t *a, const cursor_t *b)
{
    return a->t < b->t || (a->t == b->t && a->line < b->line);
}

static void heap_push(run_t *r, cursor_t c)
{
    size_t i = r->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cur_less(&c, &r->heap[p]))
            break;
        r->heap[i] = r->heap[p];
        i = p;
    }
    r->heap[i] = c;
}

static cursor_t heap_pop(run_t *r)
{
    cursor_t top = r->heap[0];
    cursor_t last = r->heap[--r->nheap];
    size_t i = 0, n = r->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && cur_less(&r->heap[c + 1], &r->heap[c]))
            c++;
        if (!cur_less(&r->heap[c], &last))
            break;
        r->heap[i] = r->heap[c];
        i = c;
    }
    if (n)
        r->heap[i] = last;
    return top;
}

/* ---- flights ----------------------------------------------------------- */

static size_t fl_slot(uint64_t id, size_t cap)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static void fl_insert(run_t *r, flight_t f)
{
    if ((r->nfl + 1) * 2 > r->flcap) {
        size_t oldcap = r->flcap;
        flight_t *old = r->fl;
        r->flcap = oldcap ? oldcap * 2 : 1024;
        r->fl = tk__load_xcalloc(r->flcap, sizeof *r->fl);
        for (size_t i = 0; i < oldcap; i++) {
            if (!old[i].id)
                continue;
            size_t s = fl_slot(old[i].id, r->flcap);
            while (r->fl[s].id)
                s = (s + 1) & (r->flcap - 1);
            r->fl[s] = old[i];
        }
        free(old);
    }
    size_t s = fl_slot(f.id, r->flcap);
    while (r->fl[s].id)
        s = (s + 1) & (r->flcap - 1);
    r->fl[s] = f;
    r->nfl++;
}

/* Remove and return the flight `id`; false if unknown. */
static bool fl_take(run_t *r, uint64_t id, flight_t *out)
{
    if (!r->flcap)
        return false;
    size_t mask = r->flcap - 1, s = fl_slot(id, r->flcap);
    while (r->fl[s].id && r->fl[s].id != id)
        s = (s + 1) & mask;
    if (!r->fl[s].id)
        return false;
    *out = r->fl[s];
    r->nfl--;
    /* Backward-shift deletion keeps probe chains intact without tombstones. */
    size_t hole = s, j = s;
    for (;;) {
        j = (j + 1) & mask;
        if (!r->fl[j].id)
            break;
        size_t home = fl_slot(r->fl[j].id, r->flcap);
        bool between = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
        if (between)
            continue;
        r->fl[hole] = r->fl[j];
        hole = j;
    }
    r->fl[hole].id = 0;
    return true;
}

/* ---- dispatch ---------------------------------------------------------- */

/* Send instance `c` of its line (or count it as skipped). */
static void dispatch(run_t *r, const cursor_t *c)
{
    const tk_load_line_t *l = &r->sc->lines[c->line];
    tk_load_result_t *res = r->res;
    bool check = l->kind == TK_LOAD_CHECK;
    uint32_t ci = check ? (uint32_t)r->nconns
                        : (uint32_t)(l->conn >= 0 ? l->conn : (int)(r->rr++ % (unsigned)r->nconns));
    tk_load_conn_t *conn = check ? &r->mon : &r->conns[ci];
    uint64_t id = r->next_id++;
    if (l->prefix) {
        tk__load_buf_puts(&conn->out, l->prefix);
        tk__load_buf_printf(&conn->out, "%llu}\n", (unsigned long long)id);
    } else {
        char *why = NULL;
        json_t *params = tk__load_refs_render(&res->pools, l->params, l->consume, &why);
        if (!params) {
            if (check)
                add_failure(r, l, c->t, tk__load_strf("%s not sent: %s", l->method, why));
            else
                res->skipped++;
            free(why);
            return;
        }
        json_t *req = json_pack("{s:s, s:s, s:o, s:I}", "jsonrpc", "2.0", "method", l->method,
                                "params", params, "id", (json_int_t)id);
        char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
        if (!text)
            tk__load_oom();
        tk__load_buf_puts(&conn->out, text);
        tk__load_buf_puts(&conn->out, "\n");
        free(text);
        json_decref(req);
    }
    fl_insert(r, (flight_t){id, c->t, c->line, ci});
    if (check) {
        r->inflight_checks++;
        return;
    }
    res->sent++;
    r->sec_sent++;
    res->methods[r->line_method[c->line]].sent++;
    tk__load_hist_add(&res->lag, (uint64_t)(r->now > c->t ? r->now - c->t : 0));
    if (r->first_send < 0)
        r->first_send = c->t;
}

/* Send every instance due by now (and not after the end). */
static void dispatch_due(run_t *r)
{
    while (r->nheap && r->heap[0].t <= r->now && r->heap[0].t <= r->end) {
        cursor_t c = heap_pop(r);
        dispatch(r, &c);
        const tk_load_line_t *l = &r->sc->lines[c.line];
        if (c.k + 1 < l->count) {
            c.k++;
            c.t = tk__load_line_time(l, c.k);
            heap_push(r, c);
        }
    }
}

/* ---- responses and events ---------------------------------------------- */

static void on_response(run_t *r, json_t *msg)
{
    tk_load_result_t *res = r->res;
    const json_t *idv = json_object_get(msg, "id");
    const json_t *error = json_object_get(msg, "error");
    long long code = error ? (long long)json_integer_value(json_object_get(error, "code")) : 0;
    flight_t f;
    if (!json_is_integer(idv) || json_integer_value(idv) <= 0 ||
        !fl_take(r, (uint64_t)json_integer_value(idv), &f)) {
        /* id null (a line tickd could not parse) or an id not ours: an error
         * that belongs to no request; the request shows as unanswered. */
        if (error) {
            res->errors++;
            r->sec_errors++;
            count_code(res, code);
        }
        return;
    }
    const tk_load_line_t *l = &r->sc->lines[f.line];
    int64_t lat = r->now > f.intended ? r->now - f.intended : 0;
    char *why = NULL;
    if (l->kind == TK_LOAD_CHECK) {
        r->inflight_checks--;
        if (tk__load_expect_eval(&l->expect, msg, &why))
            res->checks_passed++;
        else
            add_failure(r, l, f.intended, tk__load_strf("%s: %s", l->method, why));
        free(why);
        return;
    }
    tk_load_method_t *m = &res->methods[r->line_method[f.line]];
    res->answered++;
    r->sec_answered++;
    m->answered++;
    tk__load_hist_add(&res->lat, (uint64_t)lat);
    tk__load_hist_add(&r->sec_lat, (uint64_t)lat);
    tk__load_hist_add(&m->lat, (uint64_t)lat);
    r->last_answer = r->now;
    if (error && l->has_expect && l->expect.error && l->expect.error == code) {
        /* The scenario asked for this error: not a failure of tickd. */
        res->expected_errors++;
        m->expected++;
        count_in(&res->xcodes, &res->nxcodes, code);
    } else if (error) {
        res->errors++;
        r->sec_errors++;
        m->errors++;
        count_code(res, code);
    } else if (l->save) {
        tk__load_pool_save(tk__load_pool_get(&res->pools, l->save), json_object_get(msg, "result"));
    }
    if (l->has_expect) {
        if (tk__load_expect_eval(&l->expect, msg, &why))
            res->checks_passed++;
        else
            add_failure(r, l, f.intended, tk__load_strf("%s: %s", l->method, why));
        free(why);
    }
}

static double pct_ms(const tk_load_hist_t *h, double p)
{
    return h->n ? (double)tk__load_hist_pct(h, p) / 1e6 : NAN;
}

static void on_stats(run_t *r, const json_t *st)
{
    tk_load_result_t *res = r->res;
    res->rows = tk__load_xrealloc(res->rows, (res->nrows + 1) * sizeof *res->rows);
    tk_load_row_t *row = &res->rows[res->nrows++];
    memset(row, 0, sizeof *row);
    row->t = (double)r->now / 1e9;
    row->frame = u64_of(st, "frame");
    row->tps = num_of(st, "tps_1s", NAN);
    row->frames = r->sec_mspt.n;
    row->mspt_p50 = pct_ms(&r->sec_mspt, 50);
    row->mspt_p95 = pct_ms(&r->sec_mspt, 95);
    row->mspt_p99 = pct_ms(&r->sec_mspt, 99);
    row->mspt_max = pct_ms(&r->sec_mspt, 100);
    uint64_t ov = u64_of(st, "overruns");
    row->overruns = ov >= r->prev_overruns ? ov - r->prev_overruns : 0;
    r->prev_overruns = ov;
    row->entities = u64_of(st, "entities");
    row->rss_bytes = u64_of(st, "rss_bytes");
    row->sent = r->sec_sent;
    row->answered = r->sec_answered;
    row->errors = r->sec_errors;
    row->lat_p50 = pct_ms(&r->sec_lat, 50);
    row->lat_p99 = pct_ms(&r->sec_lat, 99);
    tk__load_hist_reset(&r->sec_mspt);
    tk__load_hist_reset(&r->sec_lat);
    r->sec_sent = r->sec_answered = r->sec_errors = 0;
    if (row->entities > res->entities_peak)
        res->entities_peak = row->entities;
    if (row->rss_bytes > res->rss_peak)
        res->rss_peak = row->rss_bytes;
    if (isfinite(row->tps) && (!isfinite(res->tps_worst) || row->tps < res->tps_worst))
        res->tps_worst = row->tps;
}

static void on_frame(run_t *r, const json_t *fr)
{
    uint64_t frame = u64_of(fr, "frame");
    double ms = num_of(fr, "ms", -1);
    if (ms < 0)
        return;
    if (r->frame_seen && frame > r->last_frame + 1)
        r->res->frame_events_lost += frame - r->last_frame - 1;
    if (!r->frame_seen || frame > r->last_frame)
        r->last_frame = frame;
    r->frame_seen = true;
    uint64_t ns = (uint64_t)llround(ms * 1e6);
    tk__load_hist_add(&r->res->mspt, ns);
    tk__load_hist_add(&r->sec_mspt, ns);
}

/* A notification on the monitor connection (borrowed). */
static void on_note(void *arg, json_t *note)
{
    run_t *r = arg;
    if (!r->started)
        return;
    const char *method = json_string_value(json_object_get(note, "method"));
    const json_t *params = json_object_get(note, "params");
    if (!method || !json_is_object(params))
        return;
    r->now = rel_now(r);
    if (strcmp(method, "event.frame") == 0)
        on_frame(r, params);
    else if (strcmp(method, "event.stats") == 0)
        on_stats(r, params);
}

/*
 * Read and handle what arrived on connection `c`.  Returns 0, or -1 with
 * res->aborted set (tickd closed the connection or sent something that is
 * not JSON).
 */
static int drain_conn(run_t *r, tk_load_conn_t *c, const char *name)
{
    if (tk__load_conn_fill(c) < 0) {
        r->res->aborted = tk__load_strf("%s: recv: %s", name, strerror(c->err));
        return -1;
    }
    const char *line;
    size_t len;
    while (tk__load_conn_line(c, &line, &len)) {
        json_t *msg = json_loadb(line, len, 0, NULL);
        if (!json_is_object(msg)) {
            json_decref(msg);
            r->res->aborted =
                tk__load_strf("%s: tickd sent a line that is not a JSON object", name);
            return -1;
        }
        if (json_object_get(msg, "id"))
            on_response(r, msg);
        else if (c == &r->mon)
            on_note(r, msg);
        json_decref(msg);
    }
    if (c->eof) {
        r->res->aborted = tk__load_strf("%s: tickd closed the connection", name);
        return -1;
    }
    return 0;
}

/* ---- progress ---------------------------------------------------------- */

static void progress(run_t *r, bool final)
{
    if (!r->opts->progress)
        return;
    if (final) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        return;
    }
    if (r->now < r->next_progress)
        return;
    r->next_progress = r->now + PROGRESS_NS;
    const tk_load_result_t *res = r->res;
    const tk_load_row_t *row = res->nrows ? &res->rows[res->nrows - 1] : NULL;
    char tail[160] = "";
    if (row)
        snprintf(tail, sizeof tail, " | tps %.1f, mspt p99 %.2f ms | %llu entities | rss %.1f MiB",
                 row->tps, isfinite(row->mspt_p99) ? row->mspt_p99 : 0.0,
                 (unsigned long long)row->entities, (double)row->rss_bytes / 1048576.0);
    fprintf(stderr,
            "\r\033[K%s: %5.1f/%.1f s | sent %llu, answered %llu, errors %llu, "
            "in flight %llu%s",
            r->sc->name, (double)r->now / 1e9, (double)r->end / 1e9, (unsigned long long)res->sent,
            (unsigned long long)res->answered, (unsigned long long)res->errors,
            (unsigned long long)(r->nfl - r->inflight_checks), tail);
    fflush(stderr);
}

/* ---- setup and the loop ------------------------------------------------ */

/* Blocking call on the monitor connection: the result object (new), or
 * NULL with *err. */
static json_t *mon_call(run_t *r, const char *method, const char *params, char **err)
{
    uint64_t id = r->next_id++;
    char *line =
        tk__load_strf("{\"jsonrpc\":\"2.0\",\"method\":\"%s\"%s%s,\"id\":%llu}\n", method,
                      params ? ",\"params\":" : "", params ? params : "", (unsigned long long)id);
    json_t *resp = NULL;
    int rc = tk__load_conn_call(&r->mon, line, id, tk__load_now_ns() + SETUP_TIMEOUT_NS, on_note, r,
                                &resp, err);
    free(line);
    if (rc < 0) {
        char *e = tk__load_strf("%s: %s", method, *err);
        free(*err);
        *err = e;
        return NULL;
    }
    json_t *result = json_incref(json_object_get(resp, "result"));
    if (!result) {
        const json_t *error = json_object_get(resp, "error");
        const char *msg = json_string_value(json_object_get(error, "message"));
        *err = tk__load_strf("%s: error %lld: %s", method,
                             (long long)json_integer_value(json_object_get(error, "code")),
                             msg ? msg : "(no message)");
    }
    json_decref(resp);
    return result;
}

/* Per-line method index, one tk_load_method_t per distinct method. */
static void index_methods(run_t *r)
{
    tk_load_result_t *res = r->res;
    r->line_method = tk__load_xcalloc(r->sc->nlines, sizeof *r->line_method);
    for (size_t i = 0; i < r->sc->nlines; i++) {
        const tk_load_line_t *l = &r->sc->lines[i];
        if (l->kind != TK_LOAD_REQUEST)
            continue;
        size_t m = 0;
        while (m < res->nmethods && strcmp(res->methods[m].name, l->method) != 0)
            m++;
        if (m == res->nmethods) {
            res->methods = tk__load_xrealloc(res->methods, (m + 1) * sizeof *res->methods);
            memset(&res->methods[m], 0, sizeof res->methods[m]);
            res->methods[m].name = tk__load_xstrdup(l->method);
            tk__load_hist_init(&res->methods[m].lat);
            res->nmethods++;
        }
        r->line_method[i] = (uint32_t)m;
    }
}

static void run_free(run_t *r)
{
    for (int i = 0; i < r->nconns; i++)
        tk__load_conn_close(&r->conns[i]);
    free(r->conns);
    tk__load_conn_close(&r->mon);
    free(r->heap);
    free(r->fl);
    free(r->line_method);
    tk__load_hist_free(&r->sec_mspt);
    tk__load_hist_free(&r->sec_lat);
}

/* Instances of lines that will never be sent (after the end). */
static uint64_t remaining(const run_t *r)
{
    uint64_t n = 0;
    for (size_t i = 0; i < r->nheap; i++) {
        const tk_load_line_t *l = &r->sc->lines[r->heap[i].line];
        if (l->kind == TK_LOAD_REQUEST)
            n += l->count - r->heap[i].k;
    }
    return n;
}

/* The loop (see the file comment).  Returns when the run is over. */
static void loop(run_t *r, volatile sig_atomic_t *stop)
{
    tk_load_result_t *res = r->res;
    const int64_t drain_ns = (int64_t)llround(r->opts->drain * 1e9);
    int nfds = r->nconns + 1;
    struct pollfd *pfd = tk__load_xcalloc((size_t)nfds, sizeof *pfd);
    bool ended = false;
    int64_t drain_until = 0;
    for (;;) {
        r->now = rel_now(r);
        if (*stop && !res->interrupted) {
            res->interrupted = true;
            if (r->end > r->now)
                r->end = r->now;
        }
        if (!ended)
            dispatch_due(r);
        if (!ended && r->now >= r->end && (!r->nheap || r->heap[0].t > r->end)) {
            ended = true;
            res->not_sent = remaining(r);
            drain_until = res->interrupted ? r->now : r->end + drain_ns;
        }
        if (ended && (r->nfl == 0 || r->now >= drain_until || res->interrupted))
            break;
        for (int i = 0; i < nfds; i++) {
            tk_load_conn_t *c = i < r->nconns ? &r->conns[i] : &r->mon;
            if (tk__load_conn_flush(c) < 0) {
                res->aborted = tk__load_strf("connection %d: send: %s", i, strerror(c->err));
                goto out;
            }
            if (tk__load_conn_pending(c) > MAX_UNSENT) {
                res->aborted = tk__load_strf("connection %d: %zu MiB queued unsent: tickd "
                                             "stopped reading",
                                             i, tk__load_conn_pending(c) >> 20);
                goto out;
            }
            pfd[i].fd = c->fd;
            pfd[i].events = (short)(POLLIN | (tk__load_conn_pending(c) ? POLLOUT : 0));
            pfd[i].revents = 0;
        }
        int64_t wake = r->now + MAX_WAIT_NS;
        if (!ended) {
            int64_t next = r->nheap && r->heap[0].t <= r->end ? r->heap[0].t : r->end;
            if (next < wake)
                wake = next;
        } else if (drain_until < wake) {
            wake = drain_until;
        }
        if (r->opts->progress && r->next_progress < wake)
            wake = r->next_progress;
        int64_t wait = wake - rel_now(r);
        if (wait < 0)
            wait = 0;
        struct timespec ts = {(time_t)(wait / TK_LOAD_NS_PER_S), (long)(wait % TK_LOAD_NS_PER_S)};
        int n = ppoll(pfd, (nfds_t)nfds, &ts, NULL);
        if (n < 0 && errno != EINTR) {
            res->aborted = tk__load_strf("ppoll: %s", strerror(errno));
            goto out;
        }
        r->now = rel_now(r);
        for (int i = 0; n > 0 && i < nfds; i++) {
            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char name[32];
            if (i < r->nconns)
                snprintf(name, sizeof name, "connection %d", i);
            else
                snprintf(name, sizeof name, "monitor connection");
            if (drain_conn(r, i < r->nconns ? &r->conns[i] : &r->mon, name) < 0)
                goto out;
        }
        progress(r, false);
    }
out:
    if (!ended)
        res->not_sent = remaining(r);
    progress(r, true);
    free(pfd);
}

/* Requests and checks still unanswered when the loop ended. */
static void count_unanswered(run_t *r)
{
    tk_load_result_t *res = r->res;
    for (size_t i = 0; i < r->flcap; i++) {
        const flight_t *f = &r->fl[i];
        if (!f->id)
            continue;
        const tk_load_line_t *l = &r->sc->lines[f->line];
        if (l->kind == TK_LOAD_CHECK) {
            add_failure(r, l, f->intended, tk__load_strf("%s: no answer", l->method));
        } else {
            res->unanswered++;
            count_code(res, 0);
        }
    }
}

int tk__load_run(const tk_load_scenario_t *sc, const tk_load_opts_t *opts,
                 volatile sig_atomic_t *stop, tk_load_result_t *res, char **err)
{
    run_t r;
    memset(&r, 0, sizeof r);
    memset(res, 0, sizeof *res);
    r.sc = sc;
    r.opts = opts;
    r.res = res;
    r.next_id = 1;
    r.first_send = -1;
    r.mon.fd = -1;
    res->sc = sc;
    res->opts = opts;
    res->tick_rate = NAN;
    res->tps_worst = NAN;
    tk__load_hist_init(&res->lat);
    tk__load_hist_init(&res->lag);
    tk__load_hist_init(&res->mspt);
    tk__load_hist_init(&r.sec_mspt);
    tk__load_hist_init(&r.sec_lat);
    index_methods(&r);

    /* Setup: monitor, engine.info, request connections, subscription,
     * baseline statistics; then the clock starts. */
    uint64_t deadline = tk__load_now_ns() + SETUP_TIMEOUT_NS;
    if (tk__load_conn_open(&r.mon, opts->socket, deadline, err) < 0)
        goto fail;
    json_t *info = mon_call(&r, "engine.info", NULL, err);
    if (!info)
        goto fail;
    const char *ver = json_string_value(json_object_get(info, "version"));
    res->daemon_version = tk__load_xstrdup(ver ? ver : "?");
    res->tick_rate = num_of(info, "tick_rate", NAN);
    json_decref(info);
    r.nconns = opts->connections;
    r.conns = tk__load_xcalloc((size_t)r.nconns, sizeof *r.conns);
    for (int i = 0; i < r.nconns; i++)
        r.conns[i].fd = -1;
    for (int i = 0; i < r.nconns; i++)
        if (tk__load_conn_open(&r.conns[i], opts->socket, deadline, err) < 0)
            goto fail;
    json_t *sub = mon_call(&r, "events.subscribe", "{\"topics\":[\"stats\",\"frame\"]}", err);
    if (!sub)
        goto fail;
    json_decref(sub);
    json_t *base = mon_call(&r, "engine.stats", NULL, err);
    if (!base)
        goto fail;
    r.t0 = tk__load_now_ns();
    r.started = true;
    r.base_frame = u64_of(base, "frame");
    r.base_overruns = r.prev_overruns = u64_of(base, "overruns");
    r.base_dropped = u64_of(base, "events_dropped");
    res->entities_start = res->entities_peak = u64_of(base, "entities");
    res->rss_start = res->rss_peak = u64_of(base, "rss_bytes");
    double stats_hz = num_of(base, "target_hz", NAN);
    r.now = 0;
    on_stats(&r, base);   /* row 0: the state at the start */
    res->tps_worst = NAN; /* (its tps is from before the run) */
    json_decref(base);
    if (opts->target_hz >= 0)
        res->target_hz = opts->target_hz;
    else if (isfinite(res->tick_rate))
        res->target_hz = res->tick_rate;
    else
        res->target_hz = isfinite(stats_hz) ? stats_hz : 0;

    /* Schedule. */
    if (opts->duration >= 0)
        r.end = (int64_t)llround(opts->duration * 1e9);
    else if (sc->end_ns >= 0)
        r.end = sc->end_ns;
    else
        r.end = sc->last_ns + DEFAULT_TAIL_NS;
    r.heap = tk__load_xcalloc(sc->nlines, sizeof *r.heap);
    for (size_t i = 0; i < sc->nlines; i++)
        heap_push(&r, (cursor_t){sc->lines[i].at_ns, (uint32_t)i, 0});

    loop(&r, stop);
    res->end_s = (double)(r.end < r.now ? r.end : r.now) / 1e9;
    count_unanswered(&r);

    /* Final statistics (skipped when the connection is gone). */
    json_t *fin = NULL;
    if (!res->aborted) {
        char *ferr = NULL;
        fin = mon_call(&r, "engine.stats", NULL, &ferr);
        if (!fin) {
            res->aborted = tk__load_strf("final statistics: %s", ferr);
            free(ferr);
        }
    }
    r.now = rel_now(&r);
    res->duration_s = (double)r.now / 1e9;
    if (fin)
        on_stats(&r, fin); /* the last, partial interval gets its row too */
    uint64_t last_frame =
        fin ? u64_of(fin, "frame") : (res->nrows ? res->rows[res->nrows - 1].frame : r.base_frame);
    uint64_t ov = fin ? u64_of(fin, "overruns") : r.prev_overruns;
    res->frames = last_frame > r.base_frame ? last_frame - r.base_frame : 0;
    res->tps = res->duration_s > 0 ? (double)res->frames / res->duration_s : 0;
    res->overruns = ov > r.base_overruns ? ov - r.base_overruns : 0;
    if (fin) {
        res->entities_end = u64_of(fin, "entities");
        res->rss_end = u64_of(fin, "rss_bytes");
        uint64_t dropped = u64_of(fin, "events_dropped");
        res->events_dropped = dropped > r.base_dropped ? dropped - r.base_dropped : 0;
    } else {
        res->entities_end = res->nrows ? res->rows[res->nrows - 1].entities : res->entities_start;
        res->rss_end = res->nrows ? res->rows[res->nrows - 1].rss_bytes : res->rss_start;
    }
    if (res->entities_end > res->entities_peak)
        res->entities_peak = res->entities_end;
    if (res->rss_end > res->rss_peak)
        res->rss_peak = res->rss_end;
    json_decref(fin);
    if (r.first_send >= 0 && r.last_answer > r.first_send) {
        res->window_s = (double)(r.last_answer - r.first_send) / 1e9;
        res->rps = (double)res->answered / res->window_s;
    }
    run_free(&r);
    return 0;
fail:
    run_free(&r);
    return -1;
}

void tk__load_result_free(tk_load_result_t *res)
{
    free(res->daemon_version);
    free(res->aborted);
    tk__load_hist_free(&res->lat);
    tk__load_hist_free(&res->lag);
    tk__load_hist_free(&res->mspt);
    for (size_t i = 0; i < res->nmethods; i++) {
        free(res->methods[i].name);
        tk__load_hist_free(&res->methods[i].lat);
    }
    free(res->methods);
    free(res->codes);
    free(res->xcodes);
    for (size_t i = 0; i < res->nfailures; i++)
        free(res->failures[i].msg);
    free(res->failures);
    free(res->rows);
    tk__load_pools_free(&res->pools);
    memset(res, 0, sizeof *res);
}
