/*
 * top.c - `tickctl top`, a live view of where tickd's frames go (like
 * top(1)), and the dispatch of tickctl's commands for people (top, trace).
 *
 *   tickctl [-s PATH | -w NAME] top [-n N] [--once] [--rows R]
 *
 * Every refresh runs a 1-second engine.profile (so a refresh takes about a
 * second and shows that second), then engine.stats, and draws one block:
 * TPS, MSPT p50/p99/max, entities, the split of the work, and the costliest
 * (class, group, level) rows with ms per frame, % of the frame's work and
 * calls per frame.  On a terminal each block replaces the last (ANSI clear
 * and home); otherwise blocks are printed one after the other, separated by
 * a blank line, so `tickctl top -n 3 > file` reads well.
 *
 * Not here: keyboard commands (q, sorting) - SIGINT ends it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "tickctl_int.h"

#define TOP_PROFILE_SECONDS 1
#define TOP_DEFAULT_ROWS 15

/* ---- one request on an open connection ---------------------------------- */

int tk__ctl_rpc(tk_ctl_conn_t *c, const char *method, json_t *params, json_t **result,
                char **err)
{
    static json_int_t next_id = 1;
    json_int_t id = next_id++;
    json_t *req = json_object();
    if (!req || json_object_set_new(req, "jsonrpc", json_string("2.0")) < 0 ||
        json_object_set_new(req, "id", json_integer(id)) < 0 ||
        json_object_set_new(req, "method", json_string(method)) < 0 ||
        (params && json_object_set(req, "params", params) < 0))
        tk__ctl_oom();
    tk_ctl_buf_t b = {0};
    tk__ctl_json_append(&b, req, 0);
    tk__ctl_buf_putc(&b, '\n');
    json_decref(req);
    int rc = tk__ctl_conn_send(c, b.data, b.len);
    tk__ctl_buf_free(&b);
    if (rc < 0 && rc != TK_CTL_ECLOSED) {
        *err = tk__ctl_strf("sending %s: %s", method,
                            rc == TK_CTL_ETIMEDOUT ? "timed out" : strerror(c->err));
        return TK_CTL_EXIT_FAIL;
    }
    for (;;) {
        const char *line;
        size_t len;
        rc = tk__ctl_conn_read_line(c, &line, &len);
        if (rc < 0) {
            *err = tk__ctl_strf("waiting for %s: %s", method,
                                rc == TK_CTL_ETIMEDOUT  ? "timed out"
                                : rc == TK_CTL_ECLOSED  ? "tickd closed the connection"
                                : rc == TK_CTL_ETOOLONG ? "response too long"
                                                        : strerror(c->err));
            return TK_CTL_EXIT_FAIL;
        }
        if (len == 0)
            continue;
        json_error_t jerr;
        json_t *msg = json_loadb(line, len, 0, &jerr);
        if (!json_is_object(msg)) {
            json_decref(msg);
            *err = tk__ctl_strf("malformed response to %s", method);
            return TK_CTL_EXIT_FAIL;
        }
        json_t *jid = json_object_get(msg, "id");
        if (!jid) {
            json_decref(msg); /* a notification */
            continue;
        }
        json_t *e = json_object_get(msg, "error");
        if (e) {
            *err = tk__ctl_strf("error %" JSON_INTEGER_FORMAT ": %s",
                                json_integer_value(json_object_get(e, "code")),
                                json_string_value(json_object_get(e, "message"))
                                    ? json_string_value(json_object_get(e, "message"))
                                    : "?");
            json_decref(msg);
            return TK_CTL_EXIT_FAIL;
        }
        if (!json_is_integer(jid) || json_integer_value(jid) != id ||
            !json_object_get(msg, "result")) {
            json_decref(msg);
            *err = tk__ctl_strf("unexpected response to %s", method);
            return TK_CTL_EXIT_FAIL;
        }
        *result = json_incref(json_object_get(msg, "result"));
        json_decref(msg);
        return 0;
    }
}

int tk__ctl_open(tk_ctl_conn_t *c, const char *socket)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    int rc = tk__ctl_conn_open(c, socket);
    if (rc < 0) {
        fprintf(stderr, "tickctl: cannot connect to tickd at %s: %s\n", socket,
                strerror(c->err));
        return TK_CTL_EXIT_USAGE;
    }
    return 0;
}

/* ---- dispatch ------------------------------------------------------------ */

