/*
 * test_tick.c - Unreal's tick-function rules (UE-SEMANTICS 3), one case per
 * rule, driven with a fixed dt through the engine; execution order and the
 * group each function ran in come from the world's trace hook.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickd/tickd.h"
#include "check_main.h"

/* ---- harness -------------------------------------------------------------- */

typedef struct actor actor;
typedef void (*action_fn)(actor *a, tk_tick_ctx *ctx);

struct actor {
    char name[16];
    tk_tick_id id;
    int ticks;
    double accum;
    float last_dt;
    action_fn action;   /* run inside the tick, once, when set */
    int action_frame;   /* frame to run it in (-1 = any)        */
    void *arg;
};

#define MAX_LOG 4096
static struct {
    char name[16];
    tk_group group;
    uint64_t frame;
} g_log[MAX_LOG];
static int g_nlog;
static int g_warns, g_errors;
static char g_lastlog[512];

static tk_engine_t *E;
static tk_world_t *W;
static tk_class_id C_A, C_B, C_BATCH;
static int g_batch_calls;

static void on_trace(void *ud, tk_tick_id id, void *target, tk_group group)
{
    (void)ud;
    (void)id;
    actor *a = target;
    if (g_nlog < MAX_LOG) {
        snprintf(g_log[g_nlog].name, sizeof g_log[g_nlog].name, "%s", a->name);
        g_log[g_nlog].group = group;
        g_log[g_nlog].frame = tk_world_frame(W);
        g_nlog++;
    }
}

static void on_log(void *ud, tk_log_level lvl, const char *msg)
{
    (void)ud;
    if (lvl == TK_LOG_WARN)
        g_warns++;
    if (lvl == TK_LOG_ERROR)
        g_errors++;
    snprintf(g_lastlog, sizeof g_lastlog, "%s", msg);
}

static void actor_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    actor *a = target;
    a->ticks++;
    a->accum += dt;
    a->last_dt = dt;
    if (a->action && (a->action_frame < 0 || (uint64_t)a->action_frame == ctx->frame)) {
        action_fn f = a->action;
        a->action = NULL;
        f(a, ctx);
    }
}

static void actor_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    g_batch_calls++;
    for (size_t i = 0; i < n; i++)
        actor_tick(targets[i], dt, ctx);
}

static void setup(double dt)
{
    tk_engine_desc d;
    tk_engine_desc_default(&d);
    d.tick_rate = 0;
    d.fixed_dt = dt;
    ck_assert_int_eq(tk_engine_new(&d, &E), 0);
    W = tk_engine_world(E);
    tk_tick_class_desc a = {"a", actor_tick, NULL, false};
    tk_tick_class_desc b = {"b", actor_tick, NULL, false};
    tk_tick_class_desc c = {"batch", actor_tick, actor_batch, false};
    ck_assert_int_eq(tk_tick_class_register(W, &a, &C_A), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &b, &C_B), 0);
    ck_assert_int_eq(tk_tick_class_register(W, &c, &C_BATCH), 0);
    tk_world_set_trace(W, on_trace, NULL);
    tk_log_set_handler(on_log, NULL);
    g_nlog = 0;
    g_warns = g_errors = 0;
    g_batch_calls = 0;
}

static actor **g_actors;
static size_t g_nactors, g_capactors;

static void teardown(void)
{
    for (size_t i = 0; i < g_nactors; i++)
        free(g_actors[i]);
    free(g_actors);
    g_actors = NULL;
    g_nactors = g_capactors = 0;
    tk_engine_free(E);
    E = NULL;
    W = NULL;
    tk_log_set_handler(NULL, NULL);
}

static actor *mk(const char *name)
{
    actor *a = calloc(1, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    a->action_frame = -1;
    if (g_nactors == g_capactors) {
        g_capactors = g_capactors ? g_capactors * 2 : 64;
        g_actors = realloc(g_actors, g_capactors * sizeof *g_actors);
    }
    g_actors[g_nactors++] = a;
    return a;
}

static tk_tick_id reg_full(actor *a, tk_class_id cls, tk_group g, tk_group end, double interval,
                           const tk_tick_id *pre, size_t npre, tk_level_id level)
{
    tk_tick_desc d = {0};
    d.cls = cls;
    d.target = a;
    d.level = level;
    tk_tick_spec_default(&d.spec);
    d.spec.group = g;
    d.spec.end_group = end;
    d.spec.interval = interval;
    d.prerequisites = pre;
    d.n_prerequisites = npre;
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), 0);
    a->id = id;
    return id;
}

static tk_tick_id reg(actor *a, tk_group g)
{
    return reg_full(a, C_A, g, TK_GROUP_SAME, 0, NULL, 0, TK_LEVEL_PERSISTENT);
}

static void frame(void) { ck_assert_int_eq(tk_engine_frame(E), 0); }

/* Position of `name` in the log of frame `f` (-1 if absent); its group. */
static int find(const char *name, uint64_t f, tk_group *group)
{
    for (int i = 0, k = 0; i < g_nlog; i++) {
        if (g_log[i].frame != f)
            continue;
        if (strcmp(g_log[i].name, name) == 0) {
            if (group)
                *group = g_log[i].group;
            return k;
        }
        k++;
    }
    return -1;
}

static int count_in(const char *name, uint64_t f)
{
    int n = 0;
    for (int i = 0; i < g_nlog; i++)
        if (g_log[i].frame == f && strcmp(g_log[i].name, name) == 0)
            n++;
    return n;
}

static tk_group group_in(const char *name, uint64_t f)
{
    tk_group g = (tk_group)-1;
    ck_assert_msg(find(name, f, &g) >= 0, "%s did not tick in frame %llu", name,
                  (unsigned long long)f);
    return g;
}

/* ---- group order and demotion ------------------------------------------------- */

START_TEST(tick_group_order)
{
    setup(0.01);
    const char *names[] = {"g0", "g1", "g2", "g3", "g4", "g5", "g6"};
    for (int g = TK_GROUP_LAST_DEMOTABLE; g >= 0; g--)
        reg(mk(names[g]), (tk_group)g);
    frame();
    ck_assert_int_eq(g_nlog, 7);
    for (int g = 0; g < 7; g++) {
        ck_assert_str_eq(g_log[g].name, names[g]);
        ck_assert_int_eq(g_log[g].group, g);
    }
    teardown();
}
END_TEST

