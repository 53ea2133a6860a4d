/*
 * config.h - the daemon's configuration: one table of keys, read from an INI
 * file (inih), from command-line overrides, and again on SIGHUP.
 *
 * Every key lives in one table row (Redis's standardConfig): section, name,
 * type, default (the text an ini file would hold), min/max, reloadable flag,
 * the offset of its field in tkd_config, unit and a one-sentence help.  Every
 * consumer goes through that table: the ini handler is a lookup in it,
 * command-line overrides and SIGHUP reload use it, and so do dumps
 * (--check-config, --help, engine.info).  Adding a key means adding a field
 * and a row, nothing else.
 *
 * Rules of the file format (a strict reading: tickd refuses to start rather
 * than run on a config it misread):
 *  - `[section]` headers and `key = value` lines; `;` or `#` at the start of a
 *    line and ` ;` after a value start comments (inih's inline comments need
 *    whitespace before the `;`: `a = x;y` is the value "x;y").
 *  - `key = ; comment` and `key =` give the empty value: an empty list, an
 *    error for every other type ("empty value").
 *  - An unknown section or key, a value that does not parse or is out of
 *    range, a key set twice, a key before any section, an indented line
 *    (inih would read it as a continuation of the previous value), a line
 *    longer than inih's line buffer, and inih's own syntax errors are all
 *    errors.  The first error in file order wins; its message names file,
 *    line, section, key and value:
 *        config/tickd.ini:12: [engine] tick_rate = abc: not a number
 *  - Keys and section names are case-sensitive; bool words are not.
 *
 * Types:
 *   double  decimal or exponent notation, finite
 *   uint    decimal digits only (no sign), fits the range
 *   bytes   a uint with an optional binary suffix: k/kb/kib, m/mb/mib,
 *           g/gb/gib (case-insensitive, all powers of 1024)
 *   bool    true/false, yes/no, on/off, 1/0 (case-insensitive)
 *   path    any non-empty text
 *   mode    octal digits (0660); a world-writable mode (o+w) is an error
 *   list    comma-separated items, each trimmed; an empty item is an error,
 *           an empty value is the empty list
 *   level   error, warn (or warning), info, debug
 *   pacing  unreal, steady (tickd/engine.h's tk_pacing)
 *   fsync   always, everysec, no (journal.h's tkd_fsync)
 *
 * Every value also has a canonical text (what tkd_config_format() prints and
 * what reload compares): doubles in their shortest round-trip form, bytes as
 * a plain number, modes as 4 octal digits, lists joined with ", ".
 *
 * What this module deliberately doesn't do: apply values (the caller reads
 * the struct and pushes changes into the engine, the server and the logger),
 * log (it returns messages), or know about argv syntax (main.c maps
 * `--tick-rate 30` to tkd_config_override(c, "engine", "tick_rate", "30",
 * "--tick-rate", ...)).  Not thread-safe: the frame thread owns the config.
 */
#ifndef TICKD_DAEMON_CONFIG_H
#define TICKD_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "tickd/engine.h"
#include "tickd/log.h"
#include "journal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A list value: owned, trimmed, non-empty strings. */
typedef struct tkd_strlist {
    char **items;               /* `count` strings, owned by the list        */
    size_t count;               /* 0 = empty list (items may be NULL)        */
} tkd_strlist;

/* Private: a remembered command-line override. */
typedef struct tkd_config_ovr tkd_config_ovr;

