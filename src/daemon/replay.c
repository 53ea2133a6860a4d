/*
 * replay.c - the journal in the daemon (replay.h): recording, the recovery
 * at start, the rewrite at snapshots of the base, replays.
 *
 *   recording  small functions called from the frame loop and the
 *              methods; they turn what happened into journal records
 *              (journal.h)
 *   start      which journal goes with which snapshot (the pair of a
 *              rewrite that a crash interrupted is completed), the base
 *              loaded, the records replayed, the journal reopened at its
 *              last good record; or a journal started on the world the
 *              config makes
 *   replayer   the journal mapped read-only, checked whole first (a
 *              corrupt record refuses the replay before anything runs),
 *              then applied a boundary at a time from the engine's hooks
 *   tool       tickd --replay: the same replayer, a summary, and the socket
 *              served at the stop
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "hash.h"
#include "journal.h"
#include "params.h"
#include "replay.h"
#include "snapshot.h"

/* ---- recording --------------------------------------------------------------------------- */

/* Methods that change nothing the journal replays: the engine's pace
 * (the dt of every frame is recorded), saves (a save of the base starts
 * a new journal instead), the daemon's own end. */
static const char *const not_recorded[] = {"engine.set_tick_rate", "engine.sprint",
                                           "engine.sprint_stop", "engine.shutdown",
                                           "world.save", NULL};

bool tkd_rec_method(const char *method)
{
    if (!method || !tkd_method_exists(method) || tkd_method_readonly(method))
        return false;
    for (size_t i = 0; not_recorded[i]; i++)
        if (!strcmp(not_recorded[i], method))
            return false;
    return true;
}

void tkd_rec_request(tkd *d, const char *method, const json_t *params)
{
    if (!d->journal)
        return;
    char *t = params ? json_dumps(params, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))
                     : NULL;
    tkd_journal_request(d->journal, tk_world_frame(d->world), method, t, t ? strlen(t) : 0);
    free(t);
}

void tkd_rec_step(tkd *d)
{
    if (d->journal)
        tkd_journal_step(d->journal, tk_world_frame(d->world));
}

void tkd_rec_cancel(tkd *d)
{
    if (d->journal)
        tkd_journal_cancel(d->journal, tk_world_frame(d->world));
}

void tkd_rec_frame(tkd *d)
{
    if (d->journal)
        tkd_journal_frame(d->journal, tk_world_frame(d->world), tk_engine_frame_dt_ns(d->engine));
}

void tkd_rec_commit(tkd *d)
{
    if (d->journal)
        tkd_journal_commit(d->journal);
}

bool tkd_rec_backlogged(tkd *d) { return d->journal && tkd_journal_backlogged(d->journal); }

bool tkd_rec_failing(tkd *d, char *why, size_t len)
{
    return d->journal && tkd_journal_failing(d->journal, why, len);
}

void tkd_rec_release(tkd *d)
{
    if (d->journal && d->srv)
        tkd_server_release(d->srv, tkd_journal_released(d->journal));
}

static void record_hash(tkd *d)
{
    uint8_t h[TKD_HASH_BYTES];
    tkd_world_hash(d, h);
    tkd_journal_hash(d->journal, tk_world_frames_done(d->world), h);
    d->hash_frames = 0;
}

/* A snapshot of the base, in a child: it starts a new journal. */
static void rewrite_now(tkd *d, const char *why)
{
    char err[TKD_ERR_MAX];
    int rc = tkd_snapshot_save_bg(d, NULL, NULL, why, err, sizeof err);
    if (rc && rc != TKD_SNAPSHOT_BUSY)
        tk_log_error("journal: the snapshot that would start a new journal failed: %s", err);
}

void tkd_rec_post_frame(tkd *d, const tk_frame_info *f)
{
    (void)f;
    if (!d->journal)
        return;
    if (d->cfg.journal_hash_every && ++d->hash_frames >= d->cfg.journal_hash_every)
        record_hash(d);
    if (d->rewrite_wanted && !d->shutdown && !tkd_snapshot_saving(d) && !d->jobs &&
        !tkd_journal_rewriting(d->journal)) {
        d->rewrite_wanted = false;
        tk_log_info("journal: a snapshot of the world loaded starts a new journal");
        rewrite_now(d, "world.load");
    }
    if (d->cfg.journal_rewrite_bytes && !d->shutdown && !tkd_snapshot_saving(d) &&
        !tkd_journal_rewriting(d->journal)) {
        tkd_journal_stats st;
        tkd_journal_get_stats(d->journal, &st);
        if (st.size >= d->cfg.journal_rewrite_bytes && !d->jobs) {
            tk_log_info("journal: %s holds %" PRIu64 " bytes ([journal] rewrite_mb): a snapshot "
                        "starts a new one",
                        tkd_journal_path(d->journal), st.size);
            rewrite_now(d, "journal size");
        }
    }
    tkd_journal_commit(d->journal);
}

void tkd_rec_config(tkd *d, const char *section, const char *key)
{
    if (!d->journal)
        return;
    json_t *o = json_object();
    if (!strcmp(section, "world") && !strcmp(key, "time_dilation"))
        json_object_set_new(o, "time_dilation", json_real(tk_world_time_dilation(d->world)));
    else if (!strcmp(section, "world") && !strcmp(key, "max_entities"))
        json_object_set_new(o, "max_entities", json_integer(d->cfg.max_entities));
    else if (!strcmp(section, "world") && !strcmp(key, "max_tick_functions"))
        json_object_set_new(o, "max_tick_functions", json_integer(d->cfg.max_tick_functions));
    else if (!strcmp(section, "world") && !strcmp(key, "max_template_bytes"))
        json_object_set_new(o, "max_template_bytes",
                            json_integer((json_int_t)d->cfg.max_template_bytes));
    if (json_object_size(o))
        tkd_journal_config(d->journal, tk_world_frame(d->world), o);
    json_decref(o);
}

