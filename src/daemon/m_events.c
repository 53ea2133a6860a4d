/*
 * m_events.c - events.subscribe and events.unsubscribe.
 */

#include "methods_int.h"

/* ---- events ------------------------------------------------------------------------------ */

/* The topics param (checked by the table): its mask, or every topic if absent. */
static unsigned read_topics(req *r)
{
    const tkd_val *v = arg(r, "topics");
    if (!v->given)
        return TKD_TOPIC_ALL;
    unsigned mask = 0;
    for (size_t i = 0; i < json_array_size(v->json); i++) {
        tkd_topic t;
        if (tkd_topic_parse(json_string_value(json_array_get(v->json, i)), &t) == 0)
            mask |= TKD_TOPIC_BIT(t);
    }
    return mask;
}

static json_t *topics_json(unsigned mask)
{
    json_t *a = json_array();
    for (unsigned t = 0; t < TKD_TOPIC_COUNT; t++)
        if (mask & TKD_TOPIC_BIT(t))
            json_array_append_new(a, json_string(tkd_topic_name((tkd_topic)t)));
    return a;
}

/* events.subscribe / events.unsubscribe: the connection's topics after the
 * change (and, subscribing, the events it has lost so far). */
static void events_change(req *r, bool subscribe)
{
    unsigned mask = read_topics(r);
    tkd_client *c = r->call ? tkd_call_client(r->call) : NULL;
    if (!c) {
        fail(r, -32002, "events need a connection to be sent on");
        return;
    }
    unsigned now = subscribe ? tkd_server_subscribe(c, mask) : tkd_server_unsubscribe(c, mask);
    json_t *o = json_object();
    json_object_set_new(o, "topics", topics_json(now));
    if (subscribe)
        json_object_set_new(o, "dropped", jid(tkd_client_dropped(c)));
    ok(r, o);
}

static void m_events_subscribe(req *r) { events_change(r, true); }
static void m_events_unsubscribe(req *r) { events_change(r, false); }

/* ---- the table ------------------------------------------------------------------- */

/* The topics, in tkd_topic order (server.c names them). */
static const char *const topic_names[] = {"frame", "stats",        "overrun", "slow_tick",
                                          "log",   "slow_request", "agones",  NULL};
static const tkd_field topic_item = {.name = "topic", .type = TKD_T_STR, .enums = topic_names};

static const tkd_field subscribe_params[] = {
    {.name = "topics", .type = TKD_T_ARR, .flags = TKD_F_REQUIRED, .items = &topic_item,
     .desc = "topics to receive as event.<topic> notifications"},
    {0}};
static const tkd_field unsubscribe_params[] = {
    {.name = "topics", .type = TKD_T_ARR, .items = &topic_item,
     .desc = "topics to stop (absent: all)"},
    {0}};
static const tkd_field subscribe_result[] = {
    R_ARR("topics", "the connection's topics now"),
    R_INT("dropped", "events this connection has lost (slow reader)"), {0}};
static const tkd_field unsubscribe_result[] = {R_ARR("topics", "the connection's topics now"),
                                               {0}};

const tkd_method tkd__events_methods[] = {
    {"events.subscribe", m_events_subscribe, subscribe_params, subscribe_result,
     "receive event notifications on this connection", NULL},
    {"events.unsubscribe", m_events_unsubscribe, unsubscribe_params, unsubscribe_result,
     "stop receiving notifications", NULL},
    {0}};
