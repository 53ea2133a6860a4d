/*
 * config.c - the daemon's configuration table and everything that reads it
 * (see config.h for the file rules and the types).
 *
 * Loading never writes into the live config: a fresh tkd_config is built
 * (defaults, file, remembered overrides) and only a complete success is
 * moved into place, so a bad file changes nothing.  inih does the tokenizing;
 * it is fed through our own line reader (ini_parse_stream) because Debian's
 * inih is built without INI_HANDLER_LINENO: the reader counts physical lines,
 * catches lines longer than inih's buffer (which inih would otherwise split
 * into two lines silently), NUL bytes, and indented lines that inih would
 * take as a continuation of the previous value.
 *
 * What this file deliberately doesn't do: log (save a broken built-in
 * default, which aborts), or apply values to the engine; the caller does
 * both with what it gets back.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "common/sockpath.h"
#include "metrics.h"
#include "tickd/alloc.h"
#include "tickd/error.h"

/* A remembered command-line value. */
struct tkd_config_ovr {
    const tkd_config_key *key;  /* the row it sets                            */
    char *value;                /* text as given (owned)                      */
    char *origin;               /* "--tick-rate" (owned)                      */
};

#define F(field) offsetof(tkd_config, field)

/* The table: one row per key, in the order of config/tickd.ini. */
static const tkd_config_key keys[] = {
    {"instance", "name", TKD_CFG_PATH, "", 0, 0, false, F(instance_name), "",
     "The instance's name (tickd@NAME.service sets it): it prefixes every log "
     "line and engine.info shows it; empty = none."},

    {"engine", "tick_rate", TKD_CFG_DOUBLE, "60", 0, 10000, true, F(tick_rate),
     "Hz", "Max tick rate: a frame that finishes early sleeps until its period "
           "ends; 0 runs frames back to back."},
    {"engine", "fixed_dt", TKD_CFG_DOUBLE, "0", 0, 10, false, F(fixed_dt), "s",
     "Every frame advances by exactly this much time (deterministic runs); 0 "
     "uses the real elapsed time."},
    {"engine", "max_dt", TKD_CFG_DOUBLE, "0.4", 0, 10, true, F(max_dt), "s",
     "Clamp on one frame's real delta time after a stall; 0 = no clamp."},
    {"engine", "pacing", TKD_CFG_PACING, "steady", 0, 0, true, F(pacing), "",
     "steady keeps frame deadlines on a fixed grid, so a late frame is paid "
     "back and the average rate is the tick rate; unreal waits a period from "
     "the previous frame's start, as Unreal's MaxTickRate."},
    {"engine", "threads", TKD_CFG_UINT, "0", 0, 256, true, F(threads), "threads",
     "Threads that run ticks, the frame thread included: thread-safe classes "
     "and any_thread functions run on the others too; 1 = the frame thread "
     "only; 0 = one per online CPU."},
    {"engine", "split_min_us", TKD_CFG_DOUBLE, "50", 0.001, 1000000, true, F(split_min_us),
     "us",
     "A run of parallel ticks is split over the threads only when its expected "
     "work (measured) reaches this; smaller runs stay on the frame thread."},

    {"world", "levels", TKD_CFG_LIST, "persistent", 0, 0, false, F(levels), "",
     "Levels created at start; the level persistent always exists."},
    {"world", "time_dilation", TKD_CFG_DOUBLE, "1.0", 0.0001, 20, true,
     F(time_dilation), "factor",
     "Initial world time dilation: world dt = real dt x this."},
    {"world", "max_entities", TKD_CFG_UINT, "10000000", 1, 100000000, true,
     F(max_entities), "entities",
     "Cap on live entities; a spawn past it fails with limit exceeded."},
    {"world", "max_memory", TKD_CFG_BYTES, "0", 0, 1099511627776.0, true, F(max_memory),
     "bytes",
     "Past this resident memory, requests that grow the world (spawns, timers, "
     "tickables, loads...) are refused with limit exceeded; 0 = no limit."},
    {"world", "max_tick_functions", TKD_CFG_UINT, "20000000", 1, 1000000000, true,
     F(max_tick_functions), "tick functions",
     "Cap on registered tick functions (an entity's and each component's); a "
     "spawn past it fails with limit exceeded."},
    {"world", "max_template_bytes", TKD_CFG_BYTES, "67108864", 1024, 17179869184ull, true,
     F(max_template_bytes), "bytes",
     "Cap on the bytes of spawn templates held by spawner props (one copy per "
     "request); a spawn past it fails with limit exceeded."},

    {"control", "socket", TKD_CFG_PATH, "run/tickd.sock", 0, 0, false,
     F(socket), "", "Path of the JSON-RPC Unix socket."},
    {"control", "socket_mode", TKD_CFG_MODE, "0660", 0, 0777, false,
     F(socket_mode), "octal",
     "Permission bits of the socket file; world-writable modes are refused."},
    {"control", "readonly_socket", TKD_CFG_PATH, "", 0, 0, false, F(readonly_socket), "",
     "A second socket whose clients may only read (stats, lists, gets, traces, "
     "events); empty = none."},
    {"control", "readonly_socket_mode", TKD_CFG_MODE, "0660", 0, 0777, false,
     F(readonly_socket_mode), "octal", "Permission bits of the read-only socket file."},
    {"control", "max_clients", TKD_CFG_UINT, "256", 1, 65535, true,
     F(max_clients), "connections",
     "Connections served at once; one more is told so and closed."},
    {"control", "max_line", TKD_CFG_BYTES, "1048576", 64, 1073741824, true,
     F(max_line), "bytes",
     "Longest request line; a longer one is refused and its connection "
     "closed."},
    {"control", "max_pending", TKD_CFG_UINT, "16384", 1, 1000000, true,
     F(max_pending), "requests",
     "Requests queued per client before new ones are refused (batch "
     "members count one each)."},
    {"control", "max_batch", TKD_CFG_UINT, "10000", 1, 1000000, true,
     F(max_batch), "requests", "Requests in one JSON-RPC batch."},
    {"control", "max_input", TKD_CFG_BYTES, "67108864", 65536, 1073741824, true,
     F(max_input), "bytes",
     "Bytes of a client's requests held at once (queued, not yet executed); "
     "past it new requests are refused with limit exceeded."},
    {"control", "request_budget_ms", TKD_CFG_DOUBLE, "4", 0.1, 10000, true,
     F(request_budget_ms), "ms",
     "Time spent running queued requests at the start of a frame; the rest "
     "wait, in order, for the idle time after it or the next frame."},
    {"control", "idle_timeout_s", TKD_CFG_DOUBLE, "300", 0, 86400, true,
     F(idle_timeout_s), "s",
     "A client that sent nothing, is owed nothing and subscribes to no event "
     "for this long is disconnected; 0 = never."},
    {"control", "line_timeout_s", TKD_CFG_DOUBLE, "10", 0, 86400, true,
     F(line_timeout_s), "s",
     "A request line must be complete this long after its first byte arrived, "
     "else the client is told so and disconnected; 0 = no limit."},
    {"control", "max_output", TKD_CFG_BYTES, "16777216", 65536, 1073741824,
     true, F(max_output), "bytes",
     "A client's unsent output: events are dropped past it, and a client "
     "whose replies alone exceed it is disconnected."},

    {"stats", "slow_tick_ms", TKD_CFG_DOUBLE, "5", 0, 60000, true,
     F(slow_tick_ms), "ms",
     "A tick function running longer than this raises a slow_tick event; 0 = "
     "off."},
    {"stats", "slow_request_ms", TKD_CFG_DOUBLE, "10", 0, 60000, true,
     F(slow_request_ms), "ms",
     "A request or timer action running longer than this raises a "
     "slow_request event and is counted per method; 0 = off."},
    {"stats", "lag_warn_ms", TKD_CFG_DOUBLE, "250", 1, 600000, true,
     F(lag_warn_ms), "ms",
     "Log a warning (at most one per 15 s) naming what was slow once the loop "
     "runs this far behind its tick rate."},

    {"snapshot", "path", TKD_CFG_PATH, "run/tickd.snapshot.json", 0, 0, false,
     F(snapshot_path), "", "Default file of world.save and world.load."},
    {"snapshot", "dir", TKD_CFG_PATH, "", 0, 0, false, F(snapshot_dir), "",
     "The only directory world.save and world.load use; empty = the "
     "directory of path."},
    {"snapshot", "save_on_exit", TKD_CFG_BOOL, "false", 0, 0, false,
     F(save_on_exit), "", "Save a snapshot on graceful shutdown."},
    {"snapshot", "load_on_start", TKD_CFG_BOOL, "false", 0, 0, false,
     F(load_on_start), "", "Load the snapshot at start."},
    {"snapshot", "autosave_s", TKD_CFG_DOUBLE, "0", 0, 86400, true,
     F(autosave_s), "s", "Save a snapshot this often; 0 = never."},

    {"journal", "path", TKD_CFG_PATH, "", 0, 0, false, F(journal_path), "",
     "The command journal: changes are appended here and replayed on the "
     "snapshot at start; empty = none."},
    {"journal", "fsync", TKD_CFG_FSYNC, "everysec", 0, 0, true, F(journal_fsync), "",
     "When the journal is synced to disk: always (before each reply), "
     "everysec or no (Redis's appendfsync)."},
    {"journal", "hash_every", TKD_CFG_UINT, "600", 0, 4000000000.0, true,
     F(journal_hash_every), "frames",
     "Record world.hash in the journal this often, for replays to check; 0 = never."},
    {"journal", "rewrite_mb", TKD_CFG_BYTES, "64m", 0, 1099511627776.0, true,
     F(journal_rewrite_bytes), "bytes",
     "A journal this big starts a snapshot (which starts a new journal); 0 = "
     "only autosaves and world.save."},

    {"plugins", "load", TKD_CFG_LIST, "", 0, 0, false, F(plugins), "",
     "Shared objects whose entity classes are registered at start."},

    {"metrics", "listen", TKD_CFG_LIST, "", 0, 0, false, F(metrics_listen), "",
     "Addresses serving /metrics and /healthz over HTTP: IP:PORT, [IPv6]:PORT, "
     "localhost:PORT, unix:/path or /path; empty = off."},
    {"metrics", "healthz_min_tps", TKD_CFG_DOUBLE, "-1", -1, 100000, true,
     F(metrics_healthz_min_tps), "TPS",
     "/healthz answers 503 while TPS over the last second is below this; "
     "negative = half the tick rate, 0 = no floor."},
    {"metrics", "healthz_stall_s", TKD_CFG_DOUBLE, "5", 0.1, 3600, true,
     F(metrics_healthz_stall_s), "s",
     "/healthz answers 503 when no frame started for this long (at least two "
     "frame periods)."},
    {"metrics", "max_connections", TKD_CFG_UINT, "16", 1, 1024, true,
     F(metrics_max_connections), "connections",
     "HTTP connections served at once; more wait in the listen backlog."},

    {"agones", "enabled", TKD_CFG_BOOL, "false", 0, 0, false, F(agones_enabled), "",
     "Drive the Agones GameServer lifecycle through the SDK server's REST API "
     "even without AGONES_SDK_HTTP_PORT (which turns it on by itself)."},
    {"agones", "port", TKD_CFG_UINT, "9358", 1, 65535, false, F(agones_port), "port",
     "The SDK server's HTTP port on 127.0.0.1 when AGONES_SDK_HTTP_PORT is not "
     "set."},
    {"agones", "health_period_s", TKD_CFG_DOUBLE, "2", 0.05, 3600, true,
     F(agones_health_period_s), "s",
     "POST /health this often, from the frame loop after completed frames; keep "
     "it well under the Fleet's health periodSeconds."},
    {"agones", "metadata_s", TKD_CFG_DOUBLE, "30", 0, 86400, true, F(agones_metadata_s), "s",
     "Write TPS and the entity count to the GameServer's annotations (or labels) "
     "this often when they changed; 0 = never."},
    {"agones", "labels", TKD_CFG_BOOL, "false", 0, 0, false, F(agones_labels), "",
     "Write tps and entities as GameServer labels instead of annotations."},
    {"agones", "timeout_s", TKD_CFG_DOUBLE, "5", 0.05, 600, true, F(agones_timeout_s), "s",
     "Bound on connecting to the SDK server and on each wait for its answer."},
    {"agones", "retry_max_s", TKD_CFG_DOUBLE, "5", 0.1, 600, true, F(agones_retry_max_s), "s",
     "Longest delay between two tries of POST /ready or of the watch (backoff "
     "from 0.1 s, doubling)."},

    {"log", "level", TKD_CFG_LEVEL, "info", 0, 0, true, F(log_level), "",
     "Messages above this level are dropped: error, warn, info or debug."},
};

