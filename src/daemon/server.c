/*
 * server.c - the control socket of server.h: listener, clients, framing,
 * the call queue, per-client response order, output caps and events.
 *
 * Objects and who points at whom:
 *
 *   tkd_server  clients (open ones, doubly linked), closing (marked, freed
 *               by reap()), the call FIFO (queued calls of all clients in
 *               arrival order) and the deferred calls (doubly linked).
 *   tkd_client  a connection: input and output evbuffers, its live replies,
 *               the subset of them still "in order" (a FIFO), counters.
 *   reply       one place in a client's response order: a single request or
 *               a whole batch.  It collects one response object per member;
 *               when the last member completes it is serialized and, if it
 *               is at the head of the order (or deferred), written; else it
 *               is held, serialized, until the replies before it are done.
 *   tkd_call    one valid request waiting for, or in, execution; it points
 *               at its reply (never at the client), so a client can go away
 *               while its calls are queued or deferred: reap() detaches the
 *               client's replies (reply->client = NULL) and the calls then
 *               complete into replies that are freed without being sent.
 *
 * A reply in the order FIFO blocks the replies after it until it is done or
 * deferred (client_advance pops those from the head).  Execution is FIFO,
 * so only errors found while reading are ever held behind a reply that is
 * not yet done: the order costs nothing in the common case.
 *
 * Callbacks never free a client: client_close() marks it (events deleted,
 * unlinked from the open list, detached from subscriptions) and activates
 * the reap event; reap() frees it from that event, tkd_server_drain(),
 * tkd_server_flush() or tkd_server_free(), never from the middle of one of
 * the client's own callbacks.
 *
 * Logging: tk_log may publish a "log" event back into this server (the
 * daemon's handler does), so every log call is made with the lists in a
 * consistent state, and tkd_server_publish() itself never logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "tickd/alloc.h"
#include "tickd/clock.h"
#include "tickd/error.h"
#include "tickd/log.h"

#include "jsonw.h"
#include "rpc.h"
#include "server.h"

#define READ_CHUNK (64 * 1024) /* bytes per read() of one client          */
#define ACCEPT_BURST 64        /* accepts per listener callback           */
#define ACCEPT_PAUSE_MS 100    /* ms without accepting after EMFILE       */
#define LISTEN_BACKLOG 1024    /* connections (the kernel may clamp it)   */
#define WRITE_IOV 64           /* evbuffer chunks per sendmsg()           */
#define REF_MIN (64 * 1024)    /* bytes: replies this big are not copied  */
#define LINES_PER_PASS 128     /* lines handled per client per iteration  */
#define BYTES_PER_PASS (128 * 1024) /* and bytes (one line always)        */
#define BATCH_WHOLE 64         /* members of a batch run at one boundary,
                                  past the drain's deadline               */

/* Client flags. */
#define CF_INPUT_DONE 0x1u /* no more requests will be read               */
#define CF_LINGER 0x2u     /* nothing more to come: close once written    */
#define CF_CLOSING 0x4u    /* closed; waiting for reap()                  */
#define CF_EOF 0x8u        /* read() saw end of input; lines may remain   */
#define CF_BACKLOG 0x10u   /* lines left over a pass; reading paused      */
#define CF_DISCARD 0x20u   /* after a line too long: input read and dropped
                              until end of input (a lingering close)      */

/* A lingering close reads and drops at most this much, for at most
 * DISCARD_MS: a client still writing the rest of a line that was
 * refused finishes its write and reads the answer, instead of a reset. */
#define DISCARD_MAX (64u << 20)
#define DISCARD_MS 2000

enum call_state { CALL_QUEUED, CALL_EXECUTING, CALL_DEFERRED, CALL_DONE };

/* A reply held back by the gate (tkd_server_set_gate): sent once the
 * released sequence number reaches `need`. */
struct gated {
    struct gated *next;
    char *text;              /* serialized, without the newline (jansson's) */
    size_t len;
    uint64_t need;
};

typedef struct reply reply;

struct reply {
    tkd_client *client;    /* NULL once the client is gone                */
    reply *onext;          /* next in the client's response order         */
    reply *lprev, *lnext;  /* the client's live replies                   */
    bool batch;            /* answer with an array                        */
    bool in_order;         /* linked in the client's response order       */
    bool deferred;         /* answers when done, out of order             */
    bool done;             /* every member completed                      */
    size_t waiting;        /* members not completed yet                   */
    char *text;            /* serialized answer held for its turn, or NULL */
    char *raw;             /* a single answer given pre-serialized, or NULL */
    size_t text_len;       /* bytes, '\n' excluded; counted in held       */
    size_t n;              /* members                                     */
    char **part;           /* batch: members' responses already encoded
                              (when they completed), or NULL entries      */
    json_t *resp[];        /* member responses; NULL = nothing to send    */
};

struct tkd_call {
    tkd_server *srv;
    reply *rep;              /* where the response goes; never NULL       */
    size_t index;            /* member index in rep->resp                  */
    json_t *req;             /* owned reference to the request object      */
    json_t *id;              /* borrowed from req; NULL: a notification    */
    const char *method;      /* borrowed from req                          */
    json_t *params;          /* borrowed from req; NULL when absent        */
    uint64_t client_id;      /* copied for logs after the client is gone   */
    bool readonly;           /* came through the read-only socket          */
    bool holds;              /* its client's later calls wait for it        */
    size_t in_bytes;         /* its share of the request line (max_input)  */
    uid_t uid;
    pid_t pid;
    enum call_state state;
    tkd_call *next;          /* server FIFO, while queued                  */
    tkd_call *dprev, *dnext; /* server's deferred list, while deferred     */
};

struct tkd_client {
    tkd_server *srv;
    uint64_t id;             /* from 1, never reused                        */
    int fd;
    uid_t uid;               /* peer credentials, (uid_t)-1 if unknown      */
    pid_t pid;               /* 0 if unknown                                */
    unsigned flags;          /* CF_*                                        */
    bool readonly;           /* connected through the read-only socket      */
    const char *why;         /* static: why input is done (for the log)     */
    struct event *rev, *wev; /* readable / writable (with linger timeout)   */
    struct event *more;      /* zero-delay timer: the rest of a backlog     */
    struct evbuffer *in;     /* unframed input, < max_line + READ_CHUNK + 1 */
    struct evbuffer *out;    /* output not yet taken by the kernel          */
    size_t scanned;          /* bytes at the start of `in` without '\n'     */
    reply *ohead, *otail;    /* response order                              */
    reply *live;             /* every reply still pointing here             */
    size_t nlive;            /* replies in `live`                           */
    size_t held;             /* bytes serialized, waiting for their turn    */
    size_t queued;           /* calls queued, not yet executed              */
    size_t in_bytes;         /* bytes of those calls' request lines         */
    uint64_t last_in_ns;     /* monotonic time of the last byte read        */
    uint64_t partial_ns;     /* since when a partial line waits; 0 = none   */
    uint64_t discard_end_ns; /* CF_DISCARD: stop dropping input then        */
    size_t discarded;        /* CF_DISCARD: bytes dropped so far            */
    unsigned topics;         /* TKD_TOPIC_BIT mask                          */
    uint64_t dropped;        /* events dropped for this client              */
    struct gated *ghead, *gtail; /* replies waiting for the gate (journal) */
    size_t gated;            /* bytes in them                               */
    tkd_client *prev, *next; /* server's open clients                       */
    tkd_client *close_next;  /* server's closing list                       */
};

struct tkd_server {
    struct event_base *base;   /* borrowed from the caller                  */
    int lfd;                   /* listening socket, -1 once closed           */
    struct event *lev;         /* accept readiness                           */
    int ro_fd;                 /* the read-only listener, or -1              */
    struct event *ro_ev;
    char *ro_path;             /* its socket file                            */
    dev_t ro_dev;
    ino_t ro_ino;
    struct event *resume_ev;   /* re-arms accepting after EMFILE             */
    struct event *reap_ev;     /* frees closing clients                      */
    char *path;                /* socket file we bound, NULL if handed in    */
    dev_t dev;                 /* of that socket file                        */
    ino_t ino;
    tkd_server_limits lim;
    tkd_client *clients;       /* open clients                               */
    tkd_client *closing;       /* marked, not yet freed                      */
    size_t nclients;           /* open clients                               */
    uint64_t next_client_id;
    tkd_call *qhead, *qtail;   /* queued calls, arrival order                */
    tkd_call *deferred;        /* deferred calls                             */
    size_t ndeferred;
    size_t nsubs[TKD_TOPIC_COUNT]; /* subscribers per topic                  */
    bool shutting_down;
    bool draining;             /* inside tkd_server_drain                    */
    tkd_call *executing;       /* the call `exec` is handling, or NULL       */
    bool rejecting;            /* refused a client since the last accept     */
    struct event *sweep_ev;    /* once a second: idle and line timeouts      */
    uint64_t *held;            /* clients whose queued calls wait (ids)      */
    size_t nheld, cap_held;
    uint64_t deadline_ns;      /* the loop pass ends then (0 = no deadline)  */
    uint64_t busy_ns;          /* time in our callbacks, for the frame report */
    uint64_t (*gate)(void *ud); /* the number a reply produced now waits for  */
    void *gate_ud;
    uint64_t released;         /* replies up to this number may go            */
    size_t ngated;             /* clients holding gated replies              */
    tkd_server_stats st;
};

