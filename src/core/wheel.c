/*
 * wheel.c - the hierarchical timing wheel of wheel_int.h (levels, granularity
 * and costs are documented there).
 */
#include <string.h>

#include "util_int.h"
#include "wheel_int.h"

#define G0 20                 /* log2 of the level-0 slot width in ns */
#define LVL_BITS 8
#define LVL_SIZE 256
#define N_LEVELS 4
#define L_OVERFLOW (N_LEVELS * LVL_SIZE)
#define L_IMMEDIATE (L_OVERFLOW + 1)
#define N_LISTS (L_IMMEDIATE + 1)

void tk__wheel_init(tk__wheel *w, uint64_t now)
{
    memset(w, 0, sizeof *w);
    w->clk = now;
    w->casc_done = now >> G0;
    w->free_head = TK__WHEEL_NONE;
    w->heads = tk_malloc(N_LISTS * sizeof *w->heads);
    for (int i = 0; i < N_LISTS; i++)
        w->heads[i] = TK__WHEEL_NONE;
}

void tk__wheel_deinit(tk__wheel *w)
{
    tk_free(w->nodes);
    tk_free(w->heads);
    memset(w, 0, sizeof *w);
}

static uint32_t list_for(const tk__wheel *w, uint64_t due)
{
    if (due < w->clk)
        return L_IMMEDIATE;
    uint64_t d0 = due >> G0, c0 = w->clk >> G0;
    if (d0 - c0 < LVL_SIZE)
        return (uint32_t)(d0 & (LVL_SIZE - 1));
    for (int k = 1; k < N_LEVELS; k++) {
        unsigned sh = G0 + LVL_BITS * k;
        uint64_t dk = due >> sh, ck = w->clk >> sh;
        if (dk - ck < LVL_SIZE)
            return (uint32_t)(k * LVL_SIZE + (dk & (LVL_SIZE - 1)));
    }
    return L_OVERFLOW;
}

static void link(tk__wheel *w, uint32_t n)
{
    tk__wheel_node *nd = &w->nodes[n];
    uint32_t l = list_for(w, nd->due);
    nd->slot = l;
    nd->prev = TK__WHEEL_NONE;
    nd->next = w->heads[l];
    if (nd->next != TK__WHEEL_NONE)
        w->nodes[nd->next].prev = n;
    w->heads[l] = n;
    if (l < LVL_SIZE)
        w->occ0[l >> 6] |= 1ull << (l & 63);
}

static void unlink(tk__wheel *w, uint32_t n)
{
    tk__wheel_node *nd = &w->nodes[n];
    uint32_t l = nd->slot;
    if (nd->prev != TK__WHEEL_NONE)
        w->nodes[nd->prev].next = nd->next;
    else
        w->heads[l] = nd->next;
    if (nd->next != TK__WHEEL_NONE)
        w->nodes[nd->next].prev = nd->prev;
    if (l < LVL_SIZE && w->heads[l] == TK__WHEEL_NONE)
        w->occ0[l >> 6] &= ~(1ull << (l & 63));
}

uint32_t tk__wheel_add(tk__wheel *w, uint64_t due, uint32_t payload)
{
    uint32_t n;
    if (w->free_head != TK__WHEEL_NONE) {
        n = w->free_head;
        w->free_head = w->nodes[n].next;
    } else {
        TK_GROW(w->nodes, w->cap_nodes, w->n_nodes + 1);
        n = (uint32_t)w->n_nodes++;
    }
    tk__wheel_node *nd = &w->nodes[n];
    nd->due = due;
    nd->payload = payload;
    link(w, n);
    w->count++;
    return n;
}

static void release(tk__wheel *w, uint32_t n)
{
    w->nodes[n].slot = TK__WHEEL_NONE;
    w->nodes[n].next = w->free_head;
    w->free_head = n;
    w->count--;
}

void tk__wheel_del(tk__wheel *w, uint32_t n)
{
    TK_ASSERT(n < w->n_nodes && w->nodes[n].slot != TK__WHEEL_NONE);
    unlink(w, n);
    release(w, n);
}

/* Move every node of list `l` to where it belongs now. */
static void relink_list(tk__wheel *w, uint32_t l)
{
    uint32_t n = w->heads[l];
    w->heads[l] = TK__WHEEL_NONE;
    if (l < LVL_SIZE)
        w->occ0[l >> 6] &= ~(1ull << (l & 63));
    while (n != TK__WHEEL_NONE) {
        uint32_t next = w->nodes[n].next;
        link(w, n);
        n = next;
    }
}

/* Entering level-0 index `t0` (a multiple of 256): cascade the higher levels
 * whose slot starts here, highest first. */
static void cascade(tk__wheel *w, uint64_t t0)
{
    w->clk = t0 << G0;
    w->casc_done = t0;
    if ((t0 & ((1ull << (LVL_BITS * N_LEVELS)) - 1)) == 0)
        relink_list(w, L_OVERFLOW);
    for (int k = N_LEVELS - 1; k >= 1; k--) {
        uint64_t mask = (1ull << (LVL_BITS * k)) - 1;
        if ((t0 & mask) == 0)
            relink_list(w, (uint32_t)(k * LVL_SIZE + ((t0 >> (LVL_BITS * k)) & (LVL_SIZE - 1))));
    }
}

static void expire_list(tk__wheel *w, uint32_t l, uint64_t t,
                        void (*fn)(void *, uint32_t, uint64_t), void *ud)
{
    uint32_t n = w->heads[l];
    while (n != TK__WHEEL_NONE) {
        uint32_t next = w->nodes[n].next;
        tk__wheel_node *nd = &w->nodes[n];
        if (nd->due < t) {
            unlink(w, n);
            uint32_t p = nd->payload;
            uint64_t due = nd->due;
            release(w, n);
            fn(ud, p, due);
        }
        n = next;
    }
}

void tk__wheel_advance(tk__wheel *w, uint64_t t,
                       void (*fn)(void *ud, uint32_t payload, uint64_t due), void *ud)
{
    if (w->heads[L_IMMEDIATE] != TK__WHEEL_NONE)
        expire_list(w, L_IMMEDIATE, UINT64_MAX, fn, ud);
    if (t <= w->clk)
        return;
    uint64_t tt = w->clk >> G0, t1 = (t - 1) >> G0;
    while (tt <= t1) {
        /* Entering a level-0 window whose higher-level slots were not yet
         * cascaded down. */
        if ((tt & (LVL_SIZE - 1)) == 0 && tt > w->casc_done)
            cascade(w, tt);
        uint64_t end = TK_MIN(t1, tt | (LVL_SIZE - 1));
        unsigned s = (unsigned)(tt & (LVL_SIZE - 1)), e = (unsigned)(end & (LVL_SIZE - 1));
        while (s <= e) {
            uint64_t word = w->occ0[s >> 6] >> (s & 63);
            if (!word) {
                s = (s | 63) + 1;
                continue;
            }
            s += (unsigned)__builtin_ctzll(word);
            if (s > e)
                break;
            expire_list(w, s, t, fn, ud);
            s++;
        }
        tt = end + 1;
    }
    w->clk = t;
}
