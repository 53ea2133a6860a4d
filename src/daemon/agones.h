/*
 * agones.h - tickd as an Agones game server: the GameServer lifecycle driven
 * through the Agones SDK server's REST gateway (the sidecar in the pod, on
 * localhost), with libevent's evhttp client on the frame loop's event base.
 *
 * On when AGONES_SDK_HTTP_PORT is set (Agones sets it in every game server
 * container) or [agones] enabled is true; the SDK server is then
 * http://127.0.0.1:$AGONES_SDK_HTTP_PORT, else [agones] port (9358, the
 * SDK's default).  The endpoints and bodies are Agones' documented REST API
 * (sdks/swagger/sdk.swagger.json, the grpc-gateway of sdk.proto):
 *
 *   POST /ready      {}                 once the control socket answers and a
 *                                       snapshot (load_on_start) is restored;
 *                                       retried with backoff until accepted
 *   POST /health     {}                 after completed frames (and from the
 *                                       idle wait between frames), every
 *                                       [agones] health_period_s: a frame stuck
 *                                       in a tick sends none, as it sends no
 *                                       systemd WATCHDOG=1
 *   GET  /watch/gameserver              a stream of {"result": GameServer}
 *                                       lines; state changes become `agones`
 *                                       events and engine.info's "agones"
 *   GET  /gameserver                    after each (re)connected watch
 *   PUT  /metadata/annotation {"key","value"}   (or /metadata/label with
 *                                       [agones] labels): "tps" and
 *                                       "entities", every metadata_s when they
 *                                       changed (Agones prefixes the keys with
 *                                       "agones.dev/sdk-")
 *   POST /allocate   {}                 agones.allocate (protocol), passed through
 *   POST /reserve    {"seconds": "N"}   agones.reserve (int64 as a JSON string,
 *                                       proto3's JSON mapping)
 *   POST /shutdown   {}                 at a graceful shutdown
 *
 * Nothing here blocks the frame loop: requests are asynchronous on the
 * event base (the frame loop's pacing wait runs it), every request is
 * bounded in time ([agones] timeout_s: connecting, sending, and each wait
 * for data; the watch only until its headers arrive), in size (8 KiB of
 * headers, 1 MiB of body, one watch line 1 MiB, one watch stream 16 MiB
 * before it is re-opened) and in number (one request in flight per
 * channel: control, health, watch; at most TKD_AGONES_MAX_QUEUE waiting
 * control requests).  An SDK server that is not there yet (it may start
 * after tickd), refuses, fails (5xx), stalls (accepts and never answers) or
 * streams slowly costs retries with exponential backoff (0.1 s doubling up
 * to [agones] retry_max_s), one warning when it stops answering and one
 * line when it answers again; never a frame.  Its answers are parsed
 * defensively: anything but a JSON object with a status.state of letters is
 * ignored (watch lines) or dropped with the stream (a line over the bound).
 *
 * One thread: everything runs on the frame thread (libevent callbacks
 * during the wait between frames).
 *
 * What it deliberately doesn't do: gRPC (the REST gateway is the documented
 * API for languages without a gRPC SDK), the alpha/beta SDK (player
 * tracking, counters and lists), WebSocket watches, or call Ready again
 * after an allocation (one world per GameServer: Shutdown ends it).
 */
#ifndef TICKD_DAEMON_AGONES_H
#define TICKD_DAEMON_AGONES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server.h"

struct tkd;
typedef struct tkd_agones tkd_agones;

#define TKD_AGONES_DEFAULT_PORT 9358          /* the SDK's default HTTP port    */
#define TKD_AGONES_MAX_HEADERS  8192          /* bytes of an answer's headers   */
#define TKD_AGONES_MAX_BODY     (1u << 20)    /* bytes of an answer's body      */
#define TKD_AGONES_MAX_LINE     (1u << 20)    /* bytes of one watch line        */
#define TKD_AGONES_WATCH_MAX    (16u << 20)   /* bytes of one watch stream      */
#define TKD_AGONES_MAX_QUEUE    64            /* control requests waiting       */
#define TKD_AGONES_BACKOFF_MIN  0.1           /* s, first retry delay           */
#define TKD_AGONES_STATE_MAX    32            /* bytes of a state name          */
#define TKD_AGONES_NAME_MAX     253           /* bytes of a GameServer name     */

/*
 * The SDK server's port from AGONES_SDK_HTTP_PORT, [agones] enabled and
 * [agones] port.  Returns 1 with *port set when Agones is on, 0 when it is
 * off, -1 with a sentence in `err` when AGONES_SDK_HTTP_PORT is set but is
 * not a port number (1-65535).
 */