#undef F

#define NKEYS (sizeof keys / sizeof keys[0])

/* Longest value text quoted in an error message. */
#define ERR_VALUE_MAX 80

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

const char *tkd_config_type_name(tkd_config_type t)
{
    switch (t) {
    case TKD_CFG_DOUBLE: return "double";
    case TKD_CFG_UINT: return "uint";
    case TKD_CFG_BYTES: return "bytes";
    case TKD_CFG_BOOL: return "bool";
    case TKD_CFG_PATH: return "path";
    case TKD_CFG_MODE: return "mode";
    case TKD_CFG_LIST: return "list";
    case TKD_CFG_LEVEL: return "level";
    case TKD_CFG_PACING: return "pacing";
    case TKD_CFG_FSYNC: return "fsync";
    }
    return "unknown";
}

const tkd_config_key *tkd_config_keys(size_t *n)
{
    if (n)
        *n = NKEYS;
    return keys;
}

const tkd_config_key *tkd_config_find(const char *section, const char *name)
{
    if (!section || !name)
        return NULL;
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0 &&
            strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static bool section_known(const char *section)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].section, section) == 0)
            return true;
    return false;
}

/* The row named `name` in any section (for "did you mean" hints). */
static const tkd_config_key *find_any_section(const char *name)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(keys[i].name, name) == 0)
            return &keys[i];
    return NULL;
}

