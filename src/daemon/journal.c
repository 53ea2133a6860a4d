/*
 * journal.c - the journal's file format, its reader and its writer thread
 * (the design is in journal.h).
 *
 *   format    records framed by length and CRC-32C (Castagnoli, the
 *             checksum of iSCSI and ext4 metadata), table-driven
 *   reader    tkd_journal_next: a torn tail (cut short or garbled, nothing
 *             after it, or only zeros: a crash or a power loss mid-write)
 *             is told apart from corruption with data after it
 *   writer    the frame thread appends to its own buffer; commits hand the
 *             buffer to the journal's thread through a mutex-guarded queue;
 *             that thread writes each batch with write(2) to the journal
 *             (and to the new one while a rewrite runs), syncs by the
 *             policy, publishes how far replies may go and wakes the frame
 *             loop through an eventfd
 *
 * What it deliberately does not do: know the daemon (records come in as
 * bytes), read the journal back into a world (replay.c), or block the frame
 * thread on the disk (only tkd_journal_sync, at shutdown, waits).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "journal.h"
#include "tickd/alloc.h"
#include "tickd/clock.h"
#include "tickd/log.h"

/* ---- policies ------------------------------------------------------------------------ */

static const char *const fsync_names[] = {"always", "everysec", "no"};

const char *tkd_fsync_name(tkd_fsync p)
{
    return (unsigned)p < 3 ? fsync_names[p] : "?";
}

int tkd_fsync_parse(const char *s, tkd_fsync *out)
{
    for (unsigned i = 0; s && i < 3; i++) {
        if (!strcmp(s, fsync_names[i])) {
            *out = (tkd_fsync)i;
            return 0;
        }
    }
    return -1;
}

/* ---- CRC-32C --------------------------------------------------------------------------- */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t tkd_crc32c(uint32_t crc, const void *data, size_t n)
{
    pthread_once(&crc_once, crc_init);
    const uint8_t *p = data;
    crc = ~crc;
    /* Slicing by 8: eight table lookups per 8 bytes. */
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^
              crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
    return ~crc;
}

static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static inline void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* ---- reading ---------------------------------------------------------------------------- */

