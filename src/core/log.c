/*
 * log.c - the process-wide log handler of tickd/log.h.
 *
 * Default handler: one line per message on stderr, "tickd: <level>: msg".
 * Formatting happens only for messages at or below the current level.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/error.h"
#include "tickd/log.h"

static tk_log_level g_level = TK_LOG_INFO;
static tk_log_fn g_fn;
static void *g_ud;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void tk_log_set_handler(tk_log_fn fn, void *ud)
{
    g_fn = fn;
    g_ud = ud;
}

void tk_log_set_level(tk_log_level level)
{
    if (level >= TK_LOG_ERROR && level <= TK_LOG_DEBUG)
        g_level = level;
}

tk_log_level tk_log_get_level(void) { return g_level; }

const char *tk_log_level_name(tk_log_level level)
{
    if (level < TK_LOG_ERROR || level > TK_LOG_DEBUG)
        return "unknown";
    return level_names[level];
}

int tk_log_level_parse(const char *s, tk_log_level *out)
{
    if (!s)
        return TK_EINVAL;
    for (int i = 0; i <= TK_LOG_DEBUG; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (tk_log_level)i;
            return 0;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = TK_LOG_WARN;
        return 0;
    }
    return TK_EINVAL;
}

void tk_vlog(tk_log_level level, const char *fmt, va_list ap)
{
    if (level > g_level)
        return;
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    if (g_fn) {
        g_fn(g_ud, level, buf);
        return;
    }
    fprintf(stderr, "tickd: %s: %s\n", tk_log_level_name(level), buf);
}

void tk_log(tk_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tk_vlog(level, fmt, ap);
    va_end(ap);
}

void tk__assert_fail(const char *expr, const char *file, int line);
void tk__assert_fail(const char *expr, const char *file, int line)
{
    tk_log(TK_LOG_ERROR, "assertion failed: %s (%s:%d)", expr, file, line);
    abort();
}
