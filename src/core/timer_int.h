/*
 * timer_int.h - the timer manager's entry points for the world (timer.c).
 */
#ifndef TICKD_TIMER_INT_H
#define TICKD_TIMER_INT_H

#include <stdint.h>

#include "world_int.h"

struct tk__timers *tk__timers_new(void);
/* Frees every timer (calling free_ud) and the manager. */
void tk__timers_free(tk_world_t *w, struct tk__timers *t);
/* The manager's pass: advance internal time by `dt_ns`, fire what is due,
 * activate pending timers.  Called once per unpaused frame after
 * post_physics.  Returns the number of callbacks run. */
uint64_t tk__timers_tick(tk_world_t *w, uint64_t dt_ns);

/* world.load: set the internal time while no timer exists (TK_ESTATE otherwise). */
int tk__timers_restore_time(tk_world_t *w, uint64_t internal_ns);

#endif
