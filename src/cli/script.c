/*
 * script.c - tickctl's batches and scripts: many requests over one
 * connection, every answer printed in the order of the requests.
 *
 *   tickctl '[{"method":"world.trace","params":{"frames":2}},
 *             {"method":"world.step","params":{"frames":2}}]'
 *   tickctl - < requests.txt
 *
 * A JSON array on the command line is one JSON-RPC batch: tickd runs its
 * members at one frame boundary, in order, and answers them in one array.
 * `-` reads standard input, one request a line, in any of three forms:
 *
 *   {"method": "entity.spawn", "params": {"class": "counter"}}   an object
 *   [{"method": "world.pause"}, {"method": "world.status"}]      a batch
 *   entity.spawn class=counter count=10 tick.interval=0.5       as argv
 *
 * The third is the command line's METHOD [JSON-PARAMS | key=value ...],
 * split into words as a shell would ('...' and "..." quote, a backslash
 * escapes), or METHOD followed by a JSON object taken to the end of the
 * line.  Blank lines and lines starting with # are skipped, so a script is
 * a readable file.  Objects may carry "id" (an integer or a string) and
 * "jsonrpc": "2.0"; tickctl numbers the requests that have no id (from 1),
 * so every request is answered (there are no notifications).
 *
 * Lines are sent as they are read, without waiting for the answers before
 * them (pipelining), at most WINDOW requests ahead of the answers, so
 * tickd's per-client queue ([control] max_pending) is never the limit.
 * Pipelined requests behave as they do for any client: tickd runs them in
 * order, but an answered-later call (world.step, engine.sprint, world.trace)
 * lets the requests after it run before it answers.  Answers are matched
 * to requests by id, so they are printed in input order whatever order
 * they arrive in; results go to stdout, errors to stderr located by input
 * line ("tickctl: line 3: error -32001: ..."; in a batch also
 * "request 2").  An error answer does not stop the script: the exit status
 * is 1 at the end.  A line that is not a request is a usage error: it and
 * everything after it are not sent, the answers still due are printed,
 * and the exit status is 2.
 *
 * What it deliberately does not do: wait for an answer before sending the
 * next line (put a request that must see another's effect after the
 * other's answer in a second tickctl run), retry, or reconnect.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tickctl_int.h"

#define WINDOW 64                      /* requests sent and not yet answered, at most
                                          (a longer batch line is sent alone) */
#define STDIN_CHUNK ((size_t)64 * 1024) /* bytes per read of stdin */

/* One request of a batch or a line. */
typedef struct member {
    json_t *id;     /* the id sent (owned) */
    char *method;   /* the method sent (owned) */
    json_t *answer; /* its response object (owned); NULL until it arrives */
} member_t;

/* What one input line (or the command line) sent. */
typedef struct group {
    long line;       /* line of stdin, 1-based; 0: the command line */
    bool batch;      /* sent as a JSON array */
    size_t n;        /* members */
    size_t answered; /* members with an answer */
    member_t *m;     /* n members, in the order sent */
} group_t;

typedef struct run {
    const tk_ctl_session_t *s;
    tk_ctl_conn_t c;
    tk_ctl_buf_t out;  /* request bytes; [out_off, out.len) not yet sent */
    size_t out_off;    /* bytes of `out` sent */
    bool send_closed;  /* tickd stopped taking requests */
    group_t *q;        /* groups in input order, [head, tail) unprinted */
    size_t head, tail, cap;
    size_t in_flight;  /* members queued or sent and not answered */
    json_int_t next_id; /* the next id tickctl assigns */
    int status;        /* exit status so far: the worst one */
    /* stdin (scripts only) */
    int in_fd;         /* 0, or -1: no input (a command-line batch) */
    tk_ctl_buf_t in;   /* bytes read; [in_start, in.len) not yet parsed */
    size_t in_start, in_scan;
    bool in_eof;       /* end of input reached */
    bool in_stopped;   /* a bad line: read nothing more */
    long lineno;       /* lines read */
} run_t;

static void worsen(run_t *r, int status)
{
    if (status > r->status)
        r->status = status;
}

/* ---- building requests ------------------------------------------------- */

static void group_free(group_t *g)
{
    for (size_t i = 0; i < g->n; i++) {
        json_decref(g->m[i].id);
        free(g->m[i].method);
        json_decref(g->m[i].answer);
    }
    free(g->m);
    memset(g, 0, sizeof *g);
}

