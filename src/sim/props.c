/*
 * props.c - spawn requests, prop values and their validation, and the spawn
 * templates props hold (the contract is in sim.h).
 *
 * A class declares its props (tickd/plugin.h): name, type, default, range
 * and the offset of the field in its state.  Requests arrive as key/value
 * lists (tks_prop_kv) that the daemon made from JSON; here they are checked
 * against the declarations (naming the parameter path of anything wrong),
 * written into states, read back for entity.get and snapshots, and the
 * memory some fields own (strings, id lists, spawn templates) is released.
 *
 * Not here: where states live (store.c), what spawning does (spawn.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim_int.h"

/* ---- requests -------------------------------------------------------------- */

void tks_spawn_req_init(tks_spawn_req *r)
{
    memset(r, 0, sizeof *r);
    r->count = 1;
    tk_tick_spec_default(&r->tick);
    r->dilation = 1.0;
}

static char *dupstr(const char *s) { return s ? tk_strdup(s) : NULL; }

static void clone_props(tks_prop_kv **out, const tks_prop_kv *in, size_t n);

static void clone_value(tks_value *dst, const tks_value *src)
{
    *dst = *src;
    if (src->type == TKS_V_STRING)
        dst->str = dupstr(src->str);
    if (src->type == TKS_V_IDS && src->n_ids) {
        tks_id *ids = tk_malloc(src->n_ids * sizeof *ids);
        memcpy(ids, src->ids, src->n_ids * sizeof *ids);
        dst->ids = ids;
    }
    if (src->type == TKS_V_SPAWN && src->spawn)
        dst->spawn = tks_spawn_req_clone(src->spawn);
}

static void clone_props(tks_prop_kv **out, const tks_prop_kv *in, size_t n)
{
    *out = NULL;
    if (!n)
        return;
    tks_prop_kv *kv = tk_calloc(n, sizeof *kv);
    for (size_t i = 0; i < n; i++) {
        kv[i].key = dupstr(in[i].key);
        clone_value(&kv[i].v, &in[i].v);
    }
    *out = kv;
}

static void free_props(tks_prop_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tk_free((char *)kv[i].key);
        if (kv[i].v.type == TKS_V_STRING)
            tk_free((char *)kv[i].v.str);
        if (kv[i].v.type == TKS_V_IDS)
            tk_free((tks_id *)kv[i].v.ids);
        if (kv[i].v.type == TKS_V_SPAWN && kv[i].v.spawn)
            tks_spawn_req_free((tks_spawn_req *)kv[i].v.spawn);
    }
    tk_free(kv);
}

tks_spawn_req *tks_spawn_req_clone(const tks_spawn_req *r)
{
    tks_spawn_req *c = tk_malloc(sizeof *c);
    *c = *r;
    c->cls = dupstr(r->cls);
    c->level = dupstr(r->level);
    if (r->n_prereqs) {
        c->prereqs = tk_malloc(r->n_prereqs * sizeof *c->prereqs);
        memcpy(c->prereqs, r->prereqs, r->n_prereqs * sizeof *c->prereqs);
    } else {
        c->prereqs = NULL;
    }
    clone_props(&c->props, r->props, r->n_props);
    if (r->n_components) {
        c->components = tk_calloc(r->n_components, sizeof *c->components);
        for (size_t i = 0; i < r->n_components; i++) {
            c->components[i] = r->components[i];
            c->components[i].cls = dupstr(r->components[i].cls);
            clone_props(&c->components[i].props, r->components[i].props, r->components[i].n_props);
        }
    } else {
        c->components = NULL;
    }
    return c;
}

void tks_spawn_req_free(tks_spawn_req *r)
{
    if (!r)
        return;
    tk_free((char *)r->cls);
    tk_free((char *)r->level);
    tk_free(r->prereqs);
    free_props(r->props, r->n_props);
    for (size_t i = 0; i < r->n_components; i++) {
        tk_free((char *)r->components[i].cls);
        free_props(r->components[i].props, r->components[i].n_props);
    }
    tk_free(r->components);
    tk_free(r);
}

