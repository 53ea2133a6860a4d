/*
 * tick.c - the tick scheduler: Unreal's FTickTaskManager semantics (see
 * tick.h for the rules) without Unreal's per-frame cost.
 *
 * Unreal rebuilds its queue every frame: it walks a hash set of every enabled
 * tick function, creates one task per function, links the tasks of the
 * prerequisites, walks a sorted cooldown list and re-sorts the functions it
 * rescheduled.  tickd keeps the result of that work between frames.
 *
 * Records.  A registered function is a 24-byte record in a slab (`rec`),
 * named by slot index + generation (the low 32 bits of its registration
 * number).  Rare attributes (interval, custom dilation, prerequisites and
 * dependents, materialized counters, per-frame marks) live in an `ext`
 * record that only unusual functions have.
 *
 * Lanes.  Every registered function sits in exactly one lane: a dense array
 * of targets and ids (plus four bitmaps, see `lane`; a class whose targets
 * hold their function's slot has no id array: 8 bytes a function) for one (actual start
 * group, priority band, prerequisite depth, class), in registration order.
 * A group runs its lanes in (band, depth, class) order, which is the order
 * tick.h promises.  Bit `act` says the entry ticks this frame; bit `spec`
 * says it needs individual treatment (materialized counters, custom
 * dilation, even_when_paused, cooling down on its own...).  A run of active
 * entries without it is handed to the class's batch function in one call
 * (the pointer read is the whole per-function cost), or, for a class without
 * one and for batch = false entries, to its tick function one by one (a
 * pointer and an id read: no record, no write but the lane's position).
 * Lanes change only when a function is added, removed, re-grouped or gets new
 * prerequisites; entries appended out of registration order are merged back
 * at the next StartFrame (O(entries after the first place they go)), and
 * dead entries are compacted away once a quarter of a lane is dead, within a
 * bounded amount of work per frame (COMPACT_BUDGET): removing a level of
 * millions spreads over frames instead of stopping one.
 *
 * Counters without writes.  An every-frame function in a lane ("derived")
 * does not update its own counters: its lane counts its runs and the sum of
 * the dt it handed out, and the function keeps a reference to a "cohort"
 * holding its counters as they were when it joined the lane (functions that
 * join with identical history share a cohort).  Its counters are cohort +
 * (lane now - lane at join).  Due-set members (below) derive theirs from
 * their set the same way.  A function that stops being derived has its
 * counters materialized into its ext record.
 *
 * Placement.  A function's actual groups, band and depth follow from its
 * prerequisites (QueueTickFunction, UE-SEMANTICS 3.6), computed once when
 * something changes, for the changed functions' connected component of the
 * prerequisite graph, in registration order, so the edge that closes a cycle
 * is the one Unreal would drop when iterating in registration order.  A
 * function whose groups or band a prerequisite can change from frame to
 * frame (a dynamic one, or an interval one whose ticking would move it) is
 * "dynamic": it is queued every frame the way Unreal queues it (depth-first,
 * prerequisites first, on an explicit stack: a chain may be millions long)
 * and runs from the group's "extras" list, after the lanes of its band.  An
 * interval prerequisite that cannot move it is just a prerequisite: the
 * function stays in its lane, one depth below it.  The same per-frame
 * queueing handles functions registered or enabled mid-frame (newly spawned).
 *
 * Intervals.  Cooling-down functions wait on timing wheels (wheel_int.h):
 * a function that is not due costs nothing.  Due time + interval is exactly
 * Unreal's cooldown with overrun credit.  Enabled interval functions of one
 * lane that share their interval, due time and last tick time cool down as
 * one "due set" (`dset`): one wheel entry; when it comes due, one
 * CalculateDeltaTime, one reschedule, and its members' entries become active
 * by OR-ing a cached bitmap into the lane, so they run as batches with the
 * set's dt.  Functions registered (or first ticked) in the same frame form
 * one set, so 1M interval functions coming due together cost about what 1M
 * every-frame functions cost.  Functions with individual treatment (custom
 * dilation, even_when_paused, dynamic) cool down on their own wheel entries,
 * even_when_paused ones on unpaused time.
 *
 * Complexity per frame: O(functions that tick) + O(lanes) + O(due sets and
 * due individual functions) + O(dynamic functions) + bounded compaction;
 * registration O(1) amortized; adding or removing a prerequisite edge O(1)
 * (the edge index); a change to a function with prerequisites O(size of its
 * component).  No graph walk recurses.  No allocation in a steady-state
 * frame.
 *
 * Threads (the engine's `threads` > 1, a pool of workers: pool_int.h).  A
 * group runs its lanes in the same order as with one thread; what changes is
 * who runs some of them.  Work that may run on workers ("parallel work") is
 * every lane entry of a class registered thread_safe and every any_thread
 * function in a lane.  A "section" is a stretch of parallel work that is
 * consecutive in the one-thread order and has no prerequisite inside it:
 * consecutive lanes of thread-safe classes of one band and depth (a function
 * and its prerequisites never share a depth), or a stretch of consecutive
 * any_thread entries of another class's lane.  The frame thread runs
 * everything else itself, between sections, exactly as with one thread, so
 * a function that is not parallel work sees the world as one thread would
 * leave it, and a section starts only after everything before it finished
 * (prerequisites included) and ends before anything after it starts.  In a
 * section the world must not change (w->par: tick, timer, tickable and level
 * calls are refused, tk_tick_guard), whether it is split or not, so that a
 * world behaves the same with 2 threads or 64.  A section is split into
 * chunks for the pool only when its expected work (entries x the lane's
 * measured ns per entry) reaches the engine's split_min (50 us): below,
 * waking a worker costs more than it saves, and the frame thread runs it
 * alone.  Chunks are
 * lane ranges; each thread counts, times and buffers what the profiler, the
 * trace hook and slow-tick detection would see (`runner`), and the frame
 * thread hands those on after the section, in chunk order: the order of one
 * thread.  Lanes never change during a section: no lane, bit, record or due
 * set is written by a worker except the ext record of the function it runs.
 * Functions queued per frame (extras: dynamic and newly spawned ones) and
 * pause frames run on the frame thread.  With threads = 1 there is no
 * section and no refusal: everything is as it always was.
 *
 * Not here: timers (timer.c), tickables (tickable.c), the world's clocks
 * (world.c), the threads (pool.c).
 */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "pool_int.h"
#include "tick_int.h"
#include "wheel_int.h"
#include "world_int.h"

#include "tickd/error.h"

#define NONE32 0xffffffffu
#define MAX_NEWLY_ROUNDS 101
#define GROUPS 8
#define COMPACT_BUDGET 131072u /* compaction work per frame (units, see below) */
#define COMPACT_MOVE 16u       /* units of a moved entry; a skipped one is 1   */
#define SLOW_HOLD 64u         /* lane runs timed one by one after a slow run     */
#define SLOW_RUN_MAX 256u     /* functions timed together at most                */
#define PAR_CHUNKS 4u         /* chunks per thread of a split section             */
#define PAR_CHUNK_MIN 256u    /* entries of a chunk at least (a multiple of 64)    */
#define PAR_NS_GUESS 2.0f     /* ns per entry of a lane never measured             */
#define PAR_REMEASURE 64u     /* runs of a small section between two timings       */

/* rec.state values beyond tk_tick_state */
#define RS_FREE 3

/* rec.flags */
enum {
    RF_HIPRI = 1u << 0,     /* spec.high_priority                           */
    RF_BATCH = 1u << 1,     /* spec.batch                                   */
    RF_PAUSED = 1u << 2,    /* spec.even_when_paused                        */
    RF_ANYTHREAD = 1u << 3, /* spec.any_thread                              */
    RF_DYNAMIC = 1u << 4,   /* group depends on this frame's prerequisites  */
    RF_NEWLY = 1u << 5,     /* waiting in the newly-spawned list            */
    RF_DIRTY = 1u << 6,     /* placement must be recomputed at StartFrame   */
    RF_LOWBAND = 1u << 7,   /* high priority yielded to a prerequisite      */
};

/*
 * 24 bytes, read through the rec_* accessors below:
 *   - its registration number (52 bits: rec_seq) and level slot (12 bits:
 *     levels alive at once are at most TK_LEVEL_MAX = 4096, so their slots
 *     are below 4096) share a word;
 *   - its generation is the low 32 bits of its registration number
 *     (rec_gen): never 0, and different for every registration, so a stale
 *     id never names the function registered in its slot after it (until
 *     2^32 registrations later);
 *   - its class is its lane's (every function sits in one lane: rec_cls);
 *   - one word names its ext record (REC_EXT set) or, without one, its
 *     cohort (0 = neither); a function with an ext record keeps its cohort
 *     there (rec_ext, rec_cohort, set_cohort).
 */
#define REC_SEQ_BITS 52
#define REC_LEVEL_BITS 12
#define REC_EXT 0x80000000u
_Static_assert(TK_LEVEL_MAX <= (1 << REC_LEVEL_BITS), "level slots fit in a record");

typedef struct rec {
    uint64_t sl;       /* registration number << 12 | level slot index    */
    uint32_t cx;       /* REC_EXT | ext record, or cohort; 0 = neither    */
    uint32_t lane;     /* lane it sits in                                 */
    uint32_t pos;      /* position in the lane; next free slot when free  */
    uint8_t grp;       /* configured group | end group << 4               */
    uint8_t act;       /* actual start group | actual end group << 4      */
    uint8_t state;     /* tk_tick_state or RS_FREE                        */
    uint8_t flags;     /* RF_*                                            */
} rec;
_Static_assert(sizeof(rec) == 24, "rec is 24 bytes");

typedef struct ext {
    uint32_t rec;          /* owner slot; NONE32 when free (next free in wnode) */
    uint32_t cohort;       /* the owner's cohort (see rec), 0 = not derived     */
    uint32_t wnode;        /* node in a wheel while cooling down on its own,
                              else NONE32                                       */
    uint32_t dset;         /* due set it cools down in, 0 = none                */
    uint32_t dmi;          /* its index in that set's member list               */
    uint64_t ticks;        /* materialized counters (when not derived)          */
    uint64_t last_frame;
    double accum;          /* s                                                 */
    float last_dt;         /* s                                                 */
    float dilation;        /* custom time dilation                              */
    uint64_t interval_ns;  /* 0 = every frame                                   */
    int64_t last_iv_ns;    /* CalculateDeltaTime's last tick time, -1 = none
                              (a due set's member: the set's, see last_iv_of)   */
    tk_tick_id *pre;       /* prerequisites, in the order added                 */
    uint8_t *pre_cycle;    /* 1 where the edge closes a cycle                   */
    uint32_t n_pre, cap_pre;
    uint32_t *dep;         /* dependents (slot indices)                         */
    uint32_t n_dep, cap_dep;
    uint32_t depth;        /* static prerequisite depth (lane key)              */
    uint32_t fdepth;       /* depth among this frame's extras                   */
    uint8_t fact;          /* actual groups chosen this frame (extras)          */
    uint8_t fband;         /* band chosen this frame (extras)                   */
    bool was_interval;     /* Unreal's bWasInterval                             */
    bool in_unpaused;      /* its wheel is the unpaused-time one                */
    uint64_t visit, queued, task, done, due, cancel; /* frame marks, frame+1    */
    uint64_t ran;          /* frame mark of its last individual execution        */
    uint32_t mark, mark_done; /* component walk epochs                          */
} ext;

/*
 * A lane: one (actual start group, band, depth, class), its functions in
 * registration order.  Per entry: the target, the function's id (0 = dead
 * entry) and four bits:
 *   act   ticks this frame (every-frame functions always; due-set members in
 *         the frames their set fires; others when activated for the frame);
 *   spec  needs individual treatment (exec_one: materialized counters,
 *         custom dilation, even_when_paused, cooling on its own...);
 *   ivl   a due-set member: it ticks with its set's dt;
 *   solo  registered with batch = false: called one by one, never batched.
 * An entry with act = 1 and spec = 0 costs a target and an id read: its
 * counters derive from its lane (every frame) or its due set (interval).
 *
 * Dead entries are removed between frames within a bounded amount of work
 * per frame (COMPACT_BUDGET): while `compacting`, [0, cw) has been looked at
 * (dead entries there are ones killed since), [cw, cr) is a hole of
 * moved-out entries (dead, not counted in n_dead), [cr, n) not yet looked
 * at.
 */
typedef struct lane {
    uint8_t group;         /* actual start group                               */
    uint8_t band;          /* 0 = high priority, 1 = normal                    */
    uint16_t cls;
    uint32_t depth;
    void **targets;
    uint64_t *ids;         /* tick id of each entry, 0 = dead entry; NULL in a
                              lane of a class whose targets hold their slot
                              (`sof`): there a dead entry's target is NULL   */
    uint32_t sof;          /* with ids NULL: offset of the slot + 1 (a uint32_t)
                              in each target                                   */
    uint64_t *act, *spec, *ivl, *solo; /* bitmaps, see above                      */
    uint32_t n, cap, n_dead;
    uint32_t sorted_n;     /* entries [0, sorted_n) are in registration order   */
    uint64_t last_seq;     /* largest registration number ever appended         */
    bool dirty;            /* in the upkeep list                               */
    bool compacting;       /* a compaction is under way: cw, cr are valid       */
    uint32_t cw, cr;       /* compaction cursors                               */
    uint32_t layout;       /* bumped whenever entries move (due-set caches)     */
    uint64_t runs;         /* times it ran (derived counters)                   */
    double accum;          /* s, sum of the dt it handed out                    */
    uint64_t last_frame;
    float last_dt;
    uint64_t prev_last_frame; /* values before the current run                  */
    float prev_last_dt;
    double prev_accum;
    uint64_t ran;          /* frame+1 of its last run                           */
    uint32_t cur;          /* while running: position being executed            */
    bool running;
    uint16_t level;        /* level slot of its entries, when lvl_mixed is 0     */
    uint8_t lvl_mixed;     /* 0 = none yet, 1 = one level, 2 = several (profiling
                              splits runs by level only in such lanes)           */
    bool ivl_mixed;        /* this frame's due sets fired with different dts    */
    uint64_t ivl_mark;     /* frame mark: a due set of this lane fired           */
    float ivl_dt;          /* s, their dt (when !ivl_mixed)                     */
    uint16_t sl_k;         /* slow-tick detection: functions per timed run      */
    uint16_t sl_hold;      /* runs left to time [sl_lo, sl_hi) one by one       */
    uint32_t sl_lo, sl_hi; /* positions of the last slow run of several         */
    uint32_t n_any;        /* entries of any_thread functions                   */
    float ns_per;          /* ns per entry when it last ran timed, 0 = never    */
    uint32_t untimed;      /* runs since then (sections, PAR_REMEASURE)         */
} lane;

/*
 * A due set: enabled interval functions of one lane that cool down together
 * (same interval, same due time, same time of their last tick).  It sits on
 * the wheel as one entry; when it comes due, its members tick in that frame
 * from their lane with the same dt (in batches where the class has a batch
 * form) and the set is rescheduled at due + interval, all in O(1) plus a
 * bitmap OR per 64 member positions.  Members derive their counters from the
 * set as every-frame functions do from their lane.  Functions that register
 * or first tick together stay together: 1M functions registered at once are
 * one set.  Only functions without individual treatment are members
 * (eligible_member); the others cool down on the wheel one by one.
 */
typedef struct dset {
    uint32_t lane;         /* lane of its members; 0 = free (next free: n)      */
    uint32_t wnode;        /* its node in wheel_sets                            */
    uint64_t iv;           /* ns, interval                                      */
    uint64_t due;          /* ns of world time, next due                        */
    int64_t last_iv;       /* ns, its members' last tick (-1 = none)            */
    int64_t prev_iv;       /* last_iv before this frame's firing                */
    uint32_t *slots;       /* members (rec slots), in no order                  */
    uint32_t n, cap;
    uint32_t *wi;          /* cache: members' lane positions as (word index,    */
    uint64_t *wm;          /* mask) pairs sorted by word (zero masks allowed)   */
    uint32_t nw, capw;
    uint32_t layout;       /* lane layout the cache was built for               */
    bool stale;            /* the cache must be rebuilt before use              */
    float dt;              /* s, dt of its last firing                          */
    uint64_t fired;        /* frame mark of its last firing                     */
    uint64_t runs;         /* derived counters, as a lane's                     */
    double accum;
    uint64_t last_frame;
    float last_dt;
    uint64_t prev_last_frame; /* values before the last firing                  */
    float prev_last_dt;
    double prev_accum;
} dset;

/* A cohort's source of counters: a lane id, or a due set id with COH_SET. */
#define COH_SET 0x80000000u

typedef struct cohort {
    uint32_t src;          /* lane or due set (COH_SET) it derives from        */
    uint32_t refs;         /* functions referring to it; next free when 0      */
    uint64_t runs0;        /* source counters at join                           */
    double laccum0;
    uint64_t ticks0;       /* the functions' counters at join                   */
    double accum0;
    uint64_t last_frame0;
    float last_dt0;
} cohort;

typedef struct tclass {
    char name[64];
    tk_tick_fn fn;
    tk_tick_batch_fn fn_batch;
    bool slot_in_target;   /* tk_tick_class_slot_in_target                */
    uint32_t slot_offset;  /* bytes                                       */
    bool used;             /* a function of it was registered             */
    bool thread_safe;      /* its functions are parallel work              */
} tclass;

/* An entry of a group's extras list: a function queued this frame. */
typedef struct xent {
    uint64_t seq;          /* registration number: the function still is idx's */
    uint32_t idx;
    uint32_t depth;
    uint16_t cls;
    uint8_t band;
} xent;

typedef struct dueent {
    uint64_t due;   /* ns, the due time that expired */
    uint64_t seq;   /* registration order, for ties  */
    uint32_t slot;
} dueent;

typedef struct vec32 {
    uint32_t *v;
    size_t n, cap;
} vec32;

enum { PH_IDLE, PH_GROUPS, PH_PAUSE };

/* An entry of the grouping map: functions that become due-set members
 * together are grouped by key (group_find).  Entries of older stamps are
 * empty, so the map is cleared by bumping the stamp. */
typedef struct gmap_ent {
    uint64_t k1, k2, k3, k4; /* key                             */
    uint32_t id;          /* due set                            */
    uint32_t stamp;       /* live when equal to T->gmap_stamp   */
} gmap_ent;

/* An entry of the edge index, an open-addressing table (linear probing,
 * backward-shift deletion) over every prerequisite edge: it finds an edge in
 * O(1), so adding an edge checks for a duplicate, and removing one unlinks it
 * from both lists, without scanning a list that may be 100,000s long (one
 * function every other one waits for). */
typedef struct edge_ent {
    uint64_t key;  /* (function slot + 1) << 32 | prerequisite slot; 0 = empty */
    uint32_t pi;   /* position in the function's pre[]                          */
    uint32_t di;   /* position in the prerequisite's dep[]                      */
} edge_ent;

/* A frame of the prerequisite walks (place, queue_fn).  They are depth-first
 * walks over a graph that a client builds (a chain may be millions long), so
 * they keep their own heap-allocated stack instead of recursing: one frame
 * per function being placed, holding where its prerequisite loop stands and
 * what it has gathered so far. */
typedef struct wframe {
    uint32_t slot;       /* the function                              */
    uint32_t i;          /* next prerequisite to look at              */
    uint8_t max_s, max_e; /* latest start / end group of prerequisites */
    uint8_t iv_s, iv_e;  /* the same over interval prerequisites      */
    uint8_t old_flags;   /* rec.flags when the walk reached it        */
    bool iv;             /* has a considered interval prerequisite    */
    bool dyn;            /* its groups can change from frame to frame */
} wframe;

/* What a thread running functions in a parallel section leaves for the
 * frame thread to hand on: a profiler event, a trace call or a slow tick. */
enum { EV_PROF, EV_TRACE, EV_SLOW };

typedef struct pevent {
    uint8_t what;          /* EV_*                                          */
    tk_prof_event ev;      /* EV_TRACE: id, target, group; EV_SLOW: id,
                              target, cls, ns, n                           */
} pevent;

/*
 * A thread's state while it runs functions: the frame thread's outside
 * sections (T->main: events go out at once), and each thread's in a split
 * section (T->runners[thread]: events are buffered until the section ends).
 */
typedef struct runner {
    uint64_t *ran;         /* where functions run are counted               */
    uint64_t ran_own;      /* the counter of a section's runner             */
    unsigned thread;       /* 0 = the frame thread, >= 1 a worker           */
    bool buffered;         /* a section's: events go to ev[]                */
    /* Profiling: the open run of same-class functions. */
    uint64_t pr_t0;        /* ns, stats clock: start of the open run        */
    uint32_t pr_n;         /* functions in it; 0 = none open                */
    uint16_t pr_cls, pr_level; /* its class and level slot                  */
    uint8_t pr_group;      /* the group it runs in                          */
    uint32_t pr_first;     /* slot of its first function                    */
    void *pr_target;       /* target of its first function                  */
    uint32_t pr_countdown; /* functions until the next sampled one          */
    pevent *ev;            /* buffered events                               */
    size_t n_ev, cap_ev;
} runner;

/* Slow-tick detection's state of a lane after a chunk (sr_end). */
typedef struct slowout {
    uint16_t k, hold;
    uint32_t lo, hi;
} slowout;

/* A piece of a split section: lane positions [lo, hi), and what running it
 * left (written by the thread that ran it). */
typedef struct pchunk {
    uint32_t lane, lo, hi;
    uint32_t thread;       /* the thread that ran it                       */
    size_t ev0, ev1;       /* its events in that thread's runner            */
    uint64_t ns;           /* ns (monotonic) it took                        */
    uint64_t ran;          /* functions it ran                              */
    slowout so;            /* slow-tick state after it                      */
} pchunk;

/* A range of a section: positions [lo, hi) of a lane. */
typedef struct prange {
    uint32_t lane, lo, hi;
} prange;

struct tk__ticks {
    rec *recs;
    size_t n_recs, cap_recs;
    uint32_t free_head;       /* free rec slots, through rec.pos                */
    vec32 limbo;              /* slots freed this frame, reusable after it      */
    size_t n_live, n_disabled;

    ext *exts;                /* exts[0] unused                                 */
    size_t n_exts, cap_exts;
    uint32_t ext_free;

    lane *lanes;              /* lanes[0] unused                                */
    size_t n_lanes, cap_lanes;
    uint32_t *lane_hash;      /* open addressing: lane ids, 0 = empty           */
    size_t lane_hash_cap;
    vec32 glanes[GROUPS];     /* lanes of each group, sorted by (band, depth, cls)
                                 unless glanes_unsorted (sorted before a run)  */
    bool glanes_unsorted[GROUPS];
    vec32 dirty_lanes;

    dset *dsets;              /* dsets[0] unused                                */
    size_t n_dsets, cap_dsets;
    uint32_t dset_free;       /* free due sets, through dset.n                  */
    size_t n_members;         /* functions cooling down in due sets             */
    vec32 fired;              /* due sets fired this frame                      */
    struct gmap_ent *gmap;    /* grouping map (group_find), by stamp            */
    size_t cap_gmap, n_gmap;
    uint32_t gmap_stamp;

    cohort *cohorts;          /* cohorts[0] unused                              */
    size_t n_cohorts, cap_cohorts;
    uint32_t cohort_free;
    uint32_t coh_cache[64];   /* cohorts created in this upkeep                 */

    tclass *classes;
    size_t n_classes, cap_classes;

    tk__wheel wheel_game;     /* cooldowns on world time                        */
    tk__wheel wheel_unpaused; /* cooldowns of even_when_paused functions        */
    tk__wheel wheel_sets;     /* due sets, on world time                        */
    bool wheels_ready;

