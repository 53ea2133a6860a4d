/*
 * report.c - what tickd-load tells about a run: the text report on stdout
 * (laid out like redis-benchmark's summary, so it reads at a glance), the
 * --json document for machines, the --csv time series, and the --slo rules
 * that turn the figures into an exit status.
 *
 * Units: latencies and frame times in milliseconds, rates per second, memory
 * in bytes in JSON/CSV and MiB in text.  A figure the run could not measure
 * (no frame events, no answers) is null in JSON, empty in CSV and "-" in
 * text, never a made-up zero.
 *
 * What it deliberately is not: a comparison between runs or a history (feed
 * the JSON to whatever keeps history).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "tickd/tickd.h" /* TICKD_VERSION only: tickd-load does not link libtickd */

/* ---- SLO --------------------------------------------------------------- */

typedef struct slo_def {
    const char *name; /* on the command line */
    bool lower;       /* a lower bound (the value must be >= limit) */
    const char *unit; /* for the report */
    const char *what; /* for --help and the report */
} slo_def_t;

static const slo_def_t slo_defs[TK_SLO_COUNT] = {
    [TK_SLO_MSPT_P50] = {"mspt_p50", false, "ms", "median work per frame"},
    [TK_SLO_MSPT_P95] = {"mspt_p95", false, "ms", "p95 work per frame"},
    [TK_SLO_MSPT_P99] = {"mspt_p99", false, "ms", "p99 work per frame"},
    [TK_SLO_MSPT_MAX] = {"mspt_max", false, "ms", "longest frame's work"},
    [TK_SLO_LATENCY_P50] = {"latency_p50", false, "ms", "median request latency"},
    [TK_SLO_LATENCY_P95] = {"latency_p95", false, "ms", "p95 request latency"},
    [TK_SLO_LATENCY_P99] = {"latency_p99", false, "ms", "p99 request latency"},
    [TK_SLO_LATENCY_MAX] = {"latency_max", false, "ms", "slowest request"},
    [TK_SLO_TPS_MIN] = {"tps_min", true, "Hz", "achieved TPS over the run"},
    [TK_SLO_RPS_MIN] = {"rps_min", true, "req/s", "requests answered per second"},
    [TK_SLO_ERRORS] = {"errors", false, "", "unexpected error responses + unanswered requests"},
    [TK_SLO_OVERRUNS] = {"overruns", false, "", "frames over the target period"},
    [TK_SLO_RSS_MIB] = {"rss_mib", false, "MiB", "peak RSS of tickd"},
};

const char *tk__load_slo_name(tk_load_slo_key_t k)
{
    return (unsigned)k < TK_SLO_COUNT ? slo_defs[k].name : "?";
}

int tk__load_slo_parse(const char *text, tk_load_slo_t **slo, size_t *n, char **err)
{
    char *copy = tk__load_xstrdup(text);
    char *save = NULL;
    int rc = 0;
    bool any = false;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ')
            item++;
        if (!*item)
            continue;
        any = true;
        char *eq = strchr(item, '=');
        if (!eq) {
            *err = tk__load_strf("--slo: \"%s\": expected NAME=VALUE", item);
            rc = -1;
            break;
        }
        *eq = '\0';
        int k = 0;
        while (k < TK_SLO_COUNT && strcmp(slo_defs[k].name, item) != 0)
            k++;
        if (k == TK_SLO_COUNT) {
            tk_load_buf_t names = {0};
            for (int i = 0; i < TK_SLO_COUNT; i++)
                tk__load_buf_printf(&names, "%s%s", i ? " " : "", slo_defs[i].name);
            *err = tk__load_strf("--slo: unknown name \"%s\" (names: %s)", item, names.data);
            tk__load_buf_free(&names);
            rc = -1;
            break;
        }
        char *end;
        errno = 0;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || errno || !isfinite(v) || v < 0) {
            *err = tk__load_strf("--slo: %s=%s: expected a number >= 0", item, eq + 1);
            rc = -1;
            break;
        }
        *slo = tk__load_xrealloc(*slo, (*n + 1) * sizeof **slo);
        tk_load_slo_t *s = &(*slo)[(*n)++];
        memset(s, 0, sizeof *s);
        s->key = (tk_load_slo_key_t)k;
        s->limit = v;
    }
    if (rc == 0 && !any) {
        *err = tk__load_strf("--slo: empty list (e.g. --slo mspt_p99=10,tps_min=59,errors=0)");
        rc = -1;
    }
    free(copy);
    return rc;
}

