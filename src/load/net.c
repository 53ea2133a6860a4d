/*
 * net.c - tickd-load's connections to tickd: non-blocking Unix stream
 * sockets with an output queue and newline framing.
 *
 * The run loop (run.c) owns the waiting: it polls every connection at once
 * and calls tk__load_conn_flush / tk__load_conn_fill when a socket is ready,
 * so nothing here blocks, except tk__load_conn_call, which the setup and the
 * final statistics use for one request at a time with a deadline.
 *
 * Open-loop sending means a request is queued at its intended time even when
 * tickd is not reading: the queue grows in user space (the latency clock is
 * already running), and the run loop gives up when it passes its limit.
 * Lines are found by scanning only bytes not scanned before, and consumed
 * bytes are dropped lazily, so a response of N bytes costs O(N).
 *
 * What it deliberately does not do: parse JSON (except in
 * tk__load_conn_call), reconnect, or half-close (tickd may take EOF for the
 * client leaving and drop answers still due).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

#define READ_CHUNK ((size_t)64 * 1024)   /* bytes of free room per recv */
#define RETRY_NS   (10LL * 1000 * 1000)  /* full listen queue: retry after */
#define COMPACT_AT ((size_t)1024 * 1024) /* drop consumed bytes past this */

static void nap_ns(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / TK_LOAD_NS_PER_S), (long)(ns % TK_LOAD_NS_PER_S)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int tk__load_conn_open(tk_load_conn_t *c, const char *path, uint64_t deadline_ns, char **err)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof sa.sun_path) {
        *err = tk__load_strf("%s: socket path too long", path);
        return -1;
    }
    memcpy(sa.sun_path, path, n + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        *err = tk__load_strf("socket: %s", strerror(errno));
        return -1;
    }
    for (;;) {
        if (connect(c->fd, (const struct sockaddr *)&sa, sizeof sa) == 0)
            return 0;
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN && tk__load_now_ns() < deadline_ns) {
            /* Linux: the listener's backlog is full (tickd is busy); a
             * non-blocking AF_UNIX connect has no "in progress" state. */
            nap_ns(RETRY_NS);
            continue;
        }
        *err = tk__load_strf("cannot connect to %s: %s%s", path, strerror(e),
                             e == ENOENT || e == ECONNREFUSED
                                 ? " (is tickd running? see --socket, TICKD_SOCKET)"
                                 : "");
        tk__load_conn_close(c);
        return -1;
    }
}

void tk__load_conn_close(tk_load_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    tk__load_buf_free(&c->out);
    tk__load_buf_free(&c->in);
    c->out_off = c->in_start = c->in_scan = 0;
}

void tk__load_conn_queue(tk_load_conn_t *c, const char *p, size_t n)
{
    tk__load_buf_append(&c->out, p, n);
}

size_t tk__load_conn_pending(const tk_load_conn_t *c) { return c->out.len - c->out_off; }

int tk__load_conn_flush(tk_load_conn_t *c)
{
    while (c->out_off < c->out.len) {
        ssize_t w = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w >= 0) {
            c->out_off += (size_t)w;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            break;
        c->err = errno;
        return -1;
    }
    if (c->out_off == c->out.len) {
        c->out.len = c->out_off = 0;
    } else if (c->out_off > COMPACT_AT) {
        memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
        c->out.len -= c->out_off;
        c->out_off = 0;
    }
    return 0;
}

int tk__load_conn_fill(tk_load_conn_t *c)
{
    tk_load_buf_t *in = &c->in;
    /* Drop consumed bytes when it is cheap or the buffer grew. */
    if (c->in_start == in->len) {
        in->len = c->in_start = c->in_scan = 0;
    } else if (c->in_start > COMPACT_AT) {
        memmove(in->data, in->data + c->in_start, in->len - c->in_start);
        in->len -= c->in_start;
        c->in_scan -= c->in_start;
        c->in_start = 0;
    }
    for (;;) {
        tk__load_buf_reserve(in, READ_CHUNK);
        ssize_t r = recv(c->fd, in->data + in->len, in->cap - in->len - 1, MSG_DONTWAIT);
        if (r > 0) {
            in->len += (size_t)r;
            in->data[in->len] = '\0';
            if ((size_t)r < READ_CHUNK)
                return 0; /* most likely drained; poll tells the rest */
            continue;
        }
        if (r == 0) {
            c->eof = true;
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            return 0;
        if (errno == ECONNRESET) {
            c->eof = true;
            return 0;
        }
        c->err = errno;
        return -1;
    }
}

int tk__load_conn_line(tk_load_conn_t *c, const char **line, size_t *len)
{
    tk_load_buf_t *in = &c->in;
    if (in->len <= c->in_scan)
        return 0;
    char *nl = memchr(in->data + c->in_scan, '\n', in->len - c->in_scan);
    if (!nl) {
        c->in_scan = in->len;
        return 0;
    }
    size_t n = (size_t)(nl - (in->data + c->in_start));
    *line = in->data + c->in_start;
    c->in_start = c->in_scan = (size_t)(nl - in->data) + 1;
    if (n > 0 && (*line)[n - 1] == '\r')
        n--;
    *len = n;
    return 1;
}

/* The integer id of a response, or -1 (notification, null or other id). */
static long long id_of(const json_t *msg)
{
    const json_t *id = json_object_get(msg, "id");
    return json_is_integer(id) ? (long long)json_integer_value(id) : -1;
}

int tk__load_conn_call(tk_load_conn_t *c, const char *line, uint64_t id, uint64_t deadline_ns,
                       void (*on_note)(void *arg, json_t *note), void *arg, json_t **resp,
                       char **err)
{
    tk__load_conn_queue(c, line, strlen(line));
    for (;;) {
        if (tk__load_conn_flush(c) < 0) {
            *err = tk__load_strf("send: %s", strerror(c->err));
            return -1;
        }
        const char *l;
        size_t len;
        while (tk__load_conn_line(c, &l, &len)) {
            json_error_t jerr;
            json_t *msg = json_loadb(l, len, 0, &jerr);
            if (!json_is_object(msg)) {
                json_decref(msg);
                *err = tk__load_strf("tickd sent a line that is not a JSON object");
                return -1;
            }
            if (!json_object_get(msg, "id")) {
                if (on_note)
                    on_note(arg, msg);
                json_decref(msg);
                continue;
            }
            if (id_of(msg) == (long long)id) {
                *resp = msg;
                return 0;
            }
            json_decref(msg); /* an answer to something else: not ours to wait for */
        }
        if (c->eof) {
            *err = tk__load_strf("tickd closed the connection");
            return -1;
        }
        uint64_t now = tk__load_now_ns();
        if (now >= deadline_ns) {
            *err = tk__load_strf("no answer from tickd in time");
            return -1;
        }
        uint64_t left_ms = (deadline_ns - now) / 1000000 + 1;
        struct pollfd pfd = {.fd = c->fd,
                             .events = (short)(POLLIN | (tk__load_conn_pending(c) ? POLLOUT : 0))};
        int pr = poll(&pfd, 1, left_ms > 1000 ? 1000 : (int)left_ms);
        if (pr < 0 && errno != EINTR) {
            *err = tk__load_strf("poll: %s", strerror(errno));
            return -1;
        }
        if (pr > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR)) && tk__load_conn_fill(c) < 0) {
            *err = tk__load_strf("recv: %s", strerror(c->err));
            return -1;
        }
    }
}