static const struct timeval zero_tv = {0, 0};
static const struct timeval linger_tv = {TKD_SERVER_LINGER_MS / 1000,
                                         (TKD_SERVER_LINGER_MS % 1000) * 1000};

static const char *const topic_names[TKD_TOPIC_COUNT] = {"frame", "stats", "overrun",
                                                         "slow_tick", "log", "slow_request",
                                                         "agones"};

const char *tkd_topic_name(tkd_topic t)
{
    if ((unsigned)t >= TKD_TOPIC_COUNT)
        return "unknown";
    return topic_names[t];
}

int tkd_topic_parse(const char *name, tkd_topic *out)
{
    if (!name)
        return TK_EINVAL;
    for (unsigned i = 0; i < TKD_TOPIC_COUNT; i++) {
        if (strcmp(name, topic_names[i]) == 0) {
            *out = (tkd_topic)i;
            return 0;
        }
    }
    return TK_EINVAL;
}

/* ------------------------------------------------------------------ */
/* Output                                                             */
/* ------------------------------------------------------------------ */

static void client_close(tkd_client *c, tk_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void maybe_finish(tkd_client *c);

static size_t unsent(const tkd_client *c)
{
    return evbuffer_get_length(c->out) + c->held + c->gated;
}

/* Free a string allocated by jansson (json_dumps), with its allocator. */
static void json_text_free(char *s)
{
    json_malloc_t m;
    json_free_t f;
    if (!s)
        return;
    json_get_alloc_funcs(&m, &f);
    f(s);
}

static void json_text_release(const void *data, size_t len, void *extra)
{
    (void)len;
    (void)extra;
    json_text_free((char *)data);
}

/*
 * Serialize `msg` (borrowed) compactly, without the newline; *len gets its
 * length.  The result is freed with json_text_free (emit() does).  If
 * jansson cannot encode it (out of memory), the text is a -32603 error with
 * id null instead and an error is logged, so a client is never left
 * waiting; NULL only if even that fails.
 */
static char *encode(json_t *msg, size_t *len)
{
    char *s = tkd_jsonw_dump(msg, JSON_COMPACT | JSON_ENCODE_ANY, len);
    if (!s) {
        tk_log_error("control socket: a response could not be encoded");
        json_t *e = tkd_rpc_error(NULL, TKD_RPC_INTERNAL_ERROR, NULL,
                                  "internal error: response could not be encoded");
        s = e ? tkd_jsonw_dump(e, JSON_COMPACT, NULL) : NULL;
        json_decref(e);
        *len = s ? strlen(s) : 0;
    }
    return s;
}

/* Make sure libevent writes `c->out` when the socket allows. */
static void want_write(tkd_client *c)
{
    if (c->flags & CF_CLOSING)
        return;
    if (c->flags & CF_LINGER) {
        if (!event_pending(c->wev, EV_TIMEOUT, NULL))
            event_add(c->wev, &linger_tv);
        return;
    }
    if (!event_pending(c->wev, EV_WRITE, NULL))
        event_add(c->wev, NULL);
}

/*
 * Write as much of c->out as the socket takes now.  sendmsg with
 * MSG_NOSIGNAL, so a peer that went away is EPIPE here, never SIGPIPE for
 * the daemon.  Returns -1 if the client got closed (write error, or a
 * lingering client whose output is now all written), else 0.
 */
static int client_write(tkd_client *c)
{
    bool progressed = false;
    size_t len;
    while ((len = evbuffer_get_length(c->out)) > 0) {
        struct evbuffer_iovec v[WRITE_IOV];
        struct iovec iov[WRITE_IOV];
        int n = evbuffer_peek(c->out, -1, NULL, v, WRITE_IOV);
        if (n > WRITE_IOV)
            n = WRITE_IOV;
        size_t total = 0;
        for (int i = 0; i < n; i++) {
            iov[i].iov_base = v[i].iov_base;
            iov[i].iov_len = v[i].iov_len;
            total += v[i].iov_len;
        }
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)n;
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            int e = errno;
            client_close(c, TK_LOG_DEBUG, "write failed: %s", strerror(e));
            return -1;
        }
        evbuffer_drain(c->out, (size_t)w);
        c->srv->st.bytes_out += (uint64_t)w;
        progressed = true;
        if ((size_t)w < total)
            break;
    }
    if (evbuffer_get_length(c->out) == 0) {
        if ((c->flags & CF_LINGER) && !(c->flags & CF_DISCARD) && !c->ghead) {
            client_close(c, TK_LOG_DEBUG, "%s", c->why ? c->why : "done");
            return -1;
        }
        event_del(c->wev);
        return 0;
    }
    if (progressed && (c->flags & CF_LINGER))
        event_add(c->wev, &linger_tv); /* restart the no-progress clock */
    else
        want_write(c);
    return 0;
}

/*
 * Append serialized text (consumed) and its newline to the client's output.
 * Small texts are copied into the buffer's chains, so many small replies
 * cost about their size in memory; big ones (>= REF_MIN) are referenced,
 * not copied.
 */
static void emit_now(tkd_client *c, char *text, size_t len);

static void emit(tkd_client *c, char *text, size_t len)
{
    if (!text)
        return;
    if (c->flags & CF_CLOSING) {
        json_text_free(text);
        return;
    }
    tkd_server *srv = c->srv;
    uint64_t need = srv->gate ? srv->gate(srv->gate_ud) : 0;
    if (need > srv->released || c->ghead) {
        /* The journal has not made the changes before it safe yet: held,
         * in order, until tkd_server_release lets it go. */
        struct gated *g = tk_malloc(sizeof *g);
        g->next = NULL;
        g->text = text;
        g->len = len;
        g->need = need;
        if (c->gtail)
            c->gtail->next = g;
        else {
            c->ghead = g;
            srv->ngated++;
        }
        c->gtail = g;
        c->gated += len + 1;
        return;
    }
    emit_now(c, text, len);
}

static void emit_now(tkd_client *c, char *text, size_t len)
{
    if (len >= REF_MIN &&
        evbuffer_add_reference(c->out, text, len, json_text_release, NULL) == 0)
        text = NULL; /* now owned by the evbuffer */
    else
        evbuffer_add(c->out, text, len);
    evbuffer_add(c->out, "\n", 1);
    json_text_free(text);
    want_write(c);
}

/*
 * Enforce max_output after responses were queued: try a write first; if
 * the unsent output still exceeds the cap, disconnect with a warning.
 */
static void check_output(tkd_client *c)
{
    if (c->flags & CF_CLOSING)
        return;
    size_t cap = c->srv->lim.max_output;
    if (unsent(c) <= cap)
        return;
    if (client_write(c) < 0)
        return;
    size_t u = unsent(c);
    if (u <= cap)
        return;
    c->srv->st.output_overflows++;
    client_close(c, TK_LOG_WARN,
                 "%zu bytes of unsent output exceed control.max_output (%zu bytes)",
                 u, cap);
}

/* ------------------------------------------------------------------ */
/* Replies                                                            */
/* ------------------------------------------------------------------ */

/* A reply for `n` members, appended to c's response order. */
static reply *reply_new(tkd_client *c, size_t n, bool batch)
{
    reply *r = tk_calloc(1, sizeof *r + n * sizeof(json_t *));
    r->client = c;
    r->n = n;
    r->batch = batch;
    r->lnext = c->live;
    if (c->live)
        c->live->lprev = r;
    c->live = r;
    c->nlive++;
    r->in_order = true;
    if (c->otail)
        c->otail->onext = r;
    else
        c->ohead = r;
    c->otail = r;
    return r;
}

static void reply_destroy(reply *r)
{
    for (size_t i = 0; i < r->n; i++) {
        json_decref(r->resp[i]);
        if (r->part)
            json_text_free(r->part[i]);
    }
    tk_free(r->part);
    if (r->text)
        json_text_free(r->text);
    if (r->raw)
        json_text_free(r->raw);
    tk_free(r);
}

/* Remove r from its client's live list (it must not be in the order). */
static void reply_unlink(reply *r)
{
    tkd_client *c = r->client;
    if (!c)
        return;
    if (r->lprev)
        r->lprev->lnext = r->lnext;
    else
        c->live = r->lnext;
    if (r->lnext)
        r->lnext->lprev = r->lprev;
    c->nlive--;
    r->client = NULL;
    r->lprev = r->lnext = NULL;
}

/*
 * A batch's answer, from its members' texts (encoded as each completed, so
 * a batch of 10,000 costs its encoding spread over the frames that ran it,
 * not at once at its end) and the responses not encoded yet: "[a,b,...]",
 * allocated with jansson's allocator; NULL when nothing is to be sent.
 */