static size_t key_index(const tkd_config_key *k) { return (size_t)(k - keys); }

static void *field(tkd_config *c, const tkd_config_key *k)
{
    return (char *)c + k->offset;
}

static const void *cfield(const tkd_config *c, const tkd_config_key *k)
{
    return (const char *)c + k->offset;
}

/* Size of the field a type is stored in. */
static size_t type_size(tkd_config_type t)
{
    switch (t) {
    case TKD_CFG_DOUBLE: return sizeof(double);
    case TKD_CFG_UINT: return sizeof(unsigned);
    case TKD_CFG_BYTES: return sizeof(size_t);
    case TKD_CFG_BOOL: return sizeof(bool);
    case TKD_CFG_PATH: return sizeof(char *);
    case TKD_CFG_MODE: return sizeof(unsigned);
    case TKD_CFG_LIST: return sizeof(tkd_strlist);
    case TKD_CFG_LEVEL: return sizeof(tk_log_level);
    case TKD_CFG_PACING: return sizeof(tk_pacing);
    case TKD_CFG_FSYNC: return sizeof(tkd_fsync);
    }
    return 0;
}

static void strlist_free(tkd_strlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        tk_free(l->items[i]);
    tk_free(l->items);
    l->items = NULL;
    l->count = 0;
}

/* Free what a field owns (strings, lists) and zero it. */
static void field_release(tkd_config *c, const tkd_config_key *k)
{
    if (k->type == TKD_CFG_PATH) {
        char **p = field(c, k);
        tk_free(*p);
        *p = NULL;
    } else if (k->type == TKD_CFG_LIST) {
        strlist_free(field(c, k));
    }
}

/* Exchange the field of `k` between two configs (ownership moves with it). */
static void field_swap(tkd_config *a, tkd_config *b, const tkd_config_key *k)
{
    unsigned char tmp[sizeof(tkd_strlist) > sizeof(double)
                          ? sizeof(tkd_strlist)
                          : sizeof(double)];
    size_t n = type_size(k->type);
    memcpy(tmp, field(a, k), n);
    memcpy(field(a, k), field(b, k), n);
    memcpy(field(b, k), tmp, n);
}

/* Shortest text of `v` that reads back as exactly `v`: integers plainly
 * ("60", not "6e+01"), other values with the fewest "%.*g" digits. */
static void fmt_double(double v, char *buf, size_t len)
{
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, len, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static void vfmt_msg(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
}

static void fmt_msg(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fmt_msg(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfmt_msg(err, errlen, fmt, ap);
    va_end(ap);
}

/*
 * "<where>: [section] key = value: <reason>", the one shape of every error
 * about a key.  `where` is "file:line" or an override's origin; a NULL
 * value leaves out " = value"; long values are cut with "...".
 */
static void key_error(char *err, size_t errlen, const char *where,
                      const char *section, const char *name, const char *value,
                      const char *reason)
{
    if (!value) {
        fmt_msg(err, errlen, "%s: [%s] %s: %s", where, section, name, reason);
        return;
    }
    int vlen = (int)strlen(value);
    const char *ell = "";
    if (vlen > ERR_VALUE_MAX) {
        vlen = ERR_VALUE_MAX;
        ell = "...";
    }
    fmt_msg(err, errlen, "%s: [%s] %s = %.*s%s: %s", where, section, name,
            vlen, value, ell, reason);
}

/* ------------------------------------------------------------------------ */
/* Parsing values                                                           */
/* ------------------------------------------------------------------------ */

/* A parsed value, before it is stored (validation before any change). */
typedef union parsed {
    double d;
    unsigned u;
    size_t z;
    bool b;
    char *s;                    /* owned until stored                         */
    tkd_strlist l;              /* owned until stored                         */
    tk_log_level lv;
    tk_pacing pc;
    tkd_fsync fs;
} parsed;

static void range_reason(const tkd_config_key *k, char *reason, size_t len)
{
    if (k->type == TKD_CFG_MODE) {
        snprintf(reason, len, "out of range [%04o, %04o]", (unsigned)k->min,
                 (unsigned)k->max);
        return;
    }
    char lo[32], hi[32];
    fmt_double(k->min, lo, sizeof lo);
    fmt_double(k->max, hi, sizeof hi);
    snprintf(reason, len, "out of range [%s, %s]", lo, hi);
}

/* Decimal digits only, into a uint64 (saturating at UINT64_MAX on overflow).
 * Returns the first byte after the digits, or NULL if there is none. */
static const char *parse_digits(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    const char *p = s;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            v = UINT64_MAX;
        else
            v = v * 10 + d;
        p++;
    }
    if (p == s)
        return NULL;
    *out = v;
    return p;
}

/* Multiplier of a bytes suffix ("", k, kb, kib, m, ...), 0 if unknown. */
static uint64_t bytes_suffix(const char *s)
{
    static const struct {
        const char *name;
        uint64_t mul;
    } suffixes[] = {
        {"", 1},
        {"k", 1ull << 10}, {"kb", 1ull << 10}, {"kib", 1ull << 10},
        {"m", 1ull << 20}, {"mb", 1ull << 20}, {"mib", 1ull << 20},
        {"g", 1ull << 30}, {"gb", 1ull << 30}, {"gib", 1ull << 30},
    };
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++)
        if (strcasecmp(s, suffixes[i].name) == 0)
            return suffixes[i].mul;
    return 0;
}

