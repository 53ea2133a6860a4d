/*
 * snapshot.c - world.save / world.load (the format and guarantees are in
 * snapshot.h).
 *
 *   writing     the document streamed to a buffer flushed with write(2)
 *   parsing     parse_* read the document into plain structures and check
 *               everything (the error names the JSON path, never quotes
 *               content); lookups by id are binary searches, so a load is
 *               O(n log n) whatever the prerequisites
 *   applying    only then apply() clears the world and rebuilds it; every
 *               way it could fail (slots, duplicates, classes, levels,
 *               props) was checked, so it does not fail on a checked
 *               document (the fuzz target checks that no load answers
 *               -32603)
 *   splitting   a file's entities are parsed one at a time
 *   files       paths confined to the snapshot directory, temporary files
 *               created exclusively, non-regular files refused unopened
 *   child       world.save and autosaves written by a forked process
 *
 *   aside       world.load on the socket reads, checks and builds the new
 *               world on a thread of its own; the frame thread swaps it in
 *               and runs the create and destroy hooks of plugin classes
 *               that may share state with their ticks
 *
 * What it deliberately does not do: apply a load on the socket in place
 * (only load_on_start and the offline daemon do: nothing runs meanwhile).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "params.h"
#include "replay.h"
#include "snapshot.h"
#include "hotmem.h"
#include "journal.h"
#include "jsonw.h"
#include "tickd/clock.h"

/* ---- writing ------------------------------------------------------------------
 *
 * The document is streamed straight to a buffered fd (no jansson tree of
 * the whole world: for a million entities that tree and its text were most
 * of the time and twice the memory).  Numbers are written as jansson writes
 * them with JSON_REAL_PRECISION(17), so the bytes match the old writer's.
 * A prop that the simulation drove to a non-finite value is written as the
 * string "inf", "-inf" or "nan" (what entity.get shows), and read back so.
 */

/*
 * The writer: a buffer flushed to an fd with write(2) (fd -1: the buffer
 * just grows, for tkd_snapshot_build).  stdio's per-call locking was a third
 * of the time of a save.
 */
typedef struct wr {
    char *buf;      /* WR_FIRST .. WR_CHUNK bytes (or growing, fd -1) */
    size_t n, cap;  /* bytes used / allocated                        */
    int fd;         /* where flushes go, or -1                       */
    int err;        /* errno of the first failed write, or 0         */
    uint64_t total; /* bytes flushed so far                          */
} wr;

/* The buffer starts small (a save of a small world, the fuzz targets, pay
 * for no megabyte) and doubles at each flush up to WR_CHUNK. */
#define WR_FIRST (64u << 10)
#define WR_CHUNK (1u << 20)

static void wr_init(wr *w, int fd)
{
    memset(w, 0, sizeof *w);
    w->fd = fd;
    w->cap = WR_FIRST;
    w->buf = tk_malloc(w->cap);
}

static void wr_flush(wr *w)
{
    const char *p = w->buf;
    size_t n = w->n;
    while (n && !w->err) {
        ssize_t k = write(w->fd, p, n);
        if (k < 0) {
            if (errno != EINTR)
                w->err = errno;
            continue;
        }
        p += k;
        n -= (size_t)k;
    }
    w->total += w->n;
    w->n = 0;
}

static void w_spill(wr *w, size_t need)
{
    if (w->fd >= 0) {
        wr_flush(w);
        if (w->cap < WR_CHUNK) { /* empty now: grow without copying */
            tk_free(w->buf);
            w->cap *= 2;
            w->buf = tk_malloc(w->cap);
        }
        if (need <= w->cap)
            return;
    }
    while (w->cap - w->n < need)
        w->cap *= 2;
    w->buf = tk_realloc(w->buf, w->cap);
}

static inline void w_mem(wr *w, const char *s, size_t n)
{
    if (w->cap - w->n < n)
        w_spill(w, n);
    memcpy(w->buf + w->n, s, n);
    w->n += n;
}

static inline void w_puts(wr *w, const char *s) { w_mem(w, s, strlen(s)); }

static inline void w_putc(wr *w, char c)
{
    if (w->n == w->cap)
        w_spill(w, 1);
    w->buf[w->n++] = c;
}

static int w_dump_cb(const char *buffer, size_t size, void *data)
{
    w_mem(data, buffer, size);
    return 0;
}

/* What a writer counted, for the result of world.save. */
typedef struct snap_counts {
    uint64_t entities, timers, tickables;
} snap_counts;

