/*
 * tickctl_int.h - the pieces of tickctl, the command-line client of tickd,
 * shared between its source files.  Not installed, not part of libtickd.
 *
 * tickctl is built from the files of src/cli against jansson and libm only: no
 * libevent, no libtickd (it includes tickd/tickd.h for TICKD_VERSION alone).
 * The modules:
 *   util.c     growable byte buffer, must-succeed allocation, messages
 *   params.c   command-line arguments -> the request's "params" object
 *   jsonout.c  JSON text, pretty or compact, in the order the keys arrived
 *   human.c    the summary line of `stats` and the --watch stats table
 *   conn.c     the Unix stream socket: connect, send, read one line at a time
 *   reply.c    responses: classify, print results and errors
 *   suggest.c  "did you mean" for unknown methods and parameters
 *   script.c   batches on the command line and scripts on stdin (`-`)
 *   tickctl.c  options, --help and the method table, one request, --watch
 *   top.c, trace.c  the commands for people
 *   ../common/sockpath.c  the default socket, shared with tickd-load
 *
 * Exit statuses (the command line is part of the protocol contract):
 * 0 success, 1 failure reported by or about tickd, 2 usage error or the
 * socket cannot be connected.
 */
#ifndef TICKD_CLI_TICKCTL_INT_H
#define TICKD_CLI_TICKCTL_INT_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define TK_CTL_EXIT_OK 0    /* result printed; --watch interrupted */
#define TK_CTL_EXIT_FAIL 1  /* error response, bad response, timeout, I/O */
#define TK_CTL_EXIT_USAGE 2 /* bad command line; socket cannot be connected */

/* Longest response line accepted (bytes, without the newline).  A listing of
 * 1,000,000 ids is about 8 MB, so this only stops a runaway peer. */
#define TK_CTL_MAX_LINE ((size_t)1 << 30)

/* ---- util.c ------------------------------------------------------------ */

/* A growable byte buffer.  Zero-initialise it; free with tk__ctl_buf_free. */
typedef struct tk_ctl_buf {
    char *data; /* bytes (not NUL-terminated unless a caller appends one) */
    size_t len; /* bytes in use */
    size_t cap; /* bytes allocated */
} tk_ctl_buf_t;

/* Make room for at least `extra` more bytes after `len` (doubling growth).
 * Exits with status 1 and a message when memory runs out. */
void tk__ctl_buf_reserve(tk_ctl_buf_t *b, size_t extra);
/* Append `n` bytes / a NUL-terminated string / one byte (same OOM policy). */
void tk__ctl_buf_append(tk_ctl_buf_t *b, const void *p, size_t n);
void tk__ctl_buf_puts(tk_ctl_buf_t *b, const char *s);
void tk__ctl_buf_putc(tk_ctl_buf_t *b, char c);
/* Release the memory; the buffer is empty and reusable afterwards. */
void tk__ctl_buf_free(tk_ctl_buf_t *b);

/* printf into a fresh heap string owned by the caller (free()); exits with
 * status 1 on OOM, so it never returns NULL. */
char *tk__ctl_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether the `n` bytes of `s` are well-formed UTF-8 (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), as jansson requires of
 * every string and key. */
bool tk__ctl_utf8_valid(const char *s, size_t n);

/* Report running out of memory on stderr and exit with status 1.  Also used
 * when jansson returns NULL from a constructor (its only failure is OOM). */
__attribute__((noreturn)) void tk__ctl_oom(void);

/* ---- params.c ---------------------------------------------------------- */

/*
 * Build the "params" object of a request from the arguments that follow
 * METHOD: either exactly one JSON object (the argument starts with `{`), or
 * key=value pairs, where a value is JSON if it is one complete JSON value and
 * a string otherwise, and dotted keys build nested objects.
 *
 * On success returns 0 and stores a new object in *out (caller owns it), or
 * NULL when argc is 0 (the request then has no "params" member).  On a usage
 * error returns -1 and stores a heap sentence in *err (caller frees); *out is
 * untouched.
 */
int tk__ctl_params_build(int argc, char *const argv[], json_t **out, char **err);