int tk__ctl_subcommand(int argc, char *argv[],
                       const char *(*resolve)(const char *socket, const char *world))
{
    const char *socket = NULL, *world = NULL, *other = NULL;
    int i = 1;
    /* Global options that may come before the command. */
    while (i < argc && argv[i][0] == '-') {
        if ((!strcmp(argv[i], "-s") || !strcmp(argv[i], "--socket")) && i + 1 < argc) {
            socket = argv[i + 1];
            i += 2;
        } else if (!strncmp(argv[i], "--socket=", 9)) {
            socket = argv[i] + 9;
            i++;
        } else if ((!strcmp(argv[i], "-w") || !strcmp(argv[i], "--world")) && i + 1 < argc) {
            world = argv[i + 1];
            i += 2;
        } else if (!strncmp(argv[i], "--world=", 8)) {
            world = argv[i] + 8;
            i++;
        } else if ((!strcmp(argv[i], "--timeout") || !strcmp(argv[i], "--id")) && i + 1 < argc) {
            other = argv[i];
            i += 2;
        } else if (!strcmp(argv[i], "--compact") || !strncmp(argv[i], "--timeout=", 10) ||
                   !strncmp(argv[i], "--id=", 5)) {
            other = argv[i];
            i++;
        } else {
            return -1; /* anything else: the ordinary command line */
        }
    }
    if (i >= argc || (strcmp(argv[i], "top") && strcmp(argv[i], "trace")))
        return -1;
    if (other) {
        fprintf(stderr, "tickctl: %s does not apply to '%s' (try 'tickctl %s --help')\n", other,
                argv[i], argv[i]);
        return TK_CTL_EXIT_USAGE;
    }
    bool top = !strcmp(argv[i], "top");
    /* The command's own options; --socket and --world are accepted among
     * them too. */
    int n = argc - i;
    char **args = argv + i;
    for (int k = 1; k < n; k++) {
        bool s = !strcmp(args[k], "-s") || !strcmp(args[k], "--socket");
        bool w = !strcmp(args[k], "-w") || !strcmp(args[k], "--world");
        if ((s || w) && k + 1 < n) {
            if (s)
                socket = args[k + 1];
            else
                world = args[k + 1];
            memmove(args + k, args + k + 2, (size_t)(n - k - 2) * sizeof *args);
            n -= 2;
            k--;
        }
    }
    const char *path = resolve(socket && socket[0] ? socket : NULL, world);
    return top ? tk__ctl_top_main(n, args, path) : tk__ctl_trace_main(n, args, path);
}

/* ---- top ------------------------------------------------------------------ */

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* 12034 -> "12,034" */
static void thousands(char *buf, size_t len, double v)
{
    char raw[32];
    snprintf(raw, sizeof raw, "%.0f", v);
    size_t n = strlen(raw), o = 0;
    for (size_t k = 0; k < n && o + 2 < len; k++) {
        if (k && raw[k - 1] != '-' && (n - k) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = raw[k];
    }
    buf[o] = '\0';
}

static int usage(const char *fmt, const char *arg)
{
    fputs("tickctl top: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\nusage: tickctl [-s PATH | -w NAME] top [-n N] [--once] [--rows R]\n", stderr);
    return TK_CTL_EXIT_USAGE;
}

static bool parse_count(const char *s, long max, long *out)
{
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || end == s || *end || errno || v < 1 || v > max)
        return false;
    *out = v;
    return true;
}

/* One block of the view into `b`. */
static void draw(tk_ctl_buf_t *b, const json_t *prof, const json_t *st, long rows)
{
    char line[512], ent[32];
    const json_t *m = json_object_get(st, "mspt");
    double frames = num(prof, "frames"), work = num(prof, "work_ms");
    thousands(ent, sizeof ent, num(st, "entities"));
    snprintf(line, sizeof line,
             "tickd  frame %.0f  TPS %.1f (1m %.2f)  MSPT %.2f/%.2f/%.2f ms (p50/p99/max)  "
             "%s entities\n",
             num(st, "frame"), num(st, "tps_1s"), num(st, "tps_1m"), num(m, "p50"),
             num(m, "p99"), num(m, "max"), ent);
    tk__ctl_buf_puts(b, line);
    double per = frames > 0 ? work / frames : 0;
    snprintf(line, sizeof line,
             "last %.2f s: %.0f frames, %.3f ms work per frame: ticks %.3f, timers %.3f, "
             "tickables %.3f, requests %.3f\n\n",
             num(prof, "seconds"), frames, per,
             frames > 0 ? num(prof, "ticks_ms") / frames : 0,
             frames > 0 ? num(prof, "timers_ms") / frames : 0,
             frames > 0 ? num(prof, "tickables_ms") / frames : 0,
             frames > 0 ? num(prof, "requests_ms") / frames : 0);
    tk__ctl_buf_puts(b, line);
    snprintf(line, sizeof line, "%-20s %-16s %-14s %10s %7s %12s\n", "CLASS", "GROUP", "LEVEL",
             "MS/FRAME", "%FRAME", "CALLS/FRAME");
    tk__ctl_buf_puts(b, line);
    const json_t *cls = json_object_get(prof, "classes");
    size_t n = json_array_size(cls);
    for (size_t i = 0; i < n && (long)i < rows; i++) {
        const json_t *c = json_array_get(cls, i);
        snprintf(line, sizeof line, "%-20.20s %-16.16s %-14.14s %10.3f %6.1f%% %12.1f\n",
                 json_string_value(json_object_get(c, "class")),
                 json_string_value(json_object_get(c, "group")),
                 json_string_value(json_object_get(c, "level")),
                 frames > 0 ? num(c, "ms") / frames : 0, num(c, "pct"),
                 frames > 0 ? num(c, "calls") / frames : 0);
        tk__ctl_buf_puts(b, line);
    }
    if (n == 0)
        tk__ctl_buf_puts(b, "(no tick functions ran)\n");
    const json_t *timers = json_object_get(prof, "timers");
    const json_t *tick = json_object_get(prof, "tickables");
    if (json_array_size(timers) || json_array_size(tick)) {
        tk__ctl_buf_puts(b, "\n");
        for (size_t i = 0; i < json_array_size(timers) && i < 3; i++) {
            const json_t *t = json_array_get(timers, i);
            snprintf(line, sizeof line, "timer %-30.30s %10.3f ms/frame %8.0f calls\n",
                     json_string_value(json_object_get(t, "method")),
                     frames > 0 ? num(t, "ms") / frames : 0, num(t, "calls"));
            tk__ctl_buf_puts(b, line);
        }
        for (size_t i = 0; i < json_array_size(tick) && i < 3; i++) {
            const json_t *t = json_array_get(tick, i);
            snprintf(line, sizeof line, "tickable %-27.27s %10.3f ms/frame %8.0f calls\n",
                     json_string_value(json_object_get(t, "class")),
                     frames > 0 ? num(t, "ms") / frames : 0, num(t, "calls"));
            tk__ctl_buf_puts(b, line);
        }
    }
    const json_t *slow = json_array_get(json_object_get(prof, "slowest"), 0);
    if (slow) {
        const json_t *e = json_object_get(slow, "entity");
        snprintf(line, sizeof line, "\nslowest tick: entity %s%.0f %s in %s, %.3f ms (frame %.0f)\n",
                 json_is_integer(e) ? "" : "-", json_is_integer(e) ? num(slow, "entity") : 0,
                 json_string_value(json_object_get(slow, "class")),
                 json_string_value(json_object_get(slow, "group")), num(slow, "ms"),
                 num(slow, "frame"));
        tk__ctl_buf_puts(b, line);
    }
}