/* Add a member for `method` with `id` (stolen; NULL: the next number). */
static member_t *group_add(run_t *r, group_t *g, const char *method, json_t *id)
{
    member_t *m = realloc(g->m, (g->n + 1) * sizeof *g->m);
    if (!m)
        tk__ctl_oom();
    g->m = m;
    m = &g->m[g->n++];
    m->id = id ? id : json_integer(r->next_id++);
    m->method = strdup(method);
    m->answer = NULL;
    if (!m->id || !m->method)
        tk__ctl_oom();
    return m;
}

/* The request object for `m` and `params` (borrowed; NULL: none). */
static json_t *request_of(const member_t *m, json_t *params)
{
    json_t *req = json_object();
    if (!req || json_object_set_new(req, "jsonrpc", json_string("2.0")) < 0 ||
        json_object_set(req, "id", m->id) < 0 ||
        json_object_set_new(req, "method", json_string(m->method)) < 0 ||
        (params && json_object_set(req, "params", params) < 0))
        tk__ctl_oom();
    return req;
}

/*
 * A request written as a JSON object: {"method", "params"?, "id"?,
 * "jsonrpc"?}.  Adds its member to `g` and returns the request to send
 * (new), or NULL with a heap sentence in *err.
 */
static json_t *from_object(run_t *r, group_t *g, json_t *obj, char **err)
{
    static const char *const members[] = {"jsonrpc", "method", "params", "id"};
    if (!json_is_object(obj)) {
        *err = tk__ctl_strf("a request must be a JSON object {\"method\", \"params\"?, "
                            "\"id\"?}");
        return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        size_t i = 0;
        while (i < 4 && strcmp(k, members[i]) != 0)
            i++;
        if (i < 4)
            continue;
        char *hint = tk__ctl_closest(k, members, 4);
        *err = tk__ctl_strf("unknown member \"%s\" in a request%s%s%s", k,
                            hint ? " (did you mean " : "", hint ? hint : "", hint ? "?)" : "");
        free(hint);
        return NULL;
    }
    json_t *ver = json_object_get(obj, "jsonrpc");
    if (ver && (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0)) {
        *err = tk__ctl_strf("\"jsonrpc\" must be \"2.0\"");
        return NULL;
    }
    json_t *method = json_object_get(obj, "method");
    if (!json_is_string(method) || json_string_length(method) == 0) {
        *err = tk__ctl_strf("a request needs \"method\", a non-empty string");
        return NULL;
    }
    json_t *params = json_object_get(obj, "params");
    if (params && !json_is_object(params)) {
        *err = tk__ctl_strf("\"params\" of %s must be a JSON object", json_string_value(method));
        return NULL;
    }
    json_t *id = json_object_get(obj, "id");
    if (id && !json_is_integer(id) && !json_is_string(id)) {
        *err = tk__ctl_strf("\"id\" of %s must be an integer or a string (or absent: "
                            "tickctl numbers it)",
                            json_string_value(method));
        return NULL;
    }
    member_t *m = group_add(r, g, json_string_value(method), id ? json_incref(id) : NULL);
    return request_of(m, params);
}

/* A batch: a non-empty array of request objects.  Fills `g` and returns the
 * array to send (new), or NULL with *err. */
static json_t *from_array(run_t *r, group_t *g, json_t *arr, char **err)
{
    if (json_array_size(arr) == 0) {
        *err = tk__ctl_strf("an empty batch (tickd answers it with invalid request)");
        return NULL;
    }
    json_t *out = json_array();
    if (!out)
        tk__ctl_oom();
    g->batch = true;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char *why = NULL;
        json_t *req = from_object(r, g, json_array_get(arr, i), &why);
        if (!req) {
            *err = tk__ctl_strf("request %zu of the batch: %s", i + 1, why);
            free(why);
            json_decref(out);
            return NULL;
        }
        if (json_array_append_new(out, req) < 0)
            tk__ctl_oom();
    }
    return out;
}

/*
 * Split `s` into words as a POSIX shell splits a simple command: blanks
 * separate words, '...' keeps its text as it is, "..." keeps its text but
 * for \" \\ \$ \` which lose their backslash, and a backslash outside
 * quotes keeps the next character.  Returns the number of words (a heap
 * array of heap strings in *words; free with free_words), or -1 with *err
 * for an unterminated quote.
 */
