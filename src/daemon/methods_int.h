/*
 * methods_int.h - what the method files share (methods.c and m_<area>.c):
 * the request being answered, the answering helpers, the waiters of
 * answered-later calls, the requests done in slices (jobs), the selectors
 * and the reply-size budget.  Private to src/daemon; daemon.h is the public
 * face (tkd_exec, the method names).
 *
 * The helpers keep the short names the method files call them by (ok, fail,
 * keys ...); the symbols carry the tkd__ prefix (the macros below), since
 * the daemon library links into the tests and fuzzers.
 */
#ifndef TICKD_METHODS_INT_H
#define TICKD_METHODS_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include "daemon.h"
#include "params.h"
#include "snapshot.h"

#define LIST_MAX         1000000
#define SPAWN_IDS_MAX    1000

typedef struct tkd_method tkd_method;

typedef struct req {
    tkd *d;
    tkd_call *call; /* NULL: a timer action, or a recorded request replayed */
    bool client;    /* a client's request (or a client's, replayed): may be
                       done in slices; false: a timer action */
    bool rec;       /* a client's change the journal records (tkd_exec)  */
    bool recorded;  /* the journal holds it (recorded once)              */
    const char *method;
    json_t *params; /* borrowed, may be NULL */
    bool answered;
    int code;       /* error code answered with, 0 = none (reqstats) */
    const tkd_method *m;       /* its row of the method table             */
    tkd_val v[TKD_MAX_FIELDS]; /* its params, read by m->params (arg())   */
} req;

/*
 * A row of the method table.  Each area's file holds the rows of its
 * methods (tkd__<area>_methods, ending with a row whose name is NULL), next
 * to the handlers: `params` is checked before the handler runs (tkd_exec:
 * unknown names, required, types, ranges, enums), and it and `result` are
 * what rpc.discover documents.
 */
struct tkd_method {
    const char *name;
    void (*fn)(req *r);
    const tkd_field *params;  /* the params, in order                      */
    const tkd_field *result;  /* the members of the result object          */
    const char *summary;      /* one line                                  */
    const char *desc;         /* more, or NULL                             */
};

/* The value of param `name` of the request (checked, or its default). */
#define arg(r, name) tkd_p_val((r)->m->params, (r)->v, name)

/* No params. */
extern const tkd_field tkd__no_params[];
/* The params of a page of a listing: offset, limit (list_reply). */
extern const tkd_field tkd__page_params[];
/* The selectors first, count, level, class (read_selector, m_entity.c). */
extern const tkd_field tkd__selector_fields[];
/* An empty result object. */
extern const tkd_field tkd__empty_result[];

/* The areas' rows (m_<area>.c and discover.c), in the order engine.info
 * lists them. */
extern const tkd_method tkd__engine_methods[], tkd__world_methods[], tkd__level_methods[],
    tkd__entity_methods[], tkd__tick_methods[], tkd__timer_methods[], tkd__tickable_methods[],
    tkd__events_methods[], tkd__agones_methods[], tkd__rpc_methods[];
/* Every row, in that order; *n gets how many. */
const tkd_method *const *tkd__methods(size_t *n);

/* discover.c: the OpenRPC document (new reference); the cached text freed. */
json_t *tkd_discover_json(void);
void tkd__discover_free(void);

/* Result rows, shortly: R_<type>(name, description) is a member always
 * there; O_<type> one that may be absent. */
#define R_(n, t, f, d) {.name = n, .type = t, .flags = f, .hi = UINT64_MAX, .min = -HUGE_VAL, \
                        .max = HUGE_VAL, .desc = d}
