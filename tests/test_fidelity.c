/*
 * test_fidelity.c - the corners of Unreal's tick, timer and engine-loop rules
 * that issue 14 found tickd getting wrong, one case each.
 *
 * Scheduler cases run twice: on libtickd and on the reference model of
 * Unreal's scheduler (bench/ue_model.c, compiled in), with the same script of
 * between-frame and mid-frame changes; the frames each function ticked in
 * must be the ones written in the test, on both sides.  Timer cases drive the
 * engine with hooks: its wait and pre_world hooks are where the daemon runs
 * requests (Unreal's deferred commands).
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/ue_model.c"

#include "tickd/tickd.h"
#include "check_main.h"

#define NS_PER_MS 1000000ull
#define MAXF 8        /* functions per scenario  */
#define MAXT 64       /* ticks recorded per function */
#define MAXA 8        /* mid-frame actions          */

/* ======================================================================== */
/* A scenario on both sides                                                 */
/* ======================================================================== */

enum { SIDE_TICKD = 0, SIDE_MODEL = 1 };

typedef enum { OP_ENABLE, OP_DISABLE, OP_INTERVAL, OP_REGISTER, OP_ADD_PREREQ, OP_UNREGISTER } op_kind;

/* One change: to function `fn` (OP_REGISTER: registers fn, configured in
 * spec[fn], with prerequisite `arg` when >= 0). */
typedef struct op {
    op_kind kind;
    int fn;
    double value;              /* interval                                  */
    int arg;
} op;

/* Mid-frame actions: when function `actor` ticks in frame `frame`, run ops. */
typedef struct action {
    int actor;
    uint64_t frame;
    op ops[4];
    int n_ops;
} action;

typedef struct fspec {
    int group;
    double interval;
    bool ewp;
    bool enabled;
    int prereq;                /* slot, -1 none                             */
} fspec;

struct dual;

typedef struct ftarget {
    struct dual *d;
    int side, fn;
} ftarget;

typedef struct dual {
    int side;                  /* side being run                           */
    tk_engine_t *e;
    tk_world_t *w;
    tk_class_id cls;
    ue_model_t *m;
    double dt;                 /* s                                         */
    fspec spec[MAXF];
    int n;
    tk_tick_id tid[MAXF];
    ue_tick_id mid[MAXF];
    ftarget tgt[MAXF];
    uint64_t frames[2][MAXF][MAXT];
    int groups[2][MAXF][MAXT];
    unsigned nt[2][MAXF];
    action act[MAXA];
    int n_act;
    bool done[2][MAXA];
    int m_group;               /* group of the model tick being executed     */
} dual;

static uint64_t cur_frame(dual *d)
{
    return d->side == SIDE_TICKD ? tk_world_frame(d->w) : ue_model_frame_count(d->m);
}

static void d_apply_op(dual *d, const op *o);

static void on_tick(dual *d, int fn, int group)
{
    int s = d->side;
    unsigned k = d->nt[s][fn]++;
    if (k < MAXT) {
        d->frames[s][fn][k] = cur_frame(d);
        d->groups[s][fn][k] = group;
    }
    for (int i = 0; i < d->n_act; i++) {
        action *a = &d->act[i];
        if (a->actor != fn || a->frame != cur_frame(d) || d->done[s][i])
            continue;
        d->done[s][i] = true;
        for (int j = 0; j < a->n_ops; j++)
            d_apply_op(d, &a->ops[j]);
    }
}

static void tickd_fn(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    ftarget *t = target;
    on_tick(t->d, t->fn, (int)ctx->group);
}

static void model_fn(void *target, float dt, void *ctx)
{
    (void)dt;
    (void)ctx;
    ftarget *t = target;
    on_tick(t->d, t->fn, t->d->m_group);
}

static void model_hook(void *ud, ue_tick_id id, void *target, int group, float dt)
{
    (void)id;
    (void)target;
    (void)dt;
    ((dual *)ud)->m_group = group;
}

