/*
 * hash.c - world.hash (hash.h): the world walked in a canonical order into
 * SipHash-2-4-128.  Through the public API of the core and the entity layer
 * only.
 */
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "params.h"

/* ---- SipHash-1-3, 128-bit output (Aumasson & Bernstein's SipHash-c-d) ---------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND(s)                                                                                \
    do {                                                                                           \
        s->v0 += s->v1;                                                                            \
        s->v1 = ROTL(s->v1, 13);                                                                   \
        s->v1 ^= s->v0;                                                                            \
        s->v0 = ROTL(s->v0, 32);                                                                   \
        s->v2 += s->v3;                                                                            \
        s->v3 = ROTL(s->v3, 16);                                                                   \
        s->v3 ^= s->v2;                                                                            \
        s->v0 += s->v3;                                                                            \
        s->v3 = ROTL(s->v3, 21);                                                                   \
        s->v3 ^= s->v0;                                                                            \
        s->v2 += s->v1;                                                                            \
        s->v1 = ROTL(s->v1, 17);                                                                   \
        s->v1 ^= s->v2;                                                                            \
        s->v2 = ROTL(s->v2, 32);                                                                   \
    } while (0)

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

void tkd_sip_init(tkd_sip *s, const uint8_t key[16])
{
    uint64_t k0 = le64(key), k1 = le64(key + 8);
    s->v0 = 0x736f6d6570736575ull ^ k0;
    s->v1 = 0x646f72616e646f6dull ^ k1 ^ 0xee;
    s->v2 = 0x6c7967656e657261ull ^ k0;
    s->v3 = 0x7465646279746573ull ^ k1;
    s->tail = 0;
    s->ntail = 0;
    s->len = 0;
}

/* SipHash-1-3 (one compression round per word, three to finish): what
 * Rust's hash maps use; a digest against accidental differences. */
static inline void sip_word(tkd_sip *s, uint64_t m)
{
    s->v3 ^= m;
    SIPROUND(s);
    s->v0 ^= m;
}

void tkd_sip_update(tkd_sip *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->len += n;
    while (n && s->ntail) {
        s->tail |= (uint64_t)*p++ << (8 * s->ntail);
        n--;
        if (++s->ntail == 8) {
            sip_word(s, s->tail);
            s->tail = 0;
            s->ntail = 0;
        }
    }
    for (; n >= 8; n -= 8, p += 8)
        sip_word(s, le64(p));
    for (; n; n--)
        s->tail |= (uint64_t)*p++ << (8 * s->ntail++);
}

void tkd_sip_final(tkd_sip *s, uint8_t out[TKD_HASH_BYTES])
{
    uint64_t b = (s->len << 56) | s->tail;
    sip_word(s, b);
    s->v2 ^= 0xee;
    for (int i = 0; i < 3; i++)
        SIPROUND(s);
    uint64_t h0 = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
    s->v1 ^= 0xdd;
    for (int i = 0; i < 3; i++)
        SIPROUND(s);
    uint64_t h1 = s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(h0 >> (8 * i));
        out[8 + i] = (uint8_t)(h1 >> (8 * i));
    }
}

void tkd_hash_hex(const uint8_t h[TKD_HASH_BYTES], char out[TKD_HASH_HEX])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < TKD_HASH_BYTES; i++) {
        out[2 * i] = hx[h[i] >> 4];
        out[2 * i + 1] = hx[h[i] & 15];
    }
    out[2 * TKD_HASH_BYTES] = '\0';
}

int tkd_hash_parse(const char *hex, uint8_t out[TKD_HASH_BYTES])
{
    if (!hex || strlen(hex) != 2 * TKD_HASH_BYTES)
        return -1;
    for (int i = 0; i < 2 * TKD_HASH_BYTES; i++) {
        char c = hex[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)(v << 4);
        else
            out[i / 2] |= (uint8_t)v;
    }
    return 0;
}

/* ---- the encoding ------------------------------------------------------------------- */

static const uint8_t world_key[16] = {'t', 'i', 'c', 'k', 'd', '-', 'w', 'o',
                                      'r', 'l', 'd', '-', 'h', 'a', 's', 'h'};