START_TEST(tick_demotion_past_start_physics)
{
    setup(0.01);
    tk_tick_id p = reg(mk("p"), TK_GROUP_START_PHYSICS);
    actor *a = mk("a");
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &p, 1, 0);
    frame();
    ck_assert_int_eq(group_in("p", 0), TK_GROUP_START_PHYSICS);
    ck_assert_int_eq(group_in("a", 0), TK_GROUP_DURING_PHYSICS);
    tk_tick_info info;
    ck_assert_int_eq(tk_tick_get(W, a->id, &info), 0);
    ck_assert_int_eq(info.actual_group, TK_GROUP_DURING_PHYSICS);
    teardown();
}
END_TEST

START_TEST(tick_demotion_past_end_physics)
{
    setup(0.01);
    tk_tick_id p = reg(mk("p"), TK_GROUP_END_PHYSICS);
    reg_full(mk("a"), C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &p, 1, 0);
    frame();
    ck_assert_int_eq(group_in("a", 0), TK_GROUP_POST_PHYSICS);
    teardown();
}
END_TEST

START_TEST(tick_demotion_into_demotable_group)
{
    setup(0.01);
    tk_tick_id p = reg(mk("p"), TK_GROUP_DURING_PHYSICS);
    reg_full(mk("a"), C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &p, 1, 0);
    /* Its own group is start_physics: not demoted, it stays there. */
    reg(mk("s"), TK_GROUP_START_PHYSICS);
    frame();
    ck_assert_int_eq(group_in("a", 0), TK_GROUP_DURING_PHYSICS);
    ck_assert_int_eq(group_in("s", 0), TK_GROUP_START_PHYSICS);
    ck_assert_int_lt(find("p", 0, NULL), find("a", 0, NULL));
    teardown();
}
END_TEST

START_TEST(tick_prerequisite_in_earlier_group_not_considered)
{
    setup(0.01);
    tk_tick_id p = reg(mk("p"), TK_GROUP_PRE_PHYSICS);
    reg_full(mk("a"), C_A, TK_GROUP_POST_PHYSICS, TK_GROUP_SAME, 0, &p, 1, 0);
    frame();
    ck_assert_int_eq(group_in("a", 0), TK_GROUP_POST_PHYSICS);
    teardown();
}
END_TEST

START_TEST(tick_end_groups)
{
    setup(0.01);
    actor *a = mk("a"), *b = mk("b"), *c = mk("c");
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_POST_PHYSICS, 0, NULL, 0, 0);
    reg_full(b, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_END_PHYSICS, 0, NULL, 0, 0);
    /* c's prerequisite a ends in post_physics: c's end group follows. */
    reg_full(c, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &a->id, 1, 0);
    frame();
    tk_tick_info i;
    tk_tick_get(W, a->id, &i);
    ck_assert_int_eq(i.actual_group, TK_GROUP_PRE_PHYSICS);
    ck_assert_int_eq(i.actual_end_group, TK_GROUP_POST_PHYSICS);
    tk_tick_get(W, b->id, &i);
    ck_assert_int_eq(i.actual_end_group, TK_GROUP_DURING_PHYSICS);
    tk_tick_get(W, c->id, &i);
    ck_assert_int_eq(i.actual_group, TK_GROUP_PRE_PHYSICS);
    ck_assert_int_eq(i.actual_end_group, TK_GROUP_POST_PHYSICS);
    ck_assert_int_lt(find("a", 0, NULL), find("c", 0, NULL));
    /* An end group before the group is invalid. */
    tk_tick_desc d = {0};
    d.cls = C_A;
    tk_tick_spec_default(&d.spec);
    d.spec.group = TK_GROUP_POST_PHYSICS;
    d.spec.end_group = TK_GROUP_PRE_PHYSICS;
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), TK_EINVAL);
    teardown();
}
END_TEST

/* ---- order within a group ------------------------------------------------------ */

START_TEST(tick_order_prerequisites_class_registration)
{
    setup(0.01);
    actor *b1 = mk("b1"), *a1 = mk("a1"), *b2 = mk("b2"), *a2 = mk("a2"), *d = mk("d");
    reg_full(b1, C_B, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, NULL, 0, 0);
    reg_full(a1, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, NULL, 0, 0);
    reg_full(b2, C_B, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, NULL, 0, 0);
    reg_full(a2, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, NULL, 0, 0);
    /* d (class a) depends on b2: it runs after it, whatever its class. */
    reg_full(d, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &b2->id, 1, 0);
    frame();
    ck_assert_int_eq(find("a1", 0, NULL), 0);
    ck_assert_int_eq(find("a2", 0, NULL), 1);
    ck_assert_int_eq(find("b1", 0, NULL), 2);
    ck_assert_int_eq(find("b2", 0, NULL), 3);
    ck_assert_int_eq(find("d", 0, NULL), 4);
    teardown();
}
END_TEST

START_TEST(tick_high_priority_first)
{
    setup(0.01);
    actor *n = mk("n"), *h = mk("h"), *h2 = mk("h2");
    reg(n, TK_GROUP_PRE_PHYSICS);
    tk_tick_desc d = {0};
    d.cls = C_B;
    d.target = h;
    tk_tick_spec_default(&d.spec);
    d.spec.high_priority = true;
    ck_assert_int_eq(tk_tick_register(W, &d, &h->id), 0);
    /* h2 is high priority but depends on n (normal, same group): n first. */
    d.target = h2;
    d.prerequisites = &n->id;
    d.n_prerequisites = 1;
    ck_assert_int_eq(tk_tick_register(W, &d, &h2->id), 0);
    frame();
    ck_assert_int_eq(find("h", 0, NULL), 0);
    ck_assert_int_lt(find("n", 0, NULL), find("h2", 0, NULL));
    teardown();
}
END_TEST