static void d_register(dual *d, int i)
{
    const fspec *f = &d->spec[i];
    d->tgt[i] = (ftarget){d, d->side, i};
    if (d->side == SIDE_TICKD) {
        tk_tick_desc td = {0};
        td.cls = d->cls;
        td.target = &d->tgt[i];
        tk_tick_spec_default(&td.spec);
        td.spec.group = (tk_group)f->group;
        td.spec.interval = f->interval;
        td.spec.even_when_paused = f->ewp;
        td.spec.enabled = f->enabled;
        if (f->prereq >= 0) {
            td.prerequisites = &d->tid[f->prereq];
            td.n_prerequisites = 1;
        }
        ck_assert_int_eq(tk_tick_register(d->w, &td, &d->tid[i]), 0);
    } else {
        ue_tick_desc md;
        ue_tick_desc_default(&md, model_fn, &d->tgt[i]);
        md.group = f->group;
        md.interval = f->interval;
        md.even_when_paused = f->ewp;
        md.enabled = f->enabled;
        md.order = (uint64_t)i + 1;
        if (f->prereq >= 0) {
            md.prerequisites = &d->mid[f->prereq];
            md.n_prerequisites = 1;
        }
        ck_assert_int_eq(ue_model_register(d->m, &md, &d->mid[i]), 0);
    }
}

static void d_apply_op(dual *d, const op *o)
{
    bool t = d->side == SIDE_TICKD;
    switch (o->kind) {
    case OP_ENABLE:
    case OP_DISABLE: {
        bool en = o->kind == OP_ENABLE;
        ck_assert_int_eq(t ? tk_tick_set_enabled(d->w, d->tid[o->fn], en)
                           : ue_model_set_enabled(d->m, d->mid[o->fn], en),
                         0);
        break;
    }
    case OP_INTERVAL:
        if (t) {
            tk_tick_info in;
            ck_assert_int_eq(tk_tick_get(d->w, d->tid[o->fn], &in), 0);
            in.spec.interval = o->value;
            ck_assert_int_eq(tk_tick_set_spec(d->w, d->tid[o->fn], &in.spec), 0);
        } else {
            ck_assert_int_eq(ue_model_set_interval(d->m, d->mid[o->fn], o->value), 0);
        }
        break;
    case OP_REGISTER:
        d_register(d, o->fn);
        break;
    case OP_ADD_PREREQ:
        ck_assert_int_eq(t ? tk_tick_add_prerequisite(d->w, d->tid[o->fn], d->tid[o->arg])
                           : ue_model_add_prerequisite(d->m, d->mid[o->fn], d->mid[o->arg]),
                         0);
        break;
    case OP_UNREGISTER:
        ck_assert_int_eq(t ? tk_tick_unregister(d->w, d->tid[o->fn])
                           : ue_model_unregister(d->m, d->mid[o->fn]),
                         0);
        break;
    }
}

static dual *dual_new(double dt)
{
    dual *d = calloc(1, sizeof *d);
    d->dt = dt;
    tk_engine_desc ed;
    tk_engine_desc_default(&ed);
    ed.tick_rate = 0;
    ed.fixed_dt = dt;
    ed.max_dt = 0;
    ck_assert_int_eq(tk_engine_new(&ed, &d->e), 0);
    d->w = tk_engine_world(d->e);
    tk_tick_class_desc cd = {.name = "probe", .fn = tickd_fn};
    ck_assert_int_eq(tk_tick_class_register(d->w, &cd, &d->cls), 0);
    ue_model_config mc = {0};
    mc.registration_order = true;
    mc.cancel_on_unregister = true;
    mc.pause_merge_each_frame = true; /* tickd: UE 5.4's pause frames */
    mc.on_exec = model_hook;
    mc.exec_ud = d;
    d->m = ue_model_new(&mc);
    return d;
}

static void dual_free(dual *d)
{
    tk_engine_free(d->e);
    ue_model_free(d->m);
    free(d);
}

/* Add function i (registered at the start, unless `later`). */
static int fn_add(dual *d, int group, double interval, bool ewp, bool enabled, int prereq)
{
    int i = d->n++;
    d->spec[i] = (fspec){group, interval, ewp, enabled, prereq};
    return i;
}

static action *act_add(dual *d, int actor, uint64_t frame)
{
    action *a = &d->act[d->n_act++];
    a->actor = actor;
    a->frame = frame;
    return a;
}

static void act_op(action *a, op_kind k, int fn, double value, int arg)
{
    a->ops[a->n_ops++] = (op){k, fn, value, arg};
}

/* Between-frame script: before frame `frame`, ops (pause toggles too). */
typedef struct between {
    uint64_t frame;
    int pause;                 /* -1 leave, 0 unpause, 1 pause              */
    op o;
    bool has_op;
} between;

