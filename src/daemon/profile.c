/*
 * profile.c - engine.profile and world.trace (profile.h).
 *
 * One dispatcher (on_event) is installed as the world's profiler while at
 * least one profile or trace runs, and removed when the last one ends, so an
 * idle daemon pays nothing.  The core reports runs of same-class functions
 * (time and count), single functions timed on their own, group, timer-pass
 * and tickable spans; methods.c and daemon.c add timer actions and request
 * batches.
 *
 * Profiles aggregate as events arrive: a hash of (class, group, level) rows,
 * short lists for timer methods and tickable classes (a few dozen names at
 * most), a top-20 of single functions and a frame-time histogram.  Memory is
 * bounded by the number of distinct keys, not by the profile's length.
 *
 * Which single functions are timed (the "slowest" list).  Timing every
 * function would double the cost of a cheap class (two clock reads of ~20 ns
 * around a tick of a few ns), so a profile asks the core to time one function
 * in PROFILE_SAMPLE_EVERY on its own, and every function of a class once a
 * run of that class averaged more than PROFILE_EACH_ABOVE_NS per function
 * (there the reads cost < 0.25%).  A costly tick is thus found from its
 * class's second run on; a rare slow tick of a cheap class is found with
 * probability 1/PROFILE_SAMPLE_EVERY per occurrence.  Batched classes are
 * timed per batch only (the batch function runs them as one call).
 *
 * Threads ([engine] threads > 1): the core hands over the events of ticks
 * that ran on worker threads after their run, in the order of one thread,
 * each with the thread that ran it.  A class row's time is summed over the
 * threads that ran it (so ticks_ms may exceed the frames' wall time), and
 * worker_ms says how much of it workers did; traces and the slowest ticks
 * name the thread of each tick.
 *
 * Traces ask the core to time every function ("each": batches off while a
 * trace runs, as world.trace always did) and collect the frame's events in
 * one buffer shared by every running trace; at the end of the frame each
 * trace turns them into JSON relative to the frame's start.  A trace's reply
 * is bounded by half of control.max_output: past it the trace stops
 * collecting and answers at once with "truncated": true.  A world of more
 * than TRACE_OVER_FIT times the tick functions one reply holds is not
 * traced at all (-32003): its frames would be timed function by function
 * for a reply cut short in the first of them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "params.h"
#include "profile.h"

#define PROFILE_SAMPLE_EVERY 256
#define PROFILE_EACH_ABOVE_NS 20000ull
#define TRACE_ITEM_BYTES 150   /* upper bound of one tick or span in the reply */
#define TRACE_FRAME_BYTES 120  /* of a frame object without its items          */
#define TRACE_OVER_FIT 2       /* tick functions a trace may find, in replies    */

/* Frame-time histogram: upper bounds in ms, then one open bucket. */
static const double hist_le_ms[] = {0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 33, 50, 100, 250, 500, 1000};
#define N_HIST (sizeof hist_le_ms / sizeof hist_le_ms[0] + 1)

typedef struct cgl_row {
    uint64_t key;      /* cls << 40 | group << 32 | level; 0 = empty slot */
    uint64_t ns;       /* time                                          */
    uint64_t calls;    /* functions run                                 */
    uint64_t runs;     /* runs (batches or lanes ticked one by one)     */
    uint64_t worker_ns;    /* of `ns`, on worker threads                */
    uint64_t worker_calls; /* of `calls`, on worker threads             */
    char level[TK_LEVEL_NAME_MAX + 1]; /* its name when first seen       */
} cgl_row;

typedef struct name_row {
    const char *name;  /* static or as long as the daemon: method table, class */
    uint64_t ns, calls;
} name_row;

typedef struct slow_row {
    uint64_t ns;
    uint64_t entity;   /* 0 = not an entity's function */
    int comp;          /* -1 = the actor's own tick    */
    uint16_t cls;
    int group;
    unsigned thread;   /* 0: the frame thread          */
    char level[TK_LEVEL_NAME_MAX + 1];
    uint64_t frame;
} slow_row;