/* ---- spawn templates ------------------------------------------------------ */

/* A spawn template held by TKP_PROP_SPAWN fields (tkp_spawn_ref.tmpl): one
 * copy per spawn request, shared by every entity that request made (20,000
 * spawners of a 100 KB template hold 100 KB, not 2 GB), freed with the last
 * field that holds it.  Its bytes count against world.max_template_bytes. */
struct tks_tmpl {
    size_t refs;        /* fields holding it                          */
    uint64_t bytes;     /* bytes of the copy (tmpl_req_bytes)         */
    uint64_t *acct;     /* the sim's tmpl_bytes                       */
    tks_spawn_req *req; /* the copy                                   */
};

static uint64_t props_bytes(const tks_prop_kv *kv, size_t n);

/* Bytes a copy of `r` holds (nesting is bounded by TKS_MAX_NESTING). */
static uint64_t tmpl_req_bytes(const tks_spawn_req *r)
{
    uint64_t b = sizeof(tks_tmpl) + sizeof *r + (r->cls ? strlen(r->cls) + 1 : 0) +
                 (r->level ? strlen(r->level) + 1 : 0) + r->n_prereqs * sizeof(tks_id) +
                 r->n_components * sizeof(tks_component_req) + props_bytes(r->props, r->n_props);
    for (size_t i = 0; i < r->n_components; i++)
        b += (r->components[i].cls ? strlen(r->components[i].cls) + 1 : 0) +
             props_bytes(r->components[i].props, r->components[i].n_props);
    return b;
}

static uint64_t props_bytes(const tks_prop_kv *kv, size_t n)
{
    uint64_t b = n * sizeof *kv;
    for (size_t i = 0; i < n; i++) {
        b += kv[i].key ? strlen(kv[i].key) + 1 : 0;
        if (kv[i].v.type == TKS_V_STRING && kv[i].v.str)
            b += strlen(kv[i].v.str) + 1;
        else if (kv[i].v.type == TKS_V_IDS)
            b += kv[i].v.n_ids * sizeof(tks_id);
        else if (kv[i].v.type == TKS_V_SPAWN && kv[i].v.spawn)
            b += tmpl_req_bytes(kv[i].v.spawn);
    }
    return b;
}

/* The template for `src`: the one this spawn made already, or a new copy. */
static tks_tmpl *tmpl_share(tks_sim *s, const tks_spawn_req *src)
{
    for (size_t i = 0; s && s->sharing && i < s->n_share; i++) {
        if (s->share[i].src == src) {
            s->share[i].t->refs++;
            return s->share[i].t;
        }
    }
    tks_tmpl *t = tk_malloc(sizeof *t);
    t->refs = 1;
    t->req = tks_spawn_req_clone(src);
    t->bytes = tmpl_req_bytes(src);
    t->acct = s ? &s->tmpl_bytes : NULL;
    if (t->acct)
        *t->acct += t->bytes;
    if (s && s->sharing) {
        if (s->n_share == s->cap_share) {
            s->cap_share = s->cap_share ? s->cap_share * 2 : 8;
            s->share = tk_realloc(s->share, s->cap_share * sizeof *s->share);
        }
        s->share[s->n_share].src = src;
        s->share[s->n_share].t = t;
        s->n_share++;
    }
    return t;
}

void tks__tmpl_release(void *p)
{
    tks_tmpl *t = p;
    if (!t || --t->refs)
        return;
    if (t->acct)
        *t->acct -= t->bytes;
    tks_spawn_req_free(t->req);
    tk_free(t);
}

void tks__tmpl_ref(void *p) { ((tks_tmpl *)p)->refs++; }

const tks_spawn_req *tks__tmpl_req(const void *p) { return p ? ((const tks_tmpl *)p)->req : NULL; }

/* ---- declarations -------------------------------------------------------------- */

