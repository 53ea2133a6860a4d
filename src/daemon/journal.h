/*
 * journal.h - the command journal: every request that changes the world,
 * appended with the frame boundary it ran at, plus each frame's dt, so that
 * a snapshot and its journal give the world back after a crash (Redis's
 * append-only file), and a replay gives any frame of the past back.
 *
 * The file is a sequence of records:
 *
 *     u32 length | u32 crc32c(type, payload) | u8 type | payload[length]
 *
 * little-endian, every record checksummed, the first one the header:
 *
 *   'H' header   JSON: {"format": "tickd-journal", "version": 1, "id": "<16
 *                hex>", "base": "snapshot" | "empty", "snapshot": "<path>",
 *                "frame": <frames completed at the base>, "levels": [...],
 *                "time_dilation", "limits": {...}, "created": "<UTC>"}.
 *                The base is the snapshot file holding "journal": {"id"}
 *                (base "snapshot"), or the world the config makes at start
 *                (base "empty": the levels and dilation given here).
 *   'R' request  u64 boundary | method | 0 | params as compact JSON (may be
 *                empty): a request that changed the world, in the order the
 *                requests ran.  The boundary is the number of the frame it
 *                ran before (tk_world_frame between frames).
 *   'F' frame    u64 frame | u64 raw dt (ns): frame `frame` ran with this
 *                dt (after max_dt; with fixed_dt, that dt).
 *   'S' step     u64 boundary | u32 count: `count` steps of the requests
 *                done in slices, each on the oldest one (a slice of a big
 *                spawn, destroy or level removal, or a world.load applied):
 *                where a slice falls depends on a time budget, so the
 *                journal says where each one fell.
 *   'C' cancel   u64 boundary: the oldest request in slices was undone
 *                (shutdown).
 *   'G' config   u64 boundary | JSON {"time_dilation"?, "max_entities"?,
 *                "max_tick_functions"?, "max_template_bytes"?}: a SIGHUP
 *                reload changed what the world follows.
 *   'X' hash     u64 frames completed | 16 bytes: world.hash at this point
 *                of the record stream (every [journal] hash_every frames and
 *                after a world.load), what a replay checks.
 *   'E' end      (empty): a graceful shutdown; nothing follows.
 *
 * What follows deterministically from the world is not recorded: ticks,
 * timers and their actions, spawners, life spans, plugin code.
 *
 * The writer.  The frame thread appends records to a buffer of its own
 * (memcpy, no lock, no system call) and hands the buffer over at points of
 * the frame loop (after requests ran, at the end of a frame: a group
 * commit) to the journal's thread, which writes it with one write(2) and,
 * by the fsync policy (Redis's appendfsync), fdatasyncs: `always` after
 * every batch holding a change, `everysec` at most once a second, `no`
 * never (the kernel flushes).  The frame loop never waits for the disk.
 * Replies wait instead: a reply leaves only once every change recorded
 * before it was made was written (everysec, no) or written and synced
 * (always): what was acknowledged is in the journal, on the disk with
 * `always`, in the page cache (lost only with the machine) otherwise.  If
 * the disk falls behind by more than TKD_JOURNAL_BACKLOG bytes, requests
 * wait in their queues until it catches up (frames go on).  A failed write
 * is retried every second; meanwhile requests that would change the world
 * are refused with -32603 naming the error, and replies already owed wait.
 *
 * The rewrite.  Each snapshot of the base path ([snapshot] path: autosave,
 * world.save without a path, [journal] rewrite_mb, a world.load) starts a
 * fresh journal: at the fork, "<path>.new" is created with a header naming
 * the new snapshot's id, and from then on every record goes to both files.
 * The save child writes the snapshot with that id and, before renaming it
 * into place, waits until the new journal's header is on the disk.  When
 * the child succeeded, the new journal is synced and renamed over the old
 * one.  A crash at any point leaves a pair that goes together: the old
 * snapshot and the old journal (which got every record), or the new
 * snapshot and the new journal (".new", completed at the next start).
 *
 * Threads: everything here runs on the frame thread except the journal's
 * own thread (the writer), which owns the file descriptors; they share the
 * queue and the counters under one mutex.  The writer wakes the frame loop
 * through an eventfd when replies may go.
 */
