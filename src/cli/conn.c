/*
 * conn.c - tickctl's connection to tickd: a non-blocking Unix stream socket,
 * whole-buffer sends, and newline-framed reads into a growing buffer.
 *
 * Every wait goes through one ppoll() that honours the deadline (--timeout)
 * and, in --watch mode, a stop flag set by the SIGINT/SIGTERM handler.  The
 * caller keeps those signals blocked and passes a wait mask that unblocks
 * them, so a signal can only be delivered inside ppoll: checking the flag and
 * going to sleep cannot race (the pselect/ppoll idiom).
 *
 * Lines are found by scanning only bytes not scanned before, so a response of
 * N bytes read in chunks costs O(N), and the buffer doubles as needed up to
 * TK_CTL_MAX_LINE (1 GiB).  Consumed bytes are dropped lazily, when the next
 * read needs room.
 *
 * What it deliberately does not do: interpret the lines (tickctl.c parses
 * them), or half-close the socket after sending (tickd may treat EOF as the
 * client leaving and drop an answered-later response).
 */
#include <errno.h>
#include <stdint.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "tickctl_int.h"

#define NS_PER_S 1000000000ull
#define READ_CHUNK ((size_t)64 * 1024) /* bytes of free room per recv */
#define BACKLOG_RETRY_NS (10ull * 1000 * 1000) /* full listen queue: retry */

uint64_t tk__ctl_now_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0) {
        /* Only possible without CLOCK_MONOTONIC, i.e. not on Linux. */
        fprintf(stderr, "tickctl: clock_gettime: %s\n", strerror(errno));
        exit(TK_CTL_EXIT_FAIL);
    }
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/*
 * Wait until `fd` is ready for `events` (fd < 0: just sleep), for at most
 * `max_ns` (0 = no limit of its own) and never past c->deadline_ns.
 * Returns 0 when ready (or on POLLERR/POLLHUP: the next syscall reports it),
 * 1 when `max_ns` elapsed, TK_CTL_ETIMEDOUT, TK_CTL_ESTOPPED or TK_CTL_EIO.
 */
static int wait_for(tk_ctl_conn_t *c, int fd, short events, uint64_t max_ns)
{
    uint64_t start = tk__ctl_now_ns();
    for (;;) {
        if (c->stop && *c->stop)
            return TK_CTL_ESTOPPED;
        uint64_t now = tk__ctl_now_ns();
        uint64_t wait_ns = UINT64_MAX; /* none */
        if (c->deadline_ns) {
            if (now >= c->deadline_ns)
                return TK_CTL_ETIMEDOUT;
            wait_ns = c->deadline_ns - now;
        }
        if (max_ns) {
            if (now - start >= max_ns)
                return 1;
            if (max_ns - (now - start) < wait_ns)
                wait_ns = max_ns - (now - start);
        }
        struct timespec ts, *tsp = NULL;
        if (wait_ns != UINT64_MAX) {
            ts.tv_sec = (time_t)(wait_ns / NS_PER_S);
            ts.tv_nsec = (long)(wait_ns % NS_PER_S);
            tsp = &ts;
        }
        struct pollfd pfd = {.fd = fd, .events = events, .revents = 0};
        int n = ppoll(fd >= 0 ? &pfd : NULL, fd >= 0 ? 1 : 0, tsp, c->waitmask);
        if (n < 0) {
            if (errno == EINTR)
                continue; /* the loop head checks the stop flag */
            c->err = errno;
            return TK_CTL_EIO;
        }
        if (n > 0)
            return 0;
        /* n == 0: a time limit passed; the loop head tells which. */
    }
}

int tk__ctl_conn_open(tk_ctl_conn_t *c, const char *path)
{
    c->fd = -1;
    c->err = 0;
    memset(&c->in, 0, sizeof c->in);
    c->start = c->scan = 0;

    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof sa.sun_path) {
        c->err = ENAMETOOLONG;
        return TK_CTL_ECONNECT;
    }
    memcpy(sa.sun_path, path, n + 1);

    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        c->err = errno;
        return TK_CTL_ECONNECT;
    }
    int rc;
    for (;;) {
        if (connect(c->fd, (const struct sockaddr *)&sa, sizeof sa) == 0)
            return 0;
        int e = errno;
        if (e == EISCONN)
            return 0; /* an interrupted attempt completed meanwhile */
        if (e == EINTR)
            continue;
        if (e == EAGAIN) {
            /* Linux: the listener's backlog is full (tickd is busy or hung).
             * A non-blocking AF_UNIX connect has no "in progress" state, so
             * retry until the deadline, as a blocking connect would wait. */
            rc = wait_for(c, -1, 0, BACKLOG_RETRY_NS);
            if (rc < 0)
                goto fail;
            continue;
        }
        if (e == EINPROGRESS) {
            /* Not produced by AF_UNIX on Linux; handled for completeness. */
            rc = wait_for(c, c->fd, POLLOUT, 0);
            if (rc < 0)
                goto fail;
            int soerr = 0;
            socklen_t len = sizeof soerr;
            if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
                soerr = errno;
            if (soerr == 0)
                return 0;
            e = soerr;
        }
        c->err = e;
        rc = TK_CTL_ECONNECT;
        goto fail;
    }
