/*
 * m_events.c - events.subscribe and events.unsubscribe.
 */

#include "methods_int.h"

/* ---- events ------------------------------------------------------------------------------ */

static int read_topics(req *r, const char *key, unsigned *mask, bool required)
{
    json_t *a = json_object_get(r->params, key);
    if (!a) {
        if (required) {
            fail(r, -32602, "%s: required", key);
            return -1;
        }
        *mask = TKD_TOPIC_ALL;
        return 0;
    }
    if (!json_is_array(a)) {
        fail(r, -32602, "%s: must be an array of topic names", key);
        return -1;
    }
    *mask = 0;
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *v = json_array_get(a, i);
        tkd_topic t;
        if (!json_is_string(v) || tkd_topic_parse(json_string_value(v), &t) != 0) {
            fail(r, -32602, "%s[%zu]: not a topic (frame, stats, overrun, slow_tick, log)", key, i);
            return -1;
        }
        *mask |= TKD_TOPIC_BIT(t);
    }
    return 1;
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
    KEYS("topics");
    unsigned mask;
    if (read_topics(r, "topics", &mask, subscribe) < 0)
        return;
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

void m_events_subscribe(req *r) { events_change(r, true); }
void m_events_unsubscribe(req *r) { events_change(r, false); }
