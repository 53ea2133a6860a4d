/*
 * svg.c - the --svg chart of a run: four panels sharing the time axis, one
 * point per stats interval (a second).
 *
 *   MSPT      p50 (blue) and p99 (orange) of the frames' work in each
 *             second, with the frame budget (1000 / target Hz, red dashed)
 *             as a line, so "above the line" reads as "frames over budget"
 *   TPS       frames per second (tickd's tps_1s, blue), with the target
 *             rate (red dashed)
 *   latency   request latency p50 (blue) and p99 (orange) of the responses
 *             of each second, from the intended send time
 *   memory    entity count (green area, left axis) and tickd's RSS (purple
 *             line, right axis, MiB)
 *
 * Axes have "nice" ticks (1, 2, 5 x 10^k), grid lines, units and labels; the
 * title carries the scenario and the headline figures.  Plain SVG 1.1 with
 * no script, no external font or stylesheet, so any browser, rsvg or
 * Inkscape shows the same picture.
 *
 * What it deliberately is not: a plotting library.  The layout is fixed
 * (960 x 940); a second with no frame events or no responses leaves a gap
 * in its lines rather than a made-up point.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

#define W        960.0
#define H        940.0
#define LEFT     90.0  /* px, left edge of the plots */
#define RIGHT    880.0 /* px, right edge (the RSS axis is labelled beyond it) */
#define TOP1     90.0  /* px, MSPT panel */
#define BOT1     290.0
#define TOP2     330.0 /* px, TPS panel */
#define BOT2     470.0
#define TOP3     510.0 /* px, latency panel */
#define BOT3     670.0
#define TOP4     710.0 /* px, entities and RSS panel */
#define BOT4     890.0
#define C_P50    "#1f77b4"
#define C_P99    "#ff7f0e"
#define C_BUDGET "#d62728"
#define C_ENT    "#2ca02c"
#define C_RSS    "#9467bd"
#define C_GRID   "#e0e0e0"
#define C_AXIS   "#333333"

/* A "nice" tick step so that [0, max] gets about `n` ticks. */
static double nice_step(double max, int n)
{
    if (!(max > 0))
        return 1;
    double raw = max / n;
    double mag = pow(10, floor(log10(raw)));
    double f = raw / mag;
    double step = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
    return step * mag;
}

/* 1500000 -> "1.5M", 250000 -> "250k". */
static void si(char *out, size_t n, double v)
{
    if (v >= 1e6)
        snprintf(out, n, "%gM", v / 1e6);
    else if (v >= 1e3)
        snprintf(out, n, "%gk", v / 1e3);
    else
        snprintf(out, n, "%g", v);
}

static void xml_text(tk_load_buf_t *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<':
            tk__load_buf_puts(b, "&lt;");
            break;
        case '>':
            tk__load_buf_puts(b, "&gt;");
            break;
        case '&':
            tk__load_buf_puts(b, "&amp;");
            break;
        case '"':
            tk__load_buf_puts(b, "&quot;");
            break;
        default:
            tk__load_buf_append(b, s, 1);
            break;
        }
    }
}

typedef struct axes {
    double xmax;     /* s at the right edge */
    double ymax;     /* value at the top edge */
    double top, bot; /* px of the panel */
} axes_t;

static double px_x(const axes_t *a, double t) { return LEFT + (RIGHT - LEFT) * t / a->xmax; }
static double px_y(const axes_t *a, double v) { return a->bot - (a->bot - a->top) * v / a->ymax; }

/* Grid, y ticks with labels, frame, and the y-axis title. */
static void panel(tk_load_buf_t *b, const axes_t *a, double ystep, bool si_labels,
                  const char *ytitle)
{
    for (double v = 0; v <= a->ymax * 1.0001; v += ystep) {
        double y = px_y(a, v);
        char lab[32];
        if (si_labels)
            si(lab, sizeof lab, v);
        else
            snprintf(lab, sizeof lab, "%g", v);
        tk__load_buf_printf(b,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                            "stroke=\"" C_GRID "\"/>\n"
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                            LEFT, y, RIGHT, y, LEFT - 6, y + 4, lab);
    }
    tk__load_buf_printf(b,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                        "fill=\"none\" stroke=\"" C_AXIS "\"/>\n",
                        LEFT, a->top, RIGHT - LEFT, a->bot - a->top);
    double cy = (a->top + a->bot) / 2;
    tk__load_buf_printf(b,
                        "<text x=\"24\" y=\"%.1f\" text-anchor=\"middle\" "
                        "transform=\"rotate(-90 24 %.1f)\">",
                        cy, cy);
    xml_text(b, ytitle);
    tk__load_buf_puts(b, "</text>\n");
}

