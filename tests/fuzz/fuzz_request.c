/*
 * fuzz_request.c - fuzz target "request": bytes as a client would send them
 * on the control socket, run against one offline daemon per process.
 *
 * One input is a session:
 *  1. The bytes are cut into lines as the server frames them: at each '\n',
 *     one trailing '\r' removed, the last line without terminator included.
 *     A line longer than LINE_MAX_BYTES ends the session there (the server answers
 *     -32003 and closes the connection).
 *  2. Every line goes through tkd_rpc_parse_line (the pure parser), and the
 *     shape of what it returns is checked: exactly one of a whole-line error
 *     or >= 1 items, each item a valid request or an error response, every
 *     error response a well-formed JSON-RPC error that encodes.
 *  3. If any request mentions "burner" the input is dropped (fuzz.h).
 *  4. Each valid request runs with tkd_exec(d, NULL, ...) (result discarded,
 *     errors counted, as for a timer action).  A frame runs after every
 *     FRAME_EVERY requests, at every blank line (which the server ignores:
 *     here it lets the input decide when time passes) and at the end, at
 *     most MAX_FRAMES per input.  Around each frame the harness does what
 *     the daemon's hooks do: the tick rate is forced back to 0 first (an
 *     engine.set_tick_rate would otherwise make the frame sleep: offline
 *     frames are unpaced by design) and the answered-later requests
 *     (world.step, world.trace, engine.sprint) are completed after it.
 *  5. Invariants observable through the public APIs are checked (below).
 *
 * Invariants, after every input:
 *  - live entities <= [world] max_entities; the levels' entity counts add
 *    up to it; entity.list's total agrees;
 *  - walking the tick functions finds as many as tk_tick_get_counts says,
 *    in the states it says, and each belongs to a live entity whose
 *    function it is;
 *  - walking the timers and tickables finds as many as the counts say, and
 *    no timer is left executing between frames;
 *  - every frame advances the frame counter by exactly one;
 *  - the world's snapshot, saved to a file by world.save's writer, loads
 *    with world.load's reader into a second, fresh daemon (a save of any
 *    reachable state must load back), and that daemon's save is the same
 *    document (saved_at aside): save/load loses nothing.  This round trip
 *    costs in proportion to the world (done for every input, through two
 *    JSON trees, it was more than half the time: 35 inputs/s), so two
 *    rules keep it from being most of the time: a world of more than
 *    ROUND_TRIP_ITEMS entities, tick functions, timers and tickables
 *    makes it on a share of inputs, drawn from the input's hash, that
 *    falls as the world grows; and a document that already made it in
 *    this process is not loaded again (its digest is remembered).  Neither
 *    hides a failure from its reproduction: the draw is the input's, and
 *    a document is skipped only once it passed.  TICKD_FUZZ_FULL in the
 *    environment turns both off; the replay sets it, so every stored input
 *    gets every check.
 *
 * A fresh offline daemon is built for every input and freed at its end,
 * with the files the input saved: an input is a whole session, so it
 * reaches deep states by itself, and a crash then reproduces from its input
 * alone (`fuzz_request FILE`, `replay request FILE`) - state carried over
 * from earlier inputs made libFuzzer report crashes that no saved input
 * reproduced.  Freeing at the end, not at the next input's start, matters:
 * libFuzzer runs an input that allocated more than it freed a second time
 * under LeakSanitizer (that was a quarter of the time).  Building and
 * freeing a daemon takes about 0.3 ms in the sanitizer build.
 *
 * What this target deliberately does not do: open sockets (the server's
 * framing is emulated, not run), or check results of methods (the
 * integration tests do; here only crashes, sanitizer reports and the
 * invariants above count).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/rpc.h"
#include "fuzz.h"
#include "tickd/alloc.h"

#define LINE_MAX_BYTES (64 * 1024) /* bytes, longest line accepted        */
#define FRAME_EVERY    4           /* requests between two frames          */
#define MAX_FRAMES     64          /* frames per input                     */
#define MAX_BATCH      16          /* requests per batch (small: reachable) */
#define ROUND_TRIP_ITEMS 64        /* always round-trip worlds this small   */

