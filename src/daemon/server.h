/*
 * server.h - the daemon's control socket: a Unix stream listener, line
 * framing, bounded per-client queues, deferred execution of JSON-RPC calls
 * and event notifications.
 *
 * One thread (DESIGN.md "One thread owns the world").  The server lives on
 * the frame loop's event_base; libevent callbacks only read, frame, bound
 * and parse (rpc.h), then queue a tkd_call.  Nothing is executed from a
 * callback: at the frame boundary the loop calls tkd_server_drain(), which
 * hands each queued call, in arrival order across all clients, to the
 * dispatcher.  Replies are queued per client and written by libevent as the
 * socket allows, and all at once by tkd_server_flush() before the loop
 * sleeps (Redis's pending writes + beforeSleep).  Clients are closed
 * asynchronously: a callback only marks a client, which is freed later
 * outside any of its callbacks (Redis's freeClientAsync).
 *
 * What it deliberately does not do: know any method (the dispatcher gets
 * every valid call, "-32601 method not found" included), or block: every
 * socket is non-blocking and every buffer is capped.
 *
 * Responses to one client are sent in request order.  A call the dispatcher
 * defers (tkd_call_defer: "answered later") leaves that order: it answers
 * when completed and never holds back later responses.  A batch answers
 * with one array once all its members completed; a deferred member makes the
 * whole batch answer later in the same way.  Errors found while reading
 * (parse errors, limits, shutting down) take their place in the order too.
 *
 * Bounds per client (tkd_server_limits):
 *   input   at most max_line + one read chunk (64 KiB) is buffered; a longer
 *           line gets -32003 "line exceeds control.max_line (N bytes)" with
 *           id null, and the connection is closed once its answers are sent.
 *           At most 128 lines (or 128 KiB) of one client are handled per
 *           loop iteration; past that its reading pauses until the next
 *           iteration, so no flood holds the loop past its deadline.
 *   calls   at most max_pending queued, not yet executed; past it a request
 *           is refused at once with -32003 (not queued; the error keeps its
 *           place in the order).  A batch of more than max_batch requests
 *           is one -32003 error.
 *   output  unsent bytes (queued here, not yet accepted by the kernel).
 *           Events are dropped and counted once it exceeds max_output / 4;
 *           if responses push it past max_output the client is disconnected
 *           with a warning.  max_output must exceed the largest response.
 * A client whose input is done (it half-closed, or sent a line too long)
 * still gets every response due, then is closed; if its output does not
 * drain within TKD_SERVER_LINGER_MS of no progress, it is closed anyway.
 * A client that closed its socket entirely is freed at once; its queued
 * calls still execute and its deferred ones still complete, into nothing.
 */
#ifndef TICKD_DAEMON_SERVER_H
#define TICKD_DAEMON_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct event_base;

typedef struct tkd_server tkd_server;
typedef struct tkd_client tkd_client;
typedef struct tkd_call tkd_call;

#define TKD_SERVER_DEFAULT_MAX_CLIENTS 256
#define TKD_SERVER_DEFAULT_MAX_LINE ((size_t)1 << 20)    /* 1 MiB  */
#define TKD_SERVER_DEFAULT_MAX_PENDING 16384
#define TKD_SERVER_DEFAULT_MAX_BATCH 10000
#define TKD_SERVER_DEFAULT_MAX_OUTPUT ((size_t)16 << 20) /* 16 MiB */
#define TKD_SERVER_DEFAULT_MAX_INPUT ((size_t)64 << 20)  /* 64 MiB */
#define TKD_SERVER_DEFAULT_MODE 0660
#define TKD_SERVER_LINGER_MS 5000 /* ms without write progress before a
                                     finishing client is closed anyway */

typedef struct tkd_server_limits {
    size_t max_clients; /* connections at once                              */
    size_t max_line;    /* bytes per request line, terminator excluded     */
    size_t max_pending; /* queued (not yet executed) calls per client       */
    size_t max_batch;   /* requests per batch                               */
    size_t max_output;  /* bytes of unsent output per client                */
    size_t max_input;   /* bytes of request lines queued, not yet executed,
                           per client (0 = TKD_SERVER_DEFAULT_MAX_INPUT)    */
    uint64_t idle_timeout_ms; /* close a client idle this long; 0 = never   */
    uint64_t line_timeout_ms; /* close a client whose partial line is this
                                 old; 0 = never                             */
} tkd_server_limits;