START_TEST(tick_cycle_logged_once_and_ignored)
{
    setup(0.01);
    actor *a = mk("a"), *b = mk("b");
    reg(a, TK_GROUP_PRE_PHYSICS);
    reg_full(b, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &a->id, 1, 0);
    ck_assert_int_eq(tk_tick_add_prerequisite(W, a->id, b->id), 0);
    for (int i = 0; i < 5; i++)
        frame();
    ck_assert_int_eq(g_warns, 1);
    ck_assert_ptr_nonnull(strstr(g_lastlog, "cycle"));
    ck_assert_int_eq(a->ticks, 5);
    ck_assert_int_eq(b->ticks, 5);
    /* Registration-order walk (Unreal's QueueTickFunction): a is visited
     * first and recurses into b, whose edge back to a closes the cycle and is
     * ignored; so b runs first and a after it. */
    ck_assert_int_lt(find("b", 4, NULL), find("a", 4, NULL));
    ck_assert_ptr_nonnull(strstr(g_lastlog, "tick"));
    tk_tick_info i;
    tk_tick_get(W, b->id, &i);
    ck_assert(i.cycle);
    ck_assert_int_eq(i.n_prerequisites, 1);
    tk_tick_get(W, a->id, &i);
    ck_assert(!i.cycle);
    teardown();
}
END_TEST

/* ---- mid-frame changes ---------------------------------------------------------- */

static void act_disable_arg(actor *a, tk_tick_ctx *ctx)
{
    (void)a;
    actor *t = a->arg;
    ck_assert_int_eq(tk_tick_set_enabled(ctx->world, t->id, false), 0);
}

START_TEST(tick_disable_mid_frame_cancels)
{
    setup(0.01);
    actor *a = mk("a"), *b = mk("b");
    reg(a, TK_GROUP_PRE_PHYSICS);
    reg(b, TK_GROUP_POST_PHYSICS);
    a->action = act_disable_arg;
    a->arg = b;
    frame();
    frame();
    ck_assert_int_eq(a->ticks, 2);
    ck_assert_int_eq(b->ticks, 0);
    tk_tick_info i;
    tk_tick_get(W, b->id, &i);
    ck_assert_int_eq(i.state, TK_TICK_DISABLED);
    ck_assert_int_eq(i.ticks, 0);
    teardown();
}
END_TEST

static void act_toggle_arg(actor *a, tk_tick_ctx *ctx)
{
    actor *t = a->arg;
    ck_assert_int_eq(tk_tick_set_enabled(ctx->world, t->id, false), 0);
    ck_assert_int_eq(tk_tick_set_enabled(ctx->world, t->id, true), 0);
}

START_TEST(tick_disable_and_enable_before_its_turn)
{
    setup(0.01);
    actor *a = mk("a"), *b = mk("b");
    reg(a, TK_GROUP_PRE_PHYSICS);
    reg(b, TK_GROUP_POST_PHYSICS);
    a->action = act_toggle_arg;
    a->arg = b;
    frame();
    ck_assert_int_eq(count_in("b", 0), 1);
    ck_assert_int_eq(group_in("b", 0), TK_GROUP_POST_PHYSICS);
    teardown();
}
END_TEST

static void act_enable_arg(actor *a, tk_tick_ctx *ctx)
{
    actor *t = a->arg;
    ck_assert_int_eq(tk_tick_set_enabled(ctx->world, t->id, true), 0);
}

START_TEST(tick_enable_mid_frame_ticks_later)
{
    setup(0.01);
    actor *a = mk("a"), *b = mk("b");
    reg(a, TK_GROUP_START_PHYSICS);
    reg(b, TK_GROUP_PRE_PHYSICS);
    tk_tick_set_enabled(W, b->id, false);
    a->action = act_enable_arg;
    a->arg = b;
    frame();
    /* Enabled during start_physics: queued after it, in during_physics. */
    ck_assert_int_eq(group_in("b", 0), TK_GROUP_DURING_PHYSICS);
    frame();
    ck_assert_int_eq(group_in("b", 1), TK_GROUP_PRE_PHYSICS);
    ck_assert_int_eq(b->ticks, 2);
    teardown();
}
END_TEST

/* Register a new function in group `arg` (as a tk_group in a->arg) during a tick. */
static actor *g_spawned;
static tk_group g_spawn_group;

static void act_spawn(actor *a, tk_tick_ctx *ctx)
{
    (void)a;
    g_spawned = mk("new");
    tk_tick_desc d = {0};
    d.cls = C_B;
    d.target = g_spawned;
    tk_tick_spec_default(&d.spec);
    d.spec.group = g_spawn_group;
    ck_assert_int_eq(tk_tick_register(ctx->world, &d, &g_spawned->id), 0);
}

static tk_group spawn_case(tk_group spawner_group, tk_group new_group)
{
    setup(0.01);
    actor *a = mk("a");
    reg(a, spawner_group);
    a->action = act_spawn;
    g_spawn_group = new_group;
    frame();
    tk_group got = (tk_group)-1;
    if (find("new", 0, &got) < 0)
        got = (tk_group)-1;
    ck_assert_int_eq(count_in("new", 0), got == (tk_group)-1 ? 0 : 1);
    frame();
    ck_assert_int_eq(group_in("new", 1), new_group);
    teardown();
    return got;
}

START_TEST(tick_register_mid_frame_every_group)
{
    /* Unreal's newly-spawned rule: queued after the group that registered it,
     * into the first group its own group and demotion allow. */
    ck_assert_int_eq(spawn_case(TK_GROUP_PRE_PHYSICS, TK_GROUP_PRE_PHYSICS), TK_GROUP_DURING_PHYSICS);
    ck_assert_int_eq(spawn_case(TK_GROUP_START_PHYSICS, TK_GROUP_PRE_PHYSICS), TK_GROUP_DURING_PHYSICS);
    ck_assert_int_eq(spawn_case(TK_GROUP_DURING_PHYSICS, TK_GROUP_PRE_PHYSICS), TK_GROUP_POST_PHYSICS);
    ck_assert_int_eq(spawn_case(TK_GROUP_END_PHYSICS, TK_GROUP_PRE_PHYSICS), TK_GROUP_POST_PHYSICS);
    ck_assert_int_eq(spawn_case(TK_GROUP_POST_PHYSICS, TK_GROUP_PRE_PHYSICS), TK_GROUP_POST_UPDATE_WORK);
    ck_assert_int_eq(spawn_case(TK_GROUP_POST_UPDATE_WORK, TK_GROUP_PRE_PHYSICS), TK_GROUP_LAST_DEMOTABLE);
    ck_assert_int_eq(spawn_case(TK_GROUP_LAST_DEMOTABLE, TK_GROUP_PRE_PHYSICS), TK_GROUP_NEWLY_SPAWNED);
    /* Its own group later than the next one: it waits for its own group. */
    ck_assert_int_eq(spawn_case(TK_GROUP_PRE_PHYSICS, TK_GROUP_POST_PHYSICS), TK_GROUP_POST_PHYSICS);
    /* start_physics asked for, spawned during pre_physics: not demoted (own group). */
    ck_assert_int_eq(spawn_case(TK_GROUP_PRE_PHYSICS, TK_GROUP_START_PHYSICS), TK_GROUP_START_PHYSICS);
}
END_TEST