static char *batch_text(reply *r, size_t *len)
{
    size_t total = 2;
    for (size_t i = 0; i < r->n; i++) {
        if (!r->part[i] && r->resp[i]) {
            size_t l;
            r->part[i] = encode(r->resp[i], &l);
        }
        json_decref(r->resp[i]);
        r->resp[i] = NULL;
        if (r->part[i])
            total += strlen(r->part[i]) + 1;
    }
    if (total == 2)
        return NULL;
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    char *text = m(total + 1);
    size_t pos = 0;
    if (text)
        text[pos++] = '[';
    for (size_t i = 0; i < r->n; i++) {
        if (!r->part[i])
            continue;
        size_t l = strlen(r->part[i]);
        if (text) {
            if (pos > 1)
                text[pos++] = ',';
            memcpy(text + pos, r->part[i], l);
            pos += l;
        }
        json_text_free(r->part[i]);
        r->part[i] = NULL;
    }
    if (!text)
        return NULL;
    text[pos++] = ']';
    text[pos] = '\0';
    *len = pos;
    return text;
}

/* The message to send for a completed reply (moves the responses out):
 * the single response, or an array of the members' responses in request
 * order; NULL when there is nothing to send (notifications only). */
static json_t *reply_message(reply *r)
{
    if (!r->batch) {
        json_t *m = r->resp[0];
        r->resp[0] = NULL;
        return m;
    }
    json_t *arr = NULL;
    for (size_t i = 0; i < r->n; i++) {
        if (!r->resp[i])
            continue;
        if (!arr)
            arr = json_array();
        if (arr)
            json_array_append(arr, r->resp[i]);
        json_decref(r->resp[i]);
        r->resp[i] = NULL;
    }
    return arr;
}

/*
 * Pop every reply at the head of c's order that no longer blocks: done
 * ones are written (if they hold text) and freed, deferred ones leave the
 * order and stay live until they complete.
 */
static void client_advance(tkd_client *c)
{
    reply *r;
    while ((r = c->ohead) && (r->done || r->deferred)) {
        c->ohead = r->onext;
        if (!c->ohead)
            c->otail = NULL;
        r->onext = NULL;
        r->in_order = false;
        if (!r->done)
            continue;
        if (r->text) {
            c->held -= r->text_len + 1;
            emit(c, r->text, r->text_len);
            r->text = NULL;
        }
        reply_unlink(r);
        reply_destroy(r);
    }
}

/*
 * The last member of r completed: send the answer now if r is due (head of
 * the order, or deferred), else serialize it and hold it for its turn.
 * With the client gone r is simply freed; with the client closing it is
 * left for reap() to free.
 */
static void reply_finish(reply *r)
{
    tkd_client *c = r->client;
    r->done = true;
    if (!c) {
        reply_destroy(r);
        return;
    }
    if (c->flags & CF_CLOSING)
        return;
    size_t len = 0;
    char *text;
    if (r->raw) {
        text = r->raw;
        r->raw = NULL;
        len = strlen(text);
    } else if (r->batch && r->part) {
        text = batch_text(r, &len);
    } else {
        json_t *msg = reply_message(r);
        text = msg ? encode(msg, &len) : NULL;
        json_decref(msg);
    }
    if (r->in_order && !r->deferred && c->ohead != r) {
        r->text = text;
        r->text_len = len;
        if (text)
            c->held += len + 1;
        check_output(c);
        return;
    }
    emit(c, text, len);
    if (r->in_order) {
        client_advance(c); /* pops r if at the head; else it waits, done */
    } else {
        reply_unlink(r);
        reply_destroy(r);
    }
    check_output(c);
    maybe_finish(c);
}

/* ------------------------------------------------------------------ */
/* Calls                                                              */
/* ------------------------------------------------------------------ */

static void call_release_hold(tkd_call *call);

/* Give back what the call held against its client's max_input. */
static void call_uncharge(tkd_call *call, size_t bytes)
{
    tkd_client *c = call->rep->client;
    if (bytes > call->in_bytes)
        bytes = call->in_bytes;
    call->in_bytes -= bytes;
    if (c)
        c->in_bytes -= bytes <= c->in_bytes ? bytes : c->in_bytes;
}

/* The call must be uncharged already (its reply may be gone). */
static void call_free(tkd_call *call)
{
    json_decref(call->req);
    tk_free(call);
}

static void deferred_unlink(tkd_call *call)
{
    tkd_server *srv = call->srv;
    if (call->dprev)
        call->dprev->dnext = call->dnext;
    else
        srv->deferred = call->dnext;
    if (call->dnext)
        call->dnext->dprev = call->dprev;
    call->dprev = call->dnext = NULL;
    srv->ndeferred--;
}

/*
 * Store the response of `call` (stolen; dropped for a notification) in its
 * reply and finish the reply if it was the last member.  A call completed
 * while `exec` is handling it (deferred or not) is freed by the drain loop,
 * any other deferred one here.
 */
static void call_complete(tkd_call *call, json_t *resp)
{
    if (call->state != CALL_EXECUTING && call->state != CALL_DEFERRED) {
        tk_log_error("control socket: call of \"%s\" completed twice or before "
                     "execution",
                     call->method);
        json_decref(resp);
        return;
    }
    if (!call->id) {
        json_decref(resp);
        resp = NULL;
    }
    enum call_state prev = call->state;
    call->state = CALL_DONE;
    call_uncharge(call, call->in_bytes);
    call_release_hold(call);
    reply *r = call->rep;
    if (r->batch && resp && r->client) {
        /* Encode the member now: its share of the batch's cost. */
        if (!r->part)
            r->part = tk_calloc(r->n, sizeof *r->part);
        size_t l;
        r->part[call->index] = encode(resp, &l);
        json_decref(resp);
        resp = NULL;
    }
    r->resp[call->index] = resp;
    if (--r->waiting == 0)
        reply_finish(r);
    if (prev == CALL_DEFERRED) {
        deferred_unlink(call);
        if (call != call->srv->executing) /* else the drain loop frees it */
            call_free(call);
    }
}

/* Forget a call that will never execute or complete (server teardown). */
static void call_drop(tkd_call *call)
{
    call_uncharge(call, call->in_bytes);
    call_release_hold(call);
    reply *r = call->rep;
    call->state = CALL_DONE;
    if (--r->waiting == 0)
        reply_finish(r);
    call_free(call);
}

const char *tkd_call_method(const tkd_call *call) { return call->method; }
json_t *tkd_call_params(const tkd_call *call) { return call->params; }
json_t *tkd_call_id(const tkd_call *call) { return call->id; }
bool tkd_call_is_notification(const tkd_call *call) { return call->id == NULL; }
uint64_t tkd_call_client_id(const tkd_call *call) { return call->client_id; }
uid_t tkd_call_uid(const tkd_call *call) { return call->uid; }
bool tkd_call_readonly(const tkd_call *call) { return call->readonly; }
pid_t tkd_call_pid(const tkd_call *call) { return call->pid; }

tkd_client *tkd_call_client(const tkd_call *call)
{
    tkd_client *c = call->rep->client;
    if (!c || (c->flags & CF_CLOSING))
        return NULL;
    return c;
}

void tkd_call_defer(tkd_call *call)
{
    if (call->state != CALL_EXECUTING) {
        tk_log_error("control socket: call of \"%s\" deferred outside its execution",
                     call->method);
        return;
    }
    tkd_server *srv = call->srv;
    call->state = CALL_DEFERRED;
    call->dprev = NULL;
    call->dnext = srv->deferred;
    if (srv->deferred)
        srv->deferred->dprev = call;
    srv->deferred = call;
    srv->ndeferred++;
    reply *r = call->rep;
    r->deferred = true;
    tkd_client *c = r->client;
    if (c && !(c->flags & CF_CLOSING)) {
        client_advance(c); /* later replies no longer wait for this one */
        check_output(c);
    }
}

void tkd_call_reply(tkd_call *call, json_t *result)
{
    if (!call) { /* nobody to answer (a replayed request) */
        json_decref(result);
        return;
    }
    json_t *resp = NULL;
    if (call->id)
        resp = tkd_rpc_result(call->id, result);
    else
        json_decref(result);
    call_complete(call, resp);
}

void tkd_call_reply_text(tkd_call *call, const char *result_json)
{
    reply *r = call->rep;
    if (!call->id || r->raw || (r->batch && !r->client)) {
        /* A notification (or a batch nobody will read): the general path. */
        json_t *res = json_loads(result_json, JSON_DECODE_ANY, NULL);
        tkd_call_reply(call, res ? res : json_null());
        return;
    }
    char *id = tkd_jsonw_dump(call->id, JSON_COMPACT | JSON_ENCODE_ANY, NULL);
    size_t n = strlen(result_json) + (id ? strlen(id) : 4) + 40;
    json_malloc_t m;
    json_free_t f;
    json_get_alloc_funcs(&m, &f);
    char *text = m(n);
    if (text)
        snprintf(text, n, "{\"jsonrpc\":\"2.0\",\"result\":%s,\"id\":%s}", result_json,
                 id ? id : "null");
    json_text_free(id);
    if (!text) {
        json_t *res = json_loads(result_json, JSON_DECODE_ANY, NULL);
        tkd_call_reply(call, res ? res : json_null());
        return;
    }
    if (r->batch) {
        if (!r->part)
            r->part = tk_calloc(r->n, sizeof *r->part);
        r->part[call->index] = text;
    } else {
        r->raw = text;
    }
    call_complete(call, NULL);
}