static int split_words(const char *s, char ***words, char **err)
{
    char **w = NULL;
    int n = 0;
    tk_ctl_buf_t cur = {0};
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        cur.len = 0;
        while (*s && *s != ' ' && *s != '\t') {
            char q = *s;
            if (q == '\'') {
                const char *end = strchr(s + 1, '\'');
                if (!end)
                    goto unterminated;
                tk__ctl_buf_append(&cur, s + 1, (size_t)(end - s - 1));
                s = end + 1;
            } else if (q == '"') {
                s++;
                while (*s && *s != '"') {
                    if (*s == '\\' && s[1] && strchr("\"\\$`", s[1]))
                        s++;
                    tk__ctl_buf_putc(&cur, *s++);
                }
                if (!*s)
                    goto unterminated;
                s++;
            } else if (q == '\\' && s[1]) {
                tk__ctl_buf_putc(&cur, s[1]);
                s += 2;
            } else {
                tk__ctl_buf_putc(&cur, *s++);
            }
        }
        tk__ctl_buf_putc(&cur, '\0');
        char **nw = realloc(w, (size_t)(n + 1) * sizeof *w);
        if (!nw)
            tk__ctl_oom();
        w = nw;
        w[n] = strdup(cur.data);
        if (!w[n])
            tk__ctl_oom();
        n++;
    }
    tk__ctl_buf_free(&cur);
    *words = w;
    return n;
unterminated:
    tk__ctl_buf_free(&cur);
    for (int i = 0; i < n; i++)
        free(w[i]);
    free(w);
    *err = tk__ctl_strf("a quote is not closed");
    return -1;
}

static void free_words(char **w, int n)
{
    for (int i = 0; i < n; i++)
        free(w[i]);
    free(w);
}

/* METHOD [JSON-PARAMS | key=value ...] on one line.  Fills `g` and returns
 * the request (new), or NULL with *err. */
static json_t *from_words(run_t *r, group_t *g, const char *text, char **err)
{
    /* METHOD {...}: the object runs to the end of the line, quotes and all. */
    size_t mlen = strcspn(text, " \t");
    const char *rest = text + mlen + strspn(text + mlen, " \t");
    if (*rest == '{') {
        json_error_t jerr;
        json_t *params = json_loads(rest, JSON_REJECT_DUPLICATES, &jerr);
        if (!json_is_object(params)) {
            *err = params ? tk__ctl_strf("parameters must be a JSON object")
                          : tk__ctl_strf("invalid JSON parameters at column %d: %s",
                                         jerr.column + (int)(rest - text), jerr.text);
            json_decref(params);
            return NULL;
        }
        char *method = tk__ctl_strf("%.*s", (int)mlen, text);
        member_t *m = group_add(r, g, method, NULL);
        free(method);
        json_t *req = request_of(m, params);
        json_decref(params);
        return req;
    }
    char **w;
    int n = split_words(text, &w, err);
    if (n < 0)
        return NULL;
    json_t *params = NULL;
    if (tk__ctl_params_build(n - 1, w + 1, &params, err) < 0) {
        free_words(w, n);
        return NULL;
    }
    member_t *m = group_add(r, g, w[0], NULL);
    json_t *req = request_of(m, params);
    json_decref(params);
    free_words(w, n);
    return req;
}

/* Append `g` to the queue and its request text (`msg`, stolen) to the
 * bytes to send. */
static void enqueue(run_t *r, group_t *g, json_t *msg)
{
    if (r->tail == r->cap) {
        if (r->head > 0) {
            memmove(r->q, r->q + r->head, (r->tail - r->head) * sizeof *r->q);
            r->tail -= r->head;
            r->head = 0;
        } else {
            r->cap = r->cap ? r->cap * 2 : 16;
            r->q = realloc(r->q, r->cap * sizeof *r->q);
            if (!r->q)
                tk__ctl_oom();
        }
    }
    r->q[r->tail++] = *g;
    r->in_flight += g->n;
    tk__ctl_json_append(&r->out, msg, 0);
    tk__ctl_buf_putc(&r->out, '\n');
    json_decref(msg);
}

/*
 * One line of stdin (`len` bytes, no newline).  Comments and blank lines
 * are skipped; a request is queued; anything else is reported, and stops
 * the input with status 2.
 */
