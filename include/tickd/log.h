/*
 * tickd/log.h - leveled logging shared by every layer.
 *
 * The core never writes to a file descriptor itself except through the
 * handler installed here; the default handler prints one line per message on
 * stderr ("tickd: warn: ...").  The daemon installs its own handler (syslog
 * priority prefixes under systemd, events to `log` subscribers).  The handler
 * and level are process-wide, like Redis's serverLog.
 */
#ifndef TICKD_LOG_H
#define TICKD_LOG_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tk_log_level {
    TK_LOG_ERROR = 0,
    TK_LOG_WARN = 1,
    TK_LOG_INFO = 2,
    TK_LOG_DEBUG = 3
} tk_log_level;

/* Receives a formatted message without trailing newline. */
typedef void (*tk_log_fn)(void *ud, tk_log_level level, const char *msg);

/* Install a handler (NULL restores the default stderr handler). */
void tk_log_set_handler(tk_log_fn fn, void *ud);
/* Messages above this level are dropped before formatting. Default INFO. */
void tk_log_set_level(tk_log_level level);
tk_log_level tk_log_get_level(void);
/* "error", "warn", "info", "debug". */
const char *tk_log_level_name(tk_log_level level);
/* Parses the names above; returns 0 or TK_EINVAL. */
int tk_log_level_parse(const char *s, tk_log_level *out);

void tk_log(tk_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void tk_vlog(tk_log_level level, const char *fmt, va_list ap);

#define tk_log_error(...) tk_log(TK_LOG_ERROR, __VA_ARGS__)
#define tk_log_warn(...) tk_log(TK_LOG_WARN, __VA_ARGS__)
#define tk_log_info(...) tk_log(TK_LOG_INFO, __VA_ARGS__)
#define tk_log_debug(...)                                                      \
    do {                                                                       \
        if (tk_log_get_level() >= TK_LOG_DEBUG)                                \
            tk_log(TK_LOG_DEBUG, __VA_ARGS__);                                 \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
