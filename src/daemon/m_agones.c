/*
 * m_agones.c - agones.allocate and agones.reserve: the GameServer's
 * Allocate() and Reserve(seconds) of the Agones SDK, passed through to the
 * SDK server (agones.h) and answered when it answers.
 */
#include "methods_int.h"

/* 0 when Agones is on; otherwise the call is answered -32002. */
static int need_agones(req *r)
{
    if (r->d->agones)
        return 0;
    fail(r, -32002,
         "%s: Agones is off (AGONES_SDK_HTTP_PORT is not set and [agones] enabled is false)",
         r->method);
    return -1;
}

static void answer(req *r, int rc)
{
    if (rc == 0) {
        defer(r);
        return;
    }
    if (rc == -32003)
        fail(r, -32003, "%s: %d requests to the Agones SDK server wait already", r->method,
             TKD_AGONES_MAX_QUEUE);
    else
        fail(r, rc, "%s: cannot queue the request (out of memory)", r->method);
}

static void m_agones_allocate(req *r)
{
    if (need_agones(r) == 0)
        answer(r, tkd_agones_allocate(r->d->agones, r->call));
}

static void m_agones_reserve(req *r)
{
    if (need_agones(r) == 0)
        answer(r, tkd_agones_reserve(r->d->agones, r->call, arg(r, "seconds")->u));
}

/* ---- the table ------------------------------------------------------------------- */

static const tkd_field reserve_params[] = {
    P_INT("seconds", TKD_F_REQUIRED, 0, 2147483647,
          "how long the GameServer stays Reserved, then Ready again (0: until another "
          "state change)"),
    {0}};

const tkd_method tkd__agones_methods[] = {
    {"agones.allocate", m_agones_allocate, tkd__no_params, tkd__empty_result,
     "mark the GameServer Allocated (the Agones SDK's Allocate)",
     "Answered later, when the SDK server answers; -32002 when Agones is off or the SDK "
     "server fails."},
    {"agones.reserve", m_agones_reserve, reserve_params, tkd__empty_result,
     "mark the GameServer Reserved for seconds (the Agones SDK's Reserve)",
     "Answered later, when the SDK server answers; -32002 when Agones is off or the SDK "
     "server fails."},
    {0}};
