/*
 * sockpath.h - where tickd's clients (tickctl, tickd-load) look for the
 * control socket when none is given.  Not installed, not part of libtickd.
 *
 * The order, first match wins:
 *   1. the --socket option;
 *   2. $TICKD_SOCKET when set and non-empty;
 *   3. run/tickd.sock when it exists in the working directory (a source
 *      tree's `make run`);
 *   4. /run/tickd.sock when it exists (systemd socket activation:
 *      systemd/tickd.socket);
 *   5. /run/tickd/tickd.sock (the service's own socket).
 * "Exists" means stat() does not say ENOENT/ENOTDIR, so an unreadable run/
 * directory still names run/tickd.sock and connect reports the real error.
 *
 * What it deliberately does not do: connect or probe whether a daemon
 * answers (a socket file left by a dead daemon is still chosen, so the
 * error names it).
 */
#ifndef TICKD_COMMON_SOCKPATH_H
#define TICKD_COMMON_SOCKPATH_H

#define TK_SOCKPATH_LOCAL     "run/tickd.sock"
#define TK_SOCKPATH_ACTIVATED "/run/tickd.sock"
#define TK_SOCKPATH_SYSTEM    "/run/tickd/tickd.sock"

/* The default as one phrase for --help texts (without the --socket step). */
#define TK_SOCKPATH_DEFAULT_HELP                                                                   \
    "$TICKD_SOCKET, else " TK_SOCKPATH_LOCAL " if it exists, else " TK_SOCKPATH_ACTIVATED         \
    " if it exists (socket activation), else " TK_SOCKPATH_SYSTEM

/* The socket path: `opt` when not NULL, else the order above.  Returns `opt`,
 * the environment's string or a static string; never NULL. */
const char *tk__sockpath_resolve(const char *opt);

#endif