static void w_u64(wr *f, uint64_t v)
{
    char b[24];
    size_t i = sizeof b;
    do {
        b[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_mem(f, b + i, sizeof b - i);
}

/* A double in the shortest form that reads back (jsonw.h: 0.1 stays 0.1);
 * non-finite values as the strings "inf", "-inf", "nan". */
static void w_real(wr *f, double v)
{
    if (!isfinite(v)) {
        w_puts(f, isnan(v) ? "\"nan\"" : v > 0 ? "\"inf\"" : "\"-inf\"");
        return;
    }
    char b[TKD_JSONW_REAL_MAX];
    size_t n = tkd_jsonw_real(b, v);
    w_mem(f, b, n);
}

static void w_bool(wr *f, bool v) { w_puts(f, v ? "true" : "false"); }

/* `"key":` for a key known to need no escaping. */
static void w_key(wr *f, const char *k)
{
    w_putc(f, '"');
    w_puts(f, k);
    w_puts(f, "\":");
}

/* Any JSON value through jansson (strings, actions, templates); steals j. */
static void w_json(wr *f, json_t *j)
{
    if (!j) {
        w_puts(f, "null");
        return;
    }
    json_dump_callback(j, w_dump_cb, f, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    json_decref(j);
}

static void w_str(wr *f, const char *s) { w_json(f, json_string(s)); }

static void w_spec(wr *f, const tk_tick_spec *s)
{
    tk_group end = s->end_group == TK_GROUP_SAME ? s->group : s->end_group;
    w_puts(f, "{\"group\":\"");
    w_puts(f, tk_group_name(s->group));
    w_puts(f, "\",\"end_group\":\"");
    w_puts(f, tk_group_name(end));
    w_puts(f, "\",\"interval\":");
    w_real(f, s->interval);
    w_puts(f, ",\"enabled\":");
    w_bool(f, s->enabled);
    w_puts(f, ",\"even_when_paused\":");
    w_bool(f, s->even_when_paused);
    w_puts(f, ",\"high_priority\":");
    w_bool(f, s->high_priority);
    w_puts(f, ",\"batch\":");
    w_bool(f, s->batch);
    w_puts(f, ",\"on_dedicated_server\":");
    w_bool(f, s->on_dedicated_server);
    w_puts(f, ",\"any_thread\":");
    w_bool(f, s->any_thread);
}

/* One tick function: its spec, and if registered its counters and
 * prerequisites (all of them, however many). */
static void w_fn(wr *f, tkd *d, const tks_entity *e, int comp)
{
    tk_tick_id id = tks_entity_tick(e, comp);
    tk_tick_info info;
    if (id != TK_TICK_NONE && tk_tick_get(d->world, id, &info) == 0) {
        w_spec(f, &info.spec);
        tk_tick_restore st;
        tk_tick_save(d->world, id, &st);
        w_puts(f, ",\"ticks\":");
        w_u64(f, st.ticks);
        w_puts(f, ",\"last_frame\":");
        w_u64(f, st.last_frame);
        w_puts(f, ",\"last_dt\":");
        w_real(f, st.last_dt);
        w_puts(f, ",\"accum_dt\":");
        w_real(f, st.accum_dt);
        w_puts(f, ",\"cooldown\":");
        w_real(f, st.cooldown);
        w_puts(f, ",\"since_last_tick\":");
        w_real(f, st.since_last_tick);
        w_puts(f, ",\"prerequisites\":[");
        tk_tick_id local[64], *p = local;
        size_t n = tk_tick_prerequisites(d->world, id, local, 64);
        if (n > 64) {
            p = tk_malloc(n * sizeof *p);
            n = tk_tick_prerequisites(d->world, id, p, n);
        }
        bool first = true;
        for (size_t i = 0; i < n; i++) {
            int pc = -1;
            const tks_entity *pe = tks_tick_owner(d->sim, p[i], &pc);
            if (!pe)
                continue;
            w_puts(f, first ? "{\"id\":" : ",{\"id\":");
            first = false;
            w_u64(f, tks_entity_id(pe));
            if (pc >= 0) {
                w_puts(f, ",\"component\":");
                w_u64(f, (uint64_t)pc);
            }
            w_putc(f, '}');
        }
        if (p != local)
            tk_free(p);
        w_puts(f, "]}");
    } else {
        const tk_tick_spec *kept = tks_entity_tick_spec(d->sim, e, comp);
        tk_tick_spec def;
        tk_tick_spec_default(&def);
        def.on_dedicated_server = false;
        w_spec(f, kept ? kept : &def);
        w_putc(f, '}');
    }
}

typedef struct props_ctx {
    wr *f;
    bool first;
} props_ctx;

static void w_prop(void *ud, const tks_prop_desc *pd, const tks_value *v)
{
    props_ctx *pc = ud;
    wr *f = pc->f;
    if (!pc->first)
        w_putc(f, ',');
    pc->first = false;
    w_key(f, pd->name);
    if (pd->type == TKS_PROP_NUMBER)
        w_real(f, v->num);
    else
        w_json(f, tkd_j_value(pd, v));
}

static void w_entity_props(wr *f, tkd *d, const tks_entity *e, int comp)
{
    props_ctx pc = {f, true};
    w_putc(f, '{');
    tks_entity_props(d->sim, e, comp, w_prop, &pc);
    w_putc(f, '}');
}

typedef struct write_ctx {
    tkd *d;
    wr *f;
    uint64_t n;
    const uint64_t *orders; /* the saved timers' tie orders, sorted */
    size_t n_orders;
} write_ctx;

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Is timer i one a snapshot holds: a protocol timer, or an entity's life
 * span (plugin timers are not saved)? */
static bool saved_timer(tkd *d, const tk_timer_info *i)
{
    if (i->owner == 0)
        return true;
    if (i->owner & TKS_OWNER_TICKABLE)
        return false;
    const tks_entity *e = tks_entity_get(d->sim, i->owner);
    return e && tks_entity_life_timer(d->sim, e) == i->handle;
}

/* The tie orders of the saved timers, sorted: a saved "order" is its rank
 * among them (0, 1, ...), so that a world saved again after a load writes
 * the same numbers. */
static uint64_t *saved_orders(tkd *d, size_t *n)
{
    tk_timer_counts tc;
    tk_timer_get_counts(d->world, &tc);
    size_t cap = tc.active + tc.paused + tc.pending + 1;
    uint64_t *o = tk_malloc(cap * sizeof *o);
    *n = 0;
    uint64_t cur = 0;
    tk_timer_handle h;
    while (tk_timer_next(d->world, &cur, &h)) {
        tk_timer_info i;
        if (tk_timer_get(d->world, h, &i) != 0 || !saved_timer(d, &i))
            continue;
        if (*n == cap)
            o = tk_realloc(o, (cap *= 2) * sizeof *o);
        o[(*n)++] = i.order;
    }
    qsort(o, *n, sizeof *o, u64_cmp);
    return o;
}

static uint64_t rank_of(const write_ctx *w, uint64_t order)
{
    const uint64_t *p = bsearch(&order, w->orders, w->n_orders, sizeof *w->orders, u64_cmp);
    return p ? (uint64_t)(p - w->orders) : 0;
}

static void w_entity(void *ud, const tks_entity *e)
{
    write_ctx *w = ud;
    tkd *d = w->d;
    wr *f = w->f;
    w_puts(f, w->n++ ? ",{\"id\":" : "{\"id\":");
    w_u64(f, tks_entity_id(e));
    w_puts(f, ",\"class\":");
    w_str(f, tks_class_name(tks_entity_class(e)));
    w_puts(f, ",\"level\":");
    w_str(f, tk_level_name(d->world, tks_entity_level(e)));
    w_puts(f, ",\"time_dilation\":");
    w_real(f, tks_entity_dilation(e));
    w_puts(f, ",\"life_span\":");
    double life = tks_entity_life_remaining(d->sim, e);
    if (life >= 0)
        w_real(f, life);
    else
        w_puts(f, "null");
    tk_timer_info li;
    tk_timer_handle lh = tks_entity_life_timer(d->sim, e);
    if (life >= 0 && lh && tk_timer_get(d->world, lh, &li) == 0) {
        /* Its timer as it is: restored under the same handle, with the span
         * it was set with, its status and its place among equal expiries. */
        w_puts(f, ",\"life_timer\":{\"handle\":");
        w_u64(f, lh);
        w_puts(f, ",\"rate\":");
        w_real(f, li.rate);
        w_puts(f, ",\"status\":\"");
        w_puts(f, li.status == TK_TIMER_PAUSED    ? "paused"
                  : li.status == TK_TIMER_PENDING ? "pending"
                                                  : "active");
        w_puts(f, "\",\"order\":");
        w_u64(f, rank_of(w, li.order));
        w_putc(f, '}');
    }
    w_puts(f, ",\"props\":");
    w_entity_props(f, d, e, -1);
    w_puts(f, ",\"tick\":");
    w_fn(f, d, e, -1);
    w_puts(f, ",\"components\":[");
    for (size_t i = 0; i < tks_entity_component_count(e); i++) {
        w_puts(f, i ? ",{\"class\":" : "{\"class\":");
        w_str(f, tks_class_name(tks_entity_component_class(e, i)));
        w_puts(f, ",\"props\":");
        w_entity_props(f, d, e, (int)i);
        w_puts(f, ",\"tick\":");
        w_fn(f, d, e, (int)i);
        w_putc(f, '}');
    }
    w_puts(f, "]}");
}

static char *utc_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/*
 * What an exact restore needs beyond the objects (members of "world"): the
 * clocks in ns (a double of seconds loses nanoseconds past ~100 days),
 * whether the timer manager ticked in the last frame, the steps owed to a
 * paused world, the timer serial and free slots (runs of consecutive slots:
 * [first, n] for first, first+1, ..., [first, -n] downwards) and the
 * tickables' free ids, so that later handles and ids are those the saved
 * world would have given.
 */
static void write_exact(tkd *d, wr *f)
{
    tk_world_t *w = d->world;
    w_puts(f, ",\"world_time_ns\":");
    w_u64(f, tk_world_time_ns(w));
    w_puts(f, ",\"unpaused_time_ns\":");
    w_u64(f, tk_world_unpaused_time_ns(w));
    w_puts(f, ",\"real_time_ns\":");
    w_u64(f, tk_world_real_time_ns(w));
    w_puts(f, ",\"timers_ticked\":");
    w_bool(f, tk_timer_ticked_last_frame(w));
    w_puts(f, ",\"steps\":");
    w_u64(f, tk_world_steps_pending(w));
    w_puts(f, ",\"timer_serial\":");
    w_u64(f, tk_timer_serial(w));
    w_puts(f, ",\"timer_free\":[");
    size_t n = tk_timer_free_slots(w, NULL, 0);
    uint32_t *fs = n ? tk_malloc(n * sizeof *fs) : NULL;
    n = tk_timer_free_slots(w, fs, n);
    for (size_t i = 0; i < n;) {
        size_t k = i + 1;
        int dir = 0;
        if (k < n && (fs[k] == fs[i] + 1 || fs[k] + 1 == fs[i]))
            dir = fs[k] == fs[i] + 1 ? 1 : -1;
        while (dir && k < n && (int64_t)fs[k] - (int64_t)fs[k - 1] == dir)
            k++;
        w_puts(f, i ? ",[" : "[");
        w_u64(f, fs[i]);
        w_puts(f, dir < 0 ? ",-" : ",");
        w_u64(f, k - i);
        w_putc(f, ']');
        i = k;
    }
    tk_free(fs);
    w_puts(f, "],\"tickable_free\":[");
    n = tk_tickable_free_ids(w, NULL, 0);
    tk_tickable_id *ti = n ? tk_malloc(n * sizeof *ti) : NULL;
    n = tk_tickable_free_ids(w, ti, n);
    for (size_t i = 0; i < n; i++) {
        if (i)
            w_putc(f, ',');
        w_u64(f, ti[i]);
    }
    tk_free(ti);
    w_putc(f, ']');
}

/* Stream the whole document (no trailing newline) to `f`; the caller
 * flushes and checks f->err.  Counts what it wrote in *cnt. */
static void write_doc(tkd *d, wr *f, snap_counts *cnt)
{
    char now[32];
    memset(cnt, 0, sizeof *cnt);
    w_puts(f, "{\"format\":\"tickd-snapshot\",\"version\":");
    w_u64(f, TKD_SNAPSHOT_VERSION);
    w_puts(f, ",\"saved_at\":\"");
    w_puts(f, utc_now(now, sizeof now));
    if (d->snap_journal_id) {
        char id[24];
        snprintf(id, sizeof id, "%016llx", (unsigned long long)d->snap_journal_id);
        w_puts(f, "\",\"journal\":{\"id\":\"");
        w_puts(f, id);
        w_puts(f, "\"}");
        w_puts(f, ",\"world\":{\"frame\":");
    } else {
        w_puts(f, "\",\"world\":{\"frame\":");
    }
    tk_world_time t;
    tk_world_get_time(d->world, &t);
    /* Frames completed: one more than the counter after a frame's world
     * tick (a save started from the core ticker), so that the restored
     * world's next frame has the number the saved one's next frame had. */
    w_u64(f, tk_world_frames_done(d->world));
    w_puts(f, ",\"world_time\":");
    w_real(f, t.world_time);
    w_puts(f, ",\"unpaused_time\":");
    w_real(f, t.unpaused_time);
    w_puts(f, ",\"real_time\":");
    w_real(f, t.real_time);
    w_puts(f, ",\"time_dilation\":");
    w_real(f, t.time_dilation);
    w_puts(f, ",\"paused\":");
    w_bool(f, t.paused);
    w_puts(f, ",\"next_id\":");
    w_u64(f, tks_next_id(d->sim));
    write_exact(d, f);
    w_puts(f, "},\"levels\":[");
    for (size_t i = 0; i < tk_level_count(d->world); i++) {
        if (i)
            w_putc(f, ',');
        w_str(f, tk_level_name(d->world, tk_level_at(d->world, i)));
    }
    w_puts(f, "],\"entities\":[");
    write_ctx w = {d, f, 0, NULL, 0};
    uint64_t *orders = saved_orders(d, &w.n_orders);
    w.orders = orders;
    tks_entity_list(d->sim, TK_LEVEL_NONE, NULL, 0, UINT64_MAX, w_entity, &w);
    cnt->entities = w.n;
    w_puts(f, "],\"timers\":[");
    uint64_t cur = 0;
    tk_timer_handle h;
    while (tk_timer_next(d->world, &cur, &h)) {
        tk_timer_info i;
        if (tk_timer_get(d->world, h, &i) != 0 || i.owner != 0)
            continue; /* life spans travel with their entities */
        w_puts(f, cnt->timers++ ? ",{\"handle\":" : "{\"handle\":");
        w_u64(f, h);
        w_puts(f, ",\"rate\":");
        w_real(f, i.rate);
        w_puts(f, ",\"loop\":");
        w_bool(f, i.loop);
        w_puts(f, ",\"status\":\"");
        w_puts(f, tk_timer_status_name(i.status));
        w_puts(f, "\",\"remaining\":");
        w_real(f, i.remaining);
        w_puts(f, ",\"fired\":");
        w_u64(f, i.fired);
        w_puts(f, ",\"order\":");
        w_u64(f, rank_of(&w, i.order));
        w_puts(f, ",\"action\":");
        w_json(f, tkd_timer_action(d, h));
        w_putc(f, '}');
    }
    w_puts(f, "],\"tickables\":[");
    cur = 0;
    tk_tickable_id tid;
    while (tk_tickable_next(d->world, &cur, &tid)) {
        tk_tickable_info i;
        const tks_class *c = tks_tickable_class(d->sim, tid);
        if (!c || tk_tickable_get(d->world, tid, &i) != 0)
            continue;
        w_puts(f, cnt->tickables++ ? ",{\"id\":" : "{\"id\":");
        w_u64(f, tid);
        w_puts(f, ",\"class\":");
        w_str(f, tks_class_name(c));
        w_puts(f, ",\"tick_type\":\"");
        w_puts(f, tk_tickable_type_name(i.type));
        w_puts(f, "\",\"enabled\":");
        w_bool(f, i.enabled);
        w_puts(f, ",\"when_paused\":");
        w_bool(f, i.when_paused);
        w_puts(f, ",\"ticks\":");
        w_u64(f, i.ticks);
        w_puts(f, ",\"last_frame\":");
        w_u64(f, i.last_frame);
        w_puts(f, ",\"accum_dt\":");
        w_real(f, i.accum_dt);
        w_puts(f, ",\"props\":");
        props_ctx pc = {f, true};
        w_putc(f, '{');
        tks_tickable_props(d->sim, tid, w_prop, &pc);
        w_puts(f, "}}");
    }
    w_puts(f, "]}");
    tk_free(orders);
}

json_t *tkd_snapshot_build(tkd *d)
{
    wr w;
    wr_init(&w, -1);
    snap_counts cnt;
    write_doc(d, &w, &cnt);
    json_t *doc = w.err ? NULL : json_loadb(w.buf, w.n, 0, NULL);
    tk_free(w.buf);
    return doc;
}

/* ---- parsing and checking ------------------------------------------------------------ */

typedef struct prereq_ref {
    tks_id id;
    int comp; /* -1: actor */
} prereq_ref;

typedef struct fn_in {
    prereq_ref *pre;
    size_t n_pre;
} fn_in;

typedef struct ent_in {
    tks_entity_restore r;
    fn_in fn;
    fn_in *comp_fn;
    bool has_life_timer;  /* "life_timer" given: its timer as saved      */
    bool life_has_order;
    uint64_t life_handle, life_order;
    double life_rate;
    tk_timer_status life_status;
} ent_in;

typedef struct timer_in {
    uint64_t handle;
    double rate, remaining;
    bool loop;
    tk_timer_status status;
    uint64_t fired;
    const json_t *action; /* borrowed from the document, or NULL */
    uint64_t order;       /* tie order as saved; has_order: given   */
    bool has_order;
    tks_id life;          /* a life span's timer: its entity, else 0 */
} timer_in;

typedef struct tickable_in {
    uint64_t id;
    const char *cls;
    tk_tickable_type type;
    bool enabled, when_paused;
    uint64_t ticks, last_frame;
    double accum_dt;
    tks_prop_kv *props;
    size_t n_props;
} tickable_in;

typedef struct doc_in {
    uint64_t frame, next_id;
    double world_time, unpaused_time, real_time, dilation;
    bool paused;
    /* Exact restores (write_exact); has_*: given. */
    bool has_ns, has_ticked, has_serial;
    uint64_t world_ns, unpaused_ns, real_ns;
    bool timers_ticked;
    uint64_t steps;
    uint64_t timer_serial;
    uint32_t *timer_free;      /* slots, in order                          */
    size_t n_timer_free;
    uint64_t *tickable_free;   /* ids, in order                            */
    size_t n_tickable_free;
    bool has_tickable_free;
    uint64_t journal_id;       /* $.journal.id, 0: none                    */
    const char **levels;
    size_t n_levels;
    ent_in *ents;
    size_t n_ents;
    tks_id *sorted_ids; /* for lookups */
    uint32_t *by_id;    /* indexes of ents, in id order (parallel to sorted_ids) */
    timer_in *timers;
    size_t n_timers;
    uint32_t *timer_order;  /* indexes of timers, in slot order */
    size_t n_life;          /* timers[n_timers ..]: life spans' timers */
    tickable_in *tickables;
    size_t n_tickables;
} doc_in;

static void nonfinite_props(const tks_sim *sim, const char *cls, tks_prop_kv *kv, size_t n);

/* Required readers: 0 absent is an error naming path.key. */
#define NEED(call, path, key)                                                                      \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ < 0)                                                                               \
            return -1;                                                                             \
        if (rc_ == 0)                                                                              \
            return tkd_perr_set(e, -32602, "%s.%s: required", path, key);                          \
    } while (0)
#define OPT(call)                                                                                  \
    do {                                                                                           \
        if ((call) < 0)                                                                            \
            return -1;                                                                             \
    } while (0)

/* tkd_p_keys without quoting the key (a file's content): "$.x: unknown key". */
static int snap_keys(const json_t *obj, const char *path, const char *const *allowed, tkd_perr *e)
{
    if (tkd_p_keys(obj, path, allowed, e) == 0)
        return 0;
    return tkd_perr_set(e, -32602, "%s: an unknown key", path);
}

static const char *const fn_keys[] = {"group",
                                      "end_group",
                                      "interval",
                                      "enabled",
                                      "even_when_paused",
                                      "high_priority",
                                      "batch",
                                      "on_dedicated_server",
                                      "any_thread",
                                      "ticks",
                                      "last_frame",
                                      "last_dt",
                                      "accum_dt",
                                      "cooldown",
                                      "since_last_tick",
                                      "prerequisites",
                                      NULL};

static int parse_fn(const json_t *o, const char *path, tkd_arena *a, tks_fn_restore *fr, fn_in *fi,
                    tkd_perr *e)
{
    if (!json_is_object(o))
        return tkd_perr_set(e, -32602, "%s: must be an object", path);
    if (snap_keys(o, path, fn_keys, e))
        return -1;
    tk_tick_spec_default(&fr->spec);
    if (tkd_p_tick_spec(o, path, false, &fr->spec, e) < 0)
        return -1;
    tk_tick_restore *st = &fr->st;
    st->cooldown = -1;
    st->since_last_tick = -1;
    double last_dt = 0;
    OPT(tkd_p_u64(o, "ticks", path, 0, UINT64_MAX, &st->ticks, e));
    OPT(tkd_p_u64(o, "last_frame", path, 0, UINT64_MAX, &st->last_frame, e));
    OPT(tkd_p_num(o, "last_dt", path, 0, 1e12, &last_dt, e));
    st->last_dt = (float)last_dt;
    OPT(tkd_p_num(o, "accum_dt", path, 0, 1e300, &st->accum_dt, e));
    OPT(tkd_p_num(o, "cooldown", path, -1, 1e12, &st->cooldown, e));
    OPT(tkd_p_num(o, "since_last_tick", path, -1, 1e12, &st->since_last_tick, e));
    json_t *pre = NULL;
    OPT(tkd_p_arr(o, "prerequisites", path, &pre, e));
    fi->n_pre = pre ? json_array_size(pre) : 0;
    fi->pre = fi->n_pre ? tkd_arena_alloc(a, fi->n_pre * sizeof *fi->pre) : NULL;
    for (size_t i = 0; i < fi->n_pre; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s.prerequisites[%zu]", path, i);
        json_t *t = json_array_get(pre, i);
        static const char *const tk[] = {"id", "component", NULL};
        if (!json_is_object(t))
            return tkd_perr_set(e, -32602, "%s: must be {\"id\", \"component\"?}", p);
        if (snap_keys(t, p, tk, e))
            return -1;
        uint64_t id, comp = 0;
        NEED(tkd_p_u64(t, "id", p, 1, UINT64_MAX, &id, e), p, "id");
        int hc = tkd_p_u64(t, "component", p, 0, TKS_MAX_COMPONENTS - 1, &comp, e);
        if (hc < 0)
            return -1;
        fi->pre[i].id = id;
        fi->pre[i].comp = hc ? (int)comp : -1;
    }
    return 0;
}

static const char *const ent_keys[] = {"id",    "class", "level",      "time_dilation",
                                       "life_span", "life_timer", "props", "tick",
                                       "components", NULL};

/* "pending", "active" ("executing" reads as active) or "paused". */
static int timer_status_of(const char *st, tk_timer_status *out)
{
    if (!strcmp(st, "pending"))
        *out = TK_TIMER_PENDING;
    else if (!strcmp(st, "active") || !strcmp(st, "executing"))
        *out = TK_TIMER_ACTIVE;
    else if (!strcmp(st, "paused"))
        *out = TK_TIMER_PAUSED;
    else
        return -1;
    return 0;
}

/* A handle a timer may have (slot below TK_TIMER_MAX, serial in range). */
static bool timer_handle_ok(uint64_t h)
{
    return (h & TK_TIMER_MAX) != TK_TIMER_MAX && (h >> 24) != 0 && (h >> 24) <= TK_TIMER_SERIAL_MAX;
}

/* $.entities[i].life_timer: {"handle", "rate", "status"?, "order"?}. */
static int parse_life_timer(const json_t *o, const char *path, ent_in *en, tkd_perr *e)
{
    char p[320];
    snprintf(p, sizeof p, "%s.life_timer", path);
    static const char *const lk[] = {"handle", "rate", "status", "order", NULL};
    if (!json_is_object(o))
        return tkd_perr_set(e, -32602, "%s: must be an object", p);
    if (snap_keys(o, p, lk, e))
        return -1;
    if (en->r.life_remaining < 0)
        return tkd_perr_set(e, -32602, "%s: given without a life_span", p);
    NEED(tkd_p_u64(o, "handle", p, 1, UINT64_MAX, &en->life_handle, e), p, "handle");
    if (!timer_handle_ok(en->life_handle))
        return tkd_perr_set(e, -32602, "%s.handle: not a timer handle", p);
    NEED(tkd_p_num(o, "rate", p, 0, 1e12, &en->life_rate, e), p, "rate");
    const char *st = "active";
    OPT(tkd_p_str(o, "status", p, &st, e));
    if (timer_status_of(st, &en->life_status) != 0)
        return tkd_perr_set(e, -32602, "%s.status: must be pending, active or paused", p);
    int hc = tkd_p_u64(o, "order", p, 0, UINT64_MAX, &en->life_order, e);
    if (hc < 0)
        return -1;
    en->life_has_order = hc > 0;
    en->has_life_timer = true;
    return 0;
}

static int parse_entity(const tks_sim *sim, const json_t *o, const char *path, tkd_arena *a,
                        ent_in *en, tkd_perr *e)
{
    if (!json_is_object(o))
        return tkd_perr_set(e, -32602, "%s: must be an object", path);
    if (snap_keys(o, path, ent_keys, e))
        return -1;
    tks_entity_restore *r = &en->r;
    memset(r, 0, sizeof *r);
    NEED(tkd_p_u64(o, "id", path, 1, 9000000000000000ull, &r->id, e), path, "id");
    NEED(tkd_p_str(o, "class", path, &r->cls, e), path, "class");
    OPT(tkd_p_str(o, "level", path, &r->level, e));
    r->dilation = 1.0;
    OPT(tkd_p_num(o, "time_dilation", path, 0, 1e6, &r->dilation, e));
    r->life_remaining = -1;
    json_t *life = json_object_get(o, "life_span");
    if (life && !json_is_null(life))
        OPT(tkd_p_num(o, "life_span", path, 0, 1e12, &r->life_remaining, e));
    en->has_life_timer = false;
    json_t *lt = json_object_get(o, "life_timer");
    if (lt && parse_life_timer(lt, path, en, e) < 0)
        return -1;
    json_t *props = NULL;
    OPT(tkd_p_obj(o, "props", path, &props, e));
    char p[400];
    snprintf(p, sizeof p, "%s.props", path);
    if (tkd_p_props(props, p, a, 0, &r->props, &r->n_props, e) < 0)
        return -1;
    nonfinite_props(sim, r->cls, r->props, r->n_props);
    json_t *tick = json_object_get(o, "tick");
    snprintf(p, sizeof p, "%s.tick", path);
    if (!tick)
        return tkd_perr_set(e, -32602, "%s: required", p);
    if (parse_fn(tick, p, a, &r->fn, &en->fn, e) < 0)
        return -1;
    json_t *comps = NULL;
    OPT(tkd_p_arr(o, "components", path, &comps, e));
    r->n_components = comps ? json_array_size(comps) : 0;
    if (r->n_components > TKS_MAX_COMPONENTS)
        return tkd_perr_set(e, -32602, "%s.components: at most %d", path, TKS_MAX_COMPONENTS);
    r->components =
        r->n_components ? tkd_arena_alloc(a, r->n_components * sizeof *r->components) : NULL;
    en->comp_fn =
        r->n_components ? tkd_arena_alloc(a, r->n_components * sizeof *en->comp_fn) : NULL;
    for (size_t i = 0; i < r->n_components; i++) {
        char cp[300];
        snprintf(cp, sizeof cp, "%s.components[%zu]", path, i);
        json_t *c = json_array_get(comps, i);
        static const char *const ck[] = {"class", "props", "tick", NULL};
        if (!json_is_object(c))
            return tkd_perr_set(e, -32602, "%s: must be an object", cp);
        if (snap_keys(c, cp, ck, e))
            return -1;
        tks_comp_restore *cr = &r->components[i];
        NEED(tkd_p_str(c, "class", cp, &cr->cls, e), cp, "class");
        json_t *cprops = NULL;
        OPT(tkd_p_obj(c, "props", cp, &cprops, e));
        snprintf(p, sizeof p, "%s.props", cp);
        if (tkd_p_props(cprops, p, a, 0, &cr->props, &cr->n_props, e) < 0)
            return -1;
        nonfinite_props(sim, cr->cls, cr->props, cr->n_props);
        json_t *ct = json_object_get(c, "tick");
        snprintf(p, sizeof p, "%s.tick", cp);
        if (!ct)
            return tkd_perr_set(e, -32602, "%s: required", p);
        if (parse_fn(ct, p, a, &cr->fn, &en->comp_fn[i], e) < 0)
            return -1;
    }
    return 0;
}

static int id_cmp(const void *a, const void *b)
{
    tks_id x = *(const tks_id *)a, y = *(const tks_id *)b;
    return x < y ? -1 : x > y;
}

/* Timers by slot, then by position in the document. */
static int slot_cmp(const void *a, const void *b, void *ctx)
{
    const timer_in *t = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t x = t[i].handle & TK_TIMER_MAX, y = t[j].handle & TK_TIMER_MAX;
    return x != y ? (x < y ? -1 : 1) : (i < j ? -1 : i > j);
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}


/* The entity `id` of the snapshot: O(log n) (sorted_ids and by_id are
 * parallel arrays in id order). */
static const ent_in *find_ent(const doc_in *in, tks_id id)
{
    const tks_id *p = bsearch(&id, in->sorted_ids, in->n_ents, sizeof *in->sorted_ids, id_cmp);
    return p ? &in->ents[in->by_id[p - in->sorted_ids]] : NULL;
}

/* Entities by id, then by position in the document. */
static int ent_order_cmp(const void *a, const void *b, void *ctx)
{
    const ent_in *en = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    tks_id x = en[i].r.id, y = en[j].r.id;
    return x != y ? (x < y ? -1 : 1) : (i < j ? -1 : i > j);
}

/* Tickables by slot, then by position in the document. */
static int tickable_slot_cmp(const void *a, const void *b, void *ctx)
{
    const tickable_in *t = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint32_t x = (uint32_t)t[i].id, y = (uint32_t)t[j].id;
    return x != y ? (x < y ? -1 : 1) : (i < j ? -1 : i > j);
}

/*
 * Props that the simulation drove to a non-finite value are written as the
 * strings "inf", "-inf" and "nan": turn them back into numbers where the
 * class declares the prop a number (elsewhere such a string stays a string).
 */
static void nonfinite_props(const tks_sim *sim, const char *cls, tks_prop_kv *kv, size_t n)
{
    const tks_class *c = cls ? tks_class_find(sim, cls) : NULL;
    const tkp_class *abi = c ? tks_class_abi(c) : NULL;
    if (!abi)
        return;
    for (size_t i = 0; i < n; i++) {
        if (kv[i].v.type != TKS_V_STRING)
            continue;
        const char *str = kv[i].v.str;
        double num;
        if (!strcmp(str, "inf"))
            num = INFINITY;
        else if (!strcmp(str, "-inf"))
            num = -INFINITY;
        else if (!strcmp(str, "nan"))
            num = NAN;
        else
            continue;
        for (size_t k = 0; k < abi->n_props; k++) {
            if (abi->props[k].type == TKS_PROP_NUMBER && !strcmp(abi->props[k].name, kv[i].key)) {
                kv[i].v.type = TKS_V_NUMBER;
                kv[i].v.num = num;
                break;
            }
        }
    }
}

static bool id_known(void *ud, tks_id id)
{
    const doc_in *in = ud;
    return bsearch(&id, in->sorted_ids, in->n_ents, sizeof *in->sorted_ids, id_cmp) != NULL;
}

static bool valid_level_name(const char *n)
{
    size_t len = strlen(n);
    if (len < 1 || len > TK_LEVEL_NAME_MAX)
        return false;
    for (size_t k = 0; k < len; k++)
        if (!((n[k] >= 'a' && n[k] <= 'z') || (n[k] >= 'A' && n[k] <= 'Z') ||
              (n[k] >= '0' && n[k] <= '9') || n[k] == '_' || n[k] == '.' || n[k] == '-'))
            return false;
    return true;
}

static bool has_level(const doc_in *in, const char *name)
{
    for (size_t i = 0; i < in->n_levels; i++)
        if (!strcmp(in->levels[i], name))
            return true;
    return false;
}

/* Is the function (id, comp) of the snapshot a registered one? */
static bool fn_registered(const doc_in *in, tks_id id, int comp)
{
    const ent_in *t = find_ent(in, id);
    if (!t)
        return false;
    if (comp < 0)
        return t->r.fn.spec.on_dedicated_server;
    if ((size_t)comp >= t->r.n_components)
        return false;
    return t->r.components[comp].fn.spec.on_dedicated_server;
}

static int check_prereqs(const doc_in *in, const fn_in *fi, const char *path, tkd_perr *e)
{
    for (size_t i = 0; i < fi->n_pre; i++) {
        if (!id_known((void *)in, fi->pre[i].id))
            return tkd_perr_set(e, -32602,
                                "%s.prerequisites[%zu].id: entity %llu is not in the snapshot",
                                path, i, (unsigned long long)fi->pre[i].id);
        if (!fn_registered(in, fi->pre[i].id, fi->pre[i].comp))
            return tkd_perr_set(
                e, -32602,
                "%s.prerequisites[%zu]: no such registered tick function in the snapshot", path, i);
    }
    return 0;
}

/*
 * The entities of a file being loaded, as byte ranges of its text: each is
 * parsed, checked and freed in turn, so a load never holds a jansson tree
 * of the whole world (for a million entities, building that tree was most
 * of the time of a load and several times the memory).
 */
typedef struct ent_text {
    const char *text;   /* the file (borrowed)                             */
    size_t n;           /* elements of $.entities                          */
    size_t *off, *len;  /* each element's bytes                            */
} ent_text;

/* Does the entity hold spawn templates (props whose strings stay borrowed
 * from its JSON)? */
static bool has_templates(const ent_in *en)
{
    const tks_entity_restore *r = &en->r;
    for (size_t i = 0; i < r->n_props; i++)
        if (r->props[i].v.type == TKS_V_SPAWN && r->props[i].v.spawn)
            return true;
    for (size_t c = 0; c < r->n_components; c++)
        for (size_t i = 0; i < r->components[c].n_props; i++)
            if (r->components[c].props[i].v.type == TKS_V_SPAWN &&
                r->components[c].props[i].v.spawn)
                return true;
    return false;
}

/* Copy the strings an entity borrows from its JSON into the arena. */
static void own_strings(tkd_arena *a, ent_in *en)
{
    tks_entity_restore *r = &en->r;
    r->cls = tkd_arena_strdup(a, r->cls);
    if (r->level)
        r->level = tkd_arena_strdup(a, r->level);
    for (size_t c = 0; c < r->n_components; c++)
        r->components[c].cls = tkd_arena_strdup(a, r->components[c].cls);
}

/*
 * What parsing reads of the daemon: the class table (fixed once plugins are
 * loaded) and a limit, copied.  Nothing else of the world: that is why a
 * world.load's file can be parsed and checked on a thread of its own while
 * frames run.
 */
typedef struct parse_env {
    const tks_sim *sim;
    uint64_t max_entities;
    const tkp_ctx *ctx;        /* for class check hooks (tks_check_ctx); NULL: frame thread */
    const atomic_bool *cancel; /* stop early (shutdown), or NULL */
} parse_env;

static void parse_env_of(tkd *d, parse_env *env)
{
    memset(env, 0, sizeof *env);
    env->sim = d->sim;
    env->max_entities = d->cfg.max_entities;
}

/*
 * Check the document `doc` (its entities in `et` when not NULL, else in
 * doc's "entities") into `in`.  JSON of entities from `et` that must live
 * until the apply (spawn templates) is appended to `keep`.
 */
/* $.world's members for an exact restore (write_exact); all optional. */
static int parse_exact(const json_t *w, tkd_arena *a, doc_in *in, tkd_perr *e)
{
    const char *P = "$.world";
    int h1 = tkd_p_u64(w, "world_time_ns", P, 0, INT64_MAX, &in->world_ns, e);
    int h2 = tkd_p_u64(w, "unpaused_time_ns", P, 0, INT64_MAX, &in->unpaused_ns, e);
    int h3 = tkd_p_u64(w, "real_time_ns", P, 0, INT64_MAX, &in->real_ns, e);
    if (h1 < 0 || h2 < 0 || h3 < 0)
        return -1;
    if ((h1 || h2 || h3) && !(h1 && h2 && h3))
        return tkd_perr_set(e, -32602,
                            "%s: world_time_ns, unpaused_time_ns and real_time_ns come together", P);
    in->has_ns = h1 > 0;
    int ht = tkd_p_bool(w, "timers_ticked", P, &in->timers_ticked, e);
    if (ht < 0)
        return -1;
    in->has_ticked = ht > 0;
    OPT(tkd_p_u64(w, "steps", P, 0, UINT64_MAX / 2, &in->steps, e));
    int hs = tkd_p_u64(w, "timer_serial", P, 0, TK_TIMER_SERIAL_MAX, &in->timer_serial, e);
    if (hs < 0)
        return -1;
    in->has_serial = hs > 0;
    json_t *tf = NULL;
    OPT(tkd_p_arr(w, "timer_free", P, &tf, e));
    size_t total = 0;
    for (size_t pass = 0; pass < 2 && tf; pass++) {
        if (pass == 1) {
            in->timer_free = total ? tkd_arena_alloc(a, total * sizeof *in->timer_free) : NULL;
            in->n_timer_free = 0;
        }
        for (size_t i = 0; i < json_array_size(tf); i++) {
            json_t *run = json_array_get(tf, i);
            json_t *f0 = json_array_get(run, 0), *c0 = json_array_get(run, 1);
            if (!json_is_array(run) || json_array_size(run) != 2 || !json_is_integer(f0) ||
                !json_is_integer(c0))
                return tkd_perr_set(e, -32602, "%s.timer_free[%zu]: must be [first slot, count]",
                                    P, i);
            json_int_t first = json_integer_value(f0), cnt = json_integer_value(c0);
            json_int_t n = cnt < 0 ? -cnt : cnt;
            if (first < 0 || first >= TK_TIMER_MAX || n < 1 || n > TK_TIMER_MAX ||
                (cnt > 0 && first + n > TK_TIMER_MAX) || (cnt < 0 && first - n + 1 < 0))
                return tkd_perr_set(e, -32602, "%s.timer_free[%zu]: slots out of range", P, i);
            if (pass == 0) {
                total += (size_t)n;
                if (total > TK_TIMER_MAX)
                    return tkd_perr_set(e, -32602, "%s.timer_free: more than %u slots", P,
                                        (unsigned)TK_TIMER_MAX);
                continue;
            }
            for (json_int_t k = 0; k < n; k++)
                in->timer_free[in->n_timer_free++] = (uint32_t)(cnt > 0 ? first + k : first - k);
        }
    }
    json_t *kf = NULL;
    OPT(tkd_p_arr(w, "tickable_free", P, &kf, e));
    in->has_tickable_free = kf != NULL;
    in->n_tickable_free = kf ? json_array_size(kf) : 0;
    in->tickable_free =
        in->n_tickable_free ? tkd_arena_alloc(a, in->n_tickable_free * sizeof *in->tickable_free)
                            : NULL;
    for (size_t i = 0; i < in->n_tickable_free; i++) {
        json_t *v = json_array_get(kf, i);
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        uint64_t gen = (uint64_t)id >> 32;
        if (id <= 0 || gen == 0 || gen >= (1u << 21) || (uint32_t)id == 0xffffffffu)
            return tkd_perr_set(e, -32602, "%s.tickable_free[%zu]: not a tickable id", P, i);
        in->tickable_free[i] = (uint64_t)id;
    }
    return 0;
}

static int parse_doc(const parse_env *env, const json_t *doc, const ent_text *et, json_t *keep,
                     tkd_arena *a, doc_in *in, tkd_perr *e)
{
    memset(in, 0, sizeof *in);
    if (!json_is_object(doc))
        return tkd_perr_set(e, -32602, "$: must be an object");
    static const char *const top[] = {"format",   "version", "saved_at",  "journal", "world",
                                      "levels",   "entities", "timers",   "tickables", NULL};
    if (snap_keys(doc, "$", top, e))
        return -1;
    json_t *jn = json_object_get(doc, "journal");
    if (jn) {
        static const char *const jk[] = {"id", NULL};
        const char *jid = NULL;
        if (!json_is_object(jn))
            return tkd_perr_set(e, -32602, "$.journal: must be an object");
        if (snap_keys(jn, "$.journal", jk, e))
            return -1;
        NEED(tkd_p_str(jn, "id", "$.journal", &jid, e), "$.journal", "id");
        char *end;
        errno = 0;
        in->journal_id = strtoull(jid, &end, 16);
        if (strlen(jid) != 16 || *end || errno || in->journal_id == 0)
            return tkd_perr_set(e, -32602, "$.journal.id: must be 16 hex digits, not all 0");
    }
    const char *fmt = NULL;
    OPT(tkd_p_str(doc, "format", "$", &fmt, e));
    if (fmt && strcmp(fmt, "tickd-snapshot") != 0)
        return tkd_perr_set(e, -32602, "$.format: not a tickd snapshot");
    json_t *ver = json_object_get(doc, "version");
    if (!json_is_integer(ver))
        return tkd_perr_set(e, -32602, "$.version: required (an integer)");
    if (json_integer_value(ver) != TKD_SNAPSHOT_VERSION)
        return tkd_perr_set(e, -32602,
                            "$.version: unsupported snapshot version %lld (this tickd reads %d)",
                            (long long)json_integer_value(ver), TKD_SNAPSHOT_VERSION);
    /* world */
    json_t *w = NULL;
    OPT(tkd_p_obj(doc, "world", "$", &w, e));
    if (!w)
        return tkd_perr_set(e, -32602, "$.world: required");
    static const char *const wk[] = {"frame",         "world_time",       "unpaused_time",
                                     "real_time",     "time_dilation",    "paused",
                                     "next_id",       "world_time_ns",    "unpaused_time_ns",
                                     "real_time_ns",  "timers_ticked",    "steps",
                                     "timer_serial",  "timer_free",       "tickable_free",
                                     NULL};
    if (snap_keys(w, "$.world", wk, e))
        return -1;
    if (parse_exact(w, a, in, e) < 0)
        return -1;
    in->dilation = 1.0;
    OPT(tkd_p_u64(w, "frame", "$.world", 0, UINT64_MAX / 2, &in->frame, e));
    OPT(tkd_p_num(w, "world_time", "$.world", 0, 9e9, &in->world_time, e));
    OPT(tkd_p_num(w, "unpaused_time", "$.world", 0, 9e9, &in->unpaused_time, e));
    OPT(tkd_p_num(w, "real_time", "$.world", 0, 9e9, &in->real_time, e));
    OPT(tkd_p_num(w, "time_dilation", "$.world", 0, 1e6, &in->dilation, e));
    OPT(tkd_p_bool(w, "paused", "$.world", &in->paused, e));
    in->next_id = 1;
    OPT(tkd_p_u64(w, "next_id", "$.world", 1, 9000000000000001ull, &in->next_id, e));
    /* levels */
    json_t *levels = NULL;
    OPT(tkd_p_arr(doc, "levels", "$", &levels, e));
    in->n_levels = levels ? json_array_size(levels) : 0;
    if (in->n_levels > TK_LEVEL_MAX)
        return tkd_perr_set(e, -32602, "$.levels: at most %d levels", TK_LEVEL_MAX);
    in->levels = tkd_arena_alloc(a, (in->n_levels + 1) * sizeof *in->levels);
    for (size_t i = 0; i < in->n_levels; i++) {
        json_t *v = json_array_get(levels, i);
        if (!json_is_string(v) || !valid_level_name(json_string_value(v)))
            return tkd_perr_set(e, -32602,
                                "$.levels[%zu]: must be a level name ([A-Za-z0-9_.-], 1..%d)", i,
                                TK_LEVEL_NAME_MAX);
        in->levels[i] = json_string_value(v);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(in->levels[k], in->levels[i]))
                return tkd_perr_set(e, -32602, "$.levels[%zu]: '%s' is listed twice", i,
                                    in->levels[i]);
    }
    /* entities */
    json_t *ents = NULL;
    if (et) {
        in->n_ents = et->n;
    } else {
        OPT(tkd_p_arr(doc, "entities", "$", &ents, e));
        in->n_ents = ents ? json_array_size(ents) : 0;
    }
    if (in->n_ents > env->max_entities)
        return tkd_perr_set(e, -32003, "$.entities: %zu entities exceed world.max_entities (%llu)",
                            in->n_ents, (unsigned long long)env->max_entities);
    in->ents = in->n_ents ? tkd_arena_alloc(a, in->n_ents * sizeof *in->ents) : NULL;
    in->sorted_ids = tkd_arena_alloc(a, (in->n_ents + 1) * sizeof *in->sorted_ids);
    for (size_t i = 0; i < in->n_ents; i++) {
        char p[64];
        if (env->cancel && (i & 1023) == 0 &&
            atomic_load_explicit(env->cancel, memory_order_relaxed))
            return tkd_perr_set(e, -32004, "shutting down");
        snprintf(p, sizeof p, "$.entities[%zu]", i);
        if (!et) {
            if (parse_entity(env->sim, json_array_get(ents, i), p, a, &in->ents[i], e) < 0)
                return -1;
        } else {
            json_error_t je;
            json_t *ej = json_loadb(et->text + et->off[i], et->len[i],
                                   JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
            if (!ej)
                return tkd_perr_set(e, -32602,
                                    "%s: not valid JSON (line %d, column %d of the entity)", p,
                                    je.line, je.column);
            int prc = parse_entity(env->sim, ej, p, a, &in->ents[i], e);
            if (prc == 0 && has_templates(&in->ents[i])) {
                json_array_append_new(keep, ej);
            } else {
                if (prc == 0)
                    own_strings(a, &in->ents[i]);
                json_decref(ej);
            }
            if (prc < 0)
                return -1;
        }
        in->sorted_ids[i] = in->ents[i].r.id;
        const char *lv = in->ents[i].r.level ? in->ents[i].r.level : "persistent";
        if (strcmp(lv, "persistent") != 0 && !has_level(in, lv))
            return tkd_perr_set(e, -32602, "%s.level: '%s' is not in $.levels", p, lv);
    }
    /* Ids in order (O(n log n)); lookups by id are then O(log n). */
    in->by_id = tkd_arena_alloc(a, (in->n_ents + 1) * sizeof *in->by_id);
    for (size_t i = 0; i < in->n_ents; i++)
        in->by_id[i] = (uint32_t)i;
    if (in->n_ents > 1)
        qsort_r(in->by_id, in->n_ents, sizeof *in->by_id, ent_order_cmp, in->ents);
    for (size_t i = 0; i < in->n_ents; i++)
        in->sorted_ids[i] = in->ents[in->by_id[i]].r.id;
    for (size_t i = 1; i < in->n_ents; i++)
        if (in->sorted_ids[i] == in->sorted_ids[i - 1])
            return tkd_perr_set(e, -32602, "$.entities[%u].id: entity %llu appears twice",
                                in->by_id[i], (unsigned long long)in->sorted_ids[i]);
    if (in->n_ents && in->next_id <= in->sorted_ids[in->n_ents - 1])
        in->next_id = in->sorted_ids[in->n_ents - 1] + 1;
    for (size_t i = 0; i < in->n_ents; i++) {
        char p[64], err[TKS_ERR_MAX];
        snprintf(p, sizeof p, "$.entities[%zu]", i);
        int rc = tks_restore_check(env->sim, &in->ents[i].r, p, id_known, in, env->ctx, err);
        if (rc)
            return tkd_perr_set(e, rc == TK_ENOENT ? -32602 : tkd_code_from_tk(rc), "%s", err);
        char fp[160];
        snprintf(fp, sizeof fp, "%s.tick", p);
        if (check_prereqs(in, &in->ents[i].fn, fp, e) < 0)
            return -1;
        for (size_t c = 0; c < in->ents[i].r.n_components; c++) {
            snprintf(fp, sizeof fp, "%s.components[%zu].tick", p, c);
            if (check_prereqs(in, &in->ents[i].comp_fn[c], fp, e) < 0)
                return -1;
        }
    }
    /* timers */
    json_t *timers = NULL;
    OPT(tkd_p_arr(doc, "timers", "$", &timers, e));
    in->n_timers = timers ? json_array_size(timers) : 0;
    in->timers = in->n_timers ? tkd_arena_alloc(a, in->n_timers * sizeof *in->timers) : NULL;
    for (size_t i = 0; i < in->n_timers; i++) {
        char p[64];
        snprintf(p, sizeof p, "$.timers[%zu]", i);
        json_t *t = json_array_get(timers, i);
        static const char *const tk[] = {"handle", "rate",  "loop",   "status", "remaining",
                                         "fired",  "order", "action", NULL};
        if (!json_is_object(t))
            return tkd_perr_set(e, -32602, "%s: must be an object", p);
        if (snap_keys(t, p, tk, e))
            return -1;
        timer_in *ti = &in->timers[i];
        NEED(tkd_p_u64(t, "handle", p, 1, UINT64_MAX, &ti->handle, e), p, "handle");
        if ((ti->handle & TK_TIMER_MAX) == TK_TIMER_MAX || (ti->handle >> 24) == 0 ||
            (ti->handle >> 24) > TK_TIMER_SERIAL_MAX)
            return tkd_perr_set(e, -32602, "%s.handle: not a timer handle", p);
        OPT(tkd_p_bool(t, "loop", p, &ti->loop, e));
        /* 0: a timer.set_for_next_tick one. */
        NEED(tkd_p_num(t, "rate", p, 0, 1e9, &ti->rate, e), p, "rate");
        if (ti->rate < TKD_TIMER_MIN_RATE && (ti->rate != 0 || ti->loop))
            return tkd_perr_set(e, -32602,
                                "%s.rate: must be in [%g, 1e9] (0 only for a one-shot next-tick "
                                "timer)",
                                p, TKD_TIMER_MIN_RATE);
        const char *status = "active";
        OPT(tkd_p_str(t, "status", p, &status, e));
        if (timer_status_of(status, &ti->status) != 0)
            return tkd_perr_set(e, -32602, "%s.status: must be pending, active or paused", p);
        int ho = tkd_p_u64(t, "order", p, 0, UINT64_MAX, &ti->order, e);
        if (ho < 0)
            return -1;
        ti->has_order = ho > 0;
        NEED(tkd_p_num(t, "remaining", p, -1e12, 1e12, &ti->remaining, e), p, "remaining");
        OPT(tkd_p_u64(t, "fired", p, 0, UINT64_MAX, &ti->fired, e));
        json_t *act = json_object_get(t, "action");
        if (act && !json_is_null(act)) {
            char why[TKD_ERR_MAX];
            if (tkd_action_check(act, why, sizeof why) != 0)
                return tkd_perr_set(e, -32602, "%s.action%s", p, why);
            ti->action = act;
        }
    }
    /* Life spans' timers join the protocol timers: all are restored in
     * slot order (as saved) before the entities; a slot may appear once. */
    size_t n_life = 0;
    for (size_t i = 0; i < in->n_ents; i++)
        n_life += in->ents[i].has_life_timer;
    if (n_life) {
        timer_in *all = tkd_arena_alloc(a, (in->n_timers + n_life) * sizeof *all);
        if (in->n_timers)
            memcpy(all, in->timers, in->n_timers * sizeof *all);
        size_t k = in->n_timers;
        for (size_t i = 0; i < in->n_ents; i++) {
            const ent_in *en = &in->ents[i];
            if (!en->has_life_timer)
                continue;
            all[k] = (timer_in){.handle = en->life_handle,
                                .rate = en->life_rate,
                                .remaining = en->r.life_remaining,
                                .status = en->life_status,
                                .order = en->life_order,
                                .has_order = en->life_has_order,
                                .life = en->r.id};
            in->ents[i].r.life_handle = en->life_handle;
            k++;
        }
        in->timers = all;
    }
    in->n_life = n_life;
    size_t nt = in->n_timers + n_life;
    in->timer_order = nt ? tkd_arena_alloc(a, nt * sizeof *in->timer_order) : NULL;
    for (size_t i = 0; i < nt; i++)
        in->timer_order[i] = (uint32_t)i;
    if (nt > 1)
        qsort_r(in->timer_order, nt, sizeof *in->timer_order, slot_cmp, in->timers);
    for (size_t k = 1; k < nt; k++) {
        const timer_in *x = &in->timers[in->timer_order[k - 1]];
        const timer_in *y = &in->timers[in->timer_order[k]];
        if ((x->handle & TK_TIMER_MAX) != (y->handle & TK_TIMER_MAX))
            continue;
        if (y->life)
            return tkd_perr_set(e, -32602,
                                "$.entities: entity %llu's life_timer.handle: the slot of handle "
                                "%llu is used twice",
                                (unsigned long long)y->life, (unsigned long long)y->handle);
        return tkd_perr_set(e, -32602,
                            "$.timers[%u].handle: the slot of handle %llu is used twice",
                            in->timer_order[k], (unsigned long long)y->handle);
    }
    /* Free slots: not a saved timer's, each once (both lists sorted). */
    if (in->n_timer_free) {
        uint32_t *fs = tkd_arena_alloc(a, in->n_timer_free * sizeof *fs);
        memcpy(fs, in->timer_free, in->n_timer_free * sizeof *fs);
        qsort(fs, in->n_timer_free, sizeof *fs, u32_cmp);
        size_t j = 0;
        for (size_t k = 0; k < in->n_timer_free; k++) {
            if (k && fs[k] == fs[k - 1])
                return tkd_perr_set(e, -32602, "$.world.timer_free: slot %u is listed twice", fs[k]);
            while (j < nt && (in->timers[in->timer_order[j]].handle & TK_TIMER_MAX) < fs[k])
                j++;
            if (j < nt && (in->timers[in->timer_order[j]].handle & TK_TIMER_MAX) == fs[k])
                return tkd_perr_set(e, -32602,
                                    "$.world.timer_free: slot %u holds a saved timer", fs[k]);
        }
    }
    /* tickables */
    json_t *tks = NULL;
    OPT(tkd_p_arr(doc, "tickables", "$", &tks, e));
    in->n_tickables = tks ? json_array_size(tks) : 0;
    in->tickables =
        in->n_tickables ? tkd_arena_alloc(a, in->n_tickables * sizeof *in->tickables) : NULL;
    for (size_t i = 0; i < in->n_tickables; i++) {
        char p[64];
        snprintf(p, sizeof p, "$.tickables[%zu]", i);
        json_t *t = json_array_get(tks, i);
        static const char *const kk[] = {"id",          "class", "tick_type",  "enabled",
                                         "when_paused", "ticks", "last_frame", "accum_dt",
                                         "props",       NULL};
        if (!json_is_object(t))
            return tkd_perr_set(e, -32602, "%s: must be an object", p);
        if (snap_keys(t, p, kk, e))
            return -1;
        tickable_in *ti = &in->tickables[i];
        NEED(tkd_p_u64(t, "id", p, 1, UINT64_MAX, &ti->id, e), p, "id");
        if ((uint32_t)ti->id == 0xffffffffu || (ti->id >> 32) == 0)
            return tkd_perr_set(e, -32602, "%s.id: not a tickable id", p);
        NEED(tkd_p_str(t, "class", p, &ti->cls, e), p, "class");
        const char *tt = "conditional";
        OPT(tkd_p_str(t, "tick_type", p, &tt, e));
        if (tk_tickable_type_parse(tt, &ti->type) != 0)
            return tkd_perr_set(e, -32602, "%s.tick_type: must be always, conditional or never", p);
        ti->enabled = true;
        OPT(tkd_p_bool(t, "enabled", p, &ti->enabled, e));
        OPT(tkd_p_bool(t, "when_paused", p, &ti->when_paused, e));
        OPT(tkd_p_u64(t, "ticks", p, 0, UINT64_MAX, &ti->ticks, e));
        OPT(tkd_p_u64(t, "last_frame", p, 0, UINT64_MAX, &ti->last_frame, e));
        OPT(tkd_p_num(t, "accum_dt", p, 0, 1e300, &ti->accum_dt, e));
        json_t *props = NULL;
        OPT(tkd_p_obj(t, "props", p, &props, e));
        char pp[96];
        snprintf(pp, sizeof pp, "%s.props", p);
        if (tkd_p_props(props, pp, a, 0, &ti->props, &ti->n_props, e) < 0)
            return -1;
        nonfinite_props(env->sim, ti->cls, ti->props, ti->n_props);
        /* Props checked as an entity's would be (ids: the snapshot's). */
        tks_entity_restore probe;
        memset(&probe, 0, sizeof probe);
        probe.id = 1;
        probe.cls = ti->cls;
        probe.dilation = 1;
        probe.life_remaining = -1;
        probe.props = ti->props;
        probe.n_props = ti->n_props;
        tk_tick_spec_default(&probe.fn.spec);
        char err[TKS_ERR_MAX];
        int rc = tks_restore_check(env->sim, &probe, p, id_known, in, env->ctx, err);
        if (rc)
            return tkd_perr_set(e, -32602, "%s", err);
    }
    /* A slot may appear once (sorted: O(n log n)). */
    if (in->n_tickables > 1) {
        uint32_t *ord = tkd_arena_alloc(a, in->n_tickables * sizeof *ord);
        for (size_t i = 0; i < in->n_tickables; i++)
            ord[i] = (uint32_t)i;
        qsort_r(ord, in->n_tickables, sizeof *ord, tickable_slot_cmp, in->tickables);
        for (size_t k = 1; k < in->n_tickables; k++)
            if ((uint32_t)in->tickables[ord[k]].id == (uint32_t)in->tickables[ord[k - 1]].id)
                return tkd_perr_set(e, -32602,
                                    "$.tickables[%u].id: the slot of id %llu is used twice", ord[k],
                                    (unsigned long long)in->tickables[ord[k]].id);
    }
    /* Free tickable slots: none a saved tickable's, each once. */
    if (in->n_tickable_free) {
        size_t m = in->n_tickable_free + in->n_tickables;
        uint64_t *sl = tkd_arena_alloc(a, m * sizeof *sl);
        for (size_t i = 0; i < in->n_tickable_free; i++)
            sl[i] = (uint32_t)in->tickable_free[i];
        for (size_t i = 0; i < in->n_tickables; i++)
            sl[in->n_tickable_free + i] = (uint32_t)in->tickables[i].id;
        qsort(sl, m, sizeof *sl, u64_cmp);
        for (size_t k = 1; k < m; k++)
            if (sl[k] == sl[k - 1])
                return tkd_perr_set(e, -32602,
                                    "$.world.tickable_free: slot %llu is listed twice or holds a "
                                    "saved tickable",
                                    (unsigned long long)sl[k]);
    }
    return 0;
}

/* ---- applying -------------------------------------------------------------------------- */

static void clear_world(tkd *d)
{
    tks_clear(d->sim);
    /* Timers and tickables: collect first, then remove. */
    size_t n = 0, cap = 0;
    uint64_t *hs = NULL, cur = 0, h;
    while (tk_timer_next(d->world, &cur, &h)) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            hs = tk_realloc(hs, cap * sizeof *hs);
        }
        hs[n++] = h;
    }
    for (size_t i = 0; i < n; i++)
        tk_timer_clear(d->world, hs[i]);
    n = 0;
    cur = 0;
    while (tk_tickable_next(d->world, &cur, &h)) {
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            hs = tk_realloc(hs, cap * sizeof *hs);
        }
        hs[n++] = h;
    }
    for (size_t i = 0; i < n; i++)
        tk_tickable_remove(d->world, hs[i]);
    tk_free(hs);
    for (size_t i = tk_level_count(d->world); i-- > 0;) {
        tk_level_id l = tk_level_at(d->world, i);
        if (l != TK_LEVEL_PERSISTENT)
            tk_level_remove(d->world, l);
    }
}