/* Run `frames` frames on one side, the first `n_reg` functions registered
 * before frame 0. */
static void run_side(dual *d, int side, int n_reg, unsigned frames, const between *bw, int n_bw)
{
    d->side = side;
    for (int i = 0; i < n_reg; i++)
        d_register(d, i);
    for (unsigned f = 0; f < frames; f++) {
        for (int k = 0; k < n_bw; k++) {
            if (bw[k].frame != f)
                continue;
            if (bw[k].pause >= 0) {
                if (side == SIDE_TICKD)
                    tk_world_set_paused(d->w, bw[k].pause != 0);
                else
                    ue_model_set_paused(d->m, bw[k].pause != 0);
            }
            if (bw[k].has_op)
                d_apply_op(d, &bw[k].o);
        }
        if (side == SIDE_TICKD)
            ck_assert_int_eq(tk_engine_frame(d->e), 0);
        else
            ue_model_frame(d->m, tk_s_to_ns(d->dt));
    }
}

static void run_both(dual *d, int n_reg, unsigned frames, const between *bw, int n_bw)
{
    run_side(d, SIDE_TICKD, n_reg, frames, bw, n_bw);
    run_side(d, SIDE_MODEL, n_reg, frames, bw, n_bw);
}

static void fmt_frames(char *buf, size_t cap, const dual *d, int side, int fn)
{
    int w = 0;
    buf[0] = 0;
    for (unsigned k = 0; k < d->nt[side][fn] && k < MAXT && (size_t)w < cap; k++)
        w += snprintf(buf + w, cap - (size_t)w, " %llu@%d",
                      (unsigned long long)d->frames[side][fn][k], d->groups[side][fn][k]);
}

/* Function `fn` ticked exactly in frames want[0..n) on both sides (and in
 * the same groups on both). */
static void expect_frames(const dual *d, int fn, const uint64_t *want, unsigned n)
{
    char a[512], b[512], c[512] = "";
    int w = 0;
    for (unsigned k = 0; k < n; k++)
        w += snprintf(c + w, sizeof c - (size_t)w, " %llu", (unsigned long long)want[k]);
    fmt_frames(a, sizeof a, d, SIDE_TICKD, fn);
    fmt_frames(b, sizeof b, d, SIDE_MODEL, fn);
    for (int side = 0; side < 2; side++) {
        bool ok = d->nt[side][fn] == n;
        for (unsigned k = 0; ok && k < n; k++)
            ok = d->frames[side][fn][k] == want[k] &&
                 d->groups[side][fn][k] == d->groups[!side][fn][k];
        ck_assert_msg(ok, "function %d: want frames%s; tickd ticked%s; the model ticked%s", fn,
                      c, a, b);
    }
}

#define EXPECT(d, fn, ...)                                                                         \
    do {                                                                                           \
        static const uint64_t want_[] = {__VA_ARGS__};                                             \
        expect_frames((d), (fn), want_, sizeof want_ / sizeof want_[0]);                           \
    } while (0)

/* ======================================================================== */
/* 2. Disable and re-enable an interval function in one frame               */
/* ======================================================================== */

/*
 * Interval 0.1 s at dt 0.01 s ticks in frames 0, 11, 21, 31 (overrun credit
 * keeps the phase).  Toggled in frame 11 by a function of `actor_group`:
 * Unreal's disable takes it off the reschedule list; the enable sends it
 * through NewlySpawned, where it is not queued again (visited) but is
 * rescheduled for its full interval from the end of frame 11: frames 22, 32.
 * Its frame-11 tick runs whether the toggle comes before it (the queued task
 * finds it enabled again) or after.
 */
static void toggle_case(int fn_group, int actor_group)
{
    dual *d = dual_new(0.01);
    int a = fn_add(d, fn_group, 0.1, false, true, -1);
    int x = fn_add(d, actor_group, 0, false, true, -1);
    action *ac = act_add(d, x, 11);
    act_op(ac, OP_DISABLE, a, 0, 0);
    act_op(ac, OP_ENABLE, a, 0, 0);
    run_both(d, 2, 40, NULL, 0);
    EXPECT(d, a, 0, 11, 22, 32);
    dual_free(d);
}

