/*
 * notify.h - the service manager's side of tickd: systemd's notify protocol
 * (sd_notify(3)) and socket activation (sd_listen_fds(3)), written here
 * rather than linked from libsystemd.
 *
 * Notify: when NOTIFY_SOCKET names a Unix datagram socket (a path, or "@..."
 * for the abstract namespace), state changes are sent to it as newline-
 * separated KEY=VALUE datagrams: READY=1, RELOADING=1 with MONOTONIC_USEC,
 * STOPPING=1, STATUS=..., WATCHDOG=1.  Without NOTIFY_SOCKET every call is a
 * no-op, so the daemon calls them unconditionally.
 *
 * Watchdog: WATCHDOG_USEC (for this process: WATCHDOG_PID, when set, must be
 * getpid()) sets the period.  tkd_notify_watchdog() pings at most once per
 * a third of it and only when the caller says so: the daemon calls it after
 * each completed frame and from its idle wait between frames, never from a
 * timer of its own, so a frame loop stuck in one tick stops the pings and
 * systemd restarts the service.
 *
 * Socket activation: tkd_notify_listen_fd() reads LISTEN_PID / LISTEN_FDS and
 * hands back fd 3 when exactly one socket was passed to this process.
 *
 * What it deliberately doesn't do: unset the variables (tickd starts no
 * children), speak vsock or the fd store, or retry a datagram that the
 * manager did not take (state changes wait up to a second for room in its
 * queue; pings and statuses are dropped rather than stall a frame).
 */
#ifndef TICKD_DAEMON_NOTIFY_H
#define TICKD_DAEMON_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#define TKD_NOTIFY_STATUS_S 5.0 /* s of engine time between two STATUS= lines */

typedef struct tkd_notify {
    bool open;                  /* fd is ours (a zeroed struct is closed)     */
    int fd;                     /* datagram socket towards NOTIFY_SOCKET      */
    struct sockaddr_un addr;    /* NOTIFY_SOCKET (abstract: leading NUL)      */
    socklen_t addrlen;          /* bytes of addr in use                       */
    uint64_t watchdog_ns;       /* ns, WATCHDOG_USEC for us; 0 = no watchdog  */
    uint64_t last_ping_ns;      /* ns, monotonic time of the last WATCHDOG=1;
                                   0 = none yet                               */
    uint64_t pings;             /* WATCHDOG=1 datagrams sent                  */
    bool stopping;              /* STOPPING=1 sent                            */
    bool warned;                /* a failed send was logged                   */
} tkd_notify;

/*
 * Read NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID and open the socket.
 * A variable that is unset, malformed or meant for another process leaves
 * that part off (a malformed one is logged as a warning); never fails.
 * Pair with tkd_notify_fini().
 */
void tkd_notify_init(tkd_notify *n);

/* Close the socket; a zeroed or finished struct is a no-op. */
void tkd_notify_fini(tkd_notify *n);

/* True when NOTIFY_SOCKET was usable (messages go somewhere). */
bool tkd_notify_enabled(const tkd_notify *n);

/*
 * Send `msg` ("KEY=VALUE\nKEY=VALUE") as one datagram.  `wait` lets the
 * send block up to a second for room in the manager's queue (state changes);
 * otherwise a full queue drops it.  Returns 0, or TK_EIO (the first failure
 * is logged as a warning, later ones at debug level); 0 when disabled.
 */
int tkd_notify_send(tkd_notify *n, const char *msg, bool wait);

/* "READY=1", plus "\nSTATUS=<status>" when status is not NULL. */
int tkd_notify_ready(tkd_notify *n, const char *status);

/* "STATUS=<status>" (no waiting). */
int tkd_notify_status(tkd_notify *n, const char *status);

/* "RELOADING=1\nMONOTONIC_USEC=<now>" with CLOCK_MONOTONIC's now; follow
 * it with tkd_notify_ready() once the reload is done. */
int tkd_notify_reloading(tkd_notify *n);

/* "STOPPING=1", once: later calls send nothing and return 0. */
int tkd_notify_stopping(tkd_notify *n);

/*
 * Ping the watchdog if one is set and a third of its period has passed
 * since the last ping (or none was sent yet).  `now_ns` is monotonic.
 * Returns true when WATCHDOG=1 was sent.
 */
bool tkd_notify_watchdog(tkd_notify *n, uint64_t now_ns);

/* Monotonic ns at which the next ping is due, for a caller that idles
 * (0: no watchdog; <= now: due already). */
uint64_t tkd_notify_watchdog_due(const tkd_notify *n);

/*
 * Socket activation.  *fd receives 3 when LISTEN_PID is getpid() and
 * LISTEN_FDS is 1 (the descriptor is made close-on-exec), or -1 when no
 * socket was passed to this process (LISTEN_PID unset or another's,
 * LISTEN_FDS unset or 0).  Returns 0, or TK_EINVAL with a sentence in `err`
 * when LISTEN_FDS or LISTEN_PID is malformed, more than one socket was
 * passed, or fd 3 is not open.
 */
int tkd_notify_listen_fd(int *fd, char *err, size_t errlen);

#endif
