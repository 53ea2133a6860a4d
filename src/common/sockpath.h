/*
 * sockpath.h - where tickd's clients (tickctl, tickd-load) look for the
 * control socket when none is given, and the names of instances ("worlds").
 * Not installed, not part of libtickd.
 *
 * The order, first match wins:
 *   1. the --socket option;
 *   2. the --world NAME option: $TICKD_RUNTIME_DIR/NAME.sock, where
 *      TICKD_RUNTIME_DIR defaults to /run/tickd (the socket of the
 *      instance tickd@NAME.service, systemd/tickd@.service, and of its
 *      socket unit tickd@NAME.socket);
 *   3. $TICKD_SOCKET when set and non-empty;
 *   4. run/tickd.sock when it exists in the working directory (a source
 *      tree's `make run`);
 *   5. /run/tickd.sock when it exists (systemd socket activation:
 *      systemd/tickd.socket);
 *   6. /run/tickd/tickd.sock (the service's own socket).
 * "Exists" means stat() does not say ENOENT/ENOTDIR, so an unreadable run/
 * directory still names run/tickd.sock and connect reports the real error.
 *
 * Instance names: 1 to TK_WORLD_NAME_MAX characters out of letters, digits,
 * '_', '.' and '-', the first a letter or a digit.  The same rule holds for
 * the daemon's [instance] name, so a name that tickd accepts is one that
 * --world finds, and no name can reach outside the runtime directory.
 *
 * What it deliberately does not do: connect or probe whether a daemon
 * answers (a socket file left by a dead daemon is still chosen, so the
 * error names it).
 */
#ifndef TICKD_COMMON_SOCKPATH_H
#define TICKD_COMMON_SOCKPATH_H

#include <stddef.h>

#define TK_SOCKPATH_LOCAL     "run/tickd.sock"
#define TK_SOCKPATH_ACTIVATED "/run/tickd.sock"
#define TK_SOCKPATH_SYSTEM    "/run/tickd/tickd.sock"
#define TK_RUNTIME_DIR        "/run/tickd" /* default of $TICKD_RUNTIME_DIR */
#define TK_WORLD_NAME_MAX     64

/* The default as one phrase for --help texts (without the --socket step). */
#define TK_SOCKPATH_DEFAULT_HELP                                                                   \
    "$TICKD_SOCKET, else " TK_SOCKPATH_LOCAL " if it exists, else " TK_SOCKPATH_ACTIVATED         \
    " if it exists (socket activation), else " TK_SOCKPATH_SYSTEM

/* The socket path: `opt` when not NULL, else the order above (without
 * --world).  Returns `opt`, the environment's string or a static string;
 * never NULL. */
const char *tk__sockpath_resolve(const char *opt);

/*
 * True when `name` is a valid instance name (the rule above).  Otherwise
 * false, with the reason in `why` (when len > 0): "is empty", "is longer
 * than 64 characters", "contains '/' (letters, digits, '_', '.' and '-'
 * only)", "must start with a letter or a digit".
 */
int tk__world_name_valid(const char *name, char *why, size_t len);

/*
 * The socket of instance `name`: $TICKD_RUNTIME_DIR (or /run/tickd when
 * unset or empty) + "/" + name + ".sock", written into `buf`.  Returns 0,
 * or -1 with a sentence in `why` naming the fault (an invalid name, a path
 * longer than `buflen` or than a Unix socket address holds).
 */
int tk__sockpath_world(const char *name, char *buf, size_t buflen, char *why, size_t whylen);

#endif