typedef struct tkd_server_config {
    const char *path;   /* socket path to bind; ignored if listen_fd >= 0   */
    int listen_fd;      /* listening socket handed in (systemd), or -1      */
    unsigned mode;      /* permission bits of the socket file (0660)        */
    tkd_server_limits limits;
} tkd_server_config;

/* Server-wide counters since tkd_server_new(). */
typedef struct tkd_server_stats {
    uint64_t clients;          /* connected now                             */
    uint64_t accepted;         /* connections accepted                       */
    uint64_t rejected;         /* connections refused over max_clients       */
    uint64_t requests;         /* request objects received (batch members
                                  one each; an unparsable line one)          */
    uint64_t errors;           /* error responses produced (notifications'
                                  included, though never sent)               */
    uint64_t events_sent;      /* notifications queued to clients            */
    uint64_t events_dropped;   /* notifications dropped for slow clients     */
    uint64_t output_overflows; /* clients disconnected over max_output       */
    uint64_t bytes_in;         /* bytes read from clients                    */
    uint64_t bytes_out;        /* bytes written to clients                   */
    uint64_t input_refused;    /* requests refused over max_input            */
    uint64_t timeouts;         /* clients closed by idle or line timeouts    */
} tkd_server_stats;

/* Event topics of PROTOCOL.md "events". */
typedef enum tkd_topic {
    TKD_TOPIC_FRAME = 0,
    TKD_TOPIC_STATS = 1,
    TKD_TOPIC_OVERRUN = 2,
    TKD_TOPIC_SLOW_TICK = 3,
    TKD_TOPIC_LOG = 4,
    TKD_TOPIC_SLOW_REQUEST = 5,
    TKD_TOPIC_AGONES = 6,
    TKD_TOPIC_COUNT = 7
} tkd_topic;

#define TKD_TOPIC_BIT(t) (1u << (unsigned)(t))
#define TKD_TOPIC_ALL ((1u << TKD_TOPIC_COUNT) - 1u)

/* "frame", "stats", "overrun", "slow_tick", "log", "slow_request";
 * "unknown" otherwise. */
const char *tkd_topic_name(tkd_topic t);
/* Parse a topic name; 0 or TK_EINVAL. */
int tkd_topic_parse(const char *name, tkd_topic *out);

/*
 * The dispatcher.  Called by tkd_server_drain() once per queued call; it
 * must, before returning, either complete the call (tkd_call_reply or
 * tkd_call_error) or keep it with tkd_call_defer() and complete it later.
 * A call left neither is answered -32603 and an error is logged.
 */
typedef void (*tkd_exec_fn)(void *ud, tkd_call *call);

/* Defaults: no path, listen_fd -1, mode 0660, TKD_SERVER_DEFAULT_* limits. */
void tkd_server_config_init(tkd_server_config *cfg);

/*
 * Create a server on `base` listening on cfg->listen_fd (made non-blocking;
 * closed by tkd_server_free, never unlinked) or on a new socket bound at
 * cfg->path with cfg->mode (umask applied around bind(), then chmod, so the
 * file never has wider permissions).  An existing cfg->path is probed first:
 * something accepting on it is TK_EEXIST ("another tickd is listening on
 * PATH"); a stale socket (connection refused) is unlinked and replaced; a
 * file that is not a socket is TK_EEXIST.  Other failures: TK_EINVAL (bad
 * config: path too long, mode outside 0777, a zero limit, listen_fd not a
 * listening stream socket), TK_EIO (a system call failed).  On failure
 * nothing is left behind and a sentence naming the path and cause is written
 * to `err` (if not NULL; truncated to errlen).  The caller keeps `base`.
 * The process umask is changed for the duration of bind(): call this before
 * any other thread creates files.
 */
int tkd_server_new(struct event_base *base, const tkd_server_config *cfg,
                   tkd_server **out, char *err, size_t errlen);

