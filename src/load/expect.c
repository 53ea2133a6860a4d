/*
 * expect.c - the matchers of a scenario's "expect": what a response must
 * look like for a check to pass.
 *
 *   "expect": {"result": {"entities": {">=": 1000, "<": 2000},
 *                         "levels.#": 2, "mspt.p99": {"<": 16.7},
 *                         "ids[0]": {"exists": true}},
 *              "error": -32001}
 *
 * "result" maps a path to a literal (deep equality; numbers compare by value,
 * so 1000 equals 1000.0) or to an object of operators, all of which must
 * hold: "==", "!=", "<", "<=", ">", ">=" (numbers only for the ordering
 * ones) and "exists" (true/false).  A path is dot-separated member names with
 * optional [index] steps (negative indexes count from the end) and "#" as a
 * last step for the length of an array, object or string.  "error" expects
 * an error response with that code instead of a result.
 *
 * What it deliberately is not: a query language (no wildcards, no
 * arithmetic).  Paths are checked when the scenario is read, so a typo in a
 * path shows up before the run, not as a failed check after it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">=", "exists", NULL};

static bool is_op(const char *k)
{
    for (int i = 0; ops[i]; i++)
        if (strcmp(k, ops[i]) == 0)
            return true;
    return false;
}

const char *tk__load_path_check(const char *path)
{
    const char *p = path;
    if (!*p)
        return "empty path";
    bool need_seg = true; /* at the start or after a '.' */
    while (*p) {
        if (*p == '[') {
            p++;
            if (*p == '-')
                p++;
            if (*p < '0' || *p > '9')
                return "an index must be [N] or [-N]";
            while (*p >= '0' && *p <= '9')
                p++;
            if (*p != ']')
                return "an index must be [N] or [-N]";
            p++;
            need_seg = false;
            continue;
        }
        if (*p == '.') {
            if (need_seg)
                return "empty member name";
            p++;
            need_seg = true;
            if (!*p)
                return "empty member name";
            continue;
        }
        if (*p == ']')
            return "']' without '['";
        /* a member name, up to '.', '[' or the end */
        const char *s = p;
        while (*p && *p != '.' && *p != '[' && *p != ']')
            p++;
        if (p - s == 1 && *s == '#' && *p)
            return "'#' (length) must be the last step";
        need_seg = false;
    }
    return NULL;
}

json_t *tk__load_path_get(json_t *root, const char *path, json_t **tmp)
{
    *tmp = NULL;
    json_t *cur = root;
    const char *p = path;
    while (*p && cur) {
        if (*p == '[') {
            char *end;
            long long i = strtoll(p + 1, &end, 10);
            p = end + 1; /* past ']' (the syntax was checked) */
            if (!json_is_array(cur))
                return NULL;
            long long n = (long long)json_array_size(cur);
            if (i < 0)
                i += n;
            if (i < 0 || i >= n)
                return NULL;
            cur = json_array_get(cur, (size_t)i);
            continue;
        }
        if (*p == '.') {
            p++;
            continue;
        }
        const char *s = p;
        while (*p && *p != '.' && *p != '[')
            p++;
        size_t n = (size_t)(p - s);
        if (n == 1 && *s == '#' && !*p) {
            size_t len;
            if (json_is_array(cur))
                len = json_array_size(cur);
            else if (json_is_object(cur))
                len = json_object_size(cur);
            else if (json_is_string(cur))
                len = json_string_length(cur);
            else
                return NULL;
            *tmp = json_integer((json_int_t)len);
            if (!*tmp)
                tk__load_oom();
            return *tmp;
        }
        if (!json_is_object(cur))
            return NULL;
        cur = json_object_getn(cur, s, n);
    }
    return cur;
}

void tk__load_expect_free(tk_load_expect_t *e)
{
    for (size_t i = 0; i < e->nm; i++) {
        free(e->m[i].path);
        json_decref(e->m[i].want);
    }
    free(e->m);
    e->m = NULL;
    e->nm = 0;
    e->error = 0;
}