static bool is_blank(char ch) { return ch == ' ' || ch == '\t'; }

/* Split a list value on commas, trimming items.  "" is the empty list. */
static int parse_list(const char *v, tkd_strlist *out, char *reason,
                      size_t rlen)
{
    tkd_strlist l = {NULL, 0};
    if (*v == '\0') {
        *out = l;
        return 0;
    }
    size_t n = 1;
    for (const char *p = v; *p; p++)
        n += *p == ',';
    l.items = tk_calloc(n, sizeof *l.items);
    const char *p = v;
    for (size_t i = 0; i < n; i++) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        if (a == b) {
            snprintf(reason, rlen, "item %zu of the list is empty", i + 1);
            strlist_free(&l);
            return TK_EINVAL;
        }
        /* ';' and '#' start comments in an ini file: an item holding one could
         * not be written back and read the same. */
        if (memchr(a, ';', (size_t)(b - a)) || memchr(a, '#', (size_t)(b - a))) {
            snprintf(reason, rlen, "item %zu of the list contains ';' or '#'", i + 1);
            strlist_free(&l);
            return TK_EINVAL;
        }
        char *item = tk_malloc((size_t)(b - a) + 1);
        memcpy(item, a, (size_t)(b - a));
        item[b - a] = '\0';
        l.items[l.count++] = item;
        p = *end ? end + 1 : end;
    }
    *out = l;
    return 0;
}

/*
 * Parse `v` (already trimmed) as the type of `k` into `out`, checking the
 * range.  On error fills `reason` and returns TK_EINVAL; `out` then holds
 * nothing to free.
 */
static int parse_value(const tkd_config_key *k, const char *v, parsed *out,
                       char *reason, size_t rlen)
{
    for (const char *p = v; *p; p++) {
        if ((unsigned char)*p < 0x20 && *p != '\t') {
            snprintf(reason, rlen, "contains a control character");
            return TK_EINVAL;
        }
        if (*p == ';' && (p == v || is_blank(p[-1]))) {
            snprintf(reason, rlen,
                     "contains a ';' that an ini file reads as a comment");
            return TK_EINVAL;
        }
    }
    /* A path whose default is empty is optional: empty = none. */
    if (*v == '\0' && k->type != TKD_CFG_LIST && !(k->type == TKD_CFG_PATH && !*k->def)) {
        snprintf(reason, rlen, "empty value");
        return TK_EINVAL;
    }

    switch (k->type) {
    case TKD_CFG_DOUBLE: {
        char *end;
        double d = strtod(v, &end); /* overflow gives inf, refused below */
        if (end == v || *end != '\0') {
            snprintf(reason, rlen, "not a number");
            return TK_EINVAL;
        }
        if (!isfinite(d)) {
            snprintf(reason, rlen, "not a finite number");
            return TK_EINVAL;
        }
        if (d < k->min || d > k->max) {
            range_reason(k, reason, rlen);
            return TK_EINVAL;
        }
        out->d = d == 0 ? 0.0 : d; /* "-0" reads as 0 */
        return 0;
    }
    case TKD_CFG_UINT:
    case TKD_CFG_BYTES: {
        uint64_t n;
        const char *end = parse_digits(v, &n);
        uint64_t mul = 1;
        if (end && *end != '\0')
            mul = k->type == TKD_CFG_BYTES ? bytes_suffix(end) : 0;
        if (!end || mul == 0) {
            if (k->type == TKD_CFG_BYTES)
                snprintf(reason, rlen,
                         "not a byte count (digits, optionally followed by "
                         "k, m or g)");
            else
                snprintf(reason, rlen, "not an unsigned integer");
            return TK_EINVAL;
        }
        if (n > UINT64_MAX / mul)
            n = UINT64_MAX;
        else
            n *= mul;
        if ((double)n < k->min || (double)n > k->max) {
            range_reason(k, reason, rlen);
            return TK_EINVAL;
        }
        if (k->type == TKD_CFG_UINT)
            out->u = (unsigned)n;
        else
            out->z = (size_t)n;
        return 0;
    }
    case TKD_CFG_BOOL: {
        static const char *const yes[] = {"true", "yes", "on", "1"};
        static const char *const no[] = {"false", "no", "off", "0"};
        for (size_t i = 0; i < 4; i++) {
            if (strcasecmp(v, yes[i]) == 0) {
                out->b = true;
                return 0;
            }
            if (strcasecmp(v, no[i]) == 0) {
                out->b = false;
                return 0;
            }
        }
        snprintf(reason, rlen,
                 "not a boolean (true/false, yes/no, on/off, 1/0)");
        return TK_EINVAL;
    }
    case TKD_CFG_PATH:
        if (!strcmp(k->section, "instance") && *v && !tk__world_name_valid(v, reason, rlen))
            return TK_EINVAL;
        out->s = tk_strdup(v);
        return 0;
    case TKD_CFG_MODE: {
        unsigned long m = 0;
        size_t n = strlen(v);
        if (n > 6 || strspn(v, "01234567") != n) {
            snprintf(reason, rlen, "not an octal mode (e.g. 0660)");
            return TK_EINVAL;
        }
        m = strtoul(v, NULL, 8);
        if ((double)m < k->min || (double)m > k->max) {
            range_reason(k, reason, rlen);
            return TK_EINVAL;
        }
        if (m & 02) {
            snprintf(reason, rlen, "world-writable mode (o+w) is not allowed");
            return TK_EINVAL;
        }
        out->u = (unsigned)m;
        return 0;
    }
    case TKD_CFG_LIST:
        if (parse_list(v, &out->l, reason, rlen) != 0)
            return TK_EINVAL;
        for (size_t i = 0; !strcmp(k->section, "metrics") && i < out->l.count; i++) {
            if (tkd_metrics_check_listen(out->l.items[i], reason, rlen) != 0) {
                strlist_free(&out->l);
                return TK_EINVAL;
            }
        }
        return 0;
    case TKD_CFG_LEVEL:
        if (tk_log_level_parse(v, &out->lv) != 0) {
            snprintf(reason, rlen,
                     "not a log level (error, warn, info, debug)");
            return TK_EINVAL;
        }
        return 0;
    case TKD_CFG_PACING:
        if (tk_pacing_parse(v, &out->pc) != 0) {
            snprintf(reason, rlen, "not a pacing (unreal, steady)");
            return TK_EINVAL;
        }
        return 0;
    case TKD_CFG_FSYNC:
        if (tkd_fsync_parse(v, &out->fs) != 0) {
            snprintf(reason, rlen, "not an fsync policy (always, everysec, no)");
            return TK_EINVAL;
        }
        return 0;
    }
    snprintf(reason, rlen, "key of unknown type");
    return TK_EINVAL;
}