/* The encoding is made of whole 64-bit words (strings are padded), so a
 * word goes straight into the digest. */
static inline void h_u64(tkd_sip *s, uint64_t v)
{
    s->len += 8;
    sip_word(s, v);
}

static void h_f64(tkd_sip *s, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    h_u64(s, u);
}

static void h_f32(tkd_sip *s, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    h_u64(s, u);
}

static void h_tag(tkd_sip *s, char tag) { h_u64(s, (uint64_t)(unsigned char)tag); }

/* Its length, then its bytes in words (the last one zero-padded). */
static void h_str(tkd_sip *s, const char *str)
{
    size_t n = str ? strlen(str) : 0;
    h_u64(s, n);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t w = 0;
        size_t k = n - i < 8 ? n - i : 8;
        for (size_t j = 0; j < k; j++)
            w |= (uint64_t)(unsigned char)str[i + j] << (8 * j);
        h_u64(s, w);
    }
}

/* Any JSON value, canonically (sorted keys, reals that read back). */
static void h_json(tkd_sip *s, json_t *j)
{
    if (!j) {
        h_str(s, "null");
        return;
    }
    char *t = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    h_str(s, t ? t : "");
    free(t);
    json_decref(j);
}

static void h_spec(tkd_sip *s, const tk_tick_spec *sp)
{
    h_u64(s, (uint64_t)sp->group);
    h_u64(s, (uint64_t)(sp->end_group == TK_GROUP_SAME ? sp->group : sp->end_group));
    h_f64(s, sp->interval);
    h_u64(s, (uint64_t)sp->enabled | (uint64_t)sp->even_when_paused << 1 |
                 (uint64_t)sp->high_priority << 2 | (uint64_t)sp->batch << 3 |
                 (uint64_t)sp->on_dedicated_server << 4 | (uint64_t)sp->any_thread << 5);
}

typedef struct hctx {
    tkd *d;
    tkd_sip *s;
    /* Names hashed once, then their digests (entities of a class or a
     * level come in runs). */
    const tks_class *cls;
    uint64_t cls_h;
    tk_level_id level;
    uint64_t level_h;
} hctx;

/* A 64-bit digest of a name (FNV-1a: names are short, their digest goes
 * into the SipHash stream). */
static uint64_t name_digest(const char *n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; n && *n; n++)
        h = (h ^ (unsigned char)*n) * 0x100000001b3ull;
    return h;
}

static void h_class(hctx *c, const tks_class *cls)
{
    if (cls != c->cls) {
        c->cls = cls;
        c->cls_h = name_digest(tks_class_name(cls));
    }
    h_u64(c->s, c->cls_h);
}

/* A prop's value; its name and type are the class's declarations, which
 * the class's name (hashed once per instance) stands for. */
static void h_prop(void *ud, const tks_prop_desc *pd, const tks_value *v)
{
    tkd_sip *s = ud;
    if (pd->type == TKS_PROP_NUMBER || pd->type == TKS_PROP_COUNT || pd->type == TKS_PROP_ID)
        h_f64(s, v->num);
    else if (pd->type == TKS_PROP_BOOL)
        h_u64(s, v->b);
    else
        h_json(s, tkd_j_value(pd, v));
}

static void h_fn(hctx *c, const tks_entity *e, int comp)
{
    tkd *d = c->d;
    tkd_sip *s = c->s;
    tk_tick_id id = tks_entity_tick(e, comp);
    tk_tick_info ti;
    if (id == TK_TICK_NONE || tk_tick_get(d->world, id, &ti) != 0) {
        h_tag(s, 'u'); /* never registered: the spec it keeps */
        const tk_tick_spec *kept = tks_entity_tick_spec(d->sim, e, comp);
        if (kept)
            h_spec(s, kept);
        return;
    }
    h_tag(s, 'f');
    h_spec(s, &ti.spec);
    h_u64(s, (uint64_t)ti.state);
    h_f32(s, ti.dilation);
    tk_tick_restore st;
    tk_tick_save(d->world, id, &st);
    h_u64(s, st.ticks);
    h_u64(s, st.last_frame);
    h_f32(s, st.last_dt);
    h_f64(s, st.accum_dt);
    h_f64(s, st.cooldown);
    h_f64(s, st.since_last_tick);
    tk_tick_id local[32], *p = local;
    size_t n = tk_tick_prerequisites(d->world, id, local, 32);
    if (n > 32) {
        p = tk_malloc(n * sizeof *p);
        n = tk_tick_prerequisites(d->world, id, p, n);
    }
    h_u64(s, n);
    for (size_t i = 0; i < n; i++) {
        int pc = -1;
        const tks_entity *pe = tks_tick_owner(d->sim, p[i], &pc);
        h_u64(s, pe ? tks_entity_id(pe) : 0);
        h_u64(s, (uint64_t)(int64_t)pc);
    }
    if (p != local)
        tk_free(p);
}

