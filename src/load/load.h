/*
 * load.h - the pieces of tickd-load, the load generator of tickd, shared
 * between its source files.  Not installed, not part of libtickd.
 *
 * tickd-load replays a scenario (a JSON Lines file of timed requests and
 * checks) against a running tickd over several connections, open-loop: every
 * request goes out at its intended time whatever happened to the ones before
 * it, and its latency is measured from that intended time, so a stalled
 * daemon shows as latency instead of hiding behind a slowed-down sender
 * (no coordinated omission).  Meanwhile it watches the daemon through a
 * separate monitor connection subscribed to the `frame` and `stats` events.
 *
 * It is built from the files of src/load against jansson and libm only: no
 * libevent, no libtickd (it includes tickd/tickd.h for TICKD_VERSION alone).
 * The modules:
 *   util.c      allocation that must succeed, growable buffer, clock
 *   hist.c      log-linear histogram for latency and frame-time percentiles
 *   scenario.c  reading and validating a scenario file
 *   pool.c      ids saved from responses, "$name" references in params
 *   expect.c    the matchers of "expect" (paths and comparison operators)
 *   net.c       non-blocking Unix stream connections, line framing
 *   run.c       the run: schedule, dispatch, responses, monitor, time series
 *   report.c    text report, --json, --csv, --slo
 *   svg.c       --svg: the chart of MSPT and entity count over time
 *   main.c      options, --help, exit status
 *
 * Exit statuses: 0 the run went through, every check passed and no SLO was
 * broken; 1 an SLO was broken or a check failed; 2 a usage error (options,
 * scenario file) or a connection error (cannot connect, connection lost,
 * run interrupted).
 */
#ifndef TICKD_LOAD_LOAD_H
#define TICKD_LOAD_LOAD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define TK_LOAD_EXIT_OK    0 /* run complete, checks passed, SLOs kept */
#define TK_LOAD_EXIT_FAIL  1 /* an SLO broken or a check failed */
#define TK_LOAD_EXIT_USAGE 2 /* bad options or scenario; connection error */

#define TK_LOAD_NS_PER_S        1000000000LL
#define TK_LOAD_MAX_CONNECTIONS 256 /* tickd's default control.max_clients */

/* ---- util.c ------------------------------------------------------------ */

/* Report running out of memory on stderr and exit with status 2.  Also used
 * when jansson returns NULL from a constructor (its only failure is OOM). */
__attribute__((noreturn)) void tk__load_oom(void);

/* malloc/calloc/realloc/strdup that never return NULL (they call
 * tk__load_oom).  Free with free(). */
void *tk__load_xmalloc(size_t n);
void *tk__load_xcalloc(size_t n, size_t size);
void *tk__load_xrealloc(void *p, size_t n);
char *tk__load_xstrdup(const char *s);

/* printf into a fresh heap string owned by the caller (free()); never NULL. */
char *tk__load_strf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable byte buffer.  Zero-initialise it; free with tk__load_buf_free.
 * The data is kept NUL-terminated after every append (one spare byte). */
typedef struct tk_load_buf {
    char *data; /* bytes; NUL-terminated at data[len] once anything was added */
    size_t len; /* bytes in use (without the NUL) */
    size_t cap; /* bytes allocated */
} tk_load_buf_t;

