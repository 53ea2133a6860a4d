/*
 * test_snapfiles.c - snapshots against hostile files and extreme worlds,
 * through the real daemon: saves and loads stay inside [snapshot] dir;
 * symbolic links, FIFOs and directories are refused without blocking; a
 * symlink or FIFO at the temporary name is never followed; stale temporary
 * files are removed at start; errors never quote a file's content; a world
 * driven to non-finite props saves and loads back (also at start); a load
 * that fails leaves the world as it was; far slots in a snapshot load at the
 * cost of what they hold; a chain of prerequisites onto the last entity loads; world.save
 * answers later while frames go on.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* The world's document now, without the fields a save moves on. */
static json_t *world_doc(tkit_daemon *d, tkit_conn *c)
{
    const char *p = tkit_path(d, "probe.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", p);
    json_error_t je;
    json_t *doc = json_load_file(p, 0, &je);
    ck_assert_msg(doc != NULL, "%s: %s", p, je.text);
    json_object_del(doc, "saved_at");
    json_t *w = json_object_get(doc, "world");
    json_object_del(w, "frame");
    json_object_del(w, "unpaused_time");
    json_object_del(w, "real_time");
    json_object_del(w, "world_time");
    json_object_del(w, "world_time_ns");
    json_object_del(w, "unpaused_time_ns");
    json_object_del(w, "real_time_ns");
    json_object_del(w, "timers_ticked"); /* false after a pause frame */
    return doc;
}

static void assert_same_world(tkit_daemon *d, tkit_conn *c, json_t *before)
{
    json_t *after = world_doc(d, c);
    ck_assert_msg(json_equal(before, after), "the world changed:\n%s\n%s", tkit_dump(before),
                  tkit_dump(after));
    json_decref(after);
}

START_TEST(snapfiles_paths_stay_inside_dir)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":3}");
    /* A relative path names a file in the directory. */
    json_t *r = tkit_ok(c, "world.save", "{\"path\":\"rel.json\"}");
    ck_assert_str_eq(tkit_gets(r, "path"), tkit_path(d, "rel.json"));
    ck_assert_int_eq(tkit_geti(r, "entities"), 3);
    struct stat st;
    ck_assert_int_eq(stat(tkit_path(d, "rel.json"), &st), 0);
    tkit_ok(c, "world.load", "{\"path\":\"rel.json\"}");
    /* Escapes: .., absolute paths elsewhere, symlinks leading out. */
    const char *method[] = {"world.save", "world.load"};
    for (int m = 0; m < 2; m++) {
        tkit_err(c, TKIT_INVALID_PARAMS, "path: ", method[m], "{\"path\":\"../x.json\"}");
        tkit_err(c, TKIT_INVALID_PARAMS, "outside", method[m], "{\"path\":\"/etc/passwd\"}");
        tkit_err(c, TKIT_INVALID_PARAMS, "outside", method[m],
                 "{\"path\":\"/tmp/tickd-outside.json\"}");
    }
    ck_assert_int_ne(symlink("/etc/passwd", tkit_path(d, "link.json")), -1);
    tkit_err(c, TKIT_INVALID_PARAMS, "symbolic link", "world.load", "{\"path\":\"link.json\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "symbolic link", "world.save", "{\"path\":\"link.json\"}");
    ck_assert_int_eq(lstat(tkit_path(d, "link.json"), &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    /* A directory. */
    ck_assert_int_eq(mkdir(tkit_path(d, "sub"), 0700), 0);
    tkit_err(c, TKIT_INVALID_PARAMS, "a directory", "world.load", "{\"path\":\"sub\"}");
    tkit_finish(d);
}
END_TEST

START_TEST(snapfiles_fifo_never_blocks)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\"}");
    ck_assert_int_eq(mkfifo(tkit_path(d, "fifo.json"), 0600), 0);
    tkit_err(c, TKIT_INVALID_PARAMS, "not a regular file", "world.load",
             "{\"path\":\"fifo.json\"}");
    /* A FIFO at the temporary name the daemon would use (its pid), and a
     * symlink at the next one: neither is opened or followed. */
    char tmp[300];
    snprintf(tmp, sizeof tmp, "s.json.tmp.%ld", (long)tkit_pid(d));
    ck_assert_int_eq(mkfifo(tkit_path(d, tmp), 0600), 0);
    const char *victim = tkit_write_file(d, "victim.txt", "precious\n");
    snprintf(tmp, sizeof tmp, "s.json.tmp.%ld.1", (long)tkit_pid(d));
    ck_assert_int_ne(symlink(victim, tkit_path(d, tmp)), -1);
    json_t *r = tkit_ok(c, "world.save", "{\"path\":\"s.json\"}");
    ck_assert_int_eq(tkit_geti(r, "entities"), 1);
    ck_assert_str_eq(tkit_slurp(victim), "precious\n");
    tkit_ok(c, "world.load", "{\"path\":\"s.json\"}");
    ck_assert_int_ge(tkit_frame(c), 1); /* still running frames */
    tkit_finish(d);
}
END_TEST