/*
 * Parse one command-line value: the JSON value it spells when the whole text
 * is one JSON value, else the text as a JSON string.  Text that starts with
 * `{` or `[`, or looks like a JSON number, yet does not parse is an error
 * rather than a string (a typo in an object must not pass silently): returns
 * NULL and stores a heap sentence in *err.  The returned value is new.
 */
json_t *tk__ctl_value_parse(const char *text, char **err);

/* ---- jsonout.c --------------------------------------------------------- */

/*
 * Append `v` as JSON text to `b`: with `indent` > 0, pretty with that many
 * spaces per level (", " / ": " separators, one member per line, empty
 * containers as {} and []); with 0, compact.  Object members come out in the
 * order they were received (jansson keeps insertion order); reals use the
 * shortest text that reads back as the same double.  No trailing newline.
 */
void tk__ctl_json_append(tk_ctl_buf_t *b, const json_t *v, int indent);

/* ---- human.c ----------------------------------------------------------- */

/* Rows of the --watch stats table between two headers. */
#define TK_CTL_TABLE_EVERY 20

/* `v` with ',' between thousands ("12,034") into buf (len >= 27 holds any). */
void tk__ctl_thousands(char *buf, size_t len, uint64_t v);
/*
 * Append the one-line summary of an engine.stats result, newline included:
 * "TPS 60.0 (1m 59.98) · MSPT 0.42/1.10/3.20 ms (p50/p99/max) · 12,034
 * entities · 3 overruns".  Missing fields read as 0.
 */
void tk__ctl_stats_line(tk_ctl_buf_t *b, const json_t *stats);
/*
 * Append one row of the stats table for engine.stats `stats` (newline
 * included), preceded by the header when `row` is a multiple of
 * TK_CTL_TABLE_EVERY (row counts from 0).
 */
void tk__ctl_stats_row(tk_ctl_buf_t *b, const json_t *stats, unsigned long row);

/* ---- conn.c ------------------------------------------------------------ */

#define TK_CTL_ECONNECT (-1)  /* connect failed: see err (errno) */
#define TK_CTL_ETIMEDOUT (-2) /* the deadline passed */
#define TK_CTL_ESTOPPED (-3)  /* *stop was set by a signal handler */
#define TK_CTL_ECLOSED (-4)   /* peer closed or reset the connection */
#define TK_CTL_EPARTIAL (-5)  /* peer closed in the middle of a line */
#define TK_CTL_ETOOLONG (-6)  /* a line longer than TK_CTL_MAX_LINE */
#define TK_CTL_EIO (-7)       /* another system error: see err (errno) */

/* One connection to tickd.  Caller-allocated; tk__ctl_conn_open fills it. */
typedef struct tk_ctl_conn {
    int fd;                 /* non-blocking stream socket, -1 when closed */
    int err;                /* errno of the last ECONNECT/EIO/ECLOSED */
    uint64_t deadline_ns;   /* CLOCK_MONOTONIC ns after which waits fail
                               with ETIMEDOUT; 0 = wait forever */
    const sigset_t *waitmask; /* signal mask while blocked in ppoll (so the
                                 signals that set *stop can only arrive
                                 there); NULL = keep the current mask */
    volatile sig_atomic_t *stop; /* set by a signal handler to end waits
                                    with ESTOPPED; NULL = none */
    tk_ctl_buf_t in;        /* received bytes; [start, len) unconsumed */
    size_t start;           /* offset of the first unconsumed byte */
    size_t scan;            /* offset up to which no '\n' was found */
} tk_ctl_conn_t;

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t tk__ctl_now_ns(void);

/*
 * Connect `c` to the Unix stream socket at `path`.  The caller sets
 * deadline_ns, waitmask and stop first (the rest is initialised here).  A
 * listener whose backlog is full is retried every 10 ms until the deadline.
 * Returns 0, TK_CTL_ECONNECT (c->err holds the errno; ENAMETOOLONG for a path
 * that does not fit sun_path), TK_CTL_ETIMEDOUT or TK_CTL_ESTOPPED.  On
 * failure the connection is closed and only tk__ctl_conn_close is valid.
 */
int tk__ctl_conn_open(tk_ctl_conn_t *c, const char *path);