/* Store a parsed value into `c`, releasing the previous one. */
static void store_value(tkd_config *c, const tkd_config_key *k, parsed *pv)
{
    void *f = field(c, k);
    field_release(c, k);
    switch (k->type) {
    case TKD_CFG_DOUBLE: *(double *)f = pv->d; break;
    case TKD_CFG_UINT:
    case TKD_CFG_MODE: *(unsigned *)f = pv->u; break;
    case TKD_CFG_BYTES: *(size_t *)f = pv->z; break;
    case TKD_CFG_BOOL: *(bool *)f = pv->b; break;
    case TKD_CFG_PATH: *(char **)f = pv->s; break;
    case TKD_CFG_LIST: *(tkd_strlist *)f = pv->l; break;
    case TKD_CFG_LEVEL: *(tk_log_level *)f = pv->lv; break;
    case TKD_CFG_PACING: *(tk_pacing *)f = pv->pc; break;
    case TKD_CFG_FSYNC: *(tkd_fsync *)f = pv->fs; break;
    }
}

/* Copy `v` without leading and trailing blanks (inih trims file values the
 * same way, so overrides and file lines read alike).  Caller frees. */
static char *trimmed_copy(const char *v)
{
    while (is_blank(*v))
        v++;
    size_t n = strlen(v);
    while (n > 0 && is_blank(v[n - 1]))
        n--;
    char *s = tk_malloc(n + 1);
    memcpy(s, v, n);
    s[n] = '\0';
    return s;
}