    uint64_t seq_next;
    vec32 dirty;              /* functions to (re)place at StartFrame           */
    vec32 fresh;              /* enabled interval functions not cooling yet     */
    vec32 dyn;                /* dynamic functions, by registration order       */
    bool dyn_dirty;
    vec32 paused_fns;         /* even_when_paused functions (pause frames)      */
    vec32 renewed;            /* enabled again this frame after it was visited:
                                 in Unreal's NewlySpawned, not queued again, but
                                 an interval one is rescheduled there          */
    vec32 iv_defer;           /* even_when_paused functions whose interval changed
                                 between frames: a pause frame merges the
                                 reschedule after its walk (tk_tick_set_spec)   */
    bool paused_dirty;
    vec32 due_now;            /* lane entries activated for this frame only     */
    vec32 newly;              /* registered/enabled mid-frame, to queue         */
    vec32 tmp, stack;         /* scratch                                        */
    struct wframe *walk;      /* explicit stack of the prerequisite walks       */
    struct edge_ent *edges;   /* edge index: (function, prerequisite) -> positions */
    size_t n_edges, cap_edges;
    size_t n_walk, cap_walk;
    vec32 lanes_run;          /* the lanes of the group being run               */
    dueent *dues;             /* interval functions due this frame              */
    size_t n_dues, cap_dues;
    xent *xs[GROUPS];         /* extras per group                               */
    size_t n_xs[GROUPS], cap_xs[GROUPS];

    int phase;
    int cur_group;            /* group running, or the next one                 */
    uint32_t epoch;           /* component walk marks                           */
    uint32_t mut;             /* bumped by every change a tick can make to lane
                                 entries (run_lane re-reads bits after one)    */

    tk_trace_fn trace;
    void *trace_ud;
    tk_slow_tick_fn slow_fn;
    void *slow_ud;
    uint64_t slow_ns;
    uint16_t sl_kx;           /* slow-tick runs of functions outside lanes      */
    uint16_t sl_holdx;        /* (extras, pause frames): as lane.sl_k, sl_hold  */
    tk_tick_namer_fn namer;
    void *namer_ud;

    /* Profiling (w->prof_on): the frame thread's open run, sampling. */
    runner main;              /* the frame thread outside split sections         */
    uint8_t *pr_each;         /* per class: 1 = time every function on its own   */
    size_t pr_n_each;

    /* Parallel sections (threads > 1; see the top of this file). */
    tk__pool *pool;           /* the engine's pool this group; NULL: none        */
    uint64_t split_ns;        /* expected work of a section worth splitting      */
    unsigned pool_threads;    /* tk__pool_threads(pool)                          */
    runner *runners;          /* per thread of a split section                   */
    size_t n_runners;
    pchunk *chunks;           /* the split section's chunks                      */
    size_t n_chunks, cap_chunks;
    prange *ranges;           /* the section being gathered                      */
    size_t n_ranges, cap_ranges;
};

/* ---- small helpers ------------------------------------------------------ */

static void vpush(vec32 *v, uint32_t x)
{
    TK_GROW(v->v, v->cap, v->n + 1);
    v->v[v->n++] = x;
}

/* Give back a large scratch vector once it is empty (after a million
 * registrations it would otherwise hold 4 MB for good). */
static void vtrim(vec32 *v)
{
    if (v->n == 0 && v->cap > 65536) {
        tk_free(v->v);
        v->v = NULL;
        v->cap = 0;
    }
}

static inline uint32_t id_slot(tk_tick_id id) { return (uint32_t)id; }
static inline uint32_t id_gen(tk_tick_id id) { return (uint32_t)(id >> 32); }
static inline tk_tick_id make_id(uint32_t slot, uint32_t gen)
{
    return ((uint64_t)gen << 32) | slot;
}
static inline tk_group grp_of(uint8_t b) { return (tk_group)(b & 15); }
static inline tk_group grp_end(uint8_t b) { return (tk_group)(b >> 4); }
static inline uint8_t grp_pack(int g, int e) { return (uint8_t)(g | (e << 4)); }
static inline bool demotable(int g)
{
    return g != TK_GROUP_START_PHYSICS && g != TK_GROUP_END_PHYSICS;
}
static inline bool bit_get(const uint64_t *b, uint32_t i) { return (b[i >> 6] >> (i & 63)) & 1; }
static inline void bit_set(uint64_t *b, uint32_t i) { b[i >> 6] |= 1ull << (i & 63); }
static inline void bit_clr(uint64_t *b, uint32_t i) { b[i >> 6] &= ~(1ull << (i & 63)); }
static inline void bit_put(uint64_t *b, uint32_t i, bool v)
{
    if (v)
        bit_set(b, i);
    else
        bit_clr(b, i);
}

static inline struct tk__ticks *T_of(const tk_world_t *w) { return w->ticks; }
static inline uint64_t fmark(const tk_world_t *w) { return w->frame + 1; }

static inline uint64_t rec_seq(const rec *r) { return r->sl >> REC_LEVEL_BITS; }
static inline uint16_t rec_level(const rec *r)
{
    return (uint16_t)(r->sl & ((1u << REC_LEVEL_BITS) - 1));
}
static inline uint32_t rec_gen(const rec *r) { return (uint32_t)rec_seq(r); }
static inline uint32_t rec_ext(const rec *r) { return (r->cx & REC_EXT) ? r->cx & ~REC_EXT : 0; }

static rec *live_rec(const tk_world_t *w, tk_tick_id id)
{
    struct tk__ticks *T = T_of(w);
    uint32_t s = id_slot(id);
    if (id == TK_TICK_NONE || s >= T->n_recs)
        return NULL;
    rec *r = &T->recs[s];
    if (r->state == RS_FREE || rec_gen(r) != id_gen(id))
        return NULL;
    return r;
}

static inline uint32_t slot_of(const struct tk__ticks *T, const rec *r)
{
    return (uint32_t)(r - T->recs);
}

static inline tk_tick_id id_of(const struct tk__ticks *T, const rec *r)
{
    return make_id(slot_of(T, r), rec_gen(r));
}

/* The class of a function: its lane's. */
static inline uint16_t rec_cls(const struct tk__ticks *T, const rec *r)
{
    return T->lanes[r->lane].cls;
}

/* Entry i of lane L: its function's slot + 1, 0 for a dead entry (from the
 * id array, or from the target in a lane without one), and its id. */
static inline uint32_t lane_slot1(const lane *L, uint32_t i)
{
    if (L->ids)
        return L->ids[i] ? (uint32_t)L->ids[i] + 1 : 0;
    const unsigned char *t = L->targets[i];
    if (!t)
        return 0;
    uint32_t e;
    memcpy(&e, t + L->sof, sizeof e);
    return e;
}

static inline rec *lane_rec(const struct tk__ticks *T, const lane *L, uint32_t i)
{
    return &T->recs[lane_slot1(L, i) - 1];
}

static inline tk_tick_id lane_id(const struct tk__ticks *T, const lane *L, uint32_t i)
{
    if (L->ids)
        return L->ids[i];
    uint32_t e = lane_slot1(L, i);
    return e ? make_id(e - 1, rec_gen(&T->recs[e - 1])) : TK_TICK_NONE;
}

/* Write a function's slot into its target (a class with slot_in_target). */
static inline void target_put_slot(const lane *L, void *target, uint32_t slot)
{
    uint32_t e = slot + 1;
    memcpy((unsigned char *)target + L->sof, &e, sizeof e);
}

static inline ext *ext_of(const struct tk__ticks *T, const rec *r)
{
    return (r->cx & REC_EXT) ? &T->exts[r->cx & ~REC_EXT] : NULL;
}

static inline uint32_t rec_cohort(const struct tk__ticks *T, const rec *r)
{
    return (r->cx & REC_EXT) ? T->exts[r->cx & ~REC_EXT].cohort : r->cx;
}

static inline void set_cohort(struct tk__ticks *T, rec *r, uint32_t c)
{
    if (r->cx & REC_EXT)
        T->exts[r->cx & ~REC_EXT].cohort = c;
    else
        r->cx = c;
}

static ext *ensure_ext(struct tk__ticks *T, rec *r)
{
    if (r->cx & REC_EXT)
        return &T->exts[r->cx & ~REC_EXT];
    uint32_t e;
    if (T->ext_free) {
        e = T->ext_free;
        T->ext_free = T->exts[e].wnode;
    } else {
        if (T->n_exts == 0)
            T->n_exts = 1;
        TK_GROW(T->exts, T->cap_exts, T->n_exts + 1);
        e = (uint32_t)T->n_exts++;
    }
    ext *x = &T->exts[e];
    memset(x, 0, sizeof *x);
    x->rec = slot_of(T, r);
    x->wnode = NONE32;
    x->dilation = 1.0f;
    x->last_iv_ns = -1;
    x->cohort = r->cx; /* no ext record: cx is its cohort */
    TK_ASSERT(e < REC_EXT);
    r->cx = e | REC_EXT;
    return x;
}

static void free_ext(struct tk__ticks *T, rec *r)
{
    uint32_t e = rec_ext(r);
    if (!e)
        return;
    ext *x = &T->exts[e];
    uint32_t coh = x->cohort;
    tk_free(x->pre);
    tk_free(x->pre_cycle);
    tk_free(x->dep);
    memset(x, 0, sizeof *x);
    x->rec = NONE32;
    x->wnode = T->ext_free;
    T->ext_free = e;
    r->cx = coh;
}

static inline uint64_t iv_of(const struct tk__ticks *T, const rec *r)
{
    const ext *x = ext_of(T, r);
    return x ? x->interval_ns : 0;
}

static inline float dil_of(const struct tk__ticks *T, const rec *r)
{
    const ext *x = ext_of(T, r);
    return x ? x->dilation : 1.0f;
}

static inline bool has_graph(const struct tk__ticks *T, const rec *r)
{
    const ext *x = ext_of(T, r);
    return x && (x->n_pre || x->n_dep);
}

static void describe(const tk_world_t *w, const rec *r, char *buf, size_t len)
{
    const struct tk__ticks *T = T_of(w);
    uint32_t s = slot_of(T, r);
    const lane *L = &T->lanes[r->lane];
    void *target = L->targets[r->pos];
    if (T->namer) {
        T->namer(T->namer_ud, make_id(s, rec_gen(r)), target, buf, len);
        return;
    }
    snprintf(buf, len, "tick %u:%u [%s]", s, rec_gen(r), T->classes[L->cls].name);
}

/* ---- lanes --------------------------------------------------------------- */

static uint64_t lane_key(int group, int band, uint32_t depth, uint16_t cls)
{
    return ((uint64_t)depth << 32) | ((uint64_t)cls << 8) | ((uint64_t)band << 4) | (uint64_t)group;
}

static uint64_t lane_key_of(const lane *L)
{
    return lane_key(L->group, L->band, L->depth, L->cls);
}

static size_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k;
}

static void lane_hash_insert(struct tk__ticks *T, uint32_t id)
{
    size_t m = T->lane_hash_cap - 1, h = hash64(lane_key_of(&T->lanes[id])) & m;
    while (T->lane_hash[h])
        h = (h + 1) & m;
    T->lane_hash[h] = id;
}

static int lane_cmp(const lane *a, const lane *b)
{
    if (a->band != b->band)
        return a->band < b->band ? -1 : 1;
    if (a->depth != b->depth)
        return a->depth < b->depth ? -1 : 1;
    if (a->cls != b->cls)
        return a->cls < b->cls ? -1 : 1;
    return 0;
}

static int lane_id_cmp(const void *a, const void *b, void *ctx)
{
    const lane *lanes = ctx;
    return lane_cmp(&lanes[*(const uint32_t *)a], &lanes[*(const uint32_t *)b]);
}

/* Sort a group's lanes by (band, depth, class) if lanes were added out of
 * that order; keys are unique within a group. */
static void glanes_sort(struct tk__ticks *T, int group)
{
    if (!T->glanes_unsorted[group])
        return;
    vec32 *g = &T->glanes[group];
    qsort_r(g->v, g->n, sizeof *g->v, lane_id_cmp, T->lanes);
    T->glanes_unsorted[group] = false;
}

/* Find or create the lane for a key. */
static uint32_t lane_get(struct tk__ticks *T, int group, int band, uint32_t depth, uint16_t cls)
{
    uint64_t key = lane_key(group, band, depth, cls);
    if (T->lane_hash_cap) {
        size_t m = T->lane_hash_cap - 1, h = hash64(key) & m;
        while (T->lane_hash[h]) {
            if (lane_key_of(&T->lanes[T->lane_hash[h]]) == key)
                return T->lane_hash[h];
            h = (h + 1) & m;
        }
    }
    if (T->n_lanes == 0)
        T->n_lanes = 1;
    TK_GROW(T->lanes, T->cap_lanes, T->n_lanes + 1);
    uint32_t id = (uint32_t)T->n_lanes++;
    lane *L = &T->lanes[id];
    memset(L, 0, sizeof *L);
    L->group = (uint8_t)group;
    L->band = (uint8_t)band;
    L->depth = depth;
    L->cls = cls;
    L->sof = T->classes[cls].slot_in_target ? T->classes[cls].slot_offset : NONE32;
    if ((T->n_lanes - 1) * 2 >= T->lane_hash_cap) {
        tk_free(T->lane_hash);
        T->lane_hash_cap = T->lane_hash_cap ? T->lane_hash_cap * 2 : 64;
        T->lane_hash = tk_calloc(T->lane_hash_cap, sizeof *T->lane_hash);
        for (uint32_t i = 1; i < T->n_lanes; i++)
            lane_hash_insert(T, i);
    } else {
        lane_hash_insert(T, id);
    }
    /* Append to the group's lane list; it is sorted once before the group
     * runs (a chain of n functions makes n lanes: sorted insertion would be
     * quadratic). */
    vec32 *g = &T->glanes[group];
    TK_GROW(g->v, g->cap, g->n + 1);
    if (g->n && lane_cmp(&T->lanes[g->v[g->n - 1]], L) > 0)
        T->glanes_unsorted[group] = true;
    g->v[g->n++] = id;
    return id;
}

static void lane_mark_dirty(struct tk__ticks *T, uint32_t id)
{
    lane *L = &T->lanes[id];
    if (!L->dirty) {
        L->dirty = true;
        vpush(&T->dirty_lanes, id);
    }
}

/* Append a function to a lane (act = 0, spec = 1, ivl = 0; solo from its
 * batch flag). */
static void lane_append(struct tk__ticks *T, uint32_t lid, rec *r, void *target)
{
    T->mut++;
    lane *L = &T->lanes[lid];
    if (L->n == L->cap) {
        uint32_t cap = L->cap ? L->cap * 2 : 64;
        L->targets = tk_realloc(L->targets, cap * sizeof *L->targets);
        if (L->sof == NONE32)
            L->ids = tk_realloc(L->ids, cap * sizeof *L->ids);
        uint64_t **bm[] = {&L->act, &L->spec, &L->ivl, &L->solo};
        for (size_t k = 0; k < TK_ARRAY_LEN(bm); k++) {
            *bm[k] = tk_realloc(*bm[k], (cap / 64) * sizeof **bm[k]);
            memset(*bm[k] + L->cap / 64, 0, (cap - L->cap) / 8);
        }
        L->cap = cap;
    }
    uint32_t p = L->n++;
    L->targets[p] = target;
    if (L->ids)
        L->ids[p] = id_of(T, r);
    else
        target_put_slot(L, target, slot_of(T, r));
    bit_clr(L->act, p);
    bit_set(L->spec, p);
    bit_clr(L->ivl, p);
    bit_put(L->solo, p, !(r->flags & RF_BATCH));
    if (p == L->sorted_n && rec_seq(r) > L->last_seq)
        L->sorted_n = p + 1;
    else
        lane_mark_dirty(T, lid);
    if (rec_seq(r) > L->last_seq)
        L->last_seq = rec_seq(r);
    r->lane = lid;
    r->pos = p;
    if (r->flags & RF_ANYTHREAD)
        L->n_any++;
    if (!L->lvl_mixed) {
        L->level = rec_level(r);
        L->lvl_mixed = 1;
    } else if (L->level != rec_level(r)) {
        L->lvl_mixed = 2;
    }
}

static inline void entry_clear(lane *L, uint32_t p)
{
    if (L->ids)
        L->ids[p] = 0;
    L->targets[p] = NULL;
    bit_clr(L->act, p);
    bit_clr(L->spec, p);
    bit_clr(L->ivl, p);
    bit_clr(L->solo, p);
}

/* Move entry `from` to the free place `to` (its record follows). */
static inline void entry_move(struct tk__ticks *T, lane *L, uint32_t from, uint32_t to)
{
    if (L->ids)
        L->ids[to] = L->ids[from];
    L->targets[to] = L->targets[from];
    bit_put(L->act, to, bit_get(L->act, from));
    bit_put(L->spec, to, bit_get(L->spec, from));
    bit_put(L->ivl, to, bit_get(L->ivl, from));
    bit_put(L->solo, to, bit_get(L->solo, from));
    uint32_t e = lane_slot1(L, to);
    if (e)
        T->recs[e - 1].pos = to;
}

/* Turn a lane entry into a dead one. */
static void lane_kill(struct tk__ticks *T, rec *r)
{
    T->mut++;
    lane *L = &T->lanes[r->lane];
    entry_clear(L, r->pos);
    L->n_dead++;
    if (r->flags & RF_ANYTHREAD)
        L->n_any--;
    if (L->n_dead * 4 > L->n)
        lane_mark_dirty(T, r->lane);
}

typedef struct lent {
    uint64_t seq;
    uint64_t id;
    void *target;
    uint8_t bits;  /* act | spec << 1 | ivl << 2 | solo << 3 */
} lent;