static int g_chain;

static void chain_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    actor *a = target;
    actor_tick(target, dt, ctx);
    if (a->ticks == 1) {
        actor *n = mk("chain");
        tk_tick_desc d = {0};
        d.cls = (tk_class_id)(uintptr_t)a->arg;
        d.target = n;
        n->arg = a->arg;
        tk_tick_spec_default(&d.spec);
        d.spec.group = TK_GROUP_LAST_DEMOTABLE;
        ck_assert_int_eq(tk_tick_register(ctx->world, &d, &n->id), 0);
        g_chain++;
    }
}

START_TEST(tick_runaway_chain_cut_after_101_rounds)
{
    setup(0.01);
    tk_tick_class_desc cd = {"chain", chain_tick, NULL, false};
    tk_class_id cc;
    ck_assert_int_eq(tk_tick_class_register(W, &cd, &cc), 0);
    actor *a = mk("root");
    a->arg = (void *)(uintptr_t)cc;
    reg_full(a, cc, TK_GROUP_LAST_DEMOTABLE, TK_GROUP_SAME, 0, NULL, 0, 0);
    frame();
    /* root ticks in last_demotable, then 101 rounds of newly spawned each
     * spawn the next; the 102nd spawned one is discarded for this frame. */
    ck_assert_int_eq(count_in("chain", 0), 101);
    ck_assert_int_eq(g_chain, 102);
    ck_assert_int_eq(g_errors, 1);
    ck_assert_ptr_nonnull(strstr(g_lastlog, "runaway"));
    tk_world_frame_stats fs;
    tk_world_get_frame_stats(W, &fs);
    ck_assert_int_eq(fs.newly_spawned_rounds, 101);
    ck_assert_int_eq(tk_world_frame(W), 1);
    /* Next frame the discarded one ticks normally, and its chain runs away
     * again: one more spawn from it, then 101 rounds. */
    frame();
    tk_tick_counts tc;
    tk_tick_get_counts(W, &tc);
    ck_assert_uint_eq(tc.registered, 1 + 102 + 102);
    ck_assert_int_eq(g_errors, 2);
    teardown();
}
END_TEST

/* ---- intervals ---------------------------------------------------------------- */

START_TEST(tick_interval_frames_and_accumulated_dt)
{
    setup(0.01);
    actor *a = mk("a");
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0.1, NULL, 0, 0);
    uint64_t frames[32];
    int n = 0;
    for (int f = 0; f < 100; f++) {
        int before = a->ticks;
        frame();
        if (a->ticks != before)
            frames[n++] = (uint64_t)f;
    }
    ck_assert_int_eq(n, 10);
    ck_assert_int_eq(frames[0], 0);
    ck_assert_int_eq(frames[1], 11);
    for (int i = 2; i < n; i++)
        ck_assert_int_eq(frames[i], frames[i - 1] + 10);
    ck_assert_double_eq_tol(a->accum, 0.92, 1e-5);
    tk_tick_info i;
    tk_tick_get(W, a->id, &i);
    ck_assert_double_eq_tol(i.accum_dt, 0.92, 1e-5);
    ck_assert_int_eq(i.ticks, 10);
    ck_assert_int_eq(i.state, TK_TICK_COOLING_DOWN);
    teardown();
}
END_TEST

START_TEST(tick_interval_overrun_credit_keeps_rate)
{
    setup(1.0 / 60);
    actor *a = mk("a");
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0.03, NULL, 0, 0);
    for (int f = 0; f < 600; f++)
        frame();
    /* First tick at frame 0, then due at 1/60 + 0.03 + 0.03 k: 333 ticks in
     * 10 s (without credit it would be every other frame: 300). */
    ck_assert_int_eq(a->ticks, 333);
    teardown();
}
END_TEST

START_TEST(tick_interval_shorter_than_frame_ticks_every_frame)
{
    setup(0.1);
    actor *a = mk("a");
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0.01, NULL, 0, 0);
    for (int f = 0; f < 10; f++)
        frame();
    ck_assert_int_eq(a->ticks, 10); /* never more than once per frame */
    teardown();
}
END_TEST

START_TEST(tick_interval_change_reschedules)
{
    setup(0.1);
    actor *a = mk("a");
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 10.0, NULL, 0, 0);
    frame(); /* ticks (first), then cools for 10 s */
    frame();
    ck_assert_int_eq(a->ticks, 1);
    tk_tick_info i;
    tk_tick_get(W, a->id, &i);
    tk_tick_spec s = i.spec;
    s.interval = 0.25;
    ck_assert_int_eq(tk_tick_set_spec(W, a->id, &s), 0);
    /* Rescheduled to now + 0.25: due strictly after 0.25 s, i.e. frame 5. */
    frame();
    frame();
    ck_assert_int_eq(a->ticks, 1);
    frame();
    ck_assert_int_eq(a->ticks, 2);
    s.interval = 0;
    ck_assert_int_eq(tk_tick_set_spec(W, a->id, &s), 0);
    frame();
    frame();
    ck_assert_int_eq(a->ticks, 4);
    teardown();
}
END_TEST

/* ---- pause, dilation ----------------------------------------------------------- */