static tk_tick_id fn_tick(const tks_sim *sim, tks_id id, int comp)
{
    const tks_entity *e = tks_entity_get(sim, id);
    return e ? tks_entity_tick(e, comp) : TK_TICK_NONE;
}

/* Timers by their saved tie order, then by position. */
static int order_cmp(const void *a, const void *b, void *ctx)
{
    const timer_in *t = ctx;
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    uint64_t x = t[i].order, y = t[j].order;
    return x != y ? (x < y ? -1 : 1) : (i < j ? -1 : i > j);
}

/* After everything is back: the allocation state, the tie order of equal
 * expiries and the timer manager's last frame, as saved (write_exact). */
static int apply_exact(tk_world_t *w, const doc_in *in, char *err, size_t errlen)
{
    if ((in->has_serial || in->n_timer_free) &&
        tk_timer_restore_alloc(w, in->has_serial ? in->timer_serial : tk_timer_serial(w),
                               in->timer_free, in->n_timer_free) != 0) {
        snprintf(err, errlen, "$.world.timer_free: %s", tk_world_last_error(w));
        return -32603;
    }
    size_t nt = in->n_timers + in->n_life;
    bool ordered = nt > 1;
    for (size_t i = 0; i < nt && ordered; i++)
        ordered = in->timers[i].has_order;
    if (ordered) {
        uint32_t *ix = tk_malloc(nt * sizeof *ix);
        tk_timer_handle *h = tk_malloc(nt * sizeof *h);
        for (size_t i = 0; i < nt; i++)
            ix[i] = (uint32_t)i;
        qsort_r(ix, nt, sizeof *ix, order_cmp, in->timers);
        for (size_t i = 0; i < nt; i++)
            h[i] = in->timers[ix[i]].handle;
        int rc = tk_timer_restore_order(w, h, nt);
        tk_free(ix);
        tk_free(h);
        if (rc != 0) {
            snprintf(err, errlen, "$.timers: %s", tk_world_last_error(w));
            return -32603;
        }
    }
    if (in->has_ticked)
        tk_timer_restore_ticked(w, in->timers_ticked);
    if (in->has_tickable_free &&
        tk_tickable_restore_free(w, in->tickable_free, in->n_tickable_free) != 0) {
        snprintf(err, errlen, "$.world.tickable_free: %s", tk_world_last_error(w));
        return -32603;
    }
    return 0;
}