size_t tks__prop_size(tkp_prop_type t)
{
    switch (t) {
    case TKP_PROP_NUMBER:
        return sizeof(double);
    case TKP_PROP_COUNT:
    case TKP_PROP_ID:
        return sizeof(uint64_t);
    case TKP_PROP_BOOL:
        return sizeof(bool);
    case TKP_PROP_SPAWN:
        return sizeof(tkp_spawn_ref);
    case TKP_PROP_STRING:
        return sizeof(const char *);
    case TKP_PROP_IDS:
        return sizeof(tkp_ids);
    }
    return 0;
}

/* Longest string / most ids of a TKP_PROP_STRING / TKP_PROP_IDS prop. */
size_t tks__prop_limit(const tks_prop_desc *d)
{
    if (d->max > 0)
        return (size_t)d->max;
    return d->type == TKP_PROP_STRING ? 255 : 64;
}

/* ---- validation ------------------------------------------------------------------ */

int tks__errf(char err[TKS_ERR_MAX], int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, TKS_ERR_MAX, fmt, ap);
    va_end(ap);
    return code;
}

const tks_prop_desc *tks__find_prop(const tks_class *c, const char *key)
{
    for (size_t i = 0; i < c->p->n_props; i++)
        if (strcmp(c->p->props[i].name, key) == 0)
            return &c->p->props[i];
    return NULL;
}

const tks_check_mode tks__live_mode = {NULL, NULL, NULL};

/* A snapshot's tickable: its ids were checked against the snapshot already. */
static bool any_id(void *ud, tks_id id) { return true; }
const tks_check_mode tks__restored_mode = {any_id, NULL, NULL};