/*
 * Send all `n` bytes of `p`, waiting for room as needed.  Returns 0,
 * TK_CTL_ECLOSED (the peer closed: it may still have left a response to read),
 * TK_CTL_ETIMEDOUT, TK_CTL_ESTOPPED or TK_CTL_EIO.  Never raises SIGPIPE.
 */
int tk__ctl_conn_send(tk_ctl_conn_t *c, const char *p, size_t n);

/*
 * Read the next line.  On 0, *line points at its bytes inside c->in and *len
 * is its length without the "\n" (and without a "\r" before it); both stay
 * valid until the next call.  Otherwise returns TK_CTL_ECLOSED (clean end of
 * stream between lines), TK_CTL_EPARTIAL, TK_CTL_ETOOLONG, TK_CTL_ETIMEDOUT,
 * TK_CTL_ESTOPPED or TK_CTL_EIO.
 */
int tk__ctl_conn_read_line(tk_ctl_conn_t *c, const char **line, size_t *len);

/*
 * The pieces of tk__ctl_conn_read_line for callers that wait themselves
 * (script.c polls the socket and stdin together):
 * tk__ctl_conn_take_line returns 1 with the next complete line already
 * received (as tk__ctl_conn_read_line), else 0 without reading;
 * tk__ctl_conn_recv reads once without waiting and returns the bytes read
 * (> 0), 0 when nothing is there yet, or TK_CTL_ECLOSED, TK_CTL_EPARTIAL,
 * TK_CTL_ETOOLONG or TK_CTL_EIO.
 */
int tk__ctl_conn_take_line(tk_ctl_conn_t *c, const char **line, size_t *len);
int tk__ctl_conn_recv(tk_ctl_conn_t *c);

/* Send what the socket takes now of the `n` bytes at `p`, without waiting:
 * the bytes sent (0..n), or TK_CTL_ECLOSED or TK_CTL_EIO.  Never raises
 * SIGPIPE. */
long tk__ctl_conn_send_now(tk_ctl_conn_t *c, const char *p, size_t n);

/* Close the socket and free the buffer; safe on a closed or failed conn. */
void tk__ctl_conn_close(tk_ctl_conn_t *c);

/* ---- reply.c: messages from tickd and how they are shown ----------------- */

#define TK_CTL_PRETTY_INDENT 2 /* spaces per nesting level of a printed result */

typedef enum tk_ctl_msg_kind {
    TK_CTL_MSG_MALFORMED,    /* not a JSON-RPC 2.0 response or notification */
    TK_CTL_MSG_RESULT,       /* response with "result" */
    TK_CTL_MSG_ERROR,        /* response with a well-formed "error" */
    TK_CTL_MSG_NOTIFICATION, /* "method" and no "id" */
} tk_ctl_msg_kind_t;

/*
 * Classify one parsed message (borrowed).  For TK_CTL_MSG_MALFORMED, *why
 * receives a heap sentence (caller frees).  A batch answer is an array of
 * such messages: classify each member.
 */
tk_ctl_msg_kind_t tk__ctl_msg_classify(const json_t *m, char **why);

/* Print "tickctl: MSG" on stderr. */
void tk__ctl_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Write `n` bytes to stdout and flush them.  A closed pipe ends tickctl
 * quietly with status 1; any other write error is reported, status 1.
 */
void tk__ctl_emit(const char *p, size_t n);

/* Print a result as pretty JSON (`compact`: one line) and a newline. */
void tk__ctl_print_result(const json_t *result, bool compact);

/*
 * Print an error response (borrowed) on stderr as
 * "tickctl: [WHERE: ]error CODE: MESSAGE", error.data pretty-printed on the
 * lines after it, then a "did you mean" line when the error names an
 * unknown method or parameter close to one tickctl knows (suggest.c).
 * `method` is the method the request named (NULL: unknown); `where` locates
 * the request in a batch or script ("line 3", NULL: nothing).
 */
void tk__ctl_print_error(const json_t *msg, const char *method, const char *where);

/*
 * Report a failed connect/send/read (rc < 0 from conn.c) for the socket
 * `socket`; `what` names the step ("connecting to", "waiting for") and
 * `timeout` is --timeout (s).  Returns the exit status, or -1 for
 * TK_CTL_ESTOPPED, which is not a failure.
 */
