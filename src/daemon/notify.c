/*
 * notify.c - systemd's notify protocol and socket activation (notify.h).
 *
 * The protocol is small enough to speak directly: one AF_UNIX datagram per
 * message, sent with sendto() to the address in NOTIFY_SOCKET; systemd reads
 * the sender's pid from the kernel (SO_PASSCRED), which is how NotifyAccess=
 * main tells our datagrams from a child's.
 *
 * What this file deliberately doesn't do: pass credentials or descriptors
 * along with a message, or read the clock on its own for the watchdog (the
 * caller hands in the frame loop's time).
 */
#include "notify.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "tickd/clock.h"
#include "tickd/error.h"
#include "tickd/log.h"

#define LISTEN_FDS_START 3 /* SD_LISTEN_FDS_START */

/* A decimal number, digits only, that fits uint64_t; false otherwise. */
static bool parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* True when the variable `name` is unset, or holds our pid. */
static bool for_us(const char *name)
{
    const char *s = getenv(name);
    uint64_t pid;
    return !s || (parse_u64(s, &pid) && pid == (uint64_t)getpid());
}

void tkd_notify_init(tkd_notify *n)
{
    memset(n, 0, sizeof *n);
    n->fd = -1;
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || !*path)
        return;
    size_t len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof n->addr.sun_path) {
        tk_log_warn("NOTIFY_SOCKET=%s: not a socket path or @abstract name; not notifying", path);
        return;
    }
    n->addr.sun_family = AF_UNIX;
    memcpy(n->addr.sun_path, path, len);
    if (path[0] == '@')
        n->addr.sun_path[0] = '\0'; /* abstract: the length delimits the name */
    n->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
    n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (n->fd < 0) {
        tk_log_warn("NOTIFY_SOCKET: cannot create a socket: %s; not notifying", strerror(errno));
        return;
    }
    struct timeval tv = {1, 0}; /* a blocking send waits at most this */
    setsockopt(n->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    n->open = true;

    const char *wd = getenv("WATCHDOG_USEC");
    uint64_t usec;
    if (wd && for_us("WATCHDOG_PID")) {
        if (parse_u64(wd, &usec) && usec > 0 && usec < UINT64_MAX / 1000)
            n->watchdog_ns = usec * 1000;
        else
            tk_log_warn("WATCHDOG_USEC=%s: not a number of microseconds; no watchdog pings", wd);
    }
}

void tkd_notify_fini(tkd_notify *n)
{
    if (n->open)
        close(n->fd);
    n->open = false;
    n->fd = -1;
}

bool tkd_notify_enabled(const tkd_notify *n) { return n->open; }

int tkd_notify_send(tkd_notify *n, const char *msg, bool wait)
{
    if (!n->open)
        return 0;
    size_t len = strlen(msg);
    ssize_t r;
    do
        r = sendto(n->fd, msg, len, MSG_NOSIGNAL | (wait ? 0 : MSG_DONTWAIT),
                   (const struct sockaddr *)&n->addr, n->addrlen);
    while (r < 0 && errno == EINTR);
    if (r == (ssize_t)len)
        return 0;
    int e = r < 0 ? errno : EMSGSIZE;
    if (!n->warned)
        tk_log_warn("NOTIFY_SOCKET: cannot send \"%.40s\": %s", msg, strerror(e));
    else
        tk_log_debug("NOTIFY_SOCKET: cannot send \"%.40s\": %s", msg, strerror(e));
    n->warned = true;
    return TK_EIO;
}

/* "<head>" or "<head>\nSTATUS=<status>", sent. */
static int send_with_status(tkd_notify *n, const char *head, const char *status, bool wait)
{
    if (!n->open)
        return 0;
    char buf[1024];
    if (status)
        snprintf(buf, sizeof buf, "%s%sSTATUS=%s", head, *head ? "\n" : "", status);
    else
        snprintf(buf, sizeof buf, "%s", head);
    return tkd_notify_send(n, buf, wait);
}

int tkd_notify_ready(tkd_notify *n, const char *status)
{
    return send_with_status(n, "READY=1", status, true);
}

int tkd_notify_status(tkd_notify *n, const char *status)
{
    return send_with_status(n, "", status, false);
}

int tkd_notify_reloading(tkd_notify *n)
{
    char buf[64];
    snprintf(buf, sizeof buf, "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)(tk_clock_now_ns() / 1000));
    return tkd_notify_send(n, buf, true);
}

int tkd_notify_stopping(tkd_notify *n)
{
    if (n->stopping)
        return 0;
    n->stopping = true;
    return tkd_notify_send(n, "STOPPING=1", true);
}

uint64_t tkd_notify_watchdog_due(const tkd_notify *n)
{
    if (!n->open || !n->watchdog_ns)
        return 0;
    return n->last_ping_ns ? n->last_ping_ns + n->watchdog_ns / 3 : 1;
}

bool tkd_notify_watchdog(tkd_notify *n, uint64_t now_ns)
{
    uint64_t due = tkd_notify_watchdog_due(n);
    if (!due || now_ns < due)
        return false;
    n->last_ping_ns = now_ns ? now_ns : 1;
    if (tkd_notify_send(n, "WATCHDOG=1", false) != 0)
        return false;
    n->pings++;
    return true;
}

int tkd_notify_listen_fd(int *fd, char *err, size_t errlen)
{
    *fd = -1;
    const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
    uint64_t pid, nfds;
    if (!pid_s)
        return 0;
    if (!parse_u64(pid_s, &pid)) {
        snprintf(err, errlen, "socket activation: LISTEN_PID=%s is not a process id", pid_s);
        return TK_EINVAL;
    }
    if (pid != (uint64_t)getpid() || !fds_s)
        return 0; /* meant for another process */
    if (!parse_u64(fds_s, &nfds)) {
        snprintf(err, errlen, "socket activation: LISTEN_FDS=%s is not a number", fds_s);
        return TK_EINVAL;
    }
    if (nfds == 0)
        return 0;
    if (nfds > 1) {
        snprintf(err, errlen,
                 "socket activation: %llu sockets passed (LISTEN_FDS), tickd serves exactly one",
                 (unsigned long long)nfds);
        return TK_EINVAL;
    }
    int flags = fcntl(LISTEN_FDS_START, F_GETFD);
    if (flags < 0 || fcntl(LISTEN_FDS_START, F_SETFD, flags | FD_CLOEXEC) < 0) {
        snprintf(err, errlen, "socket activation: fd %d: %s", LISTEN_FDS_START, strerror(errno));
        return TK_EINVAL;
    }
    *fd = LISTEN_FDS_START;
    return 0;
}