fail:
    tk__ctl_conn_close(c);
    return rc;
}

int tk__ctl_conn_send(tk_ctl_conn_t *c, const char *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(c->fd, p + off, n - off, MSG_NOSIGNAL);
        if (w >= 0) {
            off += (size_t)w;
            continue;
        }
        switch (errno) {
        case EINTR:
            continue;
        case EAGAIN: {
            int rc = wait_for(c, c->fd, POLLOUT, 0);
            if (rc < 0)
                return rc;
            continue;
        }
        case EPIPE:
        case ECONNRESET:
            c->err = errno;
            return TK_CTL_ECLOSED;
        default:
            c->err = errno;
            return TK_CTL_EIO;
        }
    }
    return 0;
}

int tk__ctl_conn_take_line(tk_ctl_conn_t *c, const char **line, size_t *len)
{
    tk_ctl_buf_t *in = &c->in;
    char *nl = in->len > c->scan ? memchr(in->data + c->scan, '\n', in->len - c->scan) : NULL;
    if (!nl) {
        c->scan = in->len;
        return 0;
    }
    size_t n = (size_t)(nl - (in->data + c->start));
    *line = in->data + c->start;
    c->start = c->scan = (size_t)(nl - in->data) + 1;
    if (n > 0 && (*line)[n - 1] == '\r')
        n--;
    *len = n;
    return 1;
}

int tk__ctl_conn_recv(tk_ctl_conn_t *c)
{
    tk_ctl_buf_t *in = &c->in;
    if (in->len - c->start > TK_CTL_MAX_LINE)
        return TK_CTL_ETOOLONG;
    /* Drop consumed bytes, then make room for another chunk. */
    if (c->start > 0) {
        memmove(in->data, in->data + c->start, in->len - c->start);
        in->len -= c->start;
        c->scan -= c->start;
        c->start = 0;
    }
    tk__ctl_buf_reserve(in, READ_CHUNK);
    for (;;) {
        ssize_t r = recv(c->fd, in->data + in->len, in->cap - in->len, 0);
        if (r > 0) {
            in->len += (size_t)r;
            return (int)(r > INT32_MAX ? INT32_MAX : r);
        }
        if (r == 0)
            return in->len > c->start ? TK_CTL_EPARTIAL : TK_CTL_ECLOSED;
        switch (errno) {
        case EINTR:
            continue;
        case EAGAIN:
            return 0;
        case ECONNRESET:
            c->err = errno;
            return in->len > c->start ? TK_CTL_EPARTIAL : TK_CTL_ECLOSED;
        default:
            c->err = errno;
            return TK_CTL_EIO;
        }
    }
}

int tk__ctl_conn_read_line(tk_ctl_conn_t *c, const char **line, size_t *len)
{
    for (;;) {
        if (tk__ctl_conn_take_line(c, line, len))
            return 0;
        int rc = tk__ctl_conn_recv(c);
        if (rc > 0)
            continue;
        if (rc < 0)
            return rc;
        rc = wait_for(c, c->fd, POLLIN, 0);
        if (rc < 0)
            return rc;
    }
}

long tk__ctl_conn_send_now(tk_ctl_conn_t *c, const char *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = send(c->fd, p + off, n - off, MSG_NOSIGNAL);
        if (w >= 0) {
            off += (size_t)w;
            continue;
        }
        switch (errno) {
        case EINTR:
            continue;
        case EAGAIN:
            return (long)off;
        case EPIPE:
        case ECONNRESET:
            c->err = errno;
            return TK_CTL_ECLOSED;
        default:
            c->err = errno;
            return TK_CTL_EIO;
        }
    }
    return (long)off;
}

void tk__ctl_conn_close(tk_ctl_conn_t *c)
{
    if (c->fd >= 0) {
        /* Nothing we wrote can be lost by a failing close of a socket whose
         * exchange is over, and on Linux the descriptor is released even
         * when close reports EINTR: there is nothing to retry or report. */
        (void)close(c->fd);
        c->fd = -1;
    }
    tk__ctl_buf_free(&c->in);
    c->start = c->scan = 0;
}