void tkd_call_error(tkd_call *call, int code, json_t *data, const char *fmt, ...)
{
    if (!call) {
        json_decref(data);
        return;
    }
    call->srv->st.errors++;
    json_t *resp = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (call->id) {
        resp = tkd_rpc_verror(call->id, code, data, fmt, ap);
    } else {
        json_decref(data);
    }
    va_end(ap);
    if (tk_log_get_level() >= TK_LOG_DEBUG) {
        char msg[256];
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        tk_log_debug("client %" PRIu64 ": %s: error %d: %s", call->client_id,
                     call->method, code, msg);
    }
    call_complete(call, resp);
}

/* ------------------------------------------------------------------ */
/* Clients                                                            */
/* ------------------------------------------------------------------ */

/*
 * Mark c closed: no more I/O, off the open list and the subscriptions; it
 * is freed by the next reap().  The log line names the client and the
 * reason, at `level`.  Idempotent.
 */
static void client_close(tkd_client *c, tk_log_level level, const char *fmt, ...)
{
    if (c->flags & CF_CLOSING)
        return;
    tkd_server *srv = c->srv;
    c->flags |= CF_CLOSING;
    if (c->ghead)
        srv->ngated--;
    event_del(c->rev);
    event_del(c->wev);
    event_del(c->more);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    c->close_next = srv->closing;
    srv->closing = c;
    srv->nclients--;
    srv->st.clients = srv->nclients;
    for (unsigned t = 0; t < TKD_TOPIC_COUNT; t++)
        if (c->topics & TKD_TOPIC_BIT(t))
            srv->nsubs[t]--;
    c->topics = 0;
    if (srv->reap_ev)
        event_active(srv->reap_ev, EV_TIMEOUT, 1);
    if (level <= tk_log_get_level()) {
        char why[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        tk_log(level, "client %" PRIu64 " (uid %ld pid %ld) disconnected: %s", c->id,
               (long)(int)c->uid, (long)c->pid, why);
    }
}

/* Free a closed client; replies still awaiting calls are detached. */
static void client_free(tkd_client *c)
{
    reply *r = c->live;
    while (r) {
        reply *next = r->lnext;
        r->client = NULL;
        r->lprev = r->lnext = r->onext = NULL;
        r->in_order = false;
        if (r->waiting == 0)
            reply_destroy(r); /* done, or held for its turn */
        else if (r->text)
            json_text_free(r->text), r->text = NULL;
        r = next;
    }
    while (c->ghead) {
        struct gated *g = c->ghead;
        c->ghead = g->next;
        json_text_free(g->text);
        tk_free(g);
    }
    event_free(c->rev);
    event_free(c->wev);
    event_free(c->more);
    evbuffer_free(c->in);
    evbuffer_free(c->out);
    close(c->fd);
    tk_free(c);
}

static void reap(tkd_server *srv)
{
    tkd_client *c;
    while ((c = srv->closing)) {
        srv->closing = c->close_next;
        client_free(c);
    }
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    reap(arg);
}

/*
 * A client whose input is done is closed once every reply it is owed has
 * been produced and written; while output remains it lingers (closed
 * anyway after TKD_SERVER_LINGER_MS without write progress).
 */
static void maybe_finish(tkd_client *c)
{
    if ((c->flags & CF_CLOSING) || !(c->flags & CF_INPUT_DONE) || c->nlive)
        return;
    if (evbuffer_get_length(c->out) == 0 && !c->ghead) {
        if (!(c->flags & CF_DISCARD))
            client_close(c, TK_LOG_DEBUG, "%s", c->why);
        return;
    }
    if (!(c->flags & CF_LINGER)) {
        c->flags |= CF_LINGER;
        event_add(c->wev, &linger_tv);
    }
}

/* Stop reading from c for good (end of input or a fatal framing error). */
static void input_done(tkd_client *c, const char *why)
{
    if (c->flags & (CF_INPUT_DONE | CF_CLOSING))
        return;
    c->flags |= CF_INPUT_DONE;
    c->why = why;
    event_del(c->rev);
    event_del(c->more);
    evbuffer_drain(c->in, evbuffer_get_length(c->in));
    c->scanned = 0;
    maybe_finish(c);
}

/* Stop taking requests from c, but go on reading and dropping its input
 * until it ends (or DISCARD_MAX, or DISCARD_MS): then close. */
static void input_discard(tkd_client *c, const char *why)
{
    if (c->flags & (CF_INPUT_DONE | CF_CLOSING))
        return;
    c->flags |= CF_INPUT_DONE | CF_DISCARD;
    c->why = why;
    event_del(c->more);
    evbuffer_drain(c->in, evbuffer_get_length(c->in));
    c->scanned = 0;
    c->partial_ns = 0;
    c->discarded = 0;
    c->discard_end_ns = tk_clock_now_ns() + DISCARD_MS * 1000000ull;
}

static void discard_end(tkd_client *c)
{
    c->flags &= ~CF_DISCARD;
    event_del(c->rev);
    maybe_finish(c);
}

static void discard_input(evutil_socket_t fd, tkd_client *c)
{
    char buf[65536];
    for (int i = 0; i < 16; i++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            break;
        if (n <= 0) {
            discard_end(c);
            return;
        }
        c->discarded += (size_t)n;
        c->srv->st.bytes_in += (uint64_t)n;
        if (c->discarded >= DISCARD_MAX) {
            discard_end(c);
            return;
        }
    }
    if (tk_clock_now_ns() >= c->discard_end_ns)
        discard_end(c);
}

static void line_too_long(tkd_client *c)
{
    tkd_server *srv = c->srv;
    size_t max = srv->lim.max_line;
    srv->st.requests++;
    srv->st.errors++;
    tk_log_warn("client %" PRIu64 " (uid %ld pid %ld): line exceeds "
                "control.max_line (%zu bytes); closing",
                c->id, (long)(int)c->uid, (long)c->pid, max);
    reply *r = reply_new(c, 1, false);
    r->resp[0] = tkd_rpc_error(NULL, TKD_RPC_LIMIT, NULL,
                               "line exceeds control.max_line (%zu bytes)", max);
    input_discard(c, "line exceeds control.max_line");
    reply_finish(r);
}

static bool blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Queue a valid request as member `index` of reply r. */
static void queue_call(tkd_client *c, reply *r, size_t index, const tkd_rpc_item *it,
                       size_t bytes)
{
    tkd_server *srv = c->srv;
    tkd_call *call = tk_calloc(1, sizeof *call);
    call->srv = srv;
    call->rep = r;
    call->index = index;
    call->req = json_incref(it->request);
    call->id = it->id;
    call->method = it->method;
    call->params = it->params;
    call->client_id = c->id;
    call->readonly = c->readonly;
    call->uid = c->uid;
    call->pid = c->pid;
    call->state = CALL_QUEUED;
    call->in_bytes = bytes;
    c->in_bytes += bytes;
    if (srv->qtail)
        srv->qtail->next = call;
    else
        srv->qhead = call;
    srv->qtail = call;
    r->waiting++;
    c->queued++;
}

/*
 * One framed line: parse, then give it a place in the response order.
 * Valid requests are queued for the next drain unless the server is
 * shutting down (-32004) or the client has max_pending calls queued
 * (-32003); invalid ones are answered in their place.
 */
static void handle_line(tkd_client *c, const char *line, size_t len)
{
    tkd_server *srv = c->srv;
    if (blank(line, len))
        return;
    tkd_rpc_msg m;
    tkd_rpc_parse_line(line, len, srv->lim.max_batch, &m);
    if (m.error) {
        srv->st.requests++;
        srv->st.errors++;
        reply *r = reply_new(c, 1, false);
        r->resp[0] = m.error;
        m.error = NULL;
        tkd_rpc_msg_release(&m);
        reply_finish(r);
        return;
    }
    reply *r = reply_new(c, m.count, m.batch);
    size_t share = m.count ? len / m.count + 1 : len;
    /* One line always fits when nothing else is held (max_line bounds it). */
    bool over_input = c->in_bytes && c->in_bytes + len > srv->lim.max_input;
    for (size_t i = 0; i < m.count; i++) {
        tkd_rpc_item *it = &m.items[i];
        srv->st.requests++;
        if (it->error) {
            srv->st.errors++;
            if (!it->silent) {
                r->resp[i] = it->error;
                it->error = NULL;
            }
        } else if (srv->shutting_down) {
            srv->st.errors++;
            if (it->id)
                r->resp[i] =
                    tkd_rpc_error(it->id, TKD_RPC_SHUTTING_DOWN, NULL, "shutting down");
        } else if (c->queued >= srv->lim.max_pending) {
            srv->st.errors++;
            if (it->id)
                r->resp[i] = tkd_rpc_error(it->id, TKD_RPC_LIMIT, NULL,
                                           "too many pending requests (max %zu)",
                                           srv->lim.max_pending);
        } else if (over_input) {
            srv->st.errors++;
            srv->st.input_refused++;
            if (it->id)
                r->resp[i] = tkd_rpc_error(it->id, TKD_RPC_LIMIT, NULL,
                                           "requests waiting to run exceed "
                                           "control.max_input (%zu bytes)",
                                           srv->lim.max_input);
        } else {
            queue_call(c, r, i, it, share);
        }
    }
    tkd_rpc_msg_release(&m);
    if (r->waiting == 0)
        reply_finish(r);
}

/*
 * At end of input: did the peer close its socket entirely, rather than
 * only its writing half (shutdown(SHUT_WR))?  Linux reports POLLHUP on a
 * Unix stream socket once both directions are shut, so a gone client is
 * freed at once instead of lingering until its deferred calls complete.
 */
static bool peer_closed(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT, .revents = 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/* Every line before the end of input has been handled. */
static void end_of_input(tkd_client *c)
{
    if (peer_closed(c->fd))
        client_close(c, TK_LOG_DEBUG, "closed by peer");
    else
        input_done(c, "end of input");
}

/*
 * Frame what is in c->in into lines and handle them.  `scanned` remembers
 * how far a partial line was already searched, so a long line arriving in
 * many reads is scanned once.  A partial line longer than max_line (plus
 * room for a '\r') is refused before its end arrives, which bounds the
 * buffered input.  After end of input a last unterminated line counts.
 *
 * At most LINES_PER_PASS lines or BYTES_PER_PASS bytes are handled per
 * call, so a flood of small bad lines cannot hold one loop iteration for
 * long: past the budget, reading pauses (the socket applies backpressure)
 * and the rest is handled from a zero-delay timer, i.e. in the next loop
 * iteration, after other clients and the frame loop's own deadline check.
 */
static void process_input(tkd_client *c)
{
    tkd_server *srv = c->srv;
    size_t lines = 0, bytes = 0;
    while (!(c->flags & (CF_CLOSING | CF_INPUT_DONE))) {
        size_t avail = evbuffer_get_length(c->in);
        if (avail == 0)
            break;
        bool late = lines > 0 && srv->deadline_ns && tk_clock_now_ns() >= srv->deadline_ns;
        if (lines >= LINES_PER_PASS || bytes >= BYTES_PER_PASS || late) {
            if (!(c->flags & CF_BACKLOG)) {
                c->flags |= CF_BACKLOG;
                event_del(c->rev);
            }
            evtimer_add(c->more, &zero_tv);
            if (late) /* the rest after the frame: end this loop pass */
                event_base_loopbreak(srv->base);
            return;
        }
        ev_ssize_t nl = -1;
        if (c->scanned < avail) {
            struct evbuffer_ptr start;
            if (evbuffer_ptr_set(c->in, &start, c->scanned, EVBUFFER_PTR_SET) == 0)
                nl = evbuffer_search(c->in, "\n", 1, &start).pos;
        }
        size_t linelen, consume;
        if (nl < 0) {
            c->scanned = avail;
            if (avail > srv->lim.max_line + 1) {
                line_too_long(c);
                return;
            }
            if (!(c->flags & CF_EOF))
                break;
            linelen = consume = avail;
        } else {
            linelen = (size_t)nl;
            consume = linelen + 1;
        }
        c->scanned = 0;
        const char *line = (const char *)evbuffer_pullup(c->in, (ev_ssize_t)consume);
        if (!line) {
            client_close(c, TK_LOG_WARN, "out of memory framing a %zu-byte line",
                         consume);
            return;
        }
        if (linelen && line[linelen - 1] == '\r')
            linelen--;
        if (linelen > srv->lim.max_line) {
            line_too_long(c);
            return;
        }
        handle_line(c, line, linelen);
        evbuffer_drain(c->in, consume);
        lines++;
        bytes += consume;
        c->partial_ns = 0;
    }
    if (!(c->flags & (CF_CLOSING | CF_INPUT_DONE)) && evbuffer_get_length(c->in) && !c->partial_ns)
        c->partial_ns = tk_clock_now_ns();
    if (c->flags & (CF_CLOSING | CF_INPUT_DONE))
        return;
    if (c->flags & CF_EOF) {
        end_of_input(c); /* queued calls still run if the peer is gone */
        return;
    }
    if (c->flags & CF_BACKLOG) {
        c->flags &= ~CF_BACKLOG;
        event_add(c->rev, NULL);
    }
}

/* Every callback of the server counts its time (busy_ns) and ends the
 * loop pass once the frame deadline has passed. */
static void busy_end(tkd_server *srv, uint64_t t0)
{
    uint64_t t1 = tk_clock_now_ns();
    srv->busy_ns += t1 - t0;
    if (srv->deadline_ns && t1 >= srv->deadline_ns)
        event_base_loopbreak(srv->base);
}

static void on_read_(evutil_socket_t fd, tkd_client *c);

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    tkd_client *c = arg;
    tkd_server *srv = c->srv;
    uint64_t t0 = tk_clock_now_ns();
    on_read_(fd, c);
    busy_end(srv, t0);
}

static void on_read_(evutil_socket_t fd, tkd_client *c)
{
    if ((c->flags & (CF_DISCARD | CF_CLOSING)) == CF_DISCARD) {
        discard_input(fd, c);
        return;
    }
    if (c->flags & (CF_CLOSING | CF_INPUT_DONE | CF_EOF | CF_BACKLOG))
        return;
    int n = evbuffer_read(c->in, fd, READ_CHUNK);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return;
        int e = errno;
        client_close(c, TK_LOG_DEBUG, "read failed: %s", strerror(e));
        return;
    }
    if (n == 0) {
        c->flags |= CF_EOF;
        event_del(c->rev);
    } else {
        c->srv->st.bytes_in += (uint64_t)n;
        c->last_in_ns = tk_clock_now_ns();
    }
    process_input(c);
}

