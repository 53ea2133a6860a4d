/*
 * params.h - reading and checking JSON-RPC params, and the conversions
 * between JSON and the entity layer's plain structures (spawn requests,
 * props, tick specs).
 *
 * Every reader names the parameter at fault in its error ("components[1].
 * tick.group: ..."), and unknown names are errors, so a typo never passes.
 * Readers return 1 (present and valid), 0 (absent) or -1 (invalid: `err`
 * holds the sentence and `*code` the JSON-RPC code).
 */
#ifndef TICKD_PARAMS_H
#define TICKD_PARAMS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim/sim.h"
#include "tickd/tickd.h"

#define TKD_ERR_MAX 512

typedef struct tkd_perr {
    int code;                   /* JSON-RPC error code */
    char msg[TKD_ERR_MAX];
} tkd_perr;

/* Map a TK_E* code to a JSON-RPC code. */
int tkd_code_from_tk(int tk_err);

/* Allocation arena for conversions: everything is freed at once. */
typedef struct tkd_arena {
    void **p;
    size_t n, cap;
} tkd_arena;

void *tkd_arena_alloc(tkd_arena *a, size_t n);
char *tkd_arena_strdup(tkd_arena *a, const char *s);
void tkd_arena_free(tkd_arena *a);

/* 0 or -1: every key of `obj` must be in the NULL-terminated `allowed`. */
int tkd_p_keys(const json_t *obj, const char *path, const char *const *allowed, tkd_perr *e);

int tkd_p_u64(const json_t *obj, const char *key, const char *path, uint64_t min, uint64_t max,
              uint64_t *out, tkd_perr *e);
int tkd_p_num(const json_t *obj, const char *key, const char *path, double min, double max,
              double *out, tkd_perr *e);
int tkd_p_bool(const json_t *obj, const char *key, const char *path, bool *out, tkd_perr *e);
int tkd_p_str(const json_t *obj, const char *key, const char *path, const char **out,
              tkd_perr *e);
int tkd_p_obj(const json_t *obj, const char *key, const char *path, json_t **out, tkd_perr *e);
int tkd_p_arr(const json_t *obj, const char *key, const char *path, json_t **out, tkd_perr *e);
/* An array of entity ids (positive integers). */
int tkd_p_ids(const json_t *obj, const char *key, const char *path, tkd_arena *a,
              tks_id **out, size_t *n, tkd_perr *e);

/* Set `e` (for callers that detect errors themselves); returns -1. */
int tkd_perr_set(tkd_perr *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Read the tick spec fields of `obj` over `spec` (which holds the defaults or
 * the current spec).  With `only_spec`, any other key is an error; otherwise
 * keys that are not tick spec fields are ignored (the caller checks them).
 */
int tkd_p_tick_spec(const json_t *obj, const char *path, bool only_spec, tk_tick_spec *spec,
                    tkd_perr *e);
extern const char *const tkd_tick_spec_keys[];

/* JSON props object -> key/value array (types are checked by the class). */
int tkd_p_props(const json_t *obj, const char *path, tkd_arena *a, int depth,
                tks_prop_kv **out, size_t *n, tkd_perr *e);

/* entity.spawn params -> request. */
int tkd_p_spawn(const json_t *params, const char *path, tkd_arena *a, int depth,
                tks_spawn_req *out, tkd_perr *e);

/* ---- rendering ---------------------------------------------------------------- */

json_t *tkd_j_spawn(const tks_spawn_req *r);
json_t *tkd_j_props(const tks_sim *s, const tks_entity *ent, int comp);
json_t *tkd_j_value(const tks_prop_desc *d, const tks_value *v);
/* The tick spec as an object. */
json_t *tkd_j_tick_spec(const tk_tick_spec *spec);
/* A tick report: the spec plus state, groups and counters. */
json_t *tkd_j_tick_report(tk_world_t *w, tk_tick_id id, const tk_tick_spec *unregistered);

#endif