/* Check one prop value against its declaration. `path` names the props object. */
int tks__check_prop(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, const char *path,
                    int depth, const tks_check_mode *m, char err[TKS_ERR_MAX])
{
    const tks_prop_desc *d = tks__find_prop(c, kv->key);
    if (!d)
        return tks__errf(err, TK_EINVAL, "%s.%s: class '%s' has no prop '%s'", path, kv->key,
                         c->name, kv->key);
    const tks_value *v = &kv->v;
    switch (d->type) {
    case TKS_PROP_NUMBER:
        /* A snapshot holds what the simulation made of a number declared
         * unbounded ([-1e300, 1e300]): a mover integrated past the range, or
         * to +-inf or NaN.  That state loads back as it was saved. */
        if (m->id_known && v->type == TKS_V_NUMBER && d->min <= -1e300 && d->max >= 1e300)
            return 0;
        if (v->type != TKS_V_NUMBER || !isfinite(v->num))
            return tks__errf(err, TK_EINVAL, "%s.%s: must be a number", path, d->name);
        if (v->num < d->min || v->num > d->max)
            return tks__errf(err, TK_EINVAL, "%s.%s: must be in [%g, %g]", path, d->name, d->min,
                             d->max);
        return 0;
    case TKS_PROP_COUNT:
        if (v->type != TKS_V_NUMBER || v->num != floor(v->num) || !isfinite(v->num))
            return tks__errf(err, TK_EINVAL, "%s.%s: must be an integer", path, d->name);
        if (v->num < d->min || v->num > d->max)
            return tks__errf(err, TK_EINVAL, "%s.%s: must be in [%g, %g]", path, d->name, d->min,
                             d->max);
        return 0;
    case TKS_PROP_ID:
        if (v->type != TKS_V_NUMBER || v->num != floor(v->num) || v->num < 0 || v->num > 9e15 ||
            (v->num == 0 && d->required))
            return tks__errf(err, TK_EINVAL, "%s.%s: must be an entity id", path, d->name);
        if (v->num == 0)
            return 0; /* none */
        /* A snapshot may hold an id whose entity died since it was set (a
         * follower of a destroyed target): that is a state the world had, so
         * it loads; a live request must name a live entity. */
        if (!m->id_known && !tks__entity(s, (tks_id)v->num))
            return tks__errf(err, TK_ENOENT, "%s.%s: entity %.0f does not exist", path, d->name,
                             v->num);
        return 0;
    case TKS_PROP_BOOL:
        if (v->type != TKS_V_BOOL)
            return tks__errf(err, TK_EINVAL, "%s.%s: must be true or false", path, d->name);
        return 0;
    case TKS_PROP_SPAWN:
        if (v->type != TKS_V_SPAWN)
            return tks__errf(err, TK_EINVAL, "%s.%s: must be entity.spawn params or \"self\"", path,
                             d->name);
        if (v->self)
            return 0;
        if (!v->spawn) {
            if (d->required)
                return tks__errf(err, TK_EINVAL, "%s.%s: must be entity.spawn params or \"self\"",
                                 path, d->name);
            return 0; /* unset */
        }
        if (depth >= TKS_MAX_NESTING)
            return tks__errf(err, TK_EINVAL, "%s.%s: spawn templates nested too deep (max %d)",
                             path, d->name, TKS_MAX_NESTING);
        {
            char sub[160];
            snprintf(sub, sizeof sub, "%s.%s", path, d->name);
            uint64_t dummy = 0;
            int rc = tks__check_spawn(s, v->spawn, sub, depth + 1, &dummy, m, err);
            /* A template's limit is checked when it spawns, not now. */
            if (rc == TK_ELIMIT)
                rc = 0;
            return rc;
        }
    case TKS_PROP_STRING: {
        /* The string "self" arrives read as a spawn's "self". */
        const char *str = v->type == TKS_V_STRING                          ? v->str
                          : v->type == TKS_V_SPAWN && v->self && !v->spawn ? "self"
                                                                           : NULL;
        if (!str)
            return tks__errf(err, TK_EINVAL, "%s.%s: must be a string", path, d->name);
        if (strlen(str) > tks__prop_limit(d))
            return tks__errf(err, TK_EINVAL, "%s.%s: longer than %zu bytes", path, d->name,
                             tks__prop_limit(d));
        return 0;
    }
    case TKS_PROP_IDS:
        if (v->type != TKS_V_IDS)
            return tks__errf(err, TK_EINVAL, "%s.%s: must be an array of entity ids", path,
                             d->name);
        if (v->n_ids > tks__prop_limit(d))
            return tks__errf(err, TK_EINVAL, "%s.%s: more than %zu ids", path, d->name,
                             tks__prop_limit(d));
        for (size_t i = 0; i < v->n_ids; i++) {
            if (v->ids[i] == 0 || v->ids[i] > 9e15)
                return tks__errf(err, TK_EINVAL, "%s.%s[%zu]: must be an entity id", path, d->name,
                                 i);
            if (!m->id_known && !tks__entity(s, v->ids[i]))
                return tks__errf(err, TK_ENOENT, "%s.%s[%zu]: entity %llu does not exist", path,
                                 d->name, i, (unsigned long long)v->ids[i]);
        }
        return 0;
    }
    return tks__errf(err, TK_EINVAL, "%s.%s: unsupported prop type", path, d->name);
}

int tks__check_props(tks_sim *s, const tks_class *c, const tks_prop_kv *kv, size_t n,
                     const char *path, int depth, const tks_check_mode *m, char err[TKS_ERR_MAX])
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < i; j++)
            if (strcmp(kv[i].key, kv[j].key) == 0)
                return tks__errf(err, TK_EINVAL, "%s.%s: given twice", path, kv[i].key);
        int rc = tks__check_prop(s, c, &kv[i], path, depth, m, err);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < c->p->n_props; i++) {
        if (!c->p->props[i].required)
            continue;
        bool found = false;
        for (size_t j = 0; j < n && !found; j++)
            found = strcmp(kv[j].key, c->p->props[i].name) == 0;
        if (!found)
            return tks__errf(err, TK_EINVAL, "%s.%s: required by class '%s'", path,
                             c->p->props[i].name, c->name);
    }
    if (c->p->check) {
        char why[TKS_ERR_MAX] = "";
        if (tks__class_check(s, c, kv, n, m->ctx, why, sizeof why) != 0)
            return tks__errf(err, TK_EINVAL, "%s: %s", path, why[0] ? why : "refused by the class");
    }
    return 0;
}