/* Parse and store; on error `c` is unchanged and `reason` says why. */
static int apply_value(tkd_config *c, const tkd_config_key *k,
                       const char *value, char *reason, size_t rlen)
{
    char *v = trimmed_copy(value);
    parsed pv;
    int rc = parse_value(k, v, &pv, reason, rlen);
    tk_free(v);
    if (rc == 0)
        store_value(c, k, &pv);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Formatting                                                               */
/* ------------------------------------------------------------------------ */

/* Append `n` bytes at *pos as far as `len` allows (one byte is kept for the
 * NUL); *pos counts everything, written or not, as snprintf does. */
static void put(char *buf, size_t len, size_t *pos, const char *s, size_t n)
{
    if (*pos + 1 < len) {
        size_t room = len - 1 - *pos;
        memcpy(buf + *pos, s, n < room ? n : room);
    }
    *pos += n;
}

size_t tkd_config_format(const tkd_config *c, const tkd_config_key *k,
                         char *buf, size_t len)
{
    char tmp[64] = "";
    const void *f = cfield(c, k);
    const char *s = tmp;
    size_t pos = 0;
    switch (k->type) {
    case TKD_CFG_DOUBLE:
        fmt_double(*(const double *)f, tmp, sizeof tmp);
        break;
    case TKD_CFG_UINT:
        snprintf(tmp, sizeof tmp, "%u", *(const unsigned *)f);
        break;
    case TKD_CFG_BYTES:
        snprintf(tmp, sizeof tmp, "%zu", *(const size_t *)f);
        break;
    case TKD_CFG_BOOL:
        s = *(const bool *)f ? "true" : "false";
        break;
    case TKD_CFG_PATH:
        s = *(char *const *)f ? *(char *const *)f : "";
        break;
    case TKD_CFG_MODE:
        snprintf(tmp, sizeof tmp, "%04o", *(const unsigned *)f);
        break;
    case TKD_CFG_LEVEL:
        s = tk_log_level_name(*(const tk_log_level *)f);
        break;
    case TKD_CFG_PACING:
        s = tk_pacing_name(*(const tk_pacing *)f);
        break;
    case TKD_CFG_FSYNC:
        s = tkd_fsync_name(*(const tkd_fsync *)f);
        break;
    case TKD_CFG_LIST: {
        const tkd_strlist *l = f;
        for (size_t i = 0; i < l->count; i++) {
            if (i)
                put(buf, len, &pos, ", ", 2);
            put(buf, len, &pos, l->items[i], strlen(l->items[i]));
        }
        s = "";
        break;
    }
    }
    put(buf, len, &pos, s, strlen(s));
    if (len > 0)
        buf[pos < len ? pos : len - 1] = '\0';
    return pos;
}

/* The canonical text in a new buffer (caller frees). */
static char *format_alloc(const tkd_config *c, const tkd_config_key *k)
{
    size_t n = tkd_config_format(c, k, NULL, 0);
    char *s = tk_malloc(n + 1);
    tkd_config_format(c, k, s, n + 1);
    return s;
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                */
/* ------------------------------------------------------------------------ */

void tkd_config_init(tkd_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < NKEYS; i++) {
        char reason[128];
        if (apply_value(c, &keys[i], keys[i].def, reason, sizeof reason) != 0) {
            /* A bad default is a bug in the table above, never user input. */
            tk_log_error("config: default of [%s] %s = %s: %s",
                         keys[i].section, keys[i].name, keys[i].def, reason);
            abort();
        }
    }
}

static void overrides_free(tkd_config *c)
{
    for (size_t i = 0; i < c->n_overrides; i++) {
        tk_free(c->overrides[i].value);
        tk_free(c->overrides[i].origin);
    }
    tk_free(c->overrides);
    c->overrides = NULL;
    c->n_overrides = 0;
}

void tkd_config_free(tkd_config *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < NKEYS; i++)
        field_release(c, &keys[i]);
    overrides_free(c);
    tk_free(c->path);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------------------ */
/* Setting one key                                                          */
/* ------------------------------------------------------------------------ */

/* Lookup with the error message of an unknown section or key. */
static const tkd_config_key *lookup(const char *where, const char *section,
                                    const char *name, const char *value,
                                    char *err, size_t errlen)
{
    const tkd_config_key *k = tkd_config_find(section, name);
    if (k)
        return k;
    if (!section_known(section)) {
        key_error(err, errlen, where, section, name, value, "unknown section");
        return NULL;
    }
    const tkd_config_key *other = find_any_section(name);
    if (other) {
        char reason[96];
        snprintf(reason, sizeof reason, "unknown key (%s is in [%s])", name,
                 other->section);
        key_error(err, errlen, where, section, name, value, reason);
    } else {
        key_error(err, errlen, where, section, name, value, "unknown key");
    }
    return NULL;
}

int tkd_config_set(tkd_config *c, const char *section, const char *key,
                   const char *value, const char *origin, char *err,
                   size_t errlen)
{
    if (!origin)
        origin = "set";
    if (!c || !section || !key || !value) {
        fmt_msg(err, errlen, "%s: missing section, key or value", origin);
        return TK_EINVAL;
    }
    const tkd_config_key *k = lookup(origin, section, key, value, err, errlen);
    if (!k)
        return TK_ENOENT;
    char reason[160];
    if (apply_value(c, k, value, reason, sizeof reason) != 0) {
        key_error(err, errlen, origin, section, key, value, reason);
        return TK_EINVAL;
    }
    return 0;
}

int tkd_config_override(tkd_config *c, const char *section, const char *key,
                        const char *value, const char *origin, char *err,
                        size_t errlen)
{
    int rc = tkd_config_set(c, section, key, value, origin, err, errlen);
    if (rc != 0)
        return rc;
    const tkd_config_key *k = tkd_config_find(section, key);
    tkd_config_ovr *o = NULL;
    for (size_t i = 0; i < c->n_overrides; i++)
        if (c->overrides[i].key == k)
            o = &c->overrides[i];
    if (o) {
        tk_free(o->value);
        tk_free(o->origin);
    } else {
        c->overrides = tk_realloc(c->overrides,
                                  (c->n_overrides + 1) * sizeof *c->overrides);
        o = &c->overrides[c->n_overrides++];
        o->key = k;
    }
    o->value = tk_strdup(value);
    o->origin = tk_strdup(origin ? origin : "set");
    return 0;
}

int tkd_config_override_arg(tkd_config *c, const char *arg, const char *origin,
                            char *err, size_t errlen)
{
    if (!origin)
        origin = "set";
    const char *dot = arg ? strchr(arg, '.') : NULL;
    const char *eq = dot ? strchr(dot + 1, '=') : NULL;
    if (!dot || !eq || dot == arg || eq == dot + 1) {
        fmt_msg(err, errlen, "%s: '%s': expected section.key=value", origin,
                arg ? arg : "");
        return TK_EINVAL;
    }
    char *section = tk_malloc((size_t)(dot - arg) + 1);
    memcpy(section, arg, (size_t)(dot - arg));
    section[dot - arg] = '\0';
    char *name = tk_malloc((size_t)(eq - dot));
    memcpy(name, dot + 1, (size_t)(eq - dot - 1));
    name[eq - dot - 1] = '\0';
    int rc = tkd_config_override(c, section, name, eq + 1, origin, err, errlen);
    tk_free(section);
    tk_free(name);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Reading a file                                                           */
/* ------------------------------------------------------------------------ */

/* State shared by the line reader and the inih handler. */
typedef struct parse_ctx {
    tkd_config *cfg;            /* the fresh config being filled              */
    const char *file;           /* name used in messages                      */
    FILE *fp;
    char *line;                 /* getline buffer (owned)                     */
    size_t cap;                 /* bytes allocated for `line`                 */
    int lineno;                 /* physical line last handed to inih (1-based)*/
    bool indented;              /* that line starts with a blank              */
    int read_errno;             /* errno of a failed read, 0 = none           */
    char prev_name[64];         /* last key of the current section ("" after
                                   a header): inih's continuation target     */
    int set_at[NKEYS];          /* line that set each key, 0 = not set        */
    int err_line;               /* line of our first error, 0 = none          */
    char *err;                  /* message buffer of the caller               */
    size_t errlen;
} parse_ctx;

/*
 * inih's fgets-style reader: hands inih one physical line at a time, so
 * inih's line count equals ours.  A line that would not fit inih's `num`
 * bytes (it would split it into two) or that holds a NUL byte is recorded as
 * an error and replaced by an empty line.
 */
static char *reader(char *str, int num, void *stream)
{
    parse_ctx *x = stream;
    errno = 0;
    ssize_t n = getline(&x->line, &x->cap, x->fp);
    if (n < 0) {
        if (ferror(x->fp))
            x->read_errno = errno ? errno : EIO;
        return NULL;
    }
    x->lineno++;
    const char *why = NULL;
    char reason[96];
    size_t content = (size_t)n;
    while (content > 0 &&
           (x->line[content - 1] == '\n' || x->line[content - 1] == '\r'))
        content--;
    /* inih wants room for "\r\n\0" after the longest line. */
    if (content + 3 > (size_t)num || (size_t)n + 1 > (size_t)num) {
        snprintf(reason, sizeof reason,
                 "line too long (at most %d characters)", num - 3);
        why = reason;
    } else if (strlen(x->line) != (size_t)n) {
        why = "line contains a NUL byte";
    }
    if (why) {
        if (!x->err_line) {
            x->err_line = x->lineno;
            fmt_msg(x->err, x->errlen, "%s:%d: %s", x->file, x->lineno, why);
        }
        x->indented = false;
        strcpy(str, "\n");
        return str;
    }
    x->indented = is_blank(x->line[0]);
    const char *p = x->line;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '[') {
        x->prev_name[0] = '\0';
        /* A section is checked where it starts: one with no keys at all is
         * still a mistake (inih never calls the handler for it). */
        const char *end = strchr(p + 1, ']');
        size_t len = end ? (size_t)(end - (p + 1)) : 0;
        char name[64];
        if (end && !x->err_line && len < sizeof name) {
            memcpy(name, p + 1, len);
            name[len] = '\0';
        }
        if (end && !x->err_line && (len >= sizeof name || !section_known(name))) {
            x->err_line = x->lineno;
            fmt_msg(x->err, x->errlen, "%s:%d: [%.*s]: unknown section", x->file, x->lineno,
                    (int)(len < 100 ? len : 100), p + 1);
        }
    }
    memcpy(str, x->line, (size_t)n + 1);
    return str;
}

/* Record our first error at the current line; returns 0 for inih. */
static int handler_error(parse_ctx *x, const char *where, const char *section,
                         const char *name, const char *value,
                         const char *reason)
{
    x->err_line = x->lineno;
    key_error(x->err, x->errlen, where, section, name, value, reason);
    return 0;
}

/*
 * inih's handler: a lookup in the table, then a parse into the fresh config.
 * Returns 0 (inih notes the line) on our first error, which is kept in
 * x->err; later calls do nothing, so the first error wins.
 */
static int handler(void *user, const char *section, const char *name,
                   const char *value)
{
    parse_ctx *x = user;
    if (x->err_line)
        return 1;

    char where[512];
    snprintf(where, sizeof where, "%s:%d", x->file, x->lineno);
    bool continuation = x->indented && x->prev_name[0] &&
                        strcmp(name, x->prev_name) == 0;
    snprintf(x->prev_name, sizeof x->prev_name, "%s", name);
    if (continuation)
        return handler_error(x, where, section, name, value,
                             "indented line read as a continuation of the "
                             "previous value (start keys in column 1)");
    if (section[0] == '\0') {
        x->err_line = x->lineno;
        fmt_msg(x->err, x->errlen, "%s: %s = %s: key outside of any [section]",
                where, name, value);
        return 0;
    }
    const tkd_config_key *k =
        lookup(where, section, name, value, x->err, x->errlen);
    if (!k) {
        x->err_line = x->lineno;
        return 0;
    }
    size_t i = key_index(k);
    char reason[160];
    if (x->set_at[i]) {
        snprintf(reason, sizeof reason, "set twice (first at line %d)",
                 x->set_at[i]);
        return handler_error(x, where, section, name, value, reason);
    }
    if (apply_value(x->cfg, k, value, reason, sizeof reason) != 0)
        return handler_error(x, where, section, name, value, reason);
    x->set_at[i] = x->lineno;
    return 1;
}

/* Text of physical line `lineno` of the open file (for syntax errors). */
static void line_text(parse_ctx *x, int lineno, char *buf, size_t len)
{
    buf[0] = '\0';
    if (fseek(x->fp, 0, SEEK_SET) != 0)
        return;
    for (int i = 1; i <= lineno; i++) {
        if (getline(&x->line, &x->cap, x->fp) < 0)
            return;
    }
    char *s = x->line;
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strcspn(s, "\r\n");
    if (n >= len)
        n = len - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
}

/*
 * Fill `fresh` (already holding defaults) from the file at `path`.  Returns
 * 0 or an error with the message in `err`.
 */
static int parse_file(tkd_config *fresh, const char *path, char *err,
                      size_t errlen)
{
    parse_ctx *x = tk_calloc(1, sizeof *x);
    x->cfg = fresh;
    x->file = path;
    x->err = err;
    x->errlen = errlen;
    int rc = 0;
    x->fp = fopen(path, "r");
    if (!x->fp) {
        int e = errno;
        fmt_msg(err, errlen, "%s: cannot open: %s", path, strerror(e));
        rc = e == ENOENT ? TK_ENOENT : TK_EIO;
        goto out;
    }
    int line = ini_parse_stream(reader, x, handler, x);
    if (x->read_errno) {
        fmt_msg(err, errlen, "%s:%d: read error: %s", path, x->lineno + 1,
                strerror(x->read_errno));
        rc = TK_EIO;
    } else if (line > 0 && (!x->err_line || line < x->err_line)) {
        /* inih's own complaint: a line that is neither a [section], a
         * key = value nor a comment. */
        char text[ERR_VALUE_MAX + 1];
        line_text(x, line, text, sizeof text);
        fmt_msg(err, errlen,
                "%s:%d: syntax error: '%s' is not a [section], key = value "
                "or comment",
                path, line, text);
        rc = TK_EINVAL;
    } else if (x->err_line) {
        rc = TK_EINVAL;
    } else if (line < 0) {
        fmt_msg(err, errlen, "%s: the ini parser failed (%d)", path, line);
        rc = TK_EIO;
    }
out:
    if (x->fp)
        fclose(x->fp);
    free(x->line); /* getline's buffer comes from malloc */
    tk_free(x);
    return rc;
}

/*
 * Build defaults + file (if path) + c's remembered overrides into `fresh`.
 * On error `fresh` is freed and `c` untouched.
 */
static int build_fresh(const tkd_config *c, const char *path,
                       tkd_config *fresh, char *err, size_t errlen)
{
    tkd_config_init(fresh);
    int rc = 0;
    if (path)
        rc = parse_file(fresh, path, err, errlen);
    for (size_t i = 0; rc == 0 && i < c->n_overrides; i++) {
        const tkd_config_ovr *o = &c->overrides[i];
        rc = tkd_config_set(fresh, o->key->section, o->key->name, o->value,
                            o->origin, err, errlen);
    }
    if (rc != 0)
        tkd_config_free(fresh);
    return rc;
}

int tkd_config_load(tkd_config *c, const char *path, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!c || !path) {
        fmt_msg(err, errlen, "config: no file given");
        return TK_EINVAL;
    }
    tkd_config fresh;
    int rc = build_fresh(c, path, &fresh, err, errlen);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < NKEYS; i++)
        field_swap(c, &fresh, &keys[i]);
    tk_free(c->path);
    c->path = tk_strdup(path);
    tkd_config_free(&fresh);
    return 0;
}