START_TEST(tick_pause_frames)
{
    setup(0.1);
    actor *a = mk("a"), *p = mk("p"), *pi = mk("pi");
    reg(a, TK_GROUP_PRE_PHYSICS);
    tk_tick_desc d = {0};
    d.cls = C_A;
    d.target = p;
    tk_tick_spec_default(&d.spec);
    d.spec.group = TK_GROUP_POST_PHYSICS;
    d.spec.even_when_paused = true;
    ck_assert_int_eq(tk_tick_register(W, &d, &p->id), 0);
    d.target = pi;
    d.spec.interval = 0.25;
    ck_assert_int_eq(tk_tick_register(W, &d, &pi->id), 0);
    frame(); /* everyone; pi first interval tick */
    tk_world_set_paused(W, true);
    for (int f = 0; f < 5; f++)
        frame();
    ck_assert_int_eq(a->ticks, 1);
    ck_assert_int_eq(p->ticks, 6);
    /* pi cools on unpaused time: first tick at 0.1 (frame 0), due 0.35 ->
     * ticks in the paused frame ending at 0.4, due 0.6 -> not before a frame
     * ending strictly after 0.6. */
    ck_assert_int_eq(pi->ticks, 2);
    tk_world_time t;
    tk_world_get_time(W, &t);
    ck_assert_double_eq_tol(t.world_time, 0.1, 1e-9);
    ck_assert_double_eq_tol(t.unpaused_time, 0.6, 1e-9);
    tk_world_set_paused(W, false);
    frame();
    ck_assert_int_eq(a->ticks, 2);
    teardown();
}
END_TEST

START_TEST(tick_world_step_while_paused)
{
    setup(0.1);
    actor *a = mk("a");
    reg(a, TK_GROUP_PRE_PHYSICS);
    ck_assert_int_eq(tk_world_step(W, 1), TK_ESTATE);
    tk_world_set_paused(W, true);
    ck_assert_int_eq(tk_world_step(W, 3), 0);
    for (int f = 0; f < 6; f++)
        frame();
    ck_assert_int_eq(a->ticks, 3);
    ck_assert(tk_world_paused(W));
    ck_assert_int_eq(tk_world_steps_pending(W), 0);
    tk_world_time t;
    tk_world_get_time(W, &t);
    ck_assert_double_eq_tol(t.world_time, 0.3, 1e-9);
    teardown();
}
END_TEST

START_TEST(tick_dilation_and_clamps)
{
    setup(0.1);
    actor *a = mk("a");
    reg(a, TK_GROUP_PRE_PHYSICS);
    double v;
    ck_assert_int_eq(tk_world_set_time_dilation(W, 2.0, &v), 0);
    frame();
    ck_assert_float_eq_tol(a->last_dt, 0.2f, 1e-6);
    ck_assert_int_eq(tk_world_set_time_dilation(W, 100.0, &v), 0);
    ck_assert_double_eq(v, 20.0);
    ck_assert_int_eq(tk_world_set_time_dilation(W, 0.0, &v), 0);
    ck_assert_double_eq(v, 0.0001);
    ck_assert_int_eq(tk_world_set_time_dilation(W, NAN, &v), TK_EINVAL);
    ck_assert_double_eq(tk_world_time_dilation(W), 0.0001);
    tk_world_set_time_dilation(W, 1.0, NULL);
    /* raw dt clamped to [0.0005, 0.4] before dilation */
    tk_engine_set_fixed_dt(E, 1.0);
    tk_engine_set_max_dt(E, 0);
    frame();
    ck_assert_float_eq_tol(a->last_dt, 0.4f, 1e-6);
    tk_engine_set_fixed_dt(E, 0.0001);
    frame();
    ck_assert_float_eq_tol(a->last_dt, 0.0005f, 1e-7);
    /* engine max_dt clamps the raw dt first; real time is undilated */
    tk_engine_set_max_dt(E, 0.05);
    tk_engine_set_fixed_dt(E, 0.1);
    tk_world_set_time_dilation(W, 2.0, NULL);
    frame();
    ck_assert_float_eq_tol(a->last_dt, 0.1f, 1e-6);
    tk_world_time t;
    tk_world_get_time(W, &t);
    ck_assert_double_eq_tol(t.raw_dt, 0.05, 1e-9);
    teardown();
}
END_TEST

START_TEST(tick_custom_dilation)
{
    setup(0.1);
    actor *a = mk("a"), *b = mk("b");
    reg(a, TK_GROUP_PRE_PHYSICS);
    tk_tick_desc d = {0};
    d.cls = C_A;
    d.target = b;
    tk_tick_spec_default(&d.spec);
    d.dilation = 0.5f;
    ck_assert_int_eq(tk_tick_register(W, &d, &b->id), 0);
    for (int i = 0; i < 4; i++)
        frame();
    ck_assert_double_eq_tol(b->accum, 0.2, 1e-6);
    ck_assert_int_eq(tk_tick_set_dilation(W, a->id, 3.0f), 0);
    frame();
    ck_assert_float_eq_tol(a->last_dt, 0.3f, 1e-6);
    tk_tick_info i;
    tk_tick_get(W, a->id, &i);
    ck_assert_double_eq_tol(i.accum_dt, 0.7, 1e-6);
    ck_assert_int_eq(i.ticks, 5);
    ck_assert_int_eq(tk_tick_set_dilation(W, a->id, -1.0f), TK_EINVAL); /* 0 is legal (dt 0) */
    teardown();
}
END_TEST

/* ---- removal ------------------------------------------------------------------ */

static void act_remove_level(actor *a, tk_tick_ctx *ctx)
{
    tk_level_id l = (tk_level_id)(uintptr_t)a->arg;
    ck_assert_int_eq(tk_level_remove(ctx->world, l), 0);
}

START_TEST(tick_remove_level_mid_frame)
{
    setup(0.01);
    tk_level_id arena;
    ck_assert_int_eq(tk_level_add(W, "arena", &arena), 0);
    actor *a = mk("a"), *x = mk("x"), *y = mk("y");
    reg(a, TK_GROUP_PRE_PHYSICS);
    reg_full(x, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, NULL, 0, arena);
    reg_full(y, C_B, TK_GROUP_POST_PHYSICS, TK_GROUP_SAME, 0, NULL, 0, arena);
    ck_assert_uint_eq(tk_level_tick_count(W, arena), 2);
    a->action = act_remove_level;
    a->arg = (void *)(uintptr_t)arena;
    frame();
    /* x (class a, same group, after a in order) and y never tick. */
    ck_assert_int_eq(x->ticks, 0);
    ck_assert_int_eq(y->ticks, 0);
    ck_assert(!tk_tick_alive(W, x->id));
    ck_assert_ptr_null(tk_level_name(W, arena));
    frame();
    ck_assert_int_eq(a->ticks, 2);
    teardown();
}
END_TEST

