/*
 * params.c - tickctl's command-line parameters: the arguments after METHOD
 * turned into the "params" object of one JSON-RPC request.
 *
 * Two forms, never mixed:
 *   tickctl entity.spawn '{"class":"counter","count":10}'     one JSON object
 *   tickctl entity.spawn class=counter count=10 tick.interval=0.5
 * In the key=value form a value is JSON when the whole text is one JSON value
 * (10, 0.5, true, null, [1,2], {"x":1}, "\"quoted\"") and a string otherwise
 * (counter).  Dotted keys build nested objects.  A key given twice, or a key
 * that is both a value and a parent (tick=... with tick.group=...), is a usage
 * error, so nothing on the command line is silently dropped.
 *
 * What it deliberately does not do: know the methods or their parameters.
 * The daemon validates names and types and answers -32602 for a typo; this
 * module only decides how the text maps to JSON.  A key containing a literal
 * '.' needs the JSON object form.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tickctl_int.h"

/* True when `s` (whole) matches JSON's number grammar:
 * -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? with optional surrounding
 * whitespace.  Used to reject numbers jansson cannot hold (1e999, integers
 * beyond 64 bits) instead of sending them as strings. */
static bool looks_like_number(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (isdigit((unsigned char)*s))
            s++;
    else
        return false;
    if (*s == '.') {
        s++;
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '+' || *s == '-')
            s++;
        if (!isdigit((unsigned char)*s))
            return false;
        while (isdigit((unsigned char)*s))
            s++;
    }
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/* First non-space character of `s` ('\0' if none). */
static char first_char(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s;
}

json_t *tk__ctl_value_parse(const char *text, char **err)
{
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (v)
        return v;
    char c = first_char(text);
    if (c == '{' || c == '[') {
        *err = tk__ctl_strf("invalid JSON %s at column %d: %s (quote it as a JSON "
                            "string to send it as text)",
                            c == '{' ? "object" : "array", jerr.column, jerr.text);
        return NULL;
    }
    if (looks_like_number(text)) {
        *err = tk__ctl_strf("number '%s' is out of range", text);
        return NULL;
    }
    if (!tk__ctl_utf8_valid(text, strlen(text))) {
        *err = tk__ctl_strf("value is not valid UTF-8");
        return NULL;
    }
    v = json_string(text);
    if (!v)
        tk__ctl_oom(); /* the only failure left for valid UTF-8 */
    return v;
}

/* Length of the key of a key=value argument (bytes before the first '='). */
static size_t key_len(const char *arg)
{
    return (size_t)(strchr(arg, '=') - arg);
}

/*
 * Check the key of `arg` (which contains '='): valid UTF-8 made of non-empty
 * dotted segments.
 * Returns NULL or a heap sentence.
 */
static char *check_key(const char *arg)
{
    size_t n = key_len(arg);
    if (n == 0)
        return tk__ctl_strf("'%s' has an empty key", arg);
    if (!tk__ctl_utf8_valid(arg, n))
        return tk__ctl_strf("a key is not valid UTF-8");
    bool seg_empty = true;
    for (size_t i = 0; i < n; i++) {
        if (arg[i] == '.') {
            if (seg_empty)
                return tk__ctl_strf("key '%.*s' has an empty part", (int)n, arg);
            seg_empty = true;
        } else {
            seg_empty = false;
        }
    }
    if (seg_empty)
        return tk__ctl_strf("key '%.*s' has an empty part", (int)n, arg);
    return NULL;
}

/*
 * Whether keys `a` (length na) and `b` (length nb) collide: equal, or one is
 * a dotted prefix of the other ("tick" and "tick.group").
 */
static bool keys_collide(const char *a, size_t na, const char *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    if (memcmp(a, b, n) != 0)
        return false;
    if (na == nb)
        return true;
    return (na > nb ? a[n] : b[n]) == '.';
}

/*
 * Store `value` (reference stolen) at the dotted key of `arg` under `root`,
 * creating the intermediate objects.  The caller has ruled out collisions, so
 * an intermediate member, when present, is an object this function made.
 */
static void put_dotted(json_t *root, const char *arg, json_t *value)
{
    size_t n = key_len(arg);
    json_t *obj = root;
    size_t seg = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && arg[i] != '.')
            continue;
        const char *k = arg + seg;
        size_t kn = i - seg;
        if (i == n) {
            if (json_object_setn_new(obj, k, kn, value) < 0)
                tk__ctl_oom();
            return;
        }
        json_t *child = json_object_getn(obj, k, kn);
        if (!child) {
            child = json_object();
            if (!child || json_object_setn_new(obj, k, kn, child) < 0)
                tk__ctl_oom();
        }
        obj = child;
        seg = i + 1;
    }
}

int tk__ctl_params_build(int argc, char *const argv[], json_t **out, char **err)
{
    if (argc == 0) {
        *out = NULL;
        return 0;
    }

    /* Form 1: a single JSON object. */
    if (first_char(argv[0]) == '{') {
        if (argc > 1) {
            *err = tk__ctl_strf("a JSON object must be the only parameter "
                                "argument (got '%s' after it)", argv[1]);
            return -1;
        }
        json_error_t jerr;
        json_t *obj = json_loads(argv[0], JSON_REJECT_DUPLICATES, &jerr);
        if (!obj) {
            *err = tk__ctl_strf("invalid JSON parameters at column %d: %s",
                                jerr.column, jerr.text);
            return -1;
        }
        if (!json_is_object(obj)) {
            json_decref(obj);
            *err = tk__ctl_strf("parameters must be a JSON object");
            return -1;
        }
        *out = obj;
        return 0;
    }

    /* Form 2: key=value pairs.  Validate every argument before building. */
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strchr(arg, '=')) {
            char c = first_char(arg);
            if (c == '[')
                *err = tk__ctl_strf("parameters must be a JSON object or "
                                    "key=value pairs, not an array ('%s')", arg);
            else if (c == '{')
                *err = tk__ctl_strf("a JSON object must be the only parameter "
                                    "argument (got '%s' after key=value)", arg);
            else
                *err = tk__ctl_strf("'%s' is not key=value", arg);
            return -1;
        }
        if ((*err = check_key(arg)) != NULL)
            return -1;
        /* O(argc^2), fine for a command line. */
        for (int j = 0; j < i; j++) {
            size_t ni = key_len(arg), nj = key_len(argv[j]);
            if (!keys_collide(arg, ni, argv[j], nj))
                continue;
            if (ni == nj)
                *err = tk__ctl_strf("key '%.*s' given twice", (int)ni, arg);
            else
                *err = tk__ctl_strf("key '%.*s' conflicts with '%.*s'", (int)ni,
                                    arg, (int)nj, argv[j]);
            return -1;
        }
    }

    json_t *root = json_object();
    if (!root)
        tk__ctl_oom();
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        char *verr = NULL;
        json_t *v = tk__ctl_value_parse(strchr(arg, '=') + 1, &verr);
        if (!v) {
            *err = tk__ctl_strf("value of '%.*s': %s", (int)key_len(arg), arg, verr);
            free(verr);
            json_decref(root);
            return -1;
        }
        put_dotted(root, arg, v);
    }
    *out = root;
    return 0;
}
