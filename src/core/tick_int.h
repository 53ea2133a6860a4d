/*
 * tick_int.h - the tick scheduler's entry points for the world (tick.c).
 * The world calls them in Unreal's frame order (see engine.h).
 */
#ifndef TICKD_TICK_INT_H
#define TICKD_TICK_INT_H

#include "world_int.h"

struct tk__ticks *tk__ticks_new(void);
void tk__ticks_free(struct tk__ticks *t);

/* FTickTaskManager::StartFrame: schedule upkeep, due interval functions,
 * functions whose group depends on this frame's prerequisites. */
void tk__ticks_start_frame(tk_world_t *w);
/* RunTickGroup(g): run the group; for blocking groups (all but
 * during_physics) queue the newly spawned afterwards, and after
 * last_demotable drain them (up to 101 rounds). */
void tk__ticks_run_group(tk_world_t *w, tk_group g);
/* FTickTaskManager::EndFrame: discard what was registered too late. */
void tk__ticks_end_frame(tk_world_t *w);
/* RunPauseFrame: only even_when_paused functions. */
void tk__ticks_pause_frame(tk_world_t *w);
/* The world's clocks were restored (nothing registered): restart the wheels. */
void tk__ticks_reset_clocks(tk_world_t *w);
/* Unregister every tick function of a level (level removal). */
void tk__ticks_remove_level(tk_world_t *w, tk_level_id level);

/* The profiler was installed or removed: reset the sampling state. */
void tk__ticks_profiler_changed(tk_world_t *w);
/* Move the trace and slow-tick hooks of `from` to `to` (tk_engine_swap_world). */
void tk__ticks_move_hooks(tk_world_t *to, tk_world_t *from);

#endif