/* The rest of a backlog (see process_input). */
static void on_more(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    tkd_client *c = arg;
    tkd_server *srv = c->srv;
    uint64_t t0 = tk_clock_now_ns();
    if (!(c->flags & (CF_CLOSING | CF_INPUT_DONE)))
        process_input(c);
    busy_end(srv, t0);
}

static void on_write(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    tkd_client *c = arg;
    if (what & EV_TIMEOUT) {
        client_close(c, TK_LOG_WARN, "output not drained for %d ms",
                     TKD_SERVER_LINGER_MS);
        return;
    }
    tkd_server *srv = c->srv;
    uint64_t t0 = tk_clock_now_ns();
    client_write(c);
    busy_end(srv, t0);
}

static void client_new(tkd_server *srv, int fd, bool readonly)
{
    tkd_client *c = tk_calloc(1, sizeof *c);
    c->srv = srv;
    c->fd = fd;
    c->uid = (uid_t)-1;
    struct ucred cred;
    socklen_t clen = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
        c->uid = cred.uid;
        c->pid = cred.pid;
    }
    c->in = evbuffer_new();
    c->out = evbuffer_new();
    c->rev = event_new(srv->base, fd, EV_READ | EV_PERSIST, on_read, c);
    c->wev = event_new(srv->base, fd, EV_WRITE | EV_PERSIST, on_write, c);
    c->more = evtimer_new(srv->base, on_more, c);
    if (!c->in || !c->out || !c->rev || !c->wev || !c->more ||
        event_add(c->rev, NULL) != 0) {
        if (c->rev)
            event_free(c->rev);
        if (c->wev)
            event_free(c->wev);
        if (c->more)
            event_free(c->more);
        if (c->in)
            evbuffer_free(c->in);
        if (c->out)
            evbuffer_free(c->out);
        tk_free(c);
        close(fd);
        tk_log_warn("control socket: out of memory accepting a client");
        return;
    }
    c->id = ++srv->next_client_id;
    c->readonly = readonly;
    c->last_in_ns = tk_clock_now_ns();
    c->next = srv->clients;
    if (srv->clients)
        srv->clients->prev = c;
    srv->clients = c;
    srv->nclients++;
    srv->st.clients = srv->nclients;
    srv->st.accepted++;
    srv->rejecting = false;
    tk_log_debug("client %" PRIu64 " connected (uid %ld pid %ld%s)", c->id,
                 (long)(int)c->uid, (long)c->pid, readonly ? ", read-only" : "");
}