static tkd g_d;          /* the daemon under test                          */
static char g_snap[320]; /* path of world.save/load                        */

#define FAIL(...) tkd_fuzz_fail("request", __VA_ARGS__)

static void daemon_up(void)
{
    if (!g_snap[0]) {
        tkd_fuzz_quiet();
        snprintf(g_snap, sizeof g_snap, "%s/world.json", tkd_fuzz_tmpdir());
    }
    tkd_fuzz_offline_init(&g_d, "request", g_snap);
}

/* Free the daemon and every file the input saved: the next input starts
 * from nothing, and the input has freed what it allocated (libFuzzer runs
 * an input again, under LeakSanitizer, when it did not). */
static void daemon_down(void)
{
    tkd_fuzz_offline_fini(&g_d);
    tkd_fuzz_empty_dir(tkd_fuzz_tmpdir(), 0);
}

/* ---- parsing ------------------------------------------------------------- */

/* One line of the input: blank (a frame marker) or a parsed message. */
typedef struct line {
    bool blank;
    tkd_rpc_msg msg; /* valid unless blank */
} line;

/* Check a ready-made error response of the parser. */
static void check_error_response(const json_t *e)
{
    if (!json_is_object(e))
        FAIL("an error response is not an object");
    const char *v = json_string_value(json_object_get(e, "jsonrpc"));
    if (!v || strcmp(v, "2.0") != 0)
        FAIL("an error response lacks \"jsonrpc\"");
    const json_t *err = json_object_get(e, "error");
    if (!json_is_object(err) || !json_is_integer(json_object_get(err, "code")) ||
        !json_is_string(json_object_get(err, "message")))
        FAIL("an error response has no {code, message}");
    const json_t *id = json_object_get(e, "id");
    if (!id || !(json_is_null(id) || json_is_string(id) || json_is_number(id)))
        FAIL("an error response has a bad id");
    char *text = json_dumps(e, JSON_COMPACT);
    if (!text)
        FAIL("an error response cannot be encoded");
    free(text);
}

/* Check the shape of a parsed line (rpc.h's contract). */
static void check_msg(const tkd_rpc_msg *m, size_t max_batch)
{
    if ((m->error != NULL) == (m->count > 0))
        FAIL("parse_line: need exactly one of a line error (%p) or items (%zu)", (void *)m->error,
             m->count);
    if (m->error) {
        check_error_response(m->error);
        return;
    }
    if (!m->root || !m->items)
        FAIL("parse_line: items without a root document");
    if (m->count > max_batch)
        FAIL("parse_line: %zu items over max_batch %zu", m->count, max_batch);
    if (!m->batch && m->count != 1)
        FAIL("parse_line: a single request gave %zu items", m->count);
    for (size_t i = 0; i < m->count; i++) {
        const tkd_rpc_item *it = &m->items[i];
        if (it->error) {
            check_error_response(it->error);
        } else if (!it->method || !it->request || (it->params && !json_is_object(it->params))) {
            FAIL("parse_line: item %zu is neither valid nor an error", i);
        }
    }
}

static bool is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return false;
    return true;
}

/* Split and parse the whole input; returns the number of lines in *out
 * (tk_malloc'd, release with free_lines). */