typedef struct profile {
    struct profile *next;
    tkd_call *call;
    uint64_t client_id;
    uint64_t frames_goal;      /* 0: by time                         */
    uint64_t ns_goal;          /* ns of monotonic time; by frames: 0  */
    uint64_t start_ns;         /* monotonic, when it was asked for    */
    uint64_t frames;           /* frames seen                         */
    uint64_t work_ns;          /* sum of the frames' work             */
    uint64_t ticks_ns, timers_ns, tickables_ns, requests_ns;
    uint64_t worker_ns;        /* of ticks_ns, on worker threads      */
    uint64_t timer_calls, tickable_calls, tick_calls, requests;
    uint64_t group_ns[TK_GROUP_COUNT];
    cgl_row *rows;             /* open addressing, power-of-two size  */
    size_t n_rows, cap_rows;
    name_row *timers, *tickables;
    size_t n_timers, cap_timers, n_tickables, cap_tickables;
    slow_row top[PROFILE_TOP]; /* unordered; the minimum is replaced  */
    size_t n_top;
    size_t top_min;            /* once full: the index of the minimum  */
    uint64_t hist[N_HIST];
} profile;

/* One event of the current frame, for traces (absolute ns). */
typedef enum { TI_TICK, TI_GROUP, TI_TIMERS, TI_TIMER, TI_TICKABLES, TI_TICKABLE, TI_REQUESTS } ti_kind;

typedef struct titem {
    uint8_t kind;      /* ti_kind                            */
    int8_t group;      /* TI_TICK, TI_GROUP                  */
    uint16_t cls;      /* TI_TICK                            */
    int32_t comp;      /* TI_TICK: -1 actor                  */
    uint16_t thread;   /* TI_TICK: 0 the frame thread        */
    uint32_t n;        /* spans: how many ran                */
    uint64_t entity;   /* TI_TICK: 0 none                    */
    uint64_t t0, ns;   /* monotonic ns                       */
    const char *name;  /* TI_TIMER: method; TI_TICKABLE: class */
} titem;

typedef struct trace {
    struct trace *next;
    tkd_call *call;
    uint64_t frames_goal, frames_done;
    uint64_t epoch_ns;         /* start of its first frame        */
    json_t *frames;
    size_t bytes;              /* estimated size of the reply     */
    size_t limit;              /* bytes                           */
} trace;

struct tkd_prof {
    profile *profiles;
    trace *traces;
    size_t n_profiles;
    titem *items;              /* this frame's, for traces         */
    size_t n_items, cap_items;
    size_t items_budget;       /* bytes any trace can still take   */
    bool items_overflow;       /* this frame's items were cut       */
};

/* ---- small helpers ------------------------------------------------------------- */

/* Grow *v (of `size`-byte elements) to hold at least `need`. */
static void grow(void **v, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    *v = tk_realloc(*v, c * size);
    *cap = c;
}

static json_t *jms(uint64_t ns) { return json_real(round((double)ns / 1e3) / 1e3); }
static json_t *jus(int64_t ns) { return json_real((double)ns / 1e3); }
static json_t *jid(uint64_t v) { return json_integer((json_int_t)v); }

static const char *group_str(int g)
{
    const char *s = tk_group_name((tk_group)g);
    return s ? s : "?";
}

static const char *class_str(tkd *d, uint16_t cls)
{
    const char *s = tk_tick_class_name(d->world, cls);
    return s ? s : "?";
}

static void level_str(tkd *d, tk_level_id level, char *buf, size_t len)
{
    const char *s = tk_level_name(d->world, level);
    snprintf(buf, len, "%s", s ? s : "?");
}

/* The method table's own copy of a method name (lives forever). */
static const char *static_method(const char *m)
{
    const char *const *names = tkd_method_names();
    for (size_t i = 0; m && names[i]; i++)
        if (!strcmp(names[i], m))
            return names[i];
    return "?";
}