/*
 * Close every client and the listener, unlink the socket file if this
 * server bound it and it is still ours (same inode), free everything.
 * Calls still queued are dropped unexecuted; deferred calls are freed, so
 * the dispatcher must hold none past this point (a warning names how many
 * were left).  NULL is a no-op.
 */
void tkd_server_free(tkd_server *srv);

/*
 * Execute every queued call: hand each, in arrival order, to `exec`.  Calls
 * of clients that have gone are executed too (a spawn sent just before
 * closing still spawns); only their responses are dropped.  Must be called
 * outside libevent callbacks of this server (the frame boundary); nested
 * calls from `exec` return 0.  Frees clients closed meanwhile.  Returns the
 * number of calls executed.  `exec` must not be NULL.
 */
size_t tkd_server_drain(tkd_server *srv, tkd_exec_fn exec, void *ud);
/* The same until the monotonic clock passes `deadline_ns` (checked after
 * each call; one call runs even if the deadline has passed). */
size_t tkd_server_drain_until(tkd_server *srv, tkd_exec_fn exec, void *ud, uint64_t deadline_ns);

/*
 * The frame's deadline, for the socket callbacks of the coming loop pass:
 * a client's input is framed and parsed only until then (the rest waits
 * for the next pass), so one pass never runs past the frame deadline by
 * more than one line.  0 = no deadline.
 */
void tkd_server_set_deadline(tkd_server *srv, uint64_t deadline_ns);
/* Monotonic ns spent in the server's own callbacks (accept, read, parse,
 * write) since the last call; resets the count. */
uint64_t tkd_server_take_busy_ns(tkd_server *srv);
/* Answer with a result that is already serialized JSON (`result_json`,
 * borrowed): saves encoding a large constant result again and again. */
void tkd_call_reply_text(tkd_call *call, const char *result_json);

/*
 * Write every client's pending output now, as far as each socket takes it
 * without blocking, and free clients closed meanwhile.  Called before the
 * loop sleeps; what remains is written by libevent as the sockets allow.
 * O(clients).
 */
void tkd_server_flush(tkd_server *srv);

/*
 * From now on every request is answered -32004 "shutting down" (not
 * executed).  Calls already queued or deferred still execute and complete.
 */
void tkd_server_shutting_down(tkd_server *srv);

/*
 * The reply gate (the journal: no reply reveals a change before the journal
 * holds it).  With a gate set, every response is stamped with gate(ud) when
 * it is ready to go, and is written only once tkd_server_release has been
 * told a number at least that high; held responses keep their order (and
 * count as unsent output).  Events are not held.  NULL: no gate.
 */
void tkd_server_set_gate(tkd_server *srv, uint64_t (*gate)(void *ud), void *ud);
/* Responses stamped up to `released` may go now. */
void tkd_server_release(tkd_server *srv, uint64_t released);

/*
 * Stop listening (unlinking the socket file if ours), write what can be
 * written to every client for at most `timeout_ms` (polling, without the
 * event loop), then close every client.  Replies completed after this are
 * dropped.  Safe to call once the server is shutting down, before free.
 */
void tkd_server_close_all(tkd_server *srv, int timeout_ms);

/*
 * Send {"jsonrpc":"2.0","method":"event.<topic>","params":params} to every
 * subscriber of `topic`, serialized once.  Steals `params` (NULL: no
 * "params").  A client whose unsent output exceeds max_output / 4 misses it
 * (its dropped count and the server's grow); clients whose input is done
 * get no events.  Never logs (safe from a log handler).  Returns the number
 * of clients it was queued to, or TK_EINVAL for a bad topic.
 */
int tkd_server_publish(tkd_server *srv, tkd_topic topic, json_t *params);

/* Clients subscribed to `topic` now (so a publisher can skip building an
 * event nobody will receive). */
size_t tkd_server_topic_subscribers(const tkd_server *srv, tkd_topic topic);

/* Add / remove topics (TKD_TOPIC_BIT masks); returns the client's new mask. */
unsigned tkd_server_subscribe(tkd_client *c, unsigned topic_mask);
unsigned tkd_server_unsubscribe(tkd_client *c, unsigned topic_mask);