START_TEST(snapfiles_errors_never_quote_content)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_write_file(d, "shadow", "root:$6$SECRETHASH:19000:0:99999:7:::\n");
    json_t *e = tkit_err(c, TKIT_INVALID_PARAMS, "not a tickd snapshot", "world.load",
                         "{\"path\":\"shadow\"}");
    ck_assert_msg(!strstr(tkit_dump(e), "root") && !strstr(tkit_dump(e), "SECRET"), "%s",
                  tkit_dump(e));
    tkit_write_file(d, "keys.json", "{\"SECRETKEY\":\"SECRETVALUE\"}");
    e = tkit_err(c, TKIT_INVALID_PARAMS, "not a tickd snapshot", "world.load",
                 "{\"path\":\"keys.json\"}");
    ck_assert_msg(!strstr(tkit_dump(e), "SECRET"), "%s", tkit_dump(e));
    tkit_write_file(d, "snapkeys.json",
                    "{\"format\":\"tickd-snapshot\",\"version\":1,\"SECRETKEY\":1}");
    e = tkit_err(c, TKIT_INVALID_PARAMS, "unknown key", "world.load",
                 "{\"path\":\"snapkeys.json\"}");
    ck_assert_msg(!strstr(tkit_dump(e), "SECRET"), "%s", tkit_dump(e));
    tkit_finish(d);
}
END_TEST

START_TEST(snapfiles_stale_temp_removed_at_start)
{
    /* A dead process's temporary file, and an unrelated file. */
    pid_t dead = fork();
    if (dead == 0)
        _exit(0);
    ck_assert_int_gt(dead, 0);
    ck_assert_int_eq(waitpid(dead, NULL, 0), dead);
    char stale[64], stale2[64];
    snprintf(stale, sizeof stale, "snapshot.json.tmp.%ld", (long)dead);
    snprintf(stale2, sizeof stale2, "other.json.tmp.%ld.2", (long)dead);
    const char *const files[] = {stale,  "half a snapshot", stale2, "half another",
                                 "snapshot.json.tmp.notes", "mine", NULL};
    tkit_opts o = {.files = files};
    tkit_daemon *d = tkit_start(&o);
    struct stat st;
    ck_assert_int_ne(stat(tkit_path(d, stale), &st), 0);
    ck_assert_int_ne(stat(tkit_path(d, stale2), &st), 0);
    ck_assert_int_eq(stat(tkit_path(d, "snapshot.json.tmp.notes"), &st), 0);
    ck_assert_msg(strstr(tkit_stderr(d), stale), "the removal is not logged: %s",
                  tkit_stderr(d));
    tkit_finish(d);
}
END_TEST

START_TEST(snapfiles_nonfinite_props_round_trip)
{
    char snap[900];
    snprintf(snap, sizeof snap, "snapshot.path=%s/exit.json", tkit_tmpdir());
    const char *const edits[] = {snap, "snapshot.save_on_exit=true", "snapshot.load_on_start=true",
                                 NULL};
    tkit_opts o = {.config = edits};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":2,\"time_dilation\":1e6}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\"}");
    tkit_ok(c, "world.set_time_dilation", "{\"value\":20}");
    /* 1: to +inf; 2: to -inf; 3: past 1e300 but finite. */
    tkit_ok(c, "entity.set_props", "{\"id\":1,\"props\":{\"x\":1e300,\"vx\":1e300}}");
    tkit_ok(c, "entity.set_props", "{\"id\":2,\"props\":{\"y\":-1e300,\"vy\":-1e300}}");
    tkit_ok(c, "entity.set_props", "{\"id\":3,\"props\":{\"z\":9e299,\"vz\":1e300}}");
    tkit_ok(c, "world.step", "{\"frames\":1000}");
    json_t *e1 = json_incref(tkit_ok(c, "entity.get", "{\"id\":1}"));
    json_t *e2 = json_incref(tkit_ok(c, "entity.get", "{\"id\":2}"));
    json_t *e3 = json_incref(tkit_ok(c, "entity.get", "{\"id\":3}"));
    ck_assert_str_eq(tkit_gets(e1, "props.x"), "inf");
    ck_assert_str_eq(tkit_gets(e2, "props.y"), "-inf");
    ck_assert(tkit_getd(e3, "props.z") > 1e300);
    tkit_ok(c, "world.save", "{\"path\":\"inf.json\"}");
    tkit_ok(c, "world.load", "{\"path\":\"inf.json\"}");
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "entity.get", "{\"id\":1}"), "props.x"), "inf");
    /* save_on_exit, then a restart that loads it. */
    tkit_close(c);
    ck_assert_int_eq(tkit_stop(d, SIGTERM), 0);
    tkit_free(d);
    d = tkit_start(&o);
    c = tkit_connect(d);
    json_t *a1 = tkit_ok(c, "entity.get", "{\"id\":1}");
    ck_assert_msg(json_equal(json_object_get(a1, "props"), json_object_get(e1, "props")),
                  "%s\n%s", tkit_dump(a1), tkit_dump(e1));
    json_t *a2 = tkit_ok(c, "entity.get", "{\"id\":2}");
    ck_assert(json_equal(json_object_get(a2, "props"), json_object_get(e2, "props")));
    json_t *a3 = tkit_ok(c, "entity.get", "{\"id\":3}");
    ck_assert(json_equal(json_object_get(a3, "props"), json_object_get(e3, "props")));
    json_decref(e1);
    json_decref(e2);
    json_decref(e3);
    tkit_finish(d);
}
END_TEST