START_TEST(fidelity_toggle_interval_after_it_ran)
{
    toggle_case(TK_GROUP_PRE_PHYSICS, TK_GROUP_POST_PHYSICS);
}
END_TEST

START_TEST(fidelity_toggle_interval_before_it_ran)
{
    toggle_case(TK_GROUP_POST_PHYSICS, TK_GROUP_PRE_PHYSICS);
}
END_TEST

START_TEST(fidelity_toggle_interval_last_demotable)
{
    toggle_case(TK_GROUP_LAST_DEMOTABLE, TK_GROUP_PRE_PHYSICS);
    toggle_case(TK_GROUP_PRE_PHYSICS, TK_GROUP_LAST_DEMOTABLE);
    toggle_case(TK_GROUP_LAST_DEMOTABLE, TK_GROUP_POST_UPDATE_WORK);
}
END_TEST

/* ======================================================================== */
/* 3. Enable, then change the interval, in one frame                        */
/* ======================================================================== */

/*
 * An interval function that cooled down before (bWasInterval) and was
 * disabled, enabled again and given a new interval by a tick of frame 5:
 * UpdateTickIntervalAndCoolDown takes it out of NewlySpawned and reschedules
 * it for 0.05 s from the end of frame 5, so its next tick is frame 11, not a
 * newly-spawned tick in frame 5.
 */
static void enable_interval_case(int fn_group, int actor_group)
{
    dual *d = dual_new(0.01);
    int a = fn_add(d, fn_group, 0.1, false, true, -1);
    int x = fn_add(d, actor_group, 0, false, true, -1);
    between bw[] = {{.frame = 1, .pause = -1, .o = {OP_DISABLE, a, 0, 0}, .has_op = true}};
    action *ac = act_add(d, x, 5);
    act_op(ac, OP_ENABLE, a, 0, 0);
    act_op(ac, OP_INTERVAL, a, 0.05, 0);
    run_both(d, 2, 20, bw, 1);
    EXPECT(d, a, 0, 11, 16);
    dual_free(d);
}

START_TEST(fidelity_enable_then_interval)
{
    enable_interval_case(TK_GROUP_PRE_PHYSICS, TK_GROUP_POST_PHYSICS);
    enable_interval_case(TK_GROUP_POST_PHYSICS, TK_GROUP_PRE_PHYSICS);
    enable_interval_case(TK_GROUP_PRE_PHYSICS, TK_GROUP_POST_UPDATE_WORK);
}
END_TEST

/* ======================================================================== */
/* 4. A prerequisite disabled after it was queued                           */
/* ======================================================================== */

/*
 * P (post_physics) is queued at StartFrame; a pre_physics tick of frame 2
 * disables it, then registers D (pre_physics) naming P.  Unreal's P keeps its
 * queued task (which will find P disabled), so D, queued after pre_physics,
 * still waits for it: D runs in post_physics in frame 2, in pre_physics
 * afterwards (P has no task any more).
 */
static void disabled_prereq_case(double p_interval, bool p_dynamic)
{
    dual *d = dual_new(0.01);
    int q = p_dynamic ? fn_add(d, TK_GROUP_POST_PHYSICS, 0, false, true, -1) : -1;
    int p = fn_add(d, TK_GROUP_POST_PHYSICS, p_interval, false, true, q);
    int x = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, -1);
    int dd = d->n;
    fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, p);
    action *ac = act_add(d, x, 2);
    act_op(ac, OP_DISABLE, p, 0, 0);
    act_op(ac, OP_REGISTER, dd, 0, 0);
    run_both(d, dd, 5, NULL, 0);
    EXPECT(d, p, 0, 1);
    EXPECT(d, dd, 2, 3, 4);
    for (int side = 0; side < 2; side++) {
        ck_assert_int_eq(d->groups[side][dd][0], TK_GROUP_POST_PHYSICS);
        ck_assert_int_eq(d->groups[side][dd][1], TK_GROUP_PRE_PHYSICS);
    }
    dual_free(d);
}

START_TEST(fidelity_disabled_prerequisite_still_places)
{
    disabled_prereq_case(0, false);
    disabled_prereq_case(0, true);
}
END_TEST

/*
 * The same with a prerequisite that is itself newly spawned: P (post_physics)
 * is registered by a pre_physics tick of frame 2 and queued after
 * pre_physics; a start_physics tick then disables it and registers D
 * (pre_physics) naming it.  D is queued after start_physics and waits for
 * P's (cancelled) task: post_physics in frame 2.  P never ticks.
 */
