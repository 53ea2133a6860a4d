/*
 * test_server.c - the control socket (src/daemon/server.c) end to end: a
 * real server on a real event_base, real Unix sockets in a temp directory,
 * and client sockets driven from the same thread.
 *
 * The loop is driven in steps, never by sleeping: pump() runs one
 * non-blocking pass of the event loop, then the frame boundary (complete the
 * calls deferred in earlier passes, drain, flush), as the daemon's frame
 * loop does.  Unix sockets deliver synchronously, so every exchange settles
 * within a bounded number of passes; waits are bounded by pass counts.
 *
 * The dispatcher below is the test's own fixture, standing in for the
 * daemon's method table: echo, defer (answered on the next pass), fail,
 * count, big, whoami, subscribe, silent (answers nothing), and -32601.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "tickd/error.h"
#include "tickd/log.h"

#include "../../src/daemon/rpc.h"
#include "../../src/daemon/server.h"
#include "../check_main.h"

#define MAX_PASSES 20000 /* loop passes before a wait gives up */

typedef struct fixture {
    struct event_base *base;
    tkd_server *srv;
    char dir[64];
    char path[128];
    tkd_call *deferred[256]; /* deferred in an earlier pass              */
    size_t ndeferred;
    tkd_call *fresh[256];    /* deferred in the current pass             */
    size_t nfresh;
    int counted;             /* executions of "count"                    */
    tkd_client *last_client; /* client of the last "subscribe"           */
    char log[16384];         /* captured log lines (tk_log's level)      */
} fixture;

static fixture F;

static void capture_log(void *ud, tk_log_level level, const char *msg)
{
    (void)ud;
    (void)level;
    size_t used = strlen(F.log);
    snprintf(F.log + used, sizeof F.log - used, "%s\n", msg);
}

static unsigned topics_from(json_t *arr)
{
    unsigned mask = 0;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        tkd_topic t;
        if (tkd_topic_parse(json_string_value(v), &t) == 0)
            mask |= TKD_TOPIC_BIT(t);
    }
    return mask;
}

static void dispatch(void *ud, tkd_call *call)
{
    fixture *f = ud;
    const char *m = tkd_call_method(call);
    json_t *p = tkd_call_params(call);
    if (strcmp(m, "echo") == 0) {
        tkd_call_reply(call, p ? json_deep_copy(p) : json_object());
    } else if (strcmp(m, "defer") == 0) {
        tkd_call_defer(call);
        f->fresh[f->nfresh++] = call;
    } else if (strcmp(m, "defer_now") == 0) {
        tkd_call_defer(call);
        tkd_call_reply(call, json_pack("{s:b}", "now", 1));
    } else if (strcmp(m, "fail") == 0) {
        tkd_call_error(call, TKD_RPC_INVALID_STATE, json_pack("{s:s}", "why", "test"),
                       "invalid state: %s", "fail was called");
    } else if (strcmp(m, "count") == 0) {
        f->counted++;
        tkd_call_reply(call, json_pack("{s:i}", "count", f->counted));
    } else if (strcmp(m, "big") == 0) {
        size_t n = (size_t)json_integer_value(json_object_get(p, "n"));
        char *s = malloc(n + 1);
        memset(s, 'x', n);
        s[n] = '\0';
        tkd_call_reply(call, json_pack("{s:s}", "s", s));
        free(s);
    } else if (strcmp(m, "whoami") == 0) {
        tkd_client *c = tkd_call_client(call);
        ck_assert(!tkd_call_is_notification(call));
        ck_assert_uint_eq(tkd_client_id(c), tkd_call_client_id(call));
        ck_assert_uint_eq(tkd_client_uid(c), tkd_call_uid(call));
        ck_assert_int_eq(tkd_client_pid(c), tkd_call_pid(call));
        tkd_call_reply(call, json_pack("{s:I,s:I,s:I,s:b,s:O}", "client",
                                       (json_int_t)tkd_call_client_id(call), "uid",
                                       (json_int_t)tkd_call_uid(call), "pid",
                                       (json_int_t)tkd_call_pid(call), "has_client",
                                       c != NULL, "id", tkd_call_id(call)));
    } else if (strcmp(m, "twice") == 0) {
        tkd_call_reply(call, json_pack("{s:i}", "n", 1));
        tkd_call_reply(call, json_pack("{s:i}", "n", 2)); /* misuse: logged */
    } else if (strcmp(m, "defer_twice") == 0) {
        tkd_call_defer(call);
        tkd_call_defer(call); /* misuse: logged, harmless */
        tkd_call_reply(call, json_pack("{s:i}", "n", 3));
    } else if (strcmp(m, "subscribe") == 0) {
        tkd_client *c = tkd_call_client(call);
        unsigned mask = tkd_server_subscribe(c, topics_from(json_object_get(p, "topics")));
        f->last_client = c;
        tkd_call_reply(call, json_pack("{s:i}", "mask", (int)mask));
    } else if (strcmp(m, "unsubscribe") == 0) {
        unsigned mask = tkd_server_unsubscribe(tkd_call_client(call), TKD_TOPIC_ALL);
        tkd_call_reply(call, json_pack("{s:i}", "mask", (int)mask));
    } else if (strcmp(m, "silent") == 0) {
        /* answers nothing: the server must answer -32603 for it */
    } else {
        tkd_call_error(call, TKD_RPC_METHOD_NOT_FOUND, NULL, "method not found: %s", m);
    }
}

/* Complete the calls deferred in earlier passes. */
static void complete_deferred(void)
{
    for (size_t i = 0; i < F.ndeferred; i++) {
        json_t *p = tkd_call_params(F.deferred[i]);
        json_t *r = p ? json_deep_copy(p) : json_object();
        json_object_set_new(r, "deferred", json_true());
        tkd_call_reply(F.deferred[i], r);
    }
    memcpy(F.deferred, F.fresh, F.nfresh * sizeof F.fresh[0]);
    F.ndeferred = F.nfresh;
    F.nfresh = 0;
}

/* One pass of the loop without the frame boundary (I/O only). */
static void pump_io(void) { event_base_loop(F.base, EVLOOP_NONBLOCK); }

/* One pass of the loop, then the frame boundary. */
static void pump(void)
{
    pump_io();
    complete_deferred();
    tkd_server_drain(F.srv, dispatch, &F);
    tkd_server_flush(F.srv);
}

static void pumps(int n)
{
    for (int i = 0; i < n; i++)
        pump();
}

static tkd_server *start_server(const char *path, unsigned mode, char *err, size_t len,
                                int *rc)
{
    tkd_server_config cfg;
    tkd_server_config_init(&cfg);
    cfg.path = path;
    cfg.mode = mode;
    tkd_server *srv = NULL;
    *rc = tkd_server_new(F.base, &cfg, &srv, err, len);
    return srv;
}