int tks__check_spec(const tk_tick_spec *spec, const char *path, char err[TKS_ERR_MAX])
{
    const char *why;
    if (tk_tick_spec_check(spec, &why))
        return tks__errf(err, TK_EINVAL, "%s: %s", path, why);
    if (spec->interval < 0)
        return tks__errf(err, TK_EINVAL, "%s.interval: must be >= 0", path);
    return 0;
}

int tks__check_spawn(tks_sim *s, const tks_spawn_req *r, const char *path, int depth,
                     uint64_t *total, const tks_check_mode *m, char err[TKS_ERR_MAX])
{
    bool shape_only = m->id_known != NULL;
    char sub[200];
    const char *p = path[0] ? path : "";
    const char *dot = path[0] ? "." : "";
    const tks_class *c = tks_class_find(s, r->cls);
    if (!r->cls)
        return tks__errf(err, TK_EINVAL, "%s%sclass: required", p, dot);
    if (!c)
        return tks__errf(err, TK_EINVAL, "%s%sclass: unknown class '%s'", p, dot, r->cls);
    if (r->level && !shape_only) {
        tk_level_id l;
        if (tk_level_find(s->w, r->level, &l) != 0)
            return tks__errf(err, TK_ENOENT, "%s%slevel: level '%s' does not exist", p, dot,
                             r->level);
    }
    if (r->count < 1 || r->count > TKS_MAX_SPAWN)
        return tks__errf(err, TK_EINVAL, "%s%scount: must be in [1, %d]", p, dot, TKS_MAX_SPAWN);
    snprintf(sub, sizeof sub, "%s%stick", p, dot);
    int rc = tks__check_spec(&r->tick, sub, err);
    if (rc)
        return rc;
    if (!(isfinite(r->dilation) && r->dilation >= 0 && r->dilation <= 1e6))
        return tks__errf(err, TK_EINVAL, "%s%stime_dilation: must be a number >= 0", p, dot);
    if (!(isfinite(r->life_span) && r->life_span >= 0))
        return tks__errf(err, TK_EINVAL, "%s%slife_span: must be a number >= 0", p, dot);
    if (r->n_components > TKS_MAX_COMPONENTS)
        return tks__errf(err, TK_EINVAL, "%s%scomponents: at most %d", p, dot, TKS_MAX_COMPONENTS);
    for (size_t i = 0; i < r->n_components; i++) {
        const tks_component_req *cr = &r->components[i];
        const tks_class *cc = tks_class_find(s, cr->cls);
        if (!cr->cls)
            return tks__errf(err, TK_EINVAL, "%s%scomponents[%zu].class: required", p, dot, i);
        if (!cc)
            return tks__errf(err, TK_EINVAL, "%s%scomponents[%zu].class: unknown class '%s'", p,
                             dot, i, cr->cls);
        snprintf(sub, sizeof sub, "%s%scomponents[%zu].tick", p, dot, i);
        if ((rc = tks__check_spec(&cr->tick, sub, err)))
            return rc;
        snprintf(sub, sizeof sub, "%s%scomponents[%zu].props", p, dot, i);
        if ((rc = tks__check_props(s, cc, cr->props, cr->n_props, sub, depth, m, err)))
            return rc;
    }
    for (size_t i = 0; i < r->n_prereqs && !shape_only; i++)
        if (!tks__entity(s, r->prereqs[i]))
            return tks__errf(err, TK_ENOENT, "%s%sprerequisites[%zu]: entity %llu does not exist",
                             p, dot, i, (unsigned long long)r->prereqs[i]);
    snprintf(sub, sizeof sub, "%s%sprops", p, dot);
    if ((rc = tks__check_props(s, c, r->props, r->n_props, sub, depth, m, err)))
        return rc;
    *total += r->count;
    if (shape_only)
        return 0;
    if (s->live + s->reserved + *total > s->max_entities)
        return tks__errf(
            err, TK_ELIMIT, "%s%scount: would exceed world.max_entities (%llu live, max %llu)", p,
            dot, (unsigned long long)(s->live + s->reserved), (unsigned long long)s->max_entities);
    /* Ids stay JSON-safe integers (below 2^53). */
    if (s->next_id + *total > (1ull << 53))
        return tks__errf(err, TK_ELIMIT, "%s%scount: entity ids would pass 2^53", p, dot);
    /* Costs counted in what the spawn will hold: tick functions, and the
     * spawn templates its props carry (one shared copy each). */
    uint64_t fns = r->tick.on_dedicated_server ? 1 : 0;
    for (size_t i = 0; i < r->n_components; i++)
        fns += r->components[i].tick.on_dedicated_server ? 1 : 0;
    tk_tick_counts tc;
    tk_tick_get_counts(s->w, &tc);
    if (fns && (uint64_t)tc.registered + r->count * fns > s->max_tick_functions)
        return tks__errf(err, TK_ELIMIT,
                         "%s%scount: %llu tick functions would exceed world.max_tick_functions "
                         "(%llu registered, max %llu)",
                         p, dot, (unsigned long long)(r->count * fns),
                         (unsigned long long)tc.registered,
                         (unsigned long long)s->max_tick_functions);
    uint64_t tb = 0;
    for (size_t i = 0; i < r->n_props; i++)
        if (r->props[i].v.type == TKS_V_SPAWN && r->props[i].v.spawn)
            tb += tmpl_req_bytes(r->props[i].v.spawn);
    for (size_t i = 0; i < r->n_components; i++)
        for (size_t k = 0; k < r->components[i].n_props; k++)
            if (r->components[i].props[k].v.type == TKS_V_SPAWN &&
                r->components[i].props[k].v.spawn)
                tb += tmpl_req_bytes(r->components[i].props[k].v.spawn);
    if (tb && s->tmpl_bytes + tb > s->max_template_bytes)
        return tks__errf(err, TK_ELIMIT,
                         "%s%sprops: spawn templates of %llu bytes would exceed "
                         "world.max_template_bytes (%llu held, max %llu)",
                         p, dot, (unsigned long long)tb, (unsigned long long)s->tmpl_bytes,
                         (unsigned long long)s->max_template_bytes);
    if (r->life_span > 0 && tks__timers_live(s) + r->count > TK_TIMER_MAX)
        return tks__errf(err, TK_ELIMIT,
                         "%s%slife_span: %llu life-span timers would exceed the timer limit (%u)",
                         p, dot, (unsigned long long)r->count, (unsigned)TK_TIMER_MAX);
    return 0;
}

