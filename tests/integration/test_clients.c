/*
 * test_clients.c - many clients and badly behaved ones against the real
 * daemon: 200 concurrent clients, the max_clients limit (256 by default),
 * half-closed clients, clients that vanish with requests in flight, lines
 * at and over control.max_line, max_pending, a subscriber that never reads,
 * a client whose replies pile up unread, a client stalled mid-line, churn,
 * and one very large response.  Throughout, the frame loop must never wait
 * on a client: another connection sees frames advance.
 *
 * Every test starts its own daemon (tick_rate 0 unless said otherwise).
 * Not here: the JSON-RPC envelope (test_protocol.c).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

/* Poll engine.stats until "clients" equals `n` (clients are freed
 * asynchronously after they close). */
static void wait_clients(tkit_conn *c, long long n)
{
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    for (;;) {
        long long now = tkit_geti(tkit_ok(c, "engine.stats", NULL), "clients");
        if (now == n)
            return;
        ck_assert_msg(tkit_now() < deadline, "clients stayed at %lld, want %lld", now, n);
    }
}

/* A request line of exactly `len` bytes (terminator excluded), padded with
 * JSON whitespace. */
static char *padded_request(size_t len)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":\"pad\",\"method\":\"engine.info\"";
    size_t h = sizeof head - 1;
    ck_assert_uint_ge(len, h + 1);
    char *s = malloc(len + 2);
    memcpy(s, head, h);
    memset(s + h, ' ', len - h - 1);
    s[len - 1] = '}';
    s[len] = '\n';
    s[len + 1] = '\0';
    return s;
}

START_TEST(clients_200_concurrent)
{
    enum { N = 200 };
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *cs[N];
    for (int i = 0; i < N; i++)
        cs[i] = tkit_connect(d);
    /* Every client uses the same id: answers must not cross connections. */
    for (int i = 0; i < N; i++)
        tkit_sendf(cs[i],
                   "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"entity.spawn\","
                   "\"params\":{\"class\":\"counter\",\"count\":%d}}\n"
                   "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"world.status\"}\n",
                   i % 5 + 1);
    static char seen[N * 5 + 1];
    long long total = 0;
    for (int i = 0; i < N; i++) {
        json_t *r = tkit_recv(cs[i]);
        ck_assert_int_eq(tkit_geti(r, "id"), 1);
        json_t *ids = tkit_get(tkit_assert_result(r), "ids");
        ck_assert_int_eq(json_array_size(ids), i % 5 + 1);
        size_t k;
        json_t *v;
        json_array_foreach(ids, k, v)
        {
            long long id = json_integer_value(v);
            ck_assert(id >= 1 && id <= N * 5);
            ck_assert_msg(!seen[id], "id %lld given twice", id);
            seen[id] = 1;
        }
        total += i % 5 + 1;
        json_t *s = tkit_recv(cs[i]);
        ck_assert_int_eq(tkit_geti(s, "id"), 2);
        tkit_assert_result(s);
    }
    ck_assert_int_eq(tkit_geti(tkit_ok(cs[0], "world.status", NULL), "entities"), total);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_256_by_default)
{
    enum { N = 256 };
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *cs[N];
    cs[0] = tkit_connect(d);
    wait_clients(cs[0], 1);
    for (int i = 1; i < N; i++)
        cs[i] = tkit_connect(d);
    for (int i = 0; i < N; i++)
        tkit_sendf(cs[i], "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"engine.info\"}\n", i);
    for (int i = 0; i < N; i++) {
        json_t *r = tkit_recv(cs[i]);
        ck_assert_int_eq(tkit_geti(r, "id"), i);
        tkit_assert_result(r);
    }
    ck_assert_int_eq(tkit_geti(tkit_ok(cs[0], "engine.stats", NULL), "clients"), N);
    /* the 257th is told and closed */
    tkit_conn *extra = tkit_connect(d);
    json_t *r = tkit_recv(extra);
    tkit_assert_error(r, TKIT_LIMIT, NULL);
    ck_assert(tkit_wait_eof(extra, TKIT_DEADLINE_S));
    tkit_finish(d);
}
END_TEST