static void setup(void)
{
    memset(&F, 0, sizeof F);
    tk_log_set_handler(capture_log, NULL);
    strcpy(F.dir, "/tmp/tkd-server-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(F.dir));
    snprintf(F.path, sizeof F.path, "%s/tickd.sock", F.dir);
    F.base = event_base_new();
    ck_assert_ptr_nonnull(F.base);
    char err[256];
    int rc;
    F.srv = start_server(F.path, 0660, err, sizeof err, &rc);
    ck_assert_msg(rc == 0, "server: %s", err);
}

static void teardown(void)
{
    tkd_server_free(F.srv);
    F.srv = NULL;
    event_base_free(F.base);
    DIR *d = opendir(F.dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[512];
            snprintf(p, sizeof p, "%s/%s", F.dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(F.dir);
    tk_log_set_handler(NULL, NULL);
}

/* ---- a test client ---------------------------------------------- */

typedef struct conn {
    int fd;
    char *buf;  /* received, not yet taken */
    size_t len; /* bytes                   */
    size_t cap; /* bytes                   */
    size_t total; /* bytes received in all   */
    bool eof;   /* read returned 0 or an error */
} conn;

static conn *conn_open_at(const char *path)
{
    conn *c = calloc(1, sizeof *c);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(c->fd, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    int rc = connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
    for (int i = 0; rc != 0 && errno == EAGAIN && i < MAX_PASSES; i++) {
        pump(); /* backlog full: let the server accept */
        rc = connect(c->fd, (struct sockaddr *)&sa, sizeof sa);
    }
    ck_assert_msg(rc == 0, "connect: %s", strerror(errno));
    return c;
}

static conn *conn_open(void) { return conn_open_at(F.path); }

static void conn_close(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->buf);
    free(c);
}

static void conn_sendn(conn *c, const char *s, size_t n)
{
    size_t off = 0;
    for (int i = 0; off < n && i < MAX_PASSES; i++) {
        ssize_t w = send(c->fd, s + off, n - off, MSG_NOSIGNAL);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        ck_assert_msg(w < 0 && errno == EAGAIN, "send: %s", strerror(errno));
        pump();
    }
    ck_assert_uint_eq(off, n);
}

static void conn_send(conn *c, const char *s) { conn_sendn(c, s, strlen(s)); }

/* Read what the socket holds now. */
static void conn_fill(conn *c)
{
    for (;;) {
        if (c->cap - c->len < 65536) {
            c->cap = c->cap ? c->cap * 2 : 131072;
            c->buf = realloc(c->buf, c->cap);
        }
        ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n > 0) {
            c->len += (size_t)n;
            c->total += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            c->eof = true;
        return;
    }
}

/* Next received line, parsed; NULL at end of stream or after MAX_PASSES. */
static json_t *conn_recv(conn *c)
{
    for (int i = 0; i < MAX_PASSES; i++) {
        conn_fill(c);
        char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - c->buf);
            json_error_t e;
            json_t *v = json_loadb(c->buf, n, JSON_DECODE_ANY, &e);
            ck_assert_msg(v != NULL, "server sent invalid JSON: %s", e.text);
            memmove(c->buf, nl + 1, c->len - n - 1);
            c->len -= n + 1;
            return v;
        }
        if (c->eof)
            return NULL;
        pump();
    }
    return NULL;
}

/* True once the server has closed the connection (data before it kept). */
static bool conn_wait_eof(conn *c)
{
    for (int i = 0; i < MAX_PASSES && !c->eof; i++) {
        conn_fill(c);
        if (!c->eof)
            pump();
    }
    return c->eof;
}

/* True if no byte and no EOF arrive within `passes` passes. */
static bool conn_quiet(conn *c, int passes)
{
    for (int i = 0; i < passes; i++) {
        pump();
        conn_fill(c);
    }
    return c->len == 0 && !c->eof;
}

static int code_of(json_t *resp)
{
    ck_assert_ptr_nonnull(resp);
    ck_assert_str_eq(json_string_value(json_object_get(resp, "jsonrpc")), "2.0");
    json_t *err = json_object_get(resp, "error");
    ck_assert_msg(err != NULL, "not an error response");
    return (int)json_integer_value(json_object_get(err, "code"));
}

static const char *message_of(json_t *resp)
{
    return json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
}

static json_int_t id_of(json_t *resp)
{
    ck_assert_ptr_nonnull(resp);
    json_t *id = json_object_get(resp, "id");
    ck_assert_msg(json_is_integer(id), "id is not an integer");
    return json_integer_value(id);
}

static json_t *result_of(json_t *resp)
{
    ck_assert_ptr_nonnull(resp);
    ck_assert_str_eq(json_string_value(json_object_get(resp, "jsonrpc")), "2.0");
    json_t *r = json_object_get(resp, "result");
    ck_assert_msg(r != NULL, "not a result: %s", message_of(resp));
    return r;
}

/* A request line for `method` with id `id` and params text (or NULL). */
static const char *req(const char *method, int id, const char *params)
{
    static char buf[8][1024];
    static int slot;
    char *b = buf[slot++ % 8];
    if (params)
        snprintf(b, sizeof buf[0],
                 "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":%s,\"id\":%d}\n",
                 method, params, id);
    else
        snprintf(b, sizeof buf[0], "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"id\":%d}\n",
                 method, id);
    return b;
}

/* The connection still answers: an echo with `id` comes back. */
static void assert_alive(conn *c, int id)
{
    conn_send(c, req("echo", id, NULL));
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), id);
    json_decref(r);
}

static const char *note(const char *method)
{
    static char buf[4][256];
    static int slot;
    char *b = buf[slot++ % 4];
    snprintf(b, sizeof buf[0], "{\"jsonrpc\":\"2.0\",\"method\":\"%s\"}\n", method);
    return b;
}

static tkd_server_stats stats(void)
{
    tkd_server_stats st;
    tkd_server_get_stats(F.srv, &st);
    return st;
}

/* ---- tests ------------------------------------------------------ */

START_TEST(server_echo_ids)
{
    conn *c = conn_open();
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"a\":1},"
                 "\"id\":\"s1\"}\n"
                 "\n  \r\n"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"b\":2},"
                 "\"id\":7}\r\n"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":null}\n"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":2.5}\n");
    json_t *r = conn_recv(c);
    ck_assert_str_eq(json_string_value(json_object_get(r, "id")), "s1");
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "a")), 1);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 7);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "b")), 2);
    json_decref(r);
    r = conn_recv(c);
    ck_assert(json_is_null(json_object_get(r, "id")));
    ck_assert(json_is_object(result_of(r)));
    json_decref(r);
    r = conn_recv(c);
    ck_assert(json_real_value(json_object_get(r, "id")) == 2.5);
    json_decref(r);
    ck_assert(conn_quiet(c, 10)); /* blank lines got nothing */
    conn_close(c);
}
END_TEST

START_TEST(server_error_codes)
{
    conn *c = conn_open();
    conn_send(c, "this is not json\n");
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"id\":1}\n");
    conn_send(c, req("no.such.method", 2, NULL));
    conn_send(c, req("echo", 3, "[1,2]"));
    conn_send(c, req("fail", 4, "{}"));
    conn_send(c, req("silent", 5, NULL));
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":6,\"x\":0}\n");
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":\"s\",\"id\":7}\n");

    json_t *r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_PARSE_ERROR);
    ck_assert(json_is_null(json_object_get(r, "id")));
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_INVALID_REQUEST);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_METHOD_NOT_FOUND);
    ck_assert_int_eq(id_of(r), 2);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_INVALID_PARAMS);
    ck_assert_str_eq(message_of(r), "params must be an object");
    ck_assert_int_eq(id_of(r), 3);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_INVALID_STATE);
    ck_assert_str_eq(message_of(r), "invalid state: fail was called");
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(r, "error"), "data"), "why")),
                     "test");
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_INTERNAL_ERROR);
    ck_assert_int_eq(id_of(r), 5);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_INVALID_REQUEST);
    ck_assert_int_eq(id_of(r), 6);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_INVALID_REQUEST);
    ck_assert_int_eq(id_of(r), 7);
    json_decref(r);
    ck_assert_ptr_nonnull(strstr(F.log, "neither answered nor deferred"));
    /* the connection survives every one of them */
    assert_alive(c, 8);
    conn_close(c);
}
END_TEST

