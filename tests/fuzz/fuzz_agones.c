/*
 * fuzz_agones.c - fuzz target "agones": bytes as the Agones SDK server's
 * answers, through what tickd reads them with (daemon/agones.h): the watch
 * stream's line splitter and the GameServer parser.
 *
 * The first byte picks the chunk size (1 + b % 64) and the line bound (64
 * bytes when b >= 128, so over-long lines are reached, else 1 MiB); the
 * rest is the stream.  It is fed once whole and once in chunks of that size.
 * Checks:
 *  - every line handed out is non-empty, holds no '\n' and is at most the
 *    bound (a "\r\n" ending loses its '\r');
 *  - fed whole or in chunks, the lines handed out and the overflow verdict
 *    are the same (the splitter does not depend on how bytes arrive);
 *  - a parsed GameServer's state is 1 to 32 letters and its name is
 *    printable ASCII without blanks (or empty); a refused one says why;
 *  - the whole input as GET /gameserver's body is parsed or refused the
 *    same way.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/agones.h"
#include "fuzz.h"

#define FAIL(...) tkd_fuzz_fail("agones", __VA_ARGS__)

typedef struct seen {
    size_t max;
    uint64_t digest; /* of every line, with its length */
    size_t lines;
} seen;

static void check_gs(const char *text, size_t len, bool wrapped)
{
    tkd_agones_gs gs;
    char why[128] = "";
    if (tkd_agones_parse(text, len, wrapped, &gs, why, sizeof why) != 0) {
        if (!why[0])
            FAIL("a refused GameServer without a reason");
        return;
    }
    size_t n = strlen(gs.state);
    if (n == 0 || n > TKD_AGONES_STATE_MAX)
        FAIL("a state of %zu bytes", n);
    for (size_t i = 0; i < n; i++)
        if (!((gs.state[i] >= 'a' && gs.state[i] <= 'z') ||
              (gs.state[i] >= 'A' && gs.state[i] <= 'Z')))
            FAIL("a state with byte 0x%02x", (unsigned char)gs.state[i]);
    for (const char *c = gs.name; *c; c++)
        if (*c <= 0x20 || *c >= 0x7f)
            FAIL("a name with byte 0x%02x", (unsigned char)*c);
}

static void on_line(void *ud, const char *line, size_t len)
{
    seen *s = ud;
    if (len == 0 || len > s->max)
        FAIL("a line of %zu bytes (bound %zu)", len, s->max);
    if (memchr(line, '\n', len))
        FAIL("a line holding a newline");
    s->digest = tkd_fuzz_digest(s->digest ^ len, line, len);
    s->lines++;
    check_gs(line, len, true);
}

int tkd_fuzz_agones(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    size_t chunk = 1 + data[0] % 64;
    size_t max = data[0] >= 128 ? 64 : TKD_AGONES_MAX_LINE;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;

    tkd_agones_lines l;
    seen whole = {max, 0, 0}, parts = {max, 0, 0};
    tkd_agones_lines_init(&l, max);
    int rc_whole = tkd_agones_lines_feed(&l, p, n, on_line, &whole);
    tkd_agones_lines_free(&l);

    tkd_agones_lines_init(&l, max);
    int rc_parts = 0;
    for (size_t at = 0; at < n; at += chunk) {
        size_t k = n - at < chunk ? n - at : chunk;
        if (tkd_agones_lines_feed(&l, p + at, k, on_line, &parts) != 0)
            rc_parts = -1;
    }
    tkd_agones_lines_free(&l);

    if (rc_whole != rc_parts)
        FAIL("over-long line: %d fed whole, %d in chunks of %zu", rc_whole, rc_parts, chunk);
    if (whole.lines != parts.lines || whole.digest != parts.digest)
        FAIL("%zu lines fed whole, %zu in chunks of %zu (or different ones)", whole.lines,
             parts.lines, chunk);
    check_gs(p, n, false);
    return 0;
}
