/*
 * test_journal.c - suite "journal": the journal's format and writer
 * (src/daemon/journal.c): CRC-32C, records read back, a torn tail told apart
 * from corruption, payload decoders refusing what does not decode, the
 * writer's thread (policies, commits, the gate numbers, sync), the rewrite
 * (both files, the switch, the abort) and the header handshake of a save.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/daemon/journal.h"
#include "../check_main.h"
#include "tickd/clock.h"
#include "tickd/log.h"

static char g_dir[64];

static void setup(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/tickd-jt-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(g_dir));
    tk_log_set_level(TK_LOG_ERROR);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", g_dir);
}

static const char *path_of(const char *name)
{
    static char p[4][128];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

static uint8_t *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static json_t *header(uint64_t id)
{
    char hex[24];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)id);
    return json_pack("{s:s, s:i, s:s, s:s, s:i}", "format", "tickd-journal", "version",
                     TKD_JOURNAL_VERSION, "id", hex, "base", "empty", "frame", 0);
}

/* A journal of the empty world, header id `id`, at `jp`. */
static tkd_journal *open_journal(const char *jp, tkd_fsync policy, uint64_t id)
{
    char err[256];
    json_t *h = header(id);
    tkd_journal *j = tkd_journal_open(jp, policy, 0, h, err, sizeof err);
    json_decref(h);
    ck_assert_msg(j != NULL, "%s", err);
    return j;
}

static void begin_rewrite(tkd_journal *j, uint64_t id)
{
    char err[256];
    json_t *h = header(id);
    ck_assert_int_eq(tkd_journal_rewrite_begin(j, h, err, sizeof err), 0);
    json_decref(h);
}

static void sync_journal(tkd_journal *j)
{
    char err[256];
    ck_assert_msg(tkd_journal_sync(j, err, sizeof err) == 0, "%s", err);
}

/* The journal at `jp` is the header of `id`, then one request whose params
 * hold `word`, and nothing else; no "<jp>.new" is left. */
static void expect_journal(const char *jp, uint64_t id, const char *word)
{
    char err[256], np[300];
    size_t n;
    uint8_t *b = slurp(jp, &n);
    uint64_t off = 0, hid;
    tkd_jrec r;
    ck_assert_int_eq(tkd_journal_next(b, n, &off, &r, NULL, 0), TKD_JNEXT_RECORD);
    json_decref(tkd_jdecode_header(&r, &hid, err, sizeof err));
    ck_assert_uint_eq(hid, id);
    ck_assert_int_eq(tkd_journal_next(b, n, &off, &r, NULL, 0), TKD_JNEXT_RECORD);
    tkd_jrequest q;
    tkd_jdecode_request(&r, &q);
    ck_assert(memmem(q.params, q.params_len, word, strlen(word)) != NULL);
    ck_assert_int_eq(tkd_journal_next(b, n, &off, &r, NULL, 0), TKD_JNEXT_END);
    free(b);
    struct stat st;
    snprintf(np, sizeof np, "%s.new", jp);
    ck_assert_int_ne(stat(np, &st), 0);
}

