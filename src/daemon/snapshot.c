/*
 * snapshot.c - world.save / world.load (the format and guarantees are in
 * snapshot.h).
 *
 * Loading is two-phase: parse_* read the document into plain structures and
 * check everything (the error names the JSON path); only then apply() clears
 * the world and rebuilds it.  Nothing in the apply phase can fail on a
 * checked document.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "params.h"
#include "snapshot.h"

/* ---- building ------------------------------------------------------------------ */

static json_t *jid(uint64_t v) { return json_integer((json_int_t)v); }

static json_t *fn_json(tkd *d, const tks_entity *e, int comp)
{
    tk_tick_id id = tks_entity_tick(e, comp);
    json_t *o;
    tk_tick_info info;
    if (id != TK_TICK_NONE && tk_tick_get(d->world, id, &info) == 0) {
        o = tkd_j_tick_spec(&info.spec);
        tk_tick_restore st;
        tk_tick_save(d->world, id, &st);
        json_object_set_new(o, "ticks", jid(st.ticks));
        json_object_set_new(o, "last_frame", jid(st.last_frame));
        json_object_set_new(o, "last_dt", json_real(st.last_dt));
        json_object_set_new(o, "accum_dt", json_real(st.accum_dt));
        json_object_set_new(o, "cooldown", json_real(st.cooldown));
        json_object_set_new(o, "since_last_tick", json_real(st.since_last_tick));
        json_t *pre = json_array();
        tk_tick_id p[64];
        size_t n = tk_tick_prerequisites(d->world, id, p, 64);
        for (size_t i = 0; i < n && i < 64; i++) {
            int pc = -1;
            const tks_entity *pe = tks_tick_owner(d->sim, p[i], &pc);
            if (!pe)
                continue;
            json_t *t = json_object();
            json_object_set_new(t, "id", jid(tks_entity_id(pe)));
            if (pc >= 0)
                json_object_set_new(t, "component", json_integer(pc));
            json_array_append_new(pre, t);
        }
        json_object_set_new(o, "prerequisites", pre);
    } else {
        const tk_tick_spec *kept = tks_entity_tick_spec(d->sim, e, comp);
        tk_tick_spec def;
        tk_tick_spec_default(&def);
        def.on_dedicated_server = false;
        o = tkd_j_tick_spec(kept ? kept : &def);
    }
    return o;
}

typedef struct build_ctx {
    tkd *d;
    json_t *arr;
} build_ctx;

static void entity_json(void *ud, const tks_entity *e)
{
    build_ctx *b = ud;
    tkd *d = b->d;
    json_t *o = json_object();
    json_object_set_new(o, "id", jid(tks_entity_id(e)));
    json_object_set_new(o, "class", json_string(tks_class_name(tks_entity_class(e))));
    json_object_set_new(o, "level", json_string(tk_level_name(d->world, tks_entity_level(e))));
    json_object_set_new(o, "time_dilation", json_real(tks_entity_dilation(e)));
    double life = tks_entity_life_remaining(d->sim, e);
    json_object_set_new(o, "life_span", life >= 0 ? json_real(life) : json_null());
    json_object_set_new(o, "props", tkd_j_props(d->sim, e, -1));
    json_object_set_new(o, "tick", fn_json(d, e, -1));
    json_t *cs = json_array();
    for (size_t i = 0; i < tks_entity_component_count(e); i++) {
        json_t *c = json_object();
        json_object_set_new(c, "class",
                            json_string(tks_class_name(tks_entity_component_class(e, i))));
        json_object_set_new(c, "props", tkd_j_props(d->sim, e, (int)i));
        json_object_set_new(c, "tick", fn_json(d, e, (int)i));
        json_array_append_new(cs, c);
    }
    json_object_set_new(o, "components", cs);
    json_array_append_new(b->arr, o);
}

static void put_prop(void *ud, const tks_prop_desc *d, const tks_value *v)
{
    json_object_set_new(ud, d->name, tkd_j_value(d, v));
}

