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

/* ---- declarative params ----------------------------------------------------------
 *
 * A method's params, the objects nested in them and its result are described
 * by a table of tkd_field rows ending with a row whose name is NULL.  The
 * validator (tkd_p_check) and the OpenRPC document (rpc.discover, discover.c)
 * both read these tables, so what is documented is what is accepted.
 */
typedef enum {
    TKD_T_INT,     /* an integer in [lo, hi] (a real without fraction counts);
                      TKD_T_ARR: hi is the most items (0: any number)        */
    TKD_T_NUM,     /* a finite number in [min, max] (infinite: unbounded)   */
    TKD_T_BOOL,
    TKD_T_STR,     /* a string without NUL; with `enums`, one of them       */
    TKD_T_OBJ,     /* an object: with `fields`, of those keys only          */
    TKD_T_ARR,     /* an array whose elements are each `items`              */
    TKD_T_ANY,     /* with `items`: one of those alternatives (the first of
                      a fitting JSON type); without: any value              */
    TKD_T_NULL,    /* results: null                                         */
    TKD_T_INCLUDE, /* not a field: the rows of `fields` at this level       */
} tkd_type;

#define TKD_F_REQUIRED 0x1u /* params: must be given; results: always there */
#define TKD_F_NULLABLE 0x2u /* results: may be null                          */
#define TKD_F_DEFAULT  0x4u /* absent, the value is `def` / `def_str`        */
#define TKD_F_EXCL_MIN 0x8u /* TKD_T_NUM: greater than min, not equal        */
#define TKD_F_KEEP     0x10u /* TKD_T_INCLUDE: absent rows keep the current
                                value (their defaults do not apply)         */

typedef struct tkd_field {
    const char *name;
    tkd_type type;
    unsigned flags;                  /* TKD_F_*                                */
    uint64_t lo, hi;                 /* TKD_T_INT range (hi UINT64_MAX: none);
                                        TKD_T_ARR: hi = most items (0: any)   */
    double min, max;                 /* TKD_T_NUM range                        */
    const char *const *enums;        /* TKD_T_STR: the values, NULL-ended      */
    const struct tkd_field *fields;  /* TKD_T_OBJ, TKD_T_INCLUDE: a table      */
    const struct tkd_field *items;   /* TKD_T_ARR: one row for each element;
                                        TKD_T_ANY: a table of alternatives    */
    double def;                      /* TKD_F_DEFAULT: INT, NUM, BOOL (0, 1)   */
    const char *def_str;             /* TKD_F_DEFAULT: STR                     */
    const char *ref;                 /* TKD_T_OBJ: documented once, under this
                                        name in components/schemas            */
    const char *desc;                /* one sentence for the document          */
} tkd_field;

/* The most rows a table may have, TKD_T_INCLUDE rows expanded. */
#define TKD_MAX_FIELDS 24

/* A param read by tkd_p_check (absent: `given` false, the default if any). */
typedef struct tkd_val {
    bool given;
    uint64_t u;        /* TKD_T_INT                                 */
    double num;        /* TKD_T_NUM, and TKD_T_INT as a double      */
    bool b;            /* TKD_T_BOOL                                */
    const char *str;   /* TKD_T_STR (borrowed from the request)     */
    size_t ix;         /* TKD_T_STR with enums: the value's index   */
    json_t *json;      /* the value as given (borrowed), or NULL    */
} tkd_val;

/*
 * Check `obj` (an object or NULL) against `fields`: with `strict`, a key
 * that is no row is an error ("<path>.<key>: unknown parameter"); then each
 * row in order (required, type, range, enum, nested objects and arrays).
 * `vals` (may be NULL) receives one tkd_val per row, TKD_T_INCLUDE rows
 * expanded, in table order.  0, or -1 with `e` set (-32602).
 */
int tkd_p_check(const json_t *obj, const tkd_field *fields, const char *path, bool strict,
                tkd_val *vals, tkd_perr *e);
/* The value of the row named `name` among `vals` read with `fields`
 * (TK_ASSERT that there is one). */
const tkd_val *tkd_p_val(const tkd_field *fields, const tkd_val *vals, const char *name);

/* Tables shared by several methods (params.c). */
extern const tkd_field tkd_tick_spec_fields[]; /* the tick spec ("tick_spec")      */
extern const tkd_field tkd_spawn_fields[];     /* entity.spawn params ("spawn")    */
extern const tkd_field tkd_target_fields[];    /* {id, component?} ("target")      */
extern const tkd_field tkd_tick_report_fields[]; /* entity.get's "tick" (result)  */
extern const char *const tkd_group_names[];    /* the tick groups a spec may name  */

/* ---- rendering ---------------------------------------------------------------- */

json_t *tkd_j_spawn(const tks_spawn_req *r);
json_t *tkd_j_props(const tks_sim *s, const tks_entity *ent, int comp);
json_t *tkd_j_value(const tks_prop_desc *d, const tks_value *v);
/* The tick spec as an object. */
json_t *tkd_j_tick_spec(const tk_tick_spec *spec);
/* A tick report: the spec plus state, groups and counters. */
json_t *tkd_j_tick_report(tk_world_t *w, tk_tick_id id, const tk_tick_spec *unregistered);

#endif