bool tk__load_slo_eval(tk_load_slo_t *slo, size_t n, const tk_load_result_t *res)
{
    bool all = true;
    tk_load_pct_t mspt = tk__load_hist_summary_ms(&res->mspt);
    tk_load_pct_t lat = tk__load_hist_summary_ms(&res->lat);
    for (size_t i = 0; i < n; i++) {
        tk_load_slo_t *s = &slo[i];
        s->measured = true;
        switch (s->key) {
        case TK_SLO_MSPT_P50:
            s->value = mspt.p50;
            s->measured = mspt.n > 0;
            break;
        case TK_SLO_MSPT_P95:
            s->value = mspt.p95;
            s->measured = mspt.n > 0;
            break;
        case TK_SLO_MSPT_P99:
            s->value = mspt.p99;
            s->measured = mspt.n > 0;
            break;
        case TK_SLO_MSPT_MAX:
            s->value = mspt.max;
            s->measured = mspt.n > 0;
            break;
        case TK_SLO_LATENCY_P50:
            s->value = lat.p50;
            s->measured = lat.n > 0;
            break;
        case TK_SLO_LATENCY_P95:
            s->value = lat.p95;
            s->measured = lat.n > 0;
            break;
        case TK_SLO_LATENCY_P99:
            s->value = lat.p99;
            s->measured = lat.n > 0;
            break;
        case TK_SLO_LATENCY_MAX:
            s->value = lat.max;
            s->measured = lat.n > 0;
            break;
        case TK_SLO_TPS_MIN:
            s->value = res->tps;
            s->measured = res->duration_s > 0;
            break;
        case TK_SLO_RPS_MIN:
            s->value = res->rps;
            s->measured = res->window_s > 0;
            break;
        case TK_SLO_ERRORS:
            s->value = (double)(res->errors + res->unanswered);
            break;
        case TK_SLO_OVERRUNS:
            s->value = (double)res->overruns;
            break;
        case TK_SLO_RSS_MIB:
            s->value = (double)res->rss_peak / 1048576.0;
            s->measured = res->rss_peak > 0;
            break;
        default:
            s->measured = false;
            break;
        }
        s->ok =
            s->measured && (slo_defs[s->key].lower ? s->value >= s->limit : s->value <= s->limit);
        all = all && s->ok;
    }
    return all;
}

/* ---- text -------------------------------------------------------------- */

static const char *code_name(long long code)
{
    switch (code) {
    case 0:
        return "no answer before the drain ended";
    case -32700:
        return "parse error";
    case -32600:
        return "invalid request";
    case -32601:
        return "method not found";
    case -32602:
        return "invalid params";
    case -32603:
        return "internal error";
    case -32001:
        return "not found";
    case -32002:
        return "invalid state";
    case -32003:
        return "limit exceeded";
    case -32004:
        return "shutting down";
    default:
        return "application error";
    }
}

static void pct_table(FILE *f, const char *indent, const tk_load_pct_t *p, const char *extra_h,
                      const char *extra_v)
{
    fprintf(f, "%s%10s%10s%10s%10s%10s%10s%s\n", indent, "avg", "min", "p50", "p95", "p99", "max",
            extra_h);
    if (p->n == 0) {
        fprintf(f, "%s%10s%10s%10s%10s%10s%10s%s\n", indent, "-", "-", "-", "-", "-", "-", extra_v);
        return;
    }
    fprintf(f, "%s%10.3f%10.3f%10.3f%10.3f%10.3f%10.3f%s\n", indent, p->avg, p->min, p->p50, p->p95,
            p->p99, p->max, extra_v);
}