static void refuse(tkd *d, tkd_call *call, int code, const char *msg)
{
    if (call) {
        tkd_call_error(call, code, NULL, "%s", msg);
    } else {
        d->action_errors++;
        tk_log_warn("timer action failed (%d): %s", code, msg);
    }
}

/* ---- profile aggregation ------------------------------------------------------- */

static cgl_row *row_get(profile *p, uint64_t key)
{
    if ((p->n_rows + 1) * 2 > p->cap_rows) {
        size_t cap = p->cap_rows ? p->cap_rows * 2 : 64;
        cgl_row *rows = tk_calloc(cap, sizeof *rows);
        for (size_t i = 0; i < p->cap_rows; i++) {
            if (!p->rows[i].key)
                continue;
            size_t j = (size_t)(p->rows[i].key * 0x9E3779B97F4A7C15ull >> 20) & (cap - 1);
            while (rows[j].key)
                j = (j + 1) & (cap - 1);
            rows[j] = p->rows[i];
        }
        tk_free(p->rows);
        p->rows = rows;
        p->cap_rows = cap;
    }
    size_t j = (size_t)(key * 0x9E3779B97F4A7C15ull >> 20) & (p->cap_rows - 1);
    while (p->rows[j].key && p->rows[j].key != key)
        j = (j + 1) & (p->cap_rows - 1);
    if (!p->rows[j].key) {
        p->rows[j].key = key;
        p->n_rows++;
    }
    return &p->rows[j];
}

static name_row *name_get(name_row **v, size_t *n, size_t *cap, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].name == name || !strcmp((*v)[i].name, name))
            return &(*v)[i];
    grow((void **)v, cap, *n + 1, sizeof **v);
    name_row *r = &(*v)[(*n)++];
    memset(r, 0, sizeof *r);
    r->name = name;
    return r;
}

static void profile_run(tkd *d, profile *p, const tk_prof_event *ev)
{
    /* key: never 0, since a real key has group+1 in it */
    uint64_t key = (uint64_t)ev->cls << 40 | (uint64_t)(ev->group + 1) << 32 | ev->level;
    cgl_row *r = row_get(p, key);
    if (!r->runs)
        level_str(d, ev->level, r->level, sizeof r->level);
    r->ns += ev->ns;
    r->calls += ev->n;
    r->runs++;
    p->ticks_ns += ev->ns;
    p->tick_calls += ev->n;
    if (ev->thread) {
        r->worker_ns += ev->ns;
        r->worker_calls += ev->n;
        p->worker_ns += ev->ns;
    }
}

static void profile_single(tkd *d, profile *p, const tk_prof_event *ev)
{
    size_t at = p->n_top;
    if (p->n_top == PROFILE_TOP) {
        at = p->top_min;
        if (ev->ns <= p->top[at].ns)
            return; /* most samples: no faster than the 20 slowest */
    } else {
        p->n_top++;
    }
    slow_row *s = &p->top[at];
    int comp = -1;
    const tks_entity *e = tks_tick_owner(d->sim, ev->id, &comp);
    s->ns = ev->ns;
    s->entity = e ? tks_entity_id(e) : 0;
    s->comp = comp;
    s->cls = ev->cls;
    s->group = ev->group;
    s->thread = ev->thread;
    level_str(d, ev->level, s->level, sizeof s->level);
    s->frame = tk_world_frame(d->world);
    if (p->n_top == PROFILE_TOP) {
        /* Where the next one must do better (found again on a change only). */
        p->top_min = 0;
        for (size_t i = 1; i < PROFILE_TOP; i++)
            if (p->top[i].ns < p->top[p->top_min].ns)
                p->top_min = i;
    }
}

/* ---- the dispatcher -------------------------------------------------------------- */

static void item_add(tkd_prof *P, const titem *it)
{
    if (P->items_overflow)
        return;
    if ((P->n_items + 1) * TRACE_ITEM_BYTES > P->items_budget) {
        P->items_overflow = true;
        return;
    }
    grow((void **)&P->items, &P->cap_items, P->n_items + 1, sizeof *P->items);
    P->items[P->n_items++] = *it;
}