/* CRC-32C's check value ("123456789" -> 0xE3069283) and incremental use. */
START_TEST(journal_crc32c)
{
    ck_assert_uint_eq(tkd_crc32c(0, "123456789", 9), 0xE3069283u);
    ck_assert_uint_eq(tkd_crc32c(tkd_crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
    ck_assert_uint_eq(tkd_crc32c(0, "", 0), 0);
}
END_TEST

/* Records written are read back in order; the payloads decode. */
START_TEST(journal_write_read_back)
{
    char err[256];
    tkd_journal *j = open_journal(path_of("j"), TKD_FSYNC_ALWAYS, 0x1234);
    tkd_journal_request(j, 7, "entity.spawn", "{\"class\":\"counter\"}", 19);
    tkd_journal_request(j, 7, "world.pause", NULL, 0);
    tkd_journal_step(j, 7);
    tkd_journal_step(j, 7);
    tkd_journal_step(j, 8); /* another boundary: another record */
    tkd_journal_frame(j, 7, 16666667);
    json_t *cfg = json_pack("{s:i}", "max_entities", 5);
    tkd_journal_config(j, 8, cfg);
    json_decref(cfg);
    uint8_t hh[16] = {1, 2, 3};
    tkd_journal_hash(j, 8, hh);
    tkd_journal_cancel(j, 9);
    tkd_journal_end(j);
    ck_assert_int_eq(tkd_journal_sync(j, err, sizeof err), 0);
    ck_assert_uint_ge(tkd_journal_released(j), tkd_journal_gate(j));
    tkd_journal_stats st;
    tkd_journal_get_stats(j, &st);
    ck_assert_uint_ge(st.fsyncs, 1);
    ck_assert_uint_eq(st.records, 9);
    tkd_journal_close(j);

    size_t n;
    uint8_t *b = slurp(path_of("j"), &n);
    uint64_t off = 0, id = 0;
    tkd_jrec r;
    ck_assert_int_eq(tkd_journal_next(b, n, &off, &r, NULL, 0), TKD_JNEXT_RECORD);
    json_t *hd = tkd_jdecode_header(&r, &id, err, sizeof err);
    ck_assert_ptr_nonnull(hd);
    ck_assert_uint_eq(id, 0x1234);
    json_decref(hd);
    const char expect[] = "RRSSFGXCE";
    for (size_t i = 0; expect[i]; i++) {
        ck_assert_int_eq(tkd_journal_next(b, n, &off, &r, NULL, 0), TKD_JNEXT_RECORD);
        ck_assert_int_eq(r.type, expect[i]);
        if (i == 0) {
            tkd_jrequest q;
            ck_assert_int_eq(tkd_jdecode_request(&r, &q), 0);
            ck_assert_uint_eq(q.boundary, 7);
            ck_assert_str_eq(q.method, "entity.spawn");
            ck_assert_uint_eq(q.params_len, 19);
        } else if (i == 1) {
            tkd_jrequest q;
            ck_assert_int_eq(tkd_jdecode_request(&r, &q), 0);
            ck_assert_uint_eq(q.params_len, 0);
        } else if (i == 2) {
            uint64_t bd;
            uint32_t c;
            ck_assert_int_eq(tkd_jdecode_step(&r, &bd, &c), 0);
            ck_assert_uint_eq(c, 2); /* coalesced */
        } else if (i == 4) {
            uint64_t f, dt;
            ck_assert_int_eq(tkd_jdecode_frame(&r, &f, &dt), 0);
            ck_assert_uint_eq(dt, 16666667);
        } else if (i == 6) {
            uint64_t f;
            uint8_t got[16];
            ck_assert_int_eq(tkd_jdecode_hash(&r, &f, got), 0);
            ck_assert_int_eq(memcmp(got, hh, 16), 0);
        }
    }
    ck_assert_int_eq(tkd_journal_next(b, n, &off, &r, NULL, 0), TKD_JNEXT_END);
    free(b);
}
END_TEST

/* A record cut short at every length, or garbled at the end, or followed
 * by zeros (a power loss), is a torn tail; a garbled record with a good one
 * after it is corruption, at its offset. */
START_TEST(journal_torn_and_corrupt)
{
    size_t l1, l2, l3;
    uint8_t *a = tkd_journal_encode(TKD_JR_FRAME, "0123456789abcdef", 16, &l1);
    uint8_t *c = tkd_journal_encode(TKD_JR_HASH, "0123456789abcdef01234567", 24, &l2);
    uint8_t *e = tkd_journal_encode(TKD_JR_END, NULL, 0, &l3);
    uint8_t buf[256];
    memcpy(buf, a, l1);
    memcpy(buf + l1, c, l2);
    memcpy(buf + l1 + l2, e, l3);
    size_t total = l1 + l2 + l3;
    tkd_jrec r;
    char why[128];
    for (size_t cut = l1 + 1; cut < l1 + l2; cut++) {
        uint64_t off = l1;
        CHECK(tkd_journal_next(buf, cut, &off, &r, why, sizeof why) == TKD_JNEXT_TORN,
              "cut at %zu", cut);
        CHECK(off == l1, "offset %llu", (unsigned long long)off);
    }
    /* The last record garbled: torn. */
    uint8_t g[256];
    memcpy(g, buf, total);
    g[total - 1] ^= 1;
    uint64_t off = l1 + l2;
    ck_assert_int_eq(tkd_journal_next(g, total, &off, &r, why, sizeof why), TKD_JNEXT_TORN);
    /* A middle record garbled, a good one after it: corrupt, at its offset. */
    memcpy(g, buf, total);
    g[l1 + 12] ^= 0x40;
    off = l1;
    ck_assert_int_eq(tkd_journal_next(g, total, &off, &r, why, sizeof why), TKD_JNEXT_CORRUPT);
    ck_assert_uint_eq(off, l1);
    ck_assert_ptr_nonnull(strstr(why, "checksum"));
    /* ... unless only zeros follow (a power loss extends the file). */
    memcpy(g, buf, l1 + l2);
    memset(g + l1 + l2, 0, 100);
    g[l1 + 12] ^= 0x40;
    off = l1;
    ck_assert_int_eq(tkd_journal_next(g, l1 + l2 + 100, &off, &r, why, sizeof why), TKD_JNEXT_TORN);
    /* A length past the limit, data after it: corrupt. */
    memcpy(g, buf, total);
    g[l1 + 3] = 0x7f;
    off = l1;
    ck_assert_int_eq(tkd_journal_next(g, total, &off, &r, why, sizeof why), TKD_JNEXT_CORRUPT);
    /* An unknown type with a good checksum: corrupt in the middle. */
    uint8_t *u = tkd_journal_encode('Z', "x", 1, &l2);
    memcpy(g, u, l2);
    memcpy(g + l2, e, l3);
    off = 0;
    ck_assert_int_eq(tkd_journal_next(g, l2 + l3, &off, &r, why, sizeof why), TKD_JNEXT_CORRUPT);
    ck_assert_ptr_nonnull(strstr(why, "unknown type"));
    free(u);
    free(a);
    free(c);
    free(e);
}
END_TEST

/* Decoders refuse payloads of the wrong shape. */
START_TEST(journal_decoders_refuse)
{
    tkd_jrec r = {.type = TKD_JR_REQUEST};
    tkd_jrequest q;
    uint8_t p[64] = {0};
    r.p = p;
    r.len = 9; /* too short */
    ck_assert_int_eq(tkd_jdecode_request(&r, &q), -1);
    memcpy(p + 8, "no terminator", 13);
    r.len = 21;
    ck_assert_int_eq(tkd_jdecode_request(&r, &q), -1);
    memcpy(p + 8, "\0x", 2); /* empty method */
    r.len = 10;
    ck_assert_int_eq(tkd_jdecode_request(&r, &q), -1);
    memcpy(p + 8, "a b\0", 4); /* not a method name */
    r.len = 12;
    ck_assert_int_eq(tkd_jdecode_request(&r, &q), -1);
    r.type = TKD_JR_STEP;
    r.len = 12; /* count 0 */
    memset(p, 0, 12);
    uint64_t b;
    uint32_t c;
    ck_assert_int_eq(tkd_jdecode_step(&r, &b, &c), -1);
    r.type = TKD_JR_FRAME;
    r.len = 15;
    uint64_t f, dt;
    ck_assert_int_eq(tkd_jdecode_frame(&r, &f, &dt), -1);
    r.type = TKD_JR_CONFIG;
    memcpy(p + 8, "[1]", 3);
    r.len = 11;
    json_t *o = NULL;
    ck_assert_int_eq(tkd_jdecode_config(&r, &b, &o), -1);
    r.type = TKD_JR_HEADER;
    static const char bad[] = "{\"format\":\"tickd-journal\",\"version\":2,\"id\":\"0000000000000001\"}";
    r.p = (const uint8_t *)bad;
    r.len = sizeof bad - 1;
    char why[128];
    uint64_t id;
    ck_assert_ptr_null(tkd_jdecode_header(&r, &id, why, sizeof why));
    ck_assert_ptr_nonnull(strstr(why, "version 2"));
}
END_TEST

/* The gate: a change's number is released once written (everysec, no) or
 * synced (always); frames and hashes do not move the gate. */
START_TEST(journal_gate_and_release)
{
    char err[256];
    tkd_journal *j = open_journal(path_of("g"), TKD_FSYNC_EVERYSEC, 7);
    uint64_t g0 = tkd_journal_gate(j);
    tkd_journal_frame(j, 0, 1000);
    ck_assert_uint_eq(tkd_journal_gate(j), g0);
    tkd_journal_request(j, 0, "level.add", "{\"name\":\"a\"}", 12);
    uint64_t g1 = tkd_journal_gate(j);
    ck_assert_uint_gt(g1, g0);
    tkd_journal_step(j, 0); /* still coalescing: counts already */
    uint64_t g2 = tkd_journal_gate(j);
    ck_assert_uint_gt(g2, g1);
    tkd_journal_commit(j);
    ck_assert_uint_eq(tkd_journal_gate(j), g2);
    uint64_t deadline = tk_clock_now_ns() + 10000000000ull;
    while (tkd_journal_released(j) < g2 && tk_clock_now_ns() < deadline)
        usleep(1000);
    ck_assert_uint_ge(tkd_journal_released(j), g2);
    tkd_journal_ack(j);
    ck_assert(!tkd_journal_backlogged(j));
    ck_assert(!tkd_journal_failing(j, err, sizeof err));
    tkd_journal_set_fsync(j, TKD_FSYNC_ALWAYS);
    ck_assert_int_eq(tkd_journal_fsync(j), TKD_FSYNC_ALWAYS);
    tkd_journal_close(j);
}
END_TEST

/* A rewrite: records after its start go to both files; ended well, the
 * new file replaces the old one; aborted, it is removed. */
START_TEST(journal_rewrite_switch_and_abort)
{
    char err[256];
    const char *jp = path_of("r");
    tkd_journal *j = open_journal(jp, TKD_FSYNC_NO, 1);
    tkd_journal_request(j, 0, "level.add", "{\"name\":\"before\"}", 17);
    begin_rewrite(j, 2);
    ck_assert(tkd_journal_rewriting(j));
    tkd_journal_request(j, 0, "level.add", "{\"name\":\"after\"}", 16);
    sync_journal(j);
    /* The save's side: the header of id 2 is there and durable. */
    ck_assert_int_eq(tkd_journal_await_header(jp, 2, 5000, err, sizeof err), 0);
    ck_assert_int_eq(tkd_journal_await_header(jp, 3, 50, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "another snapshot"));
    tkd_journal_rewrite_end(j, true);
    sync_journal(j);
    expect_journal(jp, 2, "after");
    /* Aborted: the new file goes, the journal stays. */
    begin_rewrite(j, 3);
    tkd_journal_request(j, 0, "level.add", "{\"name\":\"x\"}", 12);
    tkd_journal_rewrite_end(j, false);
    sync_journal(j);
    struct stat st;
    ck_assert_int_ne(stat(path_of("r.new"), &st), 0);
    tkd_journal_stats js;
    tkd_journal_get_stats(j, &js);
    ck_assert_uint_eq(js.rewrites, 1);
    tkd_journal_close(j);
}
END_TEST

/* A rewrite that begins right after the previous one ended, before the
 * writer carried out that end (its rename of the new file into place or
 * its removal): each in its turn, the journal whole, the second's new file
 * there with its own header. */
START_TEST(journal_rewrites_back_to_back)
{
    char err[256];
    const char *jp = path_of("bb");
    tkd_journal *j = open_journal(jp, TKD_FSYNC_ALWAYS, 1);
    for (int round = 0; round < 2; round++) {
        uint64_t a = 10 + 2 * (uint64_t)round, b = a + 1;
        begin_rewrite(j, a);
        tkd_journal_request(j, 0, "level.add", "{\"name\":\"one\"}", 14);
        sync_journal(j);
        ck_assert_int_eq(tkd_journal_await_header(jp, a, 5000, err, sizeof err), 0);
        /* round 0: the first ended well; round 1: it failed.  No sync
         * between its end and the next begin. */
        tkd_journal_rewrite_end(j, round == 0);
        begin_rewrite(j, b);
        tkd_journal_request(j, 0, "level.add", "{\"name\":\"two\"}", 14);
        sync_journal(j);
        ck_assert_int_eq(tkd_journal_await_header(jp, b, 5000, err, sizeof err), 0);
        tkd_journal_rewrite_end(j, true);
        sync_journal(j);
        expect_journal(jp, b, "two");
    }
    tkd_journal_close(j);
}
END_TEST

/* Reopened after a recovery, a journal is cut at the last good record and
 * appended from there. */
START_TEST(journal_reopen_cuts_the_tail)
{
    char err[256];
    const char *jp = path_of("c");
    tkd_journal *j = open_journal(jp, TKD_FSYNC_NO, 9);
    tkd_journal_request(j, 0, "level.add", "{\"name\":\"a\"}", 12);
    tkd_journal_close(j);
    struct stat st;
    ck_assert_int_eq(stat(jp, &st), 0);
    off_t good = st.st_size;
    int fd = open(jp, O_WRONLY | O_APPEND);
    ck_assert(write(fd, "garbage", 7) == 7);
    close(fd);
    j = tkd_journal_open(jp, TKD_FSYNC_NO, (uint64_t)good, NULL, err, sizeof err);
    ck_assert_msg(j != NULL, "%s", err);
    tkd_journal_end(j);
    tkd_journal_close(j);
    size_t n;
    uint8_t *b = slurp(jp, &n);
    uint64_t off = 0;
    tkd_jrec r;
    int k = 0;
    while (tkd_journal_next(b, n, &off, &r, NULL, 0) == TKD_JNEXT_RECORD)
        k++;
    ck_assert_int_eq(k, 3); /* header, request, end */
    ck_assert_uint_eq(off, n);
    free(b);
    /* A journal that cannot be created: the error names it. */
    json_t *h = header(10);
    ck_assert_ptr_null(tkd_journal_open("/nonexistent-dir/j", TKD_FSYNC_NO, 0, h, err, sizeof err));
    json_decref(h);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent-dir/j"));
}
END_TEST


/* A write that fails (here: past the file size limit) leaves the journal
 * failing, its change not released; retried every second, it goes through
 * once the disk takes it again, nothing lost. */
START_TEST(journal_write_failure_retried)
{
    char err[256];
    const char *jp = path_of("f");
    tkd_journal *j = open_journal(jp, TKD_FSYNC_ALWAYS, 11);
    struct stat st;
    ck_assert_int_eq(stat(jp, &st), 0);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {(rlim_t)st.st_size + 64, RLIM_INFINITY};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    char big[1000];
    memset(big, 'x', sizeof big);
    big[0] = '"';
    big[sizeof big - 1] = '"';
    tkd_journal_request(j, 0, "level.add", big, sizeof big);
    uint64_t g = tkd_journal_gate(j);
    tkd_journal_commit(j);
    uint64_t deadline = tk_clock_now_ns() + 10000000000ull;
    while (!tkd_journal_failing(j, err, sizeof err) && tk_clock_now_ns() < deadline)
        usleep(1000);
    ck_assert(tkd_journal_failing(j, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, jp));
    ck_assert_uint_lt(tkd_journal_released(j), g);
    lim.rlim_cur = RLIM_INFINITY;
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    deadline = tk_clock_now_ns() + 10000000000ull;
    while ((tkd_journal_released(j) < g || tkd_journal_failing(j, NULL, 0)) &&
           tk_clock_now_ns() < deadline)
        usleep(1000);
    ck_assert_uint_ge(tkd_journal_released(j), g);
    ck_assert(!tkd_journal_failing(j, NULL, 0));
    tkd_journal_close(j);
    size_t n;
    uint8_t *b = slurp(jp, &n);
    uint64_t off = 0;
    tkd_jrec r;
    int k = 0;
    while (tkd_journal_next(b, n, &off, &r, NULL, 0) == TKD_JNEXT_RECORD)
        k++;
    ck_assert_int_eq(k, 2); /* the header, the request once */
    ck_assert_uint_eq(off, n);
    free(b);
}
END_TEST

START_TEST(journal_policy_names)
{
    tkd_fsync p;
    ck_assert_int_eq(tkd_fsync_parse("always", &p), 0);
    ck_assert_int_eq(p, TKD_FSYNC_ALWAYS);
    ck_assert_int_eq(tkd_fsync_parse("everysec", &p), 0);
    ck_assert_int_eq(tkd_fsync_parse("no", &p), 0);
    ck_assert_int_eq(tkd_fsync_parse("sometimes", &p), -1);
    ck_assert_str_eq(tkd_fsync_name(TKD_FSYNC_EVERYSEC), "everysec");
    ck_assert_uint_ne(tkd_journal_new_id(), 0);
}
END_TEST

static Suite *journal_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc = tcase_create("journal");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, journal_crc32c);
    tcase_add_test(tc, journal_write_read_back);
    tcase_add_test(tc, journal_torn_and_corrupt);
    tcase_add_test(tc, journal_decoders_refuse);
    tcase_add_test(tc, journal_gate_and_release);
    tcase_add_test(tc, journal_rewrite_switch_and_abort);
    tcase_add_test(tc, journal_rewrites_back_to_back);
    tcase_add_test(tc, journal_reopen_cuts_the_tail);
    tcase_add_test(tc, journal_write_failure_retried);
    tcase_add_test(tc, journal_policy_names);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(journal_suite)
