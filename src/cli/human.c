/*
 * human.c - tickctl's output for people: the one-line summary of
 * `tickctl stats` and the table of `tickctl --watch stats` (a header, then
 * one row per stats event, the header repeated every TK_CTL_TABLE_EVERY
 * rows, as vmstat(8) does).
 *
 * Input is the engine.stats object (PROTOCOL.md); a field that is missing
 * or not a number reads as 0, so an older or newer tickd still prints.
 * What it deliberately does not do: colour, terminal control, or localised
 * number formats (thousands are always separated by ',').
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickctl_int.h"

static double num(const json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

static uint64_t count(const json_t *o, const char *key)
{
    double v = num(o, key);
    return v > 0 ? (uint64_t)v : 0;
}

void tk__ctl_thousands(char *buf, size_t len, uint64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof digits, "%" PRIu64, v);
    size_t o = 0;
    for (int i = 0; i < n && o + 1 < len; i++) {
        if (i > 0 && (n - i) % 3 == 0 && o + 2 < len)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o < len ? o : len - 1] = '\0';
}

/* Milliseconds with two decimals below 10 ms, one below 100, none above. */
static void ms_text(char *buf, size_t len, double ms)
{
    snprintf(buf, len, ms < 10 ? "%.2f" : ms < 100 ? "%.1f" : "%.0f", ms);
}

void tk__ctl_stats_line(tk_ctl_buf_t *b, const json_t *st)
{
    const json_t *mspt = json_object_get(st, "mspt");
    char p50[32], p99[32], max[32], ents[32];
    ms_text(p50, sizeof p50, num(mspt, "p50"));
    ms_text(p99, sizeof p99, num(mspt, "p99"));
    ms_text(max, sizeof max, num(mspt, "max"));
    tk__ctl_thousands(ents, sizeof ents, count(st, "entities"));
    uint64_t over = count(st, "overruns");
    char *s = tk__ctl_strf("TPS %.1f (1m %.2f) \xc2\xb7 MSPT %s/%s/%s ms (p50/p99/max) \xc2\xb7 "
                           "%s entit%s \xc2\xb7 %" PRIu64 " overrun%s\n",
                           num(st, "tps_1s"), num(st, "tps_1m"), p50, p99, max, ents,
                           count(st, "entities") == 1 ? "y" : "ies", over, over == 1 ? "" : "s");
    tk__ctl_buf_puts(b, s);
    free(s);
}

void tk__ctl_stats_row(tk_ctl_buf_t *b, const json_t *st, unsigned long row)
{
    if (row % TK_CTL_TABLE_EVERY == 0)
        tk__ctl_buf_puts(b, "     frame     TPS   TPS1m  p50 ms  p99 ms  max ms     entities"
                            "   ticks  overruns  clients  dropped\n");
    const json_t *mspt = json_object_get(st, "mspt");
    char ents[32];
    tk__ctl_thousands(ents, sizeof ents, count(st, "entities"));
    char *s = tk__ctl_strf("%10" PRIu64 " %7.1f %7.2f %7.2f %7.2f %7.2f %12s %7" PRIu64
                           " %9" PRIu64 " %8" PRIu64 " %8" PRIu64 "\n",
                           count(st, "frame"), num(st, "tps_1s"), num(st, "tps_1m"),
                           num(mspt, "p50"), num(mspt, "p99"), num(mspt, "max"), ents,
                           count(st, "ticks_run_last_frame"), count(st, "overruns"),
                           count(st, "clients"), count(st, "events_dropped"));
    tk__ctl_buf_puts(b, s);
    free(s);
}
