/*
 * rpc.c - JSON-RPC 2.0 parsing and message building of rpc.h.
 *
 * A pure function of its input: no I/O, no globals, so the parser can be
 * fuzzed and tested without a socket.  Knows the JSON-RPC envelope and the
 * error codes of the control protocol, and no method at all.
 */
#include <stdio.h>
#include <string.h>

#include "tickd/alloc.h"
#include "tickd/error.h"

#include "rpc.h"

#define DECODE_FLAGS (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES)
#define MSG_MAX 512 /* bytes of one error message, NUL included */

/*
 * True if arrays and objects in buf[0..len) nest deeper than `max`.  A
 * linear scan that skips string contents (escapes included); it runs before
 * jansson so a line of 100000 '[' costs one pass and never reaches the
 * recursive-descent parser.  Unbalanced or invalid text is left for jansson
 * to reject: this only guards depth.
 */
static bool nesting_exceeds(const char *buf, size_t len, unsigned max)
{
    unsigned depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char ch = buf[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (ch == '\\')
                esc = true;
            else if (ch == '"')
                in_str = false;
            continue;
        }
        switch (ch) {
        case '"':
            in_str = true;
            break;
        case '[':
        case '{':
            if (++depth > max)
                return true;
            break;
        case ']':
        case '}':
            if (depth)
                depth--;
            break;
        default:
            break;
        }
    }
    return false;
}

/* Length of the valid UTF-8 sequence at s (NUL-terminated), 0 if invalid. */
static size_t utf8_seq(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* Replace every byte of `s` that does not start a valid UTF-8 sequence. */
static void utf8_sanitize(char *s)
{
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = utf8_seq(p);
        if (n == 0) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
}

json_t *tkd_rpc_result(json_t *id, json_t *result)
{
    json_t *r = json_object();
    if (!result)
        result = json_object();
    if (!r || !result) {
        json_decref(r);
        json_decref(result);
        return NULL;
    }
    json_object_set_new(r, "jsonrpc", json_string("2.0"));
    json_object_set_new(r, "result", result);
    json_object_set_new(r, "id", id ? json_incref(id) : json_null());
    return r;
}

json_t *tkd_rpc_verror(json_t *id, int code, json_t *data, const char *fmt,
                       va_list ap)
{
    char msg[MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    utf8_sanitize(msg);
    json_t *err = json_object();
    json_t *r = json_object();
    if (!err || !r) {
        json_decref(err);
        json_decref(r);
        json_decref(data);
        return NULL;
    }
    json_object_set_new(err, "code", json_integer(code));
    json_object_set_new(err, "message", json_string(msg));
    if (data)
        json_object_set_new(err, "data", data);
    json_object_set_new(r, "jsonrpc", json_string("2.0"));
    json_object_set_new(r, "error", err);
    json_object_set_new(r, "id", id ? json_incref(id) : json_null());
    return r;
}

json_t *tkd_rpc_error(json_t *id, int code, json_t *data, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *r = tkd_rpc_verror(id, code, data, fmt, ap);
    va_end(ap);
    return r;
}

json_t *tkd_rpc_notification(const char *method, json_t *params)
{
    json_t *r = json_object();
    if (!r) {
        json_decref(params);
        return NULL;
    }
    json_object_set_new(r, "jsonrpc", json_string("2.0"));
    json_object_set_new(r, "method", json_string(method));
    if (params)
        json_object_set_new(r, "params", params);
    return r;
}

int tkd_rpc_code_from_tk(int tk_err)
{
    switch (tk_err) {
    case TK_EINVAL:
        return TKD_RPC_INVALID_PARAMS;
    case TK_ENOENT:
        return TKD_RPC_NOT_FOUND;
    case TK_ESTATE:
    case TK_EEXIST:
        return TKD_RPC_INVALID_STATE;
    case TK_ELIMIT:
        return TKD_RPC_LIMIT;
    default:
        return TKD_RPC_INTERNAL_ERROR;
    }
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
    default:
        return "null";
    }
}

static bool known_member(const char *key)
{
    return strcmp(key, "jsonrpc") == 0 || strcmp(key, "method") == 0 ||
           strcmp(key, "id") == 0 || strcmp(key, "params") == 0;
}

/*
 * Check one request object against the envelope rules of rpc.h and fill
 * `it`: borrowed pointers into `req` when valid, else an owned error
 * response.  Checks run in a fixed order (shape, id, jsonrpc, method,
 * members, params) so one input always yields the same error.
 */
static void check_request(json_t *req, tkd_rpc_item *it)
{
    memset(it, 0, sizeof *it);
    it->request = req;
    if (!json_is_object(req)) {
        it->error = tkd_rpc_error(NULL, TKD_RPC_INVALID_REQUEST, NULL,
                                  "invalid request: expected an object, got %s",
                                  type_name(req));
        return;
    }
    json_t *id = json_object_get(req, "id");
    if (id && !json_is_string(id) && !json_is_number(id) && !json_is_null(id)) {
        it->error = tkd_rpc_error(NULL, TKD_RPC_INVALID_REQUEST, NULL,
                                  "invalid request: \"id\" must be a string, a "
                                  "number or null, got %s",
                                  type_name(id));
        return;
    }
    json_t *ver = json_object_get(req, "jsonrpc");
    if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0") != 0) {
        it->error = tkd_rpc_error(id, TKD_RPC_INVALID_REQUEST, NULL,
                                  "invalid request: \"jsonrpc\" must be \"2.0\"");
        return;
    }
    json_t *method = json_object_get(req, "method");
    if (!json_is_string(method)) {
        it->error = tkd_rpc_error(id, TKD_RPC_INVALID_REQUEST, NULL,
                                  "invalid request: \"method\" must be a string%s%s",
                                  method ? ", got " : "",
                                  method ? type_name(method) : "");
        return;
    }
    const char *key;
    json_t *val;
    json_object_foreach(req, key, val)
    {
        if (!known_member(key)) {
            it->error = tkd_rpc_error(id, TKD_RPC_INVALID_REQUEST, NULL,
                                      "invalid request: unknown member \"%.64s\"",
                                      key);
            return;
        }
    }
    json_t *params = json_object_get(req, "params");
    if (json_is_array(params)) {
        it->error = tkd_rpc_error(id, TKD_RPC_INVALID_PARAMS, NULL,
                                  "params must be an object");
        it->silent = (id == NULL);
        return;
    }
    if (params && !json_is_object(params)) {
        it->error = tkd_rpc_error(id, TKD_RPC_INVALID_REQUEST, NULL,
                                  "invalid request: \"params\" must be an object, "
                                  "got %s",
                                  type_name(params));
        return;
    }
    it->id = id;
    it->method = json_string_value(method);
    it->params = params;
}