static void act_unregister_arg(actor *a, tk_tick_ctx *ctx)
{
    actor *t = a->arg;
    ck_assert_int_eq(tk_tick_unregister(ctx->world, t->id), 0);
}

START_TEST(tick_unregistered_by_another_in_same_frame)
{
    setup(0.01);
    actor *a = mk("a"), *b = mk("b");
    reg(a, TK_GROUP_PRE_PHYSICS);
    reg(b, TK_GROUP_PRE_PHYSICS); /* same class and group, after a */
    a->action = act_unregister_arg;
    a->arg = b;
    frame();
    ck_assert_int_eq(b->ticks, 0);
    ck_assert_int_eq(tk_tick_unregister(W, b->id), TK_ENOENT);
    teardown();
}
END_TEST

START_TEST(tick_unregister_prerequisite)
{
    setup(0.01);
    actor *p = mk("p"), *a = mk("a");
    reg(p, TK_GROUP_POST_PHYSICS);
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &p->id, 1, 0);
    frame();
    ck_assert_int_eq(group_in("a", 0), TK_GROUP_POST_PHYSICS);
    ck_assert_int_eq(tk_tick_unregister(W, p->id), 0);
    frame();
    ck_assert_int_eq(group_in("a", 1), TK_GROUP_PRE_PHYSICS);
    ck_assert_uint_eq(tk_tick_prerequisites(W, a->id, NULL, 0), 0);
    teardown();
}
END_TEST

START_TEST(tick_prerequisite_on_interval_function)
{
    setup(0.1);
    actor *p = mk("p"), *a = mk("a");
    reg_full(p, C_B, TK_GROUP_POST_PHYSICS, TK_GROUP_SAME, 0.25, NULL, 0, 0);
    reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, &p->id, 1, 0);
    /* Frames where p ticks, a follows it into post_physics; otherwise a's
     * prerequisite has no task and a stays in pre_physics. */
    for (int f = 0; f < 6; f++)
        frame();
    for (uint64_t f = 0; f < 6; f++) {
        bool p_ticked = count_in("p", f) == 1;
        tk_group g = group_in("a", f);
        ck_assert_int_eq(g, p_ticked ? TK_GROUP_POST_PHYSICS : TK_GROUP_PRE_PHYSICS);
        if (p_ticked)
            ck_assert_int_lt(find("p", f, NULL), find("a", f, NULL));
    }
    ck_assert_int_eq(p->ticks, 2); /* frames 0 and 3 (due 0.35); next due 0.6 is not < 0.6 */
    teardown();
}
END_TEST

/* ---- counters, batching, errors --------------------------------------------------- */

START_TEST(tick_counters)
{
    setup(0.05);
    actor *a = mk("a");
    tk_tick_desc d = {0};
    d.cls = C_BATCH;
    d.target = a;
    tk_tick_spec_default(&d.spec);
    ck_assert_int_eq(tk_tick_register(W, &d, &a->id), 0);
    for (int i = 0; i < 20; i++)
        frame();
    tk_tick_info i;
    ck_assert_int_eq(tk_tick_get(W, a->id, &i), 0);
    ck_assert_int_eq(i.ticks, 20);
    ck_assert_int_eq(i.last_frame, 19);
    ck_assert_float_eq_tol(i.last_dt, 0.05f, 1e-7);
    ck_assert_double_eq_tol(i.accum_dt, 1.0, 1e-5);
    /* Counters survive disabling, and keep counting after re-enabling. */
    tk_tick_set_enabled(W, a->id, false);
    frame();
    tk_tick_set_enabled(W, a->id, true);
    frame();
    tk_tick_get(W, a->id, &i);
    ck_assert_int_eq(i.ticks, 21);
    ck_assert_int_eq(i.last_frame, 21);
    teardown();
}
END_TEST

START_TEST(tick_batch_and_unbatched_identical)
{
    setup(0.02);
    tk_world_set_trace(W, NULL, NULL);
    actor *x[64], *y[64];
    for (int i = 0; i < 64; i++) {
        x[i] = mk("x");
        y[i] = mk("y");
        tk_tick_desc d = {0};
        d.cls = C_BATCH;
        d.target = x[i];
        tk_tick_spec_default(&d.spec);
        ck_assert_int_eq(tk_tick_register(W, &d, &x[i]->id), 0);
        d.target = y[i];
        d.spec.batch = false;
        ck_assert_int_eq(tk_tick_register(W, &d, &y[i]->id), 0);
    }
    for (int f = 0; f < 10; f++)
        frame();
    for (int i = 0; i < 64; i++) {
        ck_assert_int_eq(x[i]->ticks, y[i]->ticks);
        ck_assert_double_eq(x[i]->accum, y[i]->accum);
        tk_tick_info a, b;
        tk_tick_get(W, x[i]->id, &a);
        tk_tick_get(W, y[i]->id, &b);
        ck_assert_int_eq(a.ticks, b.ticks);
        ck_assert_double_eq(a.accum_dt, b.accum_dt);
    }
    ck_assert_int_ge(g_batch_calls, 10);
    ck_assert_int_le(g_batch_calls, 10 * 64);
    teardown();
}
END_TEST

START_TEST(tick_on_dedicated_server_false_never_registered)
{
    setup(0.01);
    actor *a = mk("a");
    tk_tick_desc d = {0};
    d.cls = C_A;
    d.target = a;
    tk_tick_spec_default(&d.spec);
    d.spec.on_dedicated_server = false;
    tk_tick_id id = 123;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), 0);
    ck_assert_uint_eq(id, TK_TICK_NONE);
    frame();
    ck_assert_int_eq(a->ticks, 0);
    teardown();
}
END_TEST