/* Vertical grid lines and x tick labels (seconds) under a panel. */
static void xticks(tk_load_buf_t *b, const axes_t *a, double xstep, bool labels)
{
    for (double t = 0; t <= a->xmax * 1.0001; t += xstep) {
        double x = px_x(a, t);
        tk__load_buf_printf(b,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                            "stroke=\"" C_GRID "\"/>\n",
                            x, a->top, x, a->bot);
        if (labels)
            tk__load_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                                x, a->bot + 16, t);
    }
}

/* Values of a row, for series(). */
typedef double (*getter_t)(const tk_load_row_t *w);
static double get_mspt_p50(const tk_load_row_t *w) { return w->mspt_p50; }
static double get_mspt_p99(const tk_load_row_t *w) { return w->mspt_p99; }
static double get_tps(const tk_load_row_t *w) { return w->tps; }
static double get_lat_p50(const tk_load_row_t *w) { return w->lat_p50; }
static double get_lat_p99(const tk_load_row_t *w) { return w->lat_p99; }
static double get_entities(const tk_load_row_t *w) { return (double)w->entities; }
static double get_rss_mib(const tk_load_row_t *w)
{
    return w->rss_bytes ? (double)w->rss_bytes / 1048576.0 : NAN;
}

/* The largest finite value of a series (0 when none). */
static double series_max(const tk_load_result_t *res, getter_t get)
{
    double m = 0;
    for (size_t i = 0; i < res->nrows; i++) {
        double v = get(&res->rows[i]);
        if (isfinite(v) && v > m)
            m = v;
    }
    return m;
}

/* A polyline of (row t, value) with gaps where the value is NAN; values
 * above the axis are clipped at its top edge (the axis says so). */
static void series(tk_load_buf_t *b, const axes_t *a, const tk_load_result_t *res, getter_t get,
                   const char *color, double width)
{
    tk__load_buf_puts(b, "<path fill=\"none\" stroke-linejoin=\"round\" d=\"");
    bool pen = false;
    size_t drawn = 0;
    for (size_t i = 0; i < res->nrows; i++) {
        double v = get(&res->rows[i]);
        if (!isfinite(v)) {
            pen = false;
            continue;
        }
        if (v > a->ymax)
            v = a->ymax;
        tk__load_buf_printf(b, "%s%.1f %.1f ", pen ? "L" : "M", px_x(a, res->rows[i].t),
                            px_y(a, v));
        pen = true;
        drawn++;
    }
    if (!drawn)
        tk__load_buf_puts(b, "M0 0");
    tk__load_buf_printf(b, "\" stroke=\"%s\" stroke-width=\"%.1f\"/>\n", color, width);
    /* Single points (isolated seconds) get a dot so they are not invisible. */
    for (size_t i = 0; i < res->nrows; i++) {
        double v = get(&res->rows[i]);
        bool prev = i > 0 && isfinite(get(&res->rows[i - 1]));
        bool next = i + 1 < res->nrows && isfinite(get(&res->rows[i + 1]));
        if (isfinite(v) && !prev && !next)
            tk__load_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                                px_x(a, res->rows[i].t), px_y(a, v < a->ymax ? v : a->ymax), color);
    }
}

/* A dashed horizontal line at `v` across a panel, labelled at its right. */
static void ref_line(tk_load_buf_t *b, const axes_t *a, double v, const char *label)
{
    double y = px_y(a, v);
    tk__load_buf_printf(b,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                        "stroke=\"" C_BUDGET "\" stroke-width=\"1.5\" "
                        "stroke-dasharray=\"8 4\"/>\n"
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                        "fill=\"" C_BUDGET "\">",
                        LEFT, y, RIGHT, y, RIGHT - 6, y - 5);
    xml_text(b, label);
    tk__load_buf_puts(b, "</text>\n");
}

/* One legend entry of a panel: a short line and its text; advances *x. */
static void legend(tk_load_buf_t *b, double *x, double y, const char *color, bool dashed,
                   const char *text)
{
    tk__load_buf_printf(b,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                        "stroke-width=\"2\"%s/><text x=\"%.1f\" y=\"%.1f\">",
                        *x, y - 4, *x + 22, y - 4, color,
                        dashed ? " stroke-dasharray=\"8 4\"" : "", *x + 28, y);
    xml_text(b, text);
    tk__load_buf_puts(b, "</text>\n");
    *x += 40 + 7.0 * (double)strlen(text);
}

/* The white box behind a panel's legend, `width` px wide. */
static void legend_box(tk_load_buf_t *b, const axes_t *a, double width)
{
    tk__load_buf_printf(b,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"20\" fill=\"white\" "
                        "fill-opacity=\"0.85\" stroke=\"" C_GRID "\"/>\n",
                        LEFT + 6, a->top + 4, width);
}