static void quiet_line(FILE *f, const tk_load_result_t *res, bool slo_ok)
{
    tk_load_pct_t lat = tk__load_hist_summary_ms(&res->lat);
    tk_load_pct_t mspt = tk__load_hist_summary_ms(&res->mspt);
    fprintf(f, "%s: %.2f requests per second, latency p99 ", res->sc->name, res->rps);
    if (lat.n)
        fprintf(f, "%.3f ms", lat.p99);
    else
        fputs("-", f);
    fprintf(f, ", %llu errors", (unsigned long long)(res->errors + res->unanswered));
    if (res->expected_errors)
        fprintf(f, " (+%llu expected)", (unsigned long long)res->expected_errors);
    fprintf(f, "; TPS %.2f", res->tps);
    if (res->target_hz > 0)
        fprintf(f, "/%g", res->target_hz);
    fputs(", MSPT p99 ", f);
    if (mspt.n)
        fprintf(f, "%.3f ms", mspt.p99);
    else
        fputs("-", f);
    fprintf(f, "; checks %llu/%llu", (unsigned long long)res->checks_passed,
            (unsigned long long)(res->checks_passed + res->checks_failed));
    if (res->opts->nslo)
        fprintf(f, "; SLO %s", slo_ok ? "kept" : "BROKEN");
    if (res->interrupted)
        fputs("; interrupted", f);
    if (res->aborted)
        fprintf(f, "; aborted: %s", res->aborted);
    fputc('\n', f);
}