/* Restore a checked document into `sim`, whose world has no entity, timer,
 * tickable or level but the persistent one: the daemon's (after clear_world,
 * frame thread) or one built aside (tks_new_aside, the loading thread). */
static int apply(tkd *d, tks_sim *sim, const doc_in *in, char *err, size_t errlen)
{
    tk_world_t *w = tks_world(sim);
    int trc = in->has_ns ? tk_world_restore_time_ns(w, in->frame, in->world_ns, in->unpaused_ns,
                                                    in->real_ns)
                         : tk_world_restore_time(w, in->frame, in->world_time, in->unpaused_time,
                                                 in->real_time);
    if (trc != 0) {
        snprintf(err, errlen, "cannot restore the clocks: %s", tk_world_last_error(w));
        return -32603;
    }
    tk_world_set_time_dilation(w, in->dilation > 0 ? in->dilation : 1.0, NULL);
    tk_world_set_paused(w, in->paused);
    /* Steps owed to a paused world come back with it (a world.load on the
     * socket keeps those the engine owes instead: tkd_snapshot_load_finish). */
    tk_world_step_stop(w);
    if (in->paused && in->steps)
        tk_world_step(w, in->steps);
    char serr[TKS_ERR_MAX];
    for (size_t i = 0; i < in->n_levels; i++) {
        if (strcmp(in->levels[i], "persistent") != 0 && tks_level_add(sim, in->levels[i], serr)) {
            snprintf(err, errlen, "$.levels[%zu]: %s", i, serr);
            return -32603;
        }
    }
    for (size_t k = 0; k < in->n_timers + in->n_life; k++) {
        uint32_t i = in->timer_order[k];
        const timer_in *t = &in->timers[i];
        int rc = t->life ? tks_restore_life_timer(sim, t->life, t->handle, t->rate, t->status,
                                                  t->remaining)
                         : tkd_timer_restore(d, w, t->handle, t->rate, t->loop, t->status,
                                             t->remaining, t->fired, t->action);
        if (rc != 0) {
            snprintf(err, errlen, "$.timers[%u]: %s", i, tk_world_last_error(w));
            return -32603;
        }
    }
    for (size_t i = 0; i < in->n_ents; i++) {
        if (tks_restore_entity(sim, &in->ents[i].r, serr)) {
            snprintf(err, errlen, "$.entities[%zu]: %s", i, serr);
            return -32603;
        }
    }
    for (size_t i = 0; i < in->n_ents; i++) {
        const ent_in *en = &in->ents[i];
        for (int c = -1; c < (int)en->r.n_components; c++) {
            const fn_in *fi = c < 0 ? &en->fn : &en->comp_fn[c];
            tk_tick_id t = fn_tick(sim, en->r.id, c);
            for (size_t k = 0; k < fi->n_pre && t != TK_TICK_NONE; k++)
                tk_tick_add_prerequisite(w, t, fn_tick(sim, fi->pre[k].id, fi->pre[k].comp));
        }
    }
    tks_restore_done(sim);
    for (size_t i = 0; i < in->n_tickables; i++) {
        const tickable_in *t = &in->tickables[i];
        tk_tickable_desc desc = {0};
        desc.type = t->type;
        desc.enabled = t->enabled;
        desc.when_paused = t->when_paused;
        if (tks_tickable_restore(sim, t->cls, &desc, t->props, t->n_props, t->id, t->ticks,
                                 t->last_frame, t->accum_dt, serr)) {
            snprintf(err, errlen, "$.tickables[%zu]: %s", i, serr);
            return -32603;
        }
    }
    tks_set_next_id(sim, in->next_id);
    return apply_exact(w, in, err, errlen);
}

