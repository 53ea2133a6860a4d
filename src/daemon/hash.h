/*
 * hash.h - world.hash: a digest of the whole world, independent of how it
 * sits in memory, so that two worlds that will go on identically hash the
 * same (a world and the world restored from its snapshot; a run and its
 * replay from the journal).
 *
 * What it covers, in this canonical order (tickd-world-hash/1):
 *   time       frames completed, world, unpaused and real time (ns),
 *              dilation, pause, steps owed, whether the timer manager ticked
 *              in the last frame, its internal time
 *   counters   the next entity id, the timer serial and free slots, the
 *              tickables' free ids (what later handles and ids will be)
 *   levels     names in creation order
 *   entities   in id order: class, level, dilation, props (their values in
 *              the order the class declares them), and per tick function its spec, state,
 *              counters (ticks, last frame, last dt, accumulated dt),
 *              interval phase (cooldown, time since the last interval tick),
 *              custom dilation and prerequisites (entity, component); then
 *              its components the same way
 *   timers     in handle order: status, rate, loop, remaining, calls, owner,
 *              action; then the handles in tie order (equal expiries)
 *   tickables  in the order they tick: id, class, type, flags, counters,
 *              props
 * Numbers are hashed by their bits (a float's exact value), ids and names
 * as such, never a pointer, slot of storage or registration serial.  What
 * is derived again at each frame's start (actual tick groups, the cycle
 * flag) is left out.  A class's state beyond its declared props is not
 * seen (plugins: keep what matters in props).
 *
 * Each of the six sections (time with pause and steps, counters, levels,
 * entities, timers, tickables) is digested on its own and the whole is the
 * digest of those six, so a difference can be located (world.hash answers
 * them in "sections").  The digest is SipHash-1-3 with 128-bit output under
 * a fixed key over that encoding, in 64-bit words (names go in as their
 * FNV-1a digests): a checksum against accidental differences, not a
 * defence against forgery.
 *
 * Cost: a walk of the whole world on the frame thread, a few tenths of a
 * microsecond per entity (README, Performance): a hash of a world of a
 * million entities is a frame of a few hundred milliseconds.
 */
#ifndef TICKD_DAEMON_HASH_H
#define TICKD_DAEMON_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "daemon.h"

#define TKD_HASH_BYTES 16
#define TKD_HASH_HEX (TKD_HASH_BYTES * 2 + 1)

/* The digest of d's world now (frame thread, between frames or in the
 * frame hooks). */
void tkd_world_hash(tkd *d, uint8_t out[TKD_HASH_BYTES]);

/* The same, with each section's own digest (the whole is the digest of the
 * sections' digests in this order), to tell where two worlds differ. */
#define TKD_HASH_SECTIONS 6
extern const char *const tkd_hash_section_names[TKD_HASH_SECTIONS];
void tkd_world_hash_sections(tkd *d, uint8_t out[TKD_HASH_BYTES],
                             uint8_t sec[TKD_HASH_SECTIONS][TKD_HASH_BYTES]);

/* Lower-case hex, NUL-terminated. */
void tkd_hash_hex(const uint8_t h[TKD_HASH_BYTES], char out[TKD_HASH_HEX]);
/* Parse 32 hex digits: 0, or -1. */
int tkd_hash_parse(const char *hex, uint8_t out[TKD_HASH_BYTES]);

/* ---- the streaming digest (also for other uses: a key of one's own) ---- */

typedef struct tkd_sip {
    uint64_t v0, v1, v2, v3;
    uint64_t tail;    /* bytes not yet in a full word, little-endian */
    size_t ntail;     /* how many (0..7)                               */
    uint64_t len;     /* bytes in all                                  */
} tkd_sip;

void tkd_sip_init(tkd_sip *s, const uint8_t key[16]);
void tkd_sip_update(tkd_sip *s, const void *data, size_t n);
void tkd_sip_final(tkd_sip *s, uint8_t out[TKD_HASH_BYTES]);

#endif