void tk__load_report_text(FILE *f, const tk_load_result_t *res, bool slo_ok)
{
    const tk_load_opts_t *o = res->opts;
    const tk_load_scenario_t *sc = res->sc;
    if (o->quiet) {
        quiet_line(f, res, slo_ok);
        for (size_t i = 0; i < res->nfailures; i++)
            fprintf(f, "  check failed: line %d at %.2f s: %s\n", res->failures[i].lineno,
                    res->failures[i].at, res->failures[i].msg);
        for (size_t i = 0; i < o->nslo; i++)
            if (!o->slo[i].ok)
                fprintf(f, "  SLO broken: %s %s %g\n", slo_defs[o->slo[i].key].name,
                        slo_defs[o->slo[i].key].lower ? ">=" : "<=", o->slo[i].limit);
        return;
    }
    fprintf(f, "====== %s ======\n", sc->name);
    if (sc->description)
        fprintf(f, "  %s\n", sc->description);
    fprintf(f, "  scenario: %s\n", sc->path);
    fprintf(f, "  tickd %s on %s, tick rate ", res->daemon_version, o->socket);
    if (isfinite(res->tick_rate) && res->tick_rate > 0)
        fprintf(f, "%g Hz\n", res->tick_rate);
    else
        fputs(isfinite(res->tick_rate) ? "unlimited\n" : "unknown\n", f);
    fprintf(f, "  %.2f seconds (end at %.2f s), %d connections + 1 monitor\n", res->duration_s,
            res->end_s, o->connections);
    if (res->interrupted)
        fputs("  INTERRUPTED: the run was cut short by a signal\n", f);
    if (res->aborted)
        fprintf(f, "  ABORTED: %s\n", res->aborted);
    fputc('\n', f);

    fputs("Summary:\n", f);
    fprintf(f, "  throughput summary: %.2f requests per second\n", res->rps);
    fprintf(f,
            "  %llu requests sent, %llu answered, %llu errors, %llu expected errors, "
            "%llu unanswered, %llu skipped",
            (unsigned long long)res->sent, (unsigned long long)res->answered,
            (unsigned long long)res->errors, (unsigned long long)res->expected_errors,
            (unsigned long long)res->unanswered, (unsigned long long)res->skipped);
    if (res->not_sent)
        fprintf(f, ", %llu not sent (after the end)", (unsigned long long)res->not_sent);
    fputc('\n', f);
    tk_load_pct_t lat = tk__load_hist_summary_ms(&res->lat);
    fputs("  latency summary (msec, from the intended send time):\n", f);
    pct_table(f, "    ", &lat, "", "");
    tk_load_pct_t lag = tk__load_hist_summary_ms(&res->lag);
    if (lag.n)
        fprintf(f, "  send lag (msec, generator behind schedule): p99 %.3f, max %.3f\n", lag.p99,
                lag.max);
    if (res->nmethods) {
        fputs("\n  by method (msec):\n", f);
        fprintf(f, "    %-24s%10s%10s%10s%10s%10s%8s%10s\n", "method", "answered", "avg", "p50",
                "p99", "max", "errors", "expected");
        for (size_t i = 0; i < res->nmethods; i++) {
            const tk_load_method_t *m = &res->methods[i];
            tk_load_pct_t p = tk__load_hist_summary_ms(&m->lat);
            if (p.n)
                fprintf(f, "    %-24s%10llu%10.3f%10.3f%10.3f%10.3f%8llu%10llu\n", m->name,
                        (unsigned long long)m->answered, p.avg, p.p50, p.p99, p.max,
                        (unsigned long long)m->errors, (unsigned long long)m->expected);
            else
                fprintf(f, "    %-24s%10llu%10s%10s%10s%10s%8llu%10llu\n", m->name,
                        (unsigned long long)m->answered, "-", "-", "-", "-",
                        (unsigned long long)m->errors, (unsigned long long)m->expected);
        }
    }
    fputs("\n  errors by code:", f);
    if (!res->ncodes)
        fputs(" none\n", f);
    else
        fputc('\n', f);
    for (size_t i = 0; i < res->ncodes; i++) {
        if (res->codes[i].code)
            fprintf(f, "    %6lld  %-34s%10llu\n", res->codes[i].code,
                    code_name(res->codes[i].code), (unsigned long long)res->codes[i].n);
        else
            fprintf(f, "    %6s  %-34s%10llu\n", "-", code_name(0),
                    (unsigned long long)res->codes[i].n);
    }
    if (res->nxcodes) {
        fputs("  expected errors by code (the scenario's \"expect\": {\"error\"}; not in "
              "--slo errors):\n",
              f);
        for (size_t i = 0; i < res->nxcodes; i++)
            fprintf(f, "    %6lld  %-34s%10llu\n", res->xcodes[i].code,
                    code_name(res->xcodes[i].code), (unsigned long long)res->xcodes[i].n);
    }

    fputs("\ntickd:\n", f);
    fprintf(f, "  TPS achieved: %.2f", res->tps);
    if (res->target_hz > 0)
        fprintf(f, " of %g target (%.1f%%)", res->target_hz, 100.0 * res->tps / res->target_hz);
    else
        fputs(" (no target: unlimited tick rate)", f);
    if (isfinite(res->tps_worst))
        fprintf(f, ", worst second %.2f", res->tps_worst);
    fprintf(f, "; %llu frames\n", (unsigned long long)res->frames);
    tk_load_pct_t mspt = tk__load_hist_summary_ms(&res->mspt);
    fputs("  MSPT (msec of work per frame):\n", f);
    char frames[32];
    snprintf(frames, sizeof frames, "%10llu", (unsigned long long)mspt.n);
    pct_table(f, "    ", &mspt, "    frames", frames);
    if (res->target_hz > 0)
        fprintf(f, "    frame budget %.3f ms\n", 1000.0 / res->target_hz);
    if (res->frame_events_lost || res->events_dropped)
        fprintf(f,
                "    (%llu frame events lost, %llu events dropped by tickd: the "
                "percentiles cover the frames received)\n",
                (unsigned long long)res->frame_events_lost,
                (unsigned long long)res->events_dropped);
    fprintf(f, "  overruns: %llu\n", (unsigned long long)res->overruns);
    fprintf(f, "  entities: %llu at start, %llu at end, %llu peak\n",
            (unsigned long long)res->entities_start, (unsigned long long)res->entities_end,
            (unsigned long long)res->entities_peak);
    fprintf(f, "  peak RSS: %.1f MiB (%.1f MiB at start, %.1f MiB at end)\n",
            (double)res->rss_peak / 1048576.0, (double)res->rss_start / 1048576.0,
            (double)res->rss_end / 1048576.0);

    fprintf(f, "\nChecks: %llu passed, %llu failed\n", (unsigned long long)res->checks_passed,
            (unsigned long long)res->checks_failed);
    for (size_t i = 0; i < res->nfailures; i++)
        fprintf(f, "  FAILED line %d at %.2f s: %s\n", res->failures[i].lineno, res->failures[i].at,
                res->failures[i].msg);
    if (res->checks_failed > res->nfailures)
        fprintf(f, "  (%llu more failures not shown)\n",
                (unsigned long long)(res->checks_failed - res->nfailures));

    if (o->nslo) {
        fprintf(f, "\nSLO: %s\n", slo_ok ? "kept" : "BROKEN");
        for (size_t i = 0; i < o->nslo; i++) {
            const tk_load_slo_t *s = &o->slo[i];
            const slo_def_t *d = &slo_defs[s->key];
            char val[32];
            if (s->measured)
                snprintf(val, sizeof val, "%.3f", s->value);
            else
                snprintf(val, sizeof val, "not measured");
            fprintf(f, "  %-12s %s %-10g %-6s %14s  %s\n", d->name,
                    d->lower ? ">=" : "<=", s->limit, d->unit, val, s->ok ? "ok" : "BROKEN");
        }
    }
}