static void take_input_line(run_t *r, const char *text, size_t len)
{
    size_t lead = 0;
    while (lead < len && (text[lead] == ' ' || text[lead] == '\t'))
        lead++;
    if (lead == len || text[lead] == '#')
        return;
    char *err = NULL;
    json_t *msg = NULL;
    group_t g = {.line = r->lineno};
    if (memchr(text, '\0', len) || !tk__ctl_utf8_valid(text, len)) {
        err = tk__ctl_strf("not valid UTF-8 text");
    } else if (text[lead] == '{' || text[lead] == '[') {
        json_error_t jerr;
        json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!v)
            err = tk__ctl_strf("invalid JSON at column %d: %s", jerr.column, jerr.text);
        else
            msg = json_is_array(v) ? from_array(r, &g, v, &err) : from_object(r, &g, v, &err);
        json_decref(v);
    } else {
        char *line = tk__ctl_strf("%.*s", (int)len, text);
        msg = from_words(r, &g, line + lead, &err);
        free(line);
    }
    if (!msg) {
        tk__ctl_say("line %ld: %s; it and the lines after it are not sent", r->lineno, err);
        free(err);
        group_free(&g);
        r->in_stopped = true;
        worsen(r, TK_CTL_EXIT_USAGE);
        return;
    }
    enqueue(r, &g, msg);
}

/* Parse the complete lines read so far while the window has room (and the
 * last, unterminated one at the end of input). */
static void take_input(run_t *r)
{
    tk_ctl_buf_t *in = &r->in;
    while (!r->in_stopped && r->in_flight < WINDOW) {
        char *nl = in->len > r->in_scan
                       ? memchr(in->data + r->in_scan, '\n', in->len - r->in_scan)
                       : NULL;
        size_t end;
        if (nl) {
            end = (size_t)(nl - in->data);
        } else if (r->in_eof && in->len > r->in_start) {
            end = in->len;
        } else {
            r->in_scan = in->len;
            return;
        }
        size_t n = end - r->in_start;
        const char *line = in->data + r->in_start;
        r->in_start = r->in_scan = end < in->len ? end + 1 : end;
        if (n > 0 && line[n - 1] == '\r')
            n--;
        r->lineno++;
        take_input_line(r, line, n);
    }
}

