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
#include <stdint.h>

#include "daemon.h"
#include "params.h"
#include "snapshot.h"

#define LIST_MAX         1000000
#define SPAWN_IDS_MAX    1000

typedef struct req {
    tkd *d;
    tkd_call *call; /* NULL: a timer action */
    const char *method;
    json_t *params; /* borrowed, may be NULL */
    bool answered;
    int code;       /* error code answered with, 0 = none (reqstats) */
} req;

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

#define KEYS(...)                                                                                  \
    do {                                                                                           \
        static const char *const k_[] = {__VA_ARGS__, NULL};                                       \
        if (!keys(r, k_))                                                                          \
            return;                                                                                \
    } while (0)
#define NOKEYS()                                                                                   \
    do {                                                                                           \
        static const char *const k_[] = {NULL};                                                    \
        if (!keys(r, k_))                                                                          \
            return;                                                                                \
    } while (0)

/* Run a reader; on error answer and return from the handler. */
#define READ(expr)                                                                                 \
    do {                                                                                           \
        if ((expr) < 0) {                                                                          \
            fail_p(r, &pe);                                                                        \
            return;                                                                                \
        }                                                                                          \
    } while (0)

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
#define keys(r, allowed)         tkd__keys(r, allowed)

/* Answer `result` (a new reference, taken). */
void ok(req *r, json_t *result);
/* Answer an error; a -32602 naming an unknown class gets a hint. */
void fail(req *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void fail_p(req *r, const tkd_perr *e);
void fail_tk(req *r, int tk_err, const char *msg);
/* The call is answered later (waiters, jobs). */
void defer(req *r);
/* Check params' names; on error answer and return false. */
bool keys(req *r, const char *const *allowed);

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

#define need_str(r, key, out)            tkd__need_str(r, key, out)
#define read_props(r, props, a, kv, n)   tkd__read_props(r, props, a, kv, n)
#define read_selector(r, sel)            tkd__read_selector(r, sel)
#define select_ids(d, sel, n)            tkd__select_ids(d, sel, n)

/* A required string param; false (answered) if absent or not a string. */
bool need_str(req *r, const char *key, const char **out);
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

/* ---- the handlers (the table is in methods.c) --------------------------------------------- */

void m_engine_info(req *r);
void m_engine_stats(req *r);
void m_engine_set_tick_rate(req *r);
void m_engine_sprint(req *r);
void m_engine_sprint_stop(req *r);
void m_engine_profile(req *r);
void m_engine_shutdown(req *r);
void m_world_status(req *r);
void m_world_pause(req *r);
void m_world_unpause(req *r);
void m_world_step(req *r);
void m_world_step_stop(req *r);
void m_world_set_time_dilation(req *r);
void m_world_trace(req *r);
void m_world_save(req *r);
void m_world_load(req *r);
void m_level_list(req *r);
void m_level_add(req *r);
void m_level_remove(req *r);
void m_entity_spawn(req *r);
void m_entity_destroy(req *r);
void m_entity_get(req *r);
void m_entity_list(req *r);
void m_entity_set_props(req *r);
void m_tick_set(req *r);
void m_tick_add_prerequisite(req *r);
void m_tick_remove_prerequisite(req *r);
void m_tick_dump(req *r);
void m_timer_set(req *r);
void m_timer_set_for_next_tick(req *r);
void m_timer_clear(req *r);
void m_timer_pause(req *r);
void m_timer_unpause(req *r);
void m_timer_get(req *r);
void m_timer_list(req *r);
void m_tickable_add(req *r);
void m_tickable_set(req *r);
void m_tickable_remove(req *r);
void m_tickable_get(req *r);
void m_tickable_list(req *r);
void m_events_subscribe(req *r);
void m_events_unsubscribe(req *r);

#endif