static size_t parse_lines(const uint8_t *data, size_t size, size_t max_batch, line **out)
{
    size_t cap = 16, n = 0, pos = 0;
    line *v = tk_malloc(cap * sizeof *v);
    while (pos < size) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t len = nl ? (size_t)(nl - (data + pos)) : size - pos;
        const char *s = (const char *)data + pos;
        pos += len + (nl ? 1 : 0);
        if (len && s[len - 1] == '\r')
            len--;
        if (len > LINE_MAX_BYTES)
            break; /* the server answers -32003 and closes the connection */
        if (n == cap) {
            cap *= 2;
            v = tk_realloc(v, cap * sizeof *v);
        }
        line *l = &v[n++];
        memset(l, 0, sizeof *l);
        if (is_blank(s, len)) {
            l->blank = true;
            continue;
        }
        tkd_rpc_parse_line(s, len, max_batch, &l->msg);
        check_msg(&l->msg, max_batch);
    }
    *out = v;
    return n;
}

static void free_lines(line *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!v[i].blank)
            tkd_rpc_msg_release(&v[i].msg);
    tk_free(v);
}

static bool lines_mention_burner(const line *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].blank || v[i].msg.error)
            continue;
        for (size_t k = 0; k < v[i].msg.count; k++) {
            const tkd_rpc_item *it = &v[i].msg.items[k];
            if (!it->error && it->params && tkd_fuzz_mentions_burner(it->params))
                return true;
        }
    }
    return false;
}

/* ---- running -------------------------------------------------------------- */

/* ---- invariants ------------------------------------------------------------ */

static void count_one(void *ud, const tks_entity *e)
{
    (void)e;
    (*(uint64_t *)ud)++;
}

static void check_entities(tkd *d)
{
    uint64_t n = tks_entity_count(d->sim);
    if (n > d->cfg.max_entities)
        FAIL("%llu live entities, max_entities is %u", (unsigned long long)n, d->cfg.max_entities);
    uint64_t sum = 0;
    for (size_t i = 0; i < tk_level_count(d->world); i++)
        sum += tks_level_entities(d->sim, tk_level_at(d->world, i));
    if (sum != n)
        FAIL("levels hold %llu entities, the sim counts %llu", (unsigned long long)sum,
             (unsigned long long)n);
    uint64_t visited = 0;
    uint64_t total =
        tks_entity_list(d->sim, TK_LEVEL_NONE, NULL, 0, UINT64_MAX, count_one, &visited);
    if (total != n || visited != n)
        FAIL("entity list: total %llu, visited %llu, count %llu", (unsigned long long)total,
             (unsigned long long)visited, (unsigned long long)n);
}

static void check_ticks(tkd *d)
{
    tk_tick_counts c;
    tk_tick_get_counts(d->world, &c);
    if (c.enabled + c.disabled + c.cooling_down != c.registered || c.enabled > c.registered)
        FAIL("tick counts: %zu registered != %zu enabled + %zu disabled + %zu cooling down",
             c.registered, c.enabled, c.disabled, c.cooling_down);
    size_t seen = 0, disabled = 0, cooling = 0;
    uint64_t cur = 0;
    tk_tick_id id;
    while (tk_tick_next(d->world, &cur, &id)) {
        tk_tick_info info;
        if (tk_tick_get(d->world, id, &info) != 0)
            FAIL("tick_next gave a function that tick_get does not know");
        seen++;
        if (info.state == TK_TICK_DISABLED)
            disabled++;
        else if (info.state == TK_TICK_COOLING_DOWN)
            cooling++;
        int comp = -2;
        const tks_entity *e = tks_tick_owner(d->sim, id, &comp);
        if (!e)
            FAIL("a registered tick function has no owner entity");
        if (tks_entity_get(d->sim, tks_entity_id(e)) != e || tks_entity_tick(e, comp) != id)
            FAIL("entity %llu does not own the tick function that names it",
                 (unsigned long long)tks_entity_id(e));
    }
    if (seen != c.registered || disabled != c.disabled || cooling != c.cooling_down)
        FAIL("walked %zu ticks (%zu disabled, %zu cooling down), counts say %zu (%zu, %zu)", seen,
             disabled, cooling, c.registered, c.disabled, c.cooling_down);
}

