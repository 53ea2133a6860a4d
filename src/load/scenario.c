/*
 * scenario.c - reading a tickd-load scenario: a JSON Lines file of timed
 * requests and checks (the format is documented in README, "Load testing").
 *
 *   {"scenario": "churn", "description": "...", "connections": 4}
 *   {"at": 0, "method": "entity.spawn", "params": {...},
 *    "repeat": {"every": 0.1, "count": 100}, "conn": 0, "save": "spawned",
 *    "consume": false, "expect": {"result": {...}} }
 *   {"at": 5, "expect": {"method": "world.status", "result": {...}}}
 *   {"at": 20, "end": true}
 *
 * Every line is validated before anything is sent: unknown members, wrong
 * types, values out of range, malformed references and expect paths, and
 * references to pools no line saves are errors naming the file and line, as
 * tickd does with its own config.  Blank lines and lines whose first
 * non-blank character is "#" are comments.
 *
 * Requests whose params hold no reference get their text prepared here once
 * (everything but the id), so sending one is a copy and a number.
 *
 * What it deliberately is not: a scripting language (no loops beyond
 * "repeat", no conditions, no variables beyond saved ids).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

#define MAX_AT_S   1e6          /* s: the latest time a line may name */
#define MAX_REPEAT 1000000000LL /* instances of one line */

/* The names referenced and saved, to check every reference has a source. */
typedef struct names {
    char **v;
    int *line; /* line of the first reference (for the message) */
    size_t n, cap;
} names_t;

static void names_add(names_t *ns, const char *name, int line)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0)
            return;
    if (ns->n == ns->cap) {
        ns->cap = ns->cap ? ns->cap * 2 : 8;
        ns->v = tk__load_xrealloc(ns->v, ns->cap * sizeof *ns->v);
        ns->line = tk__load_xrealloc(ns->line, ns->cap * sizeof *ns->line);
    }
    ns->v[ns->n] = tk__load_xstrdup(name);
    ns->line[ns->n] = line;
    ns->n++;
}

static bool names_has(const names_t *ns, const char *name)
{
    for (size_t i = 0; i < ns->n; i++)
        if (strcmp(ns->v[i], name) == 0)
            return true;
    return false;
}

static void names_free(names_t *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        free(ns->v[i]);
    free(ns->v);
    free(ns->line);
}

typedef struct ref_ctx {
    names_t *refs;
    int line;
} ref_ctx_t;

static void seen_ref(void *arg, const char *name)
{
    ref_ctx_t *c = arg;
    names_add(c->refs, name, c->line);
}

/* NULL if every member of `o` is in `allowed` (NULL-terminated), else the
 * first one that is not. */
static const char *unknown_member(const json_t *o, const char *const *allowed)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        bool ok = false;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = strcmp(k, allowed[i]) == 0;
        if (!ok)
            return k;
    }
    return NULL;
}

static bool valid_name(const char *s)
{
    if (!*s)
        return false;
    for (const char *p = s; *p; p++) {
        bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_';
        bool digit = (*p >= '0' && *p <= '9') || *p == '-';
        if (!alpha && !(digit && p != s))
            return false;
    }
    return strlen(s) < 100;
}

/* Seconds (finite, within [0, MAX_AT_S]) to ns; -1 if invalid. */
static int64_t seconds_ns(const json_t *v)
{
    if (!json_is_number(v))
        return -1;
    double s = json_number_value(v);
    if (!isfinite(s) || s < 0 || s > MAX_AT_S)
        return -1;
    return (int64_t)llround(s * 1e9);
}

int64_t tk__load_line_time(const tk_load_line_t *l, uint64_t k)
{
    return l->at_ns + (int64_t)k * l->every_ns;
}

static void line_free(tk_load_line_t *l)
{
    free(l->method);
    json_decref(l->params);
    free(l->prefix);
    free(l->save);
    tk__load_expect_free(&l->expect);
}

void tk__load_scenario_free(tk_load_scenario_t *sc)
{
    for (size_t i = 0; i < sc->nlines; i++)
        line_free(&sc->lines[i]);
    free(sc->lines);
    free(sc->path);
    free(sc->name);
    free(sc->description);
    memset(sc, 0, sizeof *sc);
}