#ifndef TICKD_DAEMON_JOURNAL_H
#define TICKD_DAEMON_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define TKD_JOURNAL_VERSION 1
#define TKD_JREC_HEAD 9u                     /* bytes before a payload */
#define TKD_JREC_MAX ((uint32_t)1 << 28)     /* largest payload: 256 MiB */
#define TKD_JOURNAL_BACKLOG ((size_t)64 << 20) /* bytes not yet written */

enum {
    TKD_JR_HEADER = 'H',
    TKD_JR_REQUEST = 'R',
    TKD_JR_FRAME = 'F',
    TKD_JR_STEP = 'S',
    TKD_JR_CANCEL = 'C',
    TKD_JR_CONFIG = 'G',
    TKD_JR_HASH = 'X',
    TKD_JR_END = 'E'
};

/* Redis's appendfsync. */
typedef enum tkd_fsync {
    TKD_FSYNC_ALWAYS = 0,
    TKD_FSYNC_EVERYSEC = 1,
    TKD_FSYNC_NO = 2
} tkd_fsync;

const char *tkd_fsync_name(tkd_fsync p);       /* "always", "everysec", "no" */
int tkd_fsync_parse(const char *s, tkd_fsync *out); /* 0 or -1 */

/* ---- reading (untrusted bytes: every length and field is checked) ----------- */

uint32_t tkd_crc32c(uint32_t crc, const void *data, size_t n);

typedef struct tkd_jrec {
    uint8_t type;
    const uint8_t *p;  /* payload (inside the buffer)   */
    uint32_t len;
    uint64_t off;      /* offset of the record's start  */
} tkd_jrec;

typedef enum tkd_jnext {
    TKD_JNEXT_RECORD = 1,  /* *rec filled, *off moved past it            */
    TKD_JNEXT_END = 0,     /* clean end of the bytes                     */
    TKD_JNEXT_TORN = -1,   /* the last record is cut short or garbled and
                              nothing follows it (a crash mid-write):
                              *off is where it starts                     */
    TKD_JNEXT_CORRUPT = -2 /* a record that fails its checksum or length
                              with more data after it: *off is where     */
} tkd_jnext;

/* The record at *off of buf[0..size).  `why` (if not NULL) gets a reason for
 * TORN and CORRUPT. */
tkd_jnext tkd_journal_next(const uint8_t *buf, size_t size, uint64_t *off, tkd_jrec *rec,
                           char *why, size_t whylen);

/* Payload decoders: 0, or -1 when the payload is malformed (lengths,
 * missing terminator, a method name that is not printable). */
typedef struct tkd_jrequest {
    uint64_t boundary;
    const char *method;   /* NUL-terminated inside the payload */
    const char *params;   /* params JSON text, not terminated  */
    size_t params_len;    /* 0: no params                      */
} tkd_jrequest;
int tkd_jdecode_request(const tkd_jrec *r, tkd_jrequest *out);
int tkd_jdecode_frame(const tkd_jrec *r, uint64_t *frame, uint64_t *dt_ns);
int tkd_jdecode_step(const tkd_jrec *r, uint64_t *boundary, uint32_t *count);
int tkd_jdecode_u64(const tkd_jrec *r, uint64_t *v); /* cancel */
int tkd_jdecode_config(const tkd_jrec *r, uint64_t *boundary, json_t **obj); /* new ref */
int tkd_jdecode_hash(const tkd_jrec *r, uint64_t *frame, uint8_t h[16]);
/* The header: its JSON (new reference) with "format" and "version" checked
 * and "id" parsed into *id; NULL with `why` otherwise. */
json_t *tkd_jdecode_header(const tkd_jrec *r, uint64_t *id, char *why, size_t whylen);

/* ---- writing ------------------------------------------------------------------ */

typedef struct tkd_journal tkd_journal;

/* Counters for engine.stats and the bench. */
typedef struct tkd_journal_stats {
    uint64_t records;         /* appended since start                       */
    uint64_t bytes;           /* written to the file                        */
    uint64_t batches;         /* write(2) calls (group commits)             */
    uint64_t fsyncs;          /* fdatasync calls                            */
    double fsync_max_ms;      /* longest one                                */
    double write_max_ms;      /* longest write(2)                           */
    uint64_t backlog_bytes;   /* handed over, not yet written               */
    uint64_t size;            /* bytes of the current journal file          */
    uint64_t rewrites;        /* journals started afresh at a snapshot      */
    bool failing;             /* the last write or sync failed              */
} tkd_journal_stats;

