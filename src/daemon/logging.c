/*
 * logging.c - the daemon's tk_log handler (see logging.h for the formats).
 *
 * The handler formats the whole message (every line prefixed) into a stack
 * buffer and writes it with one write(2) on stderr; a message too big for
 * that buffer gets a heap buffer, and if even that fails it is written in
 * stack-sized pieces.  Warnings and errors then go to the forward hook,
 * unless this thread is already inside it.
 *
 * What this file deliberately doesn't do: buffer, retry on EAGAIN, or report
 * a failing stderr (there is nowhere left to report it).
 */
#include "logging.h"

#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickd/alloc.h"

static bool g_journal;                  /* write the journal format           */
static char g_name[72];                 /* "NAME: " after the level, or ""    */
static tkd_log_forward_fn g_forward;    /* hook for warnings and errors       */
static void *g_forward_ud;
static _Thread_local bool t_in_forward; /* this thread runs the hook now      */

/* Stack buffer of one message: a full core message (1 KiB) with a few
 * dozen lines fits. */
#define LOG_BUF 4096

/* Syslog priorities of sd-daemon(3), by tk_log_level. */
static const char *const journal_prefix[] = {"<3>", "<4>", "<6>", "<7>"};

bool tkd_logging_detect_journal(int fd)
{
    const char *e = getenv("JOURNAL_STREAM");
    if (!e || !*e)
        return false;
    char *end;
    errno = 0;
    unsigned long long dev = strtoull(e, &end, 10);
    if (end == e || *end != ':' || errno)
        return false;
    const char *p = end + 1;
    unsigned long long ino = strtoull(p, &end, 10);
    if (end == p || *end != '\0' || errno)
        return false;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return false;
    return (unsigned long long)st.st_dev == dev &&
           (unsigned long long)st.st_ino == ino;
}

void tkd_logging_set_name(const char *name)
{
    if (name && *name)
        snprintf(g_name, sizeof g_name, "%.64s: ", name);
    else
        g_name[0] = '\0';
}

/* Append `n` bytes at *pos, as far as `len` allows (one byte is kept for the
 * NUL); *pos counts everything, written or not. */
static void put(char *buf, size_t len, size_t *pos, const char *s, size_t n)
{
    if (*pos + 1 < len) {
        size_t room = len - 1 - *pos;
        memcpy(buf + *pos, s, n < room ? n : room);
    }
    *pos += n;
}

size_t tkd_logging_format(char *buf, size_t len, tk_log_level level,
                          const char *msg, bool journal,
                          const struct timespec *now)
{
    if (level < TK_LOG_ERROR || level > TK_LOG_DEBUG)
        level = TK_LOG_ERROR;
    if (!msg)
        msg = "";
    char prefix[160];
    int plen;
    if (journal) {
        plen = snprintf(prefix, sizeof prefix, "%s%s", journal_prefix[level], g_name);
    } else {
        struct tm tm;
        time_t secs = now ? now->tv_sec : 0;
        long ms = now ? now->tv_nsec / 1000000 : 0;
        if (!gmtime_r(&secs, &tm))
            memset(&tm, 0, sizeof tm);
        plen = snprintf(prefix, sizeof prefix,
                        "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s: %s",
                        tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                        tm.tm_hour, tm.tm_min, tm.tm_sec, ms,
                        tk_log_level_name(level), g_name);
    }
    if (plen < 0)
        plen = 0;
    if ((size_t)plen >= sizeof prefix)
        plen = (int)sizeof prefix - 1;

    size_t pos = 0;
    const char *p = msg;
    for (;;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (n > 0 && p[n - 1] == '\r' && nl)
            n--;
        put(buf, len, &pos, prefix, (size_t)plen);
        put(buf, len, &pos, p, n);
        put(buf, len, &pos, "\n", 1);
        if (!nl || nl[1] == '\0')
            break;
        p = nl + 1;
    }
    if (len > 0)
        buf[pos < len ? pos : len - 1] = '\0';
    return pos;
}

/* write(2) all of it, retrying on EINTR and short writes; errors are
 * dropped (stderr is the last resort). */
static void write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

/* ---- flood control ---------------------------------------------------- */

static unsigned long long flood_key(const char *msg)
{
    unsigned long long h = 1469598103934665603ull; /* FNV-1a */
    bool digits = false;
    for (const unsigned char *p = (const unsigned char *)msg; *p; p++) {
        bool d = *p >= '0' && *p <= '9';
        if (d && digits)
            continue;
        digits = d;
        h = (h ^ (d ? '#' : *p)) * 1099511628211ull;
    }
    return h ? h : 1;
}

static void flood_summary(tkd_logflood_entry *x, tkd_logflood_emit_fn emit, void *ud)
{
    if (x->suppressed && emit)
        emit(ud, x->level, x->suppressed, TKD_LOGFLOOD_WINDOW_S, x->sample);
    x->suppressed = 0;
}