typedef struct tkd_config {
    /* [instance] */
    char *instance_name;        /* this instance's name (owned); ""/NULL: none */
    /* [engine] */
    double tick_rate;           /* Hz, max tick rate; 0 = unlimited           */
    double fixed_dt;            /* s per frame; 0 = real time                 */
    double max_dt;              /* s, clamp on one frame's real dt; 0 = none  */
    tk_pacing pacing;           /* how frame deadlines are placed             */
    unsigned threads;           /* threads that run ticks; 0 = online CPUs    */
    double split_min_us;        /* us of expected parallel work worth a split */
    /* [world] */
    tkd_strlist levels;         /* level names created at start               */
    double time_dilation;       /* factor, initial world time dilation        */
    unsigned max_entities;      /* entities, cap on live entities             */
    size_t max_memory;          /* bytes of RSS past which growth is refused  */
    unsigned max_tick_functions; /* tick functions registered at once          */
    size_t max_template_bytes;  /* bytes of spawn templates held by props     */
    /* [control] */
    char *socket;               /* path of the control socket (owned)         */
    unsigned socket_mode;       /* permission bits of the socket file         */
    char *readonly_socket;      /* path of the read-only socket ("" = none)   */
    unsigned readonly_socket_mode; /* its permission bits                     */
    unsigned max_clients;       /* connections at once                        */
    size_t max_line;            /* bytes, longest request line                */
    unsigned max_pending;       /* requests queued per client                 */
    unsigned max_batch;         /* requests in one JSON-RPC batch             */
    size_t max_output;          /* bytes of unsent output per client          */
    size_t max_input;           /* bytes of held requests per client          */
    double request_budget_ms;   /* ms of queued requests run per frame start  */
    double idle_timeout_s;      /* s before an idle client is closed; 0 = off */
    double line_timeout_s;      /* s for a partial line to complete; 0 = off  */
    /* [stats] */
    double slow_tick_ms;        /* ms, slow_tick event threshold; 0 = off     */
    double slow_request_ms;     /* ms, slow_request event threshold; 0 = off  */
    double lag_warn_ms;         /* ms behind before "can't keep up" is logged */
    /* [snapshot] */
    char *snapshot_path;        /* default path of world.save/load (owned)    */
    char *snapshot_dir;         /* where saves and loads may go (owned; ""/NULL:
                                   the directory of snapshot_path)            */
    bool save_on_exit;          /* save a snapshot on graceful shutdown       */
    bool load_on_start;         /* load the snapshot (if present) at start    */
    double autosave_s;          /* s between automatic saves; 0 = never       */
    /* [journal] */
    char *journal_path;         /* the command journal ("" = none) (owned)    */
    tkd_fsync journal_fsync;    /* always, everysec, no (Redis's appendfsync) */
    unsigned journal_hash_every; /* frames between recorded world hashes; 0 = none */
    size_t journal_rewrite_bytes; /* journal size that starts a snapshot; 0 = never */
    /* [plugins] */
    tkd_strlist plugins;        /* shared objects with entity classes         */
    /* [metrics] */
    tkd_strlist metrics_listen; /* HTTP addresses of /metrics; empty = off    */
    double metrics_healthz_min_tps; /* TPS floor of /healthz; < 0 = half the
                                       tick rate, 0 = none                   */
    double metrics_healthz_stall_s; /* s without a frame start: unhealthy     */
    unsigned metrics_max_connections; /* HTTP connections at once            */
    /* [agones] */
    bool agones_enabled;        /* drive Agones without AGONES_SDK_HTTP_PORT  */
    unsigned agones_port;       /* SDK server's HTTP port when the variable is
                                   unset                                      */
    double agones_health_period_s; /* s between POST /health pings           */
    double agones_metadata_s;   /* s between TPS/entity metadata; 0 = never   */
    bool agones_labels;         /* metadata as labels, not annotations        */
    double agones_timeout_s;    /* s, bound on connect and each wait          */
    double agones_retry_max_s;  /* s, longest retry backoff                   */
    /* [log] */
    tk_log_level log_level;     /* messages above this level are dropped      */

    /* Bookkeeping, maintained by this module. */
    char *path;                 /* file last loaded (owned); NULL = none      */
    tkd_config_ovr *overrides;  /* remembered command-line values (owned) */
    size_t n_overrides;         /* entries in `overrides`                     */
} tkd_config;

typedef enum tkd_config_type {
    TKD_CFG_DOUBLE = 0,
    TKD_CFG_UINT,
    TKD_CFG_BYTES,
    TKD_CFG_BOOL,
    TKD_CFG_PATH,
    TKD_CFG_MODE,
    TKD_CFG_LIST,
    TKD_CFG_LEVEL,
    TKD_CFG_PACING,
    TKD_CFG_FSYNC
} tkd_config_type;

/* One row of the table.  Rows are static and live as long as the process. */
typedef struct tkd_config_key {
    const char *section;        /* "engine"                                   */
    const char *name;           /* "tick_rate"                                */
    tkd_config_type type;
    const char *def;            /* default, as the ini file would hold it     */
    double min, max;            /* inclusive range of numbers and modes       */
    bool reloadable;            /* SIGHUP applies a new value                 */
    size_t offset;              /* offsetof(tkd_config, <field>)              */
    const char *unit;           /* "Hz", "s", "bytes"... ("" when none)       */
    const char *help;           /* one sentence                               */
} tkd_config_key;

/* "double", "uint", "bytes", "bool", "path", "mode", "list", "level",
 * "pacing", "fsync". */
const char *tkd_config_type_name(tkd_config_type t);

/* The table, in the order of the shipped file; `*n` receives its length. */
const tkd_config_key *tkd_config_keys(size_t *n);

