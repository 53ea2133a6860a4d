/*
 * harness.h - black-box harness of the integration tests: start the real
 * tickd executable in a fresh temporary directory, speak JSON-RPC to it over
 * its Unix socket, stop it and check how it exited.
 *
 * What it is: process control (spawn with a generated config, wait for
 * readiness, signal, wait for exit with a deadline), line-framed socket
 * clients with deadlines, JSON helpers (jansson) and assertions that report
 * the caller's file and line.  Every wait has a deadline (10 s unless said
 * otherwise); nothing ever sleeps and hopes: waits poll a condition until
 * it holds or the deadline passes, and a passed deadline fails the test.
 *
 * What it deliberately is not: a second implementation of the daemon.  It
 * links no daemon code; it knows the protocol only through the bytes it
 * sends and reads.
 *
 * Binary: $TICKD_BIN if set, else $BUILD/tickd if BUILD is set (the ASan
 * pass of `make check` runs build/asan/tickd), else build/tickd; tests run
 * from the repository root.  With TICKD_VALGRIND=1 the daemon runs under
 * `valgrind --error-exitcode=99 --leak-check=full
 * --errors-for-leak-kinds=definite -q` and every deadline is 20 times
 * longer.
 *
 * Processes and cleanup.  main() runs its suite through tkit_run(), which
 * calls tkit_init() before and tkit_cleanup() after: tkit_init() creates one base directory
 * /tmp/tickd-it-XXXXXX under which every daemon gets its own directory
 * (mkdtemp), and tkit_cleanup() removes the whole tree, so nothing is left
 * behind even by a test that failed half-way (Check's fork mode ends a
 * failed test with _exit, skipping every cleanup in the test process).  A
 * daemon gets SIGKILL when the test process that started it dies
 * (PR_SET_PDEATHSIG), so a failed test never leaves a daemon running.
 * Every connection, JSON value and string the harness returns belongs to the
 * harness and lives until the end of the test process (released at exit, so
 * a passing test is leak-free under LeakSanitizer); tests never free them.
 */
#ifndef TICKD_TESTS_INTEGRATION_HARNESS_H
#define TICKD_TESTS_INTEGRATION_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* JSON-RPC codes of PROTOCOL.md "Errors". */
#define TKIT_PARSE_ERROR      (-32700)
#define TKIT_INVALID_REQUEST  (-32600)
#define TKIT_METHOD_NOT_FOUND (-32601)
#define TKIT_INVALID_PARAMS   (-32602)
#define TKIT_INTERNAL_ERROR   (-32603)
#define TKIT_NOT_FOUND        (-32001)
#define TKIT_INVALID_STATE    (-32002)
#define TKIT_LIMIT            (-32003)
#define TKIT_SHUTTING_DOWN    (-32004)

#define TKIT_DEADLINE_S 10.0 /* s, default deadline of every wait (x20 under valgrind) */

typedef struct tkit_daemon tkit_daemon;
typedef struct tkit_conn tkit_conn;

/*
 * How to start a daemon.  Every field is optional; a zeroed struct (or a
 * NULL pointer) starts a daemon with the generated config and
 * `--config <dir>/tickd.ini`.
 *
 * The generated config (<dir>/tickd.ini) holds:
 *     [engine]   tick_rate = 0, fixed_dt = 0.01
 *     [control]  socket = <dir>/tickd.sock
 *     [snapshot] path = <dir>/snapshot.json
 *     [log]      level = info
 * `config` edits it: "section.key=value" sets (or adds) a key,
 * "!section.key" removes it.  `config_text` replaces the generated file
 * entirely.  In `config_text` and in `args`, "@DIR@" stands for the
 * daemon's directory, "@CONFIG@" for <dir>/tickd.ini and "@SOCK@" for
 * <dir>/tickd.sock.
 */
