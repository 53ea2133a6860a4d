/*
 * svg.c - the --svg chart of a run: two panels sharing the time axis.
 *
 *   top     MSPT per second: p50 (blue) and p99 (orange) of the frames'
 *           work in each stats interval, with the frame budget (1000 /
 *           target Hz, red dashed) as a line, so "above the line" reads as
 *           "frames over budget" at a glance
 *   bottom  entity count (green area)
 *
 * Axes have "nice" ticks (1, 2, 5 x 10^k), grid lines, units and labels; the
 * title carries the scenario and the headline figures.  Plain SVG 1.1 with
 * no script, no external font or stylesheet, so any browser, rsvg or
 * Inkscape shows the same picture.
 *
 * What it deliberately is not: a plotting library.  The layout is fixed
 * (960 x 600); a second with no frame events leaves a gap in the lines
 * rather than a made-up point.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

#define W        960.0
#define H        600.0
#define LEFT     90.0  /* px, left edge of the plots */
#define RIGHT    920.0 /* px, right edge */
#define TOP1     90.0  /* px, MSPT panel */
#define BOT1     340.0
#define TOP2     395.0 /* px, entities panel */
#define BOT2     545.0
#define C_P50    "#1f77b4"
#define C_P99    "#ff7f0e"
#define C_BUDGET "#d62728"
#define C_ENT    "#2ca02c"
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

/* A polyline of (row t, value) with gaps where the value is NAN. */
static void series(tk_load_buf_t *b, const axes_t *a, const tk_load_result_t *res, size_t offset,
                   const char *color, double width)
{
    tk__load_buf_puts(b, "<path fill=\"none\" stroke-linejoin=\"round\" d=\"");
    bool pen = false;
    size_t drawn = 0;
    for (size_t i = 0; i < res->nrows; i++) {
        double v = *(const double *)((const char *)&res->rows[i] + offset);
        if (!isfinite(v)) {
            pen = false;
            continue;
        }
        if (v > a->ymax)
            v = a->ymax; /* clipped at the top edge (the axis says so) */
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
        double v = *(const double *)((const char *)&res->rows[i] + offset);
        bool prev = i > 0 && isfinite(*(const double *)((const char *)&res->rows[i - 1] + offset));
        bool next = i + 1 < res->nrows &&
                    isfinite(*(const double *)((const char *)&res->rows[i + 1] + offset));
        if (isfinite(v) && !prev && !next)
            tk__load_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                                px_x(a, res->rows[i].t), px_y(a, v < a->ymax ? v : a->ymax), color);
    }
}