void tkd_rpc_parse_line(const char *buf, size_t len, size_t max_batch,
                        tkd_rpc_msg *out)
{
    memset(out, 0, sizeof *out);
    if (nesting_exceeds(buf, len, TKD_RPC_MAX_DEPTH)) {
        out->error = tkd_rpc_error(NULL, TKD_RPC_PARSE_ERROR, NULL,
                                   "parse error: nesting deeper than %d levels",
                                   TKD_RPC_MAX_DEPTH);
        return;
    }
    json_error_t jerr;
    json_t *root = json_loadb(buf, len, DECODE_FLAGS, &jerr);
    if (!root) {
        out->error = tkd_rpc_error(NULL, TKD_RPC_PARSE_ERROR, NULL,
                                   "parse error at byte %d: %s", jerr.position,
                                   jerr.text);
        return;
    }
    if (json_is_array(root)) {
        size_t n = json_array_size(root);
        out->batch = true;
        if (n == 0) {
            out->error = tkd_rpc_error(NULL, TKD_RPC_INVALID_REQUEST, NULL,
                                       "invalid request: empty batch");
            json_decref(root);
            return;
        }
        if (n > max_batch) {
            out->error = tkd_rpc_error(NULL, TKD_RPC_LIMIT, NULL,
                                       "batch of %zu requests exceeds "
                                       "control.max_batch (%zu)",
                                       n, max_batch);
            json_decref(root);
            return;
        }
        out->items = tk_calloc(n, sizeof *out->items);
        out->count = n;
        for (size_t i = 0; i < n; i++)
            check_request(json_array_get(root, i), &out->items[i]);
    } else {
        out->items = tk_calloc(1, sizeof *out->items);
        out->count = 1;
        check_request(root, &out->items[0]);
    }
    out->root = root;
}

void tkd_rpc_msg_release(tkd_rpc_msg *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->count; i++)
        json_decref(m->items[i].error);
    tk_free(m->items);
    json_decref(m->error);
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}