typedef struct tkit_opts {
    const char *const *config; /* NULL-terminated edits of the generated config */
    const char *config_text;   /* the whole config file instead             */
    const char *const *args;   /* NULL-terminated argv after the program;
                                  NULL means {"--config", "@CONFIG@"}       */
    const char *const *files;  /* NULL-terminated pairs {name, text}: files
                                  written in the directory before start
                                  (parents created; "@DIR@"... replaced)    */
    const char *sock;          /* where the daemon will put its socket, when
                                  the harness cannot tell from the config
                                  edits or --socket (relative: in the
                                  directory)                                */
    const char *const *env;    /* NULL-terminated "NAME=value" strings set in
                                  the daemon's environment                  */
    bool no_wait;              /* return at once, without waiting for ready */
} tkit_opts;

/* ---- suite-level setup (main) ----------------------------------------------- */

/* Create the base temporary directory; call once from main(). */
void tkit_init(void);
/* Remove the base directory tree (only in the process that created it). */
void tkit_cleanup(void);

/* A whole test program: tkit_init(), the suite make() builds run with each
 * test in its own process, tkit_cleanup(); the exit status for main(). */
struct Suite;
int tkit_run(struct Suite *(*make)(void));
/* `seconds` scaled for the environment (x20 under valgrind, times the
 * factor in $TKIT_SCALE if set: make tsan sets 5; else x3 in make check's
 * sanitized pass, SAN=1). */
double tkit_scale(double seconds);
/* True when the daemon runs under valgrind. */
bool tkit_valgrind(void);

/* ---- daemons ---------------------------------------------------------------- */

#define tkit_start(opts)  tkit_start_at(__FILE__, __LINE__, (opts))
#define tkit_stop(d, sig) tkit_stop_at(__FILE__, __LINE__, (d), (sig))
#define tkit_finish(d)    tkit_finish_at(__FILE__, __LINE__, (d))

/*
 * Start build/tickd in a fresh directory.  Unless opts->no_wait, waits
 * until the socket accepts and engine.info answers; a daemon that exits or
 * is not ready before the deadline fails the test (with its stderr).
 */
tkit_daemon *tkit_start_at(const char *file, int line, const tkit_opts *opts);

/* Send `sig` to the daemon (no wait). */
void tkit_signal(tkit_daemon *d, int sig);

/*
 * Wait up to `seconds` (scaled) for the daemon to exit; returns its wait
 * status, or -1 if it is still running at the deadline (not killed).
 */
int tkit_wait_exit(tkit_daemon *d, double seconds);

/*
 * Send `sig` and wait (default deadline) for the exit; returns the wait
 * status.  A daemon still running at the deadline is killed with SIGKILL
 * and the test fails.
 */
int tkit_stop_at(const char *file, int line, tkit_daemon *d, int sig);

/*
 * SIGTERM, then assert a clean exit: status 0 (under valgrind: no error
 * either), socket file removed.  Then tkit_free().
 */
void tkit_finish_at(const char *file, int line, tkit_daemon *d);

/* Kill (SIGKILL) if still running, close its connections, remove its
 * directory.  The handle is dead afterwards.  NULL is a no-op. */
void tkit_free(tkit_daemon *d);

pid_t tkit_pid(const tkit_daemon *d);
bool tkit_running(tkit_daemon *d); /* not exited (reaps if it has) */
const char *tkit_dir(const tkit_daemon *d);
const char *tkit_sock(const tkit_daemon *d);
const char *tkit_config_path(const tkit_daemon *d);
/* "<dir>/<name>" (owned by the harness). */
const char *tkit_path(const tkit_daemon *d, const char *name);
/* Write `text` to <dir>/<name> ("@DIR@" etc. replaced); returns the path. */
const char *tkit_write_file(const tkit_daemon *d, const char *name, const char *text);
/* Everything the daemon wrote to stderr / stdout so far. */
const char *tkit_stderr(const tkit_daemon *d);
const char *tkit_stdout(const tkit_daemon *d);

/* A fresh empty directory under the base directory (owned by the harness,
 * removed with the base directory). */
const char *tkit_tmpdir(void);
/* Read a whole file (NULL if it cannot be read); owned by the harness. */
const char *tkit_slurp(const char *path);
/* Remove a file tree; missing is fine. */
void tkit_rmtree(const char *path);