/* Check, then apply (see tkd_snapshot_apply); et as for parse_doc. */
static int check_and_apply(tkd *d, const json_t *doc, const ent_text *et, char *err,
                           size_t errlen)
{
    tkd_arena a = {0};
    doc_in in;
    tkd_perr pe;
    json_t *keep = json_array();
    int rc;
    parse_env env;
    parse_env_of(d, &env);
    if (parse_doc(&env, doc, et, keep, &a, &in, &pe) < 0) {
        snprintf(err, errlen, "%s", pe.msg);
        rc = pe.code;
    } else {
        /* Everything apply() can fail on was checked above: it does not
         * fail on a checked document. */
        clear_world(d);
        rc = apply(d, d->sim, &in, err, errlen);
        if (rc)
            tk_log_error("snapshot load failed half-way (a bug): %s", err);
    }
    tkd_arena_free(&a);
    json_decref(keep);
    return rc;
}

int tkd_snapshot_apply(tkd *d, const json_t *doc, char *err, size_t errlen)
{
    return check_and_apply(d, doc, NULL, err, errlen);
}

/* ---- splitting a file's text ---------------------------------------------------------------
 *
 * Just enough of a JSON scanner to find the top-level members and the
 * elements of $.entities; every piece is then parsed by jansson, which
 * checks it.  Anything unexpected (a syntax error, a duplicate member)
 * makes split_doc give up, and the file is parsed whole, so that jansson's
 * error (line and column) is reported as before.
 */