/* The request text up to the id, for a line without references. */
static char *make_prefix(const char *method, const json_t *params)
{
    json_t *m = json_string(method);
    char *mt = m ? json_dumps(m, JSON_ENCODE_ANY) : NULL;
    char *pt = params ? json_dumps(params, JSON_COMPACT) : NULL;
    if (!mt || (params && !pt))
        tk__load_oom();
    char *s = tk__load_strf("{\"jsonrpc\":\"2.0\",\"method\":%s%s%s,\"id\":", mt,
                            params ? ",\"params\":" : "", params ? pt : "");
    json_decref(m);
    free(mt);
    free(pt);
    return s;
}

/*
 * Fill `l` from the method/params of a request line or of a check's expect
 * object `src`.  Returns 0 or -1 with *err (a sentence without file:line).
 */
static int take_call(tk_load_line_t *l, const json_t *src, const char *where, names_t *refs,
                     char **err)
{
    const json_t *m = json_object_get(src, "method");
    if (!json_is_string(m) || !json_string_value(m)[0]) {
        *err = tk__load_strf("%smethod: must be a non-empty string", where);
        return -1;
    }
    l->method = tk__load_xstrdup(json_string_value(m));
    const json_t *p = json_object_get(src, "params");
    if (p && !json_is_object(p)) {
        *err = tk__load_strf("%sparams: must be an object (tickd takes parameters by name)", where);
        return -1;
    }
    if (!p)
        return 0;
    l->params = json_deep_copy(p);
    if (!l->params)
        tk__load_oom();
    ref_ctx_t ctx = {refs, l->lineno};
    int n = tk__load_refs_scan(l->params, seen_ref, &ctx, err);
    if (n < 0)
        return -1;
    l->nrefs = n;
    if (n == 0) {
        /* No reference: unescape "$$" literals once (render does just that
         * when there is nothing to resolve). */
        tk_load_pools_t none = {0};
        char *why = NULL;
        json_t *plain = tk__load_refs_render(&none, l->params, false, &why);
        free(why);
        tk__load_pools_free(&none);
        if (!plain)
            tk__load_oom(); /* cannot fail without references */
        json_decref(l->params);
        l->params = plain;
    }
    return 0;
}

