/*
 * clock.c - the monotonic clock and the precise sleep of tickd/clock.h.
 *
 * tk_clock_sleep_until sleeps with clock_nanosleep(TIMER_ABSTIME) until
 * `spin_ns` before the deadline, then spins on the clock for the rest.  With
 * the thread's timer slack lowered (prctl PR_SET_TIMERSLACK, done by the
 * engine) the kernel wakes us within tens of microseconds, so a short spin
 * hits the deadline without burning an idle core.
 */
#include <errno.h>
#include <math.h>
#include <time.h>

#include "tickd/clock.h"

uint64_t tk_clock_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * TK_NS_PER_S + (uint64_t)ts.tv_nsec;
}

uint64_t tk_s_to_ns(double s)
{
    if (!(s > 0))
        return 0;
    if (s >= 9.2e9)
        return UINT64_MAX / 2;
    return (uint64_t)llround(s * 1e9);
}

void tk_clock_sleep_until(uint64_t deadline_ns, uint64_t spin_ns)
{
    uint64_t now = tk_clock_now_ns();
    if (now >= deadline_ns)
        return;
    if (deadline_ns - now > spin_ns) {
        uint64_t wake = deadline_ns - spin_ns;
        struct timespec ts = {.tv_sec = (time_t)(wake / TK_NS_PER_S),
                              .tv_nsec = (long)(wake % TK_NS_PER_S)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    while (tk_clock_now_ns() < deadline_ns) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}