bool tkd_logflood_allow(tkd_logflood *f, tk_log_level level, const char *msg, double now,
                        tkd_logflood_emit_fn emit, void *ud)
{
    if (level >= TK_LOG_DEBUG)
        return true;
    unsigned long long key = flood_key(msg);
    tkd_logflood_entry *x = NULL, *lru = &f->e[0];
    for (size_t i = 0; i < TKD_LOGFLOOD_KEYS; i++) {
        if (f->e[i].key == key) {
            x = &f->e[i];
            break;
        }
        if (!f->e[i].key || (lru->key && f->e[i].seen < lru->seen))
            lru = &f->e[i];
    }
    if (!x) {
        x = lru;
        if (x->key)
            flood_summary(x, emit, ud);
        memset(x, 0, sizeof *x);
        x->key = key;
        x->start = now;
    }
    x->seen = now;
    if (now - x->start >= TKD_LOGFLOOD_WINDOW_S) {
        flood_summary(x, emit, ud);
        x->start = now;
        x->count = 0;
    }
    if (x->count < TKD_LOGFLOOD_BURST) {
        x->count++;
        return true;
    }
    x->suppressed++;
    x->level = level;
    snprintf(x->sample, sizeof x->sample, "%s", msg);
    return false;
}

size_t tkd_logflood_flush(tkd_logflood *f, double now, tkd_logflood_emit_fn emit, void *ud)
{
    size_t n = 0;
    for (size_t i = 0; i < TKD_LOGFLOOD_KEYS; i++) {
        tkd_logflood_entry *x = &f->e[i];
        if (x->key && x->suppressed && now - x->start >= TKD_LOGFLOOD_WINDOW_S) {
            flood_summary(x, emit, ud);
            x->start = now;
            x->count = 0;
            n++;
        }
    }
    return n;
}

static tkd_logflood g_flood;
static pthread_mutex_t g_flood_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static unsigned long long g_suppressed;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_msg(tk_log_level level, const char *msg);

static void emit_summary(void *ud, tk_log_level level, unsigned long n, double window_s,
                         const char *sample)
{
    (void)ud;
    char buf[TKD_LOGFLOOD_SAMPLE + 96];
    snprintf(buf, sizeof buf, "%lu similar message%s suppressed in %.0f s; last: %s", n,
             n == 1 ? "" : "s", window_s, sample);
    write_msg(level, buf);
}

void tkd_logging_flush(void)
{
    pthread_mutex_lock(&g_flood_mu);
    tkd_logflood_flush(&g_flood, mono_s(), emit_summary, NULL);
    pthread_mutex_unlock(&g_flood_mu);
}

unsigned long long tkd_logging_suppressed(void) { return g_suppressed; }

/* The tk_log handler: flood control, then write (and forward). */
static void handle(void *ud, tk_log_level level, const char *msg)
{
    (void)ud;
    pthread_mutex_lock(&g_flood_mu);
    bool ok = tkd_logflood_allow(&g_flood, level, msg, mono_s(), emit_summary, NULL);
    if (!ok)
        g_suppressed++;
    pthread_mutex_unlock(&g_flood_mu);
    if (ok)
        write_msg(level, msg);
}

/* Write one message (and forward warnings and errors). */
static void write_msg(tk_log_level level, const char *msg)
{
    struct timespec now = {0, 0};
    if (!g_journal)
        clock_gettime(CLOCK_REALTIME, &now);

    char stack[LOG_BUF];
    size_t need = tkd_logging_format(stack, sizeof stack, level, msg,
                                     g_journal, &now);
    if (need < sizeof stack) {
        write_all(STDERR_FILENO, stack, need);
    } else {
        char *heap = tk_try_malloc(need + 1);
        if (heap) {
            tkd_logging_format(heap, need + 1, level, msg, g_journal, &now);
            write_all(STDERR_FILENO, heap, need);
            tk_free(heap);
        } else {
            /* Out of memory: the truncated text, with its line ending. */
            stack[sizeof stack - 2] = '\n';
            write_all(STDERR_FILENO, stack, sizeof stack - 1);
        }
    }

    if (level <= TK_LOG_WARN && g_forward && !t_in_forward) {
        t_in_forward = true;
        g_forward(g_forward_ud, level, msg);
        t_in_forward = false;
    }
}

void tkd_logging_init(void)
{
    g_journal = tkd_logging_detect_journal(STDERR_FILENO);
    tk_log_set_handler(handle, NULL);
}

void tkd_logging_shutdown(void)
{
    tk_log_set_handler(NULL, NULL);
    g_forward = NULL;
    g_forward_ud = NULL;
    g_journal = false;
    g_name[0] = '\0';
}

bool tkd_logging_journal(void) { return g_journal; }

void tkd_logging_set_forward(tkd_log_forward_fn fn, void *ud)
{
    g_forward = fn;
    g_forward_ud = fn ? ud : NULL;
}

void tkd_ratelimit_init(tkd_ratelimit_t *rl, double interval)
{
    rl->interval = interval > 0 ? interval : 0;
    rl->last = -HUGE_VAL;
    rl->suppressed = 0;
}

bool tkd_ratelimit_allow(tkd_ratelimit_t *rl, double now,
                         unsigned long *suppressed)
{
    if (now - rl->last < rl->interval) { /* false while last is -HUGE_VAL */
        if (rl->suppressed < ULONG_MAX)
            rl->suppressed++;
        return false;
    }
    if (suppressed)
        *suppressed = rl->suppressed;
    rl->suppressed = 0;
    rl->last = now;
    return true;
}