static int lent_cmp(const void *a, const void *b)
{
    const lent *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Restore registration order (between frames): entries appended out of order
 * ([sorted_n, n), e.g. a function that moved back from another lane) are
 * merged into the sorted prefix from the back.  Dead entries of the prefix
 * move along, so only the entries after the first place a tail entry goes to
 * move: O(those + tail log tail), not O(lane).
 */
static void lane_merge_tail(struct tk__ticks *T, uint32_t lid)
{
    lane *L = &T->lanes[lid];
    if (L->sorted_n >= L->n)
        return;
    uint32_t from = L->sorted_n, n_old = L->n;
    size_t n_tail = 0;
    lent *tail = tk_malloc((n_old - from) * sizeof *tail);
    for (uint32_t i = from; i < n_old; i++) {
        if (!lane_slot1(L, i)) {
            L->n_dead--;
            continue;
        }
        tail[n_tail++] = (lent){rec_seq(lane_rec(T, L, i)), lane_id(T, L, i), L->targets[i],
                                (uint8_t)(bit_get(L->act, i) | bit_get(L->spec, i) << 1 |
                                          bit_get(L->ivl, i) << 2 | bit_get(L->solo, i) << 3)};
    }
    qsort(tail, n_tail, sizeof *tail, lent_cmp);
    for (uint32_t i = from; i < n_old; i++)
        entry_clear(L, i);
    uint32_t total = from + (uint32_t)n_tail;
    /* A compaction under way: follow the start of its hole (or, with no
     * hole, its next entry).  Dead entries move along before any tail entry
     * is placed, so tail entries never land inside the hole; those placed
     * before it shift it as a whole. */
    bool comp = L->compacting;
    uint32_t track = L->cw < L->cr ? L->cw : L->cr;
    int64_t moved_to = -1;
    int64_t i = (int64_t)from - 1, j = (int64_t)n_tail - 1, k = (int64_t)total - 1;
    while (j >= 0) {
        if (i >= 0 && (!lane_slot1(L, (uint32_t)i) ||
                       rec_seq(lane_rec(T, L, (uint32_t)i)) > tail[j].seq)) {
            if (comp && i == (int64_t)track)
                moved_to = k;
            entry_move(T, L, (uint32_t)i, (uint32_t)k);
            i--;
        } else {
            uint32_t q = (uint32_t)k;
            if (L->ids)
                L->ids[q] = tail[j].id;
            L->targets[q] = tail[j].target;
            bit_put(L->act, q, tail[j].bits & 1);
            bit_put(L->spec, q, (tail[j].bits >> 1) & 1);
            bit_put(L->ivl, q, (tail[j].bits >> 2) & 1);
            bit_put(L->solo, q, (tail[j].bits >> 3) & 1);
            T->recs[id_slot(tail[j].id)].pos = q;
            j--;
        }
        k--;
    }
    tk_free(tail);
    L->n = total;
    L->sorted_n = total;
    L->layout++;
    if (comp) {
        if (L->cw < L->cr) {
            if (moved_to >= 0) {
                uint32_t shift = (uint32_t)moved_to - L->cw;
                L->cw += shift;
                L->cr += shift;
            }
        } else if (track >= from) {
            L->cw = L->cr = total; /* all looked at: it ends at the next step */
        } else if (moved_to >= 0) {
            L->cw = L->cr = (uint32_t)moved_to;
        }
    }
}

/*
 * Remove dead entries of a lane (between frames), within `budget` units of
 * work: a dead entry looked at costs 1, a live one moved COMPACT_MOVE (it
 * writes its entry and its record); returns the units spent.  The lane stays
 * `compacting` until its end is reached; meanwhile the hole is only dead
 * entries, which runs skip 64 at a time.  Capacity is kept (the arrays are
 * reused by later registrations; giving a big block back would unmap it in
 * one go, milliseconds on a paravirtualized VM).
 */
static uint32_t lane_compact_step(struct tk__ticks *T, uint32_t lid, uint32_t budget)
{
    lane *L = &T->lanes[lid];
    if (!L->compacting) {
        if (L->n_dead == 0)
            return 0;
        L->compacting = true;
        L->cw = L->cr = 0;
    }
    uint32_t spent = 0, i = L->cr;
    bool moved = false;
    for (; i < L->n && spent < budget; i++) {
        if (!lane_slot1(L, i)) {
            L->n_dead--;
            spent++;
            continue;
        }
        if (L->cw != i) {
            entry_move(T, L, i, L->cw);
            entry_clear(L, i);
            moved = true;
            spent += COMPACT_MOVE;
        } else {
            spent++;
        }
        L->cw++;
    }
    L->cr = i;
    if (moved)
        L->layout++;
    if (L->cr == L->n) {
        L->n = L->cw;
        L->sorted_n = TK_MIN(L->sorted_n, L->n);
        L->compacting = false;
    }
    return spent;
}

/* Is the lane's upkeep finished (nothing to merge, no compaction due)? */
static inline bool lane_settled(const lane *L)
{
    return L->sorted_n >= L->n && !L->compacting && !(L->n_dead * 4 > L->n);
}

/* ---- counters ------------------------------------------------------------- */

static inline bool in_groups(const tk_world_t *w) { return T_of(w)->phase == PH_GROUPS; }

/* Is the lane entry of r still to be executed in this frame? */
static bool lane_pending(const tk_world_t *w, const rec *r)
{
    const lane *L = &T_of(w)->lanes[r->lane];
    if (!in_groups(w))
        return false;
    if (L->ran != fmark(w))
        return L->group >= T_of(w)->cur_group;
    return L->running && r->pos > L->cur;
}

typedef struct counters {
    uint64_t ticks, last_frame;
    double accum;
    float last_dt;
} counters;

static inline dset *set_of(const struct tk__ticks *T, const ext *x)
{
    return x && x->dset ? &T->dsets[x->dset] : NULL;
}

/* A due set fired this frame and its member r has not run yet. */
static inline bool member_pending(const tk_world_t *w, const dset *D, const rec *r)
{
    return D->fired == fmark(w) && lane_pending(w, r);
}

/* CalculateDeltaTime's "last tick" of a function (ns, -1 = none). */
static int64_t last_iv_of(const tk_world_t *w, const rec *r)
{
    const struct tk__ticks *T = T_of(w);
    const ext *x = ext_of(T, r);
    const dset *D = set_of(T, x);
    if (D)
        return member_pending(w, D, r) ? D->prev_iv : D->last_iv;
    return x ? x->last_iv_ns : -1;
}

static void get_counters(const tk_world_t *w, const rec *r, counters *c)
{
    const struct tk__ticks *T = T_of(w);
    uint32_t coh = rec_cohort(T, r);
    if (coh) {
        const cohort *C = &T->cohorts[coh];
        uint64_t runs, lf;
        double laccum;
        float ld;
        if (C->src & COH_SET) {
            const dset *D = &T->dsets[C->src & ~COH_SET];
            /* A set counts its run when it fires, before its members ran. */
            bool before = member_pending(w, D, r);
            runs = D->runs - before;
            laccum = before ? D->prev_accum : D->accum;
            lf = before ? D->prev_last_frame : D->last_frame;
            ld = before ? D->prev_last_dt : D->last_dt;
        } else {
            const lane *L = &T->lanes[C->src];
            /* The lane is mid-run and this entry has not been executed yet. */
            bool before = L->running && r->pos > L->cur;
            runs = L->runs - before;
            laccum = before ? L->prev_accum : L->accum;
            lf = before ? L->prev_last_frame : L->last_frame;
            ld = before ? L->prev_last_dt : L->last_dt;
        }
        c->ticks = C->ticks0 + (runs - C->runs0);
        c->accum = C->accum0 + (laccum - C->laccum0);
        if (runs > C->runs0) {
            c->last_frame = lf;
            c->last_dt = ld;
        } else {
            c->last_frame = C->last_frame0;
            c->last_dt = C->last_dt0;
        }
        return;
    }
    const ext *x = ext_of(T, r);
    if (x) {
        c->ticks = x->ticks;
        c->last_frame = x->last_frame;
        c->accum = x->accum;
        c->last_dt = x->last_dt;
    } else {
        memset(c, 0, sizeof *c);
    }
}

static void cohort_release(struct tk__ticks *T, uint32_t id)
{
    cohort *C = &T->cohorts[id];
    TK_ASSERT(C->refs > 0);
    if (--C->refs == 0) {
        C->src = T->cohort_free;
        T->cohort_free = id;
    }
}

/* Enter derived mode: counters from `src`, a lane or a due set (COH_SET),
 * from now on (between frames, or at StartFrame before the set fires). */
static void join_derived(tk_world_t *w, rec *r, uint32_t src)
{
    struct tk__ticks *T = T_of(w);
    TK_ASSERT(!rec_cohort(T, r));
    counters c;
    get_counters(w, r, &c);
    uint64_t runs;
    double sacc;
    if (src & COH_SET) {
        runs = T->dsets[src & ~COH_SET].runs;
        sacc = T->dsets[src & ~COH_SET].accum;
    } else {
        runs = T->lanes[src].runs;
        sacc = T->lanes[src].accum;
    }
    size_t h = (hash64(c.ticks ^ ((uint64_t)src << 20) ^ c.last_frame * 31) ^
                (size_t)(c.accum * 1e9)) & 63;
    for (size_t probe = 0; probe < 4; probe++) {
        uint32_t id = T->coh_cache[(h + probe) & 63];
        if (!id)
            continue;
        cohort *C = &T->cohorts[id];
        if (C->refs && C->src == src && C->runs0 == runs && C->laccum0 == sacc &&
            C->ticks0 == c.ticks && C->accum0 == c.accum && C->last_frame0 == c.last_frame &&
            C->last_dt0 == c.last_dt) {
            C->refs++;
            set_cohort(T, r, id);
            goto done;
        }
    }
    uint32_t id;
    if (T->cohort_free) {
        id = T->cohort_free;
        T->cohort_free = T->cohorts[id].src;
    } else {
        if (T->n_cohorts == 0)
            T->n_cohorts = 1;
        TK_GROW(T->cohorts, T->cap_cohorts, T->n_cohorts + 1);
        id = (uint32_t)T->n_cohorts++;
    }
    T->cohorts[id] = (cohort){.src = src, .refs = 1, .runs0 = runs, .laccum0 = sacc,
                              .ticks0 = c.ticks, .accum0 = c.accum, .last_frame0 = c.last_frame,
                              .last_dt0 = c.last_dt};
    set_cohort(T, r, id);
    for (size_t probe = 0; probe < 4; probe++) {
        size_t s = (h + probe) & 63;
        uint32_t old = T->coh_cache[s];
        if (!old || !T->cohorts[old].refs || probe == 3) {
            T->coh_cache[s] = id;
            break;
        }
    }
done:
    if (r->cx & REC_EXT) {
        ext *x = &T->exts[rec_ext(r)];
        x->ticks = 0;
        x->last_frame = 0;
        x->accum = 0;
        x->last_dt = 0;
    }
}

/* ---- due sets ---------------------------------------------------------------- */

static void wheel_insert(tk_world_t *w, rec *r, uint64_t due);

/* A new due set in lane `lid` (not on the wheel yet). */
static uint32_t dset_new(struct tk__ticks *T, uint32_t lid, uint64_t iv, uint64_t due,
                         int64_t last_iv)
{
    uint32_t id;
    if (T->dset_free) {
        id = T->dset_free;
        T->dset_free = T->dsets[id].n;
    } else {
        if (T->n_dsets == 0)
            T->n_dsets = 1;
        TK_GROW(T->dsets, T->cap_dsets, T->n_dsets + 1);
        id = (uint32_t)T->n_dsets++;
    }
    dset *D = &T->dsets[id];
    memset(D, 0, sizeof *D);
    D->lane = lid;
    D->wnode = NONE32;
    D->iv = iv;
    D->due = due;
    D->last_iv = last_iv;
    D->prev_iv = last_iv;
    D->layout = T->lanes[lid].layout;
    return id;
}

static void dset_free(struct tk__ticks *T, uint32_t id)
{
    dset *D = &T->dsets[id];
    TK_ASSERT(D->lane && D->n == 0);
    if (D->wnode != NONE32)
        tk__wheel_del(&T->wheel_sets, D->wnode);
    tk_free(D->slots);
    tk_free(D->wi);
    tk_free(D->wm);
    memset(D, 0, sizeof *D);
    D->n = T->dset_free;
    T->dset_free = id;
}

static inline bool dset_cache_ok(const struct tk__ticks *T, const dset *D)
{
    return !D->stale && D->layout == T->lanes[D->lane].layout;
}

/* Join: r (enabled interval function of the set's lane, counters already
 * materialized) becomes a member; the caller then derives its counters. */
static void dset_add(struct tk__ticks *T, uint32_t id, rec *r)
{
    ext *x = ensure_ext(T, r);
    dset *D = &T->dsets[id];
    TK_ASSERT(D->lane == r->lane && !x->dset && x->wnode == NONE32);
    if (D->n == D->cap) {
        D->cap = D->cap ? D->cap * 2 : 8;
        D->slots = tk_realloc(D->slots, D->cap * sizeof *D->slots);
    }
    x->dset = id;
    x->dmi = D->n;
    D->slots[D->n++] = slot_of(T, r);
    T->n_members++;
    x->was_interval = true;
    x->last_iv_ns = -1; /* the set's from now on */
    if (dset_cache_ok(T, D)) {
        uint32_t wd = r->pos >> 6;
        uint64_t bit = 1ull << (r->pos & 63);
        if (D->nw && D->wi[D->nw - 1] == wd) {
            D->wm[D->nw - 1] |= bit;
        } else if (!D->nw || D->wi[D->nw - 1] < wd) {
            if (D->nw == D->capw) {
                D->capw = D->capw ? D->capw * 2 : 4;
                D->wi = tk_realloc(D->wi, D->capw * sizeof *D->wi);
                D->wm = tk_realloc(D->wm, D->capw * sizeof *D->wm);
            }
            D->wi[D->nw] = wd;
            D->wm[D->nw++] = bit;
        } else {
            D->stale = true;
        }
    }
    lane *L = &T->lanes[r->lane];
    bit_clr(L->spec, r->pos);
    bit_set(L->ivl, r->pos);
    r->state = TK_TICK_COOLING_DOWN;
}

/*
 * Leave the due set r belongs to (its counters were materialized, or it is
 * being unregistered).  Its interval phase goes with it: the set's last tick
 * time (the one before this frame's firing if it has not run yet), and with
 * `keep_cooling` the set's due time on the wheel of its own.  A member that
 * leaves in a frame its set fired keeps its act bit (a pending tick still
 * runs, through exec_one) until the frame ends.
 */
static void dset_remove(tk_world_t *w, rec *r, bool keep_cooling)
{
    T_of(w)->mut++;
    struct tk__ticks *T = T_of(w);
    ext *x = ext_of(T, r);
    uint32_t id = x->dset;
    dset *D = &T->dsets[id];
    uint64_t F = fmark(w);
    bool live = D->fired == F && in_groups(w);
    bool pending = live && lane_pending(w, r);
    x->last_iv_ns = pending ? D->prev_iv : D->last_iv;
    x->was_interval = true;
    if (live) {
        x->due = F;
        if (!pending)
            x->ran = F;
        vpush(&T->due_now, slot_of(T, r));
    }
    /* Out of the member list (swap-remove) and the position cache. */
    uint32_t last = --D->n;
    if (x->dmi != last) {
        uint32_t moved = D->slots[last];
        D->slots[x->dmi] = moved;
        T->exts[rec_ext(&T->recs[moved])].dmi = x->dmi;
    }
    if (dset_cache_ok(T, D)) {
        uint32_t wd = r->pos >> 6, lo = 0, hi = D->nw;
        while (lo < hi) {
            uint32_t mid = (lo + hi) / 2;
            if (D->wi[mid] < wd)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < D->nw && D->wi[lo] == wd)
            D->wm[lo] &= ~(1ull << (r->pos & 63));
    }
    T->n_members--;
    x->dset = 0;
    x->dmi = 0;
    uint64_t due = D->due;
    bit_clr(T->lanes[r->lane].ivl, r->pos);
    bit_set(T->lanes[r->lane].spec, r->pos);
    if (D->n == 0)
        dset_free(T, id);
    if (keep_cooling)
        wheel_insert(w, r, due);
}

/* Leave derived mode: counters into the ext record (and out of its due
 * set, still cooling down on its own).  Its entry is ticked one by one from
 * now on. */
static void materialize(tk_world_t *w, rec *r)
{
    T_of(w)->mut++;
    struct tk__ticks *T = T_of(w);
    uint32_t coh = rec_cohort(T, r);
    if (!coh)
        return;
    counters c;
    get_counters(w, r, &c);
    cohort_release(T, coh);
    set_cohort(T, r, 0);
    bit_set(T->lanes[r->lane].spec, r->pos);
    ext *x = ensure_ext(T, r);
    x->ticks = c.ticks;
    x->last_frame = c.last_frame;
    x->accum = c.accum;
    x->last_dt = c.last_dt;
    if (x->dset)
        dset_remove(w, r, true);
}

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Make the set's position cache valid: rebuilt from its members' records
 * when positions moved (lane compaction), members joined out of order, or
 * removals left it mostly empty words.  O(members). */
static void dset_cache(struct tk__ticks *T, uint32_t id, vec32 *scratch)
{
    dset *D = &T->dsets[id];
    if (dset_cache_ok(T, D) && D->nw <= D->n + 16)
        return;
    scratch->n = 0;
    TK_GROW(scratch->v, scratch->cap, D->n);
    bool sorted = true;
    for (uint32_t i = 0; i < D->n; i++) {
        uint32_t p = T->recs[D->slots[i]].pos;
        if (i && p < scratch->v[i - 1])
            sorted = false;
        scratch->v[i] = p;
    }
    scratch->n = D->n;
    if (!sorted)
        qsort(scratch->v, scratch->n, sizeof *scratch->v, u32_cmp);
    D->nw = 0;
    for (uint32_t i = 0; i < D->n; i++) {
        uint32_t p = scratch->v[i], wd = p >> 6;
        if (D->nw && D->wi[D->nw - 1] == wd) {
            D->wm[D->nw - 1] |= 1ull << (p & 63);
            continue;
        }
        if (D->nw == D->capw) {
            D->capw = D->capw ? D->capw * 2 : 4;
            D->wi = tk_realloc(D->wi, D->capw * sizeof *D->wi);
            D->wm = tk_realloc(D->wm, D->capw * sizeof *D->wm);
        }
        D->wi[D->nw] = wd;
        D->wm[D->nw++] = 1ull << (p & 63);
    }
    D->stale = false;
    D->layout = T->lanes[D->lane].layout;
    scratch->n = 0;
}

/*
 * A due set comes due (or, just made from fresh functions, ticks for the
 * first time): CalculateDeltaTime once for all members, counters, the next
 * due time (due + interval: Unreal's overrun credit), and its members'
 * entries become active for this frame.
 */
static void dset_fire(tk_world_t *w, uint32_t id)
{
    struct tk__ticks *T = T_of(w);
    dset_cache(T, id, &T->stack);
    dset *D = &T->dsets[id];
    lane *L = &T->lanes[D->lane];
    uint64_t now = w->time_ns, F = fmark(w);
    float dt = D->last_iv >= 0 ? (float)tk_ns_to_s(now - (uint64_t)D->last_iv)
                               : (float)tk_ns_to_s(w->dt_ns);
    D->prev_iv = D->last_iv;
    D->last_iv = (int64_t)now;
    D->prev_last_frame = D->last_frame;
    D->prev_last_dt = D->last_dt;
    D->prev_accum = D->accum;
    D->runs++;
    D->accum += dt;
    D->last_frame = w->frame;
    D->last_dt = dt;
    D->dt = dt;
    D->fired = F;
    D->due += D->iv;
    D->wnode = tk__wheel_add(&T->wheel_sets, D->due, id);
    if (L->ivl_mark != F) {
        L->ivl_mark = F;
        L->ivl_dt = dt;
        L->ivl_mixed = false;
    } else if (memcmp(&L->ivl_dt, &dt, sizeof dt) != 0) {
        L->ivl_mixed = true;
    }
    for (uint32_t i = 0; i < D->nw; i++)
        L->act[D->wi[i]] |= D->wm[i];
    vpush(&T->fired, id);
}

/* The frame ends: the members of a set that fired stop being active. */
static void dset_unfire(tk_world_t *w, uint32_t id)
{
    struct tk__ticks *T = T_of(w);
    dset *D = &T->dsets[id];
    if (!D->lane || D->fired != fmark(w))
        return;
    TK_ASSERT(dset_cache_ok(T, D));
    lane *L = &T->lanes[D->lane];
    for (uint32_t i = 0; i < D->nw; i++)
        L->act[D->wi[i]] &= ~D->wm[i];
}

/* The dt a due-set member's entry ticks with this frame. */
static inline float member_dt(const struct tk__ticks *T, uint64_t id)
{
    const rec *r = &T->recs[id_slot(id)];
    return T->dsets[T->exts[rec_ext(r)].dset].dt;
}

/* ---- grouping map --------------------------------------------------------------- */

/* Start a new grouping (forgets the previous one in O(1)). */
static void group_reset(struct tk__ticks *T)
{
    if (++T->gmap_stamp == 0) {
        memset(T->gmap, 0, T->cap_gmap * sizeof *T->gmap);
        T->gmap_stamp = 1;
    }
    T->n_gmap = 0;
}

static inline size_t gmap_hash(uint64_t k1, uint64_t k2, uint64_t k3, uint64_t k4)
{
    return hash64(k1 ^ hash64(k2 ^ hash64(k3 ^ hash64(k4))));
}

/* The due set grouped under key (k1..k4) in this grouping: a pointer to its
 * id, 0 if new (the caller stores the id; valid until the next call). */
static uint32_t *group_find(struct tk__ticks *T, uint64_t k1, uint64_t k2, uint64_t k3,
                            uint64_t k4)
{
    if ((T->n_gmap + 1) * 2 > T->cap_gmap) {
        gmap_ent *old = T->gmap;
        size_t ocap = T->cap_gmap;
        T->cap_gmap = ocap ? ocap * 2 : 64;
        T->gmap = tk_calloc(T->cap_gmap, sizeof *T->gmap);
        for (size_t i = 0; i < ocap; i++) {
            if (old[i].stamp != T->gmap_stamp)
                continue;
            size_t m = T->cap_gmap - 1,
                   h = gmap_hash(old[i].k1, old[i].k2, old[i].k3, old[i].k4) & m;
            while (T->gmap[h].stamp == T->gmap_stamp)
                h = (h + 1) & m;
            T->gmap[h] = old[i];
        }
        tk_free(old);
    }
    size_t m = T->cap_gmap - 1, h = gmap_hash(k1, k2, k3, k4) & m;
    while (T->gmap[h].stamp == T->gmap_stamp) {
        gmap_ent *e = &T->gmap[h];
        if (e->k1 == k1 && e->k2 == k2 && e->k3 == k3 && e->k4 == k4)
            return &e->id;
        h = (h + 1) & m;
    }
    T->gmap[h] = (gmap_ent){k1, k2, k3, k4, 0, T->gmap_stamp};
    T->n_gmap++;
    return &T->gmap[h].id;
}

/* ---- creation ----------------------------------------------------------- */

struct tk__ticks *tk__ticks_new(void)
{
    struct tk__ticks *T = tk_calloc(1, sizeof *T);
    T->seq_next = 1;
    T->free_head = NONE32;
    T->cur_group = 0;
    T->main.thread = 0;
    return T;
}

void tk__ticks_free(struct tk__ticks *T)
{
    if (!T)
        return;
    for (size_t i = 1; i < T->n_exts; i++) {
        tk_free(T->exts[i].pre);
        tk_free(T->exts[i].pre_cycle);
        tk_free(T->exts[i].dep);
    }
    for (size_t i = 1; i < T->n_lanes; i++) {
        tk_free(T->lanes[i].targets);
        tk_free(T->lanes[i].ids);
        tk_free(T->lanes[i].act);
        tk_free(T->lanes[i].spec);
        tk_free(T->lanes[i].ivl);
        tk_free(T->lanes[i].solo);
    }
    for (size_t i = 1; i < T->n_dsets; i++) {
        tk_free(T->dsets[i].slots);
        tk_free(T->dsets[i].wi);
        tk_free(T->dsets[i].wm);
    }
    for (int g = 0; g < GROUPS; g++) {
        tk_free(T->glanes[g].v);
        tk_free(T->xs[g]);
    }
    vec32 *vs[] = {&T->limbo, &T->dirty_lanes, &T->dirty, &T->fresh, &T->dyn,
                   &T->paused_fns, &T->due_now, &T->newly, &T->tmp, &T->stack,
                   &T->lanes_run, &T->fired, &T->iv_defer, &T->renewed};
    for (size_t i = 0; i < TK_ARRAY_LEN(vs); i++)
        tk_free(vs[i]->v);
    if (T->wheels_ready) {
        tk__wheel_deinit(&T->wheel_game);
        tk__wheel_deinit(&T->wheel_unpaused);
        tk__wheel_deinit(&T->wheel_sets);
    }
    tk_free(T->dsets);
    tk_free(T->gmap);
    tk_free(T->walk);
    tk_free(T->edges);
    tk_free(T->dues);
    tk_free(T->recs);
    tk_free(T->exts);
    tk_free(T->lanes);
    tk_free(T->lane_hash);
    tk_free(T->cohorts);
    tk_free(T->classes);
    tk_free(T->pr_each);
    for (size_t i = 0; i < T->n_runners; i++)
        tk_free(T->runners[i].ev);
    tk_free(T->runners);
    tk_free(T->chunks);
    tk_free(T->ranges);
    tk_free(T);
}

static void ensure_wheels(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    if (!T->wheels_ready) {
        tk__wheel_init(&T->wheel_game, w->time_ns);
        tk__wheel_init(&T->wheel_unpaused, w->unpaused_ns);
        tk__wheel_init(&T->wheel_sets, w->time_ns);
        T->wheels_ready = true;
    }
}

/* ---- names -------------------------------------------------------------- */

static const char *const group_names[TK_GROUP_COUNT] = {
    "pre_physics",  "start_physics",    "during_physics", "end_physics",
    "post_physics", "post_update_work", "last_demotable", "newly_spawned"};

const char *tk_group_name(tk_group g)
{
    if ((int)g < 0 || g >= TK_GROUP_COUNT)
        return NULL;
    return group_names[g];
}

int tk_group_parse(const char *s, tk_group *out)
{
    if (!s)
        return TK_EINVAL;
    for (int g = 0; g < TK_GROUP_NEWLY_SPAWNED; g++) {
        if (strcmp(s, group_names[g]) == 0) {
            *out = (tk_group)g;
            return 0;
        }
    }
    return TK_EINVAL;
}

const char *tk_tick_state_name(tk_tick_state s)
{
    switch (s) {
    case TK_TICK_ENABLED:
        return "enabled";
    case TK_TICK_DISABLED:
        return "disabled";
    case TK_TICK_COOLING_DOWN:
        return "cooling_down";
    }
    return NULL;
}

void tk_tick_spec_default(tk_tick_spec *s)
{
    memset(s, 0, sizeof *s);
    s->group = TK_GROUP_PRE_PHYSICS;
    s->end_group = TK_GROUP_SAME;
    s->enabled = true;
    s->batch = true;
    s->on_dedicated_server = true;
}

int tk_tick_spec_check(const tk_tick_spec *s, const char **why)
{
    const char *dummy;
    if (!why)
        why = &dummy;
    if (!s) {
        *why = "spec is NULL";
        return TK_EINVAL;
    }
    if ((int)s->group < 0 || s->group >= TK_GROUP_NEWLY_SPAWNED) {
        *why = "group must be one of pre_physics .. last_demotable";
        return TK_EINVAL;
    }
    if (s->end_group != TK_GROUP_SAME &&
        ((int)s->end_group < 0 || s->end_group >= TK_GROUP_NEWLY_SPAWNED)) {
        *why = "end_group must be one of pre_physics .. last_demotable";
        return TK_EINVAL;
    }
    if (s->end_group != TK_GROUP_SAME && s->end_group < s->group) {
        *why = "end_group is earlier than group";
        return TK_EINVAL;
    }
    if (!isfinite(s->interval)) {
        *why = "interval must be a finite number";
        return TK_EINVAL;
    }
    if (s->interval > 1e9) {
        *why = "interval must be at most 1e9 seconds";
        return TK_EINVAL;
    }
    return 0;
}

/* ---- classes ------------------------------------------------------------- */

int tk_tick_class_register(tk_world_t *w, const tk_tick_class_desc *d, tk_class_id *out)
{
    TK_PAR_GUARD(w, "tk_tick_class_register");
    if (!w || !d)
        return TK_EINVAL;
    struct tk__ticks *T = T_of(w);
    if (!d->name || !d->name[0] || strlen(d->name) > 63)
        return tk__world_error(w, TK_EINVAL, "class name must be 1..63 bytes");
    if (!d->fn)
        return tk__world_error(w, TK_EINVAL, "class '%s' has no tick function", d->name);
    tk_class_id existing;
    if (tk_tick_class_find(w, d->name, &existing) == 0)
        return tk__world_error(w, TK_EEXIST, "class '%s' already exists", d->name);
    if (T->n_classes >= TK_CLASS_MAX)
        return tk__world_error(w, TK_ELIMIT, "too many classes (max %d)", TK_CLASS_MAX);
    TK_GROW(T->classes, T->cap_classes, T->n_classes + 1);
    tclass *c = &T->classes[T->n_classes];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", d->name);
    c->fn = d->fn;
    c->fn_batch = d->fn_batch;
    c->thread_safe = d->thread_safe;
    if (out)
        *out = (tk_class_id)T->n_classes;
    T->n_classes++;
    return 0;
}

int tk_tick_class_slot_in_target(tk_world_t *w, tk_class_id cls, size_t offset)
{
    if (!w)
        return TK_EINVAL;
    struct tk__ticks *T = T_of(w);
    if (cls >= T->n_classes)
        return tk__world_error(w, TK_EINVAL, "class %u is not registered", (unsigned)cls);
    tclass *c = &T->classes[cls];
    if (offset > 65536 || offset % sizeof(uint32_t))
        return tk__world_error(w, TK_EINVAL, "class '%s': the slot's offset must be a multiple "
                               "of 4 up to 65536", c->name);
    if (c->used)
        return tk__world_error(w, TK_ESTATE, "class '%s' has had functions registered", c->name);
    c->slot_in_target = true;
    c->slot_offset = (uint32_t)offset;
    return 0;
}

int tk_tick_class_find(const tk_world_t *w, const char *name, tk_class_id *out)
{
    const struct tk__ticks *T = T_of(w);
    for (size_t i = 0; name && i < T->n_classes; i++) {
        if (strcmp(T->classes[i].name, name) == 0) {
            if (out)
                *out = (tk_class_id)i;
            return 0;
        }
    }
    return TK_ENOENT;
}

const char *tk_tick_class_name(const tk_world_t *w, tk_class_id cls)
{
    const struct tk__ticks *T = T_of(w);
    return cls < T->n_classes ? T->classes[cls].name : NULL;
}

void tk_world_set_trace(tk_world_t *w, tk_trace_fn fn, void *ud)
{
    TK_PAR_GUARD_VOID(w, "tk_world_set_trace");
    T_of(w)->trace = fn;
    T_of(w)->trace_ud = ud;
}

void tk_world_set_slow_tick(tk_world_t *w, uint64_t threshold_ns, tk_slow_tick_fn fn, void *ud)
{
    TK_PAR_GUARD_VOID(w, "tk_world_set_slow_tick");
    struct tk__ticks *T = T_of(w);
    T->slow_ns = fn ? threshold_ns : 0;
    T->slow_fn = fn;
    T->slow_ud = ud;
}

void tk__ticks_move_hooks(tk_world_t *to, tk_world_t *from)
{
    struct tk__ticks *F = T_of(from);
    tk_world_set_trace(to, F->trace, F->trace_ud);
    tk_world_set_slow_tick(to, F->slow_ns, F->slow_fn, F->slow_ud);
    tk_world_set_trace(from, NULL, NULL);
    tk_world_set_slow_tick(from, 0, NULL, NULL);
}

void tk_world_set_tick_namer(tk_world_t *w, tk_tick_namer_fn fn, void *ud)
{
    TK_PAR_GUARD_VOID(w, "tk_world_set_tick_namer");
    T_of(w)->namer = fn;
    T_of(w)->namer_ud = ud;
}

/* ---- upkeep: marking changes ------------------------------------------------ */

static void mark_dirty(struct tk__ticks *T, rec *r)
{
    if (!(r->flags & RF_DIRTY)) {
        r->flags |= RF_DIRTY;
        vpush(&T->dirty, slot_of(T, r));
    }
}

/* Can r cool down in a due set: an enabled interval function without
 * individual treatment (not dynamic, not even_when_paused, no custom
 * dilation)? */
static bool eligible_member(const struct tk__ticks *T, const rec *r)
{
    if (r->state == TK_TICK_DISABLED || (r->flags & (RF_DYNAMIC | RF_PAUSED | RF_NEWLY)))
        return false;
    const ext *x = ext_of(T, r);
    return x && x->interval_ns && x->dilation == 1.0f;
}

static void add_newly(tk_world_t *w, rec *r)
{
    struct tk__ticks *T = T_of(w);
    if (r->flags & RF_NEWLY)
        return;
    ensure_ext(T, r);
    r->flags |= RF_NEWLY;
    vpush(&T->newly, slot_of(T, r));
}

/* ---- registration --------------------------------------------------------- */

static int check_prereqs(tk_world_t *w, const tk_tick_id *pre, size_t n, tk_tick_id self)
{
    for (size_t i = 0; i < n; i++) {
        if (!live_rec(w, pre[i]))
            return tk__world_error(w, TK_ENOENT, "prerequisite %zu is not a registered tick function", i);
        if (pre[i] == self)
            return tk__world_error(w, TK_EINVAL, "a tick function cannot be its own prerequisite");
    }
    return 0;
}

static inline uint64_t edge_key(uint32_t r, uint32_t p) { return ((uint64_t)(r + 1) << 32) | p; }

static edge_ent *edge_find(const struct tk__ticks *T, uint32_t r, uint32_t p)
{
    if (!T->cap_edges)
        return NULL;
    uint64_t k = edge_key(r, p);
    size_t m = T->cap_edges - 1, h = hash64(k) & m;
    while (T->edges[h].key) {
        if (T->edges[h].key == k)
            return &T->edges[h];
        h = (h + 1) & m;
    }
    return NULL;
}

static void edge_insert_raw(struct tk__ticks *T, edge_ent e)
{
    size_t m = T->cap_edges - 1, h = hash64(e.key) & m;
    while (T->edges[h].key)
        h = (h + 1) & m;
    T->edges[h] = e;
}

static void edge_put(struct tk__ticks *T, uint32_t r, uint32_t p, uint32_t pi, uint32_t di)
{
    if ((T->n_edges + 1) * 2 > T->cap_edges) {
        edge_ent *old = T->edges;
        size_t ocap = T->cap_edges;
        T->cap_edges = ocap ? ocap * 2 : 64;
        T->edges = tk_calloc(T->cap_edges, sizeof *T->edges);
        for (size_t i = 0; i < ocap; i++)
            if (old[i].key)
                edge_insert_raw(T, old[i]);
        tk_free(old);
    }
    edge_insert_raw(T, (edge_ent){edge_key(r, p), pi, di});
    T->n_edges++;
}

static void edge_del(struct tk__ticks *T, edge_ent *e)
{
    size_t m = T->cap_edges - 1, i = (size_t)(e - T->edges), j = i;
    for (;;) {
        j = (j + 1) & m;
        if (!T->edges[j].key)
            break;
        size_t h = hash64(T->edges[j].key) & m;
        /* Move j back into the hole at i unless its home lies in (i, j]. */
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        T->edges[i] = T->edges[j];
        i = j;
    }
    T->edges[i].key = 0;
    T->n_edges--;
}

static void add_edge(struct tk__ticks *T, rec *r, rec *p)
{
    uint32_t rs = slot_of(T, r), ps = slot_of(T, p);
    if (edge_find(T, rs, ps))
        return;
    ext *x = ensure_ext(T, r);
    tk_tick_id pid = id_of(T, p);
    if (x->n_pre == x->cap_pre) {
        x->cap_pre = x->cap_pre ? x->cap_pre * 2 : 2;
        x->pre = tk_realloc(x->pre, x->cap_pre * sizeof *x->pre);
        x->pre_cycle = tk_realloc(x->pre_cycle, x->cap_pre);
    }
    uint32_t pi = x->n_pre;
    x->pre[pi] = pid;
    x->pre_cycle[pi] = 0;
    x->n_pre++;
    ext *px = ensure_ext(T, p);
    if (px->n_dep == px->cap_dep) {
        px->cap_dep = px->cap_dep ? px->cap_dep * 2 : 2;
        px->dep = tk_realloc(px->dep, px->cap_dep * sizeof *px->dep);
    }
    uint32_t di = px->n_dep++;
    px->dep[di] = rs;
    edge_put(T, rs, ps, pi, di);
}

/* Swap-remove dep[j] of prerequisite `ps` (ext px), keeping the index of the
 * edge moved into j right. */
static void dep_take(struct tk__ticks *T, ext *px, uint32_t ps, uint32_t j)
{
    uint32_t last = --px->n_dep;
    if (j != last) {
        px->dep[j] = px->dep[last];
        edge_ent *m = edge_find(T, px->dep[j], ps);
        TK_ASSERT(m);
        m->di = j;
    }
}

/* Swap-remove pre[i] of function `rs` (ext x), as Unreal's RemoveSwap,
 * keeping the index of the edge moved into i right. */
static void pre_take(struct tk__ticks *T, ext *x, uint32_t rs, uint32_t i)
{
    uint32_t last = --x->n_pre;
    if (i != last) {
        x->pre[i] = x->pre[last];
        x->pre_cycle[i] = x->pre_cycle[last];
        edge_ent *m = edge_find(T, rs, id_slot(x->pre[i]));
        TK_ASSERT(m);
        m->pi = i;
    }
}

/* Remove prerequisite i of r from both lists and the index: O(1). */
static void pre_remove_at(struct tk__ticks *T, rec *r, uint32_t i)
{
    ext *x = ext_of(T, r);
    uint32_t rs = slot_of(T, r), ps = id_slot(x->pre[i]);
    edge_ent *e = edge_find(T, rs, ps);
    TK_ASSERT(e);
    uint32_t j = e->di;
    edge_del(T, e);
    rec *p = &T->recs[ps];
    if (p->cx & REC_EXT)
        dep_take(T, &T->exts[rec_ext(p)], ps, j);
    pre_take(T, x, rs, i);
}

int tk_tick_register(tk_world_t *w, const tk_tick_desc *d, tk_tick_id *out)
{
    TK_PAR_GUARD(w, "tk_tick_register");
    if (!w || !d || !out)
        return TK_EINVAL;
    struct tk__ticks *T = T_of(w);
    const char *why;
    if (d->cls >= T->n_classes)
        return tk__world_error(w, TK_EINVAL, "class %u is not registered", (unsigned)d->cls);
    if (T->classes[d->cls].slot_in_target && !d->target)
        return tk__world_error(w, TK_EINVAL, "class '%s' needs a target (its slot is in it)",
                               T->classes[d->cls].name);
    tk__level *lv = tk__level_get(w, d->level);
    if (!lv)
        return tk__world_error(w, TK_ENOENT, "level does not exist");
    if (tk_tick_spec_check(&d->spec, &why))
        return tk__world_error(w, TK_EINVAL, "%s", why);
    float dil = d->dilation == 0 ? 1.0f : d->dilation;
    if (!(isfinite(dil) && dil > 0))
        return tk__world_error(w, TK_EINVAL, "dilation must be a finite number > 0");
    if (d->n_prerequisites && !d->prerequisites)
        return tk__world_error(w, TK_EINVAL, "prerequisites is NULL");
    int rc = check_prereqs(w, d->prerequisites, d->n_prerequisites, TK_TICK_NONE);
    if (rc)
        return rc;
    if (!d->spec.on_dedicated_server) {
        *out = TK_TICK_NONE;
        return 0;
    }
    if (T->free_head == NONE32 && T->n_recs >= 0xfffffffeu)
        return tk__world_error(w, TK_ELIMIT, "too many tick functions");
    if (T->seq_next >= (1ull << REC_SEQ_BITS) - 1)
        return tk__world_error(w, TK_ELIMIT,
                               "this world has registered 2^52 tick functions in its life");

    uint32_t s;
    if (T->free_head != NONE32) {
        s = T->free_head;
        T->free_head = T->recs[s].pos;
    } else {
        TK_GROW(T->recs, T->cap_recs, T->n_recs + 1);
        s = (uint32_t)T->n_recs++;
    }
    rec *r = &T->recs[s];
    memset(r, 0, sizeof *r);
    if ((uint32_t)T->seq_next == 0)
        T->seq_next++; /* a generation is never 0 */
    size_t lslot = (size_t)(lv - w->levels);
    TK_ASSERT(lslot < (1u << REC_LEVEL_BITS));
    r->sl = (T->seq_next++ << REC_LEVEL_BITS) | lslot;
    int end = d->spec.end_group == TK_GROUP_SAME ? (int)d->spec.group : (int)d->spec.end_group;
    r->grp = grp_pack(d->spec.group, end);
    r->act = grp_pack(d->spec.group, d->spec.group);
    r->state = d->spec.enabled ? TK_TICK_ENABLED : TK_TICK_DISABLED;
    r->flags = (d->spec.high_priority ? RF_HIPRI : 0) | (d->spec.batch ? RF_BATCH : 0) |
               (d->spec.even_when_paused ? RF_PAUSED : 0) | (d->spec.any_thread ? RF_ANYTHREAD : 0);
    uint64_t iv = d->spec.interval > 0 ? tk_s_to_ns(d->spec.interval) : 0;
    if (d->spec.interval > 0 && iv == 0)
        iv = 1;
    if (iv || dil != 1.0f) {
        ext *x = ensure_ext(T, r);
        x->interval_ns = iv;
        x->dilation = dil;
    }
    for (size_t i = 0; i < d->n_prerequisites; i++)
        add_edge(T, r, &T->recs[id_slot(d->prerequisites[i])]);
    lane_append(T, lane_get(T, d->spec.group, d->spec.high_priority ? 0 : 1, 0, d->cls), r,
                d->target);
    lv->n_ticks++;
    T->classes[d->cls].used = true;
    T->n_live++;
    if (r->state == TK_TICK_DISABLED)
        T->n_disabled++;
    if (r->flags & RF_PAUSED) {
        vpush(&T->paused_fns, s);
        T->paused_dirty = true;
    }
    mark_dirty(T, r);
    if (r->state == TK_TICK_ENABLED && in_groups(w))
        add_newly(w, r);
    *out = make_id(s, rec_gen(r));
    return 0;
}

bool tk_tick_alive(const tk_world_t *w, tk_tick_id id) { return w && live_rec(w, id) != NULL; }

tk_tick_id tk_tick_id_at(const tk_world_t *w, uint32_t slot)
{
    const struct tk__ticks *T = T_of(w);
    if (slot >= T->n_recs || T->recs[slot].state == RS_FREE)
        return TK_TICK_NONE;
    return make_id(slot, rec_gen(&T->recs[slot]));
}

static void wheel_remove(struct tk__ticks *T, rec *r)
{
    ext *x = ext_of(T, r);
    if (!x || x->wnode == NONE32)
        return;
    tk__wheel_del(x->in_unpaused ? &T->wheel_unpaused : &T->wheel_game, x->wnode);
    x->wnode = NONE32;
    if (r->state == TK_TICK_COOLING_DOWN)
        r->state = TK_TICK_ENABLED;
}

/* Cool down on its own until `due`.  A function that could join a due set
 * is looked at again at the next StartFrame (upkeep moves it into one). */
static void wheel_insert(tk_world_t *w, rec *r, uint64_t due)
{
    struct tk__ticks *T = T_of(w);
    ensure_wheels(w);
    ext *x = ensure_ext(T, r);
    TK_ASSERT(!x->dset);
    x->in_unpaused = (r->flags & RF_PAUSED) != 0;
    x->wnode = tk__wheel_add(x->in_unpaused ? &T->wheel_unpaused : &T->wheel_game, due,
                             slot_of(T, r));
    r->state = TK_TICK_COOLING_DOWN;
    if (eligible_member(T, r))
        mark_dirty(T, r);
}

static inline uint64_t clock_of(const tk_world_t *w, const rec *r)
{
    return (r->flags & RF_PAUSED) ? w->unpaused_ns : w->time_ns;
}

static void unregister_rec(tk_world_t *w, rec *r)
{
    struct tk__ticks *T = T_of(w);
    uint32_t s = slot_of(T, r);
    uint32_t coh = rec_cohort(T, r);
    if (coh) {
        cohort_release(T, coh);
        set_cohort(T, r, 0);
    }
    if ((r->cx & REC_EXT) && T->exts[rec_ext(r)].dset)
        dset_remove(w, r, false);
    wheel_remove(T, r);
    lane_kill(T, r);
    ext *x = ext_of(T, r);
    if (x) {
        /* Every edge in O(1) through the edge index.  Its prerequisites are
         * re-placed too: their component lost a member, so the walk that
         * reaches a cycle in it may now enter it elsewhere (and Unreal drop
         * another edge). */
        while (x->n_pre) {
            mark_dirty(T, &T->recs[id_slot(x->pre[x->n_pre - 1])]);
            pre_remove_at(T, r, x->n_pre - 1);
        }
        /* Dependents drop this stale prerequisite and are re-placed. */
        for (uint32_t i = 0; i < x->n_dep; i++) {
            uint32_t ds = x->dep[i];
            edge_ent *e = edge_find(T, ds, s);
            TK_ASSERT(e);
            uint32_t k = e->pi;
            edge_del(T, e);
            pre_take(T, &T->exts[rec_ext(&T->recs[ds])], ds, k);
            mark_dirty(T, &T->recs[ds]);
        }
        x->n_dep = 0;
        free_ext(T, r);
    }
    w->levels[rec_level(r)].n_ticks--;
    T->n_live--;
    if (r->state == TK_TICK_DISABLED)
        T->n_disabled--;
    if (r->flags & RF_PAUSED)
        T->paused_dirty = true;
    if (r->flags & RF_DYNAMIC)
        T->dyn_dirty = true;
    r->state = RS_FREE;
    r->flags = 0;
    /* Not reusable before the frame ends: per-frame lists may still name it. */
    vpush(&T->limbo, s);
}

static void release_limbo(struct tk__ticks *T)
{
    for (size_t i = 0; i < T->limbo.n; i++) {
        T->recs[T->limbo.v[i]].pos = T->free_head;
        T->free_head = T->limbo.v[i];
    }
    T->limbo.n = 0;
}

int tk_tick_unregister(tk_world_t *w, tk_tick_id id)
{
    TK_PAR_GUARD(w, "tk_tick_unregister");
    if (!w)
        return TK_EINVAL;
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    unregister_rec(w, r);
    if (T_of(w)->phase == PH_IDLE)
        release_limbo(T_of(w));
    return 0;
}

/* O(registered functions) while the level has some; O(1) once its owner
 * unregistered them (the daemon does, in slices). */
void tk__ticks_remove_level(tk_world_t *w, tk_level_id level)
{
    struct tk__ticks *T = T_of(w);
    uint16_t li = (uint16_t)(level & 0xffffu);
    for (size_t i = 0; i < T->n_recs && w->levels[li].n_ticks; i++) {
        rec *r = &T->recs[i];
        if (r->state != RS_FREE && rec_level(r) == li)
            unregister_rec(w, r);
    }
    if (T->phase == PH_IDLE)
        release_limbo(T);
}

/* ---- changes ----------------------------------------------------------------- */

static void set_enabled(tk_world_t *w, rec *r, bool en)
{
    T_of(w)->mut++;
    struct tk__ticks *T = T_of(w);
    bool is_en = r->state != TK_TICK_DISABLED;
    if (en == is_en) {
        if (!en && (r->cx & REC_EXT))
            T->exts[rec_ext(r)].last_iv_ns = -1;
        return;
    }
    uint64_t F = fmark(w);
    if (!en) {
        /* Disabling cancels this frame's pending tick and drops the interval
         * phase (SetTickFunctionEnable(false)).  An entry that was active this
         * frame was visited: re-enabling it must not queue it again. */
        bool active = in_groups(w) && bit_get(T->lanes[r->lane].act, r->pos);
        bool pending = active && lane_pending(w, r);
        materialize(w, r);
        wheel_remove(T, r);
        bit_clr(T->lanes[r->lane].act, r->pos);
        ext *x = ensure_ext(T, r);
        if (active)
            x->visit = F;
        if (pending)
            x->cancel = F;
        x->last_iv_ns = -1;
        r->state = TK_TICK_DISABLED;
        r->flags &= (uint8_t)~RF_NEWLY;
        T->n_disabled++;
    } else {
        r->state = TK_TICK_ENABLED;
        T->n_disabled--;
        ext *x = ext_of(T, r);
        if (in_groups(w)) {
            /* Unreal sends it through NewlySpawned: queued there unless
             * visited this frame, and an interval function is rescheduled
             * for its full interval either way. */
            bool visited = x && (x->visit == F || x->task == F);
            if (x && x->cancel == F && lane_pending(w, r)) {
                /* The cancelled tick is still queued: Unreal's task re-checks
                 * the enabled flag when it runs, so it ticks after all. */
                bit_set(T->lanes[r->lane].act, r->pos);
            }
            if (!visited)
                add_newly(w, r);
            else
                vpush(&T->renewed, slot_of(T, r));
        }
    }
    mark_dirty(T, r);
}

int tk_tick_set_enabled(tk_world_t *w, tk_tick_id id, bool enabled)
{
    TK_PAR_GUARD(w, "tk_tick_set_enabled");
    if (!w)
        return TK_EINVAL;
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    set_enabled(w, r, enabled);
    return 0;
}

int tk_tick_set_spec(tk_world_t *w, tk_tick_id id, const tk_tick_spec *spec)
{
    TK_PAR_GUARD(w, "tk_tick_set_spec");
    if (!w)
        return TK_EINVAL;
    struct tk__ticks *T = T_of(w);
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    const char *why;
    if (tk_tick_spec_check(spec, &why))
        return tk__world_error(w, TK_EINVAL, "%s", why);
    if (!spec->on_dedicated_server)
        return tk__world_error(w, TK_EINVAL,
                               "on_dedicated_server cannot be turned off on a registered "
                               "tick function; unregister it instead");
    materialize(w, r);
    int end = spec->end_group == TK_GROUP_SAME ? (int)spec->group : (int)spec->end_group;
    r->grp = grp_pack(spec->group, end);
    bool was_paused = (r->flags & RF_PAUSED) != 0;
    if (spec->any_thread != ((r->flags & RF_ANYTHREAD) != 0)) {
        if (spec->any_thread)
            T->lanes[r->lane].n_any++;
        else
            T->lanes[r->lane].n_any--;
    }
    r->flags = (uint8_t)((r->flags & (RF_DYNAMIC | RF_NEWLY | RF_DIRTY | RF_LOWBAND)) |
                         (spec->high_priority ? RF_HIPRI : 0) | (spec->batch ? RF_BATCH : 0) |
                         (spec->even_when_paused ? RF_PAUSED : 0) |
                         (spec->any_thread ? RF_ANYTHREAD : 0));
    bool now_paused = (r->flags & RF_PAUSED) != 0;
    ext *x = ext_of(T, r);
    if (was_paused != now_paused) {
        T->paused_dirty = true;
        if (now_paused)
            vpush(&T->paused_fns, slot_of(T, r));
        /* Move a cooling function to the other clock, keeping its remaining time. */
        if (x && x->wnode != NONE32) {
            tk__wheel *from = x->in_unpaused ? &T->wheel_unpaused : &T->wheel_game;
            uint64_t due = tk__wheel_due(from, x->wnode);
            uint64_t old_clock = x->in_unpaused ? w->unpaused_ns : w->time_ns;
            uint64_t remaining = due > old_clock ? due - old_clock : 0;
            wheel_remove(T, r);
            wheel_insert(w, r, clock_of(w, r) + remaining);
        }
    }
    /* UpdateTickIntervalAndCoolDown. */
    uint64_t iv = spec->interval > 0 ? TK_MAX(tk_s_to_ns(spec->interval), 1) : 0;
    if (iv != iv_of(T, r)) {
        x = ensure_ext(T, r);
        x->interval_ns = iv;
        /* A function that has been on an interval waits the new interval from
         * now, cooling or not (Unreal reschedules it; a never-interval one
         * ticks first, then cools). */
        if (r->state != TK_TICK_DISABLED && x->was_interval) {
            wheel_remove(T, r);
            if (iv) {
                wheel_insert(w, r, clock_of(w, r) + iv);
                /* Out of NewlySpawned too: it does not tick this frame. */
                r->flags &= (uint8_t)~RF_NEWLY;
                /* Between frames, an even_when_paused one counts from the
                 * end of the next frame if that is a pause frame. */
                if ((r->flags & RF_PAUSED) && T->phase == PH_IDLE)
                    vpush(&T->iv_defer, slot_of(T, r));
            }
        }
        if (!iv) {
            /* An every-frame function again: no interval delta any more. */
            x->was_interval = false;
            x->last_iv_ns = -1;
        }
    }
    mark_dirty(T, r);
    if (spec->enabled != (r->state != TK_TICK_DISABLED))
        set_enabled(w, r, spec->enabled);
    return 0;
}

int tk_tick_set_dilation(tk_world_t *w, tk_tick_id id, float dilation)
{
    TK_PAR_GUARD(w, "tk_tick_set_dilation");
    if (!w)
        return TK_EINVAL;
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    if (!(isfinite(dilation) && dilation >= 0))
        return tk__world_error(w, TK_EINVAL, "dilation must be a finite number >= 0");
    struct tk__ticks *T = T_of(w);
    if (dil_of(T, r) == dilation)
        return 0;
    materialize(w, r);
    ensure_ext(T, r)->dilation = dilation;
    mark_dirty(T, r);
    return 0;
}

int tk_tick_set_target(tk_world_t *w, tk_tick_id id, void *target)
{
    TK_PAR_GUARD(w, "tk_tick_set_target");
    if (!w)
        return TK_EINVAL;
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    lane *L = &T_of(w)->lanes[r->lane];
    if (!L->ids) {
        if (!target)
            return tk__world_error(w, TK_EINVAL, "class '%s' needs a target (its slot is in it)",
                                   T_of(w)->classes[L->cls].name);
        target_put_slot(L, target, slot_of(T_of(w), r));
    }
    L->targets[r->pos] = target;
    return 0;
}

int tk_tick_add_prerequisite(tk_world_t *w, tk_tick_id id, tk_tick_id prereq)
{
    TK_PAR_GUARD(w, "tk_tick_add_prerequisite");
    if (!w)
        return TK_EINVAL;
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    rec *p = live_rec(w, prereq);
    if (!p)
        return tk__world_error(w, TK_ENOENT, "prerequisite is not a registered tick function");
    if (p == r)
        return tk__world_error(w, TK_EINVAL, "a tick function cannot be its own prerequisite");
    struct tk__ticks *T = T_of(w);
    add_edge(T, r, p);
    mark_dirty(T, r);
    return 0;
}

int tk_tick_remove_prerequisite(tk_world_t *w, tk_tick_id id, tk_tick_id prereq)
{
    TK_PAR_GUARD(w, "tk_tick_remove_prerequisite");
    if (!w)
        return TK_EINVAL;
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    struct tk__ticks *T = T_of(w);
    rec *p = live_rec(w, prereq);
    edge_ent *e = p ? edge_find(T, slot_of(T, r), slot_of(T, p)) : NULL;
    if (!e)
        return tk__world_error(w, TK_ENOENT, "not a prerequisite of this tick function");
    pre_remove_at(T, r, e->pi);
    mark_dirty(T, r);
    mark_dirty(T, p);
    return 0;
}

/* ---- queries -------------------------------------------------------------------- */

int tk_tick_get(const tk_world_t *w, tk_tick_id id, tk_tick_info *out)
{
    if (w && TK_UNLIKELY(w->par))
        return tk__par_refuse((tk_world_t *)w, "tk_tick_get");
    if (!w || !out)
        return TK_EINVAL;
    const struct tk__ticks *T = T_of(w);
    const rec *r = live_rec(w, id);
    if (!r)
        return TK_ENOENT;
    const ext *x = ext_of(T, r);
    memset(out, 0, sizeof *out);
    out->id = id;
    out->cls = rec_cls(T, r);
    out->level = ((tk_level_id)w->levels[rec_level(r)].gen << 16) | rec_level(r);
    out->target = T->lanes[r->lane].targets[r->pos];
    out->spec.group = grp_of(r->grp);
    out->spec.end_group = grp_end(r->grp);
    out->spec.interval = x ? tk_ns_to_s(x->interval_ns) : 0;
    out->spec.enabled = r->state != TK_TICK_DISABLED;
    out->spec.even_when_paused = (r->flags & RF_PAUSED) != 0;
    out->spec.high_priority = (r->flags & RF_HIPRI) != 0;
    out->spec.batch = (r->flags & RF_BATCH) != 0;
    out->spec.on_dedicated_server = true;
    out->spec.any_thread = (r->flags & RF_ANYTHREAD) != 0;
    out->dilation = dil_of(T, r);
    out->state = (tk_tick_state)r->state;
    uint8_t act = r->act;
    if ((r->flags & RF_DYNAMIC) && x && x->task && x->fact)
        act = x->fact;
    out->actual_group = grp_of(act);
    out->actual_end_group = grp_end(act);
    counters c;
    get_counters(w, r, &c);
    out->ticks = c.ticks;
    out->last_frame = c.last_frame;
    out->last_dt = c.last_dt;
    out->accum_dt = c.accum;
    if (x && x->wnode != NONE32) {
        const tk__wheel *wh = x->in_unpaused ? &T->wheel_unpaused : &T->wheel_game;
        uint64_t due = tk__wheel_due(wh, x->wnode);
        uint64_t now = x->in_unpaused ? w->unpaused_ns : w->time_ns;
        out->cooldown = due > now ? tk_ns_to_s(due - now) : 0;
    } else if (x && x->dset) {
        uint64_t due = T->dsets[x->dset].due;
        out->cooldown = due > w->time_ns ? tk_ns_to_s(due - w->time_ns) : 0;
    }
    out->n_prerequisites = x ? x->n_pre : 0;
    for (uint32_t i = 0; x && i < x->n_pre; i++)
        if (x->pre_cycle[i])
            out->cycle = true;
    return 0;
}

size_t tk_tick_prerequisites(const tk_world_t *w, tk_tick_id id, tk_tick_id *out, size_t cap)
{
    const rec *r = live_rec(w, id);
    if (!r)
        return 0;
    const ext *x = ext_of(T_of(w), r);
    if (!x)
        return 0;
    for (size_t i = 0; i < x->n_pre && i < cap; i++)
        out[i] = x->pre[i];
    return x->n_pre;
}

bool tk_tick_next(const tk_world_t *w, uint64_t *cursor, tk_tick_id *out)
{
    const struct tk__ticks *T = T_of(w);
    for (uint64_t i = *cursor; i < T->n_recs; i++) {
        const rec *r = &T->recs[i];
        if (r->state != RS_FREE) {
            *out = make_id((uint32_t)i, rec_gen(r));
            *cursor = i + 1;
            return true;
        }
    }
    *cursor = T->n_recs;
    return false;
}

void tk_tick_get_counts(const tk_world_t *w, tk_tick_counts *out)
{
    const struct tk__ticks *T = T_of(w);
    out->registered = T->n_live;
    out->disabled = T->n_disabled;
    out->cooling_down =
        (T->wheels_ready ? T->wheel_game.count + T->wheel_unpaused.count : 0) + T->n_members;
    out->enabled = T->n_live - T->n_disabled - out->cooling_down;
}

#ifdef TK_DEBUG_INVARIANTS
/* Every live function sits in exactly one live lane entry, where its record
 * says; dead entries have no bits; due-set members are where their sets say,
 * with the right bits and counters. */
static void check_invariants(const struct tk__ticks *T)
{
    size_t live_entries = 0, members = 0;
    for (size_t l = 1; l < T->n_lanes; l++) {
        const lane *L = &T->lanes[l];
        uint32_t dead = 0, any = 0;
        TK_ASSERT(L->sorted_n <= L->n && L->n <= L->cap);
        if (L->compacting)
            TK_ASSERT(L->cw <= L->cr && L->cr <= L->n);
        for (uint32_t p = 0; p < L->n; p++) {
            uint64_t id = lane_id(T, L, p);
            bool in_hole = L->compacting && p >= L->cw && p < L->cr;
            if (in_hole)
                TK_ASSERT(!id);
            else if (!id)
                dead++;
            if (!id) {
                TK_ASSERT(!bit_get(L->act, p) && !bit_get(L->spec, p) && !bit_get(L->ivl, p));
                continue;
            }
            const rec *r = &T->recs[id_slot(id)];
            TK_ASSERT(r->state != RS_FREE && rec_gen(r) == id_gen(id));
            TK_ASSERT(r->lane == l && r->pos == p);
            any += (r->flags & RF_ANYTHREAD) != 0;
            /* A section never allocates: what can tick alone has its ext. */
            if (bit_get(L->spec, p) && r->state != TK_TICK_DISABLED)
                TK_ASSERT(r->ext);
            const ext *x = ext_of(T, r);
            if (x && x->dset) {
                const dset *D = &T->dsets[x->dset];
                TK_ASSERT(D->lane == l && D->slots[x->dmi] == id_slot(id));
                TK_ASSERT(bit_get(L->ivl, p) && !bit_get(L->spec, p));
                TK_ASSERT(rec_cohort(T, r) &&
                          T->cohorts[rec_cohort(T, r)].src == (x->dset | COH_SET));
                TK_ASSERT(x->wnode == NONE32 && r->state == TK_TICK_COOLING_DOWN);
                members++;
            } else {
                TK_ASSERT(!bit_get(L->ivl, p));
            }
            if (!bit_get(L->spec, p))
                TK_ASSERT(rec_cohort(T, r));
            live_entries++;
        }
        TK_ASSERT(dead == L->n_dead);
        TK_ASSERT(any == L->n_any);
        for (uint32_t p = L->n; p < L->cap; p++)
            TK_ASSERT(!bit_get(L->act, p) && !bit_get(L->spec, p) && !bit_get(L->ivl, p));
    }
    TK_ASSERT(live_entries == T->n_live);
    TK_ASSERT(members == T->n_members);
}
/* No function runs twice in a frame. */
static uint64_t *dbg_ran;
static size_t dbg_cap;
static const tk_world_t *dbg_world;
static void check_once(const tk_world_t *w, uint32_t slot)
{
    if (w != dbg_world) {
        dbg_world = w;
        memset(dbg_ran, 0, dbg_cap * sizeof *dbg_ran);
    }
    if (slot >= dbg_cap) {
        size_t n = slot * 2 + 64;
        dbg_ran = realloc(dbg_ran, n * sizeof *dbg_ran);
        memset(dbg_ran + dbg_cap, 0, (n - dbg_cap) * sizeof *dbg_ran);
        dbg_cap = n;
    }
    TK_ASSERT(dbg_ran[slot] != w->frame + 1);
    dbg_ran[slot] = w->frame + 1;
}
#else
#define check_invariants(T) ((void)0)
#define check_once(w, s) ((void)0)
#endif

/* ---- snapshots ------------------------------------------------------------------ */

int tk_tick_save(const tk_world_t *w, tk_tick_id id, tk_tick_restore *out)
{
    if (w && TK_UNLIKELY(w->par))
        return tk__par_refuse((tk_world_t *)w, "tk_tick_save");
    if (!w || !out)
        return TK_EINVAL;
    const struct tk__ticks *T = T_of(w);
    const rec *r = live_rec(w, id);
    if (!r)
        return TK_ENOENT;
    counters c;
    get_counters(w, r, &c);
    out->ticks = c.ticks;
    out->last_frame = c.last_frame;
    out->last_dt = c.last_dt;
    out->accum_dt = c.accum;
    out->cooldown = -1;
    out->since_last_tick = -1;
    const ext *x = ext_of(T, r);
    if (x && x->wnode != NONE32) {
        const tk__wheel *wh = x->in_unpaused ? &T->wheel_unpaused : &T->wheel_game;
        uint64_t due = tk__wheel_due(wh, x->wnode), now = clock_of(w, r);
        out->cooldown = due > now ? tk_ns_to_s(due - now) : 0;
    } else if (x && x->dset) {
        uint64_t due = T->dsets[x->dset].due, now = clock_of(w, r);
        out->cooldown = due > now ? tk_ns_to_s(due - now) : 0;
    }
    int64_t last_iv = last_iv_of(w, r);
    if (x && x->was_interval && last_iv >= 0) {
        uint64_t now = clock_of(w, r);
        out->since_last_tick =
            now > (uint64_t)last_iv ? tk_ns_to_s(now - (uint64_t)last_iv) : 0;
    }
    return 0;
}

int tk_tick_restore_state(tk_world_t *w, tk_tick_id id, const tk_tick_restore *st)
{
    TK_PAR_GUARD(w, "tk_tick_restore_state");
    if (!w || !st)
        return TK_EINVAL;
    struct tk__ticks *T = T_of(w);
    rec *r = live_rec(w, id);
    if (!r)
        return tk__world_error(w, TK_ENOENT, "no such tick function");
    if (T->phase != PH_IDLE)
        return tk__world_error(w, TK_ESTATE, "tick state can only be restored between frames");
    if (!isfinite(st->accum_dt) || st->accum_dt < 0 || !isfinite(st->last_dt) ||
        !isfinite(st->cooldown) || !isfinite(st->since_last_tick))
        return tk__world_error(w, TK_EINVAL, "restored tick state must be finite numbers");
    materialize(w, r);
    ext *x = ensure_ext(T, r);
    x->ticks = st->ticks;
    x->last_frame = st->last_frame;
    x->last_dt = st->last_dt;
    x->accum = st->accum_dt;
    if (x->interval_ns && r->state != TK_TICK_DISABLED) {
        uint64_t now = clock_of(w, r);
        if (st->cooldown >= 0) {
            wheel_remove(T, r);
            x->was_interval = true;
            wheel_insert(w, r, now + tk_s_to_ns(st->cooldown));
        }
        if (st->since_last_tick >= 0) {
            uint64_t ago = tk_s_to_ns(st->since_last_tick);
            x->was_interval = true;
            x->last_iv_ns = ago <= now ? (int64_t)(now - ago) : 0;
        }
    }
    mark_dirty(T, r);
    return 0;
}

/* Called by the world when its clocks are restored: nothing is registered,
 * so the wheels start afresh at the new clocks. */
void tk__ticks_reset_clocks(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    TK_ASSERT(T->n_members == 0);
    if (T->wheels_ready) {
        tk__wheel_deinit(&T->wheel_game);
        tk__wheel_deinit(&T->wheel_unpaused);
        tk__wheel_deinit(&T->wheel_sets);
        T->wheels_ready = false;
    }
}

/* ---- placement (between frames) ------------------------------------------------ */

static inline bool considered(int prereq_end, int my_group)
{
    /* ShouldConsiderPrerequisite with tick.AllowOptimizedPrerequisites. */
    return prereq_end >= my_group || prereq_end == TK_GROUP_DURING_PHYSICS;
}

static void log_cycle(tk_world_t *w, rec *r, rec *p)
{
    char a[96], b[96];
    describe(w, r, a, sizeof a);
    describe(w, p, b, sizeof b);
    tk_log(TK_LOG_WARN,
           "while processing prerequisites for %s, could not use %s because it would form a cycle",
           a, b);
}

static wframe *walk_push(struct tk__ticks *T, uint32_t slot)
{
    TK_GROW(T->walk, T->cap_walk, T->n_walk + 1);
    wframe *f = &T->walk[T->n_walk++];
    memset(f, 0, sizeof *f);
    f->slot = slot;
    return f;
}

/* Reach `r` in a placement walk: marks it visited; a function that needs no
 * prerequisite loop (visited already, or disabled) is finished here and
 * false returned; otherwise its frame is pushed and true returned. */
static bool place_enter(tk_world_t *w, rec *r, uint32_t epoch)
{
    struct tk__ticks *T = T_of(w);
    ext *x = ext_of(T, r);
    if (x) {
        if (x->mark == epoch)
            return false;
        x->mark = epoch;
    }
    uint8_t old_flags = r->flags;
    r->flags &= (uint8_t)~(RF_DYNAMIC | RF_LOWBAND);
    if (r->state == TK_TICK_DISABLED) {
        if (old_flags & RF_DYNAMIC)
            T->dyn_dirty = true;
        if (x)
            x->mark_done = epoch;
        return false;
    }
    walk_push(T, slot_of(T, r))->old_flags = old_flags;
    return true;
}

/* Prerequisite i of the function of frame `f`, placed already (or being
 * placed, which is a cycle): gather its groups.  An interval prerequisite
 * is gathered apart: it counts only in the frames it ticks. */
static void place_edge(tk_world_t *w, wframe *f, rec *r, rec *p, uint32_t i, uint32_t epoch)
{
    struct tk__ticks *T = T_of(w);
    ext *x = ext_of(T, r), *px = ext_of(T, p);
    if (px && px->mark == epoch && px->mark_done != epoch) {
        if (!x->pre_cycle[i])
            log_cycle(w, r, p);
        x->pre_cycle[i] = 1;
        return;
    }
    x->pre_cycle[i] = 0;
    if (p->state == TK_TICK_DISABLED)
        return;
    if (p->flags & RF_DYNAMIC) {
        f->dyn = true;
        return;
    }
    int ps = grp_of(p->act), pe = grp_end(p->act);
    if (!considered(pe, grp_of(r->grp)))
        return;
    if (iv_of(T, p)) {
        f->iv = true;
        f->iv_s = (uint8_t)TK_MAX(f->iv_s, ps);
        f->iv_e = (uint8_t)TK_MAX(f->iv_e, pe);
        return;
    }
    f->max_s = (uint8_t)TK_MAX(f->max_s, ps);
    f->max_e = (uint8_t)TK_MAX(f->max_e, pe);
}

/* QueueTickFunction's actual groups from the latest start and end groups of
 * the considered prerequisites (UE-SEMANTICS 3.6). */
static uint8_t actual_groups(int group, int endg, int max_s, int max_e)
{
    int start = TK_MAX(max_s, group);
    if (start != group)
        while (!demotable(start))
            start++;
    int end = start, cand = TK_MAX(TK_MAX(max_e, endg), start);
    for (int g = start + 1; g <= cand; g++)
        if (demotable(g))
            end = g;
    return grp_pack(start, end);
}

/* Would a high-priority r yield to a normal prerequisite ticking in group
 * `start`?  With `with_iv`, interval prerequisites count too. */
static bool place_low(tk_world_t *w, const rec *r, int start, bool with_iv)
{
    struct tk__ticks *T = T_of(w);
    const ext *x = ext_of(T, r);
    int group = grp_of(r->grp);
    for (uint32_t i = 0; x && i < x->n_pre; i++) {
        rec *p = live_rec(w, x->pre[i]);
        if (!p || x->pre_cycle[i] || p->state == TK_TICK_DISABLED)
            continue;
        if (!considered(grp_end(p->act), group) || grp_of(p->act) != start)
            continue;
        if (!with_iv && iv_of(T, p))
            continue;
        if (!((p->flags & RF_HIPRI) && !(p->flags & RF_LOWBAND)))
            return true;
    }
    return false;
}

/*
 * Every prerequisite of the function of frame `f` is placed: its own actual
 * groups, band and depth.  It is dynamic (queued every frame, see the file
 * header) only where a prerequisite can really move it: a dynamic one, or an
 * interval one whose ticking would change its groups or band.  An interval
 * prerequisite that cannot move it still orders it (depth), as any other.
 */
static void place_finish(tk_world_t *w, const wframe *f, rec *r, uint32_t epoch)
{
    struct tk__ticks *T = T_of(w);
    ext *x = ext_of(T, r);
    uint8_t old_flags = f->old_flags;
    int group = grp_of(r->grp), endg = grp_end(r->grp);
    bool hipri = (r->flags & RF_HIPRI) != 0;
    uint8_t act = actual_groups(group, endg, f->max_s, f->max_e);
    bool dyn = f->dyn;
    bool low = false;
    if (!dyn && f->iv) {
        uint8_t act_iv = actual_groups(group, endg, TK_MAX(f->max_s, f->iv_s),
                                       TK_MAX(f->max_e, f->iv_e));
        dyn = act_iv != act;
    }
    if (!dyn && hipri) {
        low = place_low(w, r, grp_of(act), true);
        dyn = f->iv && low != place_low(w, r, grp_of(act), false);
    }
    if (dyn) {
        r->flags |= RF_DYNAMIC;
        if (!(old_flags & RF_DYNAMIC)) {
            vpush(&T->dyn, slot_of(T, r));
            T->dyn_dirty = true;
        }
        r->act = grp_pack(group, group);
        if (x) {
            x->depth = 0;
            x->mark_done = epoch;
        }
        return;
    }
    if (old_flags & RF_DYNAMIC)
        T->dyn_dirty = true;
    int start = grp_of(act);
    if (low)
        r->flags |= RF_LOWBAND;
    int band = (hipri && !low) ? 0 : 1;
    /* Depth among considered prerequisites in the same group and band. */
    uint32_t depth = 0;
    for (uint32_t i = 0; x && i < x->n_pre; i++) {
        rec *p = live_rec(w, x->pre[i]);
        if (!p || x->pre_cycle[i] || p->state == TK_TICK_DISABLED)
            continue;
        if (!considered(grp_end(p->act), group) || grp_of(p->act) != start)
            continue;
        int pband = ((p->flags & RF_HIPRI) && !(p->flags & RF_LOWBAND)) ? 0 : 1;
        if (pband != band)
            continue;
        depth = TK_MAX(depth, ((p->cx & REC_EXT) ? T->exts[rec_ext(p)].depth : 0) + 1);
    }
    r->act = act;
    if (x) {
        x->depth = depth;
        x->mark_done = epoch;
    }
}

/* Static QueueTickFunction: actual groups, band and depth from prerequisites
 * that tick every frame; marks functions that depend on interval ones dynamic.
 * `epoch` marks visiting, `epoch` in mark_done marks done.  Depth-first,
 * prerequisites first, in the order they were added (as Unreal's recursion),
 * on the explicit stack T->walk: O(size of the component) time, no
 * recursion. */
static void place(tk_world_t *w, rec *r0, uint32_t epoch)
{
    struct tk__ticks *T = T_of(w);
    size_t base = T->n_walk;
    if (!place_enter(w, r0, epoch))
        return;
    while (T->n_walk > base) {
        wframe *f = &T->walk[T->n_walk - 1];
        rec *r = &T->recs[f->slot];
        ext *x = ext_of(T, r);
        bool descended = false;
        while (x && f->i < x->n_pre) {
            uint32_t i = f->i;
            rec *p = live_rec(w, x->pre[i]);
            if (p) {
                ext *px = ext_of(T, p);
                if (px && px->mark != epoch && has_graph(T, p) && place_enter(w, p, epoch)) {
                    /* Placed first; edge i is looked at again on return. */
                    descended = true;
                    break;
                }
                place_edge(w, f, r, p, i, epoch);
            }
            f->i++;
        }
        if (descended)
            continue;
        place_finish(w, f, r, epoch);
        T->n_walk--;
    }
}

static inline int band_of(const rec *r)
{
    return ((r->flags & RF_HIPRI) && !(r->flags & RF_LOWBAND)) ? 0 : 1;
}

/* Every-frame derived eligibility: ticks every frame from its lane with the
 * world's dt and no individual treatment (batch = false only keeps its entry
 * out of batches). */
static bool eligible_every(const struct tk__ticks *T, const rec *r)
{
    if (r->state != TK_TICK_ENABLED || (r->flags & (RF_DYNAMIC | RF_PAUSED)))
        return false;
    const ext *x = ext_of(T, r);
    return !x || (x->interval_ns == 0 && x->dilation == 1.0f);
}

/* A function cooling down on its own that could share a due set joins
 * one (made in this upkeep, by lane, interval, due time and last tick). */
static void migrate(tk_world_t *w, rec *r)
{
    struct tk__ticks *T = T_of(w);
    ext *x = ext_of(T, r);
    TK_ASSERT(x && x->wnode != NONE32 && !x->in_unpaused && !rec_cohort(T, r));
    uint64_t due = tk__wheel_due(&T->wheel_game, x->wnode);
    tk__wheel_del(&T->wheel_game, x->wnode);
    x->wnode = NONE32;
    uint32_t *gid = group_find(T, r->lane, x->interval_ns, due, (uint64_t)x->last_iv_ns);
    if (!*gid) {
        uint32_t id = dset_new(T, r->lane, x->interval_ns, due, x->last_iv_ns);
        T->dsets[id].wnode = tk__wheel_add(&T->wheel_sets, due, id);
        *gid = id;
    }
    uint32_t id = *gid;
    dset_add(T, id, r);
    join_derived(w, r, id | COH_SET);
}

/* Put a placed function in the right lane with the right bits (between
 * frames). */
static void settle(tk_world_t *w, rec *r)
{
    struct tk__ticks *T = T_of(w);
    const ext *x = ext_of(T, r);
    int group = (r->flags & RF_DYNAMIC) ? grp_of(r->grp) : grp_of(r->act);
    uint32_t depth = (!(r->flags & RF_DYNAMIC) && x) ? x->depth : 0;
    uint32_t lid = lane_get(T, group, band_of(r), depth, rec_cls(T, r));
    if (lid != r->lane) {
        /* A due set is one lane's: a member leaves it (and may join one in
         * its new lane below). */
        materialize(w, r);
        void *target = T->lanes[r->lane].targets[r->pos];
        lane_kill(T, r);
        lane_mark_dirty(T, r->lane);
        lane_append(T, lid, r, target);
    }
    lane *L = &T->lanes[r->lane];
    uint32_t pos = r->pos;
    bit_put(L->solo, pos, !(r->flags & RF_BATCH));
    if (eligible_every(T, r)) {
        bit_set(L->act, pos);
        bit_clr(L->spec, pos);
        bit_clr(L->ivl, pos);
        if (!rec_cohort(T, r))
            join_derived(w, r, r->lane);
        return;
    }
    /* Every-frame functions with individual treatment are active too. */
    bool every = r->state == TK_TICK_ENABLED && !(r->flags & RF_DYNAMIC) && iv_of(T, r) == 0;
    bit_put(L->act, pos, every);
    x = ext_of(T, r);
    bool member_ok = eligible_member(T, r);
    if (rec_cohort(T, r) && !(member_ok && x->dset))
        materialize(w, r);
    x = ext_of(T, r);
    L = &T->lanes[r->lane];
    if (member_ok && x->dset) {
        bit_clr(L->spec, pos);
        bit_set(L->ivl, pos);
        return;
    }
    bit_set(L->spec, pos);
    bit_clr(L->ivl, pos);
    if (member_ok && x->wnode != NONE32 && !x->in_unpaused) {
        migrate(w, r);
        return;
    }
    if (r->state != TK_TICK_DISABLED)
        x = ensure_ext(T, r);
    /* Enabled and not cooling yet: ticks first (StartFrame). */
    if (r->state == TK_TICK_ENABLED && iv_of(T, r) && x->wnode == NONE32)
        vpush(&T->fresh, slot_of(T, r));
}

static int seq_cmp(const void *a, const void *b, void *ctx)
{
    const rec *recs = ctx;
    uint64_t x = rec_seq(&recs[*(const uint32_t *)a]), y = rec_seq(&recs[*(const uint32_t *)b]);
    return x < y ? -1 : x > y;
}

/* qsort_r is a GNU extension; _GNU_SOURCE is set by the build. */
static void sort_by_seq(struct tk__ticks *T, uint32_t *v, size_t n)
{
    if (n > 1) /* v may be NULL when empty */
        qsort_r(v, n, sizeof *v, seq_cmp, T->recs);
}

static void upkeep(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    memset(T->coh_cache, 0, sizeof T->coh_cache);
    group_reset(T);
    if (T->dirty.n) {
        /* Expand to whole prerequisite components (registration-order DFS
         * over a component equals Unreal's walk restricted to it). */
        uint32_t epoch = ++T->epoch;
        if (epoch == 0)
            epoch = ++T->epoch;
        vec32 *all = &T->tmp;
        all->n = 0;
        for (size_t i = 0; i < T->dirty.n; i++) {
            rec *r = &T->recs[T->dirty.v[i]];
            if (r->state == RS_FREE || !(r->flags & RF_DIRTY))
                continue;
            r->flags &= (uint8_t)~RF_DIRTY;
            ext *x = ext_of(T, r);
            if (!has_graph(T, r)) {
                vpush(all, T->dirty.v[i]);
                if (x)
                    x->mark_done = 0;
                continue;
            }
            if (x->mark_done == epoch) /* already collected */
                continue;
            x->mark_done = epoch;
            vec32 *st = &T->stack;
            st->n = 0;
            vpush(st, T->dirty.v[i]);
            while (st->n) {
                uint32_t s = st->v[--st->n];
                rec *q = &T->recs[s];
                vpush(all, s);
                ext *qx = ext_of(T, q);
                for (uint32_t k = 0; k < qx->n_pre; k++) {
                    rec *p = live_rec(w, qx->pre[k]);
                    ext *px = p ? ext_of(T, p) : NULL;
                    if (px && px->mark_done != epoch) {
                        px->mark_done = epoch;
                        vpush(st, id_slot(qx->pre[k]));
                    }
                }
                for (uint32_t k = 0; k < qx->n_dep; k++) {
                    ext *dx = ext_of(T, &T->recs[qx->dep[k]]);
                    if (dx && dx->mark_done != epoch) {
                        dx->mark_done = epoch;
                        vpush(st, qx->dep[k]);
                    }
                }
            }
        }
        T->dirty.n = 0;
        sort_by_seq(T, all->v, all->n);
        uint32_t pe = ++T->epoch;
        if (pe == 0)
            pe = ++T->epoch;
        for (size_t i = 0; i < all->n; i++) {
            rec *r = &T->recs[all->v[i]];
            ext *x = ext_of(T, r);
            if (x)
                x->mark_done = 0;
        }
        for (size_t i = 0; i < all->n; i++)
            place(w, &T->recs[all->v[i]], pe);
        for (size_t i = 0; i < all->n; i++)
            settle(w, &T->recs[all->v[i]]);
        all->n = 0;
    }
    /* Lanes: registration order is restored now (a lane runs in that
     * order); dead entries go within COMPACT_BUDGET per frame (about 0.2 ms),
     * so removing a level of millions costs no frame more than that. */
    uint32_t budget = COMPACT_BUDGET;
    size_t keep = 0;
    for (size_t i = 0; i < T->dirty_lanes.n; i++) {
        uint32_t lid = T->dirty_lanes.v[i];
        lane_merge_tail(T, lid);
        if (budget)
            budget -= lane_compact_step(T, lid, budget);
        if (lane_settled(&T->lanes[lid]))
            T->lanes[lid].dirty = false;
        else
            T->dirty_lanes.v[keep++] = lid;
    }
    T->dirty_lanes.n = keep;
    check_invariants(T);
    if (T->dyn_dirty) {
        /* Functions that became dynamic were appended; drop the others. */
        vec32 *d = &T->dyn;
        size_t k = 0;
        for (size_t i = 0; i < d->n; i++) {
            rec *r = &T->recs[d->v[i]];
            if (r->state != RS_FREE && (r->flags & RF_DYNAMIC))
                d->v[k++] = d->v[i];
        }
        d->n = k;
        sort_by_seq(T, d->v, d->n);
        k = 0;
        for (size_t i = 0; i < d->n; i++)
            if (k == 0 || d->v[k - 1] != d->v[i])
                d->v[k++] = d->v[i];
        d->n = k;
        T->dyn_dirty = false;
    }
    if (T->paused_dirty) {
        vec32 *p = &T->paused_fns;
        size_t k = 0;
        for (size_t i = 0; i < p->n; i++) {
            rec *r = &T->recs[p->v[i]];
            if (r->state != RS_FREE && (r->flags & RF_PAUSED))
                p->v[k++] = p->v[i];
        }
        p->n = k;
        sort_by_seq(T, p->v, p->n);
        k = 0;
        for (size_t i = 0; i < p->n; i++)
            if (k == 0 || p->v[k - 1] != p->v[i])
                p->v[k++] = p->v[i];
        p->n = k;
        T->paused_dirty = false;
    }
    vtrim(&T->dirty);
    vtrim(&T->stack);
}


/* ---- execution -------------------------------------------------------------------- */

static inline uint64_t now_stats(const tk_world_t *w) { return tk__world_stats_now(w); }

/* A buffered event of a section's runner (handed on by par_merge). */
static pevent *ev_push(runner *R, int what)
{
    TK_GROW(R->ev, R->cap_ev, R->n_ev + 1);
    pevent *e = &R->ev[R->n_ev++];
    memset(e, 0, sizeof *e);
    e->what = (uint8_t)what;
    e->ev.thread = R->thread;
    return e;
}

/* A function about to run, for the trace hook. */
static inline void trace_emit(tk_world_t *w, runner *R, tk_tick_id id, void *target, tk_group g)
{
    struct tk__ticks *T = T_of(w);
    if (!R->buffered) {
        T->trace(T->trace_ud, id, target, g);
        return;
    }
    pevent *e = ev_push(R, EV_TRACE);
    e->ev.id = id;
    e->ev.target = target;
    e->ev.group = g;
}

/* ---- profiling (world.h: tk_profiler) ----------------------------------------------
 *
 * While a profiler is installed, functions are accounted in runs: a run is
 * consecutive functions of one class, level and group (a batch, the
 * functions of a lane ticked one by one, or consecutive extras).  The clock
 * is read when a run begins; its start is the previous run's end, so a run's
 * time includes the scheduler's bookkeeping up to the next run.  A group's
 * end closes its open run.  Functions timed on their own (sampled 1 in N,
 * every one of a class whose runs proved slow, or all with `each`) cost two
 * more reads each.  Lanes holding several levels (rare: a lane is one class
 * in one group) are split by level; others are not looked into.  In a split
 * section each thread keeps its own open run (closed with its chunk) and
 * sampling countdown; its events reach the profiler after the section, in
 * chunk order, with the thread that ran them. */

static inline tk_level_id level_id_of(const tk_world_t *w, uint16_t slot)
{
    return (tk_level_id)slot | ((tk_level_id)w->levels[slot].gen << 16);
}

void tk__ticks_profiler_changed(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    T->main.pr_n = 0;
    T->main.pr_countdown = w->prof.sample_every;
    for (size_t i = 0; i < T->n_runners; i++) {
        T->runners[i].pr_n = 0;
        T->runners[i].pr_countdown = w->prof.sample_every;
    }
    tk_free(T->pr_each);
    T->pr_each = NULL;
    T->pr_n_each = 0;
    if (w->prof_on && w->prof.each_above_ns && T->n_classes) {
        T->pr_each = tk_calloc(T->n_classes, 1);
        T->pr_n_each = T->n_classes;
    }
}

/* Hand an event to the profiler (on the frame thread).  A run that averaged
 * more than each_above_ns per function makes its class timed one by one. */
static void prof_deliver(tk_world_t *w, const tk_prof_event *ev)
{
    struct tk__ticks *T = T_of(w);
    if (ev->kind == TK_PROF_RUN && w->prof.each_above_ns &&
        ev->ns > w->prof.each_above_ns * ev->n) {
        if (ev->cls >= T->pr_n_each) {
            /* a class registered after the profiler was installed */
            T->pr_each = tk_realloc(T->pr_each, T->n_classes);
            memset(T->pr_each + T->pr_n_each, 0, T->n_classes - T->pr_n_each);
            T->pr_n_each = T->n_classes;
        }
        T->pr_each[ev->cls] = 1;
    }
    w->prof.fn(w->prof.ud, ev);
}

static inline void prof_emit(tk_world_t *w, runner *R, const tk_prof_event *ev)
{
    if (R->buffered)
        ev_push(R, EV_PROF)->ev = *ev;
    else
        prof_deliver(w, ev);
}

/* Close R's open run at `now` and report it. */
static void prof_flush(tk_world_t *w, runner *R, uint64_t now)
{
    struct tk__ticks *T = T_of(w);
    if (!R->pr_n)
        return;
    tk_prof_event ev = {.kind = TK_PROF_RUN, .group = R->pr_group, .cls = R->pr_cls,
                        .level = level_id_of(w, R->pr_level), .n = R->pr_n,
                        .id = make_id(R->pr_first, rec_gen(&T->recs[R->pr_first])),
                        .target = R->pr_target, .start_ns = R->pr_t0, .ns = now - R->pr_t0,
                        .pause_frame = w->frame_paused, .thread = R->thread};
    R->pr_n = 0;
    prof_emit(w, R, &ev);
}

/* `n` functions of (cls, level slot, group) start now, the first at `slot`. */
static inline void prof_feed(tk_world_t *w, runner *R, uint16_t cls, uint16_t level, uint8_t g,
                             uint32_t n, uint32_t slot, void *target)
{
    if (R->pr_n && R->pr_cls == cls && R->pr_level == level && R->pr_group == g) {
        R->pr_n += n;
        return;
    }
    uint64_t now = now_stats(w);
    prof_flush(w, R, now);
    R->pr_t0 = now;
    R->pr_n = n;
    R->pr_cls = cls;
    R->pr_level = level;
    R->pr_group = g;
    R->pr_first = slot;
    R->pr_target = target;
}

/* Is the next function of `cls` to be timed on its own? */
static inline bool prof_single(tk_world_t *w, runner *R, uint16_t cls)
{
    struct tk__ticks *T = T_of(w);
    if (w->prof.each || (cls < T->pr_n_each && T->pr_each[cls]))
        return true;
    if (w->prof.sample_every && --R->pr_countdown == 0) {
        R->pr_countdown = w->prof.sample_every;
        return true;
    }
    return false;
}

static void prof_tick(tk_world_t *w, runner *R, tk_tick_id id, void *target, uint16_t cls,
                      uint16_t level, tk_group g, uint64_t t0, uint64_t ns)
{
    tk_prof_event ev = {.kind = TK_PROF_TICK, .group = g, .cls = cls,
                        .level = level_id_of(w, level), .n = 1, .id = id, .target = target,
                        .start_ns = t0, .ns = ns, .pause_frame = w->frame_paused,
                        .thread = R->thread};
    prof_emit(w, R, &ev);
}

/* ---- slow-tick detection (tk_world_set_slow_tick) ------------------------------------
 *
 * Functions ticked one by one are not timed one by one: the clock is read
 * once per run of up to `k` of them (one lane, or consecutive functions of
 * one class outside lanes), `k` sized from what the previous runs cost so
 * that a run is expected to take an eighth of the threshold at most: cheap
 * functions are timed 256 at a time (a clock read per 256 ticks), costly
 * ones one by one (k = 1, where two reads cost nothing in comparison).  A
 * run over the threshold names its function if it held one; otherwise it is
 * reported like a batch (its first function, n > 1), and the lane (or the
 * functions outside lanes) is timed one by one for its next SLOW_HOLD runs,
 * so that a function that is slow again is named alone.  Batches are timed
 * per call, as before.  In a split section each chunk starts from its lane's
 * sizing and focus; after the section the lane keeps the last chunk's sizing
 * and the newest focus (par_merge), and slow ticks are reported then. */

typedef struct slowrun {
    uint64_t t0;       /* ns, stats clock: start of the open run              */
    bool t0_ok;        /* t0 is set (the end of the last timed thing)         */
    uint32_t n;        /* functions in the open run; 0 = none open            */
    uint32_t k;        /* functions per run                                   */
    uint32_t cur_k;    /* the open run's limit (1 inside the focus)            */
    uint32_t hold;     /* runs left with a focus                              */
    uint32_t lo, hi;   /* focus: positions [lo, hi) are timed one by one      */
    uint32_t pos0, pos; /* positions of the open run's first and last ones    */
    tk_tick_id first;  /* the open run's first function                       */
    void *target;      /* and its target                                      */
    uint16_t cls;      /* its class                                           */
} slowrun;

static void slow_report(tk_world_t *w, runner *R, tk_tick_id id, void *target, uint16_t cls,
                        uint64_t ns, size_t n)
{
    struct tk__ticks *T = T_of(w);
    if (!(T->slow_fn && T->slow_ns && ns > T->slow_ns))
        return;
    if (!R->buffered) {
        T->slow_fn(T->slow_ud, id, target, cls, ns, n);
        return;
    }
    pevent *e = ev_push(R, EV_SLOW);
    e->ev.id = id;
    e->ev.target = target;
    e->ev.cls = cls;
    e->ev.ns = ns;
    e->ev.n = (uint32_t)n;
}

/* Start timing a lane's run (or the functions outside lanes: there
 * positions are 0 and a focus covers all of them). */
static inline void sr_init(slowrun *sr, uint16_t k, uint16_t hold, uint32_t lo, uint32_t hi)
{
    memset(sr, 0, sizeof *sr);
    sr->k = k ? k : 1;
    sr->hold = hold;
    sr->lo = lo;
    sr->hi = hi;
}

/* Close the open run: report it if slow, size the next ones. */
static void sr_close(tk_world_t *w, runner *R, slowrun *sr)
{
    if (!sr->n)
        return;
    struct tk__ticks *T = T_of(w);
    uint64_t t1 = now_stats(w), ns = t1 - sr->t0;
    if (T->slow_ns && ns > T->slow_ns) {
        slow_report(w, R, sr->first, sr->target, sr->cls, ns, sr->n);
        if (sr->n > 1) {
            /* Time these one by one for a while, to name the slow one. */
            sr->lo = sr->pos0;
            sr->hi = sr->pos + 1;
            sr->hold = SLOW_HOLD;
        }
    }
    if (sr->cur_k > 1 || sr->k == 1) {
        /* Size runs from what this one cost (a focused one says nothing
         * about the rest). */
        uint64_t avg = TK_MAX(ns / sr->n, 1), q = T->slow_ns / (8 * avg);
        uint32_t k = 1;
        while (k < SLOW_RUN_MAX && (uint64_t)k * 2 <= q)
            k *= 2;
        sr->k = k;
    }
    sr->t0 = t1;
    sr->t0_ok = true;
    sr->n = 0;
}

/* A function ticked one by one, at lane position `pos`, is about to run. */
static inline void sr_before(tk_world_t *w, runner *R, slowrun *sr, tk_tick_id id, void *target,
                             uint16_t cls, uint32_t pos)
{
    bool focus = sr->hold && pos >= sr->lo && pos < sr->hi;
    if (sr->n && (sr->cls != cls || focus))
        sr_close(w, R, sr);
    if (!sr->n) {
        if (!sr->t0_ok) {
            sr->t0 = now_stats(w);
            sr->t0_ok = true;
        }
        sr->first = id;
        sr->target = target;
        sr->cls = cls;
        sr->pos0 = pos;
        sr->cur_k = focus ? 1 : sr->k;
    }
    sr->pos = pos;
}

static inline void sr_after(tk_world_t *w, runner *R, slowrun *sr)
{
    if (++sr->n >= sr->cur_k)
        sr_close(w, R, sr);
}

/* The lane's (or the extras') timing ends; its sizing and focus are kept. */
static void sr_end(tk_world_t *w, runner *R, slowrun *sr, uint16_t *k, uint16_t *hold,
                   uint32_t *lo, uint32_t *hi)
{
    sr_close(w, R, sr);
    *k = (uint16_t)sr->k;
    *hold = (uint16_t)(sr->hold ? sr->hold - 1 : 0);
    *lo = sr->lo;
    *hi = sr->hi;
}

/* Execute one function individually (interval delta, dilation, counters).
 * `sr` (slow-tick detection on) times it within a run, as the function at
 * `pos` (its lane position in a lane run, 0 elsewhere).  In a section
 * (`par`) it writes nothing but its own ext record and R. */
static void exec_one(tk_world_t *w, runner *R, rec *r, tk_group label, bool pause_frame,
                     slowrun *sr, uint32_t pos, bool par)
{
    struct tk__ticks *T = T_of(w);
    /* A lane entry with individual treatment that can tick has an ext
     * record since it was settled: a section never allocates one. */
    ext *x = par ? ext_of(T, r) : ensure_ext(T, r);
    TK_ASSERT(x);
    /* Never twice in a frame (Unreal's visited marks), whatever a tick did
     * to it meanwhile (disabled and re-enabled it, changed its interval...). */
    if (x->ran == fmark(w))
        return;
    x->ran = fmark(w);
    float dt = (float)tk_ns_to_s(w->dt_ns);
    if (x->was_interval) {
        uint64_t now = clock_of(w, r);
        if (x->last_iv_ns >= 0)
            dt = (float)tk_ns_to_s(now - (uint64_t)x->last_iv_ns);
        x->last_iv_ns = (int64_t)now;
    } else {
        x->last_iv_ns = -1;
    }
    dt *= x->dilation;
    x->ticks++;
    x->last_frame = w->frame;
    x->last_dt = dt;
    x->accum += dt;
    uint32_t s = slot_of(T, r);
    if (!par)
        check_once(w, s);
    tk_tick_id id = make_id(s, rec_gen(r));
    const lane *L = &T->lanes[r->lane];
    void *target = L->targets[r->pos];
    uint16_t cls = L->cls, lv = rec_level(r);
    const tclass *c = &T->classes[cls];
    (*R->ran)++;
    if (T->trace)
        trace_emit(w, R, id, target, label);
    tk_tick_ctx ctx = {w, id, w->frame, label, pause_frame, R->thread};
    bool single = false;
    if (w->prof_on) {
        prof_feed(w, R, cls, lv, (uint8_t)label, 1, s, target);
        single = prof_single(w, R, cls);
    }
    if (sr)
        sr_before(w, R, sr, id, target, cls, pos);
    if (single) {
        uint64_t t0 = now_stats(w);
        c->fn(target, dt, &ctx);
        uint64_t ns = now_stats(w) - t0;
        prof_tick(w, R, id, target, cls, lv, label, t0, ns);
    } else {
        c->fn(target, dt, &ctx);
    }
    if (sr)
        sr_after(w, R, sr);
}

/* A lane starts its run this frame: its derived counters move.  Returns its
 * entries (0: nothing to run, and lane_close is not needed). */
static inline uint32_t lane_open(tk_world_t *w, uint32_t lid)
{
    lane *L = &T_of(w)->lanes[lid];
    L->ran = fmark(w);
    if (L->n == 0)
        return 0;
    float dt = (float)tk_ns_to_s(w->dt_ns);
    L->prev_last_frame = L->last_frame;
    L->prev_last_dt = L->last_dt;
    L->prev_accum = L->accum;
    L->runs++;
    L->accum += dt;
    L->last_frame = w->frame;
    L->last_dt = dt;
    L->running = true;
    L->cur = 0;
    return L->n;
}

static inline void lane_close(tk_world_t *w, uint32_t lid)
{
    lane *L = &T_of(w)->lanes[lid];
    L->running = false;
    L->cur = L->n;
}

/* run_range_impl's `idk`: where ctx.self comes from in one-by-one calls. */
enum { ID_ANY, ID_ARRAY, ID_NONE };

/*
 * Run positions [lo, hi) of an open lane: active entries in order.  Runs of
 * entries without individual treatment with the same dt (every-frame ones:
 * the world's; due-set members: their set's) go to the class's batch
 * function in one call, or, for a class without one and for batch = false
 * entries, to its tick function one by one, reading only the entry's target
 * and id.  Inlined for each combination of profiling or tracing (`gen`),
 * slow-tick detection (`slow`) and a split section's chunk (`par`: nothing
 * of the lane is written, slow-tick state goes to `so`), and the plain path
 * once for lanes with ids and once for lanes without (`idk`), so that the
 * plain path carries none of them.  `pf` (with `gen`): profiling without a
 * trace, in a lane of one level, of a class not timed tick by tick - runs
 * are fed to the profiler whole and only sampled ticks are timed, so a tick
 * ticked one by one pays a comparison, not the profiler's bookkeeping.
 */
static inline __attribute__((always_inline)) void
run_range_impl(tk_world_t *w, runner *R, uint32_t lid, uint32_t lo, uint32_t hi, slowout *so,
               const bool gen, const bool pf, const bool slow, const bool par, const int idk)
{
    struct tk__ticks *T = T_of(w);
    lane *L = &T->lanes[lid];
    const uint32_t n = hi;
    uint64_t F = fmark(w);
    float dt = (float)tk_ns_to_s(w->dt_ns);
    const tclass *c = &T->classes[L->cls];
    tk_tick_fn fn = c->fn;
    tk_tick_batch_fn fnb = c->fn_batch;
    tk_class_id cls = L->cls;
    const bool prof = gen && (pf || w->prof_on);
    const bool trace = gen && !pf && T->trace;
    bool batch = fnb && !trace && !(prof && !pf && w->prof.each);
    tk_group g = (tk_group)L->group;
    uint16_t lslot = L->level;
    const bool mixed = prof && !pf && L->lvl_mixed == 2;
    bool ivl_now = L->ivl_mark == F, ivl_mixed = ivl_now && L->ivl_mixed;
    float ivl_dt = L->ivl_dt;
    tk_tick_ctx ctx = {w, TK_TICK_NONE, w->frame, g, false, R->thread};
    slowrun sr;
    if (slow)
        sr_init(&sr, L->sl_k, L->sl_hold, L->sl_lo, L->sl_hi);
    uint64_t ran = 0;
    uint32_t i = lo;
    while (i < n) {
        /* Next active entry. */
        uint64_t word = L->act[i >> 6] >> (i & 63);
        if (!word) {
            i = (i | 63) + 1;
            continue;
        }
        i += (uint32_t)__builtin_ctzll(word);
        if (i >= n)
            break;
        if (bit_get(L->spec, i)) {
            if (!par)
                L->cur = i;
            exec_one(w, R, lane_rec(T, L, i), g, false, slow ? &sr : NULL, i, par);
            L = &T->lanes[lid]; /* callbacks may grow the lane arrays */
            i++;
            continue;
        }
        /* A run [i, j) of active entries without individual treatment that
         * agree on ivl (and, when batching, on solo). */
        bool iv = bit_get(L->ivl, i);
        bool solo = batch && bit_get(L->solo, i);
        uint64_t ivx = iv ? 0 : ~0ull, sox = solo ? 0 : ~0ull;
        uint32_t j = i + 1;
        while (j < n) {
            uint32_t wi = j >> 6, b = j & 63;
            uint64_t m = L->act[wi] & ~L->spec[wi] & (L->ivl[wi] ^ ivx);
            if (batch)
                m &= L->solo[wi] ^ sox;
            m >>= b;
            if (m == (~0ull >> b)) {
                j = (wi + 1) << 6;
                continue;
            }
            j += (uint32_t)__builtin_ctzll(~m);
            break;
        }
        if (j > n)
            j = n;
        float rdt = dt;
        if (iv) {
            TK_ASSERT(ivl_now);
            rdt = ivl_dt;
            if (ivl_mixed) {
                /* Due sets of this lane fired with different dts: cut the
                 * run where the dt changes. */
                rdt = member_dt(T, lane_id(T, L, i));
                uint32_t k = i + 1;
                while (k < j &&
                       memcmp(&(float){member_dt(T, lane_id(T, L, k))}, &rdt, sizeof rdt) == 0)
                    k++;
                j = k;
            }
        }
        if (batch && !solo) {
            if (mixed) {
                /* Several levels in the lane: one run per level. */
                lslot = rec_level(lane_rec(T, L, i));
                uint32_t k = i + 1;
                while (k < j && rec_level(lane_rec(T, L, k)) == lslot)
                    k++;
                j = k;
            }
            if (prof)
                prof_feed(w, R, cls, lslot, (uint8_t)g, j - i, lane_slot1(L, i) - 1,
                          L->targets[i]);
            if (!par)
                L->cur = j - 1;
            ran += j - i;
            ctx.self = TK_TICK_NONE;
            if (slow) {
                sr_close(w, R, &sr);
                tk_tick_id first = lane_id(T, L, i);
                void *target = L->targets[i];
                uint64_t t0 = sr.t0_ok ? sr.t0 : now_stats(w);
                fnb(L->targets + i, j - i, rdt, &ctx);
                uint64_t t1 = now_stats(w);
                slow_report(w, R, first, target, cls, t1 - t0, j - i);
                sr.t0 = t1;
                sr.t0_ok = true;
            } else {
                fnb(L->targets + i, j - i, rdt, &ctx);
            }
            L = &T->lanes[lid];
            i = j;
            continue;
        }
        /* One by one: only the target and the id are read per entry (the
         * target alone in a lane without ids: ctx.self is TK_TICK_NONE
         * there, the id is made only for tracing, profiling and slow-tick
         * reports).  A tick that changes tick functions (T->mut) may have
         * cancelled or materialized a later entry, or moved the lane's
         * arrays: from then on each entry's bits are read again (never in a
         * section: nothing may change there). */
        uint32_t mut = T->mut;
        uint64_t *ids = L->ids;
        void **tg = L->targets;
        /* Slow-tick detection: the open run's count and limit in registers,
         * synced with `sr` around anything that uses it. */
        uint32_t sn = slow ? sr.n : 0, sk = slow ? sr.cur_k : 0;
        bool hold = slow && sr.hold;
        /* `pf`: the run is fed to the profiler at once (entries cancelled
         * or materialized meanwhile are taken back out of the count), and
         * the tick at `samp` is the next one timed on its own (the
         * sampling countdown, kept as a position while the run lasts). */
        uint32_t pcd = 0;
        uint64_t samp = UINT64_MAX;
        if (pf) {
            prof_feed(w, R, cls, lslot, (uint8_t)g, j - i, lane_slot1(L, i) - 1, tg[i]);
            pcd = w->prof.sample_every ? R->pr_countdown : 0;
            if (pcd)
                samp = (uint64_t)i + pcd - 1;
        }
        for (; i < j; i++) {
            if (!par && TK_UNLIKELY(T->mut != mut)) {
                L = &T->lanes[lid];
                ids = L->ids;
                tg = L->targets;
                if (!bit_get(L->act, i)) {
                    if (pf && R->pr_n)
                        R->pr_n--;
                    continue; /* cancelled */
                }
                if (bit_get(L->spec, i)) {
                    /* Materialized: counted individually. */
                    L->cur = i;
                    if (slow)
                        sr.n = sn;
                    if (pf && R->pr_n)
                        R->pr_n--;
                    exec_one(w, R, lane_rec(T, L, i), g, false, slow ? &sr : NULL, i,
                             false);
                    if (slow) {
                        sn = sr.n;
                        sk = sr.cur_k;
                        hold = sr.hold;
                    }
                    L = &T->lanes[lid];
                    ids = L->ids;
                    tg = L->targets;
                    continue;
                }
            }
            if (!par)
                L->cur = i;
            ctx.self = idk == ID_ARRAY ? ids[i]
                       : idk == ID_NONE ? TK_TICK_NONE
                                        : (ids ? ids[i] : TK_TICK_NONE);
            void *target = tg[i];
            if (!par)
                check_once(w, lane_slot1(L, i) - 1);
            bool single = false;
            if (pf && TK_UNLIKELY(i == samp)) {
                samp += w->prof.sample_every;
                single = true;
            }
            /* The function's id where something names it. */
            tk_tick_id fid = ctx.self;
            if ((trace || slow || (prof && !pf) || single) && !ids)
                fid = lane_id(T, L, i);
            if (gen && !pf) {
                if (trace)
                    trace_emit(w, R, fid, target, g);
                if (prof) {
                    uint32_t s = id_slot(fid);
                    if (mixed)
                        lslot = rec_level(&T->recs[s]);
                    prof_feed(w, R, cls, lslot, (uint8_t)g, 1, s, target);
                    single = prof_single(w, R, cls);
                }
            }
            if (slow && TK_UNLIKELY(sn == 0 || (hold && i >= sr.lo && i < sr.hi))) {
                sr.n = sn;
                sr_before(w, R, &sr, fid, target, cls, i);
                sn = sr.n;
                sk = sr.cur_k;
            }
            if (gen && single) {
                tk_tick_id id = fid;
                uint64_t t0 = now_stats(w);
                fn(target, rdt, &ctx);
                prof_tick(w, R, id, target, cls, lslot, g, t0, now_stats(w) - t0);
            } else {
                fn(target, rdt, &ctx);
            }
            if (slow && TK_UNLIKELY(++sn >= sk)) {
                sr.n = sn;
                sr.pos = i;
                sr_close(w, R, &sr);
                sn = 0;
                hold = sr.hold;
            }
            if (slow)
                sr.pos = i;
            ran++;
        }
        if (pf && pcd)
            R->pr_countdown = (uint32_t)(samp - j + 1); /* the ticks to the next sample */
        if (slow)
            sr.n = sn;
        L = &T->lanes[lid];
    }
    L = &T->lanes[lid];
    if (slow) {
        if (so)
            sr_end(w, R, &sr, &so->k, &so->hold, &so->lo, &so->hi);
        else
            sr_end(w, R, &sr, &L->sl_k, &L->sl_hold, &L->sl_lo, &L->sl_hi);
    }
    *R->ran += ran;
}

#define RUN_RANGE(par)                                                                       \
    do {                                                                                     \
        if (gen && pf) {                                                                     \
            if (slow)                                                                        \
                run_range_impl(w, R, lid, lo, hi, so, true, true, true, par, ID_ANY);        \
            else                                                                             \
                run_range_impl(w, R, lid, lo, hi, so, true, true, false, par, ID_ANY);       \
        } else if (gen) {                                                                    \
            if (slow)                                                                        \
                run_range_impl(w, R, lid, lo, hi, so, true, false, true, par, ID_ANY);       \
            else                                                                             \
                run_range_impl(w, R, lid, lo, hi, so, true, false, false, par, ID_ANY);      \
        } else if (slow) {                                                                   \
            run_range_impl(w, R, lid, lo, hi, so, false, false, true, par, ID_ANY);          \
        } else if (T_of(w)->lanes[lid].ids) {                                                \
            run_range_impl(w, R, lid, lo, hi, so, false, false, false, par, ID_ARRAY);       \
        } else {                                                                             \
            run_range_impl(w, R, lid, lo, hi, so, false, false, false, par, ID_NONE);        \
        }                                                                                    \
    } while (0)

/* Run positions [lo, hi) of an open lane on runner R (`par`: a chunk of a
 * split section, slow-tick state to `so`). */
static void run_range(tk_world_t *w, runner *R, uint32_t lid, uint32_t lo, uint32_t hi,
                      slowout *so, bool par)
{
    struct tk__ticks *T = T_of(w);
    bool slow = T->slow_ns != 0;
    bool gen = w->prof_on || T->trace;
    /* Profiling alone, a lane of one level, a class not timed tick by tick. */
    const lane *L = &T->lanes[lid];
    bool pf = gen && !T->trace && !w->prof.each && L->lvl_mixed != 2 &&
              !(L->cls < T->pr_n_each && T->pr_each[L->cls]);
    if (par)
        RUN_RANGE(true);
    else
        RUN_RANGE(false);
}

#undef RUN_RANGE

/* Run a lane on the frame thread. */
static void run_lane(tk_world_t *w, uint32_t lid)
{
    uint32_t n = lane_open(w, lid);
    if (!n)
        return;
    run_range(w, &T_of(w)->main, lid, 0, n, NULL, false);
    lane_close(w, lid);
}

/* ---- parallel sections (threads > 1; see the top of this file) ----------------------- */

/* The lane a thread runs in a section (for refusals), 0 = none. */
static _Thread_local uint32_t t_par_lane;

int tk__par_refuse(tk_world_t *w, const char *what)
{
    if (atomic_fetch_add_explicit(&w->par_refused, 1, memory_order_relaxed) == 0) {
        const struct tk__ticks *T = T_of(w);
        const lane *L = t_par_lane ? &T->lanes[t_par_lane] : NULL;
        tk_log(TK_LOG_ERROR,
               "%s refused: a tick of class '%s' in %s runs in parallel (threads > 1) and may "
               "change nothing but its own state",
               what, L ? T->classes[L->cls].name : "?",
               L ? tk_group_name((tk_group)L->group) : "a tick group");
    }
    return TK_ESTATE;
}

int tk_tick_guard(tk_world_t *w, const char *what)
{
    if (w && TK_UNLIKELY(w->par))
        return tk__par_refuse(w, what ? what : "a call");
    return 0;
}

bool tk_tick_parallel(const tk_world_t *w) { return w && w->par; }

enum { LK_SERIAL, LK_ALL, LK_MIXED };

/* Which of a lane's entries are parallel work: all (a thread-safe class),
 * some (any_thread ones of another class) or none. */
static inline int lane_kind(const struct tk__ticks *T, const lane *L)
{
    if (T->classes[L->cls].thread_safe)
        return LK_ALL;
    return L->n_any ? LK_MIXED : LK_SERIAL;
}

/* Entry p of a mixed lane is an any_thread function's. */
static inline bool entry_any(const struct tk__ticks *T, const lane *L, uint32_t p)
{
    uint32_t e = lane_slot1(L, p);
    return e && (T->recs[e - 1].flags & RF_ANYTHREAD);
}

static void range_push(struct tk__ticks *T, uint32_t lid, uint32_t lo, uint32_t hi)
{
    TK_GROW(T->ranges, T->cap_ranges, T->n_ranges + 1);
    T->ranges[T->n_ranges++] = (prange){lid, lo, hi};
}

/* One runner per thread of the pool (buffered; kept between sections). */
static void runners_ready(tk_world_t *w, unsigned threads)
{
    struct tk__ticks *T = T_of(w);
    if (T->n_runners < threads) {
        T->runners = tk_realloc(T->runners, threads * sizeof *T->runners);
        for (size_t i = T->n_runners; i < threads; i++) {
            memset(&T->runners[i], 0, sizeof T->runners[i]);
            T->runners[i].thread = (unsigned)i;
            T->runners[i].buffered = true;
            T->runners[i].pr_countdown = w->prof.sample_every;
        }
        T->n_runners = threads;
    }
    for (size_t i = 0; i < T->n_runners; i++)
        T->runners[i].ran = &T->runners[i].ran_own;
}

/* Chunk k of the split section, on `thread` (pool job). */
static void par_chunk(void *ud, uint32_t k, unsigned thread)
{
    tk_world_t *w = ud;
    struct tk__ticks *T = T_of(w);
    pchunk *c = &T->chunks[k];
    runner *R = &T->runners[thread];
    t_par_lane = c->lane;
    c->ev0 = R->n_ev;
    uint64_t ran0 = R->ran_own;
    uint64_t t0 = tk_clock_now_ns();
    run_range(w, R, c->lane, c->lo, c->hi, &c->so, true);
    if (R->pr_n)
        prof_flush(w, R, now_stats(w));
    c->ns = tk_clock_now_ns() - t0;
    c->ran = R->ran_own - ran0;
    c->thread = thread;
    c->ev1 = R->n_ev;
    t_par_lane = 0;
}

/* After a chunked section, on the frame thread (the world may change
 * again): its events in chunk order, its counts, the lanes' costs and
 * slow-tick state. */
static void par_merge(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    tk_world_frame_stats *fs = &w->fstats;
    for (size_t k = 0; k < T->n_chunks; k++) {
        const pchunk *c = &T->chunks[k];
        const runner *R = &T->runners[c->thread];
        for (size_t e = c->ev0; e < c->ev1; e++) {
            const pevent *p = &R->ev[e];
            if (p->what == EV_PROF)
                prof_deliver(w, &p->ev);
            else if (p->what == EV_TRACE)
                T->trace(T->trace_ud, p->ev.id, p->ev.target, (tk_group)p->ev.group);
            else
                T->slow_fn(T->slow_ud, p->ev.id, p->ev.target, p->ev.cls, p->ev.ns, p->ev.n);
        }
        fs->ticks_run += c->ran;
        fs->par_ticks += c->ran;
        if (c->thread) {
            uint8_t g = T->lanes[c->lane].group;
            fs->worker_ticks += c->ran;
            fs->worker_ns += c->ns;
            fs->group_worker_ns[g] += c->ns;
        }
    }
    /* Per lane (its chunks are consecutive): cost, slow-tick state. */
    for (size_t k = 0; k < T->n_chunks;) {
        uint32_t lid = T->chunks[k].lane;
        uint64_t ns = 0, len = 0;
        size_t best = k;
        size_t m = k;
        for (; m < T->n_chunks && T->chunks[m].lane == lid; m++) {
            ns += T->chunks[m].ns;
            len += T->chunks[m].hi - T->chunks[m].lo;
            if (T->chunks[m].so.hold > T->chunks[best].so.hold)
                best = m;
        }
        lane *L = &T->lanes[lid];
        float v = (float)ns / (float)TK_MAX(len, 1);
        L->ns_per = L->ns_per > 0 ? (L->ns_per + v) / 2 : v;
        L->untimed = 0;
        if (T->slow_ns) {
            L->sl_k = T->chunks[m - 1].so.k;
            L->sl_hold = T->chunks[best].so.hold;
            L->sl_lo = T->chunks[best].so.lo;
            L->sl_hi = T->chunks[best].so.hi;
        }
        k = m;
    }
    for (size_t i = 0; i < T->n_runners; i++) {
        runner *R = &T->runners[i];
        R->n_ev = 0;
        if (R->cap_ev > 65536) {
            tk_free(R->ev);
            R->ev = NULL;
            R->cap_ev = 0;
        }
    }
}

/* Cut the gathered section into chunks: about PAR_CHUNKS per thread it is
 * worth (`want`), by expected cost; with want = 1, one chunk per range. */
static void par_chunks(tk_world_t *w, double est, unsigned want)
{
    struct tk__ticks *T = T_of(w);
    double chunk_ns = est / (double)(want * PAR_CHUNKS);
    T->n_chunks = 0;
    for (size_t r = 0; r < T->n_ranges; r++) {
        const prange *pr = &T->ranges[r];
        const lane *L = &T->lanes[pr->lane];
        uint32_t len = pr->hi - pr->lo;
        uint32_t size = len;
        if (want > 1) {
            double ns = (double)len * (L->ns_per > 0 ? L->ns_per : PAR_NS_GUESS);
            uint32_t pieces = (uint32_t)TK_MAX(1.0, TK_MIN((double)len, ceil(ns / chunk_ns)));
            size = (len + pieces - 1) / pieces;
            if (size > 64)
                size = (size + 63) & ~63u;
            if (size < PAR_CHUNK_MIN && len > PAR_CHUNK_MIN && ns / len < 100)
                size = PAR_CHUNK_MIN; /* cheap entries: not below a few microseconds */
        }
        for (uint32_t lo = pr->lo; lo < pr->hi; lo += size) {
            TK_GROW(T->chunks, T->cap_chunks, T->n_chunks + 1);
            pchunk *c = &T->chunks[T->n_chunks++];
            memset(c, 0, sizeof *c);
            c->lane = pr->lane;
            c->lo = lo;
            c->hi = TK_MIN(pr->hi, lo + size);
            c->so = (slowout){L->sl_k, L->sl_hold, L->sl_lo, L->sl_hi};
        }
    }
}

/*
 * Run the gathered section (T->ranges: open lanes' ranges) while the world
 * may not change (w->par).  Split over the pool when its expected work
 * reaches the engine's split_min; else on the frame thread, in chunks (one
 * per range) whose events wait for the section's end when a hook is on (a
 * hook may read the world), directly otherwise.
 */
static void par_section(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    double est = 0;
    bool timed = false;
    for (size_t r = 0; r < T->n_ranges; r++) {
        const lane *L = &T->lanes[T->ranges[r].lane];
        est += (double)(T->ranges[r].hi - T->ranges[r].lo) *
               (L->ns_per > 0 ? L->ns_per : PAR_NS_GUESS);
        timed |= L->ns_per <= 0 || L->untimed >= PAR_REMEASURE;
    }
    unsigned threads = T->pool_threads;
    bool split = threads > 1 && est >= (double)T->split_ns;
    bool chunked = split || w->prof_on || T->trace || T->slow_ns;
    w->fstats.sections++;
    w->par = true;
    if (chunked) {
        unsigned want = 1;
        if (split) {
            double per = (double)T->split_ns / 2;
            want = est / per >= threads ? threads : TK_MAX(2u, (unsigned)(est / per));
        }
        par_chunks(w, est, want);
        runners_ready(w, threads);
        /* The frame thread's open profiling run ends where the section begins. */
        if (w->prof_on && T->main.pr_n)
            prof_flush(w, &T->main, now_stats(w));
        if (split) {
            tk__pool_run(T->pool, (uint32_t)T->n_chunks, par_chunk, w, want);
        } else {
            for (size_t k = 0; k < T->n_chunks; k++)
                par_chunk(w, (uint32_t)k, 0);
        }
    } else {
        uint64_t ran0 = w->fstats.ticks_run;
        for (size_t r = 0; r < T->n_ranges; r++) {
            prange pr = T->ranges[r];
            t_par_lane = pr.lane;
            uint64_t t0 = timed ? tk_clock_now_ns() : 0;
            run_range(w, &T->main, pr.lane, pr.lo, pr.hi, NULL, false);
            lane *L = &T->lanes[pr.lane];
            if (timed) {
                float v = (float)(tk_clock_now_ns() - t0) / (float)TK_MAX(pr.hi - pr.lo, 1u);
                L->ns_per = L->ns_per > 0 ? (L->ns_per + v) / 2 : v;
                L->untimed = 0;
            } else {
                L->untimed++;
            }
        }
        t_par_lane = 0;
        w->fstats.par_ticks += w->fstats.ticks_run - ran0;
    }
    w->par = false;
    if (chunked)
        par_merge(w);
    if (split)
        w->fstats.sections_split++;
    if (TK_UNLIKELY(atomic_load_explicit(&w->par_refused, memory_order_relaxed))) {
        uint32_t refused = atomic_exchange_explicit(&w->par_refused, 0, memory_order_relaxed);
        if (refused > 1)
            tk_log(TK_LOG_ERROR, "%u more calls refused in the same parallel run", refused - 1);
    }
}

/* A lane some of whose entries are any_thread: stretches of consecutive
 * any_thread entries are sections, the others run on the frame thread in
 * between, in lane order. */
static void run_mixed(tk_world_t *w, uint32_t lid)
{
    struct tk__ticks *T = T_of(w);
    uint32_t n = lane_open(w, lid);
    if (!n)
        return;
    for (uint32_t i = 0; i < n;) {
        const lane *L = &T->lanes[lid];
        bool any = entry_any(T, L, i);
        uint32_t j = i + 1;
        while (j < n && (!lane_slot1(L, j) || entry_any(T, L, j) == any))
            j++;
        if (any) {
            T->n_ranges = 0;
            range_push(T, lid, i, j);
            par_section(w);
        } else {
            run_range(w, &T->main, lid, i, j, NULL, false);
        }
        i = j;
    }
    lane_close(w, lid);
}

/* The lanes of `band` in group order (gl), with sections. */
static void run_band_par(tk_world_t *w, int band, const vec32 *gl)
{
    struct tk__ticks *T = T_of(w);
    for (size_t i = 0; i < gl->n;) {
        uint32_t lid = gl->v[i];
        const lane *L = &T->lanes[lid];
        int kind = L->band == band ? lane_kind(T, L) : -1;
        if (kind != LK_ALL) {
            if (kind == LK_SERIAL)
                run_lane(w, lid);
            else if (kind == LK_MIXED)
                run_mixed(w, lid);
            i++;
            continue;
        }
        /* Consecutive lanes of thread-safe classes, one band and depth. */
        uint32_t depth = L->depth;
        T->n_ranges = 0;
        size_t j = i;
        for (; j < gl->n; j++) {
            const lane *M = &T->lanes[gl->v[j]];
            if (j > i && (M->depth != depth || M->band != band || lane_kind(T, M) != LK_ALL))
                break;
            uint32_t n = lane_open(w, gl->v[j]);
            if (n)
                range_push(T, gl->v[j], 0, n);
        }
        if (T->n_ranges)
            par_section(w);
        for (size_t r = 0; r < T->n_ranges; r++)
            lane_close(w, T->ranges[r].lane);
        i = j;
    }
}

/* ---- per-frame queueing (dynamic and newly spawned functions) --------------------- */

static int xent_cmp(const void *a, const void *b)
{
    const xent *x = a, *y = b;
    if (x->band != y->band)
        return x->band < y->band ? -1 : 1;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Has lane function p a task this frame that its lane has not run yet?  One
 * disabled this frame while pending keeps it: Unreal's queued task stays and
 * only finds the function disabled when it runs, so a function queued later
 * this frame (newly spawned, dynamic) still waits for its groups.
 */
static bool lane_task(const tk_world_t *w, const rec *p)
{
    const struct tk__ticks *T = T_of(w);
    const lane *L = &T->lanes[p->lane];
    if (L->ran == fmark(w))
        return false;
    if (bit_get(L->act, p->pos))
        return true;
    const ext *px = ext_of(T, p);
    return px && px->cancel == fmark(w);
}

/* Queued this frame through the extras path (not through a lane). */
static inline bool extras_kind(const rec *r) { return (r->flags & (RF_DYNAMIC | RF_NEWLY)) != 0; }

/* As a prerequisite: placed by the extras path this frame, also once a newly
 * spawned one left the newly list (its task, even cancelled, still places
 * functions queued after it, as Unreal's queued task does). */
static inline bool extras_now(const tk_world_t *w, const rec *r)
{
    return extras_kind(r) || ((r->cx & REC_EXT) && T_of(w)->exts[rec_ext(r)].task == fmark(w));
}

/* Ready to tick this frame if queued: enabled and (every frame or due). */
static bool ready(const tk_world_t *w, const rec *r)
{
    const struct tk__ticks *T = T_of(w);
    if (r->state == TK_TICK_DISABLED)
        return false;
    const ext *x = ext_of(T, r);
    if (!x || !x->interval_ns)
        return r->state == TK_TICK_ENABLED || r->state == TK_TICK_COOLING_DOWN;
    return x->due == fmark(w) || (r->flags & RF_NEWLY);
}

/* Reach `r` in this frame's queueing walk: a function visited already or
 * disabled is finished here (false); otherwise its frame is pushed (true). */
static bool queue_enter(tk_world_t *w, rec *r)
{
    struct tk__ticks *T = T_of(w);
    uint64_t F = fmark(w);
    ext *x = ensure_ext(T, r);
    if (x->visit == F)
        return false;
    x->visit = F;
    if (r->state == TK_TICK_DISABLED) {
        x->queued = F;
        return false;
    }
    walk_push(T, slot_of(T, r));
    return true;
}

/* Prerequisite i of the function of frame `f`, queued already (or being
 * queued, which is a cycle): gather its groups for this frame. */
static void queue_edge(tk_world_t *w, wframe *f, rec *r, rec *p, uint32_t i)
{
    struct tk__ticks *T = T_of(w);
    uint64_t F = fmark(w);
    ext *x = ext_of(T, r);
    int group = grp_of(r->grp);
    if (extras_now(w, p)) {
        ext *px = ext_of(T, p);
        if (px->visit == F && px->queued != F) {
            if (!x->pre_cycle[i])
                log_cycle(w, r, p);
            x->pre_cycle[i] = 1;
            return;
        }
        /* This frame's walk decides cycles among queued-per-frame
         * functions; the band and depth pass below reads the same flag. */
        x->pre_cycle[i] = 0;
        if (px->task != F || px->done == F)
            return;
        int pe = grp_end(px->fact);
        if (!considered(pe, group))
            return;
        f->max_s = (uint8_t)TK_MAX(f->max_s, grp_of(px->fact));
        f->max_e = (uint8_t)TK_MAX(f->max_e, pe);
    } else {
        if (x->pre_cycle[i])
            return;
        if (!lane_task(w, p))
            return;
        int pe = grp_end(p->act);
        if (!considered(pe, group))
            return;
        f->max_s = (uint8_t)TK_MAX(f->max_s, grp_of(p->act));
        f->max_e = (uint8_t)TK_MAX(f->max_e, pe);
    }
}

/* Every prerequisite of the function of frame `f` is queued: its groups,
 * band and depth this frame, and its task if it is ready. */
static void queue_finish(tk_world_t *w, const wframe *f, rec *r, int ctxg)
{
    struct tk__ticks *T = T_of(w);
    uint64_t F = fmark(w);
    ext *x = ext_of(T, r);
    int group = grp_of(r->grp), endg = grp_end(r->grp);
    int max_s = f->max_s, max_e = f->max_e;
    int start = TK_MAX(max_s, TK_MAX(group, ctxg));
    if (start != group)
        while (!demotable(start))
            start++;
    int end = start, cand = TK_MAX(TK_MAX(max_e, endg), start);
    for (int g = start + 1; g <= cand; g++)
        if (demotable(g))
            end = g;
    x->fact = grp_pack(start, end);
    /* Band: high priority unless a same-group prerequisite runs without it;
     * depth among same-band extras of the group. */
    bool hipri = (r->flags & RF_HIPRI) != 0, low = false;
    uint32_t depth = 0;
    for (int pass = 0; pass < 2; pass++) {
        int band = (hipri && !low) ? 0 : 1;
        for (uint32_t i = 0; i < x->n_pre; i++) {
            rec *p = live_rec(w, x->pre[i]);
            if (!p || x->pre_cycle[i])
                continue;
            ext *px = ext_of(T, p);
            int ps, pe, pband;
            bool is_x = extras_now(w, p);
            if (is_x) {
                if (px->task != F || px->done == F)
                    continue;
                ps = grp_of(px->fact);
                pe = grp_end(px->fact);
                pband = px->fband;
            } else {
                const lane *L = &T->lanes[p->lane];
                if (!lane_task(w, p))
                    continue;
                ps = grp_of(p->act);
                pe = grp_end(p->act);
                pband = L->band;
            }
            if (!considered(pe, group) || ps != start)
                continue;
            if (pass == 0) {
                if (hipri && pband != 0)
                    low = true;
            } else if (is_x && pband == band) {
                depth = TK_MAX(depth, px->fdepth + 1);
            }
        }
    }
    x->fband = (uint8_t)((hipri && !low) ? 0 : 1);
    x->fdepth = depth;
    if (ready(w, r)) {
        x->task = F;
        size_t *n = &T->n_xs[start];
        TK_GROW(T->xs[start], T->cap_xs[start], *n + 1);
        T->xs[start][(*n)++] = (xent){rec_seq(r), slot_of(T, r), depth, rec_cls(T, r), x->fband};
    }
    x->queued = F;
}

/* Unreal's QueueTickFunction for a function of the extras path, at context
 * group `ctxg`: prerequisites of the extras path first, depth-first in the
 * order they were added, on the explicit stack T->walk (no recursion). */
static void queue_fn(tk_world_t *w, rec *r0, int ctxg)
{
    struct tk__ticks *T = T_of(w);
    uint64_t F = fmark(w);
    size_t base = T->n_walk;
    if (!queue_enter(w, r0))
        return;
    while (T->n_walk > base) {
        wframe *f = &T->walk[T->n_walk - 1];
        rec *r = &T->recs[f->slot];
        bool descended = false;
        while (f->i < ext_of(T, r)->n_pre) {
            uint32_t i = f->i;
            rec *p = live_rec(w, ext_of(T, r)->pre[i]);
            if (p) {
                if (extras_kind(p)) {
                    ext *px = ext_of(T, p);
                    if ((!px || px->visit != F) && queue_enter(w, p)) {
                        /* Queued first; edge i is looked at again on return. */
                        descended = true;
                        break;
                    }
                }
                queue_edge(w, f, r, p, i);
            }
            f->i++;
        }
        if (descended)
            continue;
        queue_finish(w, f, r, ctxg);
        T->n_walk--;
    }
}

/* QueueNewlySpawned: queue every function in the newly list at context
 * group `ctxg`.  Returns how many were queued. */
static size_t queue_newly(tk_world_t *w, int ctxg)
{
    struct tk__ticks *T = T_of(w);
    /* Enabled again after they were visited: not queued, but an interval
     * one is rescheduled for its full interval (the interval it has now). */
    for (size_t i = 0; i < T->renewed.n; i++) {
        rec *r = &T->recs[T->renewed.v[i]];
        ext *x = ext_of(T, r);
        if (r->state == TK_TICK_ENABLED && x && x->interval_ns && x->wnode == NONE32 &&
            !x->dset && !(r->flags & RF_NEWLY)) {
            x->was_interval = true;
            wheel_insert(w, r, clock_of(w, r) + x->interval_ns);
        }
    }
    T->renewed.n = 0;
    if (T->newly.n == 0)
        return 0;
    vec32 *v = &T->stack;
    v->n = 0;
    for (size_t i = 0; i < T->newly.n; i++) {
        rec *r = &T->recs[T->newly.v[i]];
        if (r->state != RS_FREE && (r->flags & RF_NEWLY))
            vpush(v, T->newly.v[i]);
    }
    T->newly.n = 0;
    sort_by_seq(T, v->v, v->n);
    size_t n = v->n;
    for (size_t i = 0; i < v->n; i++)
        queue_fn(w, &T->recs[v->v[i]], ctxg);
    for (size_t i = 0; i < v->n; i++) {
        rec *r = &T->recs[v->v[i]];
        r->flags &= (uint8_t)~RF_NEWLY;
        ext *x = ext_of(T, r);
        /* Interval functions start cooling down after this tick. */
        if (r->state == TK_TICK_ENABLED && x->interval_ns && x->wnode == NONE32) {
            x->was_interval = true;
            wheel_insert(w, r, clock_of(w, r) + x->interval_ns);
        }
    }
    v->n = 0;
    return n;
}

static void run_extras(tk_world_t *w, int g, int band)
{
    struct tk__ticks *T = T_of(w);
    uint64_t F = fmark(w);
    slowrun sr;
    sr_init(&sr, T->sl_kx, T->sl_holdx, 0, 1);
    slowrun *srp = T->slow_ns ? &sr : NULL;
    for (size_t i = 0; i < T->n_xs[g]; i++) {
        xent e = T->xs[g][i];
        if (e.band != band)
            continue;
        rec *r = &T->recs[e.idx];
        if (r->state == RS_FREE || rec_seq(r) != e.seq)
            continue;
        ext *x = ext_of(T, r);
        x->done = F;
        if (r->state == TK_TICK_DISABLED)
            continue;
        exec_one(w, &T->main, r, (tk_group)g, false, srp, 0, false);
    }
    if (srp && (sr.n || sr.t0_ok))
        sr_end(w, &T->main, srp, &T->sl_kx, &T->sl_holdx, &(uint32_t){0}, &(uint32_t){0});
}

static void run_group_body(tk_world_t *w, int g)
{
    struct tk__ticks *T = T_of(w);
    if (T->n_xs[g] > 1)
        qsort(T->xs[g], T->n_xs[g], sizeof(xent), xent_cmp);
    /* A copy of the group's lanes: a lane created by a tick (a registration
     * of a new kind) must not shift the list being walked; it holds only
     * functions that start ticking next frame anyway. */
    glanes_sort(T, g);
    vec32 *gl = &T->lanes_run;
    gl->n = 0;
    if (T->glanes[g].n) {
        TK_GROW(gl->v, gl->cap, T->glanes[g].n);
        memcpy(gl->v, T->glanes[g].v, T->glanes[g].n * sizeof *gl->v);
    }
    gl->n = T->glanes[g].n;
    for (int band = 0; band < 2; band++) {
        if (T->pool) {
            run_band_par(w, band, gl);
        } else {
            for (size_t i = 0; i < gl->n; i++) {
                uint32_t lid = gl->v[i];
                if (T->lanes[lid].band == band)
                    run_lane(w, lid);
            }
        }
        run_extras(w, g, band);
    }
    T->n_xs[g] = 0;
}

/* ---- frame entry points -------------------------------------------------------- */


static void collect_due(void *ud, uint32_t payload, uint64_t due)
{
    tk_world_t *w = ud;
    struct tk__ticks *T = T_of(w);
    rec *r = &T->recs[payload];
    T->exts[rec_ext(r)].wnode = NONE32; /* the wheel released the node */
    TK_GROW(T->dues, T->cap_dues, T->n_dues + 1);
    T->dues[T->n_dues++] = (dueent){due, rec_seq(r), payload};
}

/* A due set came due (the wheel released its node). */
static void collect_set(void *ud, uint32_t payload, uint64_t due)
{
    tk_world_t *w = ud;
    struct tk__ticks *T = T_of(w);
    (void)due;
    T->dsets[payload].wnode = NONE32;
    vpush(&T->tmp, payload);
}

static int due_cmp(const void *a, const void *b)
{
    const dueent *x = a, *y = b;
    if (x->due != y->due)
        return x->due < y->due ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}


/* A function becomes due (or ticks for the first time as an interval one):
 * reschedule it at `next_due` and mark it to tick this frame. */
static void activate_interval(tk_world_t *w, rec *r, uint64_t next_due)
{
    struct tk__ticks *T = T_of(w);
    ext *x = ensure_ext(T, r);
    x->was_interval = true;
    x->due = fmark(w);
    wheel_insert(w, r, next_due);
    if (!(r->flags & RF_DYNAMIC)) {
        bit_set(T->lanes[r->lane].act, r->pos);
        vpush(&T->due_now, slot_of(T, r));
    }
}

void tk_world_settle(tk_world_t *w)
{
    TK_ASSERT(w && !w->in_frame);
    ensure_wheels(w);
    upkeep(w);
}

void tk__ticks_start_frame(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    T->phase = PH_GROUPS;
    T->cur_group = 0;
    T->main.ran = &w->fstats.ticks_run;
    T->iv_defer.n = 0; /* merged before this frame's walk: from now, as set */
    ensure_wheels(w);
    upkeep(w);

    /* Cooldowns: everything due before the end of this frame's time. */
    T->n_dues = 0;
    tk__wheel_advance(&T->wheel_game, w->time_ns, collect_due, w);
    tk__wheel_advance(&T->wheel_unpaused, w->unpaused_ns, collect_due, w);
    for (size_t i = 0; i < T->n_dues; i++) {
        rec *r = &T->recs[T->dues[i].slot];
        /* Overrun credit: the next due time keeps the long-run phase. */
        activate_interval(w, r, T->dues[i].due + T->exts[rec_ext(r)].interval_ns);
    }
    /* Due sets: one wheel entry each, whatever their size. */
    vec32 *sets = &T->tmp;
    sets->n = 0;
    tk__wheel_advance(&T->wheel_sets, w->time_ns, collect_set, w);
    for (size_t i = 0; i < sets->n; i++)
        dset_fire(w, sets->v[i]);
    /* Interval functions that are enabled but not cooling tick now; those
     * that can share a due set start one per (lane, interval, last tick). */
    group_reset(T);
    sets->n = 0;
    for (size_t i = 0; i < T->fresh.n; i++) {
        rec *r = &T->recs[T->fresh.v[i]];
        ext *x = ext_of(T, r);
        if (r->state != TK_TICK_ENABLED || !x || !x->interval_ns || x->wnode != NONE32 ||
            x->dset)
            continue;
        if (!eligible_member(T, r)) {
            activate_interval(w, r, clock_of(w, r) + x->interval_ns);
            continue;
        }
        uint32_t *gid = group_find(T, r->lane, x->interval_ns, (uint64_t)x->last_iv_ns, 0);
        if (!*gid) {
            /* Due now: firing makes it tick this frame, due again at now +
             * interval. */
            *gid = dset_new(T, r->lane, x->interval_ns, w->time_ns, x->last_iv_ns);
            vpush(sets, *gid);
        }
        uint32_t id = *gid;
        dset_add(T, id, r);
        join_derived(w, r, id | COH_SET);
    }
    for (size_t i = 0; i < sets->n; i++)
        dset_fire(w, sets->v[i]);
    sets->n = 0;
    T->fresh.n = 0;
    vtrim(&T->fresh);
    vtrim(&T->tmp);

    /* Functions whose groups depend on this frame: queue them as Unreal
     * does, every-frame ones first, then the due interval ones. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < T->dyn.n; i++) {
            rec *r = &T->recs[T->dyn.v[i]];
            if (r->state == RS_FREE || !(r->flags & RF_DYNAMIC))
                continue;
            if ((iv_of(T, r) != 0) != (pass == 1) || !ready(w, r))
                continue;
            queue_fn(w, r, 0);
        }
    }
}

/* A group ended at `t1`: close its open run, report the group. */
static void prof_group(tk_world_t *w, tk_group g, uint64_t t0, uint64_t t1, uint64_t ran)
{
    prof_flush(w, &T_of(w)->main, t1);
    tk_prof_event ev = {.kind = TK_PROF_GROUP, .group = g, .n = (uint32_t)ran,
                        .start_ns = t0, .ns = t1 - t0};
    w->prof.fn(w->prof.ud, &ev);
}

void tk__ticks_run_group(tk_world_t *w, tk_group g)
{
    struct tk__ticks *T = T_of(w);
    uint64_t t0 = now_stats(w);
    uint64_t ran0 = w->fstats.ticks_run;
    T->cur_group = g;
    T->pool = w->engine ? tk__engine_pool(w->engine) : NULL;
    if (T->pool) {
        T->split_ns = tk__engine_split_ns(w->engine);
        T->pool_threads = tk__pool_threads(T->pool);
    }
    run_group_body(w, g);
    T->cur_group = g + 1;
    if (g == TK_GROUP_LAST_DEMOTABLE) {
        uint64_t t1 = now_stats(w);
        w->fstats.group_ns[g] = t1 - t0;
        if (w->prof_on)
            prof_group(w, g, t0, t1, w->fstats.ticks_run - ran0);
        ran0 = w->fstats.ticks_run;
        t0 = now_stats(w);
        /* The newly-spawned drain: up to 101 rounds. */
        bool finished = false;
        uint32_t rounds = 0;
        T->cur_group = TK_GROUP_NEWLY_SPAWNED;
        for (int it = 0; it < MAX_NEWLY_ROUNDS; it++) {
            if (queue_newly(w, TK_GROUP_NEWLY_SPAWNED) == 0) {
                finished = true;
                break;
            }
            run_group_body(w, TK_GROUP_NEWLY_SPAWNED);
            rounds++;
        }
        if (!finished) {
            for (size_t i = 0; i < T->newly.n; i++) {
                rec *r = &T->recs[T->newly.v[i]];
                if (r->state == RS_FREE || !(r->flags & RF_NEWLY))
                    continue;
                char name[96];
                describe(w, r, name, sizeof name);
                tk_log(TK_LOG_ERROR,
                       "could not tick newly spawned in 100 iterations; runaway recursive "
                       "spawning: %s",
                       name);
                r->flags &= (uint8_t)~RF_NEWLY;
                ext *x = ext_of(T, r);
                if (r->state == TK_TICK_ENABLED && x && x->interval_ns && x->wnode == NONE32) {
                    x->was_interval = true;
                    wheel_insert(w, r, clock_of(w, r) + x->interval_ns);
                }
            }
            T->newly.n = 0;
        }
        w->fstats.newly_spawned_rounds = rounds;
        uint64_t t2 = now_stats(w);
        w->fstats.group_ns[TK_GROUP_NEWLY_SPAWNED] = t2 - t0;
        if (w->prof_on)
            prof_group(w, TK_GROUP_NEWLY_SPAWNED, t0, t2, w->fstats.ticks_run - ran0);
        return;
    }
    /* during_physics does not block: its newly spawned wait for end_physics. */
    if (g != TK_GROUP_DURING_PHYSICS)
        queue_newly(w, g + 1);
    uint64_t t1 = now_stats(w);
    w->fstats.group_ns[g] = t1 - t0;
    if (w->prof_on)
        prof_group(w, g, t0, t1, w->fstats.ticks_run - ran0);
}

void tk__ticks_end_frame(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    for (size_t i = 0; i < T->fired.n; i++)
        dset_unfire(w, T->fired.v[i]);
    T->fired.n = 0;
    for (size_t i = 0; i < T->due_now.n; i++) {
        rec *r = &T->recs[T->due_now.v[i]];
        if (r->state != RS_FREE)
            bit_clr(T->lanes[r->lane].act, r->pos);
    }
    T->due_now.n = 0;
    vtrim(&T->due_now);
    if (T->cap_dues > 65536) {
        tk_free(T->dues);
        T->dues = NULL;
        T->cap_dues = 0;
    }
    for (size_t i = 0; i < T->newly.n; i++) {
        rec *r = &T->recs[T->newly.v[i]];
        if (r->state == RS_FREE || !(r->flags & RF_NEWLY))
            continue;
        char name[96];
        describe(w, r, name, sizeof name);
        tk_log(TK_LOG_ERROR, "newly spawned tick function was added after tick groups have "
                             "been run: %s",
               name);
        r->flags &= (uint8_t)~RF_NEWLY;
    }
    T->newly.n = 0;
    T->renewed.n = 0; /* left in NewlySpawned after the drain: dropped */
    for (int g = 0; g < GROUPS; g++)
        T->n_xs[g] = 0;
    T->phase = PH_IDLE;
    T->cur_group = 0;
    release_limbo(T);
}

void tk__ticks_pause_frame(tk_world_t *w)
{
    struct tk__ticks *T = T_of(w);
    T->phase = PH_PAUSE;
    T->main.ran = &w->fstats.ticks_run;
    ensure_wheels(w);
    upkeep(w);
    slowrun sr;
    sr_init(&sr, T->sl_kx, T->sl_holdx, 0, 1);
    slowrun *srp = T->slow_ns ? &sr : NULL;
    /* Interval changes made between frames are merged after this frame's
     * walk in Unreal (its reschedule list): they count from its end. */
    for (size_t i = 0; i < T->iv_defer.n; i++) {
        rec *r = &T->recs[T->iv_defer.v[i]];
        ext *x = ext_of(T, r);
        if (r->state == RS_FREE || !(r->flags & RF_PAUSED) || !x || x->wnode == NONE32 ||
            !x->interval_ns)
            continue;
        wheel_remove(T, r);
        wheel_insert(w, r, w->unpaused_ns + x->interval_ns);
    }
    T->iv_defer.n = 0;
    /* Cooling even_when_paused functions on unpaused time, in due order. */
    T->n_dues = 0;
    tk__wheel_advance(&T->wheel_unpaused, w->unpaused_ns, collect_due, w);
    if (T->n_dues > 1)
        qsort(T->dues, T->n_dues, sizeof *T->dues, due_cmp);
    for (size_t i = 0; i < T->n_dues; i++) {
        rec *r = &T->recs[T->dues[i].slot];
        if (r->state == RS_FREE)
            continue;
        ext *x = ext_of(T, r);
        x->was_interval = true;
        wheel_insert(w, r, T->dues[i].due + x->interval_ns);
        exec_one(w, &T->main, r, grp_of(r->grp), true, srp, 0, false);
    }
    /* Then the enabled ones (every frame, or interval not cooling yet). */
    size_t n = T->paused_fns.n;
    for (size_t i = 0; i < n; i++) {
        rec *r = &T->recs[T->paused_fns.v[i]];
        if (r->state != TK_TICK_ENABLED || !(r->flags & RF_PAUSED))
            continue;
        ext *x = ext_of(T, r);
        if (x && x->interval_ns) {
            if (x->wnode != NONE32)
                continue;
            x->was_interval = true;
            wheel_insert(w, r, clock_of(w, r) + x->interval_ns);
        }
        exec_one(w, &T->main, r, grp_of(r->grp), true, srp, 0, false);
    }
    if (srp && (sr.n || sr.t0_ok))
        sr_end(w, &T->main, srp, &T->sl_kx, &T->sl_holdx, &(uint32_t){0}, &(uint32_t){0});
    if (w->prof_on)
        prof_flush(w, &T->main, now_stats(w));
    T->phase = PH_IDLE;
    release_limbo(T);
}