static bool known_type(uint8_t t)
{
    return t == TKD_JR_HEADER || t == TKD_JR_REQUEST || t == TKD_JR_FRAME || t == TKD_JR_STEP ||
           t == TKD_JR_CANCEL || t == TKD_JR_CONFIG || t == TKD_JR_HASH || t == TKD_JR_END;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

tkd_jnext tkd_journal_next(const uint8_t *buf, size_t size, uint64_t *off, tkd_jrec *rec,
                           char *why, size_t whylen)
{
    char dummy[8];
    if (!why) {
        why = dummy;
        whylen = sizeof dummy;
    }
    uint64_t o = *off;
    if (o >= size)
        return TKD_JNEXT_END;
    size_t left = size - (size_t)o;
    const uint8_t *p = buf + o;
    if (left < TKD_JREC_HEAD) {
        snprintf(why, whylen, "a record cut short (%zu of its %u header bytes)", left,
                 TKD_JREC_HEAD);
        return TKD_JNEXT_TORN;
    }
    uint32_t len = get32(p), crc = get32(p + 4);
    uint8_t type = p[8];
    bool rest_zero = all_zero(p, left);
    if (len > TKD_JREC_MAX) {
        snprintf(why, whylen, "a record length of %u bytes (at most %u)", len, TKD_JREC_MAX);
        return rest_zero ? TKD_JNEXT_TORN : TKD_JNEXT_CORRUPT;
    }
    if ((uint64_t)len + TKD_JREC_HEAD > left) {
        snprintf(why, whylen, "a record cut short (%zu of its %llu bytes)", left,
                 (unsigned long long)len + TKD_JREC_HEAD);
        return TKD_JNEXT_TORN;
    }
    uint32_t c = tkd_crc32c(0, p + 8, (size_t)len + 1);
    size_t end = TKD_JREC_HEAD + (size_t)len;
    if (c != crc || !known_type(type)) {
        if (c != crc)
            snprintf(why, whylen, "a record whose checksum does not match");
        else
            snprintf(why, whylen, "a record of unknown type 0x%02x", type);
        /* The last record, or only zeros after it: the tail of a write
         * that did not finish. */
        if (end == left || rest_zero || all_zero(p + end, left - end))
            return TKD_JNEXT_TORN;
        return TKD_JNEXT_CORRUPT;
    }
    rec->type = type;
    rec->p = p + TKD_JREC_HEAD;
    rec->len = len;
    rec->off = o;
    *off = o + end;
    return TKD_JNEXT_RECORD;
}

int tkd_jdecode_request(const tkd_jrec *r, tkd_jrequest *out)
{
    if (r->type != TKD_JR_REQUEST || r->len < 10)
        return -1;
    out->boundary = get64(r->p);
    const char *m = (const char *)r->p + 8;
    const void *nul = memchr(m, '\0', r->len - 8);
    if (!nul || nul == m)
        return -1;
    size_t mlen = (size_t)((const char *)nul - m);
    if (mlen > 64)
        return -1;
    for (size_t i = 0; i < mlen; i++)
        if (m[i] <= ' ' || m[i] > '~')
            return -1;
    out->method = m;
    out->params = m + mlen + 1;
    out->params_len = r->len - 8 - mlen - 1;
    return 0;
}

int tkd_jdecode_frame(const tkd_jrec *r, uint64_t *frame, uint64_t *dt_ns)
{
    if (r->type != TKD_JR_FRAME || r->len != 16)
        return -1;
    *frame = get64(r->p);
    *dt_ns = get64(r->p + 8);
    return 0;
}

int tkd_jdecode_step(const tkd_jrec *r, uint64_t *boundary, uint32_t *count)
{
    if (r->type != TKD_JR_STEP || r->len != 12)
        return -1;
    *boundary = get64(r->p);
    *count = get32(r->p + 8);
    return *count ? 0 : -1;
}

int tkd_jdecode_u64(const tkd_jrec *r, uint64_t *v)
{
    if (r->len != 8)
        return -1;
    *v = get64(r->p);
    return 0;
}

int tkd_jdecode_config(const tkd_jrec *r, uint64_t *boundary, json_t **obj)
{
    if (r->type != TKD_JR_CONFIG || r->len < 10)
        return -1;
    *boundary = get64(r->p);
    json_t *o = json_loadb((const char *)r->p + 8, r->len - 8, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return -1;
    }
    *obj = o;
    return 0;
}

int tkd_jdecode_hash(const tkd_jrec *r, uint64_t *frame, uint8_t h[16])
{
    if (r->type != TKD_JR_HASH || r->len != 24)
        return -1;
    *frame = get64(r->p);
    memcpy(h, r->p + 8, 16);
    return 0;
}

json_t *tkd_jdecode_header(const tkd_jrec *r, uint64_t *id, char *why, size_t whylen)
{
    if (r->type != TKD_JR_HEADER) {
        snprintf(why, whylen, "the first record is not a journal header");
        return NULL;
    }
    json_t *o = json_loadb((const char *)r->p, r->len, JSON_REJECT_DUPLICATES, NULL);
    const char *fmt = json_string_value(json_object_get(o, "format"));
    json_t *ver = json_object_get(o, "version");
    const char *hid = json_string_value(json_object_get(o, "id"));
    char *end = NULL;
    if (!json_is_object(o) || !fmt || strcmp(fmt, "tickd-journal") != 0) {
        snprintf(why, whylen, "not a tickd journal");
    } else if (!json_is_integer(ver) || json_integer_value(ver) != TKD_JOURNAL_VERSION) {
        snprintf(why, whylen, "journal version %lld (this tickd reads %d)",
                 json_is_integer(ver) ? (long long)json_integer_value(ver) : -1LL,
                 TKD_JOURNAL_VERSION);
    } else if (!hid || strlen(hid) != 16 || (*id = strtoull(hid, &end, 16), *end) || *id == 0) {
        snprintf(why, whylen, "the header's id is not 16 hex digits");
    } else {
        return o;
    }
    json_decref(o);
    return NULL;
}

/* ---- writing: records into the frame thread's buffer ----------------------------------- */

typedef enum { B_DATA, B_BEGIN, B_END_OK, B_END_FAIL } bkind;

typedef struct jbatch {
    struct jbatch *next;
    bkind kind;
    uint8_t *buf;            /* DATA: records; BEGIN: the header record     */
    size_t len;
    size_t done_main;        /* bytes of buf already written to fd          */
    size_t done_next;        /* ... to fd_next                              */
    uint64_t seq;            /* DATA: the last record's sequence number     */
    bool sync;               /* DATA: holds a change (`always` syncs)       */
    bool both;               /* DATA: goes to the new journal too           */
    int fd;                  /* BEGIN: the new journal's descriptor         */
} jbatch;

struct tkd_journal {
    char *path;              /* the journal                                 */
    char *next_path;         /* "<path>.new"                                */

    /* The frame thread's. */
    uint8_t *buf;            /* records not yet committed                   */
    size_t len, cap;
    bool buf_sync;           /* buf holds a change                          */
    uint64_t seq;            /* last record's sequence number               */
    uint64_t gate;           /* last change's                               */
    uint64_t step_boundary;  /* a STEP being coalesced (step_count > 0)     */
    uint32_t step_count;
    bool rewriting;          /* between rewrite_begin and rewrite_end       */
    uint64_t records;

    /* Shared, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* the writer waits for work                   */
    pthread_cond_t idle_cv;  /* tkd_journal_sync waits for the writer       */
    jbatch *qhead, *qtail;
    size_t qbytes;           /* bytes of DATA queued, not yet written       */
    tkd_fsync policy;
    uint64_t written;        /* every record <= written is written          */
    uint64_t synced;         /* ... and synced                              */
    bool force_sync;         /* tkd_journal_sync: sync now, whatever policy */
    bool stop;
    int err;                 /* errno of the failing write/sync, 0 = none   */
    char errmsg[256];
    uint64_t size;           /* bytes of the journal file                   */
    tkd_journal_stats st;
    uint8_t *spare;          /* a buffer the writer gave back, or NULL      */
    size_t spare_cap;

    /* The writer's. */
    int fd, fd_next;
    uint64_t wsize, wsize_next; /* bytes of each file                     */
    bool dirty;              /* written since the last sync                 */
    uint64_t last_sync_ns;

    atomic_uint_fast64_t released;
    int efd;                 /* eventfd: released moved                     */
    pthread_t th;
    bool th_started;
};

static void reserve(tkd_journal *j, size_t n)
{
    if (j->cap - j->len >= n)
        return;
    size_t cap = j->cap ? j->cap : 4096;
    while (cap - j->len < n)
        cap *= 2;
    j->buf = tk_realloc(j->buf, cap);
    j->cap = cap;
}

/* Start a record of `len` payload bytes; returns where the payload goes. */
static uint8_t *rec_begin(tkd_journal *j, uint8_t type, size_t len)
{
    reserve(j, TKD_JREC_HEAD + len);
    uint8_t *p = j->buf + j->len;
    put32(p, (uint32_t)len);
    p[8] = type;
    return p + TKD_JREC_HEAD;
}

/* Close the record started at `payload` (its checksum, the counters). */
static void rec_end(tkd_journal *j, uint8_t *payload, size_t len, bool change)
{
    uint8_t *p = payload - TKD_JREC_HEAD;
    put32(p + 4, tkd_crc32c(0, p + 8, len + 1));
    j->len += TKD_JREC_HEAD + len;
    j->seq++;
    j->records++;
    if (change) {
        j->gate = j->seq;
        j->buf_sync = true;
    }
}

static void flush_step(tkd_journal *j)
{
    if (!j->step_count)
        return;
    uint8_t *p = rec_begin(j, TKD_JR_STEP, 12);
    put64(p, j->step_boundary);
    put32(p + 8, j->step_count);
    j->step_count = 0;
    rec_end(j, p, 12, true);
}

void tkd_journal_request(tkd_journal *j, uint64_t boundary, const char *method,
                         const char *params, size_t params_len)
{
    flush_step(j);
    size_t ml = strlen(method);
    size_t len = 8 + ml + 1 + params_len;
    uint8_t *p = rec_begin(j, TKD_JR_REQUEST, len);
    put64(p, boundary);
    memcpy(p + 8, method, ml + 1);
    if (params_len)
        memcpy(p + 8 + ml + 1, params, params_len);
    rec_end(j, p, len, true);
}

void tkd_journal_frame(tkd_journal *j, uint64_t frame, uint64_t dt_ns)
{
    flush_step(j);
    uint8_t *p = rec_begin(j, TKD_JR_FRAME, 16);
    put64(p, frame);
    put64(p + 8, dt_ns);
    rec_end(j, p, 16, false);
}

void tkd_journal_step(tkd_journal *j, uint64_t boundary)
{
    if (j->step_count && (j->step_boundary != boundary || j->step_count == UINT32_MAX))
        flush_step(j);
    j->step_boundary = boundary;
    j->step_count++;
}

void tkd_journal_cancel(tkd_journal *j, uint64_t boundary)
{
    flush_step(j);
    uint8_t *p = rec_begin(j, TKD_JR_CANCEL, 8);
    put64(p, boundary);
    rec_end(j, p, 8, true);
}

void tkd_journal_config(tkd_journal *j, uint64_t boundary, const json_t *changes)
{
    flush_step(j);
    char *t = json_dumps(changes, JSON_COMPACT | JSON_REAL_PRECISION(17));
    size_t tl = t ? strlen(t) : 2;
    uint8_t *p = rec_begin(j, TKD_JR_CONFIG, 8 + tl);
    put64(p, boundary);
    memcpy(p + 8, t ? t : "{}", tl);
    free(t);
    rec_end(j, p, 8 + tl, true);
}

void tkd_journal_hash(tkd_journal *j, uint64_t frame, const uint8_t h[16])
{
    flush_step(j);
    uint8_t *p = rec_begin(j, TKD_JR_HASH, 24);
    put64(p, frame);
    memcpy(p + 8, h, 16);
    rec_end(j, p, 24, false);
}

void tkd_journal_end(tkd_journal *j)
{
    flush_step(j);
    uint8_t *p = rec_begin(j, TKD_JR_END, 0);
    rec_end(j, p, 0, true);
}

uint8_t *tkd_journal_encode(uint8_t type, const void *payload, size_t len, size_t *out_len)
{
    uint8_t *b = tk_malloc(TKD_JREC_HEAD + len);
    put32(b, (uint32_t)len);
    b[8] = type;
    if (len)
        memcpy(b + TKD_JREC_HEAD, payload, len);
    put32(b + 4, tkd_crc32c(0, b + 8, len + 1));
    *out_len = TKD_JREC_HEAD + len;
    return b;
}

/* ---- the queue ------------------------------------------------------------------------------- */

static void enqueue(tkd_journal *j, jbatch *b)
{
    b->next = NULL;
    if (j->qtail)
        j->qtail->next = b;
    else
        j->qhead = b;
    j->qtail = b;
    if (b->kind == B_DATA)
        j->qbytes += b->len;
    pthread_cond_signal(&j->cv);
}

void tkd_journal_commit(tkd_journal *j)
{
    flush_step(j);
    if (!j->len)
        return;
    jbatch *b = tk_calloc(1, sizeof *b);
    b->kind = B_DATA;
    b->buf = j->buf;
    b->len = j->len;
    b->seq = j->seq;
    b->sync = j->buf_sync;
    b->both = j->rewriting;
    pthread_mutex_lock(&j->mu);
    enqueue(j, b);
    /* A buffer the writer is done with, for the next records. */
    j->buf = j->spare;
    j->cap = j->spare ? j->spare_cap : 0;
    j->spare = NULL;
    j->spare_cap = 0;
    pthread_mutex_unlock(&j->mu);
    j->len = 0;
    j->buf_sync = false;
}

uint64_t tkd_journal_gate(const tkd_journal *j)
{
    /* A STEP still being coalesced counts: it gets the next number. */
    return j->step_count ? j->seq + 1 : j->gate;
}

uint64_t tkd_journal_released(const tkd_journal *j)
{
    return atomic_load_explicit(&((tkd_journal *)j)->released, memory_order_acquire);
}

int tkd_journal_fd(const tkd_journal *j) { return j->efd; }

void tkd_journal_ack(tkd_journal *j)
{
    uint64_t v;
    while (read(j->efd, &v, sizeof v) < 0 && errno == EINTR)
        ;
}

bool tkd_journal_backlogged(const tkd_journal *j)
{
    pthread_mutex_lock((pthread_mutex_t *)&j->mu);
    bool b = j->qbytes > TKD_JOURNAL_BACKLOG;
    pthread_mutex_unlock((pthread_mutex_t *)&j->mu);
    return b;
}

bool tkd_journal_failing(const tkd_journal *j, char *err, size_t errlen)
{
    pthread_mutex_lock((pthread_mutex_t *)&j->mu);
    bool f = j->err != 0;
    if (f && err)
        snprintf(err, errlen, "%s", j->errmsg);
    pthread_mutex_unlock((pthread_mutex_t *)&j->mu);
    return f;
}

void tkd_journal_set_fsync(tkd_journal *j, tkd_fsync policy)
{
    pthread_mutex_lock(&j->mu);
    j->policy = policy;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

tkd_fsync tkd_journal_fsync(const tkd_journal *j)
{
    pthread_mutex_lock((pthread_mutex_t *)&j->mu);
    tkd_fsync p = j->policy;
    pthread_mutex_unlock((pthread_mutex_t *)&j->mu);
    return p;
}

const char *tkd_journal_path(const tkd_journal *j) { return j->path; }

void tkd_journal_get_stats(tkd_journal *j, tkd_journal_stats *out)
{
    pthread_mutex_lock(&j->mu);
    *out = j->st;
    out->backlog_bytes = j->qbytes;
    out->size = j->size;
    out->failing = j->err != 0;
    pthread_mutex_unlock(&j->mu);
    out->records = j->records;
}

/* ---- the writer thread ----------------------------------------------------------------------------- */

/* Write buf[*done..len) to fd; 0, or an errno (with *done how far it got). */
static int write_all(int fd, const uint8_t *buf, size_t len, size_t *done)
{
    while (*done < len) {
        ssize_t n = write(fd, buf + *done, len - *done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        *done += (size_t)n;
    }
    return 0;
}

void tkd_fsync_dir(const char *path)
{
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s", path);
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* fdatasync, timed into the stats (mu not held). */
static int timed_sync(tkd_journal *j, int fd, double *ms)
{
    uint64_t t0 = tk_clock_now_ns();
    int rc = fdatasync(fd) == 0 ? 0 : errno;
    *ms = (double)(tk_clock_now_ns() - t0) / 1e6;
    (void)j;
    return rc;
}

/* Carry out one batch; 0 when done, else an errno (the batch stays). */
static int run_batch(tkd_journal *j, jbatch *b, double *write_ms)
{
    switch (b->kind) {
    case B_DATA: {
        uint64_t t0 = tk_clock_now_ns();
        int rc = write_all(j->fd, b->buf, b->len, &b->done_main);
        if (!rc && b->both && j->fd_next >= 0)
            rc = write_all(j->fd_next, b->buf, b->len, &b->done_next);
        double ms = (double)(tk_clock_now_ns() - t0) / 1e6;
        if (ms > *write_ms)
            *write_ms = ms;
        if (rc)
            return rc;
        j->dirty = true;
        return 0;
    }
    case B_BEGIN: {
        if (b->fd < 0) {
            b->fd = open(j->next_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                         0640);
            if (b->fd < 0) {
                /* No new journal: records go to the old one only, the save
                 * waits for a header that does not come and fails, and the
                 * old pair stands. */
                tk_log_error("journal: cannot create the new journal %s: %s", j->next_path,
                             strerror(errno));
                return 0;
            }
        }
        int rc = write_all(b->fd, b->buf, b->len, &b->done_main);
        if (rc)
            return rc;
        j->fd_next = b->fd;
        b->fd = -1;
        return 0;
    }
    case B_END_OK: {
        if (j->fd_next < 0)
            return 0;
        /* The new journal holds everything since the snapshot: durable,
         * then in place of the old one. */
        if (fdatasync(j->fd_next) != 0)
            return errno;
        if (rename(j->next_path, j->path) != 0)
            return errno;
        tkd_fsync_dir(j->path);
        close(j->fd);
        j->fd = j->fd_next;
        j->fd_next = -1;
        return 0;
    }
    case B_END_FAIL:
        if (j->fd_next >= 0) {
            close(j->fd_next);
            j->fd_next = -1;
            unlink(j->next_path);
        }
        return 0;
    }
    return 0;
}

static void free_batch(tkd_journal *j, jbatch *b)
{
    if (b->kind == B_BEGIN && b->fd >= 0)
        close(b->fd);
    /* Keep one DATA buffer for the frame thread's next records. */
    if (b->kind == B_DATA && !j->spare && b->buf) {
        j->spare = b->buf;
        j->spare_cap = b->len; /* at least this much; realloc grows it */
        b->buf = NULL;
    }
    tk_free(b->buf);
    tk_free(b);
}

static void publish(tkd_journal *j)
{
    uint64_t r = j->policy == TKD_FSYNC_ALWAYS ? j->synced : j->written;
    uint64_t old = atomic_load_explicit(&j->released, memory_order_relaxed);
    if (r > old) {
        atomic_store_explicit(&j->released, r, memory_order_release);
        uint64_t one = 1;
        if (write(j->efd, &one, sizeof one) < 0 && errno != EAGAIN)
            tk_log_debug("journal: eventfd: %s", strerror(errno));
    }
    pthread_cond_broadcast(&j->idle_cv);
}

static void timed_wait_until(tkd_journal *j, uint64_t until_ns)
{
    uint64_t now = tk_clock_now_ns();
    uint64_t wait = until_ns > now ? until_ns - now : 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(wait / 1000000000ull);
    ts.tv_nsec += (long)(wait % 1000000000ull);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

static void *writer(void *arg)
{
    tkd_journal *j = arg;
    uint64_t retry_at = 0;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        uint64_t now = tk_clock_now_ns();
        if (j->err && now < retry_at) {
            if (j->stop)
                break; /* shutting down on a failing disk: the rest is lost */
            timed_wait_until(j, retry_at);
            continue;
        }
        bool sync_due = j->dirty && (j->force_sync || (j->policy == TKD_FSYNC_EVERYSEC &&
                                                       now - j->last_sync_ns >= 1000000000ull));
        if (!j->qhead && !sync_due) {
            if (j->stop)
                break;
            if (j->dirty && j->policy == TKD_FSYNC_EVERYSEC)
                timed_wait_until(j, j->last_sync_ns + 1000000000ull);
            else
                pthread_cond_wait(&j->cv, &j->mu);
            continue;
        }
        /* Take the whole queue: one pass, one sync (a group commit). */
        jbatch *list = j->qhead;
        j->qhead = j->qtail = NULL;
        tkd_fsync policy = j->policy;
        bool force = j->force_sync;
        pthread_mutex_unlock(&j->mu);

        uint64_t seq = 0, qdone = 0, nbatches = 0;
        bool need_sync = force, failed = false, rewritten = false;
        int rc = 0;
        double write_ms = 0, sync_ms = 0, sync2_ms = 0;
        jbatch *b = list;
        for (; b; b = b->next) {
            bool had_next = j->fd_next >= 0;
            rc = run_batch(j, b, &write_ms);
            if (rc) {
                failed = true;
                break;
            }
            if (b->kind == B_DATA) {
                seq = b->seq;
                need_sync |= b->sync && policy == TKD_FSYNC_ALWAYS;
                qdone += b->len;
                nbatches++;
                j->wsize += b->len;
                if (b->both && had_next)
                    j->wsize_next += b->len;
            } else if (b->kind == B_BEGIN) {
                j->wsize_next = b->len;
            } else {
                seq = b->seq; /* END_OK, END_FAIL */
                need_sync |= policy == TKD_FSYNC_ALWAYS;
                if (b->kind == B_END_OK && had_next) {
                    j->wsize = j->wsize_next;
                    rewritten = true;
                }
            }
        }
        bool synced = false, did_sync = false;
        if (!failed && (need_sync || (j->dirty && policy == TKD_FSYNC_EVERYSEC &&
                                      tk_clock_now_ns() - j->last_sync_ns >= 1000000000ull))) {
            if (j->dirty) {
                rc = timed_sync(j, j->fd, &sync_ms);
                if (!rc && j->fd_next >= 0)
                    rc = timed_sync(j, j->fd_next, &sync2_ms);
                did_sync = true;
            }
            failed = rc != 0;
            synced = !failed; /* nothing dirty: synced already */
        }

        pthread_mutex_lock(&j->mu);
        j->qbytes -= qdone <= j->qbytes ? qdone : j->qbytes;
        j->st.batches += nbatches;
        j->st.bytes += qdone;
        j->size = j->wsize;
        if (rewritten)
            j->st.rewrites++;
        if (write_ms > j->st.write_max_ms)
            j->st.write_max_ms = write_ms;
        if (seq > j->written)
            j->written = seq;
        if (synced) {
            j->synced = j->written;
            j->dirty = false;
            if (did_sync) {
                j->last_sync_ns = tk_clock_now_ns();
                j->st.fsyncs++;
                if (sync_ms + sync2_ms > j->st.fsync_max_ms)
                    j->st.fsync_max_ms = sync_ms + sync2_ms;
            }
            if (force)
                j->force_sync = false;
        }
        /* The batches carried out are freed; the failing one and those
         * after it go back to the head of the queue, for a retry. */
        jbatch *keep = failed && b ? b : NULL;
        while (list && list != keep) {
            jbatch *n = list->next;
            free_batch(j, list);
            list = n;
        }
        if (keep) {
            jbatch *last = keep;
            while (last->next)
                last = last->next;
            last->next = j->qhead;
            j->qhead = keep;
            if (!j->qtail)
                j->qtail = last;
        }
        if (failed) {
            if (!j->err)
                tk_log_error("cannot write the journal %s: %s (retrying every second; changes "
                             "are refused meanwhile)",
                             j->path, strerror(rc));
            j->err = rc;
            snprintf(j->errmsg, sizeof j->errmsg, "cannot write the journal %s: %s", j->path,
                     strerror(rc));
            retry_at = tk_clock_now_ns() + 1000000000ull;
        } else if (j->err) {
            tk_log_info("journal: %s is written again", j->path);
            j->err = 0;
            j->errmsg[0] = '\0';
        }
        publish(j);
    }
    pthread_cond_broadcast(&j->idle_cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

/* ---- opening, closing ------------------------------------------------------------------------------- */

static uint8_t *header_record(const json_t *header, size_t *len)
{
    char *t = json_dumps(header, JSON_COMPACT | JSON_REAL_PRECISION(17));
    uint8_t *r = tkd_journal_encode(TKD_JR_HEADER, t ? t : "{}", t ? strlen(t) : 2, len);
    free(t);
    return r;
}

uint64_t tkd_journal_new_id(void)
{
    uint64_t id = 0;
    while (id == 0) {
        if (getrandom(&id, sizeof id, 0) != (ssize_t)sizeof id)
            id = tk_clock_now_ns() ^ ((uint64_t)getpid() << 32);
    }
    return id;
}

tkd_journal *tkd_journal_open(const char *path, tkd_fsync policy, uint64_t at,
                              const json_t *header, char *err, size_t errlen)
{
    tkd_journal *j = tk_calloc(1, sizeof *j);
    j->path = tk_strdup(path);
    size_t n = strlen(path) + 5;
    j->next_path = tk_malloc(n);
    snprintf(j->next_path, n, "%s.new", path);
    j->fd = j->fd_next = j->efd = -1;
    j->policy = policy;
    if (at == 0) {
        /* A new journal: the header, durable, then the name. */
        int fd = open(j->next_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
        size_t hl, done = 0;
        uint8_t *h = header_record(header, &hl);
        int rc = fd < 0 ? errno : write_all(fd, h, hl, &done);
        if (!rc && fdatasync(fd) != 0)
            rc = errno;
        if (!rc && rename(j->next_path, j->path) != 0)
            rc = errno;
        tk_free(h);
        if (rc) {
            snprintf(err, errlen, "cannot create the journal %s: %s", path, strerror(rc));
            if (fd >= 0) {
                close(fd);
                unlink(j->next_path);
            }
            goto fail;
        }
        tkd_fsync_dir(j->path);
        j->fd = fd;
        j->size = j->wsize = hl;
    } else {
        j->fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (j->fd < 0) {
            snprintf(err, errlen, "cannot open the journal %s: %s", path, strerror(errno));
            goto fail;
        }
        /* What follows the last good record (a torn tail) is cut off. */
        if (ftruncate(j->fd, (off_t)at) != 0 || lseek(j->fd, (off_t)at, SEEK_SET) < 0) {
            snprintf(err, errlen, "cannot cut the journal %s at %llu: %s", path,
                     (unsigned long long)at, strerror(errno));
            goto fail;
        }
        j->size = j->wsize = at;
    }
    j->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (j->efd < 0) {
        snprintf(err, errlen, "journal: eventfd: %s", strerror(errno));
        goto fail;
    }
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    pthread_cond_init(&j->idle_cv, NULL);
    j->last_sync_ns = tk_clock_now_ns();
    atomic_init(&j->released, 0);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int prc = pthread_create(&j->th, NULL, writer, j);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (prc) {
        snprintf(err, errlen, "journal: cannot start its thread: %s", strerror(prc));
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        pthread_cond_destroy(&j->idle_cv);
        goto fail;
    }
    j->th_started = true;
    return j;
fail:
    if (j->fd >= 0)
        close(j->fd);
    if (j->efd >= 0)
        close(j->efd);
    tk_free(j->path);
    tk_free(j->next_path);
    tk_free(j);
    return NULL;
}

int tkd_journal_sync(tkd_journal *j, char *err, size_t errlen)
{
    tkd_journal_commit(j);
    uint64_t target = j->seq;
    pthread_mutex_lock(&j->mu);
    j->force_sync = true;
    pthread_cond_signal(&j->cv);
    /* At most 30 s: a disk that does not answer must not hold a shutdown
     * forever (what is not written is then reported lost). */
    uint64_t deadline = tk_clock_now_ns() + 30000000000ull;
    int rc = 0;
    /* Done when everything is written and nothing written is unsynced. */
    while (j->written < target || j->dirty || j->qhead) {
        if (tk_clock_now_ns() >= deadline) {
            rc = -1;
            break;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&j->idle_cv, &j->mu, &ts);
        j->force_sync = true;
        pthread_cond_signal(&j->cv);
    }
    if (rc && err)
        snprintf(err, errlen, "%s", j->err ? j->errmsg : "the journal's disk did not answer");
    pthread_mutex_unlock(&j->mu);
    return rc;
}

void tkd_journal_close(tkd_journal *j)
{
    if (!j)
        return;
    if (j->th_started) {
        char err[300];
        if (tkd_journal_sync(j, err, sizeof err) != 0)
            tk_log_error("journal: %s: the last records may be lost", err);
        pthread_mutex_lock(&j->mu);
        j->stop = true;
        pthread_cond_signal(&j->cv);
        pthread_mutex_unlock(&j->mu);
        pthread_join(j->th, NULL);
        pthread_mutex_destroy(&j->mu);
        pthread_cond_destroy(&j->cv);
        pthread_cond_destroy(&j->idle_cv);
    }
    while (j->qhead) {
        jbatch *b = j->qhead;
        j->qhead = b->next;
        free_batch(j, b);
    }
    if (j->fd_next >= 0) {
        /* A rewrite its snapshot never finished: the old pair stands. */
        close(j->fd_next);
        unlink(j->next_path);
    }
    if (j->fd >= 0)
        close(j->fd);
    if (j->efd >= 0)
        close(j->efd);
    tk_free(j->spare);
    tk_free(j->buf);
    tk_free(j->path);
    tk_free(j->next_path);
    tk_free(j);
}

/* ---- the rewrite --------------------------------------------------------------------------------------- */

int tkd_journal_rewrite_begin(tkd_journal *j, const json_t *header, char *err, size_t errlen)
{
    if (j->rewriting) {
        snprintf(err, errlen, "a journal rewrite is in progress");
        return -1;
    }
    /* Records so far go to the old journal only.  The writer creates the
     * new file in its turn: the end of the previous rewrite (its rename of
     * "<path>.new" into place, or its removal) may still be queued. */
    tkd_journal_commit(j);
    jbatch *b = tk_calloc(1, sizeof *b);
    b->kind = B_BEGIN;
    b->fd = -1;
    b->buf = header_record(header, &b->len);
    pthread_mutex_lock(&j->mu);
    enqueue(j, b);
    pthread_mutex_unlock(&j->mu);
    j->rewriting = true;
    return 0;
}

void tkd_journal_rewrite_end(tkd_journal *j, bool ok)
{
    if (!j->rewriting)
        return;
    tkd_journal_commit(j);
    jbatch *b = tk_calloc(1, sizeof *b);
    b->kind = ok ? B_END_OK : B_END_FAIL;
    /* A number of its own: what answers after it (the save's reply) waits
     * until the new journal is in place. */
    b->seq = ++j->seq;
    b->sync = true;
    j->gate = j->seq;
    pthread_mutex_lock(&j->mu);
    enqueue(j, b);
    pthread_mutex_unlock(&j->mu);
    j->rewriting = false;
}

bool tkd_journal_rewriting(const tkd_journal *j) { return j->rewriting; }

int tkd_journal_await_header(const char *jpath, uint64_t id, int timeout_ms, char *err,
                             size_t errlen)
{
    char np[PATH_MAX];
    snprintf(np, sizeof np, "%s.new", jpath);
    uint64_t deadline = tk_clock_now_ns() + (uint64_t)timeout_ms * 1000000ull;
    char why[160] = "not there";
    for (;;) {
        int fd = open(np, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
            uint8_t head[TKD_JREC_HEAD];
            ssize_t n = pread(fd, head, sizeof head, 0);
            uint32_t len = n == (ssize_t)sizeof head ? get32(head) : 0;
            if (len && len < 65536) {
                uint8_t *b = tk_malloc(TKD_JREC_HEAD + len);
                n = pread(fd, b, TKD_JREC_HEAD + len, 0);
                uint64_t off = 0, hid = 0;
                tkd_jrec r;
                json_t *h = NULL;
                if (n == (ssize_t)(TKD_JREC_HEAD + len) &&
                    tkd_journal_next(b, (size_t)n, &off, &r, why, sizeof why) ==
                        TKD_JNEXT_RECORD &&
                    (h = tkd_jdecode_header(&r, &hid, why, sizeof why)) && hid == id) {
                    json_decref(h);
                    tk_free(b);
                    int rc = fsync(fd) == 0 ? 0 : errno;
                    close(fd);
                    if (rc) {
                        snprintf(err, errlen, "cannot sync the new journal %s: %s", np,
                                 strerror(rc));
                        return -1;
                    }
                    tkd_fsync_dir(np);
                    return 0;
                }
                if (h && hid != id)
                    snprintf(why, sizeof why, "it belongs to another snapshot");
                json_decref(h);
                tk_free(b);
            }
            close(fd);
        }
        if (tk_clock_now_ns() >= deadline)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    snprintf(err, errlen, "the new journal %s did not get its header in time (%s)", np, why);
    return -1;
}