/* Parse one timed line into `l`.  0, 1 for an end line (*end_ns set), or -1. */
static int parse_line(json_t *o, tk_load_line_t *l, int64_t *end_ns, names_t *refs, names_t *saves,
                      char **err)
{
    l->conn = -1;
    l->count = 1;
    const json_t *at = json_object_get(o, "at");
    if (!at) {
        *err = tk__load_strf("\"at\" (seconds after the start) is required");
        return -1;
    }
    l->at_ns = seconds_ns(at);
    if (l->at_ns < 0) {
        *err = tk__load_strf("at: must be a number of seconds in [0, %.0f]", MAX_AT_S);
        return -1;
    }
    const char *bad;
    if (json_object_get(o, "end")) {
        static const char *const allowed[] = {"at", "end", NULL};
        if ((bad = unknown_member(o, allowed))) {
            *err = tk__load_strf("%s: unknown member of an end line (members: at, end)", bad);
            return -1;
        }
        if (!json_is_true(json_object_get(o, "end"))) {
            *err = tk__load_strf("end: must be true");
            return -1;
        }
        *end_ns = l->at_ns;
        return 1;
    }
    const json_t *expect = json_object_get(o, "expect");
    bool check = !json_object_get(o, "method");
    if (check && !expect) {
        *err = tk__load_strf("a line needs \"method\" (a request), \"expect\" (a check) or "
                             "\"end\"");
        return -1;
    }
    if (check) {
        static const char *const allowed[] = {"at", "expect", "repeat", NULL};
        if ((bad = unknown_member(o, allowed))) {
            *err = tk__load_strf("%s: unknown member of a check line (members: at, expect, "
                                 "repeat)",
                                 bad);
            return -1;
        }
    } else {
        static const char *const allowed[] = {"at",   "method",  "params", "repeat", "conn",
                                              "save", "consume", "expect", NULL};
        if ((bad = unknown_member(o, allowed))) {
            *err = tk__load_strf("%s: unknown member of a request line (members: at, method, "
                                 "params, repeat, conn, save, consume, expect)",
                                 bad);
            return -1;
        }
    }
    l->kind = check ? TK_LOAD_CHECK : TK_LOAD_REQUEST;

    const json_t *rep = json_object_get(o, "repeat");
    if (rep) {
        static const char *const allowed[] = {"every", "count", NULL};
        if (!json_is_object(rep)) {
            *err = tk__load_strf("repeat: must be an object {\"every\", \"count\"}");
            return -1;
        }
        if ((bad = unknown_member(rep, allowed))) {
            *err = tk__load_strf("repeat.%s: unknown member (members: every, count)", bad);
            return -1;
        }
        const json_t *cnt = json_object_get(rep, "count");
        if (!json_is_integer(cnt) || json_integer_value(cnt) < 1 ||
            json_integer_value(cnt) > MAX_REPEAT) {
            *err = tk__load_strf("repeat.count: must be an integer in [1, %lld]", MAX_REPEAT);
            return -1;
        }
        l->count = (uint64_t)json_integer_value(cnt);
        const json_t *ev = json_object_get(rep, "every");
        l->every_ns = ev ? seconds_ns(ev) : -1;
        if (l->every_ns < 0) {
            *err = tk__load_strf("repeat.every: must be a number of seconds >= 0 (0: all at "
                                 "once)");
            return -1;
        }
        if ((double)l->at_ns + (double)(l->count - 1) * (double)l->every_ns > MAX_AT_S * 1e9) {
            *err = tk__load_strf("repeat: the last instance would be later than %.0f s", MAX_AT_S);
            return -1;
        }
    }

    if (check) {
        static const char *const allowed[] = {"method", "params", "result", "error", NULL};
        if (!json_is_object(expect)) {
            *err = tk__load_strf("expect: must be an object");
            return -1;
        }
        if ((bad = unknown_member(expect, allowed))) {
            *err = tk__load_strf("expect.%s: unknown member of a check (members: method, "
                                 "params, result, error)",
                                 bad);
            return -1;
        }
        if (take_call(l, expect, "expect.", refs, err) < 0)
            return -1;
    } else {
        if (take_call(l, o, "", refs, err) < 0)
            return -1;
        const json_t *conn = json_object_get(o, "conn");
        if (conn) {
            if (!json_is_integer(conn) || json_integer_value(conn) < 0 ||
                json_integer_value(conn) >= TK_LOAD_MAX_CONNECTIONS) {
                *err = tk__load_strf("conn: must be a connection index in [0, %d)",
                                     TK_LOAD_MAX_CONNECTIONS);
                return -1;
            }
            l->conn = (int)json_integer_value(conn);
        }
        const json_t *save = json_object_get(o, "save");
        if (save) {
            if (!json_is_string(save) || !valid_name(json_string_value(save))) {
                *err = tk__load_strf("save: must be a name (letters, digits, _ and -, not "
                                     "starting with a digit)");
                return -1;
            }
            l->save = tk__load_xstrdup(json_string_value(save));
            names_add(saves, l->save, l->lineno);
        }
        const json_t *consume = json_object_get(o, "consume");
        if (consume) {
            if (!json_is_boolean(consume)) {
                *err = tk__load_strf("consume: must be true or false");
                return -1;
            }
            l->consume = json_is_true(consume);
            if (l->consume && l->nrefs == 0) {
                *err = tk__load_strf("consume: the params hold no $reference to consume");
                return -1;
            }
        }
        if (expect) {
            static const char *const allowed[] = {"result", "error", NULL};
            if (!json_is_object(expect)) {
                *err = tk__load_strf("expect: must be an object");
                return -1;
            }
            if ((bad = unknown_member(expect, allowed))) {
                *err = tk__load_strf("expect.%s: unknown member of a request's expect "
                                     "(members: result, error; a check line has its own "
                                     "method)",
                                     bad);
                return -1;
            }
        }
    }
    if (expect) {
        if (tk__load_expect_compile(expect, &l->expect, err) < 0)
            return -1;
        l->has_expect = true;
    }
    if (l->nrefs == 0)
        l->prefix = make_prefix(l->method, l->params);
    return 0;
}

/* The header line: {"scenario", "description"?, "connections"?}. */
static int parse_header(const json_t *o, tk_load_scenario_t *sc, char **err)
{
    static const char *const allowed[] = {"scenario", "description", "connections", NULL};
    const char *bad = unknown_member(o, allowed);
    if (bad) {
        *err = tk__load_strf("%s: unknown member of the header (members: scenario, "
                             "description, connections)",
                             bad);
        return -1;
    }
    const json_t *name = json_object_get(o, "scenario");
    if (!json_is_string(name) || !json_string_value(name)[0]) {
        *err = tk__load_strf("scenario: must be a non-empty name");
        return -1;
    }
    const json_t *desc = json_object_get(o, "description");
    if (desc && !json_is_string(desc)) {
        *err = tk__load_strf("description: must be a string");
        return -1;
    }
    const json_t *conns = json_object_get(o, "connections");
    if (conns && (!json_is_integer(conns) || json_integer_value(conns) < 1 ||
                  json_integer_value(conns) > TK_LOAD_MAX_CONNECTIONS)) {
        *err = tk__load_strf("connections: must be an integer in [1, %d]", TK_LOAD_MAX_CONNECTIONS);
        return -1;
    }
    free(sc->name);
    sc->name = tk__load_xstrdup(json_string_value(name));
    sc->description = desc ? tk__load_xstrdup(json_string_value(desc)) : NULL;
    sc->connections = conns ? (int)json_integer_value(conns) : 0;
    return 0;
}