/* ---- JSON -------------------------------------------------------------- */

static json_t *jnum(double v)
{
    json_t *j = isfinite(v) ? json_real(v) : json_null();
    if (!j)
        tk__load_oom();
    return j;
}

static json_t *jint(uint64_t v)
{
    json_t *j = json_integer((json_int_t)v);
    if (!j)
        tk__load_oom();
    return j;
}

static void jset(json_t *o, const char *k, json_t *v)
{
    if (!v || json_object_set_new(o, k, v))
        tk__load_oom();
}

/* {"n","avg","min","p50","p95","p99","max"} in ms, null figures when empty. */
static json_t *jpct(const tk_load_hist_t *h)
{
    tk_load_pct_t p = tk__load_hist_summary_ms(h);
    json_t *o = json_object();
    if (!o)
        tk__load_oom();
    jset(o, "n", jint(p.n));
    double nan = NAN;
    jset(o, "avg", jnum(p.n ? p.avg : nan));
    jset(o, "min", jnum(p.n ? p.min : nan));
    jset(o, "p50", jnum(p.n ? p.p50 : nan));
    jset(o, "p95", jnum(p.n ? p.p95 : nan));
    jset(o, "p99", jnum(p.n ? p.p99 : nan));
    jset(o, "max", jnum(p.n ? p.max : nan));
    return o;
}