/* The row for section/name, or NULL. */
const tkd_config_key *tkd_config_find(const char *section, const char *name);

/*
 * Fill `c` with the defaults of every row; no file, no overrides.  Always
 * succeeds (the table's defaults are checked by the tests).  Pair with
 * tkd_config_free().
 */
void tkd_config_init(tkd_config *c);

/* Free everything `c` owns and leave it zeroed (a second free is a no-op). */
void tkd_config_free(tkd_config *c);

/*
 * Replace every value of `c` by: defaults, then the file at `path`, then the
 * remembered command-line overrides.  On success `c->path` becomes `path`.
 * On any error nothing in `c` changes, and `err` (if errlen > 0) receives one
 * line naming file, line, section, key and value.  Returns 0, TK_ENOENT (no
 * such file), TK_EIO (cannot read it) or TK_EINVAL (the file is wrong).
 */
int tkd_config_load(tkd_config *c, const char *path, char *err, size_t errlen);

/*
 * Parse `value` for section/key and store it in `c`.  `origin` names where
 * the value came from for messages ("--tick-rate", "engine.set"); NULL reads
 * "set".  Validation comes first: on error `c` is unchanged, `err` gets
 * "<origin>: [section] key = value: <reason>" and TK_EINVAL is returned
 * (TK_ENOENT for an unknown section or key).  Not remembered: a later load
 * or reload replaces it.
 */
int tkd_config_set(tkd_config *c, const char *section, const char *key,
                   const char *value, const char *origin, char *err,
                   size_t errlen);

/*
 * As tkd_config_set, and remember the value so that it wins over the file,
 * now and after every later load or reload (a command-line flag).  Setting
 * the same key again replaces the remembered value.
 */
int tkd_config_override(tkd_config *c, const char *section, const char *key,
                        const char *value, const char *origin, char *err,
                        size_t errlen);

/*
 * tkd_config_override from one "section.key=value" argument (a generic
 * `--set engine.tick_rate=30` flag).  Malformed text is TK_EINVAL.
 */
int tkd_config_override_arg(tkd_config *c, const char *arg, const char *origin,
                            char *err, size_t errlen);

/*
 * Called by tkd_config_reload for each key whose canonical text differs.
 * `needs_restart` is set for a key that is not reloadable: its new value was
 * NOT applied and takes effect at the next start.  Texts are only valid
 * during the call.  When it is called, `c` already holds every applied value.
 */
typedef void (*tkd_config_change_fn)(void *ud, const tkd_config_key *key,
                                     const char *old_text,
                                     const char *new_text, bool needs_restart);

/*
 * SIGHUP: read `path` (NULL: c->path; both NULL: defaults only) into a fresh
 * config (defaults + file + the remembered overrides).  On error nothing
 * changes and the error is returned as by tkd_config_load.  Otherwise the
 * reloadable keys that changed are copied into `c`, then `fn` (may be NULL)
 * is called for every changed key in table order, the non-reloadable ones
 * with needs_restart.  Returns the number of keys applied (>= 0).
 */
int tkd_config_reload(tkd_config *c, const char *path, tkd_config_change_fn fn,
                      void *ud, char *err, size_t errlen);

/*
 * The canonical text of `key`'s value in `c`, written as snprintf would
 * (always NUL-terminated when len > 0).  Returns the full length it needed.
 */
size_t tkd_config_format(const tkd_config *c, const tkd_config_key *key,
                         char *buf, size_t len);

/*
 * The origin of the command-line override that set section/name ("--set",
 * "--tick-rate"), or NULL when the value comes from the file or the
 * default (or the key is unknown).  Messages about a value (a plugin that
 * does not load) name it, so a flag is never blamed on the file.
 */
const char *tkd_config_origin(const tkd_config *c, const char *section, const char *name);

/*
 * Visit every key in table order with its canonical value and, when a
 * command-line override set it, that override's origin (else NULL).  Texts
 * are only valid during the call.
 */
typedef void (*tkd_config_visit_fn)(void *ud, const tkd_config_key *key,
                                    const char *value, const char *origin);
void tkd_config_foreach(const tkd_config *c, tkd_config_visit_fn fn, void *ud);

/*
 * Write `c` as an ini file that loads back to the same values: one section
 * after the other, one `key = value` line per key, and a `; from <origin>`
 * comment line above overridden keys; a line that would be longer than inih
 * reads is written compact (`key=a,b`).  Returns 0, TK_ELIMIT (nothing
 * written) if a value is too long even so (only an override can be), or
 * TK_EIO.
 */
int tkd_config_write(const tkd_config *c, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
