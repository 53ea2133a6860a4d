/*
 * rpc.h - JSON-RPC 2.0 messages of the control protocol: parsing one
 * request line into requests and ready-made error responses, and building
 * responses and notifications.
 *
 * Everything here is pure: bytes in, jansson values out, no sockets, no
 * event loop, no global state, so the parser can be fed to a fuzzer as is.
 * What it deliberately does not do: know any method (the dispatcher's job),
 * frame lines or bound input (server.c), or decide anything about the
 * order in which responses are sent.
 *
 * Rules applied by tkd_rpc_parse_line (PROTOCOL.md "Transport", "Errors"):
 *  - The line is one JSON text, decoded with JSON_DECODE_ANY and
 *    JSON_REJECT_DUPLICATES (and without JSON_ALLOW_NUL: no string holds a
 *    NUL) after a nesting-depth check (TKD_RPC_MAX_DEPTH, far below
 *    jansson's own 2048).  Anything unparsable: -32700, id null.
 *  - A request is an object with "jsonrpc":"2.0", "method" a string, "id"
 *    absent (a notification) or a string, number or null, "params" absent or
 *    an object, and no other member.  "params" an array: -32602 "params must
 *    be an object"; anything else wrong: -32600.  The error carries the
 *    request's id when the id itself could be read, else null.
 *  - A notification never gets a response (JSON-RPC 2.0 section 4.1), not
 *    even an error one, unless its envelope is so broken that it cannot be
 *    told from a request (then -32600 with id null, as the specification's
 *    examples do).
 *  - A batch is a non-empty array of requests, each checked as above.
 *    [] is one -32600 error object; a batch longer than `max_batch` is one
 *    -32003 error object.
 */
#ifndef TICKD_DAEMON_RPC_H
#define TICKD_DAEMON_RPC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* Error codes of PROTOCOL.md "Errors". */
enum {
    TKD_RPC_PARSE_ERROR = -32700,
    TKD_RPC_INVALID_REQUEST = -32600,
    TKD_RPC_METHOD_NOT_FOUND = -32601,
    TKD_RPC_INVALID_PARAMS = -32602,
    TKD_RPC_INTERNAL_ERROR = -32603,
    TKD_RPC_NOT_FOUND = -32001,
    TKD_RPC_INVALID_STATE = -32002,
    TKD_RPC_LIMIT = -32003,
    TKD_RPC_SHUTTING_DOWN = -32004,
    TKD_RPC_FORBIDDEN = -32005 /* not allowed on this socket (read-only) */
};

/* Deepest nesting of arrays and objects accepted in one line. */
#define TKD_RPC_MAX_DEPTH 64

/* One request of a line: valid (error == NULL) or answered at once. */
typedef struct tkd_rpc_item {
    json_t *request;     /* borrowed from the message's root: the request */
    json_t *id;          /* borrowed; NULL when absent (a notification)    */
    const char *method;  /* borrowed; NULL when invalid                    */
    json_t *params;      /* borrowed; NULL when absent                     */
    json_t *error;       /* owned error response, NULL when valid          */
    bool silent;         /* error is a notification's: count, never send   */
} tkd_rpc_item;

/* A parsed line. */
typedef struct tkd_rpc_msg {
    json_t *root;        /* owned parsed document; NULL when `error` is set */
    json_t *error;       /* owned response for the line as a whole, or NULL */
    bool batch;          /* the line was an array                         */
    size_t count;        /* number of items                               */
    tkd_rpc_item *items; /* owned array of `count` items                  */
} tkd_rpc_msg;

/*
 * Parse one line (without its terminator; need not be NUL-terminated) into
 * `out`.  Exactly one of out->error (the whole line is answered with that
 * one response object) or out->items (count >= 1) is set on return; each
 * item is either a valid request or carries its own error response.
 * Never fails: bad input of any kind becomes an error response.  Release
 * with tkd_rpc_msg_release().  `max_batch` >= 1.
 */
void tkd_rpc_parse_line(const char *buf, size_t len, size_t max_batch,
                        tkd_rpc_msg *out);

/* Free everything `m` owns (the items' borrowed pointers die with it). */
void tkd_rpc_msg_release(tkd_rpc_msg *m);

/*
 * {"jsonrpc":"2.0","result":result,"id":id}.  Steals `result` (NULL is
 * taken as {}); `id` is borrowed, NULL meaning null.  Returns a new
 * reference, or NULL if memory ran out.
 */
json_t *tkd_rpc_result(json_t *id, json_t *result);

/*
 * {"jsonrpc":"2.0","error":{"code","message","data"?},"id":id}.  The
 * message is formatted printf-style; bytes that are not valid UTF-8 are
 * replaced with '?' so any input can be quoted in it.  Steals `data` (may
 * be NULL: no "data" member); `id` is borrowed, NULL meaning null.  Returns
 * a new reference, or NULL if memory ran out.
 */
json_t *tkd_rpc_error(json_t *id, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
json_t *tkd_rpc_verror(json_t *id, int code, json_t *data, const char *fmt,
                       va_list ap) __attribute__((format(printf, 4, 0)));

/*
 * {"jsonrpc":"2.0","method":method,"params":params}.  Steals `params`
 * (NULL: no "params" member).  Returns a new reference or NULL.
 */
json_t *tkd_rpc_notification(const char *method, json_t *params);

/*
 * JSON-RPC code for a libtickd error (tickd/error.h): TK_EINVAL -> -32602,
 * TK_ENOENT -> -32001, TK_ESTATE and TK_EEXIST -> -32002, TK_ELIMIT ->
 * -32003, anything else -> -32603.
 */
int tkd_rpc_code_from_tk(int tk_err);

#endif
