/*
 * logging.h - the daemon's tk_log handler, its forward hook to `log` event
 * subscribers, and a rate limiter for repetitive warnings.
 *
 * Output: one line per message on stderr (a message holding newlines becomes
 * several lines, each with the full prefix), written with one write(2) call
 * when it fits the stack buffer, so lines from different threads do not
 * interleave.  Two formats:
 *   - under systemd's journal (JOURNAL_STREAM names stderr's device:inode):
 *     the syslog priority prefix and no timestamp, the journal adds its own:
 *         <4>can't keep up: frame 120 took 40.1 ms
 *     (<3> error, <4> warn, <6> info, <7> debug);
 *   - anywhere else: UTC time with milliseconds, the level, the message:
 *         2026-11-21T22:37:59.123Z warn: can't keep up: ...
 * An instance's name ([instance] name, tkd_logging_set_name) follows the
 * level, so the lines of many tickd on one machine or in one fleet tell
 * apart (`...Z warn: alpha: can't keep up`, `<4>alpha: can't keep up`).
 * The level filter is the core's (tk_log_set_level): messages above it never
 * reach this handler.
 *
 * Forwarding: warnings and errors are also handed, whole, to one hook (the
 * daemon publishes them as `log` events).  A message logged from inside the
 * hook is written but not forwarded again, so a hook that logs cannot recurse.
 * The guard is per thread; the hook runs on the thread that logged.
 *
 * What this module deliberately doesn't do: open files, rotate logs, or talk
 * the journal's native protocol; stderr is the only sink.
 */
#ifndef TICKD_DAEMON_LOGGING_H
#define TICKD_DAEMON_LOGGING_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "tickd/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Install the daemon handler with tk_log_set_handler(), deciding the format
 * once from JOURNAL_STREAM and stderr (tkd_logging_detect_journal(2)).
 * Calling it again re-detects (e.g. after stderr was redirected).
 */
void tkd_logging_init(void);

/* The name written after the level on every line ("alpha: "); NULL or ""
 * writes none.  Set it before other threads log (the daemon sets it once,
 * at start: [instance] name needs a restart). */
void tkd_logging_set_name(const char *name);

/* Restore the core's default handler and drop the forward hook. */
void tkd_logging_shutdown(void);

/* True when the installed handler writes the journal format. */
bool tkd_logging_journal(void);

/*
 * True when JOURNAL_STREAM is set to "<dev>:<ino>" (decimal) and equals the
 * device and inode of `fd` (systemd's documented test for "stderr goes to
 * the journal").  A malformed variable or a failing fstat reads as false.
 */
bool tkd_logging_detect_journal(int fd);

/*
 * Format `msg` at `level` the way the handler writes it (with the name of
 * tkd_logging_set_name): one prefixed line
 * per line of the message (a trailing newline adds no empty line; "\r\n"
 * counts as one newline), each ending in '\n'.  `now` is the UTC wall time
 * of the timestamp (ignored when `journal`).  Writes like snprintf (always
 * NUL-terminated when len > 0) and returns the full length needed.
 */
size_t tkd_logging_format(char *buf, size_t len, tk_log_level level,
                          const char *msg, bool journal,
                          const struct timespec *now);

/* Receives a warning or error, without trailing newline, unsplit. */
typedef void (*tkd_log_forward_fn)(void *ud, tk_log_level level,
                                   const char *msg);

/* Set (or with NULL clear) the forward hook for warnings and errors. */
void tkd_logging_set_forward(tkd_log_forward_fn fn, void *ud);

/*
 * Rate limiter for "can't keep up"-style warnings: at most one message per
 * `interval`, counting the ones held back so the next one can say so:
 *
 *     unsigned long n;
 *     if (tkd_ratelimit_allow(&rl, now_s, &n))
 *         tk_log_warn("can't keep up (%lu more since the last report)", n);
 *
 * Time is an input (monotonic seconds); nothing here reads a clock.
 */
typedef struct tkd_ratelimit_t {
    double interval;            /* s, least time between two allowed events   */
    double last;                /* s, monotonic time of the last allowed one;
                                   -HUGE_VAL = none yet                       */
    unsigned long suppressed;   /* events refused since the last allowed one  */
} tkd_ratelimit_t;

/* Ready to allow its first event at any time. */
void tkd_ratelimit_init(tkd_ratelimit_t *rl, double interval);

/*
 * Whether to log now (`now` in monotonic seconds).  Allowed when no event
 * was allowed yet or `interval` has passed since the last allowed one; then
 * `*suppressed` (may be NULL) receives how many were refused in between and
 * the count restarts.  Refused: the count grows and `*suppressed` is left
 * alone.
 */
bool tkd_ratelimit_allow(tkd_ratelimit_t *rl, double now,
                         unsigned long *suppressed);

/*
 * Flood control of the handler: a message is keyed by its text with every
 * run of digits read as one digit ("client 17 ... 4096 bytes" and "client
 * 18 ... 512 bytes" are the same message).  Each key may log
 * TKD_LOGFLOOD_BURST messages per TKD_LOGFLOOD_WINDOW_S seconds; past
 * that its messages are counted, not written nor forwarded, and once its
 * window has passed one line says how many were suppressed, with the last
 * one's text:
 *     warn: 40213 similar messages suppressed in 5 s; last: client 9 ...
 * Keys live in a small table (the least recently seen is replaced).  Debug
 * messages are never limited.  The handler applies it; the table below is
 * also usable alone (tests).  Time is an input.
 */
#define TKD_LOGFLOOD_BURST 20
#define TKD_LOGFLOOD_WINDOW_S 5.0
#define TKD_LOGFLOOD_KEYS 64
#define TKD_LOGFLOOD_SAMPLE 160

typedef struct tkd_logflood_entry {
    unsigned long long key;     /* hash of the normalized text; 0 = free      */
    double start;               /* s, start of the current window             */
    double seen;                /* s, last message                            */
    unsigned count;             /* messages in the window                     */
    unsigned long suppressed;   /* refused in the window                      */
    tk_log_level level;         /* of the last refused one                    */
    char sample[TKD_LOGFLOOD_SAMPLE]; /* the last refused one's text          */
} tkd_logflood_entry;

typedef struct tkd_logflood {
    tkd_logflood_entry e[TKD_LOGFLOOD_KEYS];
} tkd_logflood;

/* Called once per entry whose window passed with suppressed messages. */
typedef void (*tkd_logflood_emit_fn)(void *ud, tk_log_level level, unsigned long suppressed,
                                     double window_s, const char *sample);

/* Whether `msg` may be written now; a summary of the key's previous window
 * is emitted first when it had suppressions. */
bool tkd_logflood_allow(tkd_logflood *f, tk_log_level level, const char *msg, double now,
                        tkd_logflood_emit_fn emit, void *ud);
/* Emit the summaries of every window that has passed (call about once a
 * second so a flood that stopped is still reported); returns how many. */
size_t tkd_logflood_flush(tkd_logflood *f, double now, tkd_logflood_emit_fn emit, void *ud);

/* The handler's own table: flush it (the daemon calls this once a second). */
void tkd_logging_flush(void);
/* Messages the handler suppressed since start. */
unsigned long long tkd_logging_suppressed(void);

#ifdef __cplusplus
}
#endif
#endif