/*
 * Open the journal at `path` for appending at `at` (after a recovery:
 * where the last good record ends; what follows is cut off), or create it
 * with `header` (a JSON object, the header record's payload) when `at` is
 * 0.  A new file is created as "<path>.new" with the header, synced and
 * renamed into place.  Starts the writer.  NULL with `err` on failure.
 */
tkd_journal *tkd_journal_open(const char *path, tkd_fsync policy, uint64_t at,
                              const json_t *header, char *err, size_t errlen);
/* Write and sync everything, stop the writer, close.  NULL is a no-op. */
void tkd_journal_close(tkd_journal *j);

void tkd_journal_set_fsync(tkd_journal *j, tkd_fsync policy);
tkd_fsync tkd_journal_fsync(const tkd_journal *j);
const char *tkd_journal_path(const tkd_journal *j);

/* Records (frame thread).  `gate`: the record is a change that replies must
 * wait for (everything but frames and hashes). */
void tkd_journal_request(tkd_journal *j, uint64_t boundary, const char *method,
                         const char *params, size_t params_len);
void tkd_journal_frame(tkd_journal *j, uint64_t frame, uint64_t dt_ns);
void tkd_journal_step(tkd_journal *j, uint64_t boundary); /* coalesced */
void tkd_journal_cancel(tkd_journal *j, uint64_t boundary);
void tkd_journal_config(tkd_journal *j, uint64_t boundary, const json_t *changes);
void tkd_journal_hash(tkd_journal *j, uint64_t frame, const uint8_t h[16]);
void tkd_journal_end(tkd_journal *j);

/* Hand what was appended to the writer (a group commit). */
void tkd_journal_commit(tkd_journal *j);
/* The sequence number a reply produced now must wait for (the last change
 * appended), and the one the writer has made safe by the policy. */
uint64_t tkd_journal_gate(const tkd_journal *j);
uint64_t tkd_journal_released(const tkd_journal *j);
/* Readable when `released` moved (then call tkd_journal_ack). */
int tkd_journal_fd(const tkd_journal *j);
void tkd_journal_ack(tkd_journal *j);
/* More than TKD_JOURNAL_BACKLOG bytes wait for the disk. */
bool tkd_journal_backlogged(const tkd_journal *j);
/* The writer's last error ("" while writes succeed). */
bool tkd_journal_failing(const tkd_journal *j, char *err, size_t errlen);
/* Commit and wait until all of it is written and synced (shutdown, tests). */
int tkd_journal_sync(tkd_journal *j, char *err, size_t errlen);
void tkd_journal_get_stats(tkd_journal *j, tkd_journal_stats *out);

/*
 * The rewrite at a snapshot of the base (see above).  begin: have the
 * writer create "<path>.new" with `header` (whose "id" the snapshot will
 * carry), in order after what is queued (the end of the previous rewrite),
 * and send every record to both files from now on; 0, or -1 with `err`
 * while a rewrite is in progress (nothing changed: the save must not go
 * on).  If the writer cannot create the file it logs why and the save's
 * tkd_journal_await_header times out.  end: the snapshot was written (ok:
 * the new journal replaces the old one) or not (the new file is removed).
 */
int tkd_journal_rewrite_begin(tkd_journal *j, const json_t *header, char *err, size_t errlen);
void tkd_journal_rewrite_end(tkd_journal *j, bool ok);
bool tkd_journal_rewriting(const tkd_journal *j);

/*
 * In the save child (or an in-process save), before the snapshot is renamed
 * into place: wait until the journal "<jpath>.new" starts with the header
 * of `id`, and make it durable (fsync of the file and its directory).
 * Gives up after `timeout_ms`.  0, or -1 with `err`.
 */
int tkd_journal_await_header(const char *jpath, uint64_t id, int timeout_ms, char *err,
                             size_t errlen);

/* A fresh journal id (random, not 0). */
uint64_t tkd_journal_new_id(void);

/* fsync the directory that holds `path` (a rename or a creation in it
 * durable); best effort. */
void tkd_fsync_dir(const char *path);

/* Serialize one record (header + payload) into a malloc'd buffer: for
 * tests and the fuzz corpus.  *len gets its size. */
uint8_t *tkd_journal_encode(uint8_t type, const void *payload, size_t len, size_t *out_len);

#endif