/* A change found by reload, kept until every value is in place. */
typedef struct change {
    const tkd_config_key *key;
    char *old_text, *new_text;  /* owned                                      */
    bool needs_restart;
} change;

int tkd_config_reload(tkd_config *c, const char *path, tkd_config_change_fn fn,
                      void *ud, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!c) {
        fmt_msg(err, errlen, "config: no config");
        return TK_EINVAL;
    }
    if (!path)
        path = c->path;
    char *path_copy = path ? tk_strdup(path) : NULL; /* path may be c->path */
    tkd_config fresh;
    int rc = build_fresh(c, path_copy, &fresh, err, errlen);
    if (rc != 0) {
        tk_free(path_copy);
        return rc;
    }

    change changes[NKEYS];
    size_t nchanges = 0;
    int applied = 0;
    for (size_t i = 0; i < NKEYS; i++) {
        const tkd_config_key *k = &keys[i];
        char *o = format_alloc(c, k), *n = format_alloc(&fresh, k);
        if (strcmp(o, n) == 0) {
            tk_free(o);
            tk_free(n);
            continue;
        }
        changes[nchanges++] = (change){k, o, n, !k->reloadable};
        if (k->reloadable) {
            field_swap(c, &fresh, k);
            applied++;
        }
    }
    tk_free(c->path);
    c->path = path_copy;
    tkd_config_free(&fresh);

    for (size_t i = 0; i < nchanges; i++) {
        if (fn)
            fn(ud, changes[i].key, changes[i].old_text, changes[i].new_text,
               changes[i].needs_restart);
        tk_free(changes[i].old_text);
        tk_free(changes[i].new_text);
    }
    return applied;
}