static size_t sc_ws(const char *t, size_t i, size_t n)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

/* t[i] is '"': the index after the closing quote, or 0. */
static size_t sc_str(const char *t, size_t i, size_t n)
{
    for (i++; i < n; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i + 1;
    }
    return 0;
}

/* The index after the value at t[i], or 0 (iterative: no recursion on
 * nesting). */
static size_t sc_val(const char *t, size_t i, size_t n)
{
    if (i >= n)
        return 0;
    if (t[i] == '"')
        return sc_str(t, i, n);
    if (t[i] == '{' || t[i] == '[') {
        size_t depth = 0;
        while (i < n) {
            char c = t[i];
            if (c == '"') {
                i = sc_str(t, i, n);
                if (!i)
                    return 0;
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return 0;
    }
    size_t s0 = i;
    while (i < n && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\t' &&
           t[i] != '\n' && t[i] != '\r')
        i++;
    return i > s0 ? i : 0;
}

static void et_push(ent_text *et, size_t *cap, size_t off, size_t len)
{
    if (et->n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        et->off = tk_realloc(et->off, *cap * sizeof *et->off);
        et->len = tk_realloc(et->len, *cap * sizeof *et->len);
    }
    et->off[et->n] = off;
    et->len[et->n++] = len;
}

/*
 * Split the text of a snapshot: *rest gets the top-level object without
 * "entities" (new reference), et the entities' byte ranges (free with
 * tk_free of off and len).  False (nothing to free) if the text is not
 * shaped so; the caller then parses it whole.
 */
static bool split_doc(const char *t, size_t n, json_t **rest_out, ent_text *et)
{
    memset(et, 0, sizeof *et);
    et->text = t;
    size_t cap = 0, i = sc_ws(t, 0, n);
    bool have_ents = false;
    if (i >= n || t[i] != '{')
        return false;
    json_t *rest = json_object(), *k = NULL;
    i = sc_ws(t, i + 1, n);
    while (i < n && t[i] == '"') {
        size_t ke = sc_str(t, i, n);
        k = ke ? json_loadb(t + i, ke - i, JSON_DECODE_ANY, NULL) : NULL;
        const char *key = json_string_value(k);
        if (!key || strlen(key) != json_string_length(k))
            goto fail_k;
        i = sc_ws(t, ke, n);
        if (i >= n || t[i] != ':')
            goto fail_k;
        size_t vs = sc_ws(t, i + 1, n), ve = sc_val(t, vs, n);
        if (!ve || json_object_get(rest, key) || (have_ents && !strcmp(key, "entities")))
            goto fail_k;
        if (!strcmp(key, "entities") && t[vs] == '[') {
            have_ents = true;
            size_t j = sc_ws(t, vs + 1, ve);
            if (j < ve && t[j] == ']')
                j++;
            else
                for (;;) {
                    size_t ee = sc_val(t, j, ve);
                    if (!ee)
                        goto fail_k;
                    et_push(et, &cap, j, ee - j);
                    j = sc_ws(t, ee, ve);
                    if (j < ve && t[j] == ',') {
                        j = sc_ws(t, j + 1, ve);
                        continue;
                    }
                    if (j < ve && t[j] == ']') {
                        j++;
                        break;
                    }
                    goto fail_k;
                }
            if (j != ve)
                goto fail_k;
        } else {
            json_t *v = json_loadb(t + vs, ve - vs, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
            if (!v)
                goto fail_k;
            json_object_set_new(rest, key, v);
        }
        json_decref(k);
        k = NULL;
        i = sc_ws(t, ve, n);
        if (i < n && t[i] == ',') {
            i = sc_ws(t, i + 1, n);
            if (i >= n || t[i] != '"')
                goto fail;
            continue;
        }
        break;
    }
    if (i >= n || t[i] != '}' || sc_ws(t, i + 1, n) != n || !have_ents)
        goto fail;
    *rest_out = rest;
    return true;
fail_k:
    json_decref(k);
fail:
    json_decref(rest);
    tk_free(et->off);
    tk_free(et->len);
    memset(et, 0, sizeof *et);
    return false;
}

/* ---- files ------------------------------------------------------------------------------- */

static json_t *info_json(const char *path, uint64_t bytes, const snap_counts *c)
{
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(o, "entities", json_integer((json_int_t)c->entities));
    json_object_set_new(o, "timers", json_integer((json_int_t)c->timers));
    json_object_set_new(o, "tickables", json_integer((json_int_t)c->tickables));
    return o;
}

/* The snapshot directory as configured: [snapshot] dir, else the directory
 * of [snapshot] path. */
static const char *snap_dir(const tkd *d, char *buf, size_t n)
{
    if (d->cfg.snapshot_dir && d->cfg.snapshot_dir[0])
        return d->cfg.snapshot_dir;
    snprintf(buf, n, "%s", d->cfg.snapshot_path ? d->cfg.snapshot_path : ".");
    return dirname(buf);
}

int tkd_snapshot_dir(const tkd *d, char *out, size_t outlen)
{
    char buf[PATH_MAX], real[PATH_MAX];
    const char *dir = snap_dir(d, buf, sizeof buf);
    if (!realpath(dir, real))
        return -1;
    snprintf(out, outlen, "%s", real);
    return 0;
}

static bool under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return p[0] == '/';
    return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

int tkd_snapshot_resolve(const tkd *d, const char *param, char *out, size_t outlen, char *err,
                         size_t errlen)
{
    const char *name = param ? param : d->cfg.snapshot_path;
    if (!name || !name[0]) {
        snprintf(err, errlen, "path: required (no [snapshot] path is configured)");
        return -32602;
    }
    char dbuf[PATH_MAX], dreal[PATH_MAX];
    const char *dir = snap_dir(d, dbuf, sizeof dbuf);
    if (!realpath(dir, dreal)) {
        snprintf(err, errlen, "path: cannot open the snapshot directory %s: %s", dir,
                 strerror(errno));
        return errno == ENOENT ? -32001 : -32603;
    }
    char full[PATH_MAX];
    int n = (param && name[0] != '/') ? snprintf(full, sizeof full, "%s/%s", dreal, name)
                                      : snprintf(full, sizeof full, "%s", name);
    if (n < 0 || (size_t)n >= sizeof full) {
        snprintf(err, errlen, "path: too long");
        return -32602;
    }
    /* Split off the last component; its directory must resolve inside. */
    char *slash = strrchr(full, '/');
    const char *base = slash ? slash + 1 : full;
    char parent[PATH_MAX];
    if (slash)
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - full), full);
    else
        snprintf(parent, sizeof parent, ".");
    if (!parent[0])
        snprintf(parent, sizeof parent, "/");
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, "..")) {
        snprintf(err, errlen, "path: %s names a directory, not a file", name);
        return -32602;
    }
    char preal[PATH_MAX];
    if (!realpath(parent, preal)) {
        snprintf(err, errlen, "path: cannot open %s: %s", name, strerror(errno));
        return errno == ENOENT ? -32001 : -32602;
    }
    if (!under(preal, dreal)) {
        snprintf(err, errlen, "path: %s is outside the snapshot directory %s ([snapshot] dir)",
                 name, dreal);
        return -32602;
    }
    n = snprintf(out, outlen, "%s%s%s", preal, strcmp(preal, "/") ? "/" : "", base);
    if (n < 0 || (size_t)n >= outlen) {
        snprintf(err, errlen, "path: too long");
        return -32602;
    }
    /* A symbolic link is followed only to a file inside the directory. */
    struct stat st;
    if (lstat(out, &st) == 0 && S_ISLNK(st.st_mode)) {
        char treal[PATH_MAX];
        if (!realpath(out, treal)) {
            snprintf(err, errlen, "path: cannot open %s: a symbolic link to nowhere", name);
            return -32602;
        }
        if (!under(treal, dreal)) {
            snprintf(err, errlen,
                     "path: %s is a symbolic link leading outside the snapshot directory %s", name,
                     dreal);
            return -32602;
        }
        snprintf(out, outlen, "%s", treal);
    }
    return 0;
}

/*
 * Create a fresh temporary file next to `path`: "<path>.tmp.<pid>", or with
 * a ".<n>" suffix if that name exists.  O_EXCL|O_NOFOLLOW: nothing already
 * at the name (a symbolic link, a FIFO, a file) is ever opened, followed or
 * overwritten.  Returns the fd (tmp filled) or -1 with errno.
 */
