/*
 * snapshot.h - world.save / world.load: a versioned JSON document of the
 * whole world, written atomically and loaded all-or-nothing.
 *
 * Document (version 1):
 *   {"format": "tickd-snapshot", "version": 1, "saved_at": "<UTC time>",
 *    "world": {"frame", "world_time", "unpaused_time", "real_time",
 *              "time_dilation", "paused", "next_id"},
 *    "levels": ["persistent", ...],                  (creation order)
 *    "entities": [{"id", "class", "level", "time_dilation", "life_span",
 *                  "props", "tick": <fn>, "components": [{"class", "props",
 *                  "tick": <fn>}]}],
 *    "timers": [{"handle", "rate", "loop", "status", "remaining", "fired",
 *                "action"}],                          (protocol timers)
 *    "tickables": [{"id", "class", "tick_type", "enabled", "when_paused",
 *                   "ticks", "last_frame", "accum_dt", "props"}]}
 *   <fn> = tick spec fields + {"ticks", "last_frame", "last_dt", "accum_dt",
 *          "cooldown", "since_last_tick", "prerequisites": [{"id",
 *          "component"}]}
 *
 * Saving writes a temporary file in the same directory, fsyncs it, renames it
 * over the target and fsyncs the directory: a crash at any point leaves the
 * previous snapshot intact.  Loading parses and checks the whole document
 * (types, ranges, classes, props, references, duplicate ids, prerequisite
 * targets) before the world changes; an error names the JSON path at fault
 * ("$.entities[3].tick.group: ...") and changes nothing.
 */
#ifndef TICKD_SNAPSHOT_H
#define TICKD_SNAPSHOT_H

#include <jansson.h>

#include "daemon.h"

#define TKD_SNAPSHOT_VERSION 1

/* The document for the current world (new reference). */
json_t *tkd_snapshot_build(tkd *d);

/* Check a document completely and, if it is good, make the world what it
 * describes.  Returns 0, or a JSON-RPC code with `err` naming the path. */
int tkd_snapshot_apply(tkd *d, const json_t *doc, char *err, size_t errlen);

/* Save to `path` atomically.  Fills *info (new reference: path, bytes,
 * entities, timers, tickables).  Returns 0 or a JSON-RPC code. */
int tkd_snapshot_save(tkd *d, const char *path, json_t **info, char *err, size_t errlen);

/* Load `path` (TK_ENOENT-like -32001 if missing).  Same *info. */
int tkd_snapshot_load(tkd *d, const char *path, json_t **info, char *err, size_t errlen);

#endif
