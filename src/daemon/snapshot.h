/*
 * snapshot.h - world.save / world.load: a versioned JSON document of the
 * whole world, written atomically and loaded all-or-nothing.
 *
 * Document (version 1):
 *   {"format": "tickd-snapshot", "version": 1, "saved_at": "<UTC time>",
 *    "journal": {"id"},                     (a journal's base: journal.h)
 *    "world": {"frame", "world_time", "unpaused_time", "real_time",
 *              "time_dilation", "paused", "next_id", <exact>},
 *    "levels": ["persistent", ...],                  (creation order)
 *    "entities": [{"id", "class", "level", "time_dilation", "life_span",
 *                  "life_timer": {"handle", "rate", "status", "order"},
 *                  "props", "tick": <fn>, "components": [{"class", "props",
 *                  "tick": <fn>}]}],
 *    "timers": [{"handle", "rate", "loop", "status", "remaining", "fired",
 *                "order", "action"}],                 (protocol timers)
 *    "tickables": [{"id", "class", "tick_type", "enabled", "when_paused",
 *                   "ticks", "last_frame", "accum_dt", "props"}]}
 *   <fn> = tick spec fields + {"ticks", "last_frame", "last_dt", "accum_dt",
 *          "cooldown", "since_last_tick", "prerequisites": [{"id",
 *          "component"}]}
 *   <exact> = "world_time_ns", "unpaused_time_ns", "real_time_ns" (the
 *          clocks exactly), "timers_ticked" (the timer manager ticked in the
 *          last frame: a timer set before the next is active at once),
 *          "steps" (owed to a paused world), "timer_serial", "timer_free"
 *          (free slots in the order new timers take them, as runs [first,
 *          n] upwards or [first, -n] downwards), "tickable_free" (the ids
 *          new tickables get from freed slots, in order)
 *
 * Everything after <fn>'s counters is what makes a restore exact: the
 * restored world goes on as the saved one would have (the same handles and
 * ids for new timers and tickables, equal expiries in the same order:
 * "order" is a timer's rank among the saved timers, life spans included),
 * and world.hash is the same before the save and after the load.  "frame"
 * is the frames completed (one more than the counter when a save starts
 * after a frame's world tick, in the core ticker).  Files without these
 * members (older tickd) load as before, restored in slot order.  Plugin
 * timers (tkp_api timer_set) are not saved.
 *
 * A prop that the simulation drove to a non-finite value is written as the
 * string "inf", "-inf" or "nan" (as entity.get shows it) and read back as
 * that number; a number prop declared unbounded ([-1e300, 1e300]) loads back
 * with whatever value the simulation gave it.  What tickd writes, it reads.
 *
 * Files live in one directory, [snapshot] dir (default: the directory of
 * [snapshot] path): a relative path names a file there, and a path that
 * leads elsewhere (.., an absolute path, a symbolic link) is refused.
 * Saving writes a fresh temporary file next to the target
 * ("<path>.tmp.<pid>", created O_EXCL|O_NOFOLLOW: nothing already at that
 * name is followed or overwritten), fsyncs it, renames it over the target
 * and fsyncs the directory: a crash at any point leaves the previous
 * snapshot intact, and the temporary file is removed at the next start.
 * Loading opens without blocking or following links and refuses anything
 * but a regular file; then it parses and checks the whole document (types,
 * ranges, classes, props, references, duplicate ids, prerequisite targets,
 * timer and tickable slots) before the world changes; an error names the
 * JSON path at fault ("$.entities[3].tick.group: ...") and changes nothing.
 * Errors never quote the file's content.
 *
 * world.save and autosaves are written by a child process (fork, as Redis's
 * BGSAVE) so the frame loop goes on; save_on_exit writes in-process.
 */
#ifndef TICKD_SNAPSHOT_H
#define TICKD_SNAPSHOT_H

#include <jansson.h>

#include "daemon.h"

#define TKD_SNAPSHOT_VERSION 1

/* The document for the current world (new reference), as a save writes it. */
json_t *tkd_snapshot_build(tkd *d);

/* Resolve `param` (a world.save/load "path"; NULL: [snapshot] path) inside
 * the snapshot directory into `out`.  Returns 0, or a JSON-RPC code with
 * err naming the parameter and the reason. */
int tkd_snapshot_resolve(const tkd *d, const char *param, char *out, size_t outlen, char *err,
                         size_t errlen);

