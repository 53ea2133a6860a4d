/*
 * reqstats.c - per-method request statistics (reqstats.h).
 */
#include <stdio.h>

#include "reqstats.h"

static const int codes[TKD_REQSTATS_NCODES] = {
    -32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, 0,
};

size_t tkd_reqstats_code_index(int code)
{
    for (size_t i = 0; i + 1 < TKD_REQSTATS_NCODES; i++)
        if (codes[i] == code)
            return i;
    return TKD_REQSTATS_NCODES - 1;
}

int tkd_reqstats_code_at(size_t index)
{
    return index < TKD_REQSTATS_NCODES ? codes[index] : 0;
}

void tkd_reqstats_record(tkd_reqstats *rs, size_t method, int code, uint64_t ns)
{
    tkd_reqstat *s = &rs->m[method < TKD_REQSTATS_UNKNOWN ? method : TKD_REQSTATS_UNKNOWN];
    s->calls++;
    s->ns += ns;
    if (ns > s->max_ns)
        s->max_ns = ns;
    if (code != 0) {
        s->errors++;
        s->by_code[tkd_reqstats_code_index(code)]++;
    }
}

void tkd_reqstats_slow(tkd_reqstats *rs, size_t method)
{
    rs->m[method < TKD_REQSTATS_MAX_METHODS ? method : TKD_REQSTATS_UNKNOWN].slow++;
}

const tkd_reqstat *tkd_reqstats_get(const tkd_reqstats *rs, size_t method)
{
    return &rs->m[method < TKD_REQSTATS_UNKNOWN ? method : TKD_REQSTATS_UNKNOWN];
}

void tkd_reqstats_foreach(const tkd_reqstats *rs, const char *const *names,
                          tkd_reqstats_visit_fn fn, void *ud)
{
    size_t i = 0;
    for (; names[i] && i < TKD_REQSTATS_UNKNOWN; i++)
        if (rs->m[i].calls)
            fn(ud, names[i], &rs->m[i]);
    if (rs->m[TKD_REQSTATS_UNKNOWN].calls)
        fn(ud, TKD_REQSTATS_UNKNOWN_NAME, &rs->m[TKD_REQSTATS_UNKNOWN]);
}

static void put_json(void *ud, const char *name, const tkd_reqstat *st)
{
    json_t *o = json_object();
    json_object_set_new(o, "calls", json_integer((json_int_t)st->calls));
    json_object_set_new(o, "errors", json_integer((json_int_t)st->errors));
    json_object_set_new(o, "ms", json_real((double)st->ns / 1e6));
    json_object_set_new(o, "max_ms", json_real((double)st->max_ns / 1e6));
    if (st->slow)
        json_object_set_new(o, "slow", json_integer((json_int_t)st->slow));
    if (st->errors) {
        json_t *c = json_object();
        for (size_t i = 0; i < TKD_REQSTATS_NCODES; i++) {
            if (!st->by_code[i])
                continue;
            char key[16];
            if (codes[i])
                snprintf(key, sizeof key, "%d", codes[i]);
            else
                snprintf(key, sizeof key, "other");
            json_object_set_new(c, key, json_integer((json_int_t)st->by_code[i]));
        }
        json_object_set_new(o, "codes", c);
    }
    json_object_set_new((json_t *)ud, name, o);
}

json_t *tkd_reqstats_json(const tkd_reqstats *rs, const char *const *names)
{
    json_t *o = json_object();
    tkd_reqstats_foreach(rs, names, put_json, o);
    return o;
}