static char *utc_now(char *buf, size_t n)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

json_t *tkd_snapshot_build(tkd *d)
{
    json_t *doc = json_object();
    char now[32];
    json_object_set_new(doc, "format", json_string("tickd-snapshot"));
    json_object_set_new(doc, "version", json_integer(TKD_SNAPSHOT_VERSION));
    json_object_set_new(doc, "saved_at", json_string(utc_now(now, sizeof now)));
    tk_world_time t;
    tk_world_get_time(d->world, &t);
    json_t *w = json_object();
    json_object_set_new(w, "frame", jid(t.frame));
    json_object_set_new(w, "world_time", json_real(t.world_time));
    json_object_set_new(w, "unpaused_time", json_real(t.unpaused_time));
    json_object_set_new(w, "real_time", json_real(t.real_time));
    json_object_set_new(w, "time_dilation", json_real(t.time_dilation));
    json_object_set_new(w, "paused", json_boolean(t.paused));
    json_object_set_new(w, "next_id", jid(tks_next_id(d->sim)));
    json_object_set_new(doc, "world", w);
    json_t *levels = json_array();
    for (size_t i = 0; i < tk_level_count(d->world); i++)
        json_array_append_new(levels,
                              json_string(tk_level_name(d->world, tk_level_at(d->world, i))));
    json_object_set_new(doc, "levels", levels);
    build_ctx b = {d, json_array()};
    tks_entity_list(d->sim, TK_LEVEL_NONE, NULL, 0, UINT64_MAX, entity_json, &b);
    json_object_set_new(doc, "entities", b.arr);
    json_t *timers = json_array();
    uint64_t cur = 0;
    tk_timer_handle h;
    while (tk_timer_next(d->world, &cur, &h)) {
        tk_timer_info i;
        if (tk_timer_get(d->world, h, &i) != 0 || i.owner != 0)
            continue; /* life spans travel with their entities */
        json_t *o = json_object();
        json_object_set_new(o, "handle", jid(h));
        json_object_set_new(o, "rate", json_real(i.rate));
        json_object_set_new(o, "loop", json_boolean(i.loop));
        json_object_set_new(o, "status", json_string(tk_timer_status_name(i.status)));
        json_object_set_new(o, "remaining", json_real(i.remaining));
        json_object_set_new(o, "fired", jid(i.fired));
        json_t *a = tkd_timer_action(d, h);
        json_object_set_new(o, "action", a ? a : json_null());
        json_array_append_new(timers, o);
    }
    json_object_set_new(doc, "timers", timers);
    json_t *tks = json_array();
    cur = 0;
    tk_tickable_id tid;
    while (tk_tickable_next(d->world, &cur, &tid)) {
        tk_tickable_info i;
        const tks_class *c = tks_tickable_class(d->sim, tid);
        if (!c || tk_tickable_get(d->world, tid, &i) != 0)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "id", jid(tid));
        json_object_set_new(o, "class", json_string(tks_class_name(c)));
        json_object_set_new(o, "tick_type", json_string(tk_tickable_type_name(i.type)));
        json_object_set_new(o, "enabled", json_boolean(i.enabled));
        json_object_set_new(o, "when_paused", json_boolean(i.when_paused));
        json_object_set_new(o, "ticks", jid(i.ticks));
        json_object_set_new(o, "last_frame", jid(i.last_frame));
        json_object_set_new(o, "accum_dt", json_real(i.accum_dt));
        json_t *props = json_object();
        tks_tickable_props(d->sim, tid, put_prop, props);
        json_object_set_new(o, "props", props);
        json_array_append_new(tks, o);
    }
    json_object_set_new(doc, "tickables", tks);
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
} ent_in;