START_TEST(clients_max_clients)
{
    static const char *const cfg[] = {"control.max_clients=4", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *cs[4];
    cs[0] = tkit_connect(d);
    wait_clients(cs[0], 1);
    for (int i = 1; i < 4; i++) {
        cs[i] = tkit_connect(d);
        tkit_ok(cs[i], "engine.info", NULL);
    }
    /* One more: a -32003 error ("too many clients"), id null, then closed. */
    tkit_conn *x = tkit_connect(d);
    json_t *r = tkit_recv(x);
    tkit_assert_error(r, TKIT_LIMIT, NULL);
    ck_assert(json_is_null(json_object_get(r, "id")));
    ck_assert_msg(tkit_wait_eof(x, TKIT_DEADLINE_S), "the refused client was not closed");
    /* The others are unaffected. */
    for (int i = 0; i < 4; i++)
        tkit_ok(cs[i], "world.status", NULL);
    /* A slot freed is a slot for the next client. */
    tkit_close(cs[3]);
    wait_clients(cs[0], 3);
    tkit_conn *y = tkit_connect(d);
    tkit_ok(y, "engine.info", NULL);
    ck_assert_int_eq(tkit_geti(tkit_ok(cs[0], "engine.stats", NULL), "clients"), 4);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_half_close_answered)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_sendf(
        c, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.trace\",\"params\":{\"frames\":3}}\n"
           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"entity.spawn\","
           "\"params\":{\"class\":\"counter\"}}\n"
           "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"world.status\"}\n");
    tkit_half_close(c);
    bool seen[4] = {false};
    for (int k = 0; k < 3; k++) {
        json_t *r = tkit_recv(c);
        long long id = tkit_geti(r, "id");
        ck_assert(id >= 1 && id <= 3 && !seen[id]);
        seen[id] = true;
        json_t *res = tkit_assert_result(r);
        if (id == 1)
            ck_assert_int_eq(json_array_size(tkit_get(res, "frames")), 3);
    }
    ck_assert_msg(tkit_wait_eof(c, TKIT_DEADLINE_S), "not closed after its answers");
    ck_assert_int_eq(tkit_stashed(c), 0);
    /* A half-closed client with a last line lacking its "\n": answered or
     * dropped, but the daemon stays up and closes the connection. */
    tkit_conn *c2 = tkit_connect(d);
    tkit_sendf(c2, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"engine.info\"}");
    tkit_half_close(c2);
    ck_assert(tkit_wait_eof(c2, TKIT_DEADLINE_S));
    tkit_conn *c3 = tkit_connect(d);
    ck_assert_int_eq(tkit_geti(tkit_ok(c3, "world.status", NULL), "entities"), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_gone_with_requests_in_flight)
{
    /* Requests of a client that closed at once still execute. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_conn *g = tkit_connect(d);
    tkit_sendf(
        g, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"entity.spawn\","
           "\"params\":{\"class\":\"counter\"}}\n"
           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"world.step\",\"params\":{\"frames\":5}}\n"
           "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"world.trace\",\"params\":{\"frames\":4}}\n");
    tkit_close(g);
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    for (;;) {
        json_t *l = tkit_ok(c, "entity.list", NULL);
        if (tkit_geti(l, "total") == 1) {
            long long id = tkit_geti(l, "ids[0]");
            if (tkit_geti(tkit_ok(c, "entity.get", "{\"id\":%lld}", id), "tick.ticks") == 5)
                break;
        }
        ck_assert_msg(tkit_now() < deadline, "the vanished client's spawn + step did not run");
    }
    tkit_wait_frames(c, 10);
    tkit_ok(c, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_line_at_and_over_max)
{
    static const char *const cfg[] = {"control.max_line=1024", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    /* exactly max_line bytes: served */
    tkit_conn *c = tkit_connect(d);
    char *ok = padded_request(1024);
    tkit_sendf(c, "%s", ok);
    free(ok);
    json_t *r = tkit_recv(c);
    tkit_assert_result(r);
    ck_assert_str_eq(tkit_gets(r, "id"), "pad");
    /* one byte more: -32003 with id null, then the connection is closed */
    char *over = padded_request(1025);
    tkit_sendf(c, "%s", over);
    free(over);
    r = tkit_recv(c);
    tkit_assert_error(r, TKIT_LIMIT, NULL);
    ck_assert(json_is_null(json_object_get(r, "id")));
    /* the daemon drops what follows until the client's input ends (a
     * lingering close); ending it closes at once */
    tkit_half_close(c);
    ck_assert_msg(tkit_wait_eof(c, TKIT_DEADLINE_S), "not closed after a line over max_line");
    ck_assert_int_eq(tkit_stashed(c), 0);
    /* a long line without any newline is cut too, without waiting for one */
    tkit_conn *c2 = tkit_connect(d);
    size_t n = 200000;
    char *junk = malloc(n);
    memset(junk, 'x', n);
    int rc = tkit_try_send(c2, junk, n); /* may fail with EPIPE once closed */
    (void)rc;
    free(junk);
    r = tkit_recv(c2);
    tkit_assert_error(r, TKIT_LIMIT, NULL);
    tkit_half_close(c2);
    ck_assert(tkit_wait_eof(c2, TKIT_DEADLINE_S));
    /* the daemon keeps serving */
    tkit_conn *c3 = tkit_connect(d);
    tkit_ok(c3, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_default_max_line)
{
    /* 1 MiB by default: an 8 MiB line is refused, the daemon survives.  The
     * client writes all of it (the daemon reads and drops the rest before
     * closing: no broken pipe), then reads the -32003. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    size_t n = 8u << 20;
    char *big = malloc(n + 1);
    memset(big, ' ', n);
    big[n] = '\n';
    int rc = tkit_try_send(c, big, n + 1);
    ck_assert_msg(rc == 0, "the line was not taken whole: %s", strerror(errno));
    free(big);
    json_t *r = tkit_recv(c);
    tkit_assert_error(r, TKIT_LIMIT, NULL);
    tkit_half_close(c);
    ck_assert(tkit_wait_eof(c, TKIT_DEADLINE_S));
    tkit_conn *c2 = tkit_connect(d);
    tkit_ok(c2, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_max_pending)
{
    static const char *const cfg[] = {"control.max_pending=8", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    enum { N = 100 };
    char *buf = malloc(N * 128);
    size_t n = 0;
    for (int i = 0; i < N; i++)
        n += (size_t)sprintf(buf + n,
                             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"entity.spawn\","
                             "\"params\":{\"class\":\"counter\"}}\n",
                             i);
    tkit_send_raw(c, buf, n);
    free(buf);
    int results = 0, refused = 0;
    for (int i = 0; i < N; i++) {
        json_t *r = tkit_recv(c);
        ck_assert_msg(tkit_geti(r, "id") == i, "answer %d out of order: %s", i, tkit_dump(r));
        if (json_object_get(r, "error")) {
            tkit_assert_error(r, TKIT_LIMIT, NULL);
            refused++;
        } else {
            tkit_assert_result(r);
            results++;
        }
    }
    ck_assert_int_ge(results, 8);
    ck_assert_int_gt(refused, 0);
    /* refused requests changed nothing */
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), results);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_subscriber_never_reads)
{
    /* A subscriber to every frame that never reads loses events, costs
     * bounded memory, and never slows the frame loop. */
    static const char *const cfg[] = {"control.max_output=65536", NULL};
    /* Under AddressSanitizer, freed memory waits in a quarantine of up to
     * 256 MiB: keep it small here so that RSS measures the daemon. */
    const char *cur = getenv("ASAN_OPTIONS");
    char asan[1024];
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s%squarantine_size_mb=1", cur ? cur : "",
             cur && cur[0] ? ":" : "");
    const char *const env[] = {asan, NULL};
    tkit_opts o = {.config = cfg, .env = env};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *lazy = tkit_connect(d);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(lazy, "events.subscribe", "{\"topics\":[\"frame\"]}");
    tkit_wait_frames(c, 2000);
    long long rss0 = tkit_geti(tkit_ok(c, "engine.stats", NULL), "rss_bytes");
    tkit_wait_frames(c, 50000);
    long long rss1 = tkit_geti(tkit_ok(c, "engine.stats", NULL), "rss_bytes");
    long long bound = (tkit_valgrind() ? 64ll : 32ll) << 20;
    ck_assert_msg(rss1 - rss0 < bound, "rss grew by %lld bytes", rss1 - rss0);
    /* The lazy client is still connected and gets its answer after at
     * most its bounded backlog; the events it gets, before and after the
     * answer, have gaps. */
    long long id = tkit_send_request(lazy, "engine.info", NULL);
    json_t *r = tkit_recv_id(lazy, id);
    tkit_assert_result(r);
    long long prev = -1;
    bool gap = false;
    size_t events = 0, after = 0;
    while (after < 50) {
        if (tkit_stashed(lazy) == 0)
            after++;
        json_t *m = tkit_recv(lazy);
        long long f = tkit_geti(m, "params.frame");
        if (prev >= 0 && f != prev + 1)
            gap = true;
        prev = f;
        events++;
    }
    ck_assert_msg(events > 0, "no events at all");
    ck_assert_msg(gap, "no event was dropped over %zu events", events);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_unread_replies_disconnected)
{
    /* Replies that pile up past max_output: that client is disconnected,
     * the others and the frame loop carry on. */
    static const char *const cfg[] = {"control.max_output=1m", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":10000}");
    tkit_conn *hog = tkit_connect(d);
    enum { N = 300 };
    char *buf = malloc(N * 100);
    size_t n = 0;
    for (int i = 0; i < N; i++)
        n += (size_t)sprintf(buf + n,
                             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"entity.list\","
                             "\"params\":{\"limit\":10000}}\n",
                             i);
    tkit_send_raw(hog, buf, n);
    free(buf);
    tkit_wait_frames(c, 1000); /* the frame loop carries on meanwhile */
    ck_assert_msg(tkit_wait_eof(hog, TKIT_DEADLINE_S), "the hog was not disconnected");
    ck_assert_msg(tkit_stashed(hog) < N, "the hog got all %d replies", N);
    tkit_ok(c, "engine.info", NULL);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_stalled_mid_line)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *slow = tkit_connect(d);
    tkit_conn *c = tkit_connect(d);
    tkit_sendf(slow, "{\"jsonrpc\":\"2.0\",\"id\":\"slow\",\"meth");
    tkit_wait_frames(c, 5000); /* the frame loop does not wait for the rest */
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\"}");
    tkit_sendf(slow, "od\":\"world.status\"}\n");
    json_t *r = tkit_recv(slow);
    ck_assert_str_eq(tkit_gets(r, "id"), "slow");
    ck_assert_int_eq(tkit_geti(tkit_assert_result(r), "entities"), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_churn)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    for (int i = 0; i < 300; i++) {
        tkit_conn *x = tkit_connect(d);
        if (i % 3 == 0)
            tkit_sendf(x, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"engine.info\"}\n");
        if (i % 3 == 1)
            tkit_sendf(x, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ent");
        tkit_close(x);
    }
    wait_clients(c, 1);
    json_t *s = tkit_ok(c, "engine.stats", NULL);
    ck_assert_int_eq(tkit_geti(s, "clients"), 1);
    tkit_finish(d);
}
END_TEST