int tkd_agones_port(const struct tkd *d, unsigned *port, char *err, size_t errlen);

/*
 * Create the client for d (d->base, d->cfg) when Agones is on; *out is
 * NULL when it is off.  Sends nothing yet.  0, or -1 with `err` set (a bad
 * AGONES_SDK_HTTP_PORT, no memory).
 */
int tkd_agones_new(struct tkd *d, tkd_agones **out, char *err, size_t errlen);

/* Start the lifecycle: POST /ready (retried until accepted) and the watch.
 * Call once, when the control socket answers and the world is restored. */
void tkd_agones_start(tkd_agones *a);

/*
 * The frame loop's beat, with the monotonic time `now_ns`: call after each
 * completed frame and from the idle wait between frames.  Sends POST
 * /health when [agones] health_period_s has passed since the last one
 * (none while one is still unanswered), and the TPS and entity count
 * metadata when [agones] metadata_s has passed and they changed.  NULL is
 * a no-op.
 */
void tkd_agones_tick(tkd_agones *a, uint64_t now_ns);

/* Monotonic ns at which tkd_agones_tick has something to send (so an idle
 * wait wakes for it); 0 when nothing is due (NULL: off). */
uint64_t tkd_agones_due(const tkd_agones *a);

/*
 * A protocol pass-through: agones.allocate (POST /allocate) or
 * agones.reserve (POST /reserve, `seconds` >= 0; 0 is until further
 * notice, as Agones' Reserve(0)).  The call is answered when the SDK server
 * answers: {} on 2xx, else -32002 naming what failed (data: {"http_status"}
 * when it answered).  `call` NULL (a timer action): failures are logged
 * and counted as timer action errors.  Returns 0, or -32003 when
 * TKD_AGONES_MAX_QUEUE requests wait already (the call is not kept).
 */
int tkd_agones_allocate(tkd_agones *a, tkd_call *call);
int tkd_agones_reserve(tkd_agones *a, tkd_call *call, uint64_t seconds);

/* engine.info's "agones": {"sdk", "state", "name", "ready", "reachable"}
 * (new reference); json null when `a` is NULL. */
json_t *tkd_agones_info(const tkd_agones *a);
/* Changes whenever tkd_agones_info would (engine.info's cache key). */
uint64_t tkd_agones_info_gen(const tkd_agones *a);

/*
 * Graceful shutdown: POST /shutdown on a connection of its own, running the
 * event loop until it is answered or [agones] timeout_s passed; calls still
 * waiting are answered -32004.  NULL is a no-op.
 */
void tkd_agones_shutdown(tkd_agones *a);

/* Free everything (no request is sent; pending calls are answered -32004).
 * NULL is a no-op. */
void tkd_agones_free(tkd_agones *a);

/* ---- parsing (pure; the fuzz target drives these) ------------------------- */

/* What tickd reads of a GameServer: its status.state and metadata name. */
typedef struct tkd_agones_gs {
    char state[TKD_AGONES_STATE_MAX + 1]; /* "Ready"; letters only           */
    char name[TKD_AGONES_NAME_MAX + 1];   /* object_meta.name, "" if absent  */
} tkd_agones_gs;

/*
 * Read a GameServer from `text` (`len` bytes): a GameServer object (GET
 * /gameserver) or, with `wrapped`, one watch line {"result": GameServer}
 * ({"error": ...} lines are refused).  Returns 0, or -1 with a sentence in
 * `why` (never quoting the input beyond a short state name).
 */
int tkd_agones_parse(const char *text, size_t len, bool wrapped, tkd_agones_gs *out, char *why,
                     size_t whylen);

/* The watch stream's line splitter: bytes in, complete lines out, each
 * bounded by `max` bytes. */
typedef struct tkd_agones_lines {
    char *buf;      /* the partial line (owned)                    */
    size_t len;     /* bytes in buf                                */
    size_t cap;     /* bytes allocated                             */
    size_t max;     /* longest line accepted                       */
    bool skipping;  /* inside a line over max: dropped to its end  */
} tkd_agones_lines;

typedef void (*tkd_agones_line_fn)(void *ud, const char *line, size_t len);

void tkd_agones_lines_init(tkd_agones_lines *l, size_t max);
void tkd_agones_lines_free(tkd_agones_lines *l);
/*
 * Feed `n` bytes; `fn` gets every complete line (without "\n" or "\r\n";
 * blank lines are skipped).  Returns 0, or -1 once a line passes `max`
 * (the rest of that line is skipped; the caller drops the stream).
 */
int tkd_agones_lines_feed(tkd_agones_lines *l, const char *p, size_t n, tkd_agones_line_fn fn,
                          void *ud);

#endif