/* ---- creating objects -------------------------------------------------------------- */

/* The value of a TKP_PROP_STRING field nobody set: not owned. */
static const char k_empty[] = "";

bool tks__owns_memory(const tks_prop_desc *d)
{
    return d->type == TKS_PROP_SPAWN || d->type == TKS_PROP_STRING || d->type == TKS_PROP_IDS;
}

/* Put an owning field at its unset value without freeing what it held. */
void tks__detach_field(const tks_prop_desc *d, unsigned char *f)
{
    if (d->type == TKS_PROP_STRING)
        *(const char **)f = k_empty;
    else
        memset(f, 0, tks__prop_size(d->type));
}

/* Free what a field owns (a spawn template, a string, ids) and leave it at
 * its unset value. */
void tks__release_field(const tks_prop_desc *d, unsigned char *f)
{
    if (!tks__owns_memory(d))
        return;
    if (d->type == TKS_PROP_SPAWN)
        tks__tmpl_release(((tkp_spawn_ref *)f)->tmpl);
    else if (d->type == TKS_PROP_STRING && *(const char **)f != k_empty)
        tk_free(*(char **)f);
    else if (d->type == TKS_PROP_IDS)
        tk_free((tkp_id *)((tkp_ids *)f)->ids);
    tks__detach_field(d, f);
}

/* Store a validated value into its state field `f` (freeing what the field
 * held). */