void tkd_rec_loaded(tkd *d)
{
    if (!d->journal)
        return;
    /* The replay checks here that it loaded the same world; the journal
     * starts afresh on a snapshot of it (until that one is complete, the
     * replay needs the file that was loaded). */
    record_hash(d);
    if (!d->shutdown)
        d->rewrite_wanted = true; /* once the load's job is over (tkd_rec_post_frame) */
}

/* The limits the world follows, for the header. */
static json_t *limits_json(tkd *d)
{
    json_t *o = json_object();
    json_object_set_new(o, "max_entities", json_integer(d->cfg.max_entities));
    json_object_set_new(o, "max_tick_functions", json_integer(d->cfg.max_tick_functions));
    json_object_set_new(o, "max_template_bytes",
                        json_integer((json_int_t)d->cfg.max_template_bytes));
    return o;
}

static json_t *make_header(tkd *d, const char *base, uint64_t id)
{
    char hex[24], now[32];
    snprintf(hex, sizeof hex, "%016" PRIx64, id);
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *h = json_object();
    json_object_set_new(h, "format", json_string("tickd-journal"));
    json_object_set_new(h, "version", json_integer(TKD_JOURNAL_VERSION));
    json_object_set_new(h, "id", json_string(hex));
    json_object_set_new(h, "base", json_string(base));
    json_object_set_new(h, "snapshot", json_string(d->journal_base ? d->journal_base : ""));
    /* Where the world.load requests it holds found their files. */
    char dir[PATH_MAX];
    if (tkd_snapshot_dir(d, dir, sizeof dir) == 0)
        json_object_set_new(h, "snapshot_dir", json_string(dir));
    json_object_set_new(h, "frame", json_integer((json_int_t)tk_world_frames_done(d->world)));
    json_t *lv = json_array();
    for (size_t i = 0; i < tk_level_count(d->world); i++)
        json_array_append_new(lv, json_string(tk_level_name(d->world, tk_level_at(d->world, i))));
    json_object_set_new(h, "levels", lv);
    json_object_set_new(h, "time_dilation", json_real(tk_world_time_dilation(d->world)));
    json_object_set_new(h, "fixed_dt", json_real(d->cfg.fixed_dt));
    json_object_set_new(h, "limits", limits_json(d));
    json_object_set_new(h, "created", json_string(now));
    return h;
}

static bool in_frame(tkd *d)
{
    tk_world_time t;
    tk_world_get_time(d->world, &t);
    return t.in_frame;
}

int tkd_rec_save_begin(tkd *d, const char *path, char *err, size_t errlen)
{
    if (!d->journal || !d->journal_base || strcmp(path, d->journal_base) != 0)
        return 0;
    if (in_frame(d)) {
        snprintf(err, errlen, "a snapshot of the journal's base is taken between frames only");
        return -1;
    }
    uint64_t id = tkd_journal_new_id();
    json_t *h = make_header(d, "snapshot", id);
    int rc = tkd_journal_rewrite_begin(d->journal, h, err, errlen);
    json_decref(h);
    if (rc)
        return -1;
    d->snap_journal_id = id;
    d->rewrite_id = id;
    return 1;
}

int tkd_rec_save_await(const tkd *d, uint64_t id, char *err, size_t errlen)
{
    if (!id)
        return 0;
    return tkd_journal_await_header(d->cfg.journal_path, id, 10000, err, errlen);
}

void tkd_rec_save_end(tkd *d, uint64_t id, bool ok)
{
    if (!id || !d->journal || id != d->rewrite_id)
        return;
    if (!ok) {
        /* A save child that died after it renamed the snapshot into place
         * (before it could say so): the snapshot on the disk decides. */
        bool exists;
        if (tkd_snapshot_peek_journal_id(d->journal_base, &exists) == id) {
            tk_log_warn("journal: %s holds the new snapshot although its save reported a "
                        "failure: the new journal goes with it",
                        d->journal_base);
            ok = true;
        }
    }
    tkd_journal_rewrite_end(d->journal, ok);
    d->rewrite_id = 0;
    if (ok)
        tk_log_info("journal: %s starts afresh on the snapshot %s", tkd_journal_path(d->journal),
                    d->journal_base);
}

void tkd_rec_shutdown(tkd *d)
{
    if (!d->journal)
        return;
    tkd_journal_end(d->journal);
    char err[320];
    if (tkd_journal_sync(d->journal, err, sizeof err) != 0)
        tk_log_error("journal: %s: replies still held are sent anyway", err);
    if (d->srv)
        tkd_server_release(d->srv, UINT64_MAX);
}

void tkd_rec_fini(tkd *d)
{
    if (d->journal_ev) {
        event_free(d->journal_ev);
        d->journal_ev = NULL;
    }
    tkd_journal_close(d->journal);
    d->journal = NULL;
    free(d->journal_base);
    d->journal_base = NULL;
}

/* ---- the replayer --------------------------------------------------------------------------- */

typedef struct step_waiter {
    struct step_waiter *next;
    tkd_call *call;
    uint64_t at;               /* answered once `frames` reaches this       */
} step_waiter;