int tk__load_report_svg(const char *path, const tk_load_result_t *res, char **err)
{
    tk_load_buf_t b = {0};
    double xmax = res->duration_s;
    double mspt_max = 0, ent_max = 0;
    for (size_t i = 0; i < res->nrows; i++) {
        const tk_load_row_t *w = &res->rows[i];
        if (w->t > xmax)
            xmax = w->t;
        if (isfinite(w->mspt_p99) && w->mspt_p99 > mspt_max)
            mspt_max = w->mspt_p99;
        if (isfinite(w->mspt_p50) && w->mspt_p50 > mspt_max)
            mspt_max = w->mspt_p50;
        if ((double)w->entities > ent_max)
            ent_max = (double)w->entities;
    }
    if ((double)res->entities_end > ent_max)
        ent_max = (double)res->entities_end;
    if (!(xmax > 0))
        xmax = 1;
    double budget = res->target_hz > 0 ? 1000.0 / res->target_hz : NAN;
    double top = mspt_max;
    if (isfinite(budget) && budget > top)
        top = budget;
    top = top > 0 ? top * 1.15 : 1;
    double ystep1 = nice_step(top, 5);
    top = ceil(top / ystep1) * ystep1;
    double etop = ent_max > 0 ? ent_max * 1.1 : 10;
    double ystep2 = nice_step(etop, 4);
    etop = ceil(etop / ystep2) * ystep2;
    double xstep = nice_step(xmax, 10); /* the axis ends where the run ended */

    axes_t a1 = {xmax, top, TOP1, BOT1};
    axes_t a2 = {xmax, etop, TOP2, BOT2};

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
    tk__load_buf_puts(&b, " \xe2\x80\x94 MSPT and entities over time</text>\n");
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

    /* MSPT panel. */
    xticks(&b, &a1, xstep, false);
    panel(&b, &a1, ystep1, false, "MSPT (ms of work per frame)");
    if (isfinite(budget)) {
        double y = px_y(&a1, budget);
        tk__load_buf_printf(&b,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                            "stroke=\"" C_BUDGET "\" stroke-width=\"1.5\" "
                            "stroke-dasharray=\"8 4\"/>\n"
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                            "fill=\"" C_BUDGET "\">frame budget %.2f ms (%g Hz)</text>\n",
                            LEFT, y, RIGHT, y, RIGHT - 6, y - 5, budget, res->target_hz);
    }
    series(&b, &a1, res, offsetof(tk_load_row_t, mspt_p50), C_P50, 2);
    series(&b, &a1, res, offsetof(tk_load_row_t, mspt_p99), C_P99, 2);
    /* Legend, top left inside the panel. */
    double lx = LEFT + 12, ly = TOP1 + 16;
    tk__load_buf_printf(&b,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"white\" "
                        "fill-opacity=\"0.85\" stroke=\"" C_GRID "\"/>\n",
                        lx - 6, ly - 12, isfinite(budget) ? 390 : 280, 20);
    tk__load_buf_printf(
        &b,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_P50
        "\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">p50 per second</text>\n",
        lx, ly - 4, lx + 22, ly - 4, lx + 28, ly);
    lx += 135;
    tk__load_buf_printf(
        &b,
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_P99
        "\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">p99 per second</text>\n",
        lx, ly - 4, lx + 22, ly - 4, lx + 28, ly);
    lx += 135;
    if (isfinite(budget))
        tk__load_buf_printf(&b,
                            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                            "stroke=\"" C_BUDGET "\" stroke-width=\"1.5\" "
                            "stroke-dasharray=\"8 4\"/><text x=\"%.1f\" y=\"%.1f\">frame "
                            "budget</text>\n",
                            lx, ly - 4, lx + 22, ly - 4, lx + 28, ly);

    /* Entities panel. */
    xticks(&b, &a2, xstep, true);
    panel(&b, &a2, ystep2, true, "entities");
    if (res->nrows) {
        tk__load_buf_printf(&b, "<path d=\"M%.1f %.1f ", px_x(&a2, res->rows[0].t), BOT2);
        for (size_t i = 0; i < res->nrows; i++)
            tk__load_buf_printf(&b, "L%.1f %.1f ", px_x(&a2, res->rows[i].t),
                                px_y(&a2, (double)res->rows[i].entities));
        tk__load_buf_printf(&b,
                            "L%.1f %.1f Z\" fill=\"" C_ENT "\" fill-opacity=\"0.25\" "
                            "stroke=\"none\"/>\n",
                            px_x(&a2, res->rows[res->nrows - 1].t), BOT2);
        tk__load_buf_puts(&b, "<path fill=\"none\" d=\"");
        for (size_t i = 0; i < res->nrows; i++)
            tk__load_buf_printf(&b, "%s%.1f %.1f ", i ? "L" : "M", px_x(&a2, res->rows[i].t),
                                px_y(&a2, (double)res->rows[i].entities));
        tk__load_buf_puts(&b, "\" stroke=\"" C_ENT "\" stroke-width=\"2\"/>\n");
    } else {
        tk__load_buf_printf(&b,
                            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">no stats "
                            "events received</text>\n",
                            (LEFT + RIGHT) / 2, (TOP1 + BOT1) / 2);
    }
    tk__load_buf_printf(&b,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time since the "
                        "start (s)</text>\n",
                        (LEFT + RIGHT) / 2, BOT2 + 38);
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