/* A document text with one replacement, written to `name`; returns the path. */
static const char *edited(tkit_daemon *d, const char *text, const char *from, const char *to,
                          const char *name)
{
    const char *at = strstr(text, from);
    ck_assert_msg(at != NULL, "no %s in the snapshot", from);
    size_t pre = (size_t)(at - text), len = strlen(text);
    char *t = malloc(len + strlen(to) + 1);
    memcpy(t, text, pre);
    strcpy(t + pre, to);
    strcat(t, at + strlen(from));
    const char *p = tkit_write_file(d, name, t);
    free(t);
    return p;
}

START_TEST(snapfiles_failed_load_keeps_world)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":4,\"props\":{\"vx\":2}}");
    tkit_ok(c, "timer.set", "{\"rate\":5}");
    tkit_ok(c, "tickable.add", "{\"class\":\"counter\",\"tick_type\":\"always\"}");
    tkit_ok(c, "world.step", "{\"frames\":3}");
    const char *good = tkit_path(d, "good.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", good);
    const char *text = tkit_slurp(good);
    /* A different world is running when the bad loads come. */
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":2}");
    json_t *before = world_doc(d, c);
    json_t *doc = json_loads(text, 0, NULL);
    long long th = json_integer_value(json_object_get(
        json_array_get(json_object_get(doc, "timers"), 0), "handle"));
    long long tid = json_integer_value(json_object_get(
        json_array_get(json_object_get(doc, "tickables"), 0), "id"));
    json_decref(doc);
    char from[64], to[64];
    /* Failing documents: a tickable of an unknown class, a prerequisite on an
     * entity the document does not have, a timer with a negative rate. */
    snprintf(from, sizeof from, "\"class\":\"counter\"");
    const char *p = edited(d, text, from, "\"class\":\"nope\"", "badclass.json");
    tkit_err(c, TKIT_INVALID_PARAMS, NULL, "world.load", "{\"path\":\"%s\"}", p);
    assert_same_world(d, c, before);
    snprintf(from, sizeof from, "\"rate\":5");
    p = edited(d, text, from, "\"rate\":-5", "badrate.json");
    tkit_err(c, TKIT_INVALID_PARAMS, NULL, "world.load", "{\"path\":\"%s\"}", p);
    assert_same_world(d, c, before);
    /* Far slots cost what they hold (the 116-byte kind of document: one
     * timer in slot 16,777,214; a tickable in slot 1e8): they load. */
    snprintf(from, sizeof from, "\"id\":%lld", tid);
    snprintf(to, sizeof to, "\"id\":%lld", (tid & ~0xffffffffLL) | 100000000LL);
    p = edited(d, text, from, to, "tslot.json");
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", p);
    snprintf(from, sizeof from, "\"handle\":%lld", th);
    snprintf(to, sizeof to, "\"handle\":%lld", (th & ~0xffffffLL) | 16777214LL);
    p = edited(d, text, from, to, "timerslot.json");
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", p);
    p = tkit_write_file(d, "tiny.json",
                        "{\"format\":\"tickd-snapshot\",\"version\":1,\"world\":{},\"timers\":"
                        "[{\"handle\":33554430,\"rate\":1,\"remaining\":1}]}");
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", p);
    ck_assert_int_le(tkit_geti(tkit_ok(c, "engine.stats", NULL), "rss_bytes"), 512LL << 20);
    /* And the good one still loads. */
    json_t *r = tkit_ok(c, "world.load", "{\"path\":\"%s\"}", good);
    ck_assert_int_eq(tkit_geti(r, "entities"), 4);
    json_decref(before);
    tkit_finish(d);
}
END_TEST