/* The snapshot directory, resolved (realpath) into out: 0, or -1. */
int tkd_snapshot_dir(const tkd *d, char *out, size_t outlen);

/* At start: remove the temporary files ("FILE.tmp.PID[.N]", regular files
 * or links) in the snapshot directory left by processes that no longer run
 * (a crash during a save); logs each one. */
void tkd_snapshot_remove_stale(tkd *d);

/* Returned by tkd_snapshot_save_bg for a save without a caller (autosave)
 * while another save runs. */
#define TKD_SNAPSHOT_BUSY (-32002)

/*
 * Save in a child process.  Returns 0 if the save was queued: it starts at
 * the next start of the idle time after a frame (tkd_snapshot_frame_end)
 * once no other save runs, and writes the world as it is then; `call` (may
 * be NULL) is answered later with the result of tkd_snapshot_save plus
 * what the start cost the frame thread (copy_ms, fork_ms, copied_bytes),
 * and the outcome is logged with `why`.  Otherwise a JSON-RPC code with err
 * (nothing queued, call not answered): a bad path, or TKD_SNAPSHOT_BUSY when
 * call is NULL and a save runs or waits.
 */
int tkd_snapshot_save_bg(tkd *d, const char *param, tkd_call *call, const char *why, char *err,
                         size_t errlen);
/* Frame thread, at the start of the idle time after a frame (its events
 * and replies flushed): start the first waiting save if it can start
 * (no save child, no request in slices, the shadow of the class states
 * ready).  Cheap when nothing waits. */
void tkd_snapshot_frame_end(tkd *d);
/* True while a save child runs or saves wait. */
bool tkd_snapshot_saving(const tkd *d);
/* Wait for the running save and write the waiting ones in-process,
 * answering each, and for loads' memory still being freed (shutdown). */
void tkd_snapshot_finish(tkd *d);

/* Check a document completely and, if it is good, make the world what it
 * describes.  Returns 0, or a JSON-RPC code with `err` naming the path. */
int tkd_snapshot_apply(tkd *d, const json_t *doc, char *err, size_t errlen);

/* Save to `path` (a "path" param, NULL: [snapshot] path) in-process, atomically.  Fills *info (new reference: path, bytes,
 * entities, timers, tickables).  Returns 0 or a JSON-RPC code. */
int tkd_snapshot_save(tkd *d, const char *path, json_t **info, char *err, size_t errlen);

/* Load `path` (as for save; -32001 if missing).  Same *info.  In-process:
 * reads, checks and applies on the calling (frame) thread. */
int tkd_snapshot_load(tkd *d, const char *path, json_t **info, char *err, size_t errlen);

/* The same for a file the operator named (the journal's base: a resolved
 * path, not confined to [snapshot] dir); *journal_id (may be NULL) gets
 * its "journal" id, 0 if none. */
int tkd_snapshot_load_file(tkd *d, const char *path, json_t **info, uint64_t *journal_id,
                           char *err, size_t errlen);
/* The "journal" id of the snapshot at `path`, read from its first bytes
 * without loading it (0: none); *exists: the file is there. */
uint64_t tkd_snapshot_peek_journal_id(const char *path, bool *exists);

/*
 * A load read aside (world.load on the socket): tkd_snapshot_load_start
 * resolves the path (errors at once: a JSON-RPC code and err) and starts a
 * thread that reads, parses and checks the file and builds the new world
 * while frames run; it reads nothing of the running world but the class
 * table.  Once tkd_snapshot_load_done, tkd_snapshot_load_finish (frame
 * thread, at a frame boundary) swaps it in (with the plugin create and
 * destroy hooks that must run on the frame thread), or returns the reading's
 * error, exactly as tkd_snapshot_load would; it frees the load aside.  tkd_snapshot_load_cancel stops the thread and frees it, the
 * world untouched (shutdown).
 */
typedef struct tkd_snapload tkd_snapload;
int tkd_snapshot_load_start(tkd *d, const char *path, tkd_snapload **out, char *err,
                            size_t errlen);
bool tkd_snapshot_load_done(const tkd_snapload *l);
const char *tkd_snapshot_load_path(const tkd_snapload *l);
int tkd_snapshot_load_finish(tkd *d, tkd_snapload *l, json_t **info, char *err, size_t errlen);
void tkd_snapshot_load_cancel(tkd_snapload *l);

#endif