static void h_entity(void *ud, const tks_entity *e)
{
    hctx *c = ud;
    tkd_sip *s = c->s;
    h_tag(s, 'E');
    h_u64(s, tks_entity_id(e));
    h_class(c, tks_entity_class(e));
    tk_level_id lv = tks_entity_level(e);
    if (lv != c->level) {
        c->level = lv;
        c->level_h = name_digest(tk_level_name(c->d->world, lv));
    }
    h_u64(s, c->level_h);
    h_f32(s, tks_entity_dilation(e));
    tks_entity_props(c->d->sim, e, -1, h_prop, s);
    h_fn(c, e, -1);
    size_t nc = tks_entity_component_count(e);
    h_u64(s, nc);
    for (size_t i = 0; i < nc; i++) {
        h_class(c, tks_entity_component_class(e, i));
        tks_entity_props(c->d->sim, e, (int)i, h_prop, s);
        h_fn(c, e, (int)i);
    }
}

typedef struct tref {
    uint64_t handle, order;
} tref;

static int by_handle(const void *a, const void *b)
{
    const tref *x = a, *y = b;
    return x->handle < y->handle ? -1 : x->handle > y->handle;
}

static int by_order(const void *a, const void *b)
{
    const tref *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order;
}

static void h_timers(hctx *c)
{
    tkd *d = c->d;
    tkd_sip *s = c->s;
    tk_timer_counts tc;
    tk_timer_get_counts(d->world, &tc);
    size_t cap = tc.active + tc.paused + tc.pending + 1, n = 0;
    tref *t = tk_malloc(cap * sizeof *t);
    uint64_t cur = 0;
    tk_timer_handle h;
    while (tk_timer_next(d->world, &cur, &h)) {
        tk_timer_info i;
        if (tk_timer_get(d->world, h, &i) != 0)
            continue;
        if (n == cap)
            t = tk_realloc(t, (cap *= 2) * sizeof *t);
        t[n++] = (tref){h, i.order};
    }
    qsort(t, n, sizeof *t, by_handle);
    h_tag(s, 'T');
    h_u64(s, n);
    for (size_t k = 0; k < n; k++) {
        tk_timer_info i;
        tk_timer_get(d->world, t[k].handle, &i);
        h_u64(s, i.handle);
        h_u64(s, (uint64_t)i.status);
        h_f64(s, i.rate);
        h_u64(s, i.loop);
        h_f64(s, i.remaining);
        h_u64(s, i.fired);
        h_u64(s, i.owner);
        if (i.owner == 0)
            h_json(s, tkd_timer_action(d, i.handle));
    }
    qsort(t, n, sizeof *t, by_order);
    for (size_t k = 0; k < n; k++)
        h_u64(s, t[k].handle);
    tk_free(t);
}

static void h_tickables(hctx *c)
{
    tkd *d = c->d;
    tkd_sip *s = c->s;
    h_tag(s, 'K');
    uint64_t cur = 0;
    tk_tickable_id id;
    while (tk_tickable_next(d->world, &cur, &id)) {
        tk_tickable_info i;
        if (tk_tickable_get(d->world, id, &i) != 0)
            continue;
        const tks_class *cls = tks_tickable_class(d->sim, id);
        h_u64(s, id);
        h_str(s, cls ? tks_class_name(cls) : "");
        h_u64(s, (uint64_t)i.type | (uint64_t)i.enabled << 4 | (uint64_t)i.when_paused << 5);
        h_u64(s, i.ticks);
        h_u64(s, i.last_frame);
        h_f64(s, i.accum_dt);
        if (cls)
            tks_tickable_props(d->sim, id, h_prop, s);
    }
}