static int create_temp(const char *path, char *tmp, size_t tmplen)
{
    for (int k = 0; k < 100; k++) {
        int n = k ? snprintf(tmp, tmplen, "%s.tmp.%ld.%d", path, (long)getpid(), k)
                  : snprintf(tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
        if (n < 0 || (size_t)n >= tmplen) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

/*
 * Write the world to `path` (resolved) atomically: temp file, fsync,
 * rename, fsync of the directory.  In the frame thread or in a save child.
 * Returns 0 (bytes and counts filled) or a JSON-RPC code with err.
 */
static int write_file(tkd *d, const char *path, uint64_t *bytes, snap_counts *cnt, char *err,
                      size_t errlen)
{
    /* The journal's base carries its journal's id (tkd_rec_save_begin). */
    uint64_t jid = d->snap_journal_id;
    char tmp[PATH_MAX + 32];
    int fd = create_temp(path, tmp, sizeof tmp);
    if (fd < 0) {
        snprintf(err, errlen, "path: cannot create a temporary file for %s: %s", path,
                 strerror(errno));
        return errno == ENOENT ? -32001 : -32603;
    }
    wr w;
    wr_init(&w, fd);
    write_doc(d, &w, cnt);
    w_putc(&w, '\n');
    wr_flush(&w);
    tk_free(w.buf);
    if (w.err || fsync(fd) < 0) {
        snprintf(err, errlen, "path: cannot write %s: %s", tmp, strerror(w.err ? w.err : errno));
        close(fd);
        unlink(tmp);
        return -32603;
    }
    if (close(fd) != 0) {
        snprintf(err, errlen, "path: cannot write %s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -32603;
    }
    uint64_t len = w.total;
    /* A new base goes into place only once its journal's header is durable
     * (journal.h, the rewrite): a crash then leaves a pair that goes
     * together. */
    if (jid && tkd_rec_save_await(d, jid, err, errlen) != 0) {
        unlink(tmp);
        return -32603;
    }
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "path: cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -32603;
    }
    tkd_fsync_dir(path);
    *bytes = len;
    return 0;
}

/* An in-process save; a save of the journal's base starts a new journal. */
static int write_file_journaled(tkd *d, const char *path, uint64_t *bytes, snap_counts *cnt,
                                char *err, size_t errlen)
{
    int jr = tkd_rec_save_begin(d, path, err, errlen);
    if (jr < 0)
        return -32603;
    uint64_t jid = jr ? d->snap_journal_id : 0;
    int rc = write_file(d, path, bytes, cnt, err, errlen);
    if (jr)
        d->snap_journal_id = 0;
    tkd_rec_save_end(d, jid, rc == 0);
    return rc;
}

int tkd_snapshot_save(tkd *d, const char *param, json_t **info, char *err, size_t errlen)
{
    char path[PATH_MAX];
    int rc = tkd_snapshot_resolve(d, param, path, sizeof path, err, errlen);
    if (rc)
        return rc;
    uint64_t bytes = 0;
    snap_counts cnt;
    rc = write_file_journaled(d, path, &bytes, &cnt, err, errlen);
    if (rc == 0 && info)
        *info = info_json(path, bytes, &cnt);
    return rc;
}

/*
 * Read a whole regular file.  The open never blocks (O_NONBLOCK) and never
 * follows a link (O_NOFOLLOW; links were resolved by tkd_snapshot_resolve);
 * FIFOs, devices, sockets and directories are refused after fstat, before
 * any read.  Returns 0 (*buf malloc'd, NUL-terminated) or a JSON-RPC code.
 */
static int read_file(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int en = errno;
        snprintf(err, errlen, "path: cannot open %s: %s", path,
                 en == ELOOP ? "a symbolic link" : strerror(en));
        return en == ENOENT ? -32001 : -32602;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "path: cannot open %s: %s", path,
                 S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
        close(fd);
        return -32602;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *b = malloc(cap);
    if (!b) {
        snprintf(err, errlen, "path: cannot read %s: %s", path, strerror(ENOMEM));
        close(fd);
        return -32603;
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = realloc(b, cap * 2);
            if (!nb) {
                free(b);
                close(fd);
                snprintf(err, errlen, "path: cannot read %s: %s", path, strerror(ENOMEM));
                return -32603;
            }
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "path: cannot read %s: %s", path, strerror(errno));
            free(b);
            close(fd);
            return -32603;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    b[n] = '\0';
    *buf = b;
    *len = n;
    return 0;
}

/*
 * A load in two halves.  Reading (read_file, split_doc, parse_doc) touches
 * nothing of the world and is most of a load's time (for 1M entities about
 * 95%); applying (apply: clear, rebuild) happens on the frame thread at a
 * frame boundary.  world.load reads on a thread of its own (tkd_snapload).
 */
typedef struct loaded {
    char path[PATH_MAX];  /* resolved                                  */
    char *text;           /* the file                                  */
    size_t len;
    json_t *doc;          /* the document (without $.entities if split) */
    bool split;
    ent_text et;
    json_t *keep;         /* entities' JSON the apply still reads      */
    tkd_arena a;
    doc_in in;            /* checked, ready to apply                   */
    snap_counts counts;
} loaded;

static void loaded_free(loaded *L)
{
    if (L->split) {
        tk_free(L->et.off);
        tk_free(L->et.len);
    }
    L->split = false;
    tkd_arena_free(&L->a);
    json_decref(L->keep);
    json_decref(L->doc);
    free(L->text);
    L->keep = L->doc = NULL;
    L->text = NULL;
}

/* Read and check L->path.  0, or a JSON-RPC code with err naming the path. */
static int load_read(const parse_env *env, loaded *L, char *err, size_t errlen)
{
    int rc = read_file(L->path, &L->text, &L->len, err, errlen);
    if (rc)
        return rc;
    /* Nothing of the content is quoted back: jansson's messages would show
     * tokens of whatever file the path names. */
    L->split = split_doc(L->text, L->len, &L->doc, &L->et);
    if (!L->split) {
        json_error_t je;
        L->doc = json_loadb(L->text, L->len, JSON_REJECT_DUPLICATES, &je);
        if (!L->doc) {
            snprintf(err, errlen,
                     "%s: not a tickd snapshot (not valid JSON at line %d, column %d)", L->path,
                     je.line, je.column);
            return -32602;
        }
    }
    const json_t *fmt = json_object_get(L->doc, "format");
    if (!json_is_object(L->doc) || !json_is_string(fmt) ||
        strcmp(json_string_value(fmt), "tickd-snapshot") != 0) {
        snprintf(err, errlen, "%s: not a tickd snapshot (no \"format\": \"tickd-snapshot\")",
                 L->path);
        return -32602;
    }
    L->keep = json_array();
    tkd_perr pe;
    if (parse_doc(env, L->doc, L->split ? &L->et : NULL, L->keep, &L->a, &L->in, &pe) < 0) {
        snprintf(err, errlen, "%s: %s", L->path, pe.msg);
        return pe.code;
    }
    L->counts.entities = L->in.n_ents;
    L->counts.timers = L->in.n_timers;
    L->counts.tickables = L->in.n_tickables;
    return 0;
}

/* Make the world what a read document describes, in place (frame thread). */
static int load_apply(tkd *d, loaded *L, json_t **info, char *err, size_t errlen)
{
    char e2[TKD_ERR_MAX];
    /* Everything apply() can fail on was checked: it does not fail on a
     * checked document. */
    clear_world(d);
    int rc = apply(d, d->sim, &L->in, e2, sizeof e2);
    if (rc) {
        tk_log_error("snapshot load failed half-way (a bug): %s", e2);
        snprintf(err, errlen, "%s: %s", L->path, e2);
        return rc;
    }
    if (info)
        *info = info_json(L->path, L->len, &L->counts);
    return 0;
}

int tkd_snapshot_load(tkd *d, const char *param, json_t **info, char *err, size_t errlen)
{
    loaded L;
    memset(&L, 0, sizeof L);
    int rc = tkd_snapshot_resolve(d, param, L.path, sizeof L.path, err, errlen);
    if (rc)
        return rc;
    parse_env env;
    parse_env_of(d, &env);
    rc = load_read(&env, &L, err, errlen);
    if (!rc)
        rc = load_apply(d, &L, info, err, errlen);
    loaded_free(&L);
    return rc;
}

int tkd_snapshot_load_file(tkd *d, const char *path, json_t **info, uint64_t *journal_id,
                           char *err, size_t errlen)
{
    loaded L;
    memset(&L, 0, sizeof L);
    snprintf(L.path, sizeof L.path, "%s", path);
    parse_env env;
    parse_env_of(d, &env);
    int rc = load_read(&env, &L, err, errlen);
    if (!rc)
        rc = load_apply(d, &L, info, err, errlen);
    if (!rc && journal_id)
        *journal_id = L.in.journal_id;
    loaded_free(&L);
    return rc;
}

uint64_t tkd_snapshot_peek_journal_id(const char *path, bool *exists)
{
    *exists = false;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat st;
    char buf[4096];
    ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf - 1) : -1;
    close(fd);
    if (n < 0)
        return 0;
    *exists = true;
    buf[n] = '\0';
    /* The writer puts it right after "saved_at" (write_doc). */
    static const char key[] = "\"journal\":{\"id\":\"";
    const char *p = strstr(buf, key);
    if (!p || strlen(p + sizeof key - 1) < 17 || p[sizeof key - 1 + 16] != '"')
        return 0;
    char hex[17];
    memcpy(hex, p + sizeof key - 1, 16);
    hex[16] = '\0';
    char *end;
    uint64_t id = strtoull(hex, &end, 16);
    return *end ? 0 : id;
}

/* ---- loading aside ----------------------------------------------------------------------
 *
 * world.load on the socket builds the whole new world aside: a thread of its
 * own reads, parses and checks the file (load_read reads only the class
 * table, fixed since start, and copies of what else it needs), then restores
 * it into a sim and world of their own (tks_new_aside, made on the frame
 * thread when the load starts), while frames run and requests are served.
 * The frame thread polls it at frame boundaries and swaps the new world in
 * (tks_swap: a few pointers); the old world and what the load read are
 * freed by another thread.  A load that fails, at any point, leaves the
 * running world as it was.  The thread allocates with malloc (thread-safe);
 * what it logs (class hooks, prerequisite cycles in the file) goes to the
 * log, not to `log` subscribers (daemon.c: on_log_forward).
 */
struct tkd_snapload {
    pthread_t th;
    atomic_bool done, cancel;
    parse_env env;
    tkp_ctx ctx;
    loaded L;
    tkd *d;               /* kept in restored timers' actions, not read    */
    tks_sim *aside;       /* the new world, built by the thread            */
    tks_sim *old;         /* the world it replaced, to free                */
    int rc;
    char err[TKD_ERR_MAX];
    uint64_t read_ns, build_ns;
};

static void *load_thread(void *arg)
{
    tkd_snapload *l = arg;
    uint64_t t0 = tk_clock_now_ns();
    l->rc = load_read(&l->env, &l->L, l->err, sizeof l->err);
    uint64_t t1 = tk_clock_now_ns();
    l->read_ns = t1 - t0;
    if (!l->rc && atomic_load_explicit(&l->cancel, memory_order_relaxed)) {
        snprintf(l->err, sizeof l->err, "%s: the daemon is shutting down", l->L.path);
        l->rc = -32004;
    }
    if (!l->rc) {
        char e2[TKD_ERR_MAX];
        /* A checked document does not fail to apply: a failure here is a
         * bug, and it costs nothing but this load. */
        int rc = apply(l->d, l->aside, &l->L.in, e2, sizeof e2);
        if (rc) {
            snprintf(l->err, sizeof l->err, "%.255s: %.200s (the world is unchanged)", l->L.path, e2);
            l->rc = rc;
        } else {
            /* What its first frame would start with, done here. */
            tk_world_settle(tks_world(l->aside));
        }
        l->build_ns = tk_clock_now_ns() - t1;
    }
    atomic_store_explicit(&l->done, true, memory_order_release);
    return NULL;
}

int tkd_snapshot_load_start(tkd *d, const char *param, tkd_snapload **out, char *err,
                            size_t errlen)
{
    tkd_snapload *l = tk_calloc(1, sizeof *l);
    int rc = tkd_snapshot_resolve(d, param, l->L.path, sizeof l->L.path, err, errlen);
    if (rc) {
        tk_free(l);
        return rc;
    }
    parse_env_of(d, &l->env);
    tks_check_ctx(d->sim, &l->ctx);
    l->env.ctx = &l->ctx;
    l->env.cancel = &l->cancel;
    l->d = d;
    l->aside = tks_new_aside(d->sim);
    atomic_init(&l->done, false);
    atomic_init(&l->cancel, false);
    /* Signals stay with the frame thread (libevent's handlers). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = pthread_create(&l->th, NULL, load_thread, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc != 0) {
        snprintf(err, errlen, "cannot start the loading thread: %s", strerror(prc));
        tks_free(l->aside);
        tk_free(l);
        return -32603;
    }
    *out = l;
    return 0;
}

bool tkd_snapshot_load_done(const tkd_snapload *l)
{
    return atomic_load_explicit(&l->done, memory_order_acquire);
}

const char *tkd_snapshot_load_path(const tkd_snapload *l) { return l->L.path; }

/* What a load read, the world it replaced (or the one it built, if it
 * failed) are freed by a thread of its own: a million entities' parse is a
 * third of a second of free(), their world more. */
static atomic_int frees_running; /* free_thread()s not yet done */

static void free_load(tkd_snapload *l)
{
    loaded_free(&l->L);
    tks_free(l->aside);
    tks_free(l->old);
    tk_free(l);
}

static void *free_thread(void *arg)
{
    free_load(arg);
    atomic_fetch_sub(&frees_running, 1);
    return NULL;
}

/* Before exit: nothing left half-freed (leak checkers, valgrind; the old
 * world's class hooks run before the plugins are closed). */
static void wait_frees(void)
{
    while (atomic_load(&frees_running) > 0)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
}

static void free_aside(tkd_snapload *l)
{
    pthread_attr_t at;
    pthread_t th;
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    atomic_fetch_add(&frees_running, 1);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&th, &at, free_thread, l);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) {
        atomic_fetch_sub(&frees_running, 1);
        free_load(l);
    }
}

int tkd_snapshot_load_finish(tkd *d, tkd_snapload *l, json_t **info, char *err, size_t errlen)
{
    pthread_join(l->th, NULL);
    int rc = l->rc;
    if (rc) {
        if (rc == -32603)
            tk_log_error("world.load failed after its checks (a bug): %s", l->err);
        snprintf(err, errlen, "%s", l->err);
    } else {
        /* The old world's instances of plugin classes whose hooks run on
         * the frame thread only (they may share state with their ticks)
         * are destroyed here, the new world goes in, and its instances of
         * those classes are created: the hooks' own cost, nothing else of
         * either world. */
        uint64_t t0 = tk_clock_now_ns();
        size_t ended = tks_end_frame_hooks(d->sim);
        l->old = d->sim;
        d->sim = tks_swap(l->old, l->aside);
        d->world = tks_world(d->sim);
        l->aside = NULL;
        size_t created = tks_run_deferred_creates(d->sim);
        if (info)
            *info = info_json(l->L.path, l->L.len, &l->L.counts);
        tk_log_debug("world.load: %s read and checked aside in %.1f ms, built in %.1f ms, "
                     "swapped in in %.3f ms (%zu destroy and %zu create hooks on the frame "
                     "thread)",
                     l->L.path, (double)l->read_ns / 1e6, (double)l->build_ns / 1e6,
                     (double)(tk_clock_now_ns() - t0) / 1e6, ended, created);
    }
    free_aside(l);
    return rc;
}

void tkd_snapshot_load_cancel(tkd_snapload *l)
{
    atomic_store_explicit(&l->cancel, true, memory_order_relaxed);
    pthread_join(l->th, NULL);
    free_load(l);
}

/* ---- stale temporary files ------------------------------------------------------------------ */

/* Is `name` a save's temporary file, "<file>.tmp.<pid>" or
 * "<file>.tmp.<pid>.<n>"?  Fills *pid. */
static bool temp_name_of(const char *name, long *pid)
{
    const char *t = NULL;
    for (const char *q = strstr(name, ".tmp."); q; q = strstr(q + 1, ".tmp."))
        t = q;
    if (!t || t == name)
        return false;
    const char *p = t + 5;
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (end == p || errno || v <= 0 || (*p < '0' || *p > '9'))
        return false;
    if (*end == '.') {
        const char *q = end + 1;
        strtol(q, &end, 10);
        if (end == q || *q < '0' || *q > '9')
            return false;
    }
    if (*end)
        return false;
    *pid = v;
    return true;
}

void tkd_snapshot_remove_stale(tkd *d)
{
    if (!d->cfg.snapshot_path || !d->cfg.snapshot_path[0])
        return;
    char dbuf[PATH_MAX];
    const char *dir = snap_dir(d, dbuf, sizeof dbuf);
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    struct dirent *de;
    while ((de = readdir(dh)) != NULL) {
        long pid;
        if (!temp_name_of(de->d_name, &pid))
            continue;
        /* A live writer's (another tickd on the same file, or a save child
         * still finishing) is left alone. */
        if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
            continue;
        struct stat st;
        if (fstatat(dirfd(dh), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
            continue;
        if (unlinkat(dirfd(dh), de->d_name, 0) == 0)
            tk_log_warn("snapshot: removed %s/%s, a temporary file left by process %ld", dir,
                        de->d_name, pid);
        else
            tk_log_warn("snapshot: cannot remove the stale temporary file %s/%s: %s", dir,
                        de->d_name, strerror(errno));
    }
    closedir(dh);
}

/* ---- saving in a child process -------------------------------------------------------------
 *
 * As Redis's BGSAVE: fork, and the child writes the world from its
 * copy-on-write image while the frame loop goes on.  The child touches
 * nothing of the parent's but its memory image: no event base, no socket,
 * no log (it reports through a pipe), and leaves with _exit.  The parent
 * reaps it without blocking once per frame (a core ticker delegate).  One
 * save runs at a time; world.save requests that arrive meanwhile wait in
 * order and each starts when the one before it ends; an autosave due
 * meanwhile is skipped.
 *
 * When.  Starting costs the frame thread the copy of the class states and
 * the fork (5 - 15 ms for 1M movers), so a save starts only where that
 * delays no frame: at once if asked between frames and the last start's
 * cost fits before the next frame is due (start_fits), else at the next
 * start of the idle time after a frame (tkd_snapshot_frame_end, from the
 * daemon's wait hook once the frame's events and replies are flushed),
 * never while requests run at a frame's start, in a timer action or in the
 * core ticker.  A client whose save waits for that moment is held (its
 * later requests wait) until the save has forked, so the file holds exactly
 * that client's requests before the save, as if it had started at once;
 * other clients go on.  Behind another save or a request in slices a save
 * waits without holding anyone (the world is saved as it is when it
 * starts).
 */

typedef struct bg_req {
    struct bg_req *next;
    tkd_call *call;           /* to answer, or NULL                      */
    uint64_t jid;             /* the new journal's id (a save of its base) */
    char why[24];             /* for logs: world.save, autosave          */
    char path[PATH_MAX];      /* resolved                                */
    bool holds;               /* call holds its client until the start   */
    /* the start, once forked: what it cost the frame thread */
    uint64_t copied;          /* bytes of class states copied            */
    uint64_t copy_ns, fork_ns;
} bg_req;

struct tkd_bgsave {
    pid_t pid;                /* the child, or 0                         */
    int rfd;                  /* its report pipe                         */
    bg_req cur;               /* what it is writing                      */
    uint64_t start_ns;        /* monotonic                               */
    bg_req *queue, **tail;    /* waiting world.save requests             */
    tk_ticker_handle ticker;  /* the reaper                              */
    uint64_t last_fork_ns;    /* the last start's fork, or 0             */
    double last_copy_ns_per_b; /* and its copy per byte, or 0            */
    tkd_hotmem *hot;          /* the class states handed over as a copy  */
    struct iovec *reg;        /* their regions (tks_hot_regions)         */
    size_t *used;             /* the bytes of each to copy               */
    size_t n_reg, cap_reg;
};

static bool bg_tick(void *ud, double dt);

/* The hot regions of the world now, into b->reg; their bytes. */
static size_t hot_regions(tkd *d)
{
    struct tkd_bgsave *b = d->bgsave;
    size_t n = tks_hot_regions(d->sim, NULL, NULL, 0);
    if (n > b->cap_reg) {
        b->cap_reg = n;
        b->reg = tk_realloc(b->reg, n * sizeof *b->reg);
        b->used = tk_realloc(b->used, n * sizeof *b->used);
    }
    b->n_reg = tks_hot_regions(d->sim, b->reg, b->used, n);
    size_t bytes = 0;
    for (size_t i = 0; i < b->n_reg; i++)
        bytes += b->reg[i].iov_len;
    return bytes;
}

/* Can a save start now without copy-on-write of the class states?  (The
 * shadow they are copied into grows on a thread first.) */
static bool hot_ready(tkd *d)
{
    struct tkd_bgsave *b = d->bgsave;
    if (!b->hot)
        b->hot = tkd_hotmem_new();
    return tkd_hotmem_ready(b->hot, hot_regions(d));
}

static void bg_child(tkd *d, const char *path, int wfd, pid_t parent, bool hot)
{
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGPIPE, SIG_IGN);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(3);
    /* Hold no descriptor of the parent's: a client the parent closes must
     * see its end of file now, not when this save ends. */
    if (wfd > 3 && close_range(3, (unsigned)wfd - 1, 0) != 0)
        for (int fd = 3; fd < wfd; fd++)
            close(fd);
    if (close_range((unsigned)wfd + 1, ~0u, 0) != 0)
        for (int fd = wfd + 1; fd < 4096; fd++)
            close(fd);
    char err[TKD_ERR_MAX], line[TKD_ERR_MAX + 96];
    uint64_t bytes = 0;
    snap_counts cnt;
    int rc;
    /* The class states were left out of the fork: their copy goes where
     * they were, or nothing of them may be read. */
    if (hot && tkd_hotmem_in_child(d->bgsave->hot) != 0) {
        rc = -32603;
        snprintf(err, sizeof err, "path: saving %.400s: cannot map the copy of the world's states",
                 path);
    } else {
        rc = write_file(d, path, &bytes, &cnt, err, sizeof err);
    }
    int n = rc ? snprintf(line, sizeof line, "%d %s\n", rc, err)
               : snprintf(line, sizeof line, "0 %llu %llu %llu %llu\n", (unsigned long long)bytes,
                          (unsigned long long)cnt.entities, (unsigned long long)cnt.timers,
                          (unsigned long long)cnt.tickables);
    if (n > 0 && write(wfd, line, (size_t)n) < 0)
        _exit(2);
    _exit(rc ? 1 : 0);
}

/* Answer and log one finished save. */
static void bg_complete(tkd *d, const bg_req *q, int rc, const char *msg, json_t *info)
{
    tkd_rec_save_end(d, q->jid, rc == 0);
    if (rc) {
        tk_log_error("snapshot (%s): %s", q->why, msg);
        if (q->call)
            tkd_call_error(q->call, rc, NULL, "%s", msg);
        json_decref(info);
        return;
    }
    tk_log_info("snapshot (%s): saved %s (%lld entities, %lld bytes)", q->why, q->path,
                (long long)json_integer_value(json_object_get(info, "entities")),
                (long long)json_integer_value(json_object_get(info, "bytes")));
    if (q->fork_ns) {
        /* What starting it cost the frame thread. */
        json_object_set_new(info, "copy_ms", json_real((double)q->copy_ns / 1e6));
        json_object_set_new(info, "fork_ms", json_real((double)q->fork_ns / 1e6));
        json_object_set_new(info, "copied_bytes", json_integer((json_int_t)q->copied));
    }
    if (q->call)
        tkd_call_reply(q->call, info);
    else
        json_decref(info);
    (void)d;
}

/* Fork a child for q (copied).  On failure answers q at once. */
static void bg_start(tkd *d, const bg_req *q)
{
    struct tkd_bgsave *b = d->bgsave;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        char msg[TKD_ERR_MAX];
        snprintf(msg, sizeof msg, "path: cannot save %.400s: pipe: %s", q->path, strerror(errno));
        bg_complete(d, q, -32603, msg, NULL);
        return;
    }
    /* A save of the journal's base starts a new journal (before the fork:
     * the records after it go to both). */
    char jerr[TKD_ERR_MAX];
    int jr = tkd_rec_save_begin(d, q->path, jerr, sizeof jerr);
    if (jr < 0) {
        close(pfd[0]);
        close(pfd[1]);
        char msg[TKD_ERR_MAX + 64];
        snprintf(msg, sizeof msg, "path: cannot save %.200s: %.300s", q->path, jerr);
        bg_complete(d, q, -32603, msg, NULL);
        return;
    }
    bg_req qj = *q;
    qj.jid = jr ? d->snap_journal_id : 0;
    q = &qj;
    pid_t parent = getpid();
    uint64_t t0 = tk_clock_now_ns();
    /* Class states: copied aside and left out of the child (hotmem.h). */
    bool hot = false;
    size_t copied = 0;
    if (b->hot && hot_regions(d) > 0) {
        char herr[160];
        hot = tkd_hotmem_before_fork(b->hot, b->reg, b->used, b->n_reg, herr, sizeof herr) == 0;
        for (size_t i = 0; hot && i < b->n_reg; i++)
            copied += b->used[i];
        if (!hot)
            tk_log_debug("snapshot (%s): forking with copy-on-write: %s", q->why, herr);
    }
    uint64_t t1 = tk_clock_now_ns();
    pid_t pid = fork();
    if (pid != 0)
        d->snap_journal_id = 0; /* the child writes it, the parent no more */
    if (hot && pid != 0)
        tkd_hotmem_after_fork(b->hot);
    if (pid < 0) {
        char msg[TKD_ERR_MAX];
        snprintf(msg, sizeof msg, "path: cannot save %.400s: fork: %s", q->path, strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        bg_complete(d, q, -32603, msg, NULL);
        return;
    }
    if (pid == 0) {
        close(pfd[0]);
        bg_child(d, q->path, pfd[1], parent, hot);
    }
    close(pfd[1]);
    uint64_t t2 = tk_clock_now_ns();
    tk_log_debug("snapshot (%s): writing %s in process %ld (%zu state regions, %zu bytes, copied "
                 "in %.1f ms; fork took %.1f ms)",
                 q->why, q->path, (long)pid, hot ? b->n_reg : 0, copied, (double)(t1 - t0) / 1e6,
                 (double)(t2 - t1) / 1e6);
    if (q->holds)
        tkd_call_release_client(q->call); /* its later calls go on */
    b->last_fork_ns = t2 - t1;
    if (copied)
        b->last_copy_ns_per_b = (double)(t1 - t0) / (double)copied;
    b->pid = pid;
    b->rfd = pfd[0];
    b->cur = *q;
    b->cur.next = NULL;
    b->cur.holds = false;
    b->cur.copied = copied;
    b->cur.copy_ns = t1 - t0;
    b->cur.fork_ns = t2 - t1 ? t2 - t1 : 1;
    b->start_ns = t2;
    /* The frame thread's time: part of the next frame's report. */
    if (d->engine)
        tk_engine_add_work(d->engine, TK_WORK_OTHER, t2 - t0);
}

/* The child has exited with `status`: read its report, answer. */
static void bg_reaped(tkd *d, int status)
{
    struct tkd_bgsave *b = d->bgsave;
    char line[TKD_ERR_MAX + 96];
    ssize_t n;
    do
        n = read(b->rfd, line, sizeof line - 1);
    while (n < 0 && errno == EINTR);
    line[n > 0 ? n : 0] = '\0';
    close(b->rfd);
    b->rfd = -1;
    b->pid = 0;
    char *nl = strchr(line, '\n');
    if (nl)
        *nl = '\0';
    unsigned long long by, en, ti, tb;
    int code;
    char msg[TKD_ERR_MAX + 64];
    if (n > 0 && sscanf(line, "0 %llu %llu %llu %llu", &by, &en, &ti, &tb) == 4) {
        snap_counts c = {en, ti, tb};
        bg_complete(d, &b->cur, 0, NULL, info_json(b->cur.path, by, &c));
        return;
    }
    if (n > 0 && sscanf(line, "%d", &code) == 1 && code < 0 && strchr(line, ' ')) {
        bg_complete(d, &b->cur, code, strchr(line, ' ') + 1, NULL);
        return;
    }
    if (WIFSIGNALED(status))
        snprintf(msg, sizeof msg, "path: saving %.400s: the save process died of signal %d",
                 b->cur.path, WTERMSIG(status));
    else
        snprintf(msg, sizeof msg, "path: saving %.400s: the save process failed (status %d)",
                 b->cur.path, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    bg_complete(d, &b->cur, -32603, msg, NULL);
}

/* A child runs: reap it once per frame (bg_tick); without a ticker, wait
 * for it here rather than leave its call unanswered. */
static void bg_reaper(tkd *d)
{
    struct tkd_bgsave *b = d->bgsave;
    if (b->pid && b->ticker == TK_TICKER_NONE &&
        tk_ticker_add(d->engine, 0, bg_tick, d, &b->ticker) != 0)
        tkd_snapshot_finish(d);
}

/* Start the next waiting request, if it can start now. */
static void bg_next(tkd *d)
{
    struct tkd_bgsave *b = d->bgsave;
    /* A request in slices (a big spawn) is in progress: a snapshot now would
     * hold half of it, so saves wait for it to end. */
    if (b->pid || !b->queue || d->jobs || !hot_ready(d))
        return;
    bg_req *q = b->queue;
    b->queue = q->next;
    if (!b->queue)
        b->tail = &b->queue;
    bg_start(d, q);
    tk_free(q);
    bg_reaper(d);
}

/* The reaper, once per frame while a child runs. */
static bool bg_tick(void *ud, double dt)
{
    (void)dt;
    tkd *d = ud;
    struct tkd_bgsave *b = d->bgsave;
    if (b->pid) {
        int status = 0;
        pid_t r = waitpid(b->pid, &status, WNOHANG);
        if (r == 0)
            return true;
        if (r < 0 && errno == EINTR)
            return true;
        bg_reaped(d, r == b->pid ? status : 0);
    }
    b->ticker = TK_TICKER_NONE;
    return false;
}

void tkd_snapshot_frame_end(tkd *d)
{
    if (d->bgsave && d->bgsave->queue)
        bg_next(d);
}

/*
 * Does a start now fit in the idle time before the next frame?  Only while
 * requests run between frames (d->idle_deadline_ns), judged by what the
 * last start cost (copy per byte and fork; without one, 1 ns per byte to
 * copy and 2 ms of fork), with a millisecond to spare.
 */
#define FIT_FORK_NS 2000000ull
#define FIT_SPARE_NS 1000000ull

static bool start_fits(tkd *d)
{
    struct tkd_bgsave *b = d->bgsave;
    if (!d->idle_deadline_ns || !hot_ready(d))
        return false;
    size_t bytes = 0;
    for (size_t i = 0; i < b->n_reg; i++)
        bytes += b->used[i];
    double per_b = b->last_copy_ns_per_b > 0 ? b->last_copy_ns_per_b : 1.0;
    uint64_t est = (b->last_fork_ns ? b->last_fork_ns : FIT_FORK_NS) + (uint64_t)(per_b * (double)bytes);
    return tk_clock_now_ns() + est + FIT_SPARE_NS <= d->idle_deadline_ns;
}

int tkd_snapshot_save_bg(tkd *d, const char *param, tkd_call *call, const char *why, char *err,
                         size_t errlen)
{
    bg_req q;
    memset(&q, 0, sizeof q);
    int rc = tkd_snapshot_resolve(d, param, q.path, sizeof q.path, err, errlen);
    if (rc)
        return rc;
    q.call = call;
    snprintf(q.why, sizeof q.why, "%s", why);
    if (!d->bgsave) {
        d->bgsave = tk_calloc(1, sizeof *d->bgsave);
        d->bgsave->rfd = -1;
        d->bgsave->tail = &d->bgsave->queue;
        d->bgsave->ticker = TK_TICKER_NONE;
    }
    struct tkd_bgsave *b = d->bgsave;
    /* An autosave is skipped while another save or a request in slices
     * runs. */
    if (!call && (b->pid || b->queue || d->jobs)) {
        if (!b->pid && !b->queue)
            snprintf(err, errlen, "a request in slices is in progress");
        else if (b->pid)
            snprintf(err, errlen, "a save is in progress (%s of %s)", b->cur.why, b->cur.path);
        else
            snprintf(err, errlen, "a save is waiting to start");
        return TKD_SNAPSHOT_BUSY;
    }
    bool first = !b->pid && !b->queue && !d->jobs;
    if (first && start_fits(d)) {
        /* Between frames with time to spare: at once, where it stands
         * among the requests. */
        bg_start(d, &q);
        bg_reaper(d);
        return 0;
    }
    /* At the start of the idle time after this frame (or the first one
     * after the shadow of the class states has grown, which starts now if
     * it must); until then the caller's later requests wait, so that the
     * save holds exactly the requests before it.  Behind another save or a
     * request in slices it waits in turn, and the caller goes on. */
    bg_req *w = tk_malloc(sizeof *w);
    *w = q;
    if (first && call) {
        tkd_call_hold_client(call);
        w->holds = true;
    }
    *b->tail = w;
    b->tail = &w->next;
    if (first)
        (void)hot_ready(d);
    return 0;
}

bool tkd_snapshot_saving(const tkd *d) { return d->bgsave && (d->bgsave->pid || d->bgsave->queue); }

void tkd_snapshot_finish(tkd *d)
{
    wait_frees();
    struct tkd_bgsave *b = d->bgsave;
    if (!b)
        return;
    while (b->pid || b->queue) {
        if (b->pid) {
            int status = 0;
            pid_t r;
            do
                r = waitpid(b->pid, &status, 0);
            while (r < 0 && errno == EINTR);
            bg_reaped(d, r == b->pid ? status : 0);
        }
        /* Those still waiting are written here, in-process. */
        while (b->queue) {
            bg_req *q = b->queue;
            b->queue = q->next;
            uint64_t bytes = 0;
            snap_counts cnt;
            char err[TKD_ERR_MAX];
            int rc = write_file_journaled(d, q->path, &bytes, &cnt, err, sizeof err);
            bg_complete(d, q, rc, err, rc ? NULL : info_json(q->path, bytes, &cnt));
            tk_free(q);
        }
        b->tail = &b->queue;
    }
    if (b->ticker != TK_TICKER_NONE)
        tk_ticker_remove(d->engine, b->ticker);
    tkd_hotmem_free(b->hot);
    tk_free(b->reg);
    tk_free(b->used);
    tk_free(b);
    d->bgsave = NULL;
}