/* Over max_clients: one -32003 line, written without waiting, then close. */
static void reject(tkd_server *srv, int fd)
{
    json_t *e = tkd_rpc_error(NULL, TKD_RPC_LIMIT, NULL, "too many clients (max %zu)",
                              srv->lim.max_clients);
    char *s = e ? tkd_jsonw_dump(e, JSON_COMPACT, NULL) : NULL;
    json_decref(e);
    if (s) {
        struct iovec iov[2] = {{s, strlen(s)}, {(void *)"\n", 1}};
        struct msghdr mh;
        memset(&mh, 0, sizeof mh);
        mh.msg_iov = iov;
        mh.msg_iovlen = 2;
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0)
            srv->st.bytes_out += (uint64_t)w;
        json_text_free(s);
    }
    close(fd);
    srv->st.rejected++;
    srv->st.errors++;
    if (!srv->rejecting) {
        srv->rejecting = true;
        tk_log_warn("control socket: %zu clients connected, refusing more "
                    "(control.max_clients)",
                    srv->nclients);
    }
}

static void on_accept_(evutil_socket_t lfd, tkd_server *srv, bool readonly);

static void on_accept(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    tkd_server *srv = arg;
    uint64_t t0 = tk_clock_now_ns();
    on_accept_(lfd, srv, false);
    busy_end(srv, t0);
}

static void on_accept_ro(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    tkd_server *srv = arg;
    uint64_t t0 = tk_clock_now_ns();
    on_accept_(lfd, srv, true);
    busy_end(srv, t0);
}

static void on_accept_(evutil_socket_t lfd, tkd_server *srv, bool readonly)
{
    for (int i = 0; i < ACCEPT_BURST; i++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            if (e == EINTR || e == ECONNABORTED)
                continue;
            if (e == EAGAIN || e == EWOULDBLOCK)
                return;
            if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM) {
                struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
                event_del(srv->lev);
                if (srv->ro_ev)
                    event_del(srv->ro_ev);
                evtimer_add(srv->resume_ev, &tv);
                tk_log_warn("control socket: accept failed: %s; not accepting for "
                            "%d ms",
                            strerror(e), ACCEPT_PAUSE_MS);
                return;
            }
            tk_log_warn("control socket: accept failed: %s", strerror(e));
            return;
        }
        if (srv->nclients >= srv->lim.max_clients) {
            reject(srv, fd);
            continue;
        }
        client_new(srv, fd, readonly);
    }
}

/*
 * Once a second: close clients idle past idle_timeout_ms (nothing read for
 * that long, no call queued or answer owed, no output pending, no event
 * subscription) and clients whose partial line is older than
 * line_timeout_ms (told so with -32003 first).  O(clients).
 */
static void on_sweep(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    tkd_server *srv = arg;
    uint64_t now = tk_clock_now_ns();
    tkd_client *c, *next;
    for (c = srv->clients; c; c = next) {
        next = c->next;
        if ((c->flags & (CF_DISCARD | CF_CLOSING)) == CF_DISCARD && now >= c->discard_end_ns) {
            discard_end(c); /* a client that neither ends nor reads */
            continue;
        }
        if (c->flags & (CF_CLOSING | CF_INPUT_DONE))
            continue;
        uint64_t line_ns = srv->lim.line_timeout_ms * 1000000ull;
        if (line_ns && c->partial_ns && now - c->partial_ns >= line_ns) {
            srv->st.timeouts++;
            srv->st.requests++;
            srv->st.errors++;
            tk_log_warn("client %" PRIu64 " (uid %ld pid %ld): a request line stayed "
                        "incomplete for %.0f s (control.line_timeout_s); closing",
                        c->id, (long)(int)c->uid, (long)c->pid, (double)line_ns / 1e9);
            reply *r = reply_new(c, 1, false);
            r->resp[0] = tkd_rpc_error(NULL, TKD_RPC_LIMIT, NULL,
                                       "request line incomplete for %.0f s "
                                       "(control.line_timeout_s)",
                                       (double)line_ns / 1e9);
            input_done(c, "line timeout");
            reply_finish(r);
            continue;
        }
        uint64_t idle_ns = srv->lim.idle_timeout_ms * 1000000ull;
        if (idle_ns && !c->topics && !c->nlive && !c->queued &&
            evbuffer_get_length(c->in) == 0 && unsent(c) == 0 &&
            now - c->last_in_ns >= idle_ns) {
            srv->st.timeouts++;
            client_close(c, TK_LOG_INFO, "idle for %.0f s (control.idle_timeout_s)",
                         (double)idle_ns / 1e9);
        }
    }
    reap(srv);
}

static void on_accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    tkd_server *srv = arg;
    if (srv->lev)
        event_add(srv->lev, NULL);
    if (srv->ro_ev)
        event_add(srv->ro_ev, NULL);
}

/* ------------------------------------------------------------------ */
/* Listener                                                           */
/* ------------------------------------------------------------------ */

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/*
 * Bind and listen at `path` (see tkd_server_new for the rules about an
 * existing file).  On success srv->lfd, path, dev and ino are set.
 */
static int listen_path(tkd_server *srv, const char *path, unsigned mode, char *err,
                       size_t errlen);
static int listen_at(const char *path, unsigned mode, int *ofd, dev_t *odev, ino_t *oino,
                     char *err, size_t errlen);

static int listen_path(tkd_server *srv, const char *path, unsigned mode, char *err,
                       size_t errlen)
{
    int fd;
    dev_t dev;
    ino_t ino;
    int rc = listen_at(path, mode, &fd, &dev, &ino, err, errlen);
    if (rc)
        return rc;
    srv->lfd = fd;
    srv->path = tk_strdup(path);
    srv->dev = dev;
    srv->ino = ino;
    return 0;
}

static int listen_at(const char *path, unsigned mode, int *ofd, dev_t *odev, ino_t *oino,
                     char *err, size_t errlen)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (!path || !*path)
        return fail(err, errlen, TK_EINVAL, "control socket: no path given");
    if (strlen(path) >= sizeof sa.sun_path)
        return fail(err, errlen, TK_EINVAL,
                    "control socket path is too long (max %zu bytes): %s",
                    sizeof sa.sun_path - 1, path);
    memcpy(sa.sun_path, path, strlen(path) + 1);

    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return fail(err, errlen, TK_EEXIST, "%s exists and is not a socket", path);
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (probe < 0)
            return fail(err, errlen, TK_EIO, "control socket: socket(): %s",
                        strerror(errno));
        int r = connect(probe, (struct sockaddr *)&sa, sizeof sa);
        int e = errno;
        close(probe);
        if (r == 0 || e == EAGAIN || e == EINPROGRESS)
            return fail(err, errlen, TK_EEXIST, "another tickd is listening on %s",
                        path);
        if (e == ECONNREFUSED) {
            if (unlink(path) != 0 && errno != ENOENT)
                return fail(err, errlen, TK_EIO, "cannot remove stale socket %s: %s",
                            path, strerror(errno));
            tk_log_info("control socket: removed stale socket %s", path);
        } else if (e != ENOENT) {
            return fail(err, errlen, TK_EIO, "cannot probe existing socket %s: %s",
                        path, strerror(e));
        }
    } else if (errno != ENOENT) {
        return fail(err, errlen, TK_EIO, "cannot stat %s: %s", path, strerror(errno));
    }

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(err, errlen, TK_EIO, "control socket: socket(): %s",
                    strerror(errno));
    /* The umask makes bind() create the file with at most `mode`; chmod then
     * sets it exactly, so it is never more open than asked, even briefly. */
    mode_t old = umask((mode_t)(~mode & 0777));
    int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    umask(old);
    if (r != 0) {
        close(fd);
        if (e == EADDRINUSE)
            return fail(err, errlen, TK_EEXIST, "another tickd is listening on %s",
                        path);
        return fail(err, errlen, TK_EIO, "cannot bind %s: %s", path, strerror(e));
    }
    if (chmod(path, (mode_t)mode) != 0 || lstat(path, &st) != 0 ||
        listen(fd, LISTEN_BACKLOG) != 0) {
        e = errno;
        unlink(path);
        close(fd);
        return fail(err, errlen, TK_EIO, "cannot listen on %s: %s", path, strerror(e));
    }
    *ofd = fd;
    *odev = st.st_dev;
    *oino = st.st_ino;
    return 0;
}

/* Take over a listening socket handed in (systemd socket activation). */
static int adopt_fd(tkd_server *srv, int fd, char *err, size_t errlen)
{
    int val = 0;
    socklen_t len = sizeof val;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &val, &len) != 0 || !val)
        return fail(err, errlen, TK_EINVAL,
                    "control socket: fd %d is not a listening socket", fd);
    len = sizeof val;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &val, &len) != 0 || val != SOCK_STREAM)
        return fail(err, errlen, TK_EINVAL,
                    "control socket: fd %d is not a stream socket", fd);
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) != 0)
        return fail(err, errlen, TK_EIO, "control socket: fd %d: %s", fd,
                    strerror(errno));
    srv->lfd = fd;
    return 0;
}

/* Close a listener; unlink its socket file if it is still the one we bound
 * (another daemon may have replaced it since). */