int tk__ctl_conn_error(const char *socket, double timeout, const tk_ctl_conn_t *c, int rc,
                       const char *what);

/* ---- tickctl.c: what tickctl knows of the protocol ------------------------ */

/* One method of PROTOCOL.md, for --help and for "did you mean". */
typedef struct tk_ctl_method {
    const char *name;   /* "entity.spawn" */
    const char *params; /* parameter names, [optional] ones in brackets;
                           "<tick spec fields>" stands for those fields */
    const char *desc;   /* one line: what it does and returns */
} tk_ctl_method_t;

/* The table of every method tickd answers (--help lists it); `*n` receives
 * its length. */
const tk_ctl_method_t *tk__ctl_methods(size_t *n);
/* The fields of a tick spec (NULL-terminated). */
extern const char *const tk__ctl_tick_fields[];

/* ---- suggest.c: "did you mean" --------------------------------------------- */

/*
 * The known name closest to `word` among `cands` (n names), by edit
 * distance with adjacent transpositions counted as one edit (so "levl",
 * "lveel" and "leve" all suggest "level"), when it is close enough to be a
 * typo: at most 1 edit for names of up to 4 characters, 2 up to 8, else 3.
 * Returns a heap string naming the best (or the equally good ones, "'a' or
 * 'b'"), or NULL when nothing is close.  Caller frees.
 */
char *tk__ctl_closest(const char *word, const char *const *cands, size_t n);

/* A "did you mean" for an unknown method (also matching "spawn" to
 * "entity.spawn"): heap string "'entity.spawn'" or NULL. */
char *tk__ctl_suggest_method(const char *name);

/*
 * A "did you mean" for the unknown parameter at `path` ("levl",
 * "tick.grup", "components[0].tick.grup", "action.parms") of a request to
 * `method`: the path with its last name replaced by the closest known one,
 * as a heap string, or NULL.
 */
char *tk__ctl_suggest_param(const char *method, const char *path);

/* ---- script.c: batches and scripts ------------------------------------------ */

/* How a batch or a script talks to tickd. */
typedef struct tk_ctl_session {
    const char *socket; /* control socket path */
    double timeout;     /* s for the whole run; 0 = forever */
    bool compact;       /* results on one line each */
} tk_ctl_session_t;

/*
 * `tickctl '[{"method":...}, ...]'`: send the JSON array `text` as one
 * JSON-RPC batch (ids numbered by tickctl where absent) and print each
 * answer in the order of the requests.  A malformed array is a usage error
 * reported before connecting.  Returns the exit status.
 */
int tk__ctl_run_batch(const tk_ctl_session_t *s, const char *text);

/*
 * `tickctl -`: read requests from standard input, one per line (a request
 * object, a batch array, or METHOD [JSON-PARAMS | key=value ...]), send
 * them over one connection as they come (pipelined) and print each answer in
 * input order.  Returns the exit status.
 */
int tk__ctl_run_script(const tk_ctl_session_t *s);

/* ---- top.c, trace.c: commands for people --------------------------------- */

/*
 * If argv names a command for people ("top", "trace"; after an optional
 * -s/--socket PATH), run it and return its exit status; else return -1 and
 * leave argv to the ordinary command line.  `resolve` turns the --socket
 * and --world options (each NULL when absent) into the socket path (it
 * exits 2 on a usage error).
 */
int tk__ctl_subcommand(int argc, char *argv[],
                       const char *(*resolve)(const char *socket, const char *world));
/* The commands; argv[0] is the command's name. */
int tk__ctl_top_main(int argc, char *argv[], const char *socket);
int tk__ctl_trace_main(int argc, char *argv[], const char *socket);

/* Connect `c` (0, or TK_CTL_EXIT_USAGE after a message on stderr). */
int tk__ctl_open(tk_ctl_conn_t *c, const char *socket);
/* One request on an open connection: 0 with *result (caller owns), or
 * TK_CTL_EXIT_FAIL with a heap sentence in *err (an error response, a lost
 * connection).  Notifications before the response are skipped. */
int tk__ctl_rpc(tk_ctl_conn_t *c, const char *method, json_t *params, json_t **result,
                char **err);

#endif
