/*
 * replay.h - the journal in the daemon (journal.h is the file and its
 * writer): what is recorded when, the recovery at start, the rewrite at
 * each snapshot of the base, and replays (tickd --replay).
 *
 * Recording (frame thread).  A client request that changed the world is
 * recorded when it answers or defers (methods.c: before its reply exists,
 * so the reply waits for it); each step of a request done in slices before
 * it runs; the frame's raw dt at the end of the pre_world hook, after the
 * requests of that boundary; a SIGHUP reload's changes to what the world
 * follows; world.hash every [journal] hash_every frames (post_frame) and
 * after each world.load.  Commits (group commits) at the end of each drain
 * of requests, of pre_world and of post_frame.
 *
 * A replay applies the records in order with the same engine: the records
 * of a boundary as deferred commands (tk_engine_run_deferred: as the
 * request hooks run them), then the frame with its recorded dt
 * (tk_engine_set_next_dt), unpaced.  Requests run as
 * they ran (as a client's: big ones in slices, the slices where the journal
 * says), nothing is journaled, no file is saved, timer actions run from the
 * frames as they did.  Recorded hashes are checked where they stand.
 */
#ifndef TICKD_DAEMON_REPLAY_H
#define TICKD_DAEMON_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"

/* ---- recording ------------------------------------------------------------------ */

/*
 * At start, when [journal] path is set (instead of [snapshot]
 * load_on_start): with a journal, load its base and replay it (what follows
 * a torn last record is cut off with a warning; a corrupt record before the
 * end refuses to start, naming file and offset, unless
 * d->journal_truncate_corrupt); without one, build the world as the config
 * says and start a journal on it.  0, or -1 with `err`.
 */
int tkd_rec_start(tkd *d, char *err, size_t errlen);

/* Is `method` recorded when a client's call of it succeeds (it changes the
 * world)? */
bool tkd_rec_method(const char *method);
void tkd_rec_request(tkd *d, const char *method, const json_t *params);
void tkd_rec_step(tkd *d);   /* a slice of the oldest request in slices */
void tkd_rec_cancel(tkd *d); /* it was undone (shutdown)               */
void tkd_rec_frame(tkd *d);  /* the frame about to tick (pre_world)    */
void tkd_rec_post_frame(tkd *d, const tk_frame_info *f);
/* A reload changed [section] key (one the world follows: recorded). */
void tkd_rec_config(tkd *d, const char *section, const char *key);
void tkd_rec_loaded(tkd *d); /* a world.load was applied              */
void tkd_rec_commit(tkd *d);
/* Requests must not run now: the journal's disk is behind. */
bool tkd_rec_backlogged(tkd *d);
/* The journal cannot be written: `why` for the refusal of a change. */
bool tkd_rec_failing(tkd *d, char *why, size_t len);
/* Let the replies the journal has made safe go (the frame loop). */
void tkd_rec_release(tkd *d);

/*
 * Saves (snapshot.c).  begin: if `path` (resolved) is the journal's base,
 * start a new journal whose header carries a fresh id, set
 * d->snap_journal_id to it (the snapshot carries it) and return 1; 0 if the
 * save does not concern the journal; -1 with `err` if the new journal
 * cannot be started (the save must not happen).  await: before the
 * snapshot is renamed into place (in the save child too): the new
 * journal's header is durable.  end: the save's outcome (ok: the new pair
 * replaces the old).
 */
int tkd_rec_save_begin(tkd *d, const char *path, char *err, size_t errlen);
int tkd_rec_save_await(const tkd *d, uint64_t id, char *err, size_t errlen);
void tkd_rec_save_end(tkd *d, uint64_t id, bool ok);

/* Graceful shutdown, after the last request and save: the end record, the
 * journal synced whatever the policy, every held reply released. */
void tkd_rec_shutdown(tkd *d);
/* Close the journal (after tkd_rec_shutdown, or on a failed start). */
void tkd_rec_fini(tkd *d);

/* ---- replaying ------------------------------------------------------------------ */

typedef struct tkd_replayer tkd_replayer;

/* The post_frame hook while a replay runs (the records are applied
 * before each frame, in tk_engine_run_deferred; the request hooks do
 * nothing then). */
void tkd_replay_post_frame(tkd *d, const tk_frame_info *f);
/* A replay's world.step: n more recorded frames (answered when they ran). */
void tkd_replay_step_request(tkd *d, tkd_call *call, uint64_t n);

/* tickd --replay: set on the daemon before tkd_init (main.c). */
typedef struct tkd_replay_opts {
    const char *journal;      /* the file                                    */
    uint64_t until_frame;     /* stop once this many frames completed; 0: end */
    bool has_until;
    bool step;                /* stop at the base, advance with world.step    */
    bool serve;               /* open the socket at the stop                  */
} tkd_replay_opts;

/*
 * tickd --replay: after tkd_init (which loaded the journal's base instead
 * of a live start), run the replay to its stop, print what it did, and, if
 * asked, serve the socket there (read-only methods; world.step replays more
 * frames) until SIGTERM.  Returns the exit status: 0, 1 at the first hash
 * that does not match (naming the frame) or a record that cannot be
 * replayed.
 */
int tkd_replay_main(tkd *d);
/* Replay `journal` on d (offline daemons: tests, the fuzz target), at
 * most `max_frames` frames (0: all): 0, or -1 with err (a journal that
 * cannot be read or a record that does not fit). */
int tkd_replay_file(tkd *d, const char *journal, uint64_t max_frames, char *err, size_t errlen);
/* tkd_init's part of tickd --replay: the journal checked, its base loaded. */
int tkd_replay_open_tool(tkd *d, char *err, size_t errlen);
void tkd_replay_fini(tkd *d);

#endif
