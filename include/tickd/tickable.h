/*
 * tickd/tickable.h - tickable objects (Unreal's FTickableGameObject, UE-SEMANTICS 5).
 *
 * A tickable is ticked once per frame, after the timer manager and before
 * post_update_work, with the world's dilated dt:
 *   - type ALWAYS ticks every frame, CONDITIONAL while its `enabled` flag is
 *     true (IsTickable()), NEVER is never ticked (it is kept, reported, and can
 *     be switched to another type);
 *   - while the world is paused only tickables with `when_paused` tick;
 *   - a tickable added or removed while the tickables are being ticked takes
 *     effect from the next pass: the current iteration is not disturbed (a
 *     removed one that has not ticked yet in this pass does not tick, and
 *     its free_ud is called after the pass).  A tickable's callback may add,
 *     remove or change any tickable, itself included.
 * Tickables are ticked in the order they were added.  Ids are slot index +
 * generation: an id of a removed tickable is TK_ENOENT, even once its slot
 * is reused.  last_frame is the frame number during which it last ticked
 * (tk_world_frame() at that time; the first frame is frame 0).
 */
#ifndef TICKD_TICKABLE_H
#define TICKD_TICKABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "world.h"

#ifdef __cplusplus
extern "C" {
#endif

/* index (low 32 bits) + generation (above: 1 .. 2^21-1, wrapping, so an id
 * stays below 2^53, exact in a JSON double); 0 is never valid. */
typedef uint64_t tk_tickable_id;
#define TK_TICKABLE_NONE ((tk_tickable_id)0)

typedef enum tk_tickable_type {
    TK_TICKABLE_ALWAYS = 0,
    TK_TICKABLE_CONDITIONAL = 1,
    TK_TICKABLE_NEVER = 2
} tk_tickable_type;

const char *tk_tickable_type_name(tk_tickable_type t); /* "always", ... */
int tk_tickable_type_parse(const char *s, tk_tickable_type *out);

typedef void (*tk_tickable_fn)(void *ud, float dt, tk_world_t *w);

typedef struct tk_tickable_desc {
    tk_tickable_type type;
    bool enabled;           /* IsTickable() for CONDITIONAL                  */
    bool when_paused;       /* IsTickableWhenPaused()                        */
    tk_tickable_fn fn;      /* required                                      */
    void *ud;
    void (*free_ud)(void *ud); /* called when the tickable is removed        */
} tk_tickable_desc;

int tk_tickable_add(tk_world_t *w, const tk_tickable_desc *desc, tk_tickable_id *out);
int tk_tickable_remove(tk_world_t *w, tk_tickable_id id);

/* Snapshot restore: add under a given (free) id with its counters. */
int tk_tickable_restore(tk_world_t *w, const tk_tickable_desc *desc, tk_tickable_id id,
                        uint64_t ticks, uint64_t last_frame, double accum_dt);
int tk_tickable_set_enabled(tk_world_t *w, tk_tickable_id id, bool enabled);
int tk_tickable_set_when_paused(tk_world_t *w, tk_tickable_id id, bool when_paused);
int tk_tickable_set_type(tk_world_t *w, tk_tickable_id id, tk_tickable_type type);

typedef struct tk_tickable_info {
    tk_tickable_id id;
    tk_tickable_type type;
    bool enabled, when_paused;
    uint64_t ticks;
    uint64_t last_frame;    /* 0 if never ticked */
    double accum_dt;        /* s */
    void *ud;
} tk_tickable_info;

int tk_tickable_get(const tk_world_t *w, tk_tickable_id id, tk_tickable_info *out);
size_t tk_tickable_count(const tk_world_t *w);
/* Iterate in the order they were added: *cursor = 0 to start; it then holds
 * the id last returned.  Tickables added between calls are reached; if the
 * one last returned is removed between two calls, the iteration ends. */
bool tk_tickable_next(const tk_world_t *w, uint64_t *cursor, tk_tickable_id *out);

/*
 * Snapshots that restore exactly (tickd/timer.h has the same for timers):
 * the ids the next tk_tickable_add calls will get from removed tickables'
 * slots, in that order (after them, new slots in ascending order with
 * generation 1); up to `cap` into `out`, returns how many there are.
 * tk_tickable_restore_free puts them back once every tickable is restored:
 * each id's slot must be free and listed once (TK_EINVAL, nothing
 * changes); free slots not listed follow in ascending order as never used,
 * and slots past the last live or listed one are forgotten, so that a world
 * restored after a clear gives the ids a fresh one would.
 */
size_t tk_tickable_free_ids(const tk_world_t *w, tk_tickable_id *out, size_t cap);
int tk_tickable_restore_free(tk_world_t *w, const tk_tickable_id *ids, size_t n);

#ifdef __cplusplus
}
#endif
#endif