int tk__ctl_top_main(int argc, char *argv[], const char *socket)
{
    long iters = 0, rows = 0; /* 0: forever / from the terminal */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--once")) {
            iters = 1;
        } else if (!strcmp(argv[i], "-n") || !strcmp(argv[i], "--iterations")) {
            if (!parse_count(i + 1 < argc ? argv[++i] : NULL, 1000000000L, &iters))
                return usage("-n needs a count >= 1, got '%s'", i < argc ? argv[i] : "");
        } else if (!strcmp(argv[i], "--rows")) {
            if (!parse_count(i + 1 < argc ? argv[++i] : NULL, 10000, &rows))
                return usage("--rows needs a count >= 1, got '%s'", i < argc ? argv[i] : "");
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: tickctl [-s PATH | -w NAME] top [-n N] [--once] [--rows R]\n"
                   "A live view of tickd: TPS, MSPT and the costliest classes, refreshed\n"
                   "every second from a 1 s engine.profile.  -n N: N refreshes, then exit;\n"
                   "--once: one; --rows R: class rows shown (default: what fits).\n");
            return TK_CTL_EXIT_OK;
        } else {
            return usage("unknown argument '%s'", argv[i]);
        }
    }
    bool tty = isatty(STDOUT_FILENO);
    if (!rows) {
        rows = TOP_DEFAULT_ROWS;
        struct winsize ws;
        if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 16)
            rows = ws.ws_row - 14;
    }
    tk_ctl_conn_t c;
    int rc = tk__ctl_open(&c, socket);
    if (rc)
        return rc;
    int status = TK_CTL_EXIT_OK;
    json_t *pp = json_pack("{s:i}", "seconds", TOP_PROFILE_SECONDS);
    for (long it = 0; iters == 0 || it < iters; it++) {
        json_t *prof = NULL, *st = NULL;
        char *err = NULL;
        if (tk__ctl_rpc(&c, "engine.profile", pp, &prof, &err) ||
            tk__ctl_rpc(&c, "engine.stats", NULL, &st, &err)) {
            fprintf(stderr, "tickctl top: %s\n", err);
            free(err);
            json_decref(prof);
            status = TK_CTL_EXIT_FAIL;
            break;
        }
        tk_ctl_buf_t b = {0};
        if (tty)
            tk__ctl_buf_puts(&b, "\x1b[H\x1b[2J");
        else if (it)
            tk__ctl_buf_puts(&b, "\n");
        draw(&b, prof, st, rows);
        json_decref(prof);
        json_decref(st);
        bool okw = fwrite(b.data, 1, b.len, stdout) == b.len && fflush(stdout) == 0;
        tk__ctl_buf_free(&b);
        if (!okw) {
            status = TK_CTL_EXIT_FAIL;
            break;
        }
    }
    json_decref(pp);
    tk__ctl_conn_close(&c);
    return status;
}