#define R_INT(n, d)  R_(n, TKD_T_INT, TKD_F_REQUIRED, d)
#define R_NUM(n, d)  R_(n, TKD_T_NUM, TKD_F_REQUIRED, d)
#define R_BOOL(n, d) R_(n, TKD_T_BOOL, TKD_F_REQUIRED, d)
#define R_STR(n, d)  R_(n, TKD_T_STR, TKD_F_REQUIRED, d)
#define R_OBJ(n, d)  R_(n, TKD_T_OBJ, TKD_F_REQUIRED, d)
#define R_ARR(n, d)  R_(n, TKD_T_ARR, TKD_F_REQUIRED, d)
#define O_INT(n, d)  R_(n, TKD_T_INT, 0, d)
#define O_NUM(n, d)  R_(n, TKD_T_NUM, 0, d)
#define O_BOOL(n, d) R_(n, TKD_T_BOOL, 0, d)
#define O_STR(n, d)  R_(n, TKD_T_STR, 0, d)
#define O_OBJ(n, d)  R_(n, TKD_T_OBJ, 0, d)
#define O_ARR(n, d)  R_(n, TKD_T_ARR, 0, d)
/* Param rows: an integer in [lo, hi], a number in [min, max]. */
#define P_INT(n, f, l, h, d) {.name = n, .type = TKD_T_INT, .flags = f, .lo = l, .hi = h, .desc = d}
#define P_NUM(n, f, l, h, d) {.name = n, .type = TKD_T_NUM, .flags = f, .min = l, .max = h, .desc = d}
#define P_STR(n, f, d)       {.name = n, .type = TKD_T_STR, .flags = f, .desc = d}
#define P_BOOL(n, f, d)      {.name = n, .type = TKD_T_BOOL, .flags = f, .desc = d}
#define P_OBJ(n, f, d)       {.name = n, .type = TKD_T_OBJ, .flags = f, .desc = d}

typedef enum { W_STEP, W_SPRINT } waiter_kind;

struct tkd_waiter {
    tkd_waiter *next;
    waiter_kind kind;
    tkd_call *call;        /* NULL: nobody to answer */
    uint64_t steps_before; /* W_STEP: done when pending steps drop to this */
    uint64_t frames_left;  /* W_SPRINT */
    uint64_t frames;       /* asked for */
    uint64_t start_ns;
    tk_frame_stats *fs;
};

/*
 * Big requests in slices.  A client's spawn that registers more than
 * SLICE_FUNCS tick functions, a destroy of more than SLICE_FUNCS entities
 * and the removal of a level holding more are validated whole first, then
 * carried out STEP entities at a time at frame boundaries, within the
 * request budget and the idle time between frames (Unreal's level
 * streaming adds and removes a level's actors over frames under a time
 * limit the same way).  The call answers when the last slice is done, with
 * the result a request in one piece gives; the client's later requests wait
 * for it (its order is kept), other clients go on.
 *
 * A spawn reserves its ids first (consecutive, counted against
 * max_entities).  If one of its slices fails (its level or a prerequisite
 * was removed meanwhile), the entities spawned so far are destroyed and
 * the call answers the error: all or nothing, as a spawn in one piece.  A
 * destroy skips entities that others destroyed meanwhile and answers how
 * many it destroyed.  Jobs run in the order they were asked; timer actions
 * are never sliced (they run inside the frame, whole).
 */
#define SLICE_FUNCS 8192
#define STEP 512

typedef enum { JOB_SPAWN, JOB_DESTROY, JOB_LEVEL_REMOVE, JOB_LOAD } job_kind;

struct tkd_job {
    tkd_job *next;
    job_kind kind;
    tkd_call *call;         /* completed once when the job ends          */
    uint64_t done;          /* entities spawned / destroyed so far        */
    /* JOB_SPAWN */
    tks_spawn_req *req;     /* deep copy; count = the whole spawn        */
    tks_share *share;       /* its templates, shared by all its slices   */
    tks_id first;
    /* JOB_DESTROY: ids[next_ix..]; JOB_LEVEL_REMOVE: next_ix = next id to look at */
    tks_id *ids;
    size_t n_ids, next_ix;
    /* JOB_LEVEL_REMOVE */
    char *level;
    /* JOB_LOAD: the file read aside (snapshot.h) */
    tkd_snapload *load;
};

