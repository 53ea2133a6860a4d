/*
 * tickd/tickd.h - libtickd, everything.
 *
 * libtickd is Unreal Engine's tick machinery as a C library: an engine loop
 * with max-tick-rate pacing (engine.h), a world of levels with Unreal's time
 * rules (world.h), tick functions in tick groups with prerequisites and
 * intervals (tick.h), a timer manager (timer.h), tickable objects
 * (tickable.h) and a core ticker (ticker.h).  It depends on libc and libm only.
 */
#ifndef TICKD_TICKD_H
#define TICKD_TICKD_H

#define TICKD_VERSION "0.1.0"
#define TICKD_VERSION_MAJOR 0
#define TICKD_VERSION_MINOR 1
#define TICKD_VERSION_PATCH 0

#include "alloc.h"
#include "clock.h"
#include "engine.h"
#include "error.h"
#include "log.h"
#include "tick.h"
#include "tickable.h"
#include "ticker.h"
#include "timer.h"
#include "world.h"

#endif