/* 80,000 entities, each with the last one as prerequisite, load (the
 * lookups of prerequisite targets were a scan per reference). */
START_TEST(snapfiles_prerequisite_on_last_loads)
{
    enum { N = 80000 };
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    size_t cap = (size_t)N * 400 + 4096, n = 0;
    char *t = malloc(cap);
    n += (size_t)snprintf(t + n, cap - n,
                          "{\"format\":\"tickd-snapshot\",\"version\":1,\"world\":{\"paused\":"
                          "true},\"entities\":[");
    for (int i = 1; i <= N; i++)
        n += (size_t)snprintf(t + n, cap - n,
                              "%s{\"id\":%d,\"class\":\"counter\",\"tick\":{\"prerequisites\":"
                              "%s}}",
                              i > 1 ? "," : "", i, i < N ? "[{\"id\":80000}]" : "[]");
    snprintf(t + n, cap - n, "]}");
    const char *p = tkit_write_file(d, "chain.json", t);
    free(t);
    json_t *r = tkit_ok(c, "world.load", "{\"path\":\"%s\"}", p);
    ck_assert_int_eq(tkit_geti(r, "entities"), N);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.get", "{\"id\":1}"), "prerequisites[0]"), N);
    tkit_finish(d);
}
END_TEST

/* world.save is answered after the file is complete, frames go on while
 * it is written, and saves queue one after the other. */
START_TEST(snapfiles_save_answers_later)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":20000}");
    long long a = tkit_send_request(c, "world.save", "{\"path\":\"one.json\"}");
    long long b = tkit_send_request(c, "world.save", "{\"path\":\"two.json\"}");
    long long f = tkit_send_request(c, "engine.info", NULL);
    json_t *rf = tkit_recv_id(c, f);
    ck_assert_ptr_nonnull(json_object_get(rf, "result"));
    json_t *ra = tkit_assert_result(tkit_recv_id(c, a));
    json_t *rb = tkit_assert_result(tkit_recv_id(c, b));
    ck_assert_int_eq(tkit_geti(ra, "entities"), 20000);
    ck_assert_int_eq(tkit_geti(rb, "entities"), 20000);
    struct stat st;
    ck_assert_int_eq(stat(tkit_path(d, "two.json"), &st), 0);
    ck_assert_int_eq((long long)st.st_size, tkit_geti(rb, "bytes"));
    json_t *r = tkit_ok(c, "world.load", "{\"path\":\"one.json\"}");
    ck_assert_int_eq(tkit_geti(r, "entities"), 20000);
    /* A failing save answers its error later too. */
    ck_assert_int_eq(mkdir(tkit_path(d, "ro"), 0500), 0);
    if (geteuid() != 0)
        tkit_err(c, TKIT_INTERNAL_ERROR, "cannot create", "world.save",
                 "{\"path\":\"ro/x.json\"}");
    tkit_finish(d);
}
END_TEST

/* Entity `id`'s prop `key` in a snapshot file; *entities: how many. */
static double saved_prop(const char *path, long long id, const char *key, size_t *entities)
{
    json_error_t je;
    json_t *doc = json_load_file(path, 0, &je);
    ck_assert_msg(doc != NULL, "%s: %s", path, je.text);
    json_t *ents = json_object_get(doc, "entities");
    *entities = json_array_size(ents);
    double v = NAN;
    size_t i;
    json_t *e;
    json_array_foreach(ents, i, e)
        if (json_integer_value(json_object_get(e, "id")) == id)
            v = json_number_value(json_object_get(json_object_get(e, "props"), key));
    json_decref(doc);
    return v;
}

/*
 * A save holds exactly the requests its client sent before it: with class
 * states big enough to be copied before the fork (20,000 movers), a save
 * may wait for the end of the frame (the first one also for the copy's
 * memory), and meanwhile the client's later requests wait.  A batch of
 * world.save, entity.spawn and world.step on a paused world, three times:
 * each file has the entities and the positions from before the batch.  The
 * answer says what the start cost the frame thread.
 */