START_TEST(fidelity_disabled_newly_spawned_prerequisite_still_places)
{
    dual *d = dual_new(0.01);
    int x1 = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, -1);
    int x2 = fn_add(d, TK_GROUP_START_PHYSICS, 0, false, true, -1);
    int p = fn_add(d, TK_GROUP_POST_PHYSICS, 0, false, true, -1);
    int dd = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, p);
    act_op(act_add(d, x1, 2), OP_REGISTER, p, 0, 0);
    action *ac = act_add(d, x2, 2);
    act_op(ac, OP_DISABLE, p, 0, 0);
    act_op(ac, OP_REGISTER, dd, 0, 0);
    run_both(d, 2, 4, NULL, 0);
    EXPECT(d, x1, 0, 1, 2, 3);
    ck_assert_uint_eq(d->nt[SIDE_TICKD][p], 0);
    ck_assert_uint_eq(d->nt[SIDE_MODEL][p], 0);
    EXPECT(d, dd, 2, 3);
    for (int side = 0; side < 2; side++) {
        ck_assert_int_eq(d->groups[side][dd][0], TK_GROUP_POST_PHYSICS);
        ck_assert_int_eq(d->groups[side][dd][1], TK_GROUP_PRE_PHYSICS);
    }
    dual_free(d);
}
END_TEST

/*
 * Enabled again after it was visited, then given an interval in the same
 * frame: still in Unreal's NewlySpawned when its interval changes (it never
 * had one, so nothing is rescheduled then), it is rescheduled there with
 * the new interval: its queued tick runs, then it cools down 0.1 s.
 */
START_TEST(fidelity_toggle_then_new_interval)
{
    dual *d = dual_new(0.01);
    int a = fn_add(d, TK_GROUP_POST_PHYSICS, 0, false, true, -1);
    int x = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, -1);
    action *ac = act_add(d, x, 3);
    act_op(ac, OP_DISABLE, a, 0, 0);
    act_op(ac, OP_ENABLE, a, 0, 0);
    act_op(ac, OP_INTERVAL, a, 0.1, 0);
    run_both(d, 2, 16, NULL, 0);
    EXPECT(d, a, 0, 1, 2, 3, 14);
    dual_free(d);
}
END_TEST

static void quiet(void *ud, tk_log_level level, const char *msg)
{
    (void)ud;
    (void)level;
    (void)msg;
}

/* ======================================================================== */
/* Which edge of a cycle is ignored, after an unregistration                */
/* ======================================================================== */

/*
 * R (post_physics) and S (pre_physics) wait for each other.  Unreal walks
 * the enabled functions in registration order (P, Q, R, S, X) and ignores
 * the edge that closes the cycle on its walk.  With P <- X <- S, the walk
 * from P meets S first, then R, whose edge to S closes the cycle: S waits
 * for R and is demoted to post_physics.  Once X is gone the walk from Q
 * meets R first: S's edge to R is the ignored one, S runs in pre_physics.
 */
START_TEST(fidelity_cycle_edge_after_unregister)
{
    dual *d = dual_new(0.01);
    int p = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, -1);
    int q = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, -1);
    int r = fn_add(d, TK_GROUP_POST_PHYSICS, 0, false, true, -1);
    int sfn = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, -1);
    int x = fn_add(d, TK_GROUP_PRE_PHYSICS, 0, false, true, -1);
    between bw[] = {
        {.frame = 0, .pause = -1, .o = {OP_ADD_PREREQ, p, 0, x}, .has_op = true},
        {.frame = 0, .pause = -1, .o = {OP_ADD_PREREQ, x, 0, sfn}, .has_op = true},
        {.frame = 0, .pause = -1, .o = {OP_ADD_PREREQ, q, 0, r}, .has_op = true},
        {.frame = 0, .pause = -1, .o = {OP_ADD_PREREQ, r, 0, sfn}, .has_op = true},
        {.frame = 0, .pause = -1, .o = {OP_ADD_PREREQ, sfn, 0, r}, .has_op = true},
        {.frame = 2, .pause = -1, .o = {OP_UNREGISTER, x, 0, 0}, .has_op = true},
    };
    tk_log_set_handler(quiet, NULL); /* the cycle's warning */
    run_both(d, 5, 4, bw, 6);
    tk_log_set_handler(NULL, NULL);
    EXPECT(d, sfn, 0, 1, 2, 3);
    for (int side = 0; side < 2; side++) {
        ck_assert_int_eq(d->groups[side][sfn][1], TK_GROUP_POST_PHYSICS);
        ck_assert_int_eq(d->groups[side][sfn][2], TK_GROUP_PRE_PHYSICS);
        ck_assert_int_eq(d->groups[side][sfn][3], TK_GROUP_PRE_PHYSICS);
    }
    dual_free(d);
}
END_TEST