/* Make room for `extra` more bytes plus the NUL (doubling growth). */
void tk__load_buf_reserve(tk_load_buf_t *b, size_t extra);
/* Append `n` bytes / a NUL-terminated string / printf-formatted text. */
void tk__load_buf_append(tk_load_buf_t *b, const void *p, size_t n);
void tk__load_buf_puts(tk_load_buf_t *b, const char *s);
void tk__load_buf_printf(tk_load_buf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Release the memory; the buffer is empty and reusable afterwards. */
void tk__load_buf_free(tk_load_buf_t *b);

/* Nanoseconds on CLOCK_MONOTONIC. */
uint64_t tk__load_now_ns(void);

/* ---- hist.c ------------------------------------------------------------ */

/*
 * A histogram of non-negative integer samples (nanoseconds here) with
 * log-linear buckets: values below 256 are exact, larger ones fall in one of
 * 128 buckets per power of two, so a percentile read back is within 0.4% of
 * the true sample (HdrHistogram's idea with two significant digits).  The
 * count, min, max and sum are exact.  Memory: 7424 counters (58 KiB),
 * allocated by tk__load_hist_init.
 */
#define TK_LOAD_HIST_BUCKETS 7424

typedef struct tk_load_hist {
    uint64_t *counts; /* TK_LOAD_HIST_BUCKETS counters */
    uint64_t n;       /* samples */
    uint64_t min;     /* smallest sample (UINT64_MAX when empty) */
    uint64_t max;     /* largest sample (0 when empty) */
    double sum;       /* sum of the samples, for the mean */
    int lo, hi;       /* range of buckets touched since the last reset */
} tk_load_hist_t;

void tk__load_hist_init(tk_load_hist_t *h);
void tk__load_hist_free(tk_load_hist_t *h);
/* Forget every sample (cost proportional to the buckets touched). */
void tk__load_hist_reset(tk_load_hist_t *h);
void tk__load_hist_add(tk_load_hist_t *h, uint64_t v);
/* The sample at percentile `p` (0 < p <= 100): the smallest bucket value
 * with at least ceil(p% of n) samples at or below it, clamped to [min, max];
 * p = 100 is the exact max.  0 when empty (check h->n). */
uint64_t tk__load_hist_pct(const tk_load_hist_t *h, double p);
/* Mean (0 when empty). */
double tk__load_hist_mean(const tk_load_hist_t *h);

/* Summary figures of a histogram of nanoseconds, in milliseconds. */
typedef struct tk_load_pct {
    uint64_t n;                          /* samples */
    double avg, min, p50, p95, p99, max; /* ms; all 0 when n is 0 */
} tk_load_pct_t;

tk_load_pct_t tk__load_hist_summary_ms(const tk_load_hist_t *h);

/* ---- expect.c ---------------------------------------------------------- */

/* One compiled matcher: a path into the result and what it must satisfy. */
typedef struct tk_load_match {
    char *path;     /* "entities", "mspt.p99", "ids[0]", "levels.#" */
    json_t *want;   /* a literal (deep equality, numbers by value) or an
                       object of operators {"==","!=","<","<=",">",">=",
                       "exists"} all of which must hold */
    bool operators; /* `want` is an operator object */
} tk_load_match_t;

/* What a response must look like: a result that passes every matcher, or
 * (error_code != 0) an error with that code. */
typedef struct tk_load_expect {
    tk_load_match_t *m; /* matchers on the result */
    size_t nm;          /* how many */
    long long error;    /* expected error code; 0 = a result is expected */
} tk_load_expect_t;

/*
 * Compile the "result"/"error" members of an "expect" object (other members
 * are the caller's business and ignored here).  Returns 0, or -1 with a
 * heap sentence in *err naming the member at fault (caller frees); on
 * failure `out` holds nothing to free.
 */
int tk__load_expect_compile(const json_t *expect, tk_load_expect_t *out, char **err);
void tk__load_expect_free(tk_load_expect_t *e);
/* Check a response object; true when it matches, else false with a heap
 * sentence in *why (caller frees) saying what differed. */
bool tk__load_expect_eval(const tk_load_expect_t *e, const json_t *response, char **why);
/* Syntax check of a path; NULL if good, else a static reason. */
const char *tk__load_path_check(const char *path);
/* Look a path up in `root`: a borrowed value, or NULL if a step is missing.
 * A "#" step stands for the length of an array, object or string; it
 * yields a new integer stored in *tmp (caller json_decref's *tmp). */
json_t *tk__load_path_get(json_t *root, const char *path, json_t **tmp);

/* ---- pool.c ------------------------------------------------------------ */

/* A range of consecutive ids [first, first + count). */
typedef struct tk_load_range {
    uint64_t first; /* first id */
    uint64_t count; /* ids in the range (> 0) */
} tk_load_range_t;

/* The ids saved under one name, oldest first. */
typedef struct tk_load_pool {
    char *name;         /* without the "$" */
    tk_load_range_t *r; /* ranges, oldest first */
    size_t nr, cap;     /* ranges in use / allocated */
    uint64_t n;         /* ids in the pool */
    uint64_t saved;     /* ids ever saved (for the report) */
} tk_load_pool_t;

typedef struct tk_load_pools {
    tk_load_pool_t *p; /* pools in order of first mention */
    size_t n, cap;     /* in use / allocated */
} tk_load_pools_t;

/* The pool named `name`, created empty if new. */
tk_load_pool_t *tk__load_pool_get(tk_load_pools_t *ps, const char *name);
void tk__load_pools_free(tk_load_pools_t *ps);
/*
 * Save the ids a successful result names: "ids" (array of integers),
 * "first" + "count", "id" or "handle".  Returns how many ids were saved.
 */
uint64_t tk__load_pool_save(tk_load_pool_t *p, const json_t *result);

/*
 * Check the syntax of every string in `v` that starts with "$" (a reference;
 * "$$..." is an escaped literal, not a reference) and call `seen(arg, name)`
 * for each reference's pool name (`seen` may be NULL).  Returns the number of
 * references, or -1 with a heap sentence in *err naming the JSON path of the
 * bad string.  `v` is not modified.
 */
int tk__load_refs_scan(json_t *v, void (*seen)(void *arg, const char *name), void *arg, char **err);

/*
 * A copy of `params` with every reference replaced by ids from `ps`:
 * "$name" -> array of all its ids, "$name[i]" -> one id (negative i counts
 * from the newest), "$name[a:b]" -> array of ids a..b-1 (Python slice
 * rules; a, b optional and may be negative); "$$text" -> "$text".  With
 * `consume`, the ids used are removed from their pools.  Returns the new value, or NULL when a
 * reference resolves to nothing (empty pool, index out of range, empty
 * slice): then nothing is consumed and *why holds a heap sentence.
 */
json_t *tk__load_refs_render(tk_load_pools_t *ps, const json_t *params, bool consume, char **why);

/* ---- scenario.c -------------------------------------------------------- */

typedef enum tk_load_line_kind {
    TK_LOAD_REQUEST, /* {"at","method",...}: load, measured */
    TK_LOAD_CHECK,   /* {"at","expect":{"method",...}}: an assertion */
    TK_LOAD_END      /* {"at","end":true}: the scenario's end */
} tk_load_line_kind_t;

/* One timed line of a scenario (request or check). */
typedef struct tk_load_line {
    tk_load_line_kind_t kind; /* request or check (END lines are not kept) */
    int lineno;               /* 1-based line in the file */
    int64_t at_ns;            /* first instance, ns after the start */
    int64_t every_ns;         /* ns between instances (0: all at once) */
    uint64_t count;           /* instances (1 without "repeat") */
    int conn;                 /* request connection index, -1 = round robin */
    char *method;             /* JSON-RPC method */
    json_t *params;           /* params object, or NULL for none */
    int nrefs;                /* references ("$name") in params */
    char *prefix;             /* without refs: the request text up to the id,
                                 `{"jsonrpc":"2.0","method":..,"params":..,"id":` */
    char *save;               /* pool name results are saved to, or NULL */
    bool consume;             /* references consume the ids they use */
    bool has_expect;          /* `expect` applies to every response */
    tk_load_expect_t expect;  /* what responses must look like */
} tk_load_line_t;

typedef struct tk_load_scenario {
    char *path;            /* the file read */
    char *name;            /* "scenario" of the header, else the file's stem */
    char *description;     /* "description" of the header, or NULL */
    int connections;       /* "connections" of the header, 0 = not given */
    int64_t end_ns;        /* the end line's time, -1 = none */
    tk_load_line_t *lines; /* request and check lines, in file order */
    size_t nlines;
    int64_t last_ns;   /* intended time of the last instance of any line */
    uint64_t requests; /* instances of request lines */
    uint64_t checks;   /* instances of check lines */
} tk_load_scenario_t;

/*
 * Read and validate a scenario file.  Every line is a JSON object, or blank,
 * or a comment starting with "#".  Unknown members, wrong types, values out
 * of range and references to pools no line saves are errors.  Returns 0, or
 * -1 with a heap message "PATH:LINE: what" in *err; `sc` then holds nothing.
 */
int tk__load_scenario_read(const char *path, tk_load_scenario_t *sc, char **err);
void tk__load_scenario_free(tk_load_scenario_t *sc);
/* Intended time of instance k of a line, ns after the start. */
int64_t tk__load_line_time(const tk_load_line_t *l, uint64_t k);

/* ---- net.c ------------------------------------------------------------- */

/* One connection to tickd: a non-blocking socket with an output queue and a
 * line reader.  Caller-allocated; tk__load_conn_open fills it. */
typedef struct tk_load_conn {
    int fd;            /* non-blocking stream socket, -1 when closed */
    tk_load_buf_t out; /* queued bytes; [out_off, out.len) not yet sent */
    size_t out_off;    /* bytes of `out` already sent */
    tk_load_buf_t in;  /* received bytes; [in_start, in.len) unconsumed */
    size_t in_start;   /* first unconsumed byte */
    size_t in_scan;    /* offset up to which no '\n' was found */
    bool eof;          /* the peer closed its side */
    int err;           /* errno of the last failure, 0 if none */
} tk_load_conn_t;

/*
 * Connect to the Unix socket `path`, retrying a full listen queue until
 * `deadline_ns` (CLOCK_MONOTONIC).  Returns 0, or -1 with a heap sentence in
 * *err; the connection is then closed.
 */
int tk__load_conn_open(tk_load_conn_t *c, const char *path, uint64_t deadline_ns, char **err);
void tk__load_conn_close(tk_load_conn_t *c);
/* Queue bytes for sending (tk__load_conn_flush sends them). */
void tk__load_conn_queue(tk_load_conn_t *c, const char *p, size_t n);
/* Bytes queued and not yet sent. */
size_t tk__load_conn_pending(const tk_load_conn_t *c);
/* Send what the socket takes now.  0, or -1 (peer gone: c->err). */
int tk__load_conn_flush(tk_load_conn_t *c);
/* Read what has arrived.  0, or -1 on a read error (c->err); end of stream
 * sets c->eof and returns 0 (lines already received stay readable). */
int tk__load_conn_fill(tk_load_conn_t *c);
/* The next complete line (without "\n" or "\r\n"): 1 with *line and *len set
 * (valid until the next fill), or 0 when none is buffered. */
int tk__load_conn_line(tk_load_conn_t *c, const char **line, size_t *len);
/*
 * Send one request line and wait until `deadline_ns` for the response whose
 * id is `id`.  Notifications met meanwhile go to `on_note` (may be NULL;
 * the value is borrowed).  Returns 0 with the response in *resp (caller
 * decrefs), or -1 with a heap sentence in *err.
 */
int tk__load_conn_call(tk_load_conn_t *c, const char *line, uint64_t id, uint64_t deadline_ns,
                       void (*on_note)(void *arg, json_t *note), void *arg, json_t **resp,
                       char **err);

/* ---- run.c / report.c -------------------------------------------------- */

/* One kind of SLO (--slo NAME=VALUE). */
typedef enum tk_load_slo_key {
    TK_SLO_MSPT_P50,
    TK_SLO_MSPT_P95,
    TK_SLO_MSPT_P99,
    TK_SLO_MSPT_MAX,
    TK_SLO_LATENCY_P50,
    TK_SLO_LATENCY_P95,
    TK_SLO_LATENCY_P99,
    TK_SLO_LATENCY_MAX,
    TK_SLO_TPS_MIN,
    TK_SLO_RPS_MIN,
    TK_SLO_ERRORS,
    TK_SLO_OVERRUNS,
    TK_SLO_RSS_MIB,
    TK_SLO_COUNT
} tk_load_slo_key_t;

typedef struct tk_load_slo {
    tk_load_slo_key_t key; /* what is measured */
    double limit;          /* the bound (unit of the key) */
    double value;          /* measured (filled by tk__load_slo_eval) */
    bool measured;         /* the run produced the figure */
    bool ok;               /* kept */
} tk_load_slo_t;

/* Options of a run, from the command line. */
typedef struct tk_load_opts {
    const char *socket;    /* tickd's socket path */
    int connections;       /* request connections (>= 1) */
    double duration;       /* s; < 0: the scenario's end */
    double target_hz;      /* Hz; < 0: engine.info's tick_rate */
    double drain;          /* s to wait for answers after the end */
    bool quiet;            /* one summary line, no progress */
    bool progress;         /* progress line on stderr */
    const char *json_path; /* --json FILE or NULL */
    const char *csv_path;  /* --csv FILE or NULL */
    const char *svg_path;  /* --svg FILE or NULL */
    tk_load_slo_t *slo;    /* --slo rules */
    size_t nslo;
} tk_load_opts_t;

/* Latency and errors of one method. */
typedef struct tk_load_method {
    char *name;         /* "entity.spawn" */
    uint64_t sent;      /* requests sent */
    uint64_t answered;  /* responses received */
    uint64_t errors;    /* unexpected error responses */
    uint64_t expected;  /* error responses the line expects ("expect": {"error"}) */
    tk_load_hist_t lat; /* ns from intended send to response */
} tk_load_method_t;

/* Error responses with one code (or unanswered requests). */
typedef struct tk_load_code {
    long long code; /* JSON-RPC error code; 0 = no answer before the drain ended */
    uint64_t n;     /* how many */
} tk_load_code_t;

/* One row of the time series: one per stats event (once a second). */
typedef struct tk_load_row {
    double t;           /* s since the start (tool's clock, at arrival) */
    uint64_t frame;     /* tickd's frame counter */
    double tps;         /* frames per second since the previous row */
    uint64_t frames;    /* frame events received in the interval */
    double mspt_p50;    /* ms, over those frames (NAN: none received) */
    double mspt_p95;    /* ms */
    double mspt_p99;    /* ms */
    double mspt_max;    /* ms */
    uint64_t overruns;  /* frames over the target period, in the interval */
    uint64_t entities;  /* entity count at the event */
    uint64_t rss_bytes; /* daemon RSS at the event, bytes */
    uint64_t sent;      /* requests sent in the interval */
    uint64_t answered;  /* responses received in the interval */
    uint64_t errors;    /* unexpected error responses in the interval */
    double lat_p50;     /* ms, responses of the interval (NAN: none) */
    double lat_p99;     /* ms */
} tk_load_row_t;

/* A failed check or expect, for the report. */
typedef struct tk_load_failure {
    int lineno; /* scenario line */
    double at;  /* s, intended time */
    char *msg;  /* what differed */
} tk_load_failure_t;

#define TK_LOAD_MAX_FAILURES 20 /* failures kept with their message */

/* Everything a run measured; filled by tk__load_run, read by report.c. */
typedef struct tk_load_result {
    /* the run */
    const tk_load_scenario_t *sc; /* borrowed */
    const tk_load_opts_t *opts;   /* borrowed */
    char *daemon_version;         /* engine.info "version" */
    double tick_rate;             /* engine.info "tick_rate" (Hz, 0 unlimited; NAN unknown) */
    double target_hz;             /* Hz the TPS is compared with (0: none) */
    double end_s;                 /* s, when sending stopped */
    double duration_s;            /* s, from the start to the final stats */
    bool interrupted;             /* SIGINT/SIGTERM ended the run early */
    char *aborted;                /* why the run was cut short (connection), or NULL */
    /* requests */
    uint64_t sent;       /* requests sent */
    uint64_t answered;   /* responses received */
    uint64_t errors;     /* unexpected error responses (what --slo errors counts,
                            with the unanswered) */
    uint64_t expected_errors; /* error responses with the code their line
                                 expects ("expect": {"error": CODE}) */
    uint64_t unanswered; /* no response before the drain ended */
    uint64_t skipped;    /* not sent: a reference resolved to nothing */
    uint64_t not_sent;   /* scheduled after the end */
    double window_s;     /* s from the first intended send to the last answer */
    double rps;          /* answered / window_s */
    tk_load_hist_t lat;  /* ns, intended send to response, all requests */
    tk_load_hist_t lag;  /* ns, intended send to actual queueing */
    tk_load_method_t *methods;
    size_t nmethods;
    tk_load_code_t *codes;
    size_t ncodes;           /* sorted by code: unexpected errors, unanswered */
    tk_load_code_t *xcodes;
    size_t nxcodes;          /* sorted by code: the expected errors */
    /* tickd */
    uint64_t frames;            /* frames run during the run */
    double tps;                 /* frames / duration_s */
    double tps_worst;           /* lowest per-row TPS (NAN: no rows) */
    tk_load_hist_t mspt;        /* ns of work per frame, from frame events */
    uint64_t frame_events_lost; /* gaps in the frame numbers received */
    uint64_t overruns;          /* during the run */
    uint64_t entities_start, entities_end, entities_peak;
    uint64_t rss_start, rss_end, rss_peak; /* bytes */
    uint64_t events_dropped;               /* tickd's events_dropped during the run */
    /* checks */
    uint64_t checks_passed, checks_failed;
    tk_load_failure_t *failures;
    size_t nfailures; /* first TK_LOAD_MAX_FAILURES */
    /* time series */
    tk_load_row_t *rows;
    size_t nrows;
    /* pools, for the report */
    tk_load_pools_t pools;
} tk_load_result_t;

/*
 * Run the scenario: connect the monitor connection and opts->connections
 * request connections to opts->socket, replay, drain, and fill `res`.
 * Returns 0 (the run went through, possibly interrupted or aborted: see
 * res->interrupted, res->aborted) or -1 when tickd could not be reached or
 * did not answer the setup calls, with a heap sentence in *err.
 * `stop` is set by the SIGINT/SIGTERM handler.
 */
int tk__load_run(const tk_load_scenario_t *sc, const tk_load_opts_t *opts,
                 volatile sig_atomic_t *stop, tk_load_result_t *res, char **err);
void tk__load_result_free(tk_load_result_t *res);

/* ---- report.c ---------------------------------------------------------- */

/*
 * Parse "--slo" text: comma-separated NAME=VALUE (names as
 * tk__load_slo_name).  Appends to *slo / *n.  Returns 0, or -1 with a heap
 * sentence in *err.
 */
int tk__load_slo_parse(const char *text, tk_load_slo_t **slo, size_t *n, char **err);
/* "mspt_p99" etc. */
const char *tk__load_slo_name(tk_load_slo_key_t k);
/* Evaluate every rule against `res`; true when all are kept. */
bool tk__load_slo_eval(tk_load_slo_t *slo, size_t n, const tk_load_result_t *res);
/* The text report (stdout), or one line with opts->quiet. */
void tk__load_report_text(FILE *f, const tk_load_result_t *res, bool slo_ok);
/* --json / --csv: 0, or -1 with a heap sentence in *err. */
int tk__load_report_json(const char *path, const tk_load_result_t *res, bool slo_ok, int exit_code,
                         char **err);
int tk__load_report_csv(const char *path, const tk_load_result_t *res, char **err);

/* ---- svg.c ------------------------------------------------------------- */

/* --svg: the chart; 0, or -1 with a heap sentence in *err. */
int tk__load_report_svg(const char *path, const tk_load_result_t *res, char **err);

#endif