/* ---- clients ------------------------------------------------------------------ */

#define tkit_connect(d) tkit_connect_at(__FILE__, __LINE__, (d))

/* Connect to the daemon's socket (fails the test if it cannot). */
tkit_conn *tkit_connect_at(const char *file, int line, tkit_daemon *d);
/* Connect to a socket path; NULL (errno set) if the connection fails. */
tkit_conn *tkit_connect_path(const char *path);
/* The socket (for shutdown(2), poll(2)...); -1 once closed. */
int tkit_fd(const tkit_conn *c);
/* Close now (idempotent). */
void tkit_close(tkit_conn *c);
/* shutdown(fd, SHUT_WR): the client's half-close. */
void tkit_half_close(tkit_conn *c);

#define tkit_send_raw(c, buf, len) tkit_send_raw_at(__FILE__, __LINE__, (c), (buf), (len))
#define tkit_sendf(c, ...)         tkit_sendf_at(__FILE__, __LINE__, (c), __VA_ARGS__)

/* Send bytes as they are (all of them, within the deadline). */
void tkit_send_raw_at(const char *file, int line, tkit_conn *c, const void *buf, size_t len);
/* Send printf-formatted text as it is (add the "\n" yourself). */
void tkit_sendf_at(const char *file, int line, tkit_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Try to send without failing the test: 0, or -1 with errno (EPIPE...). */
int tkit_try_send(tkit_conn *c, const void *buf, size_t len);

/*
 * Read one line (without its "\n") within `seconds` (scaled); lines already
 * stashed by tkit_call are NOT returned here (see tkit_recv).  Returns NULL
 * at end of stream or at the deadline; `*eof` (if not NULL) tells which.
 */
const char *tkit_read_line(tkit_conn *c, double seconds, bool *eof);

#define tkit_recv(c)           tkit_recv_at(__FILE__, __LINE__, (c), TKIT_DEADLINE_S)
#define tkit_recv_within(c, s) tkit_recv_at(__FILE__, __LINE__, (c), (s))
#define tkit_recv_id(c, id)    tkit_recv_id_at(__FILE__, __LINE__, (c), (id))

/* The next message (stashed ones first), parsed; fails the test at the
 * deadline, at end of stream, or on a line that is not JSON. */
json_t *tkit_recv_at(const char *file, int line, tkit_conn *c, double seconds);
/* The response whose id is the integer `id`; other messages are stashed. */
json_t *tkit_recv_id_at(const char *file, int line, tkit_conn *c, long long id);
/* Messages stashed so far and not yet taken by tkit_recv (oldest first). */
size_t tkit_stashed(const tkit_conn *c);
/* True if the daemon closes the connection within `seconds` (scaled);
 * lines read meanwhile are stashed. */
bool tkit_wait_eof(tkit_conn *c, double seconds);
/* True if nothing at all (no byte, no EOF) arrives within `seconds`
 * (unscaled: a short quiet period after a known point). */
bool tkit_quiet(tkit_conn *c, double seconds);

/* ---- calls -------------------------------------------------------------------- */

#define tkit_call(c, method, ...) tkit_call_at(__FILE__, __LINE__, (c), (method), __VA_ARGS__)
#define tkit_ok(c, method, ...)   tkit_ok_at(__FILE__, __LINE__, (c), (method), __VA_ARGS__)
#define tkit_err(c, code, needle, method, ...)                                                     \
    tkit_err_at(__FILE__, __LINE__, (c), (code), (needle), (method), __VA_ARGS__)
#define tkit_send_request(c, method, ...)                                                          \
    tkit_send_request_at(__FILE__, __LINE__, (c), (method), __VA_ARGS__)

/*
 * Send one request {"jsonrpc":"2.0","id":N,"method","params"} where params
 * is the JSON text made by printf(fmt, ...) (fmt NULL: no params), and
 * return N (ids count up from 1000000 per connection).
 */
long long tkit_send_request_at(const char *file, int line, tkit_conn *c, const char *method,
                               const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Send a request and return its response (the whole object). */
json_t *tkit_call_at(const char *file, int line, tkit_conn *c, const char *method, const char *fmt,
                     ...) __attribute__((format(printf, 5, 6)));
/* Call and assert success: a well-formed response with "result"; returns
 * the result. */
json_t *tkit_ok_at(const char *file, int line, tkit_conn *c, const char *method, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));
/* Call and assert an error with `code` whose message contains `needle`
 * (NULL: any message); returns the error object. */
json_t *tkit_err_at(const char *file, int line, tkit_conn *c, int code, const char *needle,
                    const char *method, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

#define tkit_assert_result(resp) tkit_assert_result_at(__FILE__, __LINE__, (resp))
#define tkit_assert_error(resp, code, needle)                                                      \
    tkit_assert_error_at(__FILE__, __LINE__, (resp), (code), (needle))

/* Assert a response is a success ("jsonrpc":"2.0", "result", no "error");
 * returns the result. */
json_t *tkit_assert_result_at(const char *file, int line, json_t *resp);
/* Assert a response is an error with `code` and (if `needle`) a message
 * containing it; returns the error object. */
json_t *tkit_assert_error_at(const char *file, int line, json_t *resp, int code,
                             const char *needle);

/* ---- JSON ----------------------------------------------------------------------- */

#define tkit_json(...)     tkit_json_at(__FILE__, __LINE__, __VA_ARGS__)
#define tkit_get(j, path)  tkit_get_at(__FILE__, __LINE__, (j), (path))
#define tkit_geti(j, path) tkit_geti_at(__FILE__, __LINE__, (j), (path))
#define tkit_getd(j, path) tkit_getd_at(__FILE__, __LINE__, (j), (path))
#define tkit_gets(j, path) tkit_gets_at(__FILE__, __LINE__, (j), (path))
#define tkit_getb(j, path) tkit_getb_at(__FILE__, __LINE__, (j), (path))

/* Parse printf-formatted JSON text (fails the test if it does not parse). */
json_t *tkit_json_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Compact text of a value (owned by the harness). */
const char *tkit_dump(const json_t *j);

/*
 * Look up a path such as "mspt.p99", "components[1].tick.ticks" or
 * "[0].id": NULL if any step is missing (tkit_find), or fails the test
 * (tkit_get).  The typed getters also fail on a wrong type; tkit_getd
 * accepts integers and reals.
 */
json_t *tkit_find(json_t *j, const char *path);
json_t *tkit_get_at(const char *file, int line, json_t *j, const char *path);
long long tkit_geti_at(const char *file, int line, json_t *j, const char *path);
double tkit_getd_at(const char *file, int line, json_t *j, const char *path);
const char *tkit_gets_at(const char *file, int line, json_t *j, const char *path);
bool tkit_getb_at(const char *file, int line, json_t *j, const char *path);

/* True if the array `arr` holds the string `s`. */
bool tkit_has_string(const json_t *arr, const char *s);

/* ---- waiting on the daemon -------------------------------------------------------- */

#define tkit_frame(c)          tkit_frame_at(__FILE__, __LINE__, (c))
#define tkit_wait_frames(c, n) tkit_wait_frames_at(__FILE__, __LINE__, (c), (n))

/* world.status's "frame". */
uint64_t tkit_frame_at(const char *file, int line, tkit_conn *c);
/* Poll world.status until the frame counter moved on by at least `n`;
 * fails at the deadline.  Returns the frame reached. */
uint64_t tkit_wait_frames_at(const char *file, int line, tkit_conn *c, uint64_t n);

/* Run `n` frames as world.step does (the world paused) and return
 * world.trace's "frames" for exactly those frames: one batch, so both are
 * taken at one frame boundary. */
json_t *tkit_step_traced(tkit_conn *c, int n);

/* Fail the test at file:line with a printf-formatted message. */
void tkit_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Monotonic seconds. */
double tkit_now(void);

#endif
