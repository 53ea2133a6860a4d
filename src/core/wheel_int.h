/*
 * wheel_int.h - a hierarchical timing wheel over integer nanoseconds, used for
 * the cooldowns of interval tick functions (tick.c).
 *
 * It answers one question per frame: "which entries are due before T?", in
 * time proportional to the entries that are due plus the slots crossed, so an
 * entry that is not due costs nothing.  It does not order the due entries:
 * the tick scheduler orders them itself.
 *
 * Levels (slot width = 2^(20 + 8k) ns, 256 slots each):
 *
 *   level  slot width   range covered
 *   0      1.05 ms      268 ms
 *   1      268 ms       68.7 s
 *   2      68.7 s       4.9 h
 *   3      4.9 h        52 days
 *   beyond              an overflow list, re-examined every 52 days
 *
 * An entry sits at the lowest level whose window holds its due time and is
 * moved down ("cascaded", as in Linux's kernel/time/timer.c) when the wheel
 * reaches the start of its slot, so it always ends up in a level-0 slot before
 * it is due and is checked there exactly (due < T): granularity never makes an
 * entry early or late.  Level 0 keeps an occupancy bitmap so a large advance
 * skips empty slots.
 *
 * Costs: add O(1), remove O(1) (doubly linked), advance O(slots crossed / 64 +
 * cascaded + due); each entry is cascaded at most 3 times.
 */
#ifndef TICKD_WHEEL_INT_H
#define TICKD_WHEEL_INT_H

#include <stddef.h>
#include <stdint.h>

#define TK__WHEEL_NONE 0xffffffffu

typedef struct tk__wheel_node {
    uint64_t due;        /* ns, absolute                                     */
    uint32_t next, prev; /* links within a slot list; TK__WHEEL_NONE ends     */
    uint32_t slot;       /* list index the node is in, TK__WHEEL_NONE if free */
    uint32_t payload;    /* caller's value (an index)                        */
} tk__wheel_node;

typedef struct tk__wheel {
    uint64_t clk;            /* ns; every entry due before clk has been reported */
    uint64_t casc_done;      /* level-0 index whose cascade has been applied    */
    tk__wheel_node *nodes;   /* node slab                                      */
    size_t n_nodes, cap_nodes;
    uint32_t free_head;      /* free node list                                 */
    uint32_t *heads;         /* 4*256 slot lists + overflow + immediate         */
    uint64_t occ0[4];        /* level-0 occupancy bitmap                       */
    size_t count;            /* live entries                                   */
} tk__wheel;

void tk__wheel_init(tk__wheel *w, uint64_t now);
void tk__wheel_deinit(tk__wheel *w);
/* Add an entry due at `due` (ns) carrying `payload`; returns its node id. */
uint32_t tk__wheel_add(tk__wheel *w, uint64_t due, uint32_t payload);
/* Remove a live node. */
void tk__wheel_del(tk__wheel *w, uint32_t node);
/* Due time of a live node. */
static inline uint64_t tk__wheel_due(const tk__wheel *w, uint32_t node)
{
    return w->nodes[node].due;
}
/*
 * Report (and remove) every entry with due < `t`, calling fn(ud, payload,
 * due) for each, in no particular order; then clk = t.  `fn` must not touch
 * the wheel (collect, then act).  t < clk is a no-op.
 */
void tk__wheel_advance(tk__wheel *w, uint64_t t,
                       void (*fn)(void *ud, uint32_t payload, uint64_t due), void *ud);

#endif