static void on_event(void *ud, const tk_prof_event *ev)
{
    tkd *d = ud;
    tkd_prof *P = d->prof;
    for (profile *p = P->profiles; p; p = p->next) {
        switch (ev->kind) {
        case TK_PROF_RUN:
            profile_run(d, p, ev);
            break;
        case TK_PROF_TICK:
            profile_single(d, p, ev);
            break;
        case TK_PROF_GROUP:
            if (ev->group >= 0 && ev->group < TK_GROUP_COUNT)
                p->group_ns[ev->group] += ev->ns;
            break;
        case TK_PROF_TIMERS:
            p->timers_ns += ev->ns;
            break;
        case TK_PROF_TICKABLES:
            p->tickables_ns += ev->ns;
            break;
        case TK_PROF_TICKABLE: {
            const tks_class *c = tks_tickable_class(d->sim, ev->id);
            name_row *r = name_get(&p->tickables, &p->n_tickables, &p->cap_tickables,
                                   c ? tks_class_name(c) : "?");
            r->ns += ev->ns;
            r->calls++;
            p->tickable_calls++;
            break;
        }
        }
    }
    if (!P->traces || P->items_overflow)
        return; /* a trace past its bound collects nothing more */
    titem it = {.t0 = ev->start_ns, .ns = ev->ns, .n = ev->n, .group = (int8_t)ev->group};
    switch (ev->kind) {
    case TK_PROF_TICK: {
        int comp = -1;
        const tks_entity *e = tks_tick_owner(d->sim, ev->id, &comp);
        it.kind = TI_TICK;
        it.cls = ev->cls;
        it.thread = (uint16_t)ev->thread;
        it.comp = comp;
        it.entity = e ? tks_entity_id(e) : 0;
        break;
    }
    case TK_PROF_GROUP:
        it.kind = TI_GROUP;
        break;
    case TK_PROF_TIMERS:
        it.kind = TI_TIMERS;
        break;
    case TK_PROF_TICKABLES:
        it.kind = TI_TICKABLES;
        break;
    case TK_PROF_TICKABLE: {
        const tks_class *c = tks_tickable_class(d->sim, ev->id);
        it.kind = TI_TICKABLE;
        it.name = c ? tks_class_name(c) : "?";
        break;
    }
    default:
        return; /* runs: traces time every function */
    }
    item_add(P, &it);
}

/* (Re)install the world's profiler for what runs now, or remove it. */
static void install(tkd *d)
{
    tkd_prof *P = d->prof;
    if (!P->profiles && !P->traces) {
        tk_world_set_profiler(d->world, NULL);
        tk_free(P->items);
        tk_free(P);
        d->prof = NULL;
        return;
    }
    tk_profiler pr = {.fn = on_event, .ud = d};
    if (P->profiles) {
        pr.sample_every = PROFILE_SAMPLE_EVERY;
        pr.each_above_ns = PROFILE_EACH_ABOVE_NS;
    }
    pr.each = P->traces != NULL;
    tk_world_set_profiler(d->world, &pr);
}

static tkd_prof *prof_get(tkd *d)
{
    if (!d->prof)
        d->prof = tk_calloc(1, sizeof *d->prof);
    return d->prof;
}

/* ---- daemon-side sources ----------------------------------------------------------- */

void tkd_prof_timer_action(tkd *d, const char *method, uint64_t t0, uint64_t ns)
{
    tkd_prof *P = d->prof;
    if (!P)
        return;
    const char *m = static_method(method);
    for (profile *p = P->profiles; p; p = p->next) {
        name_row *r = name_get(&p->timers, &p->n_timers, &p->cap_timers, m);
        r->ns += ns;
        r->calls++;
        p->timer_calls++;
    }
    if (P->traces)
        item_add(P, &(titem){.kind = TI_TIMER, .t0 = t0, .ns = ns, .n = 1, .name = m});
}