/* Read what stdin has (it was reported readable). */
static void read_input(run_t *r)
{
    tk_ctl_buf_t *in = &r->in;
    if (r->in_start > 0) {
        memmove(in->data, in->data + r->in_start, in->len - r->in_start);
        in->len -= r->in_start;
        r->in_scan -= r->in_start;
        r->in_start = 0;
    }
    tk__ctl_buf_reserve(in, STDIN_CHUNK);
    for (;;) {
        ssize_t n = read(r->in_fd, in->data + in->len, in->cap - in->len);
        if (n > 0) {
            in->len += (size_t)n;
            return;
        }
        if (n == 0) {
            r->in_eof = true;
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            return;
        tk__ctl_say("reading stdin: %s", strerror(errno));
        r->in_eof = true;
        worsen(r, TK_CTL_EXIT_FAIL);
        return;
    }
}

/* ---- answers ------------------------------------------------------------ */

/* The unanswered member of groups [head, tail) with this id, oldest first,
 * in batch groups or in single ones; NULL if none. */
static member_t *find_member(run_t *r, const json_t *id, bool batch, group_t **gp)
{
    for (size_t k = r->head; k < r->tail; k++) {
        group_t *g = &r->q[k];
        if (g->batch != batch || g->answered == g->n)
            continue;
        for (size_t i = 0; i < g->n; i++) {
            if (!g->m[i].answer && json_equal(g->m[i].id, id)) {
                *gp = g;
                return &g->m[i];
            }
        }
    }
    return NULL;
}

/* The oldest group still waiting for an answer (only batches with
 * `batch_only`), or NULL. */
static group_t *oldest_waiting(run_t *r, bool batch_only)
{
    for (size_t k = r->head; k < r->tail; k++)
        if (r->q[k].answered < r->q[k].n && (r->q[k].batch || !batch_only))
            return &r->q[k];
    return NULL;
}

static void answer(run_t *r, group_t *g, member_t *m, json_t *msg)
{
    m->answer = json_incref(msg);
    g->answered++;
    r->in_flight--;
}

/*
 * An error answered with id null (a request tickd could not read, a batch
 * refused as a whole, a line over its limit): it belongs to the oldest
 * request still waiting, as tickd answers in order.  Every waiting member
 * of that group gets it.
 */
static void answer_null(run_t *r, json_t *msg)
{
    group_t *g = oldest_waiting(r, false);
    if (!g) {
        tk__ctl_say("tickd at %s answered a request tickctl did not send", r->s->socket);
        worsen(r, TK_CTL_EXIT_FAIL);
        return;
    }
    for (size_t i = 0; i < g->n; i++)
        if (!g->m[i].answer)
            answer(r, g, &g->m[i], msg);
}

/* One response object (not a batch answer).  0, or -1 when malformed. */
static int on_response(run_t *r, json_t *msg, bool in_batch, group_t **batch_group)
{
    char *why = NULL;
    tk_ctl_msg_kind_t kind = tk__ctl_msg_classify(msg, &why);
    if (kind == TK_CTL_MSG_NOTIFICATION && !in_batch)
        return 0; /* none are subscribed; ignore any */
    if (kind == TK_CTL_MSG_MALFORMED || kind == TK_CTL_MSG_NOTIFICATION) {
        tk__ctl_say("malformed response from tickd at %s: %s", r->s->socket,
                    why ? why : "a notification inside a batch answer");
        free(why);
        return -1;
    }
    const json_t *id = json_object_get(msg, "id");
    if (json_is_null(id) && in_batch) {
        /* A member tickd could not read: the first one unanswered. */
        group_t *g = *batch_group ? *batch_group : oldest_waiting(r, true);
        for (size_t i = 0; g && i < g->n; i++)
            if (!g->m[i].answer) {
                *batch_group = g;
                answer(r, g, &g->m[i], msg);
                return 0;
            }
        tk__ctl_say("ignoring a batch answer from tickd at %s to requests tickctl did not "
                    "send",
                    r->s->socket);
        worsen(r, TK_CTL_EXIT_FAIL);
        return 0;
    }
    if (json_is_null(id)) {
        answer_null(r, msg);
        return 0;
    }
    group_t *g = NULL;
    member_t *m = NULL;
    if (in_batch && *batch_group) {
        g = *batch_group;
        for (size_t i = 0; i < g->n && !m; i++)
            if (!g->m[i].answer && json_equal(g->m[i].id, id))
                m = &g->m[i];
    } else {
        m = find_member(r, id, in_batch, &g);
    }
    if (!m) {
        tk__ctl_say("ignoring a response from tickd at %s to an id tickctl did not send",
                    r->s->socket);
        worsen(r, TK_CTL_EXIT_FAIL);
        return 0;
    }
    if (in_batch)
        *batch_group = g;
    answer(r, g, m, msg);
    return 0;
}

/* One line from tickd.  0, or -1 on a malformed message (fatal). */
static int on_line(run_t *r, const char *line, size_t len)
{
    if (len == 0)
        return 0;
    json_error_t jerr;
    json_t *msg = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
    if (!msg) {
        tk__ctl_say("malformed response from tickd at %s: not JSON (column %d: %s)",
                    r->s->socket, jerr.column, jerr.text);
        return -1;
    }
    int rc = 0;
    if (json_is_array(msg)) {
        group_t *g = NULL;
        if (json_array_size(msg) == 0) {
            tk__ctl_say("malformed response from tickd at %s: an empty batch answer",
                        r->s->socket);
            rc = -1;
        }
        for (size_t i = 0; rc == 0 && i < json_array_size(msg); i++)
            rc = on_response(r, json_array_get(msg, i), true, &g);
    } else {
        group_t *g = NULL;
        rc = on_response(r, msg, false, &g);
    }
    json_decref(msg);
    return rc;
}

/* Print the groups at the head of the queue whose answers are all in. */
static void print_ready(run_t *r)
{
    while (r->head < r->tail && r->q[r->head].answered == r->q[r->head].n) {
        group_t *g = &r->q[r->head];
        for (size_t i = 0; i < g->n; i++) {
            const json_t *msg = g->m[i].answer;
            if (json_object_get(msg, "result")) {
                tk__ctl_print_result(json_object_get(msg, "result"), r->s->compact);
                continue;
            }
            char where[64];
            if (g->line && g->batch)
                snprintf(where, sizeof where, "line %ld, request %zu", g->line, i + 1);
            else if (g->line)
                snprintf(where, sizeof where, "line %ld", g->line);
            else
                snprintf(where, sizeof where, "request %zu", i + 1);
            tk__ctl_print_error(msg, g->m[i].method, where);
            worsen(r, TK_CTL_EXIT_FAIL);
        }
        group_free(g);
        r->head++;
    }
}

/* ---- the loop ------------------------------------------------------------- */

/* Report a connection failure `rc` and return the exit status to end with. */
static int conn_failed(run_t *r, int rc, const char *what)
{
    int st = tk__ctl_conn_error(r->s->socket, r->s->timeout, &r->c, rc, what);
    if (st > r->status)
        return st;
    return r->status ? r->status : TK_CTL_EXIT_FAIL;
}

/*
 * Send, read and print until the input is done and every request is
 * answered.  Returns the exit status.
 */
static int pump(run_t *r)
{
    for (;;) {
        if (r->in_fd >= 0)
            take_input(r);
        print_ready(r);
        bool input_open = r->in_fd >= 0 && !r->in_eof && !r->in_stopped;
        bool pending_out = r->out_off < r->out.len && !r->send_closed;
        if (!input_open && r->head == r->tail)
            return r->status;

        struct pollfd p[2] = {
            {.fd = r->c.fd, .events = (short)(POLLIN | (pending_out ? POLLOUT : 0))},
            {.fd = -1, .events = POLLIN},
        };
        if (input_open && r->in_flight < WINDOW)
            p[1].fd = r->in_fd;
        struct timespec ts, *tsp = NULL;
        if (r->c.deadline_ns) {
            uint64_t now = tk__ctl_now_ns();
            if (now >= r->c.deadline_ns)
                return conn_failed(r, TK_CTL_ETIMEDOUT, "waiting for");
            uint64_t left = r->c.deadline_ns - now;
            ts.tv_sec = (time_t)(left / 1000000000ull);
            ts.tv_nsec = (long)(left % 1000000000ull);
            tsp = &ts;
        }
        int n = ppoll(p, 2, tsp, NULL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            tk__ctl_say("poll: %s", strerror(errno));
            return TK_CTL_EXIT_FAIL;
        }
        if (n == 0)
            continue; /* the deadline check above reports it */
        if (p[1].revents)
            read_input(r);
        if (p[0].revents & POLLOUT) {
            long w = tk__ctl_conn_send_now(&r->c, r->out.data + r->out_off,
                                           r->out.len - r->out_off);
            if (w == TK_CTL_ECLOSED) {
                /* tickd may have answered (e.g. a line over its limit) and
                 * closed: read what it left. */
                r->send_closed = true;
            } else if (w < 0) {
                return conn_failed(r, (int)w, "sending to");
            } else {
                r->out_off += (size_t)w;
                if (r->out_off == r->out.len)
                    r->out.len = r->out_off = 0;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            int rc;
            while ((rc = tk__ctl_conn_recv(&r->c)) > 0) {
                const char *line;
                size_t len;
                while (tk__ctl_conn_take_line(&r->c, &line, &len))
                    if (on_line(r, line, len) < 0) {
                        print_ready(r);
                        return TK_CTL_EXIT_FAIL > r->status ? TK_CTL_EXIT_FAIL : r->status;
                    }
            }
            if (rc < 0) {
                print_ready(r);
                if (r->head == r->tail && !input_open)
                    return r->status;
                return conn_failed(r, rc, "waiting for");
            }
        }
    }
}

/* Connect, run, clean up. */
static int run_session(run_t *r)
{
    r->c.fd = -1;
    if (r->s->timeout > 0)
        r->c.deadline_ns = tk__ctl_now_ns() + (uint64_t)(r->s->timeout * 1e9) + 1;
    int rc = tk__ctl_conn_open(&r->c, r->s->socket);
    int status = rc < 0 ? tk__ctl_conn_error(r->s->socket, r->s->timeout, &r->c, rc,
                                             "connecting to")
                        : pump(r);
    tk__ctl_conn_close(&r->c);
    for (size_t k = r->head; k < r->tail; k++)
        group_free(&r->q[k]);
    free(r->q);
    tk__ctl_buf_free(&r->out);
    tk__ctl_buf_free(&r->in);
    return status;
}

int tk__ctl_run_batch(const tk_ctl_session_t *s, const char *text)
{
    run_t r = {.s = s, .in_fd = -1, .next_id = 1};
    json_error_t jerr;
    json_t *arr = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_array(arr)) {
        tk__ctl_say("a batch must be a JSON array of requests: %s (try 'tickctl --help')",
                    arr ? "not an array" : jerr.text);
        json_decref(arr);
        return TK_CTL_EXIT_USAGE;
    }
    group_t g = {.line = 0};
    char *err = NULL;
    json_t *msg = from_array(&r, &g, arr, &err);
    json_decref(arr);
    if (!msg) {
        tk__ctl_say("%s (try 'tickctl --help')", err);
        free(err);
        group_free(&g);
        return TK_CTL_EXIT_USAGE;
    }
    enqueue(&r, &g, msg);
    return run_session(&r);
}

int tk__ctl_run_script(const tk_ctl_session_t *s)
{
    run_t r = {.s = s, .in_fd = STDIN_FILENO, .next_id = 1};
    return run_session(&r);
}