START_TEST(server_notifications)
{
    conn *c = conn_open();
    conn_send(c, note("count"));
    conn_send(c, note("count"));
    conn_send(c, note("no.such.method"));
    conn_send(c, note("fail"));
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"count\",\"params\":[1]}\n");
    conn_send(c, note("count"));
    conn_send(c, req("count", 1, NULL));
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 1); /* the first line is the request's */
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "count")), 4);
    json_decref(r);
    ck_assert(conn_quiet(c, 10));
    ck_assert_int_eq(F.counted, 4);
    conn_close(c);
}
END_TEST

START_TEST(server_batches)
{
    conn *c = conn_open();
    /* [] is one error object */
    conn_send(c, "[]\n");
    json_t *r = conn_recv(c);
    ck_assert(json_is_object(r));
    ck_assert_int_eq(code_of(r), TKD_RPC_INVALID_REQUEST);
    json_decref(r);

    /* [1,2] is an array of two errors */
    conn_send(c, "[1,2]\n");
    r = conn_recv(c);
    ck_assert(json_is_array(r));
    ck_assert_uint_eq(json_array_size(r), 2);
    ck_assert_int_eq(code_of(json_array_get(r, 0)), TKD_RPC_INVALID_REQUEST);
    ck_assert_int_eq(code_of(json_array_get(r, 1)), TKD_RPC_INVALID_REQUEST);
    ck_assert(json_is_null(json_object_get(json_array_get(r, 1), "id")));
    json_decref(r);

    /* mixed: results and errors in request order, the notification silent */
    conn_send(c, "[{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"k\":1},\"id\":1},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"count\"},"
                 "{\"jsonrpc\":\"2.0\"},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":\"u\"},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"count\",\"id\":3}]\n");
    r = conn_recv(c);
    ck_assert(json_is_array(r));
    ck_assert_uint_eq(json_array_size(r), 4);
    ck_assert_int_eq(id_of(json_array_get(r, 0)), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(json_array_get(r, 0)), "k")),
                     1);
    ck_assert_int_eq(code_of(json_array_get(r, 1)), TKD_RPC_INVALID_REQUEST);
    ck_assert(json_is_null(json_object_get(json_array_get(r, 1), "id")));
    ck_assert_int_eq(code_of(json_array_get(r, 2)), TKD_RPC_METHOD_NOT_FOUND);
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(r, 2), "id")), "u");
    ck_assert_int_eq(id_of(json_array_get(r, 3)), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(json_array_get(r, 3)),
                                                        "count")),
                     2);
    json_decref(r);

    /* only notifications: executed, no response at all */
    conn_send(c, "[{\"jsonrpc\":\"2.0\",\"method\":\"count\"},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"count\"}]\n");
    assert_alive(c, 9);
    ck_assert_int_eq(F.counted, 4);

    /* over max_batch: one -32003 object, nothing executed */
    ck_assert_int_eq(tkd_server_set_max_batch(F.srv, 2), 0);
    conn_send(c, "[{\"jsonrpc\":\"2.0\",\"method\":\"count\",\"id\":1},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"count\",\"id\":2},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"count\",\"id\":3}]\n");
    r = conn_recv(c);
    ck_assert(json_is_object(r));
    ck_assert_int_eq(code_of(r), TKD_RPC_LIMIT);
    ck_assert(json_is_null(json_object_get(r, "id")));
    json_decref(r);
    ck_assert_int_eq(F.counted, 4);
    ck_assert(conn_quiet(c, 10));
    conn_close(c);
}
END_TEST

START_TEST(server_batch_deferred)
{
    conn *c = conn_open();
    conn_send(c, "[{\"jsonrpc\":\"2.0\",\"method\":\"defer\",\"params\":{\"m\":1},\"id\":1},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":2}]\n");
    conn_send(c, req("echo", 3, NULL));
    /* the later request is not held back by the batch's deferred member */
    json_t *r = conn_recv(c);
    ck_assert(json_is_object(r));
    ck_assert_int_eq(id_of(r), 3);
    json_decref(r);
    r = conn_recv(c);
    ck_assert(json_is_array(r));
    ck_assert_uint_eq(json_array_size(r), 2);
    ck_assert_int_eq(id_of(json_array_get(r, 0)), 1);
    ck_assert(json_is_true(json_object_get(result_of(json_array_get(r, 0)), "deferred")));
    ck_assert_int_eq(id_of(json_array_get(r, 1)), 2);
    json_decref(r);
    conn_close(c);
}
END_TEST

START_TEST(server_deferred_order)
{
    conn *c = conn_open();
    /* one write: defer, echo, echo -> the echoes first, then the deferred */
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s%s", req("defer", 1, "{\"x\":1}"), req("echo", 2, NULL),
             req("echo", 3, NULL));
    conn_send(c, buf);
    json_int_t want[] = {2, 3, 1};
    for (int i = 0; i < 3; i++) {
        json_t *r = conn_recv(c);
        ck_assert_int_eq(id_of(r), want[i]);
        json_decref(r);
    }
    /* a call deferred and completed within the same execution */
    snprintf(buf, sizeof buf, "%s%s", req("defer_now", 4, NULL), req("echo", 5, NULL));
    conn_send(c, buf);
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 4);
    ck_assert(json_is_true(json_object_get(result_of(r), "now")));
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 5);
    json_decref(r);
    conn_close(c);
}
END_TEST

START_TEST(server_order_with_read_errors)
{
    conn *c = conn_open();
    /* errors found while reading wait behind the queued request before them */
    char buf[1024];
    snprintf(buf, sizeof buf, "%sgarbage\n%s[]\n", req("echo", 1, NULL),
             req("echo", 2, NULL));
    conn_send(c, buf);
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_PARSE_ERROR);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 2);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_INVALID_REQUEST);
    json_decref(r);
    conn_close(c);
}
END_TEST

START_TEST(server_fifo_across_clients)
{
    conn *a = conn_open();
    conn *b = conn_open();
    /* arrival order A, B, A; executed in that order at one drain */
    conn_send(a, req("count", 1, NULL));
    pump_io();
    conn_send(b, req("count", 1, NULL));
    pump_io();
    conn_send(a, req("count", 2, NULL));
    pump_io();
    ck_assert_int_eq(F.counted, 0); /* nothing runs from a callback */
    ck_assert_uint_eq(tkd_server_drain(F.srv, dispatch, &F), 3);
    tkd_server_flush(F.srv);
    json_t *r = conn_recv(a);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "count")), 1);
    json_decref(r);
    r = conn_recv(b);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "count")), 2);
    json_decref(r);
    r = conn_recv(a);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "count")), 3);
    json_decref(r);
    conn_close(a);
    conn_close(b);
}
END_TEST