/* ------------------------------------------------------------------------ */
/* Dumps                                                                    */
/* ------------------------------------------------------------------------ */

static const char *override_origin(const tkd_config *c,
                                   const tkd_config_key *k)
{
    for (size_t i = 0; i < c->n_overrides; i++)
        if (c->overrides[i].key == k)
            return c->overrides[i].origin;
    return NULL;
}

const char *tkd_config_origin(const tkd_config *c, const char *section, const char *name)
{
    const tkd_config_key *k = tkd_config_find(section, name);
    return k ? override_origin(c, k) : NULL;
}

void tkd_config_foreach(const tkd_config *c, tkd_config_visit_fn fn, void *ud)
{
    for (size_t i = 0; i < NKEYS; i++) {
        char *v = format_alloc(c, &keys[i]);
        fn(ud, &keys[i], v, override_origin(c, &keys[i]));
        tk_free(v);
    }
}

/* `k = v` as one config line that the reader takes (at most INI_MAX_LINE - 3
 * characters), or NULL. */
static char *config_line(const tkd_config *c, const tkd_config_key *k)
{
    char *v = format_alloc(c, k);
    char *line = NULL;
    if (strlen(k->name) + 3 + strlen(v) <= INI_MAX_LINE - 3) {
        line = tk_malloc(strlen(k->name) + 3 + strlen(v) + 1);
        sprintf(line, "%s = %s", k->name, v);
    } else {
        /* Compact: no spaces around '=' nor after the list commas. */
        size_t w = 0;
        for (size_t r = 0; v[r]; r++)
            if (!(k->type == TKD_CFG_LIST && v[r] == ' ' && r > 0 && v[r - 1] == ','))
                v[w++] = v[r];
        v[w] = '\0';
        if (strlen(k->name) + 1 + w <= INI_MAX_LINE - 3) {
            line = tk_malloc(strlen(k->name) + 1 + w + 1);
            sprintf(line, "%s=%s", k->name, v);
        }
    }
    tk_free(v);
    return line;
}

int tkd_config_write(const tkd_config *c, FILE *out)
{
    char *lines[NKEYS];
    for (size_t i = 0; i < NKEYS; i++) {
        lines[i] = config_line(c, &keys[i]);
        if (!lines[i]) {
            while (i-- > 0)
                tk_free(lines[i]);
            return TK_ELIMIT;
        }
    }
    const char *section = NULL;
    for (size_t i = 0; i < NKEYS; i++) {
        const tkd_config_key *k = &keys[i];
        if (!section || strcmp(section, k->section) != 0) {
            fprintf(out, "%s[%s]\n", section ? "\n" : "", k->section);
            section = k->section;
        }
        const char *origin = override_origin(c, k);
        if (origin)
            fprintf(out, "; from %s\n", origin);
        fprintf(out, "%s\n", lines[i]);
        tk_free(lines[i]);
    }
    return fflush(out) == 0 && !ferror(out) ? 0 : TK_EIO;
}