/* ======================================================================== */
/* 6. An even_when_paused interval function's interval changed while paused */
/* ======================================================================== */

/*
 * tickd cools even_when_paused functions on unpaused time across pause
 * frames (UE 5.4's pause frames, a declared difference).  An interval change
 * between pause frames puts the function on the reschedule list, which the
 * next pause frame merges only after its cooldown walk: the new interval
 * counts from the end of that pause frame, one frame later than "now".
 * dt 0.01 s, interval 0.1 s from frame 0; paused from frame 3; in frame 6's
 * place the interval becomes 0.05 s: it runs from the end of frame 6, so the
 * first tick after is frame 12 (strictly after 0.05 s), then every 5 frames
 * (credit), 17, 22.
 */
START_TEST(fidelity_ewp_interval_change_while_paused)
{
    dual *d = dual_new(0.01);
    int a = fn_add(d, TK_GROUP_PRE_PHYSICS, 0.1, true, true, -1);
    between bw[] = {
        {.frame = 3, .pause = 1},
        {.frame = 6, .pause = -1, .o = {OP_INTERVAL, a, 0.05, 0}, .has_op = true},
    };
    run_both(d, 1, 24, bw, 2);
    EXPECT(d, a, 0, 12, 17, 22);
    dual_free(d);
}
END_TEST

/* Unpaused, the same change counts from now (merged at the next StartFrame
 * before its walk): frame 11, 16, 21. */
START_TEST(fidelity_ewp_interval_change_unpaused)
{
    dual *d = dual_new(0.01);
    int a = fn_add(d, TK_GROUP_PRE_PHYSICS, 0.1, true, true, -1);
    between bw[] = {{.frame = 6, .pause = -1, .o = {OP_INTERVAL, a, 0.05, 0}, .has_op = true}};
    run_both(d, 1, 24, bw, 1);
    EXPECT(d, a, 0, 11, 16, 21);
    dual_free(d);
}
END_TEST

/* ======================================================================== */
/* 5. Custom time dilation 0                                                */
/* ======================================================================== */

static float g_last_dt = -1;
static int g_dil_ticks;

static void dil_fn(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)target;
    (void)ctx;
    g_last_dt = dt;
    g_dil_ticks++;
}

START_TEST(fidelity_custom_dilation_zero)
{
    /* Unreal's CustomTimeDilation 0 is legal: the actor's ticks get dt 0
     * (they still run), an interval still counts world time. */
    tk_engine_desc ed;
    tk_engine_desc_default(&ed);
    ed.tick_rate = 0;
    ed.fixed_dt = 0.01;
    tk_engine_t *e;
    ck_assert_int_eq(tk_engine_new(&ed, &e), 0);
    tk_world_t *w = tk_engine_world(e);
    tk_tick_class_desc cd = {.name = "d", .fn = dil_fn};
    tk_class_id cls;
    ck_assert_int_eq(tk_tick_class_register(w, &cd, &cls), 0);
    tk_tick_desc td = {0};
    td.cls = cls;
    tk_tick_spec_default(&td.spec);
    tk_tick_id id;
    ck_assert_int_eq(tk_tick_register(w, &td, &id), 0);
    ck_assert_int_eq(tk_tick_set_dilation(w, id, 0.0f), 0);
    tk_tick_info in;
    ck_assert_int_eq(tk_tick_get(w, id, &in), 0);
    ck_assert(in.dilation == 0.0f);
    tk_engine_frame(e);
    ck_assert_int_eq(g_dil_ticks, 1);
    ck_assert(g_last_dt == 0.0f);
    ck_assert_int_eq(tk_tick_set_dilation(w, id, 0.5f), 0);
    tk_engine_frame(e);
    ck_assert_float_eq_tol(g_last_dt, 0.005f, 1e-7f);
    /* negative, NaN and infinite stay refused */
    ck_assert_int_eq(tk_tick_set_dilation(w, id, -1.0f), TK_EINVAL);
    ck_assert_int_eq(tk_tick_set_dilation(w, id, NAN), TK_EINVAL);
    ck_assert_int_eq(tk_tick_set_dilation(w, id, INFINITY), TK_EINVAL);
    tk_engine_free(e);
}
END_TEST