START_TEST(server_half_close)
{
    conn *c = conn_open();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s%s", req("defer", 1, NULL), req("echo", 2, NULL),
             req("count", 3, NULL));
    conn_send(c, buf);
    ck_assert_int_eq(shutdown(c->fd, SHUT_WR), 0);
    int seen = 0;
    json_t *r;
    while ((r = conn_recv(c))) {
        seen |= 1 << id_of(r);
        json_decref(r);
    }
    ck_assert_int_eq(seen, (1 << 1) | (1 << 2) | (1 << 3));
    ck_assert(c->eof);
    pump();
    ck_assert_uint_eq(stats().clients, 0);
    conn_close(c);
}
END_TEST

START_TEST(server_half_close_unterminated)
{
    conn *c = conn_open();
    /* a last line without '\n' before end of input still counts */
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":4}");
    ck_assert_int_eq(shutdown(c->fd, SHUT_WR), 0);
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 4);
    json_decref(r);
    ck_assert(conn_wait_eof(c));
    conn_close(c);
}
END_TEST

START_TEST(server_gone_client_still_executes)
{
    conn *c = conn_open();
    char buf[1024];
    snprintf(buf, sizeof buf, "%s%s%s", req("count", 1, NULL), req("defer", 2, NULL),
             note("count"));
    conn_send(c, buf);
    pump_io(); /* read and queued... */
    close(c->fd); /* ...then the client is gone before the frame boundary */
    c->fd = -1;
    pumps(5); /* executes, completes the deferred call into nothing */
    ck_assert_int_eq(F.counted, 2);
    ck_assert_uint_eq(stats().clients, 0);
    ck_assert_uint_eq(F.ndeferred, 0);
    conn_close(c);
}
END_TEST

START_TEST(server_deferred_outlives_client)
{
    conn *c = conn_open();
    conn_send(c, req("defer", 1, NULL));
    pump(); /* executed and deferred; completes on the next pass */
    ck_assert_uint_eq(F.nfresh, 1);
    close(c->fd);
    c->fd = -1;
    pump_io(); /* the server sees the close and reaps the client */
    pump_io();
    ck_assert_uint_eq(stats().clients, 0);
    pumps(2); /* completing the call of a gone client is valid */
    ck_assert_uint_eq(F.ndeferred + F.nfresh, 0);
    conn_close(c);
}
END_TEST

START_TEST(server_oversized_line)
{
    ck_assert_int_eq(tkd_server_set_max_line(F.srv, 1024), 0);
    conn *a = conn_open();
    conn *b = conn_open();
    char big[3000];
    memset(big, 'a', sizeof big);
    conn_send(a, req("echo", 1, NULL));
    conn_sendn(a, big, sizeof big);
    conn_send(a, "\n");
    json_t *r = conn_recv(a);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    r = conn_recv(a);
    ck_assert_int_eq(code_of(r), TKD_RPC_LIMIT);
    ck_assert_str_eq(message_of(r), "line exceeds control.max_line (1024 bytes)");
    ck_assert(json_is_null(json_object_get(r, "id")));
    json_decref(r);
    /* what follows is read and dropped (a lingering close: the client's
     * write never meets a reset); the end of its input closes at once */
    conn_sendn(a, big, sizeof big);
    conn_send(a, req("echo", 9, NULL));
    ck_assert(conn_quiet(a, 3));
    shutdown(a->fd, SHUT_WR);
    ck_assert(conn_wait_eof(a));
    ck_assert_ptr_nonnull(strstr(F.log, "line exceeds control.max_line"));
    /* the daemon keeps serving others */
    assert_alive(b, 2);
    /* exactly max_line bytes is fine, \r\n included */
    char line[1100];
    snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"s\":\"");
    size_t off = strlen(line);
    const char *tail = "\"},\"id\":3}";
    memset(line + off, 'y', 1024 - off - strlen(tail));
    strcpy(line + 1024 - strlen(tail), tail);
    ck_assert_uint_eq(strlen(line), 1024);
    conn_sendn(b, line, 1024);
    conn_send(b, "\r\n");
    r = conn_recv(b);
    ck_assert_int_eq(id_of(r), 3);
    json_decref(r);
    conn_close(a);
    conn_close(b);
}
END_TEST

START_TEST(server_oversized_partial_line)
{
    /* no newline ever comes: refused once max_line is passed, without
     * buffering more than max_line plus one read */
    ck_assert_int_eq(tkd_server_set_max_line(F.srv, 4096), 0);
    conn *a = conn_open();
    char big[20000];
    memset(big, '[', sizeof big);
    ssize_t w = send(a->fd, big, sizeof big, MSG_NOSIGNAL);
    ck_assert_int_gt(w, 4097);
    json_t *r = conn_recv(a);
    ck_assert_int_eq(code_of(r), TKD_RPC_LIMIT);
    json_decref(r);
    shutdown(a->fd, SHUT_WR);
    ck_assert(conn_wait_eof(a));
    ck_assert_uint_ge(stats().bytes_in, 4097);
    conn_close(a);
}
END_TEST

START_TEST(server_binary_junk)
{
    conn *c = conn_open();
    char junk[512];
    for (int i = 0; i < (int)sizeof junk; i++) {
        junk[i] = (char)((i * 37 + 11) & 0xff);
        if (junk[i] == '\n')
            junk[i] = 0;
    }
    conn_sendn(c, junk, sizeof junk);
    conn_send(c, "\n");
    json_t *r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_PARSE_ERROR);
    json_decref(r);
    /* invalid UTF-8 inside a string */
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"s\":\"\xc3\x28\"},"
                 "\"id\":1}\n");
    r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_PARSE_ERROR);
    json_decref(r);
    assert_alive(c, 2);
    conn_close(c);
}
END_TEST

START_TEST(server_deep_nesting)
{
    conn *c = conn_open();
    size_t n = 100000;
    char *deep = malloc(n + 1);
    memset(deep, '[', n);
    deep[n] = '\n';
    conn_sendn(c, deep, n + 1);
    free(deep);
    json_t *r = conn_recv(c);
    ck_assert_int_eq(code_of(r), TKD_RPC_PARSE_ERROR);
    ck_assert_ptr_nonnull(strstr(message_of(r), "nesting"));
    json_decref(r);
    assert_alive(c, 1);
    conn_close(c);
}
END_TEST

START_TEST(server_many_clients)
{
    enum { N = 200 };
    conn *c[N];
    for (int i = 0; i < N; i++)
        c[i] = conn_open();
    for (int i = 0; i < N; i++)
        conn_send(c[i], req("echo", i, NULL));
    for (int i = 0; i < N; i++) {
        json_t *r = conn_recv(c[i]);
        ck_assert_int_eq(id_of(r), i);
        json_decref(r);
    }
    ck_assert_uint_eq(stats().clients, N);
    ck_assert_uint_eq(stats().requests, N);
    for (int i = 0; i < N; i++)
        conn_close(c[i]);
    pumps(3);
    ck_assert_uint_eq(stats().clients, 0);
}
END_TEST

START_TEST(server_max_clients)
{
    ck_assert_int_eq(tkd_server_set_max_clients(F.srv, 3), 0);
    conn *c[3];
    for (int i = 0; i < 3; i++)
        c[i] = conn_open();
    pumps(2);
    ck_assert_uint_eq(stats().clients, 3);
    conn *extra = conn_open();
    json_t *r = conn_recv(extra);
    ck_assert_int_eq(code_of(r), TKD_RPC_LIMIT);
    ck_assert_str_eq(message_of(r), "too many clients (max 3)");
    ck_assert(json_is_null(json_object_get(r, "id")));
    json_decref(r);
    ck_assert(conn_wait_eof(extra));
    conn_close(extra);
    ck_assert_uint_eq(stats().rejected, 1);
    ck_assert_ptr_nonnull(strstr(F.log, "refusing more"));
    /* those connected are unaffected; a freed slot is usable again */
    conn_send(c[0], req("echo", 1, NULL));
    r = conn_recv(c[0]);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    conn_close(c[1]);
    pumps(2);
    conn *again = conn_open();
    assert_alive(again, 2);
    conn_close(again);
    conn_close(c[0]);
    conn_close(c[2]);
}
END_TEST