START_TEST(tick_errors_change_nothing)
{
    setup(0.01);
    actor *a = mk("a");
    tk_tick_id id;
    tk_tick_desc d = {0};
    d.cls = 999;
    d.target = a;
    tk_tick_spec_default(&d.spec);
    ck_assert_int_eq(tk_tick_register(W, &d, &id), TK_EINVAL);
    d.cls = C_A;
    d.spec.group = TK_GROUP_NEWLY_SPAWNED;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), TK_EINVAL);
    d.spec.group = TK_GROUP_PRE_PHYSICS;
    d.spec.interval = NAN;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), TK_EINVAL);
    ck_assert_ptr_nonnull(strstr(tk_world_last_error(W), "interval"));
    d.spec.interval = 0;
    d.level = 0x00050003;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), TK_ENOENT);
    d.level = 0;
    tk_tick_id bogus = 0xdead00000001ull;
    d.prerequisites = &bogus;
    d.n_prerequisites = 1;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), TK_ENOENT);
    tk_tick_counts c;
    tk_tick_get_counts(W, &c);
    ck_assert_uint_eq(c.registered, 0);
    d.prerequisites = NULL;
    d.n_prerequisites = 0;
    ck_assert_int_eq(tk_tick_register(W, &d, &id), 0);
    ck_assert_int_eq(tk_tick_add_prerequisite(W, id, id), TK_EINVAL);
    ck_assert_int_eq(tk_tick_add_prerequisite(W, id, bogus), TK_ENOENT);
    ck_assert_int_eq(tk_tick_remove_prerequisite(W, id, bogus), TK_ENOENT);
    tk_tick_spec s;
    tk_tick_spec_default(&s);
    s.group = TK_GROUP_POST_PHYSICS;
    s.end_group = TK_GROUP_PRE_PHYSICS;
    ck_assert_int_eq(tk_tick_set_spec(W, id, &s), TK_EINVAL);
    tk_tick_info i;
    tk_tick_get(W, id, &i);
    ck_assert_int_eq(i.spec.group, TK_GROUP_PRE_PHYSICS);
    ck_assert_int_eq(tk_tick_unregister(W, id), 0);
    ck_assert_int_eq(tk_tick_unregister(W, id), TK_ENOENT);
    ck_assert_int_eq(tk_tick_set_enabled(W, id, true), TK_ENOENT);
    ck_assert_int_eq(tk_tick_get(W, id, &i), TK_ENOENT);
    /* A reused slot gets a new generation: the old handle stays dead. */
    tk_tick_id id2;
    ck_assert_int_eq(tk_tick_register(W, &d, &id2), 0);
    ck_assert_uint_ne(id, id2);
    ck_assert(!tk_tick_alive(W, id));
    teardown();
}
END_TEST

START_TEST(tick_dump_iteration_and_counts)
{
    setup(0.1);
    for (int i = 0; i < 10; i++) {
        actor *a = mk("a");
        reg_full(a, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, i < 3 ? 5.0 : 0, NULL, 0, 0);
        if (i == 9)
            tk_tick_set_enabled(W, a->id, false);
    }
    frame();
    tk_tick_counts c;
    tk_tick_get_counts(W, &c);
    ck_assert_uint_eq(c.registered, 10);
    ck_assert_uint_eq(c.cooling_down, 3);
    ck_assert_uint_eq(c.disabled, 1);
    ck_assert_uint_eq(c.enabled, 6);
    uint64_t cur = 0;
    tk_tick_id id;
    int n = 0;
    while (tk_tick_next(W, &cur, &id))
        n++;
    ck_assert_int_eq(n, 10);
    teardown();
}
END_TEST

START_TEST(tick_many_register_unregister_mid_run)
{
    /* Churn through the lanes: registration, unregistration, moves. */
    setup(0.01);
    tk_world_set_trace(W, NULL, NULL);
    enum { N = 5000 };
    actor **as = calloc(N, sizeof *as);
    for (int i = 0; i < N; i++) {
        as[i] = mk("c");
        reg_full(as[i], i % 2 ? C_A : C_BATCH, (tk_group)(i % 7), TK_GROUP_SAME, 0, NULL, 0, 0);
    }
    for (int f = 0; f < 20; f++) {
        for (int i = f; i < N; i += 20) {
            if (tk_tick_alive(W, as[i]->id)) {
                tk_tick_unregister(W, as[i]->id);
            } else {
                as[i]->ticks = 0;
                reg_full(as[i], C_BATCH, (tk_group)(f % 7), TK_GROUP_SAME, 0, NULL, 0, 0);
            }
        }
        frame();
    }
    int alive = 0;
    for (int i = 0; i < N; i++) {
        if (tk_tick_alive(W, as[i]->id)) {
            alive++;
            tk_tick_info info;
            tk_tick_get(W, as[i]->id, &info);
            ck_assert_int_eq((int)info.ticks, as[i]->ticks);
        }
    }
    free(as);
    tk_tick_counts c;
    tk_tick_get_counts(W, &c);
    ck_assert_uint_eq(c.registered, (size_t)alive);
    teardown();
}
END_TEST

/* ---- big graphs --------------------------------------------------------------------- */

#define BIG 100000

static int g_order;
static int *g_ran_at; /* by actor index: position in the frame's run order */

static void order_tick(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    actor *a = target;
    a->ticks++;
    g_ran_at[a->action_frame] = g_order++;
}

/* `n` functions of one class in pre_physics; actor i's index is kept in
 * action_frame.  The last one has `interval_of_last`, and with one it ticks
 * in post_physics. */
static actor **mk_many(size_t n, tk_class_id cls, double interval_of_last)
{
    actor **as = calloc(n, sizeof *as);
    g_ran_at = calloc(n, sizeof *g_ran_at);
    for (size_t i = 0; i < n; i++) {
        as[i] = mk("n");
        as[i]->action_frame = (int)i;
        bool last = i == n - 1;
        reg_full(as[i], cls,
                 last && interval_of_last > 0 ? TK_GROUP_POST_PHYSICS : TK_GROUP_PRE_PHYSICS,
                 TK_GROUP_SAME, last ? interval_of_last : 0, NULL, 0, TK_LEVEL_PERSISTENT);
    }
    return as;
}

/* A reverse chain of BIG (each function waits for the next one registered):
 * placing the first walks the whole chain, with no recursion; every function
 * runs after its prerequisite. */