void tkd_prof_requests(tkd *d, size_t n, uint64_t t0, uint64_t ns)
{
    tkd_prof *P = d->prof;
    if (!P || n == 0)
        return;
    for (profile *p = P->profiles; p; p = p->next) {
        p->requests_ns += ns;
        p->requests += n;
    }
    if (P->traces)
        item_add(P, &(titem){.kind = TI_REQUESTS, .t0 = t0, .ns = ns, .n = (uint32_t)n});
}

/* ---- engine.profile -------------------------------------------------------------------- */

static int row_cmp(const void *a, const void *b)
{
    const cgl_row *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static int name_cmp(const void *a, const void *b)
{
    const name_row *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

static int slow_cmp(const void *a, const void *b)
{
    const slow_row *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return x->frame < y->frame ? -1 : x->frame > y->frame;
}

static double pct(uint64_t part, uint64_t whole)
{
    return whole ? round((double)part * 1e4 / (double)whole) / 100 : 0;
}

static json_t *names_json(name_row *v, size_t n, const char *key, uint64_t frames)
{
    if (n > 1)
        qsort(v, n, sizeof *v, name_cmp);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, key, json_string(v[i].name));
        json_object_set_new(o, "ms", jms(v[i].ns));
        json_object_set_new(o, "calls", jid(v[i].calls));
        json_object_set_new(o, "ms_per_frame", jms(frames ? v[i].ns / frames : 0));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *profile_json(tkd *d, profile *p, uint64_t now)
{
    json_t *o = json_object();
    uint64_t fr = p->frames;
    json_object_set_new(o, "frames", jid(fr));
    json_object_set_new(o, "seconds", json_real(round((double)(now - p->start_ns) / 1e6) / 1e3));
    json_object_set_new(o, "work_ms", jms(p->work_ns));
    json_object_set_new(o, "ticks_ms", jms(p->ticks_ns));
    json_object_set_new(o, "worker_ms", jms(p->worker_ns));
    json_object_set_new(o, "timers_ms", jms(p->timers_ns));
    json_object_set_new(o, "tickables_ms", jms(p->tickables_ns));
    json_object_set_new(o, "requests_ms", jms(p->requests_ns));
    json_object_set_new(o, "requests", jid(p->requests));
    json_t *g = json_object();
    for (int i = 0; i < TK_GROUP_COUNT; i++)
        json_object_set_new(g, group_str(i), jms(p->group_ns[i]));
    json_object_set_new(o, "groups_ms", g);

    /* classes: the filled rows, most time first */
    cgl_row *rows = tk_malloc((p->n_rows ? p->n_rows : 1) * sizeof *rows);
    size_t n = 0;
    for (size_t i = 0; i < p->cap_rows; i++)
        if (p->rows[i].key)
            rows[n++] = p->rows[i];
    qsort(rows, n, sizeof *rows, row_cmp);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) {
        const cgl_row *r = &rows[i];
        json_t *c = json_object();
        json_object_set_new(c, "class", json_string(class_str(d, (uint16_t)(r->key >> 40))));
        json_object_set_new(c, "group", json_string(group_str((int)((r->key >> 32) & 0xff) - 1)));
        json_object_set_new(c, "level", json_string(r->level));
        json_object_set_new(c, "ms", jms(r->ns));
        json_object_set_new(c, "calls", jid(r->calls));
        json_object_set_new(c, "runs", jid(r->runs));
        json_object_set_new(c, "worker_ms", jms(r->worker_ns));
        json_object_set_new(c, "worker_calls", jid(r->worker_calls));
        json_object_set_new(c, "ms_per_frame", jms(fr ? r->ns / fr : 0));
        json_object_set_new(c, "pct", json_real(pct(r->ns, p->work_ns)));
        json_array_append_new(a, c);
    }
    tk_free(rows);
    json_object_set_new(o, "classes", a);
    json_object_set_new(o, "timers", names_json(p->timers, p->n_timers, "method", fr));
    json_object_set_new(o, "tickables", names_json(p->tickables, p->n_tickables, "class", fr));

    qsort(p->top, p->n_top, sizeof *p->top, slow_cmp);
    p->top_min = p->n_top ? p->n_top - 1 : 0; /* sorted: the profile may go on */
    a = json_array();
    for (size_t i = 0; i < p->n_top; i++) {
        const slow_row *s = &p->top[i];
        json_t *t = json_object();
        json_object_set_new(t, "entity", s->entity ? jid(s->entity) : json_null());
        json_object_set_new(t, "component", s->comp < 0 ? json_null() : json_integer(s->comp));
        json_object_set_new(t, "class", json_string(class_str(d, s->cls)));
        json_object_set_new(t, "group", json_string(group_str(s->group)));
        json_object_set_new(t, "level", json_string(s->level));
        json_object_set_new(t, "ms", jms(s->ns));
        json_object_set_new(t, "frame", jid(s->frame));
        json_object_set_new(t, "thread", jid(s->thread));
        json_array_append_new(a, t);
    }
    json_object_set_new(o, "slowest", a);

    a = json_array();
    for (size_t i = 0; i < N_HIST; i++) {
        json_t *b = json_object();
        json_object_set_new(b, "lo_ms", json_real(i ? hist_le_ms[i - 1] : 0));
        json_object_set_new(b, "hi_ms", i < N_HIST - 1 ? json_real(hist_le_ms[i]) : json_null());
        json_object_set_new(b, "count", jid(p->hist[i]));
        json_array_append_new(a, b);
    }
    json_object_set_new(o, "histogram", a);
    json_t *smp = json_object();
    json_object_set_new(smp, "every", jid(PROFILE_SAMPLE_EVERY));
    json_object_set_new(smp, "each_above_ms", jms(PROFILE_EACH_ABOVE_NS));
    json_object_set_new(o, "sampling", smp);
    return o;
}

static void profile_free(profile *p)
{
    tk_free(p->rows);
    tk_free(p->timers);
    tk_free(p->tickables);
    tk_free(p);
}

void tkd_prof_engine_profile(tkd *d, tkd_call *call, json_t *params)
{
    if (!call) {
        refuse(d, call, -32002, "engine.profile cannot run as a timer action");
        return;
    }
    static const char *const allowed[] = {"seconds", "frames", NULL};
    tkd_perr pe;
    double seconds = 10;
    uint64_t frames = 0;
    int rs, rf;
    if (tkd_p_keys(params, "", allowed, &pe) ||
        (rs = tkd_p_num(params, "seconds", "", 0, PROFILE_MAX_SECONDS, &seconds, &pe)) < 0 ||
        (rf = tkd_p_u64(params, "frames", "", 1, PROFILE_MAX_FRAMES, &frames, &pe)) < 0) {
        tkd_call_error(call, pe.code, NULL, "%s", pe.msg);
        return;
    }
    if (rs > 0 && rf > 0) {
        tkd_call_error(call, -32602, NULL, "seconds, frames: give one of them, not both");
        return;
    }
    if (rs > 0 && !(seconds > 0)) {
        tkd_call_error(call, -32602, NULL, "seconds: must be > 0 (at most %g)",
                       PROFILE_MAX_SECONDS);
        return;
    }
    uint64_t cid = tkd_call_client_id(call);
    if (d->prof) {
        for (profile *q = d->prof->profiles; q; q = q->next) {
            if (q->client_id == cid) {
                tkd_call_error(call, -32002, NULL,
                               "a profile of this connection is already running");
                return;
            }
        }
        if (d->prof->n_profiles >= PROFILE_MAX_RUNNING) {
            tkd_call_error(call, -32003, NULL, "too many profiles running (max %d)",
                           PROFILE_MAX_RUNNING);
            return;
        }
    }
    tkd_prof *P = prof_get(d);
    profile *p = tk_calloc(1, sizeof *p);
    p->call = call;
    p->client_id = cid;
    p->frames_goal = rf > 0 ? frames : 0;
    p->ns_goal = rf > 0 ? 0 : (uint64_t)llround(seconds * 1e9);
    p->start_ns = tk_clock_now_ns();
    p->next = P->profiles;
    P->profiles = p;
    P->n_profiles++;
    install(d);
    tkd_call_defer(call);
}

/* ---- world.trace ------------------------------------------------------------------ */

/* Append this frame's items to a trace; false once its limit is reached. */
static bool trace_frame(tkd *d, trace *t, const tk_frame_info *f)
{
    tkd_prof *P = d->prof;
    if (!t->frames_done)
        t->epoch_ns = f->start_ns;
    json_t *fr = json_object();
    json_object_set_new(fr, "frame", jid(f->frame));
    json_object_set_new(fr, "start", jus((int64_t)(f->start_ns - t->epoch_ns)));
    json_object_set_new(fr, "ms", jms(f->work_ns));
    /* the frame's own span (work done before its start, in the wait, is
     * counted in its ms and shown as the spans before it) */
    json_object_set_new(fr, "dur", jus((int64_t)(f->work_ns - f->carried_ns)));
    json_t *ticks = json_array(), *spans = json_array();
    bool full = P->items_overflow;
    t->bytes += TRACE_FRAME_BYTES;
    for (size_t i = 0; i < P->n_items; i++) {
        if (t->bytes + TRACE_ITEM_BYTES > t->limit) {
            full = true;
            break;
        }
        t->bytes += TRACE_ITEM_BYTES;
        const titem *it = &P->items[i];
        json_t *x = json_object();
        /* µs since the frame's start (the engine's, after the pacing wait);
         * requests run while waiting for the frame start before it (< 0). */
        int64_t rel = (int64_t)(it->t0 - f->start_ns);
        if (it->kind == TI_TICK) {
            json_object_set_new(x, "entity", it->entity ? jid(it->entity) : json_null());
            json_object_set_new(x, "component", it->comp < 0 ? json_null() : json_integer(it->comp));
            json_object_set_new(x, "group", json_string(group_str(it->group)));
            json_object_set_new(x, "class", json_string(class_str(d, it->cls)));
            json_object_set_new(x, "start", jus(rel));
            json_object_set_new(x, "dur", jus((int64_t)it->ns));
            json_object_set_new(x, "thread", jid(it->thread));
            json_object_set_new(x, "kind", json_string("tick"));
            json_array_append_new(ticks, x);
            continue;
        }
        static const char *const kinds[] = {"tick", "group", "timers", "timer", "tickables",
                                            "tickable", "requests"};
        json_object_set_new(x, "kind", json_string(kinds[it->kind]));
        if (it->kind == TI_GROUP)
            json_object_set_new(x, "group", json_string(group_str(it->group)));
        if (it->kind == TI_TIMER)
            json_object_set_new(x, "method", json_string(it->name));
        if (it->kind == TI_TICKABLE)
            json_object_set_new(x, "class", json_string(it->name));
        json_object_set_new(x, "start", jus(rel));
        json_object_set_new(x, "dur", jus((int64_t)it->ns));
        json_object_set_new(x, "n", jid(it->n));
        json_array_append_new(spans, x);
    }
    json_object_set_new(fr, "ticks", ticks);
    json_object_set_new(fr, "spans", spans);
    if (full)
        json_object_set_new(fr, "truncated", json_true());
    json_array_append_new(t->frames, fr);
    t->frames_done++;
    return !full;
}

void tkd_prof_world_trace(tkd *d, tkd_call *call, json_t *params)
{
    if (!call) {
        refuse(d, call, -32002, "world.trace cannot run as a timer action");
        return;
    }
    static const char *const allowed[] = {"frames", NULL};
    tkd_perr pe;
    uint64_t n = 1;
    int rc = -1;
    if (tkd_p_keys(params, "", allowed, &pe) ||
        (rc = tkd_p_u64(params, "frames", "", 1, TRACE_MAX_FRAMES, &n, &pe)) < 0) {
        tkd_call_error(call, pe.code, NULL, "%s", pe.msg);
        return;
    }
    if (rc == 0) {
        tkd_call_error(call, -32602, NULL, "frames: required (1..%d)", TRACE_MAX_FRAMES);
        return;
    }
    /* Tracing times every function on its own (100 - 200 ns each): a world
     * of many more functions than a reply can hold would pay that for a
     * trace cut short in its first frame (2M counters: 200 ms frames). */
    size_t limit = d->cfg.max_output / 2, fit = limit / TRACE_ITEM_BYTES;
    tk_tick_counts tc;
    tk_tick_get_counts(d->world, &tc);
    if (tc.registered > TRACE_OVER_FIT * fit) {
        tkd_call_error(call, -32003, NULL,
                       "world.trace: %zu tick functions are registered, more than %d times the "
                       "%zu a trace reply holds (half of control.max_output); engine.profile "
                       "shows where such a frame goes",
                       tc.registered, TRACE_OVER_FIT, fit);
        return;
    }
    tkd_prof *P = prof_get(d);
    trace *t = tk_calloc(1, sizeof *t);
    t->call = call;
    t->frames_goal = n;
    t->frames = json_array();
    t->limit = limit;
    t->next = P->traces;
    bool first = P->traces == NULL;
    P->traces = t;
    if (t->limit > P->items_budget)
        P->items_budget = t->limit;
    if (first)
        install(d); /* "each" on: from the next run of functions */
    tkd_call_defer(call);
}

static void trace_answer(trace *t, bool truncated)
{
    json_t *o = json_object();
    json_object_set_new(o, "frames", t->frames);
    json_object_set_new(o, "truncated", json_boolean(truncated));
    tkd_call_reply(t->call, o);
    tk_free(t);
}

/* ---- frame boundary ------------------------------------------------------------------ */

void tkd_prof_post_frame(tkd *d, const tk_frame_info *f)
{
    tkd_prof *P = d->prof;
    if (!P)
        return;
    bool changed = false;
    uint64_t now = tk_clock_now_ns();
    profile **pp = &P->profiles;
    while (*pp) {
        profile *p = *pp;
        p->frames++;
        p->work_ns += f->work_ns;
        double ms = (double)f->work_ns / 1e6;
        size_t b = 0;
        while (b < N_HIST - 1 && ms > hist_le_ms[b])
            b++;
        p->hist[b]++;
        bool done = p->frames_goal ? p->frames >= p->frames_goal
                                   : now - p->start_ns >= p->ns_goal;
        if (!done) {
            pp = &p->next;
            continue;
        }
        *pp = p->next;
        P->n_profiles--;
        tkd_call_reply(p->call, profile_json(d, p, now));
        profile_free(p);
        changed = true;
    }
    size_t budget = 0;
    trace **tp = &P->traces;
    while (*tp) {
        trace *t = *tp;
        bool room = trace_frame(d, t, f);
        if (room && t->frames_done < t->frames_goal) {
            if (t->limit - t->bytes > budget)
                budget = t->limit - t->bytes;
            tp = &t->next;
            continue;
        }
        *tp = t->next;
        trace_answer(t, !room);
        changed = true;
    }
    P->n_items = 0;
    P->items_overflow = false;
    P->items_budget = budget;
    if (changed)
        install(d);
}

void tkd_prof_shutdown(tkd *d)
{
    tkd_prof *P = d->prof;
    if (!P)
        return;
    while (P->profiles) {
        profile *p = P->profiles;
        P->profiles = p->next;
        tkd_call_error(p->call, -32004, NULL, "shutting down before the profile completed");
        profile_free(p);
    }
    while (P->traces) {
        trace *t = P->traces;
        P->traces = t->next;
        tkd_call_error(t->call, -32004, NULL, "shutting down before the trace completed");
        json_decref(t->frames);
        tk_free(t);
    }
    install(d);
}
