/*
 * fuzz_snapshot.c - fuzz target "snapshot": bytes as a snapshot document,
 * checked and applied with tkd_snapshot_apply on an offline daemon.
 *
 * The daemon holds a base world made through the protocol (levels,
 * entities of every built-in class but burner, with components, props,
 * prerequisites, a life span, timers with actions, tickables), run for a
 * few frames.  For each input:
 *  - The bytes are decoded as world.load decodes a file (json_loadb,
 *    JSON_REJECT_DUPLICATES); text that is not JSON is not interesting here
 *    (fuzz_request covers the JSON parser's callers) and is skipped.
 *  - tkd_snapshot_apply.  On error: the code is not -32603 (a load that
 *    failed half-way, after the world was cleared), and the world is
 *    unchanged: its snapshot document equals the base's ("saved_at"
 *    aside; the two as world.save writes them, compared byte for byte,
 *    parsed only if they differ).
 *  - On success: the world's own snapshot applies again and gives the same
 *    document (a loaded world saves as it loads), then FRAMES frames run
 *    (timers fire their actions, restored prerequisites schedule), unless the
 *    document mentions "burner" (fuzz.h: its ticks busy-wait).  Then the
 *    base is applied back and must give the base document, but for
 *    world.next_id, which a load never lowers (ids are not reused within a
 *    daemon's lifetime).  Last, the daemon is rebuilt from scratch: frames
 *    may have left state that no snapshot holds (answered-later waiters,
 *    pending world.step frames, a tick rate).
 *  - A rejected document left the world as it was, so the next input reuses
 *    it.  Either way every input starts from the same world and a crash
 *    reproduces from its input alone (the base world is checked to come out
 *    the same document every time it is built).
 *
 * What this target deliberately does not do: read files (tkd_snapshot_load
 * is a stat, a json_load_file and this apply), or check the meaning of an
 * accepted document field by field (the daemon's snapshot tests do).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

#define FRAMES 3 /* frames run on an applied document */

#define FAIL(...) tkd_fuzz_fail("snapshot", __VA_ARGS__)

static tkd g_d;            /* the daemon under test                    */
static bool g_live;        /* g_d holds the base world                 */
static json_t *g_base;     /* the base world's document (no saved_at)  */
static char g_base_file[360]; /* the base world, as world.save wrote it */
static char g_now_file[360];  /* the world now, as world.save wrote it  */

/* Requests that make the base world, in order (entity ids start at 1). */
static const char *const base_requests[][2] = {
    {"level.add", "{\"name\": \"arena\"}"},
    {"entity.spawn",
     "{\"class\": \"counter\", \"count\": 3, \"tick\": {\"group\": \"pre_physics\"},"
     " \"components\": [{\"class\": \"mover\", \"props\": {\"vx\": 1}},"
     " {\"class\": \"counter\", \"tick\": {\"interval\": 0.05}}]}"},
    {"entity.spawn",
     "{\"class\": \"mover\", \"level\": \"arena\", \"props\": {\"x\": 1, \"vy\": 2},"
     " \"tick\": {\"group\": \"post_physics\", \"interval\": 0.1},"
     " \"prerequisites\": [1], \"time_dilation\": 0.5}"},
    {"entity.spawn", "{\"class\": \"follower\", \"props\": {\"target\": 4}}"},
    {"entity.spawn", "{\"class\": \"spawner\", \"props\": {\"every\": 2, \"max_total\": 2,"
                     " \"spawn\": {\"class\": \"counter\", \"life_span\": 0.5}}}"},
    {"entity.spawn", "{\"class\": \"counter\", \"life_span\": 30, \"tick\": {\"enabled\": false}}"},
    {"entity.spawn", "{\"class\": \"counter\", \"tick\": {\"on_dedicated_server\": false,"
                     " \"even_when_paused\": true}}"},
    {"tick.add_prerequisite", "{\"id\": 2, \"prerequisite\": {\"id\": 1, \"component\": 0}}"},
    {"timer.set", "{\"rate\": 0.25, \"loop\": true, \"action\": {\"method\": \"entity.spawn\","
                  " \"params\": {\"class\": \"counter\", \"life_span\": 0.3}}}"},
    {"timer.set", "{\"rate\": 60, \"first_delay\": 5}"},
    {"timer.set", "{\"rate\": 2, \"loop\": true, \"action\": {\"method\": \"world.status\"}}"},
    {"tickable.add", "{\"class\": \"mover\", \"tick_type\": \"always\", \"props\": {\"vz\": 3}}"},
    {"tickable.add", "{\"class\": \"counter\", \"when_paused\": true}"},
};

/* Run one base request; aborts if it fails (the base must be exact). */
static void base_exec(const char *method, const char *params_text)
{
    json_error_t je;
    json_t *params = json_loads(params_text, 0, &je);
    if (!params)
        FAIL("base request %s: bad JSON: %s", method, je.text);
    uint64_t errors = g_d.action_errors;
    tkd_exec(&g_d, NULL, method, params);
    json_decref(params);
    if (g_d.action_errors != errors)
        FAIL("base request %s %s failed", method, params_text);
}

