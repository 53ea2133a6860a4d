/*
 * test_world.c - levels and the world clocks (UE-SEMANTICS 2.1).
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "tickd/tickd.h"
#include "check_main.h"

static tk_engine_t *E;
static tk_world_t *W;

static void setup(void)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = 0.1;
    ck_assert_int_eq(tk_engine_new(&d, &E), 0);
    W = tk_engine_world(E);
}

static void teardown(void) { tk_engine_free(E); }

START_TEST(world_persistent_level_always_exists)
{
    ck_assert_uint_eq(tk_level_count(W), 1);
    ck_assert_str_eq(tk_level_name(W, TK_LEVEL_PERSISTENT), "persistent");
    tk_level_id id;
    ck_assert_int_eq(tk_level_find(W, "persistent", &id), 0);
    ck_assert_uint_eq(id, TK_LEVEL_PERSISTENT);
    ck_assert_int_eq(tk_level_remove(W, TK_LEVEL_PERSISTENT), TK_ESTATE);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(W), "persistent"));
    ck_assert_int_eq(tk_level_add(W, "persistent", &id), TK_EEXIST);
}
END_TEST

START_TEST(world_levels_add_find_remove)
{
    tk_level_id a, b, c;
    ck_assert_int_eq(tk_level_add(W, "arena", &a), 0);
    ck_assert_int_eq(tk_level_add(W, "lobby-2", &b), 0);
    ck_assert_int_eq(tk_level_add(W, "arena", &c), TK_EEXIST);
    ck_assert_uint_eq(tk_level_count(W), 3);
    ck_assert_uint_eq(tk_level_at(W, 0), TK_LEVEL_PERSISTENT);
    ck_assert_uint_eq(tk_level_at(W, 1), a);
    ck_assert_uint_eq(tk_level_at(W, 2), b);
    ck_assert_uint_eq(tk_level_at(W, 3), TK_LEVEL_NONE);
    ck_assert_int_eq(tk_level_remove(W, a), 0);
    ck_assert_int_eq(tk_level_remove(W, a), TK_ENOENT);
    ck_assert_ptr_null(tk_level_name(W, a));
    /* The slot is reused with a new generation: the old id stays dead. */
    ck_assert_int_eq(tk_level_add(W, "arena2", &c), 0);
    ck_assert_uint_ne(c, a);
    ck_assert_ptr_null(tk_level_name(W, a));
    ck_assert_uint_eq(tk_level_at(W, 2), c); /* creation order */
    ck_assert_int_eq(tk_level_find(W, "nope", &c), TK_ENOENT);
}
END_TEST

START_TEST(world_level_names_validated)
{
    tk_level_id id;
    ck_assert_int_eq(tk_level_add(W, "", &id), TK_EINVAL);
    ck_assert_int_eq(tk_level_add(W, "a b", &id), TK_EINVAL);
    ck_assert_int_eq(tk_level_add(W, "x/y", &id), TK_EINVAL);
    char longname[80];
    memset(longname, 'a', sizeof longname - 1);
    longname[79] = 0;
    ck_assert_int_eq(tk_level_add(W, longname, &id), TK_EINVAL);
    longname[63] = 0;
    ck_assert_int_eq(tk_level_add(W, longname, &id), 0);
    ck_assert_uint_eq(tk_level_count(W), 2);
}
END_TEST

START_TEST(world_level_limit)
{
    char name[32];
    int ok = 0;
    for (int i = 0; i < TK_LEVEL_MAX + 5; i++) {
        snprintf(name, sizeof name, "l%d", i);
        if (tk_level_add(W, name, NULL) == 0)
            ok++;
        else
            ck_assert_int_eq(tk_level_add(W, name, NULL), TK_ELIMIT);
    }
    ck_assert_int_eq(ok, TK_LEVEL_MAX - 1);
}
END_TEST

START_TEST(world_clocks_and_pause)
{
    tk_world_time t;
    for (int i = 0; i < 3; i++)
        tk_engine_frame(E);
    tk_world_set_paused(W, true);
    ck_assert(tk_world_paused(W));
    for (int i = 0; i < 2; i++)
        tk_engine_frame(E);
    tk_world_set_time_dilation(W, 2.0, NULL);
    tk_engine_frame(E);
    tk_world_get_time(W, &t);
    ck_assert_uint_eq(t.frame, 6);
    ck_assert_double_eq_tol(t.world_time, 0.3, 1e-12);   /* stopped while paused */
    ck_assert_double_eq_tol(t.unpaused_time, 0.7, 1e-12); /* 5 * 0.1 + 0.2 */
    ck_assert_double_eq_tol(t.real_time, 0.6, 1e-12);     /* undilated */
    ck_assert_double_eq_tol(t.dt, 0.2, 1e-12);
    ck_assert(t.paused);
    ck_assert(!t.in_frame);
    ck_assert_uint_eq(tk_world_time_ns(W), 300000000ull);
    tk_world_set_paused(W, false);
    tk_engine_frame(E);
    ck_assert_uint_eq(tk_world_time_ns(W), 500000000ull);
}
END_TEST

START_TEST(world_unpause_drops_pending_steps)
{
    tk_world_set_paused(W, true);
    ck_assert_int_eq(tk_world_step(W, 0), TK_EINVAL);
    ck_assert_int_eq(tk_world_step(W, 5), 0);
    ck_assert_int_eq(tk_world_step(W, 2), 0);
    ck_assert_uint_eq(tk_world_steps_pending(W), 7);
    tk_world_set_paused(W, false);
    ck_assert_uint_eq(tk_world_steps_pending(W), 0);
}
END_TEST

START_TEST(world_frame_stats)
{
    tk_engine_frame(E);
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(W, &fs);
    ck_assert(!fs.pause_frame);
    tk_world_set_paused(W, true);
    tk_engine_frame(E);
    tk_world_get_frame_stats(W, &fs);
    ck_assert(fs.pause_frame);
}
END_TEST

static Suite *world_suite(void)
{
    Suite *s = suite_create("world");
    TCase *tc = tcase_create("world");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, world_persistent_level_always_exists);
    tcase_add_test(tc, world_levels_add_find_remove);
    tcase_add_test(tc, world_level_names_validated);
    tcase_add_test(tc, world_level_limit);
    tcase_add_test(tc, world_clocks_and_pause);
    tcase_add_test(tc, world_unpause_drops_pending_steps);
    tcase_add_test(tc, world_frame_stats);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(world_suite)
