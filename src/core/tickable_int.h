/*
 * tickable_int.h - the tickables' entry points for the world (tickable.c).
 */
#ifndef TICKD_TICKABLE_INT_H
#define TICKD_TICKABLE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "world_int.h"

struct tk__tickables *tk__tickables_new(void);
/* Frees every tickable (calling free_ud) and the registry. */
void tk__tickables_free(tk_world_t *w, struct tk__tickables *t);
/* Tick the tickables once (after the timer manager), with the world's dt in
 * seconds; `paused` is the frame's pause flag.  Returns how many ticked. */
uint64_t tk__tickables_tick(tk_world_t *w, float dt, bool paused);

#endif
