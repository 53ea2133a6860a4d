/*
 * hotmem.h - saving in a child process without copy-on-write stalls for
 * the memory the frame loop writes every frame.
 *
 * After fork() every page the parent writes while the save child still
 * shares it traps once and is copied (copy-on-write).  A world whose every
 * entity moves each frame writes all of its state pages in the first frame
 * after the fork: on a VM with slow page faults (~100 us each) that frame
 * lasts seconds.  Hot regions avoid it: just before the fork their bytes
 * are copied into a shadow (a shared mapping, reused from save to save, so
 * copying into it takes no fault) and the regions are marked MADV_DONTFORK;
 * the child moves the shadow's pages to the regions' addresses (mremap,
 * no copy), so it reads exactly what the parent had; the parent's own
 * pages were never shared and its writes never trap.
 *
 * Regions are page-aligned, whole pages, mapped by their owner (never
 * malloc memory: DONTFORK applies to whole mappings' pages).  The shadow
 * grows on a thread of its own (creating and touching new memory is slow on
 * such VMs too): tkd_hotmem_ready says when a save can use it.
 */
#ifndef TKD_HOTMEM_H
#define TKD_HOTMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

typedef struct tkd_hotmem tkd_hotmem;

tkd_hotmem *tkd_hotmem_new(void);
void tkd_hotmem_free(tkd_hotmem *h);

/*
 * Is the shadow big enough for `bytes` of regions?  If not, starts growing
 * it (to a margin above `bytes`) on a thread and answers false; call again
 * later (once per frame).  Never blocks.  True also once a shadow that big
 * could not be mapped: then tkd_hotmem_before_fork refuses, and the caller
 * forks as usual.
 */
bool tkd_hotmem_ready(tkd_hotmem *h, size_t bytes);

/*
 * Just before fork(): copy the regions into the shadow and mark them
 * MADV_DONTFORK.  used[i] (used may be NULL: all of it) is how many bytes
 * from the start of region i hold what the child reads: only those are
 * copied, the rest of the region reaches the child as garbage.  The copy is
 * shared with a helper thread from 4 MiB on (the caller's thread never waits
 * for more than the piece the helper is copying).  0, or -1 with err (then
 * nothing is marked: fork as usual).
 */
int tkd_hotmem_before_fork(tkd_hotmem *h, const struct iovec *regions, const size_t *used,
                           size_t n, char *err, size_t errlen);
/* In the child: the copies where the regions were.  0, or -1 (the child
 * must not read the regions then). */
int tkd_hotmem_in_child(tkd_hotmem *h);
/* In the parent after fork() (successful or not): the regions fork as usual
 * again. */
void tkd_hotmem_after_fork(tkd_hotmem *h);

#endif