/* An axis of [0, top'] with about `ticks` ticks for values up to `max`
 * (headroom `room`, e.g. 1.15); fills *step. */
static double axis_top(double max, double room, int ticks, double *step)
{
    double top = max > 0 ? max * room : 1;
    *step = nice_step(top, ticks);
    return ceil(top / *step) * *step;
}

int tk__load_report_svg(const char *path, const tk_load_result_t *res, char **err)
{
    tk_load_buf_t b = {0};
    double xmax = res->duration_s;
    for (size_t i = 0; i < res->nrows; i++)
        if (res->rows[i].t > xmax)
            xmax = res->rows[i].t;
    if (!(xmax > 0))
        xmax = 1;
    double xstep = nice_step(xmax, 10); /* the axis ends where the run ended */

    double budget = res->target_hz > 0 ? 1000.0 / res->target_hz : NAN;
    double mspt_max = fmax(series_max(res, get_mspt_p50), series_max(res, get_mspt_p99));
    if (isfinite(budget) && budget > mspt_max)
        mspt_max = budget;
    double tps_max = series_max(res, get_tps);
    if (res->target_hz > 0 && res->target_hz > tps_max)
        tps_max = res->target_hz;
    double lat_max = fmax(series_max(res, get_lat_p50), series_max(res, get_lat_p99));
    double ent_max = fmax(series_max(res, get_entities), (double)res->entities_end);
    double rss_max = series_max(res, get_rss_mib);

    double st1, st2, st3, st4 = 2.5, st5, ent_top = 10;
    if (ent_max > 0)
        ent_top = axis_top(ent_max, 1.1, 4, &st4);
    axes_t a1 = {xmax, axis_top(mspt_max, 1.15, 5, &st1), TOP1, BOT1};
    axes_t a2 = {xmax, axis_top(tps_max, 1.15, 4, &st2), TOP2, BOT2};
    axes_t a3 = {xmax, axis_top(lat_max, 1.15, 4, &st3), TOP3, BOT3};
    axes_t a4 = {xmax, ent_top, TOP4, BOT4};
    axes_t a5 = {xmax, axis_top(rss_max, 1.1, 4, &st5), TOP4, BOT4}; /* RSS, right axis */

    tk__load_buf_printf(&b,
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
                        "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                        "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
                        "font-size=\"12\" fill=\"" C_AXIS "\">\n"
                        "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                        W, H, W, H);
    tk__load_buf_puts(&b, "<title>tickd-load: ");
    xml_text(&b, res->sc->name);
    tk__load_buf_puts(&b, "</title>\n");

    /* Title and headline figures. */
    tk__load_buf_printf(&b, "<text x=\"%.1f\" y=\"30\" font-size=\"18\" font-weight=\"bold\">",
                        LEFT);
    tk__load_buf_puts(&b, "tickd-load: ");
    xml_text(&b, res->sc->name);
    tk__load_buf_puts(&b, " \xe2\x80\x94 MSPT, TPS, latency, entities and RSS over time</text>\n");
    tk_load_pct_t mspt = tk__load_hist_summary_ms(&res->mspt);
    tk_load_pct_t lat = tk__load_hist_summary_ms(&res->lat);
    char line[512];
    int n = snprintf(line, sizeof line, "TPS %.2f", res->tps);
    if (res->target_hz > 0)
        n += snprintf(line + n, sizeof line - (size_t)n, " of %g", res->target_hz);
    if (mspt.n)
        n += snprintf(line + n, sizeof line - (size_t)n, "  \xc2\xb7  MSPT p50 %.2f / p99 %.2f ms",
                      mspt.p50, mspt.p99);
    n += snprintf(line + n, sizeof line - (size_t)n,
                  "  \xc2\xb7  overruns %llu  \xc2\xb7  peak %llu entities, RSS %.1f MiB"
                  "  \xc2\xb7  %.0f req/s",
                  (unsigned long long)res->overruns, (unsigned long long)res->entities_peak,
                  (double)res->rss_peak / 1048576.0, res->rps);
    if (lat.n)
        snprintf(line + n, sizeof line - (size_t)n, ", p99 %.2f ms", lat.p99);
    tk__load_buf_printf(&b, "<text x=\"%.1f\" y=\"52\" font-size=\"13\">", LEFT);
    xml_text(&b, line);
    tk__load_buf_puts(&b, "</text>\n");

    char lab[96];
    double lx;

    /* MSPT. */
    xticks(&b, &a1, xstep, false);
    panel(&b, &a1, st1, false, "MSPT (ms of work per frame)");
    if (isfinite(budget)) {
        snprintf(lab, sizeof lab, "frame budget %.2f ms (%g Hz)", budget, res->target_hz);
        ref_line(&b, &a1, budget, lab);
    }
    series(&b, &a1, res, get_mspt_p50, C_P50, 2);
    series(&b, &a1, res, get_mspt_p99, C_P99, 2);
    legend_box(&b, &a1, isfinite(budget) ? 390 : 280);
    lx = LEFT + 12;
    legend(&b, &lx, TOP1 + 18, C_P50, false, "p50 per second");
    legend(&b, &lx, TOP1 + 18, C_P99, false, "p99 per second");
    if (isfinite(budget))
        legend(&b, &lx, TOP1 + 18, C_BUDGET, true, "frame budget");

    /* TPS. */
    xticks(&b, &a2, xstep, false);
    panel(&b, &a2, st2, false, "TPS (frames per second)");
    if (res->target_hz > 0) {
        snprintf(lab, sizeof lab, "target %g Hz", res->target_hz);
        ref_line(&b, &a2, res->target_hz, lab);
    }
    series(&b, &a2, res, get_tps, C_P50, 2);
    legend_box(&b, &a2, res->target_hz > 0 ? 260 : 160);
    lx = LEFT + 12;
    legend(&b, &lx, TOP2 + 18, C_P50, false, "TPS per second");
    if (res->target_hz > 0)
        legend(&b, &lx, TOP2 + 18, C_BUDGET, true, "target");

    /* Request latency. */
    xticks(&b, &a3, xstep, false);
    panel(&b, &a3, st3, false, "request latency (ms)");
    series(&b, &a3, res, get_lat_p50, C_P50, 2);
    series(&b, &a3, res, get_lat_p99, C_P99, 2);
    legend_box(&b, &a3, 405);
    lx = LEFT + 12;
    legend(&b, &lx, TOP3 + 18, C_P50, false, "latency p50 per second");
    legend(&b, &lx, TOP3 + 18, C_P99, false, "latency p99 per second");

    /* Entities (left axis) and RSS (right axis). */
    xticks(&b, &a4, xstep, true);
    panel(&b, &a4, st4, true, "entities");
    for (double v = 0; v <= a5.ymax * 1.0001; v += st5)
        tk__load_buf_printf(&b,
                            "<text x=\"%.1f\" y=\"%.1f\" fill=\"" C_RSS "\">%g</text>\n",
                            RIGHT + 6, px_y(&a5, v) + 4, v);
    double cy = (TOP4 + BOT4) / 2;
    tk__load_buf_printf(&b,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"" C_RSS
                        "\" transform=\"rotate(90 %.1f %.1f)\">RSS (MiB)</text>\n",
                        W - 18, cy, W - 18, cy);
    if (res->nrows) {
        tk__load_buf_printf(&b, "<path d=\"M%.1f %.1f ", px_x(&a4, res->rows[0].t), BOT4);
        for (size_t i = 0; i < res->nrows; i++)
            tk__load_buf_printf(&b, "L%.1f %.1f ", px_x(&a4, res->rows[i].t),
                                px_y(&a4, (double)res->rows[i].entities));
        tk__load_buf_printf(&b,
                            "L%.1f %.1f Z\" fill=\"" C_ENT "\" fill-opacity=\"0.25\" "
                            "stroke=\"none\"/>\n",
                            px_x(&a4, res->rows[res->nrows - 1].t), BOT4);
        series(&b, &a4, res, get_entities, C_ENT, 2);
        series(&b, &a5, res, get_rss_mib, C_RSS, 2);
    } else {
        tk__load_buf_printf(&b,
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no stats "
                            "events received</text>\n",
                            (LEFT + RIGHT) / 2, (TOP1 + BOT1) / 2);
    }
    legend_box(&b, &a4, 230);
    lx = LEFT + 12;
    legend(&b, &lx, TOP4 + 18, C_ENT, false, "entities");
    legend(&b, &lx, TOP4 + 18, C_RSS, false, "RSS (MiB)");

    tk__load_buf_printf(&b,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time since the "
                        "start (s)</text>\n",
                        (LEFT + RIGHT) / 2, BOT4 + 38);
    tk__load_buf_puts(&b, "</svg>\n");

    FILE *f = fopen(path, "w");
    if (!f) {
        *err = tk__load_strf("--svg %s: %s", path, strerror(errno));
        tk__load_buf_free(&b);
        return -1;
    }
    size_t len = b.len;
    size_t w = fwrite(b.data, 1, len, f);
    int rc = fclose(f);
    tk__load_buf_free(&b);
    if (w != len || rc != 0) {
        *err = tk__load_strf("--svg %s: write failed: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