typedef struct timer_in {
    uint64_t handle;
    double rate, remaining;
    bool loop;
    tk_timer_status status;
    uint64_t fired;
    const json_t *action; /* borrowed from the document, or NULL */
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
    const char **levels;
    size_t n_levels;
    ent_in *ents;
    size_t n_ents;
    tks_id *sorted_ids; /* for lookups */
    uint32_t *by_id;    /* index in ents of sorted_ids[k] */
    timer_in *timers;
    size_t n_timers;
    uint32_t *timer_order;  /* indexes of timers, in slot order */
    tickable_in *tickables;
    size_t n_tickables;
} doc_in;

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
    if (tkd_p_keys(o, path, fn_keys, e))
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
        if (tkd_p_keys(t, p, tk, e))
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

static const char *const ent_keys[] = {
    "id", "class", "level", "time_dilation", "life_span", "props", "tick", "components", NULL};

static int parse_entity(const json_t *o, const char *path, tkd_arena *a, ent_in *en, tkd_perr *e)
{
    if (!json_is_object(o))
        return tkd_perr_set(e, -32602, "%s: must be an object", path);
    if (tkd_p_keys(o, path, ent_keys, e))
        return -1;
    tks_entity_restore *r = &en->r;
    memset(r, 0, sizeof *r);
    NEED(tkd_p_u64(o, "id", path, 1, 9000000000000000ull, &r->id, e), path, "id");
    NEED(tkd_p_str(o, "class", path, &r->cls, e), path, "class");
    OPT(tkd_p_str(o, "level", path, &r->level, e));
    r->dilation = 1.0;
    OPT(tkd_p_num(o, "time_dilation", path, 1e-9, 1e6, &r->dilation, e));
    r->life_remaining = -1;
    json_t *life = json_object_get(o, "life_span");
    if (life && !json_is_null(life))
        OPT(tkd_p_num(o, "life_span", path, 0, 1e12, &r->life_remaining, e));
    json_t *props = NULL;
    OPT(tkd_p_obj(o, "props", path, &props, e));
    char p[400];
    snprintf(p, sizeof p, "%s.props", path);
    if (tkd_p_props(props, p, a, 0, &r->props, &r->n_props, e) < 0)
        return -1;
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
        if (tkd_p_keys(c, cp, ck, e))
            return -1;
        tks_comp_restore *cr = &r->components[i];
        NEED(tkd_p_str(c, "class", cp, &cr->cls, e), cp, "class");
        json_t *cprops = NULL;
        OPT(tkd_p_obj(c, "props", cp, &cprops, e));
        snprintf(p, sizeof p, "%s.props", cp);
        if (tkd_p_props(cprops, p, a, 0, &cr->props, &cr->n_props, e) < 0)
            return -1;
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

/* Entity indexes by id. */
static int ent_id_cmp(const void *a, const void *b, void *ctx)
{
    const ent_in *ents = ctx;
    tks_id x = ents[*(const uint32_t *)a].r.id, y = ents[*(const uint32_t *)b].r.id;
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

static const ent_in *find_ent(const doc_in *in, tks_id id)
{
    /* by_id is parallel to sorted_ids: O(log n), never a scan (80,000
     * entities naming one prerequisite made a scan quadratic). */
    const tks_id *p = bsearch(&id, in->sorted_ids, in->n_ents, sizeof *in->sorted_ids, id_cmp);
    return p ? &in->ents[in->by_id[p - in->sorted_ids]] : NULL;
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

static int parse_doc(tkd *d, const json_t *doc, tkd_arena *a, doc_in *in, tkd_perr *e)
{
    memset(in, 0, sizeof *in);
    if (!json_is_object(doc))
        return tkd_perr_set(e, -32602, "$: must be an object");
    static const char *const top[] = {"format",   "version", "saved_at",  "world", "levels",
                                      "entities", "timers",  "tickables", NULL};
    if (tkd_p_keys(doc, "$", top, e))
        return -1;
    const char *fmt = NULL;
    OPT(tkd_p_str(doc, "format", "$", &fmt, e));
    if (fmt && strcmp(fmt, "tickd-snapshot") != 0)
        return tkd_perr_set(e, -32602, "$.format: '%s' is not a tickd snapshot", fmt);
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
    static const char *const wk[] = {"frame",         "world_time", "unpaused_time", "real_time",
                                     "time_dilation", "paused",     "next_id",       NULL};
    if (tkd_p_keys(w, "$.world", wk, e))
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
    OPT(tkd_p_arr(doc, "entities", "$", &ents, e));
    in->n_ents = ents ? json_array_size(ents) : 0;
    in->ents = in->n_ents ? tkd_arena_alloc(a, in->n_ents * sizeof *in->ents) : NULL;
    in->sorted_ids = tkd_arena_alloc(a, (in->n_ents + 1) * sizeof *in->sorted_ids);
    for (size_t i = 0; i < in->n_ents; i++) {
        char p[64];
        snprintf(p, sizeof p, "$.entities[%zu]", i);
        if (parse_entity(json_array_get(ents, i), p, a, &in->ents[i], e) < 0)
            return -1;
        in->sorted_ids[i] = in->ents[i].r.id;
        const char *lv = in->ents[i].r.level ? in->ents[i].r.level : "persistent";
        if (strcmp(lv, "persistent") != 0 && !has_level(in, lv))
            return tkd_perr_set(e, -32602, "%s.level: '%s' is not in $.levels", p, lv);
    }
    in->by_id = tkd_arena_alloc(a, (in->n_ents + 1) * sizeof *in->by_id);
    for (size_t i = 0; i < in->n_ents; i++)
        in->by_id[i] = (uint32_t)i;
    if (in->n_ents > 1)
        qsort_r(in->by_id, in->n_ents, sizeof *in->by_id, ent_id_cmp, in->ents);
    for (size_t i = 0; i < in->n_ents; i++)
        in->sorted_ids[i] = in->ents[in->by_id[i]].r.id;
    for (size_t i = 1; i < in->n_ents; i++)
        if (in->sorted_ids[i] == in->sorted_ids[i - 1])
            for (size_t k = 0; k < in->n_ents; k++)
                if (in->ents[k].r.id == in->sorted_ids[i])
                    return tkd_perr_set(e, -32602, "$.entities[%zu].id: entity %llu appears twice",
                                        k, (unsigned long long)in->sorted_ids[i]);
    if (in->n_ents && in->next_id <= in->sorted_ids[in->n_ents - 1])
        in->next_id = in->sorted_ids[in->n_ents - 1] + 1;
    if (in->n_ents > d->cfg.max_entities)
        return tkd_perr_set(e, -32003, "$.entities: %zu entities exceed world.max_entities (%u)",
                            in->n_ents, d->cfg.max_entities);
    for (size_t i = 0; i < in->n_ents; i++) {
        char p[64], err[TKS_ERR_MAX];
        snprintf(p, sizeof p, "$.entities[%zu]", i);
        int rc = tks_restore_check(d->sim, &in->ents[i].r, p, id_known, in, err);
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
        static const char *const tk[] = {"handle",    "rate",  "loop",   "status",
                                         "remaining", "fired", "action", NULL};
        if (!json_is_object(t))
            return tkd_perr_set(e, -32602, "%s: must be an object", p);
        if (tkd_p_keys(t, p, tk, e))
            return -1;
        timer_in *ti = &in->timers[i];
        NEED(tkd_p_u64(t, "handle", p, 1, UINT64_MAX, &ti->handle, e), p, "handle");
        if ((ti->handle & TK_TIMER_MAX) == TK_TIMER_MAX || (ti->handle >> 24) == 0)
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
        if (!strcmp(status, "pending"))
            ti->status = TK_TIMER_PENDING;
        else if (!strcmp(status, "active") || !strcmp(status, "executing"))
            ti->status = TK_TIMER_ACTIVE;
        else if (!strcmp(status, "paused"))
            ti->status = TK_TIMER_PAUSED;
        else
            return tkd_perr_set(e, -32602, "%s.status: must be pending, active or paused", p);
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
    /* Restored in slot order (as saved); a slot may appear once. */
    in->timer_order =
        in->n_timers ? tkd_arena_alloc(a, in->n_timers * sizeof *in->timer_order) : NULL;
    for (size_t i = 0; i < in->n_timers; i++)
        in->timer_order[i] = (uint32_t)i;
    if (in->n_timers > 1)
        qsort_r(in->timer_order, in->n_timers, sizeof *in->timer_order, slot_cmp, in->timers);
    for (size_t k = 1; k < in->n_timers; k++) {
        const timer_in *x = &in->timers[in->timer_order[k - 1]];
        const timer_in *y = &in->timers[in->timer_order[k]];
        if ((x->handle & TK_TIMER_MAX) == (y->handle & TK_TIMER_MAX))
            return tkd_perr_set(e, -32602,
                                "$.timers[%u].handle: the slot of handle %llu is used twice",
                                in->timer_order[k], (unsigned long long)y->handle);
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
        if (tkd_p_keys(t, p, kk, e))
            return -1;
        tickable_in *ti = &in->tickables[i];
        NEED(tkd_p_u64(t, "id", p, 1, UINT64_MAX, &ti->id, e), p, "id");
        if ((uint32_t)ti->id == 0xffffffffu || (ti->id >> 32) == 0)
            return tkd_perr_set(e, -32602, "%s.id: not a tickable id", p);
        for (size_t k = 0; k < i; k++)
            if ((uint32_t)in->tickables[k].id == (uint32_t)ti->id)
                return tkd_perr_set(e, -32602, "%s.id: the slot of id %llu is used twice", p,
                                    (unsigned long long)ti->id);
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
        int rc = tks_restore_check(d->sim, &probe, p, id_known, in, err);
        if (rc)
            return tkd_perr_set(e, -32602, "%s", err);
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

static tk_tick_id fn_tick(tkd *d, tks_id id, int comp)
{
    const tks_entity *e = tks_entity_get(d->sim, id);
    return e ? tks_entity_tick(e, comp) : TK_TICK_NONE;
}

static int apply(tkd *d, const doc_in *in, char *err, size_t errlen)
{
    clear_world(d);
    if (tk_world_restore_time(d->world, in->frame, in->world_time, in->unpaused_time,
                              in->real_time) != 0) {
        snprintf(err, errlen, "cannot restore the clocks: %s", tk_world_last_error(d->world));
        return -32603;
    }
    tk_world_set_time_dilation(d->world, in->dilation > 0 ? in->dilation : 1.0, NULL);
    tk_world_set_paused(d->world, in->paused);
    char serr[TKS_ERR_MAX];
    for (size_t i = 0; i < in->n_levels; i++) {
        if (strcmp(in->levels[i], "persistent") != 0 &&
            tks_level_add(d->sim, in->levels[i], serr)) {
            snprintf(err, errlen, "$.levels[%zu]: %s", i, serr);
            return -32603;
        }
    }
    for (size_t k = 0; k < in->n_timers; k++) {
        uint32_t i = in->timer_order[k];
        const timer_in *t = &in->timers[i];
        if (tkd_timer_restore(d, t->handle, t->rate, t->loop, t->status, t->remaining, t->fired,
                              t->action) != 0) {
            snprintf(err, errlen, "$.timers[%u]: %s", i, tk_world_last_error(d->world));
            return -32603;
        }
    }
    for (size_t i = 0; i < in->n_ents; i++) {
        if (tks_restore_entity(d->sim, &in->ents[i].r, serr)) {
            snprintf(err, errlen, "$.entities[%zu]: %s", i, serr);
            return -32603;
        }
    }
    for (size_t i = 0; i < in->n_ents; i++) {
        const ent_in *en = &in->ents[i];
        for (int c = -1; c < (int)en->r.n_components; c++) {
            const fn_in *fi = c < 0 ? &en->fn : &en->comp_fn[c];
            tk_tick_id t = fn_tick(d, en->r.id, c);
            for (size_t k = 0; k < fi->n_pre && t != TK_TICK_NONE; k++)
                tk_tick_add_prerequisite(d->world, t, fn_tick(d, fi->pre[k].id, fi->pre[k].comp));
        }
    }
    tks_restore_done(d->sim);
    for (size_t i = 0; i < in->n_tickables; i++) {
        const tickable_in *t = &in->tickables[i];
        tk_tickable_desc desc = {0};
        desc.type = t->type;
        desc.enabled = t->enabled;
        desc.when_paused = t->when_paused;
        if (tks_tickable_restore(d->sim, t->cls, &desc, t->props, t->n_props, t->id, t->ticks,
                                 t->last_frame, t->accum_dt, serr)) {
            snprintf(err, errlen, "$.tickables[%zu]: %s", i, serr);
            return -32603;
        }
    }
    tks_set_next_id(d->sim, in->next_id);
    return 0;
}

int tkd_snapshot_apply(tkd *d, const json_t *doc, char *err, size_t errlen)
{
    tkd_arena a = {0};
    doc_in in;
    tkd_perr pe;
    if (parse_doc(d, doc, &a, &in, &pe) < 0) {
        snprintf(err, errlen, "%s", pe.msg);
        tkd_arena_free(&a);
        return pe.code;
    }
    int rc = apply(d, &in, err, errlen);
    tkd_arena_free(&a);
    if (rc)
        tk_log_error("snapshot load failed half-way (a bug): %s", err);
    return rc;
}

/* ---- files ------------------------------------------------------------------------------- */

static json_t *info_json(const char *path, size_t bytes, const json_t *doc)
{
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(
        o, "entities", json_integer((json_int_t)json_array_size(json_object_get(doc, "entities"))));
    json_object_set_new(o, "timers",
                        json_integer((json_int_t)json_array_size(json_object_get(doc, "timers"))));
    json_object_set_new(
        o, "tickables",
        json_integer((json_int_t)json_array_size(json_object_get(doc, "tickables"))));
    return o;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int tkd_snapshot_save(tkd *d, const char *path, json_t **info, char *err, size_t errlen)
{
    json_t *doc = tkd_snapshot_build(d);
    char *text = tkd_jsonw_dump(doc, JSON_COMPACT, NULL); /* shortest reals */
    if (!text) {
        json_decref(doc);
        snprintf(err, errlen, "cannot encode the snapshot");
        return -32603;
    }
    size_t len = strlen(text);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    const char *dir = dirname(dirbuf);
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
    if (fd < 0) {
        snprintf(err, errlen, "path: cannot create %s: %s", tmp, strerror(errno));
        rc = errno == ENOENT ? -32001 : -32603;
        goto out;
    }
    if (write_all(fd, text, len) < 0 || write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
        snprintf(err, errlen, "path: cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        rc = -32603;
        goto out;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        snprintf(err, errlen, "path: cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        rc = -32603;
        goto out;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    if (info)
        *info = info_json(path, len + 1, doc);
out:
    free(text);
    json_decref(doc);
    return rc;
}

int tkd_snapshot_load(tkd *d, const char *path, json_t **info, char *err, size_t errlen)
{
    json_error_t je;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "path: cannot read %s: %s", path, strerror(errno));
        return errno == ENOENT ? -32001 : -32603;
    }
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        snprintf(err, errlen, "%s:%d:%d: not a valid snapshot: %s", path, je.line, je.column,
                 je.text);
        return -32602;
    }
    char e2[TKD_ERR_MAX];
    int rc = tkd_snapshot_apply(d, doc, e2, sizeof e2);
    if (rc) {
        snprintf(err, errlen, "%s: %s", path, e2);
    } else if (info) {
        *info = info_json(path, (size_t)st.st_size, doc);
    }
    json_decref(doc);
    return rc;
}