static void h_free_lists(hctx *c)
{
    tkd *d = c->d;
    tkd_sip *s = c->s;
    size_t n = tk_timer_free_slots(d->world, NULL, 0);
    uint32_t *fs = n ? tk_malloc(n * sizeof *fs) : NULL;
    n = tk_timer_free_slots(d->world, fs, n);
    h_tag(s, 'F');
    h_u64(s, tk_timer_serial(d->world));
    h_u64(s, n);
    for (size_t i = 0; i < n; i++)
        h_u64(s, fs[i]);
    tk_free(fs);
    n = tk_tickable_free_ids(d->world, NULL, 0);
    tk_tickable_id *fi = n ? tk_malloc(n * sizeof *fi) : NULL;
    n = tk_tickable_free_ids(d->world, fi, n);
    h_u64(s, n);
    for (size_t i = 0; i < n; i++)
        h_u64(s, fi[i]);
    tk_free(fi);
}

const char *const tkd_hash_section_names[TKD_HASH_SECTIONS] = {
    "time", "counters", "levels", "entities", "timers", "tickables"};

void tkd_world_hash_sections(tkd *d, uint8_t out[TKD_HASH_BYTES],
                             uint8_t sec[TKD_HASH_SECTIONS][TKD_HASH_BYTES])
{
    tkd_sip s;
    tk_world_t *w = d->world;
    hctx c = {d, &s, NULL, 0, TK_LEVEL_NONE, 0};
    uint8_t local[TKD_HASH_SECTIONS][TKD_HASH_BYTES];
    if (!sec)
        sec = local;
    /* time */
    tkd_sip_init(&s, world_key);
    tk_world_time t;
    tk_world_get_time(w, &t);
    h_u64(&s, tk_world_frames_done(w));
    h_u64(&s, tk_world_time_ns(w));
    h_u64(&s, tk_world_unpaused_time_ns(w));
    h_u64(&s, tk_world_real_time_ns(w));
    h_f64(&s, t.time_dilation);
    h_u64(&s, t.paused);
    h_u64(&s, tk_world_steps_pending(w));
    h_u64(&s, tk_timer_ticked_last_frame(w));
    h_f64(&s, tk_timer_manager_time(w));
    tkd_sip_final(&s, sec[0]);
    /* counters */
    tkd_sip_init(&s, world_key);
    h_u64(&s, tks_next_id(d->sim));
    h_free_lists(&c);
    tkd_sip_final(&s, sec[1]);
    /* levels */
    tkd_sip_init(&s, world_key);
    h_u64(&s, tk_level_count(w));
    for (size_t i = 0; i < tk_level_count(w); i++)
        h_str(&s, tk_level_name(w, tk_level_at(w, i)));
    tkd_sip_final(&s, sec[2]);
    /* entities */
    tkd_sip_init(&s, world_key);
    h_u64(&s, tks_entity_count(d->sim));
    tks_entity_list(d->sim, TK_LEVEL_NONE, NULL, 0, UINT64_MAX, h_entity, &c);
    tkd_sip_final(&s, sec[3]);
    /* timers */
    tkd_sip_init(&s, world_key);
    h_timers(&c);
    tkd_sip_final(&s, sec[4]);
    /* tickables */
    tkd_sip_init(&s, world_key);
    h_tickables(&c);
    tkd_sip_final(&s, sec[5]);
    /* the whole: the sections' digests in order */
    tkd_sip_init(&s, world_key);
    h_str(&s, "tickd-world-hash/1");
    for (int i = 0; i < TKD_HASH_SECTIONS; i++)
        tkd_sip_update(&s, sec[i], TKD_HASH_BYTES);
    tkd_sip_final(&s, out);
}

void tkd_world_hash(tkd *d, uint8_t out[TKD_HASH_BYTES])
{
    tkd_world_hash_sections(d, out, NULL);
}