START_TEST(server_max_pending)
{
    ck_assert_int_eq(tkd_server_set_max_pending(F.srv, 2), 0);
    conn *c = conn_open();
    char buf[2048];
    snprintf(buf, sizeof buf, "%s%s%s%s%s", req("count", 1, NULL), req("count", 2, NULL),
             req("count", 3, NULL), note("count"), req("count", 4, NULL));
    conn_send(c, buf);
    for (int id = 1; id <= 4; id++) {
        json_t *r = conn_recv(c);
        ck_assert_int_eq(id_of(r), id); /* request order kept */
        if (id <= 2) {
            ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "count")),
                             id);
        } else {
            ck_assert_int_eq(code_of(r), TKD_RPC_LIMIT);
            ck_assert_ptr_nonnull(strstr(message_of(r), "too many pending requests"));
        }
        json_decref(r);
    }
    ck_assert_int_eq(F.counted, 2); /* refused ones were not executed */
    /* once drained, new requests are accepted again */
    conn_send(c, req("count", 5, NULL));
    json_t *r = conn_recv(c);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "count")), 3);
    json_decref(r);
    conn_close(c);
}
END_TEST


/* A request line of about `bytes` bytes: method with a padded params string. */
static const char *padded(const char *method, int id, size_t bytes)
{
    static char buf[4][8192];
    static int slot;
    char *b = buf[slot++ % 4];
    char pad[8000];
    size_t n = bytes < sizeof pad ? bytes : sizeof pad - 1;
    memset(pad, 'p', n);
    pad[n] = '\0';
    snprintf(b, sizeof buf[0],
             "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":{\"pad\":\"%s\"},\"id\":%d}\n",
             method, pad, id);
    return b;
}

START_TEST(server_max_input)
{
    ck_assert_int_eq(tkd_server_set_max_input(F.srv, 1000), 0);
    conn *c = conn_open();
    char buf[8192];
    snprintf(buf, sizeof buf, "%s%s%s", padded("count", 1, 600), padded("count", 2, 600),
             padded("count", 3, 100));
    conn_send(c, buf);
    pump_io(); /* all three framed and parsed before any runs */
    for (int id = 1; id <= 3; id++) {
        json_t *r = conn_recv(c);
        ck_assert_int_eq(id_of(r), id);
        if (id == 1) {
            ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "count")), 1);
        } else if (id == 2) {
            ck_assert_int_eq(code_of(r), TKD_RPC_LIMIT);
            ck_assert_ptr_nonnull(strstr(message_of(r), "control.max_input"));
        } else {
            /* 600 + 100 fit again once the first ran, but it was parsed with it */
            ck_assert(json_object_get(r, "result") || code_of(r) == TKD_RPC_LIMIT);
        }
        json_decref(r);
    }
    tkd_server_stats st;
    tkd_server_get_stats(F.srv, &st);
    ck_assert_uint_ge(st.input_refused, 1);
    /* once run, the bytes are given back */
    conn_send(c, padded("count", 4, 900));
    json_t *r = conn_recv(c);
    ck_assert_ptr_nonnull(json_object_get(r, "result"));
    json_decref(r);
    conn_close(c);
}
END_TEST

START_TEST(server_deferred_calls_keep_little)
{
    ck_assert_int_eq(tkd_server_set_max_input(F.srv, 1000), 0);
    conn *c = conn_open();
    conn_send(c, padded("defer", 1, 800));
    pump(); /* deferred: keeps only its id and method */
    ck_assert_uint_eq(F.nfresh, 1);
    ck_assert_ptr_null(tkd_call_params(F.fresh[0]));
    ck_assert_str_eq(tkd_call_method(F.fresh[0]), "defer");
    /* its 800 bytes no longer count: another big request fits */
    conn_send(c, padded("count", 2, 800));
    pump_io();
    tkd_server_drain(F.srv, dispatch, &F);
    tkd_server_flush(F.srv);
    json_t *r = conn_recv(c); /* answers 2, then the deferred 1 */
    ck_assert_int_eq(id_of(r), 2);
    ck_assert_ptr_nonnull(json_object_get(r, "result"));
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 1);
    ck_assert(json_is_true(json_object_get(result_of(r), "deferred")));
    json_decref(r);
    conn_close(c);
}
END_TEST

START_TEST(server_pass_ends_at_deadline)
{
    conn *c = conn_open();
    char buf[4096] = "";
    for (int i = 1; i <= 10; i++)
        strcat(buf, req("count", i, NULL));
    pump_io(); /* accepted (and maybe read) without a deadline */
    conn_send(c, buf);
    /* A deadline already past: one line is framed, the pass ends. */
    tkd_server_set_deadline(F.srv, 1);
    pump_io();
    tkd_server_drain(F.srv, dispatch, &F);
    ck_assert_int_eq(F.counted, 1);
    tkd_server_set_deadline(F.srv, 0);
    for (int i = 1; i <= 10; i++) {
        json_t *r = conn_recv(c);
        ck_assert_int_eq(id_of(r), i);
        json_decref(r);
    }
    ck_assert_int_eq(F.counted, 10);
    ck_assert_uint_gt(tkd_server_take_busy_ns(F.srv), 0);
    ck_assert_uint_eq(tkd_server_take_busy_ns(F.srv), 0);
    conn_close(c);
}
END_TEST

START_TEST(server_drain_until)
{
    conn *c = conn_open();
    char buf[4096] = "";
    for (int i = 1; i <= 5; i++)
        strcat(buf, req("count", i, NULL));
    conn_send(c, buf);
    pump_io();
    /* past deadline: exactly one call runs (never none) */
    ck_assert_uint_eq(tkd_server_drain_until(F.srv, dispatch, &F, 1), 1);
    ck_assert_int_eq(F.counted, 1);
    ck_assert_uint_eq(tkd_server_drain_until(F.srv, dispatch, &F, UINT64_MAX), 4);
    ck_assert_int_eq(F.counted, 5);
    conn_close(c);
}
END_TEST

/* Pump with short sleeps (the timeout sweep runs once a second) until the
 * connection is closed; false after `seconds`. */
static bool wait_eof_slow(conn *c, double seconds)
{
    for (int i = 0; i < (int)(seconds * 100) && !c->eof; i++) {
        pump();
        conn_fill(c);
        if (!c->eof)
            usleep(10000);
    }
    return c->eof;
}

START_TEST(server_line_timeout)
{
    tkd_server_set_timeouts(F.srv, 0, 100);
    conn *c = conn_open();
    conn_send(c, "{\"jsonrpc\":\"2.0\",\"method\":\"count\"");
    ck_assert(wait_eof_slow(c, 5));
    json_t *r = conn_recv(c);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(code_of(r), TKD_RPC_LIMIT);
    ck_assert_ptr_nonnull(strstr(message_of(r), "incomplete"));
    json_decref(r);
    ck_assert_int_eq(F.counted, 0);
    tkd_server_stats st;
    tkd_server_get_stats(F.srv, &st);
    ck_assert_uint_eq(st.timeouts, 1);
    conn_close(c);
}
END_TEST

