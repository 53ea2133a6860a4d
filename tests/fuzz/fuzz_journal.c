/*
 * fuzz_journal.c - fuzz target "journal": bytes as a journal file (what
 * the recovery at start and tickd --replay read).
 *
 * Each input is read twice:
 *  - record by record with tkd_journal_next and the payload decoders: every
 *    record lies inside the input, offsets only move forward, a torn or
 *    corrupt record ends the walk where it starts, and a record that the
 *    walk accepted decodes or is refused, never read past its length;
 *  - as a journal replayed on an offline daemon (tkd_replay_file), with
 *    every record's checksum made right first (so that mutations reach the
 *    records' contents, which a checksum would otherwise turn away), when
 *    its header is readable and its base is the empty world (a base
 *    snapshot would name a file of the machine): the records applied, the
 *    recorded hashes checked, the frames run with their dts.  The replay
 *    ends with 0 or an error naming the file.
 *
 * Inputs that mention the `burner` class are not replayed (its tick
 * busy-waits by design).  At most REPLAY_FRAMES frames run per input.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "daemon/journal.h"
#include "daemon/replay.h"
#include "fuzz.h"

#define FAIL(...) tkd_fuzz_fail("journal", __VA_ARGS__)
#define REPLAY_FRAMES 256

static void walk(const uint8_t *data, size_t size, bool *replayable)
{
    uint64_t off = 0, prev = 0;
    tkd_jrec r;
    char why[200];
    bool first = true;
    *replayable = false;
    for (;;) {
        tkd_jnext k = tkd_journal_next(data, size, &off, &r, why, sizeof why);
        if (off > size)
            FAIL("offset %llu past the input (%zu bytes)", (unsigned long long)off, size);
        if (k != TKD_JNEXT_RECORD) {
            if (off != prev)
                FAIL("a walk that stopped moved the offset (%llu -> %llu)",
                     (unsigned long long)prev, (unsigned long long)off);
            if (k != TKD_JNEXT_END && !why[0])
                FAIL("a torn or corrupt record without a reason");
            return;
        }
        if (off <= prev || r.p < data || r.p + r.len > data + size || r.off != prev)
            FAIL("record at %llu: outside the input or not where the walk was",
                 (unsigned long long)prev);
        prev = off;
        uint64_t a, b;
        uint32_t n;
        uint8_t h[16];
        json_t *o = NULL;
        tkd_jrequest q;
        switch (r.type) {
        case TKD_JR_HEADER:
            o = tkd_jdecode_header(&r, &a, why, sizeof why);
            if (first && o) {
                const char *base = json_string_value(json_object_get(o, "base"));
                *replayable = base && !strcmp(base, "empty");
            }
            break;
        case TKD_JR_REQUEST:
            if (tkd_jdecode_request(&r, &q) == 0 &&
                (q.method + strlen(q.method) >= (const char *)r.p + r.len ||
                 q.params + q.params_len != (const char *)r.p + r.len))
                FAIL("a request decoded past its record");
            break;
        case TKD_JR_FRAME:
            tkd_jdecode_frame(&r, &a, &b);
            break;
        case TKD_JR_STEP:
            tkd_jdecode_step(&r, &a, &n);
            break;
        case TKD_JR_CANCEL:
            tkd_jdecode_u64(&r, &a);
            break;
        case TKD_JR_CONFIG:
            tkd_jdecode_config(&r, &a, &o);
            break;
        case TKD_JR_HASH:
            tkd_jdecode_hash(&r, &a, h);
            break;
        }
        json_decref(o);
        first = false;
    }
}

/* A copy of the input with each whole record's checksum recomputed. */
static uint8_t *fix_checksums(const uint8_t *data, size_t size)
{
    uint8_t *b = malloc(size ? size : 1);
    memcpy(b, data, size);
    for (size_t o = 0; o + TKD_JREC_HEAD <= size;) {
        uint32_t len = (uint32_t)b[o] | (uint32_t)b[o + 1] << 8 | (uint32_t)b[o + 2] << 16 |
                       (uint32_t)b[o + 3] << 24;
        if (len > TKD_JREC_MAX || len > size - o - TKD_JREC_HEAD)
            break;
        uint32_t c = tkd_crc32c(0, b + o + 8, (size_t)len + 1);
        for (int i = 0; i < 4; i++)
            b[o + 4 + i] = (uint8_t)(c >> (8 * i));
        o += TKD_JREC_HEAD + len;
    }
    return b;
}

static bool mentions(const uint8_t *data, size_t size, const char *word)
{
    return memmem(data, size, word, strlen(word)) != NULL;
}

int tkd_fuzz_journal(const uint8_t *data, size_t size)
{
    static bool quiet;
    if (!quiet) {
        tkd_fuzz_quiet();
        quiet = true;
    }
    bool replayable;
    walk(data, size, &replayable);
    uint8_t *fixed = fix_checksums(data, size);
    walk(fixed, size, &replayable);
    if (!replayable || mentions(data, size, "burner")) {
        free(fixed);
        return 0;
    }
    char path[320], snap[320];
    snprintf(path, sizeof path, "%s/journal", tkd_fuzz_tmpdir());
    snprintf(snap, sizeof snap, "%s/world.json", tkd_fuzz_tmpdir());
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(fixed, 1, size, f) != size || fclose(f) != 0)
        FAIL("cannot write %s", path);
    free(fixed);
    tkd d;
    tkd_fuzz_offline_init(&d, "journal", snap);
    char err[TKD_ERR_MAX];
    uint64_t before = tk_world_frame(d.world);
    int rc = tkd_replay_file(&d, path, REPLAY_FRAMES, err, sizeof err);
    if (rc != 0 && !strstr(err, path) && !strstr(err, "header"))
        FAIL("a replay refused without naming the journal: %s", err);
    if (tk_world_frame(d.world) < before && !mentions(data, size, "world.load"))
        FAIL("the frame counter went back without a world.load");
    tkd_fuzz_offline_fini(&d);
    tkd_fuzz_empty_dir(tkd_fuzz_tmpdir(), 0);
    return 0;
}