START_TEST(snapfiles_save_before_later_requests)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":20000,\"props\":{\"vx\":1}}");
    const char *p = tkit_path(d, "held.json");
    for (int round = 0; round < 3; round++) {
        double x = tkit_getd(tkit_ok(c, "entity.get", "{\"id\":1}"), "props.x");
        tkit_sendf(c,
                   "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"world.save\",\"params\":{\"path\":"
                   "\"held.json\"}},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"entity.spawn\","
                   "\"params\":{\"class\":\"counter\"}},{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":"
                   "\"world.step\",\"params\":{\"frames\":1}}]\n");
        json_t *r = tkit_recv(c);
        ck_assert_msg(json_is_array(r) && !tkit_find(r, "[0].error") &&
                          !tkit_find(r, "[1].error") && !tkit_find(r, "[2].error"),
                      "%s", tkit_dump(r));
        ck_assert_int_eq(tkit_geti(r, "[0].result.entities"), 20000 + round);
        /* the states of all but the first small chunks (in the heap) */
        ck_assert_int_ge(tkit_geti(r, "[0].result.copied_bytes"), 18000 * 48);
        ck_assert(tkit_getd(r, "[0].result.copy_ms") >= 0);
        ck_assert(tkit_getd(r, "[0].result.fork_ms") > 0);
        size_t n = 0;
        double sx = saved_prop(p, 1, "x", &n);
        ck_assert_int_eq((long long)n, 20000 + round);
        ck_assert_msg(sx == x, "round %d: saved x %.17g, before the batch %.17g", round, sx, x);
        ck_assert(tkit_getd(tkit_ok(c, "entity.get", "{\"id\":1}"), "props.x") > x);
    }
    tkit_finish(d);
}
END_TEST

/* The save child holds none of the daemon's sockets: a client the daemon
 * closes sees its end of file at once, not when the save ends. */
START_TEST(snapfiles_save_child_holds_no_socket)
{
    tkit_daemon *d = tkit_start(NULL);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"mover\",\"count\":200000}");
    long long s = tkit_send_request(c, "world.save", "{\"path\":\"big.json\"}");
    char p[128];
    snprintf(p, sizeof p, "/proc/%ld/task/%ld/children", (long)tkit_pid(d), (long)tkit_pid(d));
    long child = 0;
    /* Look for the child until it shows (or the wait's deadline: then the
     * save ended first and there is nothing to inspect). */
    for (double end = tkit_now() + tkit_scale(2); child == 0 && tkit_now() < end;) {
        FILE *f = fopen(p, "r");
        if (!f)
            break;
        if (fscanf(f, "%ld", &child) != 1)
            child = 0;
        fclose(f);
        if (child == 0)
            usleep(2000);
    }
    /* Once it writes its temporary file (it closes the rest before),
     * none of its descriptors may be a socket. */
    char fdp[64], sock[256] = "";
    snprintf(fdp, sizeof fdp, "/proc/%ld/fd", child);
    for (double end = tkit_now() + tkit_scale(2); child > 0 && tkit_now() < end;) {
        DIR *dh = opendir(fdp);
        if (!dh)
            break; /* the save ended */
        bool writing = false;
        sock[0] = '\0';
        for (struct dirent *de; (de = readdir(dh)) != NULL;) {
            char lp[400], target[256];
            snprintf(lp, sizeof lp, "%s/%s", fdp, de->d_name);
            ssize_t n = readlink(lp, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            if (strstr(target, "big.json.tmp."))
                writing = true;
            if (!strncmp(target, "socket:", 7))
                snprintf(sock, sizeof sock, "%.100s (fd %.20s)", target, de->d_name);
        }
        closedir(dh);
        if (writing) {
            ck_assert_msg(!sock[0], "the save child holds %s", sock);
            break;
        }
        usleep(1000);
    }
    json_t *r = tkit_assert_result(tkit_recv_id(c, s));
    ck_assert_int_eq(tkit_geti(r, "entities"), 200000);
    tkit_finish(d);
}
END_TEST

static Suite *snapfiles_suite(void)
{
    Suite *s = suite_create("snapfiles");
    TCase *tc = tcase_create("snapfiles");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, snapfiles_paths_stay_inside_dir);
    tcase_add_test(tc, snapfiles_fifo_never_blocks);
    tcase_add_test(tc, snapfiles_errors_never_quote_content);
    tcase_add_test(tc, snapfiles_stale_temp_removed_at_start);
    tcase_add_test(tc, snapfiles_nonfinite_props_round_trip);
    tcase_add_test(tc, snapfiles_failed_load_keeps_world);
    tcase_add_test(tc, snapfiles_prerequisite_on_last_loads);
    tcase_add_test(tc, snapfiles_save_answers_later);
    tcase_add_test(tc, snapfiles_save_before_later_requests);
    tcase_add_test(tc, snapfiles_save_child_holds_no_socket);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(snapfiles_suite); }
