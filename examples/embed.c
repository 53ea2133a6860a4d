/*
 * embed.c - libtickd embedded in another program, without the daemon.
 *
 * Builds a world, registers two tick classes (one with a batch form), tick
 * functions in different groups with a prerequisite and an interval, a timer
 * and a tickable, and runs 120 frames at a fixed dt of 1/60 s.  It prints
 * what happened; `make check` runs it and compares the output with
 * examples/embed.expected, so the output is deterministic.
 *
 *   cc -Iinclude examples/embed.c build/libtickd.a -lm -o embed
 */
#include <stdio.h>

#include "tickd/tickd.h"

typedef struct body {
    const char *name;
    double x, v;       /* position, velocity */
    int ticks;
} body;

/* A mover: integrates its velocity. */
static void move(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)ctx;
    body *b = target;
    b->x += b->v * dt;
    b->ticks++;
}

static void move_batch(void *const *targets, size_t n, float dt, tk_tick_ctx *ctx)
{
    for (size_t i = 0; i < n; i++)
        move(targets[i], dt, ctx);
}

/* A follower: copies another body's position (after it, as a prerequisite). */
typedef struct follower {
    const body *target;
    double x;
    int ticks;
} follower;

static void follow(void *target, float dt, tk_tick_ctx *ctx)
{
    (void)dt;
    (void)ctx;
    follower *f = target;
    f->x = f->target->x;
    f->ticks++;
}

static int timer_calls;
static void on_timer(void *ud, tk_timer_handle h, tk_world_t *w)
{
    (void)ud;
    (void)h;
    timer_calls++;
    printf("timer fired at frame %llu (world time %.3f s)\n",
           (unsigned long long)tk_world_frame(w), (double)tk_world_time_ns(w) / 1e9);
}

static int tickable_ticks;
static void on_tickable(void *ud, float dt, tk_world_t *w)
{
    (void)ud;
    (void)dt;
    (void)w;
    tickable_ticks++;
}

static int check(int rc, const char *what, tk_world_t *w)
{
    if (rc != 0) {
        fprintf(stderr, "embed: %s: %s (%s)\n", what, tk_strerror(rc), tk_world_last_error(w));
        return 1;
    }
    return 0;
}

int main(void)
{
    tk_engine_desc ed;
    tk_engine_desc_default(&ed);
    ed.tick_rate = 0;        /* as fast as possible */
    ed.fixed_dt = 1.0 / 60;  /* deterministic */
    tk_engine_t *e;
    if (tk_engine_new(&ed, &e) != 0)
        return 1;
    tk_world_t *w = tk_engine_world(e);

    tk_class_id mover_cls, follower_cls;
    tk_tick_class_desc mc = {"mover", move, move_batch, false};
    tk_tick_class_desc fc = {"follower", follow, NULL, false};
    if (check(tk_tick_class_register(w, &mc, &mover_cls), "class", w) ||
        check(tk_tick_class_register(w, &fc, &follower_cls), "class", w))
        return 1;

    body a = {"a", 0, 1.0, 0}, b = {"b", 0, 2.0, 0}, slow = {"slow", 0, 10.0, 0};
    tk_tick_desc d = {0};
    tk_tick_spec_default(&d.spec);
    d.cls = mover_cls;
    tk_tick_id ta, tb, tslow, tf;
    d.target = &a;
    if (check(tk_tick_register(w, &d, &ta), "register a", w))
        return 1;
    d.target = &b;
    if (check(tk_tick_register(w, &d, &tb), "register b", w))
        return 1;
    d.target = &slow;
    d.spec.interval = 0.5; /* ticks twice a second */
    if (check(tk_tick_register(w, &d, &tslow), "register slow", w))
        return 1;

    follower f = {&b, 0, 0};
    tk_tick_desc fd = {0};
    tk_tick_spec_default(&fd.spec);
    fd.cls = follower_cls;
    fd.target = &f;
    fd.prerequisites = &tb;
    fd.n_prerequisites = 1;
    if (check(tk_tick_register(w, &fd, &tf), "register follower", w))
        return 1;

    tk_timer_desc td = {0};
    td.rate = 0.75;
    td.loop = true;
    td.first_delay = -1;
    td.fn = on_timer;
    tk_timer_handle th;
    if (check(tk_timer_set(w, &td, &th), "timer", w))
        return 1;

    tk_tickable_desc kd = {0};
    kd.type = TK_TICKABLE_ALWAYS;
    kd.fn = on_tickable;
    tk_tickable_id kid;
    if (check(tk_tickable_add(w, &kd, &kid), "tickable", w))
        return 1;

    for (int i = 0; i < 120; i++)
        tk_engine_frame(e);

    tk_tick_info info;
    tk_tick_get(w, tslow, &info);
    printf("frames: %llu, world time %.3f s\n", (unsigned long long)tk_engine_frame_count(e),
           (double)tk_world_time_ns(w) / 1e9);
    printf("a: %d ticks, x = %.3f\n", a.ticks, a.x);
    printf("b: %d ticks, x = %.3f\n", b.ticks, b.x);
    printf("slow: %d ticks (interval 0.5 s), x = %.3f, state %s\n", slow.ticks, slow.x,
           tk_tick_state_name(info.state));
    printf("follower: %d ticks, x = %.3f (b's position, after b)\n", f.ticks, f.x);
    printf("timer: %d calls, tickable: %d ticks\n", timer_calls, tickable_ticks);
    tk_engine_free(e);
    return 0;
}