static void deep_chain(double interval_of_last)
{
    setup(0.1);
    tk_tick_class_desc cd = {"order", order_tick, NULL, false};
    tk_class_id cls;
    ck_assert_int_eq(tk_tick_class_register(W, &cd, &cls), 0);
    tk_world_set_trace(W, NULL, NULL);
    actor **as = mk_many(BIG, cls, interval_of_last);
    for (size_t k = 0; k + 1 < BIG; k++)
        CHECK((tk_tick_add_prerequisite(W, as[k]->id, as[k + 1]->id)) == (0), "k = %zu", k);
    frame();
    for (size_t k = 0; k < BIG; k++)
        CHECK((as[k]->ticks) == (1), "k = %zu", k);
    for (size_t k = 0; k + 1 < BIG; k++)
        CHECK((g_ran_at[k]) > (g_ran_at[k + 1]), "k = %zu", k);
    /* Closed into a cycle: the edge that closes it is dropped (one warning),
     * everything still ticks every frame. */
    ck_assert_int_eq(tk_tick_add_prerequisite(W, as[BIG - 1]->id, as[0]->id), 0);
    g_order = 0;
    frame();
    frame();
    ck_assert_int_eq(g_warns, 1);
    ck_assert_ptr_nonnull(strstr(g_lastlog, "cycle"));
    for (size_t k = 0; k < BIG; k++)
        CHECK((as[k]->ticks) == (3), "k = %zu", k);
    tk_tick_info i;
    ck_assert_int_eq(tk_tick_get(W, as[BIG - 1]->id, &i), 0);
    ck_assert(i.cycle);
    free(as);
    free(g_ran_at);
    teardown();
}

START_TEST(tick_deep_chain_and_cycle_iterative)
{
    deep_chain(0);
}
END_TEST

/* The same chain on an interval function in a later group, which moves the
 * whole chain in the frames it ticks: every other function is then
 * "dynamic", queued per frame prerequisites first, also without recursion. */
START_TEST(tick_deep_dynamic_chain_and_cycle_iterative)
{
    deep_chain(0.05);
}
END_TEST

/* 200,000 functions all waiting for one: registering the edges, placing,
 * then removing every dependent one by one stays linear (a quadratic walk
 * of the hub's dependent list would exceed the test's timeout). */
START_TEST(tick_many_dependents_of_one_linear)
{
    const size_t n = 200000;
    setup(0.1);
    tk_world_set_trace(W, NULL, NULL);
    tk_tick_class_desc cd = {"order", order_tick, NULL, false};
    tk_class_id cls;
    ck_assert_int_eq(tk_tick_class_register(W, &cd, &cls), 0);
    actor **as = mk_many(n, cls, 0);
    for (size_t k = 0; k + 1 < n; k++)
        CHECK((tk_tick_add_prerequisite(W, as[k]->id, as[n - 1]->id)) == (0), "k = %zu", k);
    /* And one function with every other one as its prerequisite. */
    actor *all = mk("all");
    all->action_frame = 0;
    reg_full(all, C_A, TK_GROUP_PRE_PHYSICS, TK_GROUP_SAME, 0, NULL, 0, TK_LEVEL_PERSISTENT);
    for (size_t k = 0; k + 1 < n; k++)
        CHECK((tk_tick_add_prerequisite(W, all->id, as[k]->id)) == (0), "k = %zu", k);
    frame();
    for (size_t k = 0; k + 1 < n; k++)
        CHECK((g_ran_at[k]) > (g_ran_at[n - 1]), "k = %zu", k);
    /* Remove in registration order: each removal finds its edge at once. */
    for (size_t k = 0; k + 1 < n; k++)
        CHECK((tk_tick_unregister(W, as[k]->id)) == (0), "k = %zu", k);
    frame();
    ck_assert_int_eq(as[n - 1]->ticks, 2);
    ck_assert_int_eq(all->ticks, 2);
    tk_tick_info i;
    ck_assert_int_eq(tk_tick_get(W, all->id, &i), 0);
    ck_assert_uint_eq(i.n_prerequisites, 0);
    free(as);
    free(g_ran_at);
    teardown();
}
END_TEST

static Suite *tick_suite(void)
{
    Suite *s = suite_create("tick");
    TCase *tc = tcase_create("rules");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, tick_group_order);
    tcase_add_test(tc, tick_demotion_past_start_physics);
    tcase_add_test(tc, tick_demotion_past_end_physics);
    tcase_add_test(tc, tick_demotion_into_demotable_group);
    tcase_add_test(tc, tick_prerequisite_in_earlier_group_not_considered);
    tcase_add_test(tc, tick_end_groups);
    tcase_add_test(tc, tick_order_prerequisites_class_registration);
    tcase_add_test(tc, tick_high_priority_first);
    tcase_add_test(tc, tick_cycle_logged_once_and_ignored);
    tcase_add_test(tc, tick_disable_mid_frame_cancels);
    tcase_add_test(tc, tick_disable_and_enable_before_its_turn);
    tcase_add_test(tc, tick_enable_mid_frame_ticks_later);
    tcase_add_test(tc, tick_register_mid_frame_every_group);
    tcase_add_test(tc, tick_runaway_chain_cut_after_101_rounds);
    tcase_add_test(tc, tick_interval_frames_and_accumulated_dt);
    tcase_add_test(tc, tick_interval_overrun_credit_keeps_rate);
    tcase_add_test(tc, tick_interval_shorter_than_frame_ticks_every_frame);
    tcase_add_test(tc, tick_interval_change_reschedules);
    tcase_add_test(tc, tick_pause_frames);
    tcase_add_test(tc, tick_world_step_while_paused);
    tcase_add_test(tc, tick_dilation_and_clamps);
    tcase_add_test(tc, tick_custom_dilation);
    tcase_add_test(tc, tick_remove_level_mid_frame);
    tcase_add_test(tc, tick_unregistered_by_another_in_same_frame);
    tcase_add_test(tc, tick_unregister_prerequisite);
    tcase_add_test(tc, tick_prerequisite_on_interval_function);
    tcase_add_test(tc, tick_counters);
    tcase_add_test(tc, tick_batch_and_unbatched_identical);
    tcase_add_test(tc, tick_on_dedicated_server_false_never_registered);
    tcase_add_test(tc, tick_errors_change_nothing);
    tcase_add_test(tc, tick_dump_iteration_and_counts);
    tcase_add_test(tc, tick_many_register_unregister_mid_run);
    suite_add_tcase(s, tc);
    /* Big graphs: Check's default timeout is the bound on their cost. */
    TCase *big = tcase_create("big");
    tcase_set_timeout(big, 60);
    tcase_add_test(big, tick_deep_chain_and_cycle_iterative);
    tcase_add_test(big, tick_deep_dynamic_chain_and_cycle_iterative);
    tcase_add_test(big, tick_many_dependents_of_one_linear);
    suite_add_tcase(s, big);
    return s;
}

TK_CHECK_MAIN(tick_suite)