static void close_listener(struct event **ev, int *fd, char **path, dev_t dev, ino_t ino)
{
    if (*ev) {
        event_free(*ev);
        *ev = NULL;
    }
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    if (*path) {
        struct stat st;
        if (lstat(*path, &st) == 0 && st.st_dev == dev && st.st_ino == ino)
            unlink(*path);
        tk_free(*path);
        *path = NULL;
    }
}

/* Close both listeners (the control socket and the read-only one). */
static void stop_listening(tkd_server *srv)
{
    if (srv->resume_ev)
        event_del(srv->resume_ev);
    close_listener(&srv->lev, &srv->lfd, &srv->path, srv->dev, srv->ino);
    close_listener(&srv->ro_ev, &srv->ro_fd, &srv->ro_path, srv->ro_dev, srv->ro_ino);
}

/* ------------------------------------------------------------------ */
/* Server                                                             */
/* ------------------------------------------------------------------ */

void tkd_server_config_init(tkd_server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_fd = -1;
    cfg->mode = TKD_SERVER_DEFAULT_MODE;
    cfg->limits.max_clients = TKD_SERVER_DEFAULT_MAX_CLIENTS;
    cfg->limits.max_line = TKD_SERVER_DEFAULT_MAX_LINE;
    cfg->limits.max_pending = TKD_SERVER_DEFAULT_MAX_PENDING;
    cfg->limits.max_batch = TKD_SERVER_DEFAULT_MAX_BATCH;
    cfg->limits.max_output = TKD_SERVER_DEFAULT_MAX_OUTPUT;
}

static bool limits_ok(const tkd_server_limits *l)
{
    return l->max_clients > 0 && l->max_line > 0 && l->max_pending > 0 &&
           l->max_batch > 0 && l->max_output > 0;
}

int tkd_server_new(struct event_base *base, const tkd_server_config *cfg,
                   tkd_server **out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    *out = NULL;
    if (!base || !cfg)
        return fail(err, errlen, TK_EINVAL, "control socket: no event base or config");
    if (!limits_ok(&cfg->limits))
        return fail(err, errlen, TK_EINVAL, "control socket: every limit must be > 0");
    if (cfg->mode & ~0777u)
        return fail(err, errlen, TK_EINVAL, "control socket: mode %o is not 0..0777",
                    cfg->mode);

    tkd_server *srv = tk_calloc(1, sizeof *srv);
    srv->base = base;
    srv->lfd = -1;
    srv->ro_fd = -1;
    srv->lim = cfg->limits;
    int rc = cfg->listen_fd >= 0 ? adopt_fd(srv, cfg->listen_fd, err, errlen)
                                 : listen_path(srv, cfg->path, cfg->mode, err, errlen);
    if (rc != 0) {
        tk_free(srv);
        return rc;
    }
    srv->lev = event_new(base, srv->lfd, EV_READ | EV_PERSIST, on_accept, srv);
    srv->resume_ev = evtimer_new(base, on_accept_resume, srv);
    srv->reap_ev = event_new(base, -1, 0, on_reap, srv);
    srv->sweep_ev = event_new(base, -1, EV_PERSIST, on_sweep, srv);
    struct timeval sweep_tv = {1, 0};
    if (!srv->lim.max_input)
        srv->lim.max_input = TKD_SERVER_DEFAULT_MAX_INPUT;
    if (!srv->lev || !srv->resume_ev || !srv->reap_ev || !srv->sweep_ev ||
        event_add(srv->lev, NULL) != 0 || event_add(srv->sweep_ev, &sweep_tv) != 0) {
        if (cfg->listen_fd >= 0)
            srv->lfd = -1; /* a failed adoption leaves the caller's fd open */
        stop_listening(srv);
        if (srv->resume_ev)
            event_free(srv->resume_ev);
        if (srv->reap_ev)
            event_free(srv->reap_ev);
        if (srv->sweep_ev)
            event_free(srv->sweep_ev);
        tk_free(srv);
        return fail(err, errlen, TK_ENOMEM, "control socket: out of memory");
    }
    *out = srv;
    return 0;
}

void tkd_server_free(tkd_server *srv)
{
    if (!srv)
        return;
    stop_listening(srv);
    while (srv->clients)
        client_close(srv->clients, TK_LOG_DEBUG, "server stopped");
    reap(srv);
    tkd_call *call;
    while ((call = srv->qhead)) {
        srv->qhead = call->next;
        call_drop(call);
    }
    srv->qtail = NULL;
    size_t ndef = srv->ndeferred;
    while ((call = srv->deferred)) {
        deferred_unlink(call);
        call_drop(call);
    }
    if (ndef)
        tk_log_warn("control socket: %zu deferred call%s dropped unanswered", ndef,
                    ndef == 1 ? "" : "s");
    event_free(srv->resume_ev);
    event_free(srv->reap_ev);
    event_free(srv->sweep_ev);
    tk_free(srv->held);
    tk_free(srv);
}

/*
 * A deferred call keeps only what completing it needs (id and method): its
 * params can be large (a world.step carrying 256 KiB), and answered-later
 * calls may wait long.
 */
static void call_shrink(tkd_call *call)
{
    json_t *small = json_object();
    if (!small)
        return;
    json_object_set(small, "method", json_object_get(call->req, "method"));
    if (call->id)
        json_object_set(small, "id", call->id);
    json_decref(call->req);
    call->req = small;
    call->method = json_string_value(json_object_get(small, "method"));
    call->id = call->id ? json_object_get(small, "id") : NULL;
    call->params = NULL;
    /* It still holds its id (a client may send big string ids). */
    size_t keep = 64 + strlen(call->method ? call->method : "") +
                  (json_is_string(call->id) ? json_string_length(call->id) : 32);
    if (keep < call->in_bytes)
        call_uncharge(call, call->in_bytes - keep);
}

static bool client_held(const tkd_server *srv, uint64_t client_id)
{
    for (size_t i = 0; i < srv->nheld; i++)
        if (srv->held[i] == client_id)
            return true;
    return false;
}

/* The call that held its client completed (or was dropped). */
static void call_release_hold(tkd_call *call)
{
    if (!call->holds)
        return;
    call->holds = false;
    tkd_server *srv = call->srv;
    for (size_t i = 0; i < srv->nheld; i++) {
        if (srv->held[i] == call->client_id) {
            srv->held[i] = srv->held[--srv->nheld];
            break;
        }
    }
}

void tkd_call_hold_client(tkd_call *call)
{
    if (!call || call->state != CALL_DEFERRED || call->holds)
        return;
    tkd_server *srv = call->srv;
    if (srv->nheld == srv->cap_held) {
        srv->cap_held = srv->cap_held ? srv->cap_held * 2 : 8;
        srv->held = tk_realloc(srv->held, srv->cap_held * sizeof *srv->held);
    }
    srv->held[srv->nheld++] = call->client_id;
    call->holds = true;
}

void tkd_call_release_client(tkd_call *call) { call_release_hold(call); }

static size_t drain(tkd_server *srv, tkd_exec_fn exec, void *ud, uint64_t deadline_ns)
{
    if (srv->draining)
        return 0;
    srv->draining = true;
    size_t n = 0;
    tkd_call *prev = NULL;   /* the last call skipped (its client is held) */
    const reply *last = NULL; /* the reply of the last call executed        */
    for (;;) {
        tkd_call *call = prev ? prev->next : srv->qhead;
        if (!call)
            break;
        /* Past the deadline the rest waits for the next boundary, except the
         * rest of a batch of up to BATCH_WHOLE members: a batch such as
         * world.trace + world.step must not straddle a frame (a pause frame
         * would be traced instead of the first step).  Bigger batches are
         * cut like separate requests. */
        if (n > 0 && deadline_ns && tk_clock_now_ns() >= deadline_ns &&
            !(call->rep == last && call->rep->batch && call->rep->n <= BATCH_WHOLE))
            break;
        if (srv->nheld && client_held(srv, call->client_id)) {
            prev = call; /* waits, in order, until its client's long call ends */
            continue;
        }
        if (prev)
            prev->next = call->next;
        else
            srv->qhead = call->next;
        if (srv->qtail == call)
            srv->qtail = prev;
        call->next = NULL;
        tkd_client *c = call->rep->client;
        if (c && c->queued)
            c->queued--;

        call->state = CALL_EXECUTING;
        srv->executing = call;
        last = call->rep;
        exec(ud, call);
        srv->executing = NULL;
        n++;
        if (call->state == CALL_EXECUTING) {
            tk_log_error("control socket: method \"%s\" neither answered nor "
                         "deferred its call",
                         call->method);
            srv->st.errors++;
            call_complete(call, call->id ? tkd_rpc_error(call->id,
                                                         TKD_RPC_INTERNAL_ERROR, NULL,
                                                         "internal error: method "
                                                         "\"%s\" did not answer",
                                                         call->method)
                                         : NULL);
        }
        if (call->state == CALL_DONE)
            call_free(call);
        else if (call->state == CALL_DEFERRED)
            call_shrink(call);
    }
    srv->draining = false;
    reap(srv);
    return n;
}