/* ======================================================================== */
/* 1. Requests are deferred commands: before the frame counter moves        */
/* ======================================================================== */

/*
 * The engine's wait and pre_world hooks are where the daemon runs requests.
 * Unreal runs deferred commands at the end of the previous frame, after the
 * core ticker and before GFrameCounter++, when the timer manager has ticked
 * "this frame": a timer set there is active at once (expiry = now + delay)
 * and a paused one unpaused there is active at once too.
 */
typedef struct hookctx {
    tk_world_t *w;
    uint64_t at_frame;         /* act in the hooks before this frame        */
    int where;                 /* 0 wait hook, 1 pre_world                  */
    int what;                  /* 0 set, 1 unpause h                        */
    double rate;
    tk_timer_handle h;
    tk_timer_status status;    /* status right after                        */
    bool acted;
    uint64_t fired_frames[8];
    int n_fired;
} hookctx;

static hookctx g_hc;

static void hc_fire(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)ud;
    (void)h;
    (void)w;
    if (g_hc.n_fired < 8)
        g_hc.fired_frames[g_hc.n_fired++] = tk_world_frame(g_hc.w);
}

static void hc_act(int where)
{
    hookctx *c = &g_hc;
    if (c->acted || c->where != where || tk_world_frame(c->w) != c->at_frame)
        return;
    c->acted = true;
    if (c->what == 0) {
        tk_timer_desc td = {.rate = c->rate, .first_delay = -1, .fn = hc_fire};
        ck_assert_int_eq(tk_timer_set(c->w, &td, &c->h), 0);
    } else {
        ck_assert_int_eq(tk_timer_unpause(c->w, c->h), 0);
    }
    tk_timer_info in;
    ck_assert_int_eq(tk_timer_get(c->w, c->h, &in), 0);
    c->status = in.status;
}

static void hc_wait(void *ud, uint64_t deadline)
{
    (void)ud;
    (void)deadline;
    hc_act(0);
}

static void hc_pre_world(void *ud, tk_engine_t *e)
{
    (void)ud;
    (void)e;
    hc_act(1);
}

static tk_engine_t *hc_engine(void)
{
    memset(&g_hc, 0, sizeof g_hc);
    g_hc.at_frame = UINT64_MAX;
    tk_engine_desc ed;
    tk_engine_desc_default(&ed);
    ed.tick_rate = 0;
    ed.fixed_dt = 0.0078125; /* 1/128 s: exact sums */
    ed.wait = hc_wait;
    ed.pre_world = hc_pre_world;
    tk_engine_t *e;
    ck_assert_int_eq(tk_engine_new(&ed, &e), 0);
    g_hc.w = tk_engine_world(e);
    return e;
}

/* A 2-dt timer set from a hook before frame 3: active at once (expiry
 * now + 2 dt), so frame 3 and 4 reach 1 and 2 dt (strict >: not yet) and
 * frame 5 fires it; then every 2 frames.  (Pending, it would be activated
 * at the end of frame 3's pass and fire in frame 6.) */
static void set_case(int where)
{
    tk_engine_t *e = hc_engine();
    g_hc.at_frame = 3;
    g_hc.where = where;
    g_hc.rate = 2 * 0.0078125;
    for (int f = 0; f < 3; f++)
        tk_engine_frame(e);
    ck_assert(!g_hc.acted);
    tk_engine_frame(e);
    ck_assert(g_hc.acted);
    ck_assert_int_eq(g_hc.status, TK_TIMER_ACTIVE);
    for (int f = 0; f < 4; f++)
        tk_engine_frame(e);
    ck_assert_int_eq(g_hc.n_fired, 1);
    ck_assert_uint_eq(g_hc.fired_frames[0], 5);
    tk_engine_free(e);
}