struct tkd_replayer {
    char *path;                /* the journal                               */
    uint8_t *map;              /* its bytes (mapped read-only)              */
    size_t size;
    uint64_t off;              /* the next record                           */
    uint64_t end;              /* where the last good record ends           */
    json_t *header;
    uint64_t id;
    /* The boundary gathered for the next frame (tkd_replay_wait). */
    tkd_jrec *pend;
    size_t npend, cap;
    bool gathered, have_frame;
    uint64_t frame_no, frame_dt, frame_off;
    /* What it did. */
    uint64_t frames, first_frame, requests, steps, hashes, configs;
    uint64_t mismatches, first_bad_frame;
    char first_bad[320];
    bool strict;               /* tickd --replay: stop at the first mismatch */
    bool fatal;                /* a record that does not fit: stop          */
    char fatal_msg[400];
    bool ended;                /* the end record (a graceful shutdown)      */
    uint64_t progress_ns;      /* recovery: when to tell systemd next, 0: never */
    /* tickd --replay serving at a stop. */
    uint64_t owed;             /* frames world.step asked for, not yet run  */
    step_waiter *waiters;
};

static void replayer_free(tkd_replayer *R)
{
    if (!R)
        return;
    if (R->map && R->size)
        munmap(R->map, R->size);
    json_decref(R->header);
    tk_free(R->pend);
    free(R->path);
    while (R->waiters) {
        step_waiter *w = R->waiters;
        R->waiters = w->next;
        tkd_call_error(w->call, -32004, NULL, "shutting down before world.step completed");
        tk_free(w);
    }
    tk_free(R);
}

/* Check one record's payload (pass 1): 0, or -1 with why. */
static int check_record(const tkd_jrec *r, char *why, size_t len)
{
    uint64_t a, b;
    uint32_t n;
    uint8_t h[16];
    json_t *o = NULL;
    switch (r->type) {
    case TKD_JR_REQUEST: {
        tkd_jrequest q;
        if (tkd_jdecode_request(r, &q) == 0)
            return 0;
        snprintf(why, len, "a request record that does not decode");
        return -1;
    }
    case TKD_JR_FRAME:
        if (tkd_jdecode_frame(r, &a, &b) == 0)
            return 0;
        break;
    case TKD_JR_STEP:
        if (tkd_jdecode_step(r, &a, &n) == 0)
            return 0;
        break;
    case TKD_JR_CANCEL:
        if (tkd_jdecode_u64(r, &a) == 0)
            return 0;
        break;
    case TKD_JR_CONFIG:
        if (tkd_jdecode_config(r, &a, &o) == 0) {
            json_decref(o);
            return 0;
        }
        break;
    case TKD_JR_HASH:
        if (tkd_jdecode_hash(r, &a, h) == 0)
            return 0;
        break;
    case TKD_JR_END:
        if (r->len == 0)
            return 0;
        break;
    case TKD_JR_HEADER:
        snprintf(why, len, "a second header");
        return -1;
    }
    snprintf(why, len, "a '%c' record of %u bytes that does not decode", r->type, r->len);
    return -1;
}

/*
 * Map the journal and check it whole: the header, every record's frame,
 * checksum and payload.  A torn tail is dropped (warned, naming the
 * offset); a bad record with data after it is an error naming the file and
 * the offset, or, with `truncate`, where the journal is cut (warned).
 * 0 (R filled), or -1 with err.
 */