static void check_timers_tickables(tkd *d)
{
    tk_timer_counts tc;
    tk_timer_get_counts(d->world, &tc);
    size_t active = 0, paused = 0, pending = 0;
    uint64_t cur = 0, h;
    while (tk_timer_next(d->world, &cur, &h)) {
        tk_timer_info i;
        if (tk_timer_get(d->world, h, &i) != 0)
            FAIL("timer_next gave handle %llu that timer_get does not know", (unsigned long long)h);
        switch (i.status) {
        case TK_TIMER_ACTIVE:
            active++;
            break;
        case TK_TIMER_PAUSED:
            paused++;
            break;
        case TK_TIMER_PENDING:
            pending++;
            break;
        default:
            FAIL("timer %llu is executing between frames", (unsigned long long)h);
        }
    }
    if (active != tc.active || paused != tc.paused || pending != tc.pending)
        FAIL("walked timers %zu/%zu/%zu (active/paused/pending), counts say %zu/%zu/%zu", active,
             paused, pending, tc.active, tc.paused, tc.pending);
    size_t n = 0;
    cur = 0;
    while (tk_tickable_next(d->world, &cur, &h))
        n++;
    if (n != tk_tickable_count(d->world))
        FAIL("walked %zu tickables, count says %zu", n, tk_tickable_count(d->world));
}

/* ---- the save/load round trip --------------------------------------------------- */

/* TICKD_FUZZ_FULL in the environment: every input makes the round trip. */
static bool full_mode(void)
{
    static int full = -1;
    if (full < 0)
        full = getenv("TICKD_FUZZ_FULL") != NULL;
    return full;
}

/* FNV-1a of the input: the size draw depends on the input alone. */
static uint64_t input_hash(const uint8_t *data, size_t size)
{
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 0x100000001b3u;
    return h;
}

/*
 * The size draw.  A round trip costs in proportion to the document (ASan
 * build: ~50 us per entity, tick function, timer or tickable; 2,000
 * entities with components, a quarter of a second, a hundred typical
 * inputs).  A world of at most ROUND_TRIP_ITEMS of them always makes it; a
 * bigger one, of n, when the input's hash is 0 modulo n / ROUND_TRIP_ITEMS
 * (rounded up): round trips cost about the same per input whatever the
 * size, big worlds are still checked, and the choice is the input's (a
 * crash reproduces from the input alone).
 */
static bool round_trip_drawn(tkd *d, const uint8_t *data, size_t size)
{
    tk_tick_counts c;
    tk_timer_counts tc;
    tk_tick_get_counts(d->world, &c);
    tk_timer_get_counts(d->world, &tc);
    uint64_t n = tks_entity_count(d->sim) + c.registered + tc.active + tc.paused + tc.pending +
                 tk_tickable_count(d->world);
    if (full_mode() || n <= ROUND_TRIP_ITEMS)
        return true;
    return input_hash(data, size) % ((n + ROUND_TRIP_ITEMS - 1) / ROUND_TRIP_ITEMS) == 0;
}

/*
 * Digests of the documents that made the round trip in this process (open
 * addressing; emptied when three quarters full).  The round trip is a
 * function of the document alone - the mirror is a fresh daemon - so a
 * document that passed once passes again, and most inputs end in a world
 * some earlier input ended in (nothing spawned, or a few entities, at the
 * same frame: in a 40 s run, 86% of the documents drawn had been seen).
 * A first time always runs it, so a crash reproduces from its input alone.
 */
#define DONE_SLOTS (1u << 16)
static uint64_t g_done[DONE_SLOTS];
static size_t g_done_n;

/* Whether digest h is recorded; records it if not. */
static bool done_before(uint64_t h)
{
    h = h ? h : 1; /* 0 marks a free slot */
    if (g_done_n >= DONE_SLOTS / 4 * 3) {
        memset(g_done, 0, sizeof g_done);
        g_done_n = 0;
    }
    size_t i = h & (DONE_SLOTS - 1);
    for (; g_done[i]; i = (i + 1) & (DONE_SLOTS - 1))
        if (g_done[i] == h)
            return true;
    g_done[i] = h;
    g_done_n++;
    return false;
}