/* Limits, for SIGHUP reloads: each > 0 (else TK_EINVAL, nothing changed).
 * They apply from the next line, connection or response on; nobody
 * already connected is cut off by a lower max_clients. */
int tkd_server_set_max_clients(tkd_server *srv, size_t n);
int tkd_server_set_max_line(tkd_server *srv, size_t bytes);
int tkd_server_set_max_pending(tkd_server *srv, size_t n);
int tkd_server_set_max_batch(tkd_server *srv, size_t n);
int tkd_server_set_max_output(tkd_server *srv, size_t bytes);
int tkd_server_set_max_input(tkd_server *srv, size_t bytes);
/* Timeouts in ms; 0 turns one off. */
void tkd_server_set_timeouts(tkd_server *srv, uint64_t idle_ms, uint64_t line_ms);
void tkd_server_get_limits(const tkd_server *srv, tkd_server_limits *out);

void tkd_server_get_stats(const tkd_server *srv, tkd_server_stats *out);
/* Path of the socket file this server bound, or NULL (fd handed in). */
const char *tkd_server_path(const tkd_server *srv);

/*
 * A second listener whose clients are read-only (HAProxy's stats socket
 * levels): their calls carry tkd_call_readonly() and the dispatcher
 * decides what they may do.  Same rules for an existing file as the main
 * socket; unlinked by tkd_server_free / close_all.  0, or TK_E* with `err`.
 */
int tkd_server_add_readonly(tkd_server *srv, const char *path, unsigned mode, char *err,
                            size_t errlen);
/* Its path, or NULL. */
const char *tkd_server_readonly_path(const tkd_server *srv);

/*
 * Calls.  A call is valid from the moment `exec` receives it until it is
 * completed; completing it frees it.  Completing is valid even if the
 * client has gone (the response is dropped).
 */
const char *tkd_call_method(const tkd_call *call); /* never NULL         */
json_t *tkd_call_params(const tkd_call *call);     /* borrowed, or NULL  */
json_t *tkd_call_id(const tkd_call *call);         /* borrowed; NULL for
                                                      a notification     */
bool tkd_call_is_notification(const tkd_call *call);
/* The client, or NULL once it has gone (or is closing). */
tkd_client *tkd_call_client(const tkd_call *call);
/* The client's identity, kept after it has gone, for logs. */
uint64_t tkd_call_client_id(const tkd_call *call);
uid_t tkd_call_uid(const tkd_call *call);
/* The call came through the read-only socket. */
bool tkd_call_readonly(const tkd_call *call);
pid_t tkd_call_pid(const tkd_call *call);

/* Keep the call past `exec` ("answered later").  Only from within `exec`. */
void tkd_call_defer(tkd_call *call);
/*
 * After deferring: the client's later calls wait (stay queued, in order)
 * until this one completes, as if it had run at once.  For a long request
 * done in slices over several frames (a big spawn); other clients' calls
 * go on.
 */
void tkd_call_hold_client(tkd_call *call);
/* End tkd_call_hold_client's hold before the call completes (a save that
 * has started: the client's later calls go on while it is written). */
void tkd_call_release_client(tkd_call *call);
/* Complete with a result (stolen; NULL means {}).  call NULL: nobody to
 * answer, the result is freed (tkd_call_error and tkd_call_hold_client
 * accept NULL too). */
void tkd_call_reply(tkd_call *call, json_t *result);
/* Complete with an error: `code` (rpc.h), `data` stolen (may be NULL),
 * message formatted printf-style. */
void tkd_call_error(tkd_call *call, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Clients.  Pointers are valid until the client's call returns NULL from
 * tkd_call_client(), i.e. only while handling one of its calls. */
uint64_t tkd_client_id(const tkd_client *c);     /* from 1, never reused */
uid_t tkd_client_uid(const tkd_client *c);       /* SO_PEERCRED, or -1   */
pid_t tkd_client_pid(const tkd_client *c);       /* SO_PEERCRED, or 0    */
unsigned tkd_client_topics(const tkd_client *c); /* subscribed mask      */
uint64_t tkd_client_dropped(const tkd_client *c); /* events dropped      */
size_t tkd_client_unsent(const tkd_client *c);   /* bytes queued here    */

#endif