static int replayer_open(const char *path, bool truncate, tkd_replayer **out, char *err,
                         size_t errlen)
{
    tkd_replayer *R = tk_calloc(1, sizeof *R);
    R->path = strdup(path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot open the journal %s: %s", path,
                 fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        replayer_free(R);
        return -1;
    }
    R->size = (size_t)st.st_size;
    if (R->size) {
        R->map = mmap(NULL, R->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (R->map == MAP_FAILED) {
            R->map = NULL;
            snprintf(err, errlen, "cannot read the journal %s: %s", path, strerror(errno));
            close(fd);
            replayer_free(R);
            return -1;
        }
    }
    close(fd);
    uint64_t off = 0;
    tkd_jrec rec;
    char why[200];
    tkd_jnext k = tkd_journal_next(R->map, R->size, &off, &rec, why, sizeof why);
    if (k != TKD_JNEXT_RECORD) {
        snprintf(err, errlen, "%s: offset 0: %s", path,
                 k == TKD_JNEXT_END ? "empty: no journal header" : why);
        replayer_free(R);
        return -1;
    }
    R->header = tkd_jdecode_header(&rec, &R->id, why, sizeof why);
    if (!R->header) {
        snprintf(err, errlen, "%s: offset 0: %s", path, why);
        replayer_free(R);
        return -1;
    }
    R->off = off;
    for (;;) {
        uint64_t at = off;
        k = tkd_journal_next(R->map, R->size, &off, &rec, why, sizeof why);
        if (k == TKD_JNEXT_RECORD && check_record(&rec, why, sizeof why) != 0) {
            off = at;
            k = TKD_JNEXT_CORRUPT;
        }
        if (k == TKD_JNEXT_RECORD)
            continue;
        R->end = off;
        if (k == TKD_JNEXT_TORN) {
            tk_log_warn("journal %s: the last record, at offset %" PRIu64 ", is incomplete (%s): "
                        "dropped with the %zu bytes that follow (a crash while it was written)",
                        path, off, why, R->size - (size_t)off);
        } else if (k == TKD_JNEXT_CORRUPT) {
            if (!truncate) {
                snprintf(err, errlen,
                         "%s: offset %" PRIu64 ": %s, and %zu bytes follow it: the journal is "
                         "corrupt before its end (tickd --journal-truncate-corrupt cuts it "
                         "there, losing what follows)",
                         path, off, why, R->size - (size_t)off);
                replayer_free(R);
                return -1;
            }
            tk_log_warn("journal %s: offset %" PRIu64 ": %s: cut there "
                        "(--journal-truncate-corrupt), %zu bytes dropped",
                        path, off, why, R->size - (size_t)off);
        }
        break;
    }
    *out = R;
    return 0;
}

/* The records up to the next frame record (not applied yet). */
static void gather(tkd_replayer *R)
{
    R->npend = 0;
    R->have_frame = false;
    R->gathered = true;
    tkd_jrec rec;
    while (R->off < R->end &&
           tkd_journal_next(R->map, (size_t)R->end, &R->off, &rec, NULL, 0) == TKD_JNEXT_RECORD) {
        R->ended = rec.type == TKD_JR_END; /* the last record says how it ended */
        if (rec.type == TKD_JR_FRAME) {
            tkd_jdecode_frame(&rec, &R->frame_no, &R->frame_dt);
            R->frame_off = rec.off;
            R->have_frame = true;
            return;
        }
        if (R->npend == R->cap) {
            R->cap = R->cap ? R->cap * 2 : 64;
            R->pend = tk_realloc(R->pend, R->cap * sizeof *R->pend);
        }
        R->pend[R->npend++] = rec;
    }
}

static void replay_fatal(tkd_replayer *R, const tkd_jrec *rec, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void replay_fatal(tkd_replayer *R, const tkd_jrec *rec, const char *fmt, ...)
{
    if (R->fatal)
        return;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    R->fatal = true;
    snprintf(R->fatal_msg, sizeof R->fatal_msg, "%s: offset %" PRIu64 ": %s", R->path,
             rec ? rec->off : R->off, msg);
}

static void apply_config(tkd *d, const json_t *o)
{
    json_t *v;
    if ((v = json_object_get(o, "time_dilation")) && json_is_number(v))
        tk_world_set_time_dilation(d->world, json_number_value(v), NULL);
    if ((v = json_object_get(o, "max_entities")) && json_is_integer(v))
        tks_set_max_entities(d->sim, (uint64_t)json_integer_value(v));
    if ((v = json_object_get(o, "max_tick_functions")) && json_is_integer(v))
        tks_set_max_tick_functions(d->sim, (uint64_t)json_integer_value(v));
    if ((v = json_object_get(o, "max_template_bytes")) && json_is_integer(v))
        tks_set_max_template_bytes(d->sim, (uint64_t)json_integer_value(v));
}

static void check_hash(tkd *d, tkd_replayer *R, const tkd_jrec *rec)
{
    uint64_t frame;
    uint8_t want[TKD_HASH_BYTES], got[TKD_HASH_BYTES];
    tkd_jdecode_hash(rec, &frame, want);
    tkd_world_hash(d, got);
    R->hashes++;
    if (!memcmp(want, got, sizeof want))
        return;
    char hw[TKD_HASH_HEX], hg[TKD_HASH_HEX];
    tkd_hash_hex(want, hw);
    tkd_hash_hex(got, hg);
    if (!R->mismatches++) {
        R->first_bad_frame = frame;
        snprintf(R->first_bad, sizeof R->first_bad,
                 "frame %" PRIu64 ": the world hash is %s, the journal recorded %s (%s, offset "
                 "%" PRIu64 ")",
                 frame, hg, hw, R->path, rec->off);
    }
    if (R->strict)
        R->fatal = true, snprintf(R->fatal_msg, sizeof R->fatal_msg, "%s", R->first_bad);
    else
        tk_log_error("journal: replayed world differs from the recorded one at frame %" PRIu64
                     " (hash %s, recorded %s): see README, journal, what a replay cannot "
                     "reproduce",
                     frame, hg, hw);
}

/* Apply the gathered records (in the request hooks: as they ran). */
static void apply_pending(tkd *d)
{
    tkd_replayer *R = d->replay;
    for (size_t i = 0; i < R->npend && !R->fatal; i++) {
        const tkd_jrec *rec = &R->pend[i];
        switch (rec->type) {
        case TKD_JR_REQUEST: {
            tkd_jrequest q;
            tkd_jdecode_request(rec, &q);
            json_t *params = NULL;
            if (q.params_len) {
                params = json_loadb(q.params, q.params_len, JSON_DECODE_ANY, NULL);
                if (!params) {
                    replay_fatal(R, rec, "the params of %s are not JSON", q.method);
                    break;
                }
            }
            d->replay_req = true;
            tkd_exec(d, NULL, q.method, params);
            d->replay_req = false;
            json_decref(params);
            R->requests++;
            break;
        }
        case TKD_JR_STEP: {
            uint64_t b;
            uint32_t n;
            tkd_jdecode_step(rec, &b, &n);
            for (uint32_t k = 0; k < n && !R->fatal; k++) {
                if (!tkd_jobs_replay_step(d))
                    replay_fatal(R, rec, "a slice of a request in slices, but none is in progress");
                R->steps++;
            }
            break;
        }
        case TKD_JR_CANCEL:
            if (!tkd_jobs_replay_cancel(d))
                replay_fatal(R, rec, "a request in slices undone, but none is in progress");
            break;
        case TKD_JR_CONFIG: {
            uint64_t b;
            json_t *o = NULL;
            tkd_jdecode_config(rec, &b, &o);
            apply_config(d, o);
            json_decref(o);
            R->configs++;
            break;
        }
        case TKD_JR_HASH:
            check_hash(d, R, rec);
            break;
        case TKD_JR_END: /* a graceful shutdown (gather notes whether it is the last) */
            break;
        }
    }
    R->npend = 0;
    R->gathered = false;
}

static void apply_pending_cb(void *ud) { apply_pending(ud); }

/* The records before the next frame record, applied as they ran (in the
 * request hooks: tk_engine_run_deferred), then the frame number checked:
 * the frame about to run must be the one recorded (a world.load among the
 * records sets the counter). */
static void apply_boundary(void *ud)
{
    tkd *d = ud;
    tkd_replayer *R = d->replay;
    bool frame = R->have_frame;
    uint64_t want = R->frame_no, at_off = R->frame_off;
    apply_pending(d);
    if (frame && tk_world_frame(d->world) != want) {
        tkd_jrec at = {.off = at_off};
        replay_fatal(R, &at, "frame %" PRIu64 " is recorded next, but the world is at frame %" PRIu64,
                     want, tk_world_frame(d->world));
    }
}

void tkd_replay_post_frame(tkd *d, const tk_frame_info *f)
{
    tkd_replayer *R = d->replay;
    if (!R->frames++)
        R->first_frame = f->frame;
    if (R->owed)
        R->owed--;
    for (step_waiter **pp = &R->waiters; *pp;) {
        step_waiter *w = *pp;
        if (R->frames >= w->at) {
            json_t *o = json_object();
            json_object_set_new(o, "frame", json_integer((json_int_t)f->frame + 1));
            tkd_call_reply(w->call, o);
            *pp = w->next;
            tk_free(w);
        } else {
            pp = &w->next;
        }
    }
}

void tkd_replay_step_request(tkd *d, tkd_call *call, uint64_t n)
{
    tkd_replayer *R = d->replay;
    step_waiter *w = tk_calloc(1, sizeof *w);
    w->call = call;
    R->owed += n;
    w->at = R->frames + R->owed;
    w->next = R->waiters;
    R->waiters = w;
}

/* Run the journal's frames until it ends, a fatal record, or (tool) the
 * world completed `until` frames. */
/* Replay one recorded frame: its boundary's records, then the frame with
 * its dt.  False at the end of the journal (its last records applied) or
 * after a fatal record. */
static bool replay_frame(tkd *d)
{
    tkd_replayer *R = d->replay;
    if (!R->gathered)
        gather(R);
    if (!R->have_frame) {
        /* Records after the last frame: the requests of the boundary the
         * run stopped at. */
        if (R->npend)
            tk_engine_run_deferred(d->engine, apply_pending_cb, d);
        return false;
    }
    tk_engine_run_deferred(d->engine, apply_boundary, d);
    if (R->fatal)
        return false;
    tk_engine_set_next_dt(d->engine, R->frame_dt);
    tk_engine_frame(d->engine);
    return !R->fatal;
}

/* A recovery tells systemd where it is every second, and that it goes on:
 * EXTEND_TIMEOUT_USEC keeps a long replay from reaching TimeoutStartSec
 * (each message allows 10 s more, only ever extending the limit). */
static void recovery_progress(tkd *d, tkd_replayer *R)
{
    uint64_t now = tk_clock_now_ns();
    if (!R->progress_ns || now < R->progress_ns)
        return;
    R->progress_ns = now + 1000000000ull;
    char msg[600];
    snprintf(msg, sizeof msg,
             "EXTEND_TIMEOUT_USEC=10000000\nSTATUS=recovering: replaying the journal %s, "
             "offset %" PRIu64 " of %" PRIu64 ", frame %" PRIu64,
             R->path, R->off, R->end, tk_world_frame(d->world));
    tkd_notify_send(&d->notify, msg, false);
}

static void run_frames(tkd *d, bool has_until, uint64_t until, uint64_t max_frames)
{
    tkd_replayer *R = d->replay;
    tk_engine_set_unpaced(d->engine, true);
    for (uint64_t n = 0; !R->fatal && !d->shutdown && (!max_frames || n < max_frames); n++) {
        recovery_progress(d, R);
        if (has_until && tk_world_frame(d->world) >= until)
            break;
        if (!replay_frame(d))
            break;
    }
    tk_engine_set_unpaced(d->engine, false);
}

/* ---- the base ------------------------------------------------------------------------------ */

/* The world the journal starts from: its snapshot (whose id must be the
 * journal's), or the levels and dilation the header names; then the
 * limits it ran with.  `snap`: where the snapshot is (NULL: the header's). */
static int load_base(tkd *d, tkd_replayer *R, const char *snap, char *err, size_t errlen)
{
    const char *base = json_string_value(json_object_get(R->header, "base"));
    if (base && !strcmp(base, "snapshot")) {
        if (!snap)
            snap = json_string_value(json_object_get(R->header, "snapshot"));
        if (!snap || !*snap) {
            snprintf(err, errlen, "%s: the header names no snapshot", R->path);
            return -1;
        }
        uint64_t sid = 0;
        json_t *info = NULL;
        char e2[TKD_ERR_MAX];
        if (tkd_snapshot_load_file(d, snap, &info, &sid, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "the snapshot the journal %s continues: %s", R->path, e2);
            return -1;
        }
        json_decref(info);
        if (sid != R->id) {
            snprintf(err, errlen,
                     "the journal %s continues the snapshot of id %016" PRIx64 ", but %s holds "
                     "%s%016" PRIx64,
                     R->path, R->id, snap, sid ? "id " : "no id ", sid);
            return -1;
        }
    } else if (base && !strcmp(base, "empty")) {
        /* The world the config made when the journal started. */
        char serr[TKS_ERR_MAX];
        for (size_t i = tk_level_count(d->world); i-- > 0;) {
            const char *n = tk_level_name(d->world, tk_level_at(d->world, i));
            if (strcmp(n, "persistent") != 0) {
                char name[TK_LEVEL_NAME_MAX + 1];
                snprintf(name, sizeof name, "%s", n);
                tks_level_remove(d->sim, name, serr);
            }
        }
        json_t *lv = json_object_get(R->header, "levels");
        for (size_t i = 0; i < json_array_size(lv); i++) {
            const char *n = json_string_value(json_array_get(lv, i));
            if (n && strcmp(n, "persistent") != 0 && tks_level_add(d->sim, n, serr) != 0) {
                snprintf(err, errlen, "%s: header: level '%s': %s", R->path, n, serr);
                return -1;
            }
        }
        json_t *td = json_object_get(R->header, "time_dilation");
        if (json_is_number(td))
            tk_world_set_time_dilation(d->world, json_number_value(td), NULL);
    } else {
        snprintf(err, errlen, "%s: the header's base is neither a snapshot nor empty", R->path);
        return -1;
    }
    json_t *fr = json_object_get(R->header, "frame");
    if (json_is_integer(fr) && (uint64_t)json_integer_value(fr) != tk_world_frame(d->world)) {
        snprintf(err, errlen,
                 "%s: the journal starts at frame %lld, its base is at frame %" PRIu64, R->path,
                 (long long)json_integer_value(fr), tk_world_frame(d->world));
        return -1;
    }
    json_t *lim = json_object_get(R->header, "limits");
    if (json_is_object(lim))
        apply_config(d, lim);
    return 0;
}

/* ---- recovery ---------------------------------------------------------------------------------- */

/* The header of the journal at `path`: NULL if there is no such file
 * (*exists false) or it has no readable header (*why). */
static json_t *read_header(const char *path, uint64_t *id, bool *exists, char *why, size_t len)
{
    *exists = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(why, len, "%s", strerror(errno));
        return NULL;
    }
    *exists = true;
    uint8_t head[TKD_JREC_HEAD];
    json_t *h = NULL;
    if (pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head) {
        uint32_t n = (uint32_t)head[0] | (uint32_t)head[1] << 8 | (uint32_t)head[2] << 16 |
                     (uint32_t)head[3] << 24;
        if (n <= (1u << 20)) {
            uint8_t *b = tk_malloc(TKD_JREC_HEAD + n);
            ssize_t r = pread(fd, b, TKD_JREC_HEAD + n, 0);
            uint64_t off = 0;
            tkd_jrec rec;
            if (r == (ssize_t)(TKD_JREC_HEAD + n) &&
                tkd_journal_next(b, (size_t)r, &off, &rec, why, len) == TKD_JNEXT_RECORD)
                h = tkd_jdecode_header(&rec, id, why, len);
            else if (r != (ssize_t)(TKD_JREC_HEAD + n))
                snprintf(why, len, "the header is cut short");
            tk_free(b);
        } else {
            snprintf(why, len, "no journal header at offset 0");
        }
    } else {
        snprintf(why, len, "no journal header at offset 0 (the file is too short)");
    }
    close(fd);
    return h;
}

static bool base_is(const json_t *h, const char *kind)
{
    const char *b = json_string_value(json_object_get(h, "base"));
    return b && !strcmp(b, kind);
}

/* Replay `jpath` on its base into d; 0, or -1 with err.  *end gets where
 * its last good record ends. */
static int recover(tkd *d, const char *jpath, uint64_t *end, char *err, size_t errlen)
{
    tkd_replayer *R = NULL;
    if (replayer_open(jpath, d->journal_truncate_corrupt, &R, err, errlen) != 0)
        return -1;
    tk_log_info("journal: recovering: replaying %s (%" PRIu64 " bytes) on %s", jpath, R->end,
                base_is(R->header, "snapshot") ? d->journal_base : "the empty world");
    R->progress_ns = 1; /* now, then every second */
    recovery_progress(d, R);
    if (load_base(d, R, base_is(R->header, "snapshot") ? d->journal_base : NULL, err, errlen)) {
        replayer_free(R);
        return -1;
    }
    uint64_t t0 = tk_clock_now_ns(), f0 = tk_world_frame(d->world);
    d->replay = R;
    run_frames(d, false, 0, 0);
    d->replay = NULL;
    if (R->fatal) {
        snprintf(err, errlen, "%s", R->fatal_msg);
        replayer_free(R);
        return -1;
    }
    uint8_t h[TKD_HASH_BYTES];
    char hex[TKD_HASH_HEX];
    tkd_world_hash(d, h);
    tkd_hash_hex(h, hex);
    tk_log_info("journal: %s replayed on %s: %" PRIu64 " frames (%" PRIu64 " to %" PRIu64
                "), %" PRIu64 " requests, %" PRIu64 " slices, %" PRIu64 " hashes checked "
                "(%" PRIu64 " differed) in %.2f s; %s; world hash %s at frame %" PRIu64,
                jpath, base_is(R->header, "snapshot") ? d->journal_base : "the empty world",
                R->frames, f0, tk_world_frame(d->world), R->requests, R->steps, R->hashes,
                R->mismatches, (double)(tk_clock_now_ns() - t0) / 1e9,
                R->ended ? "it ended with a graceful shutdown" : "it ended without one (a crash)",
                hex, tk_world_frame(d->world));
    if (d->replay_failures)
        tk_log_error("journal: %" PRIu64 " recorded requests failed when replayed (logged above): "
                     "the world may differ from the one that ran",
                     d->replay_failures);
    *end = R->end;
    replayer_free(R);
    return 0;
}

/* The limits of the config, recorded when they differ from the replayed
 * ones (the journal's next replay follows them from here). */
static void current_limits(tkd *d)
{
    tks_set_max_entities(d->sim, d->cfg.max_entities);
    tks_set_max_tick_functions(d->sim, d->cfg.max_tick_functions);
    tks_set_max_template_bytes(d->sim, d->cfg.max_template_bytes);
    json_t *o = limits_json(d);
    tkd_journal_config(d->journal, tk_world_frame(d->world), o);
    json_decref(o);
}

int tkd_rec_start(tkd *d, char *err, size_t errlen)
{
    const char *J = d->cfg.journal_path;
    char base[PATH_MAX], e2[TKD_ERR_MAX];
    if (tkd_snapshot_resolve(d, NULL, base, sizeof base, e2, sizeof e2) != 0) {
        snprintf(err, errlen, "[journal] path: its base, [snapshot] path: %s", e2);
        return -1;
    }
    d->journal_base = strdup(base);
    char N[PATH_MAX];
    snprintf(N, sizeof N, "%s.new", J);
    char whyJ[200] = "", whyN[200] = "";
    uint64_t idJ = 0, idN = 0;
    bool hasJ, hasN, hasS;
    json_t *hJ = read_header(J, &idJ, &hasJ, whyJ, sizeof whyJ);
    json_t *hN = read_header(N, &idN, &hasN, whyN, sizeof whyN);
    uint64_t sid = tkd_snapshot_peek_journal_id(base, &hasS);
    const char *use = NULL;
    if (hN && base_is(hN, "snapshot") && idN == sid && !(hJ && base_is(hJ, "snapshot") && idJ == sid)) {
        /* A rewrite whose snapshot was renamed into place before the crash:
         * the new pair is complete, finish the switch. */
        if (rename(N, J) != 0) {
            snprintf(err, errlen, "cannot rename %s to %s: %s", N, J, strerror(errno));
            goto fail;
        }
        tk_log_warn("journal: %s goes with %s (a snapshot's rewrite that a crash interrupted): "
                    "it replaces %s",
                    N, base, J);
        json_decref(hJ);
        hJ = hN;
        hN = NULL;
        idJ = idN;
        hasJ = true;
        hasN = false;
        use = J;
    } else if (hJ && ((base_is(hJ, "snapshot") && idJ == sid) || base_is(hJ, "empty"))) {
        use = J;
    } else if (hJ) {
        if (base_is(hJ, "snapshot"))
            snprintf(err, errlen,
                     "%s continues the snapshot of id %016" PRIx64 ", but %s %s: refusing to "
                     "start (restore that snapshot, or move the journal away to start from the "
                     "snapshot alone, losing what the journal holds)",
                     J, idJ, base, !hasS ? "does not exist" : sid ? "holds another id" : "has no id");
        else
            snprintf(err, errlen, "%s: a journal of an unknown base", J);
        goto fail;
    } else if (hasJ) {
        if (!d->journal_truncate_corrupt) {
            snprintf(err, errlen,
                     "%s: offset 0: %s: refusing to start (tickd --journal-truncate-corrupt "
                     "starts without it, losing what it holds)",
                     J, whyJ);
            goto fail;
        }
        tk_log_warn("journal: %s: offset 0: %s: removed (--journal-truncate-corrupt)", J, whyJ);
        unlink(J);
    }
    if (hasN && use != NULL && strcmp(use, N) != 0) {
        tk_log_warn("journal: removed %s, the new journal of a snapshot that did not complete", N);
        unlink(N);
    } else if (hasN && !use) {
        tk_log_warn("journal: removed %s, the new journal of a snapshot that did not complete", N);
        unlink(N);
    }
    if (use) {
        uint64_t end = 0;
        if (recover(d, use, &end, err, errlen) != 0)
            goto fail;
        d->journal = tkd_journal_open(J, d->cfg.journal_fsync, end, NULL, err, errlen);
        if (!d->journal)
            goto fail;
        current_limits(d);
    } else {
        /* No journal: the world as the config makes it, then a journal on it. */
        bool loaded = false;
        if (d->cfg.load_on_start && hasS) {
            json_t *info = NULL;
            if (tkd_snapshot_load_file(d, base, &info, &sid, e2, sizeof e2) != 0) {
                snprintf(err, errlen, "[snapshot] load_on_start: %s", e2);
                goto fail;
            }
            json_decref(info);
            loaded = true;
            tk_log_info("snapshot: loaded %s", base);
        }
        uint64_t id = tkd_journal_new_id();
        if (loaded && sid) {
            id = sid; /* the file holds its id already: it is the base as it is */
        } else if (loaded) {
            /* The base must carry the journal's id: saved again with it
             * first (a crash before the journal exists leaves a snapshot
             * that loads as before). */
            d->snap_journal_id = id;
            json_t *info = NULL;
            int rc = tkd_snapshot_save(d, NULL, &info, e2, sizeof e2);
            d->snap_journal_id = 0;
            json_decref(info);
            if (rc) {
                snprintf(err, errlen, "journal: the snapshot it starts from: %s", e2);
                goto fail;
            }
        }
        json_t *h = make_header(d, loaded ? "snapshot" : "empty", id);
        d->journal = tkd_journal_open(J, d->cfg.journal_fsync, 0, h, err, errlen);
        json_decref(h);
        if (!d->journal)
            goto fail;
        tk_log_info("journal: %s started on %s", J, loaded ? base : "the world of the config");
    }
    json_decref(hJ);
    json_decref(hN);
    return 0;
fail:
    json_decref(hJ);
    json_decref(hN);
    return -1;
}

/* ---- tickd --replay ---------------------------------------------------------------------------- */

int tkd_replay_open_tool(tkd *d, char *err, size_t errlen)
{
    const tkd_replay_opts *o = d->replay_opts;
    tkd_replayer *R = NULL;
    if (replayer_open(o->journal, false, &R, err, errlen) != 0)
        return -1;
    R->strict = true;
    /* world.load requests find their files where they did. */
    const char *sd = json_string_value(json_object_get(R->header, "snapshot_dir"));
    if (sd && *sd) {
        tk_free(d->cfg.snapshot_dir);
        d->cfg.snapshot_dir = tk_strdup(sd);
    }
    if (load_base(d, R, NULL, err, errlen) != 0) {
        /* A crash between a rewrite's snapshot and its new journal taking
         * the journal's place leaves the pair (snapshot, JOURNAL.new), which
         * the next start completes: say so. */
        const char *snap = json_string_value(json_object_get(R->header, "snapshot"));
        char N[PATH_MAX], why[200];
        snprintf(N, sizeof N, "%s.new", o->journal);
        uint64_t idN = 0;
        bool hasN, hasS = false;
        json_t *hN = read_header(N, &idN, &hasN, why, sizeof why);
        uint64_t sid = snap ? tkd_snapshot_peek_journal_id(snap, &hasS) : 0;
        if (hN && base_is(hN, "snapshot") && sid && idN == sid) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n,
                     "; %s continues that snapshot (a snapshot's rewrite that a crash "
                     "interrupted; the next start completes it): replay that journal",
                     N);
        }
        json_decref(hN);
        replayer_free(R);
        return -1;
    }
    d->replay = R;
    return 0;
}