START_TEST(server_idle_timeout)
{
    tkd_server_set_timeouts(F.srv, 100, 0);
    conn *idle = conn_open();
    conn *sub = conn_open();
    conn_send(sub, req("subscribe", 1, "{\"topics\":[\"stats\"]}"));
    json_t *r = conn_recv(sub);
    json_decref(r);
    ck_assert(wait_eof_slow(idle, 5));
    /* the subscriber stays: it is waiting for events, not idle */
    ck_assert(!sub->eof);
    conn_send(sub, req("count", 2, NULL));
    r = conn_recv(sub);
    ck_assert_ptr_nonnull(json_object_get(r, "result"));
    json_decref(r);
    conn_close(idle);
    conn_close(sub);
}
END_TEST

START_TEST(server_slow_subscriber)
{
    size_t max_output = 64 * 1024;
    ck_assert_int_eq(tkd_server_set_max_output(F.srv, max_output), 0);
    conn *sub = conn_open();
    conn *other = conn_open();
    conn_send(sub, req("subscribe", 1, "{\"topics\":[\"frame\",\"log\"]}"));
    json_t *r = conn_recv(sub);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "mask")),
                     TKD_TOPIC_BIT(TKD_TOPIC_FRAME) | TKD_TOPIC_BIT(TKD_TOPIC_LOG));
    json_decref(r);
    tkd_client *cl = F.last_client;
    ck_assert_ptr_nonnull(cl);
    ck_assert_uint_eq(tkd_client_topics(cl), TKD_TOPIC_BIT(TKD_TOPIC_FRAME) |
                                                 TKD_TOPIC_BIT(TKD_TOPIC_LOG));

    /* the subscriber never reads; the frame loop publishes and flushes */
    char pad[201];
    memset(pad, 'p', 200);
    pad[200] = '\0';
    enum { EVENTS = 5000 };
    size_t peak = 0;
    for (int i = 0; i < EVENTS; i++) {
        int sent = tkd_server_publish(F.srv, TKD_TOPIC_FRAME,
                                      json_pack("{s:i,s:s}", "frame", i, "pad", pad));
        ck_assert_int_le(sent, 1);
        if (tkd_client_unsent(cl) > peak)
            peak = tkd_client_unsent(cl);
        pump();
    }
    ck_assert_uint_gt(tkd_client_dropped(cl), 0);
    ck_assert_uint_eq(stats().events_dropped, tkd_client_dropped(cl));
    /* bounded: a quarter of the cap plus one event */
    ck_assert_uint_le(peak, max_output / 4 + 512);
    /* nobody else is stalled */
    assert_alive(other, 7);
    /* no subscriber of "stats": nothing serialized or sent */
    ck_assert_int_eq(tkd_server_publish(F.srv, TKD_TOPIC_STATS, json_object()), 0);
    ck_assert_int_eq(tkd_server_publish(F.srv, (tkd_topic)99, json_object()), TK_EINVAL);

    /* every event was either delivered, in order, or counted as dropped */
    uint64_t dropped = tkd_client_dropped(cl);
    int got = 0, last = -1;
    while (got + (int)dropped < EVENTS && (r = conn_recv(sub))) {
        ck_assert_str_eq(json_string_value(json_object_get(r, "method")), "event.frame");
        ck_assert_ptr_null(json_object_get(r, "id"));
        int frame = (int)json_integer_value(json_object_get(json_object_get(r, "params"),
                                                            "frame"));
        ck_assert_int_gt(frame, last);
        last = frame;
        got++;
        json_decref(r);
    }
    ck_assert_int_eq(got + (int)dropped, EVENTS);
    ck_assert_uint_eq(stats().events_sent, (uint64_t)got);

    /* unsubscribed: no more events */
    conn_send(sub, req("unsubscribe", 2, NULL));
    r = conn_recv(sub);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "mask")), 0);
    json_decref(r);
    ck_assert_int_eq(tkd_server_publish(F.srv, TKD_TOPIC_FRAME, json_object()), 0);
    conn_close(sub);
    conn_close(other);
}
END_TEST

START_TEST(server_max_output_disconnect)
{
    size_t max_output = 64 * 1024;
    ck_assert_int_eq(tkd_server_set_max_output(F.srv, max_output), 0);
    conn *c = conn_open();
    conn *other = conn_open();
    enum { REQS = 40, SIZE = 60000 };
    char params[64];
    snprintf(params, sizeof params, "{\"n\":%d}", SIZE);
    for (int i = 0; i < REQS; i++)
        conn_send(c, req("big", i, params));
    pumps(5); /* never reading: responses pile up until the cap */
    ck_assert_uint_eq(stats().output_overflows, 1);
    ck_assert_ptr_nonnull(strstr(F.log, "exceed control.max_output"));
    ck_assert_ptr_nonnull(strstr(F.log, "disconnected"));
    ck_assert(conn_wait_eof(c));
    ck_assert_uint_lt(c->total, (size_t)REQS * SIZE);
    /* the others are served */
    conn_send(other, req("echo", 1, NULL));
    json_t *r = conn_recv(other);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    ck_assert_uint_eq(stats().clients, 1);
    conn_close(c);
    conn_close(other);
}
END_TEST

START_TEST(server_large_response_fits)
{
    /* a response bigger than the socket buffer but within max_output is
     * delivered whole, across many writes */
    conn *c = conn_open();
    conn_send(c, req("big", 1, "{\"n\":3000000}"));
    json_t *r = conn_recv(c);
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(result_of(r), "s"))),
                      3000000);
    json_decref(r);
    ck_assert_uint_eq(stats().output_overflows, 0);
    conn_close(c);
}
END_TEST

/* Bind a socket at `path` and close it: a stale socket file. */
static void make_stale_socket(const char *path)
{
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    ck_assert_int_eq(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    close(s);
}

START_TEST(server_stale_socket_replaced)
{
    char path[160];
    snprintf(path, sizeof path, "%s/stale.sock", F.dir);
    make_stale_socket(path);
    char err[256];
    int rc;
    tkd_server *srv = start_server(path, 0660, err, sizeof err, &rc);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_ptr_nonnull(strstr(F.log, "removed stale socket"));
    ck_assert_str_eq(tkd_server_path(srv), path);
    /* it really serves there */
    tkd_server *main_srv = F.srv;
    F.srv = srv;
    conn *c = conn_open_at(path);
    conn_send(c, req("echo", 1, NULL));
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    conn_close(c);
    F.srv = main_srv;
    tkd_server_free(srv);
}
END_TEST

START_TEST(server_live_socket_not_stolen)
{
    char err[256];
    int rc;
    tkd_server *second = start_server(F.path, 0660, err, sizeof err, &rc);
    ck_assert_ptr_null(second);
    ck_assert_int_eq(rc, TK_EEXIST);
    char want[256];
    snprintf(want, sizeof want, "another tickd is listening on %s", F.path);
    ck_assert_str_eq(err, want);
    /* the first one still owns and serves its socket */
    conn *c = conn_open();
    conn_send(c, req("echo", 1, NULL));
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    conn_close(c);
}
END_TEST

START_TEST(server_not_a_socket)
{
    char path[160];
    snprintf(path, sizeof path, "%s/file", F.dir);
    FILE *fp = fopen(path, "w");
    fputs("data", fp);
    fclose(fp);
    char err[256];
    int rc;
    tkd_server *srv = start_server(path, 0660, err, sizeof err, &rc);
    ck_assert_ptr_null(srv);
    ck_assert_int_eq(rc, TK_EEXIST);
    ck_assert_ptr_nonnull(strstr(err, "is not a socket"));
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq((int)st.st_size, 4);

    /* a path too long for sun_path is refused before touching anything */
    char longp[300];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    srv = start_server(longp, 0660, err, sizeof err, &rc);
    ck_assert_int_eq(rc, TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "too long"));
}
END_TEST