static void store_value(tks_sim *s, const tks_prop_desc *d, unsigned char *f, const tks_value *v)
{
    tks__release_field(d, f);
    switch (d->type) {
    case TKS_PROP_NUMBER:
        *(double *)f = v->num;
        break;
    case TKS_PROP_COUNT:
    case TKS_PROP_ID:
        *(uint64_t *)f = (uint64_t)v->num;
        break;
    case TKS_PROP_BOOL:
        *(bool *)f = v->b;
        break;
    case TKS_PROP_SPAWN: {
        tkp_spawn_ref *ref = (tkp_spawn_ref *)f;
        ref->tmpl = v->self || !v->spawn ? NULL : tmpl_share(s, v->spawn);
        ref->self = v->self;
        break;
    }
    case TKS_PROP_STRING: {
        const char *str = v->type == TKS_V_STRING ? v->str : "self";
        if (str[0])
            *(char **)f = tk_strdup(str);
        break;
    }
    case TKS_PROP_IDS:
        if (v->n_ids) {
            tkp_id *ids = tk_malloc(v->n_ids * sizeof *ids);
            memcpy(ids, v->ids, v->n_ids * sizeof *ids);
            ((tkp_ids *)f)->ids = ids;
            ((tkp_ids *)f)->n = v->n_ids;
        }
        break;
    }
}

void tks__set_default_props(const tks_class *c, void *state)
{
    for (size_t i = 0; i < c->p->n_props; i++) {
        const tks_prop_desc *d = &c->p->props[i];
        unsigned char *f = (unsigned char *)state + d->offset;
        tks_value v = {.type = TKS_V_NUMBER, .num = d->def, .b = d->def != 0};
        if (tks__owns_memory(d))
            tks__detach_field(d, f); /* nothing to release yet */
        else
            store_value(NULL, d, f, &v);
    }
}

/* Apply validated props (what the fields owned is freed). */
void tks__apply_props(tks_sim *s, const tks_class *c, void *state, const tks_prop_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const tks_prop_desc *d = tks__find_prop(c, kv[i].key);
        store_value(s, d, (unsigned char *)state + d->offset, &kv[i].v);
    }
}

void tks__free_state_props(const tks_class *c, void *state)
{
    for (size_t i = 0; i < c->p->n_props; i++) {
        const tks_prop_desc *d = &c->p->props[i];
        tks__release_field(d, (unsigned char *)state + d->offset);
    }
}

/* ---- reading ------------------------------------------------------------------- */

/* The value of a declared prop in a state. */
void tks__read_prop(const tks_prop_desc *d, const void *state, tks_value *v)
{
    const unsigned char *f = (const unsigned char *)state + d->offset;
    memset(v, 0, sizeof *v);
    switch (d->type) {
    case TKS_PROP_NUMBER:
        v->type = TKS_V_NUMBER;
        v->num = *(const double *)f;
        break;
    case TKS_PROP_COUNT:
    case TKS_PROP_ID:
        v->type = TKS_V_NUMBER;
        v->num = (double)*(const uint64_t *)f;
        break;
    case TKS_PROP_BOOL:
        v->type = TKS_V_BOOL;
        v->b = *(const bool *)f;
        break;
    case TKS_PROP_SPAWN: {
        const tkp_spawn_ref *ref = (const tkp_spawn_ref *)f;
        v->type = TKS_V_SPAWN;
        v->spawn = ref->tmpl ? ((const tks_tmpl *)ref->tmpl)->req : NULL;
        v->self = ref->self;
        break;
    }
    case TKS_PROP_STRING:
        v->type = TKS_V_STRING;
        v->str = *(const char *const *)f;
        break;
    case TKS_PROP_IDS:
        v->type = TKS_V_IDS;
        v->ids = ((const tkp_ids *)f)->ids;
        v->n_ids = ((const tkp_ids *)f)->n;
        break;
    }
}

void tks__visit_props(const tks_class *c, const void *state, tks_prop_visit_fn fn, void *ud)
{
    for (size_t i = 0; i < c->p->n_props; i++) {
        tks_value v;
        tks__read_prop(&c->p->props[i], state, &v);
        fn(ud, &c->p->props[i], &v);
    }
}