/*
 * Selectors (entity.destroy, tick.set): {"first","count"} (the ids of a
 * spawn's answer), "level", "class", alone or combined; they select the live
 * entities that match all of those given, in id order.  Ids given with
 * "ids" must each exist; a selector that matches nothing is not an error.
 */
typedef struct selector {
    bool range;
    uint64_t first, count;
    tk_level_id level;     /* TK_LEVEL_NONE: any */
    const tks_class *cls;  /* NULL: any          */
} selector;

/* ---- answering (methods.c) ------------------------------------------------------ */

#define ok(r, result)            tkd__ok(r, result)
#define fail(...)                tkd__fail(__VA_ARGS__)
#define fail_p(r, e)             tkd__fail_p(r, e)
#define fail_tk(r, tk_err, msg)  tkd__fail_tk(r, tk_err, msg)
#define defer(r)                 tkd__defer(r)

/* Answer `result` (a new reference, taken). */
void ok(req *r, json_t *result);
/* Answer an error; a -32602 naming an unknown class gets a hint. */
void fail(req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fail_p(req *r, const tkd_perr *e);
void fail_tk(req *r, int tk_err, const char *msg);
/* The call is answered later (waiters, jobs). */
void defer(req *r);

static inline json_t *jid(uint64_t v) { return json_integer((json_int_t)v); }

/* ---- replies of bounded size (methods.c) ------------------------------------------- */

#define out_budget(r)                   tkd__out_budget(r)
#define list_deadline(r)                tkd__list_deadline(r)
#define page_cut(o, next_offset)        tkd__page_cut(o, next_offset)
#define fits(used, budget, item)        tkd__fits(used, budget, item)
#define list_reply(r, key, next, item, total) tkd__list_reply(r, key, next, item, total)

size_t out_budget(req *r);
uint64_t list_deadline(req *r);
void page_cut(json_t *o, uint64_t next_offset);
bool fits(size_t *used, size_t budget, const json_t *item);
void list_reply(req *r, const char *key, bool (*next)(const tk_world_t *, uint64_t *, uint64_t *),
                json_t *(*item)(tkd *, uint64_t), uint64_t total);

/* ---- params shared by several areas --------------------------------------------------- */

#define read_props(r, props, a, kv, n)   tkd__read_props(r, props, a, kv, n)
#define read_selector(r, sel)            tkd__read_selector(r, sel)
#define select_ids(d, sel, n)            tkd__select_ids(d, sel, n)

/* m_entity.c */
bool read_props(req *r, const json_t *props, tkd_arena *a, tks_prop_kv **kv, size_t *n);
int read_selector(req *r, selector *sel);
tks_id *select_ids(tkd *d, const selector *sel, size_t *n);

/* ---- waiters and jobs (methods.c) -------------------------------------------------------- */

#define add_waiter(d, w)          tkd__add_waiter(d, w)
#define stop_waiters(d, kind)     tkd__stop_waiters(d, kind)
#define job_add(r, j)             tkd__job_add(r, j)
#define spawn_result(first, n)    tkd__spawn_result(first, n)
#define destroyed_result(n)       tkd__destroyed_result(n)

void add_waiter(tkd *d, tkd_waiter *w);
/* Answer and drop every waiter of `kind` (stopped); how many there were. */
size_t stop_waiters(tkd *d, waiter_kind kind);
/* Queue a job (the call is answered when it ends). */
void job_add(req *r, tkd_job *j);
/* {"ids"} or, past SPAWN_IDS_MAX, {"first", "count"}. */
json_t *spawn_result(tks_id first, uint64_t count);
json_t *destroyed_result(uint64_t n);

/* ---- results shared by several areas ------------------------------------------------------ */

#define rss_bytes       tkd__rss_bytes
#define mspt_json(m)    tkd__mspt_json(m)
#define prereq_ids(d, id) tkd__prereq_ids(d, id)

/* m_engine.c */
uint64_t rss_bytes(void);
json_t *mspt_json(const tk_mspt *m);
/* m_tick.c: a tick function's prerequisites as entity ids or {id, component}. */
json_t *prereq_ids(tkd *d, tk_tick_id id);

#endif