START_TEST(clients_large_response)
{
    /* entity.list answers up to 1,000,000 ids in one response. */
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    json_t *r = tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":200000}");
    long long first = tkit_geti(r, "first");
    ck_assert_int_eq(tkit_geti(r, "count"), 200000);
    r = tkit_ok(c, "entity.list", "{\"limit\":1000000}");
    ck_assert_int_eq(tkit_geti(r, "total"), 200000);
    json_t *ids = tkit_get(r, "ids");
    ck_assert_int_eq(json_array_size(ids), 200000);
    ck_assert_int_eq(json_integer_value(json_array_get(ids, 0)), first);
    ck_assert_int_eq(json_integer_value(json_array_get(ids, 199999)), first + 199999);
    tkit_wait_frames(c, 10);
    tkit_finish(d);
}
END_TEST

static Suite *clients_suite(void)
{
    Suite *s = suite_create("clients");
    TCase *tc = tcase_create("clients");
    tcase_set_timeout(tc, tkit_scale(60));
    tcase_add_test(tc, clients_200_concurrent);
    tcase_add_test(tc, clients_256_by_default);
    tcase_add_test(tc, clients_max_clients);
    tcase_add_test(tc, clients_half_close_answered);
    tcase_add_test(tc, clients_gone_with_requests_in_flight);
    tcase_add_test(tc, clients_line_at_and_over_max);
    tcase_add_test(tc, clients_default_max_line);
    tcase_add_test(tc, clients_max_pending);
    tcase_add_test(tc, clients_subscriber_never_reads);
    tcase_add_test(tc, clients_unread_replies_disconnected);
    tcase_add_test(tc, clients_stalled_mid_line);
    tcase_add_test(tc, clients_churn);
    tcase_add_test(tc, clients_large_response);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(clients_suite); }