size_t tkd_server_drain_until(tkd_server *srv, tkd_exec_fn exec, void *ud, uint64_t deadline_ns)
{
    return drain(srv, exec, ud, deadline_ns ? deadline_ns : 1);
}

size_t tkd_server_drain(tkd_server *srv, tkd_exec_fn exec, void *ud)
{
    return drain(srv, exec, ud, 0);
}

void tkd_server_set_deadline(tkd_server *srv, uint64_t deadline_ns)
{
    srv->deadline_ns = deadline_ns;
}

uint64_t tkd_server_take_busy_ns(tkd_server *srv)
{
    uint64_t ns = srv->busy_ns;
    srv->busy_ns = 0;
    return ns;
}

void tkd_server_flush(tkd_server *srv)
{
    tkd_client *c, *next;
    for (c = srv->clients; c; c = next) {
        next = c->next;
        if (evbuffer_get_length(c->out))
            client_write(c);
    }
    reap(srv);
}

void tkd_server_shutting_down(tkd_server *srv) { srv->shutting_down = true; }

void tkd_server_set_gate(tkd_server *srv, uint64_t (*gate)(void *ud), void *ud)
{
    srv->gate = gate;
    srv->gate_ud = ud;
}

void tkd_server_release(tkd_server *srv, uint64_t released)
{
    if (released > srv->released)
        srv->released = released;
    if (!srv->ngated)
        return;
    tkd_client *c, *next;
    for (c = srv->clients; c; c = next) {
        next = c->next;
        if (!c->ghead)
            continue;
        while (c->ghead && c->ghead->need <= srv->released) {
            struct gated *g = c->ghead;
            c->ghead = g->next;
            if (!c->ghead) {
                c->gtail = NULL;
                srv->ngated--;
            }
            c->gated -= g->len + 1;
            emit_now(c, g->text, g->len);
            tk_free(g);
        }
        if (!c->ghead)
            maybe_finish(c);
    }
}

void tkd_server_close_all(tkd_server *srv, int timeout_ms)
{
    stop_listening(srv);
    uint64_t deadline =
        tk_clock_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
    struct pollfd *pfd = NULL;
    size_t cap = 0;
    for (;;) {
        size_t n = 0;
        tkd_client *c, *next;
        for (c = srv->clients; c; c = next) {
            next = c->next;
            if (evbuffer_get_length(c->out) == 0 || client_write(c) < 0 ||
                evbuffer_get_length(c->out) == 0)
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                pfd = tk_realloc(pfd, cap * sizeof *pfd);
            }
            pfd[n].fd = c->fd;
            pfd[n].events = POLLOUT;
            pfd[n].revents = 0;
            n++;
        }
        uint64_t now = tk_clock_now_ns();
        if (n == 0 || now >= deadline)
            break;
        int ms = (int)((deadline - now + 999999u) / 1000000u);
        if (poll(pfd, (nfds_t)n, ms) < 0 && errno != EINTR)
            break;
    }
    tk_free(pfd);
    while (srv->clients)
        client_close(srv->clients, TK_LOG_DEBUG, "server shutting down");
    reap(srv);
}

int tkd_server_publish(tkd_server *srv, tkd_topic topic, json_t *params)
{
    if ((unsigned)topic >= TKD_TOPIC_COUNT) {
        json_decref(params);
        return TK_EINVAL;
    }
    if (srv->nsubs[topic] == 0) {
        json_decref(params);
        return 0;
    }
    char method[32];
    snprintf(method, sizeof method, "event.%s", topic_names[topic]);
    json_t *msg = tkd_rpc_notification(method, params);
    char *text = msg ? tkd_jsonw_dump(msg, JSON_COMPACT, NULL) : NULL;
    json_decref(msg);
    if (!text)
        return 0;
    size_t len = strlen(text);
    size_t cap = srv->lim.max_output / 4;
    unsigned bit = TKD_TOPIC_BIT(topic);
    int sent = 0;
    for (tkd_client *c = srv->clients; c; c = c->next) {
        if (!(c->topics & bit) || (c->flags & (CF_INPUT_DONE | CF_LINGER | CF_CLOSING)))
            continue;
        if (unsent(c) > cap) {
            c->dropped++;
            srv->st.events_dropped++;
            continue;
        }
        if (evbuffer_add(c->out, text, len) != 0 || evbuffer_add(c->out, "\n", 1) != 0) {
            c->dropped++;
            srv->st.events_dropped++;
            continue;
        }
        want_write(c);
        srv->st.events_sent++;
        sent++;
    }
    json_text_free(text);
    return sent;
}

unsigned tkd_server_subscribe(tkd_client *c, unsigned topic_mask)
{
    if (!c || (c->flags & CF_CLOSING))
        return 0;
    unsigned add = topic_mask & TKD_TOPIC_ALL & ~c->topics;
    for (unsigned t = 0; t < TKD_TOPIC_COUNT; t++)
        if (add & TKD_TOPIC_BIT(t))
            c->srv->nsubs[t]++;
    c->topics |= add;
    return c->topics;
}

size_t tkd_server_topic_subscribers(const tkd_server *srv, tkd_topic topic)
{
    if (!srv || (unsigned)topic >= TKD_TOPIC_COUNT)
        return 0;
    return srv->nsubs[topic];
}

unsigned tkd_server_unsubscribe(tkd_client *c, unsigned topic_mask)
{
    if (!c || (c->flags & CF_CLOSING))
        return 0;
    unsigned del = topic_mask & c->topics;
    for (unsigned t = 0; t < TKD_TOPIC_COUNT; t++)
        if (del & TKD_TOPIC_BIT(t))
            c->srv->nsubs[t]--;
    c->topics &= ~del;
    return c->topics;
}

#define LIMIT_SETTER(name, field)                                              \
    int tkd_server_set_##name(tkd_server *srv, size_t n)                       \
    {                                                                          \
        if (n == 0)                                                            \
            return TK_EINVAL;                                                  \
        srv->lim.field = n;                                                    \
        return 0;                                                              \
    }
LIMIT_SETTER(max_clients, max_clients)
LIMIT_SETTER(max_line, max_line)
LIMIT_SETTER(max_pending, max_pending)
LIMIT_SETTER(max_batch, max_batch)
LIMIT_SETTER(max_output, max_output)
LIMIT_SETTER(max_input, max_input)
#undef LIMIT_SETTER

void tkd_server_set_timeouts(tkd_server *srv, uint64_t idle_ms, uint64_t line_ms)
{
    srv->lim.idle_timeout_ms = idle_ms;
    srv->lim.line_timeout_ms = line_ms;
}

void tkd_server_get_limits(const tkd_server *srv, tkd_server_limits *out)
{
    *out = srv->lim;
}

void tkd_server_get_stats(const tkd_server *srv, tkd_server_stats *out)
{
    *out = srv->st;
}

const char *tkd_server_path(const tkd_server *srv) { return srv->path; }
const char *tkd_server_readonly_path(const tkd_server *srv) { return srv->ro_path; }

int tkd_server_add_readonly(tkd_server *srv, const char *path, unsigned mode, char *err,
                            size_t errlen)
{
    if (srv->ro_fd >= 0)
        return fail(err, errlen, TK_EEXIST, "read-only socket: already listening on %s",
                    srv->ro_path);
    if (mode & ~0777u)
        return fail(err, errlen, TK_EINVAL, "read-only socket: mode %o is not 0..0777", mode);
    if (srv->path && !strcmp(srv->path, path))
        return fail(err, errlen, TK_EINVAL,
                    "read-only socket %s is the control socket's path", path);
    int fd;
    dev_t dev;
    ino_t ino;
    int rc = listen_at(path, mode, &fd, &dev, &ino, err, errlen);
    if (rc)
        return rc;
    srv->ro_ev = event_new(srv->base, fd, EV_READ | EV_PERSIST, on_accept_ro, srv);
    if (!srv->ro_ev || event_add(srv->ro_ev, NULL) != 0) {
        if (srv->ro_ev)
            event_free(srv->ro_ev);
        srv->ro_ev = NULL;
        close(fd);
        unlink(path);
        return fail(err, errlen, TK_ENOMEM, "read-only socket: out of memory");
    }
    srv->ro_fd = fd;
    srv->ro_path = tk_strdup(path);
    srv->ro_dev = dev;
    srv->ro_ino = ino;
    return 0;
}

uint64_t tkd_client_id(const tkd_client *c) { return c->id; }
uid_t tkd_client_uid(const tkd_client *c) { return c->uid; }
pid_t tkd_client_pid(const tkd_client *c) { return c->pid; }
unsigned tkd_client_topics(const tkd_client *c) { return c->topics; }
uint64_t tkd_client_dropped(const tkd_client *c) { return c->dropped; }
size_t tkd_client_unsent(const tkd_client *c) { return unsent(c); }