START_TEST(server_socket_mode)
{
    struct stat st;
    ck_assert_int_eq(lstat(F.path, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0660);
    /* exact even under a permissive umask, and the process umask is kept */
    mode_t old = umask(0);
    char path[160];
    snprintf(path, sizeof path, "%s/private.sock", F.dir);
    char err[256];
    int rc;
    tkd_server *srv = start_server(path, 0600, err, sizeof err, &rc);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(umask(old), 0);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    tkd_server_free(srv);
    /* a mode outside 0777 is a config error */
    srv = start_server(path, 01777, err, sizeof err, &rc);
    ck_assert_int_eq(rc, TK_EINVAL);
}
END_TEST

START_TEST(server_socket_removed_on_free)
{
    struct stat st;
    ck_assert_int_eq(lstat(F.path, &st), 0);
    conn *c = conn_open();
    pumps(2);
    tkd_server_free(F.srv);
    F.srv = NULL;
    ck_assert_int_eq(lstat(F.path, &st), -1);
    ck_assert_int_eq(errno, ENOENT);
    conn_fill(c); /* no server left to pump: the close is already there */
    ck_assert(c->eof);
    conn_close(c);

    /* a file put in its place since is not ours: left alone */
    char err[256];
    int rc;
    F.srv = start_server(F.path, 0660, err, sizeof err, &rc);
    ck_assert_int_eq(rc, 0);
    unlink(F.path);
    FILE *fp = fopen(F.path, "w");
    fclose(fp);
    tkd_server_free(F.srv);
    F.srv = NULL;
    ck_assert_int_eq(lstat(F.path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
}
END_TEST

START_TEST(server_listen_fd)
{
    char path[160];
    snprintf(path, sizeof path, "%s/activated.sock", F.dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(fd, 16), 0);
    tkd_server_config cfg;
    tkd_server_config_init(&cfg);
    cfg.listen_fd = fd;
    tkd_server *srv = NULL;
    char err[256];
    ck_assert_int_eq(tkd_server_new(F.base, &cfg, &srv, err, sizeof err), 0);
    ck_assert_ptr_null(tkd_server_path(srv));
    tkd_server *main_srv = F.srv;
    F.srv = srv;
    conn *c = conn_open_at(path);
    conn_send(c, req("whoami", 1, NULL));
    json_t *r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 1);
    json_decref(r);
    conn_close(c);
    F.srv = main_srv;
    tkd_server_free(srv);
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0); /* systemd's file: not unlinked */

    /* a socket that is not listening is refused */
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    cfg.listen_fd = s;
    ck_assert_int_eq(tkd_server_new(F.base, &cfg, &srv, err, sizeof err), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not a listening socket"));
    close(s);
}
END_TEST

START_TEST(server_shutting_down)
{
    conn *c = conn_open();
    conn_send(c, req("defer", 1, NULL));
    pump(); /* deferred before the shutdown */
    conn_send(c, req("count", 2, NULL));
    pump_io(); /* queued before the shutdown */
    tkd_server_shutting_down(F.srv);
    conn_send(c, req("count", 3, NULL));
    conn_send(c, "[{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"id\":4}]\n");
    conn_send(c, note("count"));
    int seen = 0;
    for (int i = 0; i < 4; i++) {
        json_t *r = conn_recv(c);
        if (json_is_array(r)) {
            ck_assert_int_eq(code_of(json_array_get(r, 0)), TKD_RPC_SHUTTING_DOWN);
            seen |= 1 << 4;
        } else if (id_of(r) == 3) {
            ck_assert_int_eq(code_of(r), TKD_RPC_SHUTTING_DOWN);
            ck_assert_str_eq(message_of(r), "shutting down");
            seen |= 1 << 3;
        } else {
            result_of(r); /* queued and deferred calls still complete */
            seen |= 1 << id_of(r);
        }
        json_decref(r);
    }
    ck_assert_int_eq(seen, 0x1e);
    ck_assert_int_eq(F.counted, 1);
    tkd_server_close_all(F.srv, 1000);
    ck_assert(conn_wait_eof(c));
    struct stat st;
    ck_assert_int_eq(lstat(F.path, &st), -1);
    conn_close(c);
}
END_TEST

START_TEST(server_close_all_flushes)
{
    conn *c = conn_open();
    conn_send(c, req("big", 1, "{\"n\":100000}"));
    pump_io();
    tkd_server_drain(F.srv, dispatch, &F); /* answered, not yet flushed */
    tkd_server_close_all(F.srv, 1000);
    /* the client gets what could be written, then end of stream */
    json_t *r = conn_recv(c);
    if (r) {
        ck_assert_int_eq(id_of(r), 1);
        json_decref(r);
    }
    ck_assert(conn_wait_eof(c));
    ck_assert_uint_eq(stats().clients, 0);
    conn_close(c);
}
END_TEST

START_TEST(server_identity_and_stats)
{
    conn *c = conn_open();
    conn_send(c, req("whoami", 1, NULL));
    json_t *r = conn_recv(c);
    json_t *res = result_of(r);
    ck_assert_int_eq(json_integer_value(json_object_get(res, "uid")), (json_int_t)getuid());
    ck_assert_int_eq(json_integer_value(json_object_get(res, "pid")), (json_int_t)getpid());
    ck_assert_int_ge(json_integer_value(json_object_get(res, "client")), 1);
    ck_assert(json_is_true(json_object_get(res, "has_client")));
    ck_assert_int_eq(json_integer_value(json_object_get(res, "id")), 1);
    json_decref(r);
    conn_send(c, "junk\n");
    r = conn_recv(c);
    json_decref(r);
    conn_send(c, req("nope", 2, NULL));
    r = conn_recv(c);
    json_decref(r);
    tkd_server_stats st = stats();
    ck_assert_uint_eq(st.clients, 1);
    ck_assert_uint_eq(st.accepted, 1);
    ck_assert_uint_eq(st.requests, 3);
    ck_assert_uint_eq(st.errors, 2);
    ck_assert_uint_gt(st.bytes_in, 0);
    ck_assert_uint_gt(st.bytes_out, 0);
    conn_close(c);
}
END_TEST

START_TEST(server_topics_and_limits)
{
    static const char *const names[] = {"frame", "stats",        "overrun", "slow_tick",
                                        "log",   "slow_request", "agones"};
    ck_assert_int_eq(sizeof names / sizeof names[0], TKD_TOPIC_COUNT);
    for (int i = 0; i < TKD_TOPIC_COUNT; i++) {
        tkd_topic t;
        ck_assert_int_eq(tkd_topic_parse(names[i], &t), 0);
        ck_assert_int_eq(t, i);
        ck_assert_str_eq(tkd_topic_name(t), names[i]);
    }
    tkd_topic t;
    ck_assert_int_eq(tkd_topic_parse("frames", &t), TK_EINVAL);
    ck_assert_int_eq(tkd_topic_parse(NULL, &t), TK_EINVAL);
    ck_assert_str_eq(tkd_topic_name(TKD_TOPIC_COUNT), "unknown");

    ck_assert_int_eq(tkd_server_set_max_clients(F.srv, 0), TK_EINVAL);
    ck_assert_int_eq(tkd_server_set_max_line(F.srv, 0), TK_EINVAL);
    ck_assert_int_eq(tkd_server_set_max_pending(F.srv, 0), TK_EINVAL);
    ck_assert_int_eq(tkd_server_set_max_batch(F.srv, 0), TK_EINVAL);
    ck_assert_int_eq(tkd_server_set_max_output(F.srv, 0), TK_EINVAL);
    tkd_server_limits l;
    tkd_server_get_limits(F.srv, &l);
    ck_assert_uint_eq(l.max_clients, TKD_SERVER_DEFAULT_MAX_CLIENTS);
    ck_assert_uint_eq(l.max_line, TKD_SERVER_DEFAULT_MAX_LINE);
    ck_assert_int_eq(tkd_server_set_max_line(F.srv, 77), 0);
    ck_assert_int_eq(tkd_server_set_max_output(F.srv, 1 << 20), 0);
    tkd_server_get_limits(F.srv, &l);
    ck_assert_uint_eq(l.max_line, 77);
    ck_assert_uint_eq(l.max_output, 1 << 20);
}
END_TEST

START_TEST(server_line_flood)
{
    /* more lines in one write than one loop pass handles: all are answered,
     * in order, and the end of input waits for the last of them */
    enum { N = 1000 };
    conn *c = conn_open();
    size_t cap = (size_t)N * 80 + 1;
    char *buf = malloc(cap);
    size_t off = 0;
    for (int i = 0; i < N; i++)
        off += (size_t)snprintf(buf + off, cap - off, "%s",
                                i % 2 ? "bad\n" : req("echo", i, NULL));
    conn_sendn(c, buf, off);
    free(buf);
    ck_assert_int_eq(shutdown(c->fd, SHUT_WR), 0);
    for (int i = 0; i < N; i++) {
        json_t *r = conn_recv(c);
        if (i % 2)
            ck_assert_int_eq(code_of(r), TKD_RPC_PARSE_ERROR);
        else
            ck_assert_int_eq(id_of(r), i);
        json_decref(r);
    }
    ck_assert(conn_wait_eof(c));
    ck_assert_uint_eq(stats().requests, N);
    conn_close(c);
}
END_TEST

START_TEST(server_free_with_pending_calls)
{
    conn *c = conn_open();
    conn_send(c, req("defer", 1, NULL));
    pump(); /* deferred, held by the dispatcher */
    conn_send(c, req("count", 2, NULL));
    conn_send(c, req("defer", 3, NULL));
    pump_io(); /* queued, never drained */
    ck_assert_uint_eq(F.nfresh, 1);
    tkd_server_free(F.srv); /* frees both kinds, the dispatcher holds none after */
    F.srv = NULL;
    F.nfresh = F.ndeferred = 0;
    ck_assert_int_eq(F.counted, 0);
    ck_assert_ptr_nonnull(strstr(F.log, "1 deferred call dropped unanswered"));
    conn_fill(c);
    ck_assert(c->eof);
    conn_close(c);
}
END_TEST

START_TEST(server_misuse_logged)
{
    conn *c = conn_open();
    conn_send(c, req("twice", 1, NULL));
    conn_send(c, req("defer_twice", 2, NULL));
    json_t *r = conn_recv(c);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "n")), 1);
    json_decref(r);
    r = conn_recv(c);
    ck_assert_int_eq(id_of(r), 2);
    ck_assert_int_eq(json_integer_value(json_object_get(result_of(r), "n")), 3);
    json_decref(r);
    ck_assert(conn_quiet(c, 10)); /* one response each */
    ck_assert_ptr_nonnull(strstr(F.log, "completed twice"));
    ck_assert_ptr_nonnull(strstr(F.log, "deferred outside its execution"));
    conn_close(c);
}
END_TEST