/*
 * Save/load round trip, as a restart does it: world.save's writer to a
 * file, world.load's reader (the file split and parsed, checked, applied)
 * into a fresh daemon, the mirror, whose own save must be the same
 * document.  Comparing the two files byte for byte ("saved_at" aside) is
 * the quick test; JSON trees are built only when they differ.  Skipped for
 * a big world that the size draw passes over, and for a document that
 * already made it (both only outside TICKD_FUZZ_FULL).
 */
static void check_snapshot(tkd *d, const uint8_t *data, size_t size)
{
    char err[TKD_ERR_MAX], a[360], b[360], diff[1024];
    if (!round_trip_drawn(d, data, size))
        return;
    snprintf(a, sizeof a, "%s/round-saved.json", tkd_fuzz_tmpdir());
    snprintf(b, sizeof b, "%s/round-loaded.json", tkd_fuzz_tmpdir());
    int rc = tkd_snapshot_save(d, a, NULL, err, sizeof err);
    if (rc != 0)
        FAIL("the world cannot be saved (%d): %s", rc, err);
    tkd_fuzz_snapfile f;
    if (!tkd_fuzz_snapfile_map(a, &f))
        FAIL("the world's snapshot %s cannot be read", a);
    bool done = !full_mode() && done_before(tkd_fuzz_snapfile_digest(&f));
    tkd_fuzz_snapfile_unmap(&f);
    if (done)
        return;
    tkd mirror;
    tkd_fuzz_offline_init(&mirror, "request", b);
    rc = tkd_snapshot_load(&mirror, a, NULL, err, sizeof err);
    if (rc != 0) {
        tkd_fuzz_snapfile_map(a, &f);
        FAIL("the world's own snapshot does not load (%d): %s\nsnapshot: %.*s", rc, err,
             (int)(f.n < 1500 ? f.n : 1500), f.p ? f.p : "");
    }
    rc = tkd_snapshot_save(&mirror, b, NULL, err, sizeof err);
    if (rc != 0)
        FAIL("the loaded world cannot be saved (%d): %s", rc, err);
    tkd_fuzz_offline_fini(&mirror);
    if (!tkd_fuzz_same_snapfiles(a, b, diff, sizeof diff))
        FAIL("a snapshot loads back different (saved, reloaded): %s", diff);
}

/* ---- the target --------------------------------------------------------------- */

int tkd_fuzz_request(const uint8_t *data, size_t size)
{
    line *lines;
    size_t n = parse_lines(data, size, MAX_BATCH, &lines);
    if (lines_mention_burner(lines, n)) {
        free_lines(lines, n);
        return 0;
    }
    daemon_up();
    tkd *d = &g_d;

    unsigned since_frame = 0, frames = 0;
    for (size_t i = 0; i < n; i++) {
        if (lines[i].blank) {
            if (frames < MAX_FRAMES) {
                tkd_fuzz_frame(d, "request");
                frames++;
            }
            since_frame = 0;
            continue;
        }
        const tkd_rpc_msg *m = &lines[i].msg;
        for (size_t k = 0; k < m->count; k++) {
            const tkd_rpc_item *it = &m->items[k];
            if (it->error)
                continue;
            tkd_exec(d, NULL, it->method, it->params);
            if (++since_frame == FRAME_EVERY && frames < MAX_FRAMES) {
                tkd_fuzz_frame(d, "request");
                frames++;
                since_frame = 0;
            }
        }
    }
    tkd_fuzz_frame(d, "request");
    free_lines(lines, n);

    check_entities(d);
    check_ticks(d);
    check_timers_tickables(d);
    check_snapshot(d, data, size);
    daemon_down();
    return 0;
}