static void print_summary(tkd *d, FILE *out)
{
    tkd_replayer *R = d->replay;
    uint8_t h[TKD_HASH_BYTES];
    char hex[TKD_HASH_HEX];
    tkd_world_hash(d, h);
    tkd_hash_hex(h, hex);
    fprintf(out,
            "tickd: replayed %s: %" PRIu64 " frames, %" PRIu64 " requests, %" PRIu64
            " slices, %" PRIu64 " hashes checked\n",
            R->path, R->frames, R->requests, R->steps, R->hashes);
    fprintf(out, "tickd: frame %" PRIu64 ": world hash %s%s\n", tk_world_frame(d->world), hex,
            R->gathered && R->have_frame ? "" : R->ended ? " (the end of the journal: a graceful shutdown)"
                                                         : " (the end of the journal)");
    fflush(out);
}

int tkd_replay_main(tkd *d)
{
    const tkd_replay_opts *o = d->replay_opts;
    tkd_replayer *R = d->replay;
    uint64_t until = o->step ? tk_world_frame(d->world) : o->until_frame;
    bool has_until = o->step || o->has_until;
    run_frames(d, has_until, until, 0);
    int rc = 0;
    if (R->fatal) {
        fprintf(stderr, "tickd: replay: %s\n", R->fatal_msg);
        rc = 1;
    } else if (d->replay_failures) {
        fprintf(stderr,
                "tickd: replay: %" PRIu64 " recorded requests failed when replayed (see the log): "
                "the replay does not follow the run\n",
                d->replay_failures);
        rc = 1;
    } else if (has_until && tk_world_frame(d->world) < until) {
        fprintf(stderr, "tickd: replay: the journal ends at frame %" PRIu64 ", before frame %" PRIu64 "\n",
                tk_world_frame(d->world), until);
        rc = 1;
    }
    if (!R->gathered)
        gather(R);
    print_summary(d, stdout);
    if (rc || !o->serve || d->shutdown)
        return rc;
    tk_log_info("replay: at frame %" PRIu64 ", serving %s (world.step replays the next recorded "
                "frames; SIGTERM ends)",
                tk_world_frame(d->world), d->cfg.socket);
    while (!d->shutdown && !R->fatal) {
        if (!R->owed) {
            tkd_serve_once(d, 200);
            continue;
        }
        tk_engine_set_unpaced(d->engine, true);
        if (!replay_frame(d) && !R->fatal) {
            /* The journal ends here: what was asked for cannot run. */
            while (R->waiters) {
                step_waiter *w = R->waiters;
                R->waiters = w->next;
                tkd_call_error(w->call, -32002, NULL, "the journal ends at frame %" PRIu64,
                               tk_world_frame(d->world));
                tk_free(w);
            }
            R->owed = 0;
            continue;
        }
        tkd_serve_once(d, 0);
    }
    if (R->fatal) {
        fprintf(stderr, "tickd: replay: %s\n", R->fatal_msg);
        return 1;
    }
    return 0;
}

void tkd_replay_fini(tkd *d)
{
    replayer_free(d->replay);
    d->replay = NULL;
}

int tkd_replay_file(tkd *d, const char *journal, uint64_t max_frames, char *err, size_t errlen)
{
    tkd_replayer *R = NULL;
    if (replayer_open(journal, false, &R, err, errlen) != 0)
        return -1;
    int rc = load_base(d, R, NULL, err, errlen);
    if (rc == 0) {
        d->replay = R;
        run_frames(d, false, 0, max_frames);
        d->replay = NULL;
        if (R->fatal) {
            snprintf(err, errlen, "%s", R->fatal_msg);
            rc = -1;
        }
    }
    replayer_free(R);
    return rc;
}