/* Build the daemon and its base world (deterministic: fixed dt). */
static void setup(void)
{
    char snap[320];
    if (!g_base)
        tkd_fuzz_quiet();
    snprintf(snap, sizeof snap, "%s/world.json", tkd_fuzz_tmpdir());
    tkd_fuzz_offline_init(&g_d, "snapshot", snap);
    for (size_t i = 0; i < sizeof base_requests / sizeof base_requests[0]; i++)
        base_exec(base_requests[i][0], base_requests[i][1]);
    tkd_fuzz_frame(&g_d, "snapshot");
    base_exec("tick.set", "{\"id\": 6, \"enabled\": true}");
    for (int i = 0; i < 5; i++)
        tkd_fuzz_frame(&g_d, "snapshot");
    json_t *doc = tkd_fuzz_world_doc(&g_d);
    if (!g_base) {
        g_base = doc;
        snprintf(g_base_file, sizeof g_base_file, "%s/base.json", tkd_fuzz_tmpdir());
        snprintf(g_now_file, sizeof g_now_file, "%s/now.json", tkd_fuzz_tmpdir());
    } else {
        tkd_fuzz_same_json("snapshot", g_base, doc, "the base world came out different");
        json_decref(doc);
    }
    /* Saved at every build, in an emptied directory: a timer action of an
     * applied document may have saved over it (world.save takes a path in
     * the same directory), or saved other files. */
    char err[TKD_ERR_MAX];
    tkd_fuzz_empty_dir(tkd_fuzz_tmpdir(), 0);
    if (tkd_snapshot_save(&g_d, g_base_file, NULL, err, sizeof err) != 0)
        FAIL("the base world cannot be saved: %s", err);
    g_live = true;
}

/* Abort unless the world's document is `want`. */
static void world_is(const json_t *want, const char *what)
{
    json_t *now = tkd_fuzz_world_doc(&g_d);
    tkd_fuzz_same_json("snapshot", want, now, what);
    json_decref(now);
}

/*
 * Abort unless the world is still the base (a rejected document changed
 * nothing).  The same test as world_is(g_base), on the text world.save
 * writes: saved and compared byte for byte with the base's save ("saved_at"
 * aside), JSON trees only if they differ - the most frequent check, and
 * parsing the world's document was most of its time.
 */
static void world_is_base(void)
{
    char err[TKD_ERR_MAX], diff[1024];
    if (tkd_snapshot_save(&g_d, g_now_file, NULL, err, sizeof err) != 0)
        FAIL("the world cannot be saved: %s", err);
    if (!tkd_fuzz_same_snapfiles(g_base_file, g_now_file, diff, sizeof diff))
        FAIL("a rejected snapshot changed the world: %s", diff);
}

/*
 * Abort unless the world is the base again after other documents were
 * loaded: equal but for world.next_id, which may only have grown (ids are
 * never reused within a daemon's lifetime: a load never lowers it).
 */
static void world_is_base_again(void)
{
    json_t *now = tkd_fuzz_world_doc(&g_d);
    json_t *w = json_object_get(now, "world");
    json_int_t base_next =
        json_integer_value(json_object_get(json_object_get(g_base, "world"), "next_id"));
    json_int_t next = json_integer_value(json_object_get(w, "next_id"));
    if (next < base_next)
        FAIL("loading the base lowered next_id to %lld (base %lld)", (long long)next,
             (long long)base_next);
    json_object_set_new(w, "next_id", json_integer(base_next));
    tkd_fuzz_same_json("snapshot", g_base, now, "the base world loads back different");
    json_decref(now);
}

int tkd_fuzz_snapshot(const uint8_t *data, size_t size)
{
    if (!g_live)
        setup();
    json_error_t je;
    json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return 0;

    char err[TKD_ERR_MAX];
    int rc = tkd_snapshot_apply(&g_d, doc, err, sizeof err);
    if (rc != 0) {
        if (rc == -32603)
            FAIL("apply failed half-way: %s", err);
        world_is_base();
    } else {
        json_t *saved = tkd_fuzz_world_doc(&g_d);
        rc = tkd_snapshot_apply(&g_d, saved, err, sizeof err);
        if (rc != 0)
            FAIL("the snapshot of a loaded world does not load (%d): %s", rc, err);
        world_is(saved, "a loaded world's snapshot loads back different");
        json_decref(saved);
        if (!tkd_fuzz_mentions_burner(doc)) {
            for (int i = 0; i < FRAMES; i++)
                tkd_fuzz_frame(&g_d, "snapshot");
        }
        rc = tkd_snapshot_apply(&g_d, g_base, err, sizeof err);
        if (rc != 0)
            FAIL("the base world does not load back (%d): %s", rc, err);
        world_is_base_again();
        tkd_fuzz_offline_fini(&g_d);
        g_live = false;
    }
    json_decref(doc);
    return 0;
}