START_TEST(fidelity_timer_set_from_request_hooks_is_active)
{
    set_case(0);
    set_case(1);
}
END_TEST

START_TEST(fidelity_timer_unpause_from_request_hooks_is_active)
{
    tk_engine_t *e = hc_engine();
    tk_timer_desc td = {.rate = 4 * 0.0078125, .first_delay = -1, .fn = hc_fire};
    ck_assert_int_eq(tk_timer_set(g_hc.w, &td, &g_hc.h), 0); /* pending: before frame 0 */
    tk_engine_frame(e);                                     /* active, 4 dt left */
    tk_engine_frame(e);                                     /* 3 dt left */
    ck_assert_int_eq(tk_timer_pause(g_hc.w, g_hc.h), 0);
    g_hc.what = 1;
    g_hc.where = 1;
    g_hc.at_frame = 4;
    tk_engine_frame(e); /* frame 2: paused timer */
    tk_engine_frame(e); /* frame 3 */
    tk_engine_frame(e); /* unpaused before frame 4: active, expiry now + 3 dt */
    ck_assert(g_hc.acted);
    ck_assert_int_eq(g_hc.status, TK_TIMER_ACTIVE);
    for (int f = 0; f < 4; f++)
        tk_engine_frame(e); /* frames 5..8: 3 dt reached in frame 6, fires in 7 */
    ck_assert_int_eq(g_hc.n_fired, 1);
    ck_assert_uint_eq(g_hc.fired_frames[0], 7);
    tk_engine_free(e);
}
END_TEST

START_TEST(fidelity_timer_from_hooks_after_pause_frame_is_pending)
{
    /* After a pause frame the timer manager did not tick in the frame that
     * just ran (Unreal does not tick it while paused): pending. */
    tk_engine_t *e = hc_engine();
    g_hc.at_frame = 3;
    g_hc.where = 0;
    g_hc.rate = 1.0;
    tk_engine_frame(e);
    tk_engine_frame(e);
    tk_world_set_paused(g_hc.w, true);
    tk_engine_frame(e); /* frame 2: a pause frame */
    tk_engine_frame(e);
    ck_assert(g_hc.acted);
    ck_assert_int_eq(g_hc.status, TK_TIMER_PENDING);
    /* Between frames outside the request hooks (a library caller's own
     * loop) is after the frame counter moved: pending. */
    tk_world_set_paused(g_hc.w, false);
    tk_engine_frame(e);
    tk_timer_desc td = {.rate = 1.0, .first_delay = -1};
    tk_timer_handle h;
    ck_assert_int_eq(tk_timer_set(g_hc.w, &td, &h), 0);
    tk_timer_info in;
    ck_assert_int_eq(tk_timer_get(g_hc.w, h, &in), 0);
    ck_assert_int_eq(in.status, TK_TIMER_PENDING);
    tk_engine_free(e);
}
END_TEST

static Suite *fidelity_suite(void)
{
    Suite *s = suite_create("fidelity");
    TCase *tc = tcase_create("scheduler");
    tcase_add_test(tc, fidelity_toggle_interval_after_it_ran);
    tcase_add_test(tc, fidelity_toggle_interval_before_it_ran);
    tcase_add_test(tc, fidelity_toggle_interval_last_demotable);
    tcase_add_test(tc, fidelity_enable_then_interval);
    tcase_add_test(tc, fidelity_disabled_prerequisite_still_places);
    tcase_add_test(tc, fidelity_disabled_newly_spawned_prerequisite_still_places);
    tcase_add_test(tc, fidelity_toggle_then_new_interval);
    tcase_add_test(tc, fidelity_cycle_edge_after_unregister);
    tcase_add_test(tc, fidelity_ewp_interval_change_while_paused);
    tcase_add_test(tc, fidelity_ewp_interval_change_unpaused);
    tcase_add_test(tc, fidelity_custom_dilation_zero);
    suite_add_tcase(s, tc);
    TCase *tt = tcase_create("timers");
    tcase_add_test(tt, fidelity_timer_set_from_request_hooks_is_active);
    tcase_add_test(tt, fidelity_timer_unpause_from_request_hooks_is_active);
    tcase_add_test(tt, fidelity_timer_from_hooks_after_pause_frame_is_pending);
    suite_add_tcase(s, tt);
    return s;
}

TK_CHECK_MAIN(fidelity_suite)