int tk__load_report_json(const char *path, const tk_load_result_t *res, bool slo_ok, int exit_code,
                         char **err)
{
    const tk_load_opts_t *o = res->opts;
    const tk_load_scenario_t *sc = res->sc;
    json_t *root = json_object();
    if (!root)
        tk__load_oom();
    jset(root, "tool", json_string("tickd-load"));
    jset(root, "version", json_string(TICKD_VERSION));

    json_t *s = json_object();
    jset(s, "name", json_string(sc->name));
    jset(s, "path", json_string(sc->path));
    jset(s, "description", sc->description ? json_string(sc->description) : json_null());
    jset(root, "scenario", s);

    json_t *run = json_object();
    jset(run, "socket", json_string(o->socket));
    jset(run, "tickd_version", json_string(res->daemon_version ? res->daemon_version : "?"));
    jset(run, "connections", json_integer(o->connections));
    jset(run, "duration_s", jnum(res->duration_s));
    jset(run, "end_s", jnum(res->end_s));
    jset(run, "interrupted", json_boolean(res->interrupted));
    jset(run, "aborted", res->aborted ? json_string(res->aborted) : json_null());
    jset(root, "run", run);

    json_t *rq = json_object();
    jset(rq, "sent", jint(res->sent));
    jset(rq, "answered", jint(res->answered));
    jset(rq, "errors", jint(res->errors));
    jset(rq, "expected_errors", jint(res->expected_errors));
    jset(rq, "unanswered", jint(res->unanswered));
    jset(rq, "skipped", jint(res->skipped));
    jset(rq, "not_sent", jint(res->not_sent));
    jset(rq, "per_second", jnum(res->rps));
    jset(rq, "window_s", jnum(res->window_s));
    jset(rq, "latency_ms", jpct(&res->lat));
    jset(rq, "send_lag_ms", jpct(&res->lag));
    json_t *codes = json_object();
    for (size_t i = 0; i < res->ncodes; i++) {
        char k[32];
        if (res->codes[i].code)
            snprintf(k, sizeof k, "%lld", res->codes[i].code);
        else
            snprintf(k, sizeof k, "no_answer");
        jset(codes, k, jint(res->codes[i].n));
    }
    jset(rq, "errors_by_code", codes);
    json_t *xcodes = json_object();
    for (size_t i = 0; i < res->nxcodes; i++) {
        char k[32];
        snprintf(k, sizeof k, "%lld", res->xcodes[i].code);
        jset(xcodes, k, jint(res->xcodes[i].n));
    }
    jset(rq, "expected_errors_by_code", xcodes);
    json_t *methods = json_object();
    for (size_t i = 0; i < res->nmethods; i++) {
        const tk_load_method_t *m = &res->methods[i];
        json_t *mo = json_object();
        jset(mo, "sent", jint(m->sent));
        jset(mo, "answered", jint(m->answered));
        jset(mo, "errors", jint(m->errors));
        jset(mo, "expected_errors", jint(m->expected));
        jset(mo, "latency_ms", jpct(&m->lat));
        jset(methods, m->name, mo);
    }
    jset(rq, "by_method", methods);
    jset(root, "requests", rq);

    json_t *sv = json_object();
    jset(sv, "target_hz", res->target_hz > 0 ? jnum(res->target_hz) : json_null());
    jset(sv, "tick_rate", jnum(res->tick_rate));
    jset(sv, "frames", jint(res->frames));
    jset(sv, "tps", jnum(res->tps));
    jset(sv, "tps_ratio", res->target_hz > 0 ? jnum(res->tps / res->target_hz) : json_null());
    jset(sv, "tps_worst_second", jnum(res->tps_worst));
    jset(sv, "mspt_ms", jpct(&res->mspt));
    jset(sv, "frame_budget_ms", res->target_hz > 0 ? jnum(1000.0 / res->target_hz) : json_null());
    jset(sv, "frame_events_lost", jint(res->frame_events_lost));
    jset(sv, "events_dropped", jint(res->events_dropped));
    jset(sv, "overruns", jint(res->overruns));
    json_t *ent = json_object();
    jset(ent, "start", jint(res->entities_start));
    jset(ent, "end", jint(res->entities_end));
    jset(ent, "peak", jint(res->entities_peak));
    jset(sv, "entities", ent);
    json_t *rss = json_object();
    jset(rss, "start", jint(res->rss_start));
    jset(rss, "end", jint(res->rss_end));
    jset(rss, "peak", jint(res->rss_peak));
    jset(sv, "rss_bytes", rss);
    jset(root, "tickd", sv);

    json_t *ck = json_object();
    jset(ck, "passed", jint(res->checks_passed));
    jset(ck, "failed", jint(res->checks_failed));
    json_t *fails = json_array();
    for (size_t i = 0; i < res->nfailures; i++) {
        json_t *fo = json_object();
        jset(fo, "line", json_integer(res->failures[i].lineno));
        jset(fo, "at", jnum(res->failures[i].at));
        jset(fo, "message", json_string(res->failures[i].msg));
        if (json_array_append_new(fails, fo))
            tk__load_oom();
    }
    jset(ck, "failures", fails);
    jset(root, "checks", ck);

    json_t *slo = json_object();
    jset(slo, "passed", json_boolean(slo_ok));
    json_t *rules = json_array();
    for (size_t i = 0; i < o->nslo; i++) {
        const tk_load_slo_t *r = &o->slo[i];
        json_t *ro = json_object();
        jset(ro, "name", json_string(slo_defs[r->key].name));
        jset(ro, "bound", json_string(slo_defs[r->key].lower ? "min" : "max"));
        jset(ro, "limit", jnum(r->limit));
        jset(ro, "value", r->measured ? jnum(r->value) : json_null());
        jset(ro, "ok", json_boolean(r->ok));
        if (json_array_append_new(rules, ro))
            tk__load_oom();
    }
    jset(slo, "rules", rules);
    jset(root, "slo", slo);

    json_t *pools = json_object();
    for (size_t i = 0; i < res->pools.n; i++) {
        json_t *po = json_object();
        jset(po, "saved", jint(res->pools.p[i].saved));
        jset(po, "left", jint(res->pools.p[i].n));
        jset(pools, res->pools.p[i].name, po);
    }
    jset(root, "pools", pools);

    json_t *series = json_array();
    for (size_t i = 0; i < res->nrows; i++) {
        const tk_load_row_t *w = &res->rows[i];
        json_t *ro = json_object();
        jset(ro, "t", jnum(w->t));
        jset(ro, "frame", jint(w->frame));
        jset(ro, "tps", jnum(w->tps));
        jset(ro, "frames", jint(w->frames));
        jset(ro, "mspt_p50", jnum(w->mspt_p50));
        jset(ro, "mspt_p95", jnum(w->mspt_p95));
        jset(ro, "mspt_p99", jnum(w->mspt_p99));
        jset(ro, "mspt_max", jnum(w->mspt_max));
        jset(ro, "overruns", jint(w->overruns));
        jset(ro, "entities", jint(w->entities));
        jset(ro, "rss_bytes", jint(w->rss_bytes));
        jset(ro, "sent", jint(w->sent));
        jset(ro, "answered", jint(w->answered));
        jset(ro, "errors", jint(w->errors));
        jset(ro, "latency_p50", jnum(w->lat_p50));
        jset(ro, "latency_p99", jnum(w->lat_p99));
        if (json_array_append_new(series, ro))
            tk__load_oom();
    }
    jset(root, "series", series);
    jset(root, "exit_code", json_integer(exit_code));

    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (rc != 0) {
        *err = tk__load_strf("--json %s: cannot write: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- CSV --------------------------------------------------------------- */

static void csv_num(FILE *f, double v, bool last)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    fputc(last ? '\n' : ',', f);
}

int tk__load_report_csv(const char *path, const tk_load_result_t *res, char **err)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        *err = tk__load_strf("--csv %s: %s", path, strerror(errno));
        return -1;
    }
    fputs("t_s,frame,tps,frames,mspt_p50_ms,mspt_p95_ms,mspt_p99_ms,mspt_max_ms,overruns,"
          "entities,rss_bytes,sent,answered,errors,latency_p50_ms,latency_p99_ms\n",
          f);
    for (size_t i = 0; i < res->nrows; i++) {
        const tk_load_row_t *w = &res->rows[i];
        fprintf(f, "%.3f,%llu,", w->t, (unsigned long long)w->frame);
        csv_num(f, w->tps, false);
        fprintf(f, "%llu,", (unsigned long long)w->frames);
        csv_num(f, w->mspt_p50, false);
        csv_num(f, w->mspt_p95, false);
        csv_num(f, w->mspt_p99, false);
        csv_num(f, w->mspt_max, false);
        fprintf(f, "%llu,%llu,%llu,%llu,%llu,%llu,", (unsigned long long)w->overruns,
                (unsigned long long)w->entities, (unsigned long long)w->rss_bytes,
                (unsigned long long)w->sent, (unsigned long long)w->answered,
                (unsigned long long)w->errors);
        csv_num(f, w->lat_p50, false);
        csv_num(f, w->lat_p99, true);
    }
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        *err = tk__load_strf("--csv %s: write failed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