START_TEST(server_debug_log)
{
    tk_log_set_level(TK_LOG_DEBUG);
    conn *c = conn_open();
    conn_send(c, req("fail", 1, NULL));
    json_t *r = conn_recv(c);
    json_decref(r);
    conn_close(c);
    pumps(3);
    char want[128];
    snprintf(want, sizeof want, "client 1 connected (uid %ld pid %ld)", (long)getuid(),
             (long)getpid());
    ck_assert_msg(strstr(F.log, want) != NULL, "log: %s", F.log);
    ck_assert_ptr_nonnull(strstr(F.log, "client 1: fail: error -32002"));
    ck_assert_ptr_nonnull(strstr(F.log, "client 1 (uid"));
    ck_assert_ptr_nonnull(strstr(F.log, "disconnected: closed by peer"));
    tk_log_set_level(TK_LOG_INFO);
}
END_TEST

static Suite *server_suite(void)
{
    Suite *s = suite_create("server");
    TCase *tc = tcase_create("server");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, server_echo_ids);
    tcase_add_test(tc, server_error_codes);
    tcase_add_test(tc, server_notifications);
    tcase_add_test(tc, server_batches);
    tcase_add_test(tc, server_batch_deferred);
    tcase_add_test(tc, server_deferred_order);
    tcase_add_test(tc, server_order_with_read_errors);
    tcase_add_test(tc, server_fifo_across_clients);
    tcase_add_test(tc, server_half_close);
    tcase_add_test(tc, server_half_close_unterminated);
    tcase_add_test(tc, server_gone_client_still_executes);
    tcase_add_test(tc, server_deferred_outlives_client);
    tcase_add_test(tc, server_oversized_line);
    tcase_add_test(tc, server_oversized_partial_line);
    tcase_add_test(tc, server_line_flood);
    tcase_add_test(tc, server_binary_junk);
    tcase_add_test(tc, server_deep_nesting);
    tcase_add_test(tc, server_many_clients);
    tcase_add_test(tc, server_max_clients);
    tcase_add_test(tc, server_max_pending);
    tcase_add_test(tc, server_max_input);
    tcase_add_test(tc, server_deferred_calls_keep_little);
    tcase_add_test(tc, server_pass_ends_at_deadline);
    tcase_add_test(tc, server_drain_until);
    tcase_add_test(tc, server_line_timeout);
    tcase_add_test(tc, server_idle_timeout);
    tcase_add_test(tc, server_slow_subscriber);
    tcase_add_test(tc, server_max_output_disconnect);
    tcase_add_test(tc, server_large_response_fits);
    tcase_add_test(tc, server_stale_socket_replaced);
    tcase_add_test(tc, server_live_socket_not_stolen);
    tcase_add_test(tc, server_not_a_socket);
    tcase_add_test(tc, server_socket_mode);
    tcase_add_test(tc, server_socket_removed_on_free);
    tcase_add_test(tc, server_listen_fd);
    tcase_add_test(tc, server_shutting_down);
    tcase_add_test(tc, server_close_all_flushes);
    tcase_add_test(tc, server_identity_and_stats);
    tcase_add_test(tc, server_topics_and_limits);
    tcase_add_test(tc, server_free_with_pending_calls);
    tcase_add_test(tc, server_misuse_logged);
    tcase_add_test(tc, server_debug_log);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(server_suite)