int tk__load_expect_compile(const json_t *expect, tk_load_expect_t *out, char **err)
{
    memset(out, 0, sizeof *out);
    const json_t *res = json_object_get(expect, "result");
    const json_t *code = json_object_get(expect, "error");
    if (res && code) {
        *err = tk__load_strf("expect: \"result\" and \"error\" exclude each other");
        return -1;
    }
    if (code) {
        if (!json_is_integer(code) || json_integer_value(code) == 0) {
            *err = tk__load_strf("expect.error: must be a non-zero JSON-RPC error code");
            return -1;
        }
        out->error = json_integer_value(code);
        return 0;
    }
    if (!res)
        return 0; /* any successful result */
    if (!json_is_object(res)) {
        *err = tk__load_strf("expect.result: must be an object of path: matcher");
        return -1;
    }
    size_t n = json_object_size(res);
    out->m = tk__load_xcalloc(n, sizeof *out->m);
    const char *path;
    json_t *want;
    json_object_foreach((json_t *)res, path, want)
    {
        const char *why = tk__load_path_check(path);
        if (why) {
            *err = tk__load_strf("expect.result: path \"%s\": %s", path, why);
            goto fail;
        }
        bool operators = false;
        if (json_is_object(want) && json_object_size(want) > 0) {
            size_t nops = 0;
            const char *k;
            json_t *arg;
            json_object_foreach(want, k, arg)
            {
                if (!is_op(k))
                    continue;
                nops++;
                if (strcmp(k, "exists") == 0
                        ? !json_is_boolean(arg)
                        : (strcmp(k, "==") != 0 && strcmp(k, "!=") != 0 && !json_is_number(arg))) {
                    *err = tk__load_strf("expect.result.%s: operator \"%s\" needs %s", path, k,
                                         strcmp(k, "exists") == 0 ? "true or false" : "a number");
                    goto fail;
                }
            }
            if (nops && nops != json_object_size(want)) {
                *err = tk__load_strf("expect.result.%s: an object mixes operators and members"
                                     " (operators: == != < <= > >= exists)",
                                     path);
                goto fail;
            }
            operators = nops > 0;
        }
        tk_load_match_t *m = &out->m[out->nm++];
        m->path = tk__load_xstrdup(path);
        m->want = json_incref(want);
        m->operators = operators;
    }
    return 0;
fail:
    tk__load_expect_free(out);
    return -1;
}

/* Deep equality where numbers compare by value (1000 == 1000.0). */
static bool values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        if (json_is_integer(a) && json_is_integer(b))
            return json_integer_value(a) == json_integer_value(b);
        return json_number_value(a) == json_number_value(b);
    }
    return json_equal(a, b);
}

/* Compact text of a value for a message (heap). */
static char *text_of(const json_t *v)
{
    if (!v)
        return tk__load_xstrdup("(missing)");
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t)
        tk__load_oom();
    if (strlen(t) > 120) {
        strcpy(t + 112, "...");
    }
    return t;
}

/* One operator against `got` (may be NULL: missing). */
static bool op_holds(const char *op, const json_t *arg, const json_t *got)
{
    if (strcmp(op, "exists") == 0)
        return (got != NULL) == json_is_true(arg);
    if (!got)
        return false;
    if (strcmp(op, "==") == 0)
        return values_equal(got, arg);
    if (strcmp(op, "!=") == 0)
        return !values_equal(got, arg);
    if (!json_is_number(got))
        return false;
    double g = json_number_value(got), w = json_number_value(arg);
    if (strcmp(op, "<") == 0)
        return g < w;
    if (strcmp(op, "<=") == 0)
        return g <= w;
    if (strcmp(op, ">") == 0)
        return g > w;
    return g >= w; /* ">=" (the only one left: compiled operators only) */
}

bool tk__load_expect_eval(const tk_load_expect_t *e, const json_t *response, char **why)
{
    const json_t *error = json_object_get(response, "error");
    json_t *result = json_object_get(response, "result");
    if (e->error) {
        if (!error) {
            *why = tk__load_strf("expected error %lld, got a result", e->error);
            return false;
        }
        long long code = json_integer_value(json_object_get(error, "code"));
        if (code != e->error) {
            *why = tk__load_strf("expected error %lld, got error %lld: %s", e->error, code,
                                 json_string_value(json_object_get(error, "message"))
                                     ? json_string_value(json_object_get(error, "message"))
                                     : "");
            return false;
        }
        return true;
    }
    if (!result) {
        const char *msg = json_string_value(json_object_get(error, "message"));
        *why = tk__load_strf("expected a result, got error %lld: %s",
                             json_integer_value(json_object_get(error, "code")), msg ? msg : "");
        return false;
    }
    for (size_t i = 0; i < e->nm; i++) {
        const tk_load_match_t *m = &e->m[i];
        json_t *tmp;
        json_t *got = tk__load_path_get(result, m->path, &tmp);
        bool ok = true;
        const char *bad_op = NULL;
        const json_t *bad_arg = NULL;
        if (m->operators) {
            const char *op;
            json_t *arg;
            json_object_foreach(m->want, op, arg)
            {
                if (!op_holds(op, arg, got)) {
                    ok = false;
                    bad_op = op;
                    bad_arg = arg;
                    break;
                }
            }
        } else {
            ok = got && values_equal(got, m->want);
        }
        if (!ok) {
            char *g = text_of(got);
            char *w = text_of(bad_arg ? bad_arg : m->want);
            *why = tk__load_strf("result.%s = %s, expected %s%s%s", m->path, g,
                                 bad_op ? bad_op : "", bad_op ? " " : "", w);
            free(g);
            free(w);
            json_decref(tmp);
            return false;
        }
        json_decref(tmp);
    }
    return true;
}
