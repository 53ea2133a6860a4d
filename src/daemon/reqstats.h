/*
 * reqstats.h - per-method request statistics: calls, errors by JSON-RPC
 * code, and time spent executing, for engine.stats ("methods") and the
 * Prometheus metrics.
 *
 * The dispatcher (tkd_exec in methods.c) records one sample per executed
 * request: the method's index in its table (or TKD_REQSTATS_UNKNOWN for a
 * name not in it), the error code it answered with (0 for a result) and the
 * nanoseconds it ran.  A request answered later (world.step, world.trace,
 * engine.sprint) counts the time of its dispatch only, and an error it
 * answers later is not counted here.  Timer actions go through the same
 * dispatcher and are counted like requests.
 *
 * What it deliberately does not do: allocate (a fixed table embedded in the
 * daemon), lock (the frame thread owns it), or know the method names (the
 * caller passes its table's names to the readers).
 */
#ifndef TICKD_DAEMON_REQSTATS_H
#define TICKD_DAEMON_REQSTATS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Methods counted by name; a table index past this counts as unknown. */
#define TKD_REQSTATS_MAX_METHODS 128
/* The bucket of method names not in the table. */
#define TKD_REQSTATS_UNKNOWN TKD_REQSTATS_MAX_METHODS
/* Its name in engine.stats and in the metrics' method label. */
#define TKD_REQSTATS_UNKNOWN_NAME "(unknown)"

/* Error codes counted one by one (PROTOCOL.md "Errors"), then "other". */
#define TKD_REQSTATS_NCODES 10

typedef struct tkd_reqstat {
    uint64_t calls;                        /* requests executed            */
    uint64_t errors;                       /* of them answered with an error */
    uint64_t by_code[TKD_REQSTATS_NCODES]; /* errors per code index        */
    uint64_t ns;                           /* ns, total time executing     */
    uint64_t max_ns;                       /* ns, the longest single one   */
    uint64_t slow;                         /* over [stats] slow_request_ms
                                              (counted by the caller)       */
} tkd_reqstat;

typedef struct tkd_reqstats {
    tkd_reqstat m[TKD_REQSTATS_MAX_METHODS + 1]; /* by method index; last: unknown */
} tkd_reqstats;

/* Count one request: `method` is a table index or TKD_REQSTATS_UNKNOWN (an
 * index past the table counts there too), `code` the JSON-RPC error code it
 * answered with or 0, `ns` its execution time. */
void tkd_reqstats_record(tkd_reqstats *rs, size_t method, int code, uint64_t ns);

/* Count a request of `method` as slow (over [stats] slow_request_ms). */
void tkd_reqstats_slow(tkd_reqstats *rs, size_t method);

/* The statistics of one method index (TKD_REQSTATS_UNKNOWN included). */
const tkd_reqstat *tkd_reqstats_get(const tkd_reqstats *rs, size_t method);

/* Index in by_code of an error code (codes not listed: the last, "other"),
 * and the code of an index (0 for "other"). */
size_t tkd_reqstats_code_index(int code);
int tkd_reqstats_code_at(size_t index);

/*
 * Visit every method called at least once, in table order, the unknown
 * bucket last: `names` is the NULL-terminated table of method names
 * (tkd_method_names()).
 */
typedef void (*tkd_reqstats_visit_fn)(void *ud, const char *name, const tkd_reqstat *st);
void tkd_reqstats_foreach(const tkd_reqstats *rs, const char *const *names,
                          tkd_reqstats_visit_fn fn, void *ud);

/* {"<name>": {"calls","errors","ms","max_ms","slow"?,"codes"?:{"<code>": n}}} for
 * every method called at least once (new reference; "codes" only when
 * there were errors). */
json_t *tkd_reqstats_json(const tkd_reqstats *rs, const char *const *names);

#endif