/* "dir/ramp-1m.jsonl" -> "ramp-1m" (heap). */
static char *stem_of(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    char *s = tk__load_xstrdup(b);
    char *dot = strrchr(s, '.');
    if (dot && dot != s)
        *dot = '\0';
    return s;
}

int tk__load_scenario_read(const char *path, tk_load_scenario_t *sc, char **err)
{
    memset(sc, 0, sizeof *sc);
    sc->end_ns = -1;
    FILE *f = fopen(path, "r");
    if (!f) {
        *err = tk__load_strf("%s: %s", path, strerror(errno));
        return -1;
    }
    sc->path = tk__load_xstrdup(path);
    sc->name = stem_of(path);
    names_t refs = {0}, saves = {0};
    size_t cap = 0;
    char *text = NULL;
    size_t text_cap = 0;
    ssize_t n;
    int lineno = 0;
    bool header_seen = false;
    char *why = NULL;
    while ((n = getline(&text, &text_cap, f)) >= 0) {
        lineno++;
        const char *p = text;
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p || *p == '#')
            continue;
        json_error_t jerr;
        json_t *o = json_loads(p, JSON_REJECT_DUPLICATES, &jerr);
        if (!o) {
            why = tk__load_strf("not JSON: %s (column %d)", jerr.text, jerr.column);
            goto fail;
        }
        if (!json_is_object(o)) {
            json_decref(o);
            why = tk__load_strf("a line must be a JSON object");
            goto fail;
        }
        if (json_object_get(o, "scenario")) {
            int rc = header_seen ? -1 : parse_header(o, sc, &why);
            if (header_seen)
                why = tk__load_strf("a second header line (\"scenario\")");
            header_seen = true;
            json_decref(o);
            if (rc < 0)
                goto fail;
            continue;
        }
        if (sc->nlines == cap) {
            cap = cap ? cap * 2 : 16;
            sc->lines = tk__load_xrealloc(sc->lines, cap * sizeof *sc->lines);
        }
        tk_load_line_t *l = &sc->lines[sc->nlines];
        memset(l, 0, sizeof *l);
        l->lineno = lineno;
        int64_t end_ns = -1;
        int rc = parse_line(o, l, &end_ns, &refs, &saves, &why);
        json_decref(o);
        if (rc < 0) {
            line_free(l);
            goto fail;
        }
        if (rc == 1) {
            if (sc->end_ns >= 0) {
                why = tk__load_strf("a second end line");
                goto fail;
            }
            sc->end_ns = end_ns;
            continue;
        }
        sc->nlines++;
        int64_t last = tk__load_line_time(l, l->count - 1);
        if (last > sc->last_ns)
            sc->last_ns = last;
        if (l->kind == TK_LOAD_REQUEST)
            sc->requests += l->count;
        else
            sc->checks += l->count;
    }
    if (ferror(f)) {
        *err = tk__load_strf("%s: %s", path, strerror(errno));
        goto fail_nolines;
    }
    for (size_t i = 0; i < refs.n; i++) {
        if (!names_has(&saves, refs.v[i])) {
            lineno = refs.line[i];
            why = tk__load_strf("$%s: no line saves \"%s\" (add \"save\": \"%s\" to the "
                                "request whose ids it means)",
                                refs.v[i], refs.v[i], refs.v[i]);
            goto fail;
        }
    }
    if (sc->nlines == 0) {
        *err = tk__load_strf("%s: no request or check line", path);
        goto fail_nolines;
    }
    free(text);
    fclose(f);
    names_free(&refs);
    names_free(&saves);
    return 0;
fail:
    *err = tk__load_strf("%s:%d: %s", path, lineno, why);
    free(why);
fail_nolines:
    free(text);
    fclose(f);
    names_free(&refs);
    names_free(&saves);
    tk__load_scenario_free(sc);
    return -1;
}
