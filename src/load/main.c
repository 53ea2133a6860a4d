/*
 * main.c - tickd-load's command line: options, --help, the scenario, one
 * run, the reports, the exit status.
 *
 *   tickd-load [OPTIONS] SCENARIO
 *
 * Flow, as in main.c of tickd itself: options -> scenario (read and checked
 * in full before connecting, so a typo never reaches tickd) -> run ->
 * reports -> exit status (0 ok, 1 SLO broken or a check failed, 2 usage or
 * connection error; the file comment of load.h has the details).
 *
 * What it deliberately does not do: start or stop tickd (point it at a
 * running daemon), or retry a run.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sockpath.h"
#include "load.h"
#include "tickd/tickd.h" /* TICKD_VERSION only: tickd-load does not link libtickd */

#define DEFAULT_CONNECTIONS 4
#define DEFAULT_DRAIN_S     10.0
#define SOURCE_SCENARIOS    "scripts/scenarios" /* in a source tree */
/* Where `make install` puts the shipped scenarios: $(PREFIX)/share/tickd/
 * scenarios, compiled in by the Makefile. */
#ifndef TICKD_SCENARIO_DIR
#define TICKD_SCENARIO_DIR "/usr/local/share/tickd/scenarios"
#endif
#define MAX_SCENARIO_DIRS 4

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    if (stop_flag) {
        /* Second signal: the user means it. */
        signal(sig, SIG_DFL);
        raise(sig);
    }
    stop_flag = 1;
}

static void usage(FILE *f)
{
    fputs("Usage: tickd-load [OPTION]... SCENARIO\n"
          "Replay a scenario (JSON Lines of timed requests and checks) against a running\n"
          "tickd, open-loop over several connections, while recording tickd's TPS, MSPT,\n"
          "overruns, entity count and RSS; then report like redis-benchmark.\n"
          "\n"
          "SCENARIO is a file, or the name of a shipped one (e.g. churn), looked for\n"
          "as NAME.jsonl in " SOURCE_SCENARIOS "/ of the working directory, in that of\n"
          "the source tree holding this tickd-load (build/tickd-load), then in\n"
          "  " TICKD_SCENARIO_DIR "/ (make install).\n"
          "\n"
          "  -s, --socket PATH       tickd's socket; default: $TICKD_SOCKET, else\n"
          "                          " TK_SOCKPATH_LOCAL " if it exists, else " TK_SOCKPATH_ACTIVATED "\n"
          "                          if it exists (socket activation), else\n"
          "                          " TK_SOCKPATH_SYSTEM "\n"
          "  -w, --world NAME        the socket of instance NAME (tickd@NAME.service):\n"
          "                          $TICKD_RUNTIME_DIR/NAME.sock, default\n"
          "                          " TK_RUNTIME_DIR "/NAME.sock\n"
          "  -c, --connections N     request connections (default: the scenario's\n"
          "                          \"connections\", else 4); one more monitors\n"
          "  -d, --duration SECONDS  end the run then (default: the scenario's end line,\n"
          "                          else 2 s after its last request)\n"
          "      --target-hz HZ      tick rate the achieved TPS is compared with\n"
          "                          (default: tickd's tick_rate from engine.info)\n"
          "      --drain SECONDS     wait this long for answers after the end (default 10)\n"
          "      --json FILE         write the full report as JSON\n"
          "      --csv FILE          write the per-second time series as CSV\n"
          "      --svg FILE          write a chart over time: MSPT p50/p99, TPS, request\n"
          "                          latency p50/p99, entities and RSS\n"
          "      --slo LIST          comma-separated NAME=VALUE limits; exit 1 if one is\n"
          "                          broken, e.g. --slo mspt_p99=10,tps_min=59,errors=0\n"
          "  -q, --quiet             print one summary line (and failures), no progress\n"
          "  -V, --version           print the version and exit\n"
          "  -h, --help              print this help and exit\n"
          "\n"
          "SLO names (upper bounds unless marked min):\n"
          "  mspt_p50 mspt_p95 mspt_p99 mspt_max      ms of work per frame, whole run\n"
          "  latency_p50 latency_p95 latency_p99 latency_max   ms per request\n"
          "  tps_min (min)   achieved frames per second over the run\n"
          "  rps_min (min)   requests answered per second\n"
          "  errors          unexpected error responses + unanswered requests (an\n"
          "                  error a line expects, \"expect\": {\"error\": CODE}, is\n"
          "                  counted apart as an expected error)\n"
          "  overruns        frames that took longer than the target period\n"
          "  rss_mib         tickd's peak RSS in MiB\n"
          "\n"
          "A progress line goes to stderr when it is a terminal.  SIGINT/SIGTERM end the\n"
          "run early; the report is still printed (exit 2).\n"
          "\n"
          "Exit status: 0 run complete, all checks passed, SLOs kept; 1 an SLO broken or\n"
          "a check failed; 2 usage error, bad scenario, connection error or interrupted.\n",
          f);
}

/* Parse a number option; exits 2 with a message if it is not one in range. */
static double num_opt(const char *name, const char *text, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "tickd-load: %s: \"%s\" is not a number in [%g, %g]\n", name, text, lo, hi);
        exit(TK_LOAD_EXIT_USAGE);
    }
    return v;
}

/* Whether `path` is a directory. */
static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * The directories a scenario name is looked for in, in order (heap
 * strings in dirs[], their count returned): SOURCE_SCENARIOS of the working
 * directory; the same in the source tree of the executable (the directory
 * above it or the one above that, for build/tickd-load and
 * build/NAME/tickd-load), when there is one; TICKD_SCENARIO_DIR.  A
 * directory met twice (by its real path) is listed once.
 */
static size_t scenario_dirs(char *dirs[MAX_SCENARIO_DIRS])
{
    size_t n = 0;
    char *real[MAX_SCENARIO_DIRS];
    char *cands[MAX_SCENARIO_DIRS] = {tk__load_xstrdup(SOURCE_SCENARIOS), NULL, NULL, NULL};
    size_t nc = 1;
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = len > 0 ? (exe[len] = '\0', strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = '\0';
        for (int up = 1; up <= 2; up++) {
            char *d = tk__load_strf("%s/%s" SOURCE_SCENARIOS, exe, up == 1 ? "../" : "../../");
            char *r = is_dir(d) ? realpath(d, NULL) : NULL;
            free(d);
            if (r) {
                cands[nc++] = r; /* absolute: the message says where it is */
                break;
            }
        }
    }
    cands[nc++] = tk__load_xstrdup(TICKD_SCENARIO_DIR);
    for (size_t i = 0; i < nc; i++) {
        real[n] = realpath(cands[i], NULL); /* NULL: does not exist */
        bool dup = false;
        for (size_t k = 0; k < n && real[n]; k++)
            dup = dup || (real[k] && strcmp(real[k], real[n]) == 0);
        if (dup) {
            free(real[n]);
            free(cands[i]);
            continue;
        }
        dirs[n++] = cands[i];
    }
    for (size_t k = 0; k < n; k++)
        free(real[k]);
    return n;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of the scenarios in `dir` ("burst churn ..."), heap, or NULL. */
static char *scenario_names(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **v = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 6 || strcmp(e->d_name + len - 6, ".jsonl") != 0 || e->d_name[0] == '.')
            continue;
        v = tk__load_xrealloc(v, (n + 1) * sizeof *v);
        v[n++] = tk__load_strf("%.*s", (int)(len - 6), e->d_name);
    }
    closedir(d);
    if (!n)
        return NULL;
    qsort(v, n, sizeof *v, cmp_str);
    tk_load_buf_t b = {0};
    for (size_t i = 0; i < n; i++) {
        tk__load_buf_printf(&b, "%s%s", i ? " " : "", v[i]);
        free(v[i]);
    }
    free(v);
    return b.data;
}

/*
 * The scenario file for `arg`: `arg` itself if it exists or names a path
 * (has a '/'; a missing file is then reported by the reader), else
 * NAME.jsonl (or NAME, when it ends in .jsonl) in each of scenario_dirs().
 * Returns a heap path, or NULL with a heap message in *err listing every
 * place looked at and the scenarios found.
 */
static char *resolve_scenario(const char *arg, char **err)
{
    struct stat st;
    if (stat(arg, &st) == 0 || strchr(arg, '/'))
        return tk__load_xstrdup(arg);
    size_t alen = strlen(arg);
    bool suffixed = alen > 6 && strcmp(arg + alen - 6, ".jsonl") == 0;
    char *dirs[MAX_SCENARIO_DIRS];
    size_t n = scenario_dirs(dirs);
    char *found = NULL;
    tk_load_buf_t tried = {0};
    tk__load_buf_printf(&tried, "scenario \"%s\" not found; looked for:\n  %s (a file)", arg,
                        arg);
    char *names = NULL;
    const char *names_dir = NULL;
    for (size_t i = 0; i < n && !found; i++) {
        char *p = tk__load_strf("%s/%s%s", dirs[i], arg, suffixed ? "" : ".jsonl");
        if (stat(p, &st) == 0) {
            found = p;
            break;
        }
        tk__load_buf_printf(&tried, "\n  %s", p);
        free(p);
        if (!names && (names = scenario_names(dirs[i])) != NULL)
            names_dir = dirs[i];
    }
    if (!found) {
        if (names)
            tk__load_buf_printf(&tried, "\nscenarios in %s: %s", names_dir, names);
        else
            tk__load_buf_puts(&tried, "\nno scenario directory found (make install puts the "
                                      "shipped ones in " TICKD_SCENARIO_DIR ")");
        *err = tried.data;
    } else {
        tk__load_buf_free(&tried);
    }
    free(names);
    for (size_t i = 0; i < n; i++)
        free(dirs[i]);
    return found;
}

int main(int argc, char **argv)
{
    enum { OPT_TARGET = 256, OPT_DRAIN, OPT_JSON, OPT_CSV, OPT_SVG, OPT_SLO };
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"world", required_argument, NULL, 'w'},
        {"connections", required_argument, NULL, 'c'},
        {"duration", required_argument, NULL, 'd'},
        {"target-hz", required_argument, NULL, OPT_TARGET},
        {"drain", required_argument, NULL, OPT_DRAIN},
        {"json", required_argument, NULL, OPT_JSON},
        {"csv", required_argument, NULL, OPT_CSV},
        {"svg", required_argument, NULL, OPT_SVG},
        {"slo", required_argument, NULL, OPT_SLO},
        {"quiet", no_argument, NULL, 'q'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tk_load_opts_t o;
    memset(&o, 0, sizeof o);
    o.duration = -1;
    o.target_hz = -1;
    o.drain = DEFAULT_DRAIN_S;
    const char *socket_opt = NULL, *world_opt = NULL;
    char *err = NULL;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":s:w:c:d:qVh", longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            socket_opt = optarg;
            break;
        case 'w':
            world_opt = optarg;
            break;
        case 'c':
            o.connections = (int)num_opt("--connections", optarg, 1, TK_LOAD_MAX_CONNECTIONS);
            if (strspn(optarg, "0123456789") != strlen(optarg)) {
                fprintf(stderr, "tickd-load: --connections: \"%s\" is not an integer\n", optarg);
                return TK_LOAD_EXIT_USAGE;
            }
            break;
        case 'd':
            o.duration = num_opt("--duration", optarg, 0, 1e6);
            break;
        case OPT_TARGET:
            o.target_hz = num_opt("--target-hz", optarg, 0, 1e6);
            break;
        case OPT_DRAIN:
            o.drain = num_opt("--drain", optarg, 0, 3600);
            break;
        case OPT_JSON:
            o.json_path = optarg;
            break;
        case OPT_CSV:
            o.csv_path = optarg;
            break;
        case OPT_SVG:
            o.svg_path = optarg;
            break;
        case OPT_SLO:
            if (tk__load_slo_parse(optarg, &o.slo, &o.nslo, &err) < 0) {
                fprintf(stderr, "tickd-load: %s\n", err);
                free(err);
                return TK_LOAD_EXIT_USAGE;
            }
            break;
        case 'q':
            o.quiet = true;
            break;
        case 'V':
            printf("tickd-load %s\n", TICKD_VERSION);
            return TK_LOAD_EXIT_OK;
        case 'h':
            usage(stdout);
            return TK_LOAD_EXIT_OK;
        case ':':
            fprintf(stderr, "tickd-load: %s needs a value (see --help)\n", argv[optind - 1]);
            return TK_LOAD_EXIT_USAGE;
        default:
            if (optopt)
                fprintf(stderr, "tickd-load: unknown option -%c (see --help)\n", optopt);
            else
                fprintf(stderr, "tickd-load: unknown option %s (see --help)\n", argv[optind - 1]);
            return TK_LOAD_EXIT_USAGE;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tickd-load: %s (see --help)\n",
                optind >= argc ? "which scenario? give one SCENARIO file or name"
                               : "give exactly one SCENARIO");
        return TK_LOAD_EXIT_USAGE;
    }
    static char world_path[512];
    if (socket_opt && world_opt) {
        fprintf(stderr, "tickd-load: --socket and --world exclude each other (see --help)\n");
        return TK_LOAD_EXIT_USAGE;
    }
    if (world_opt) {
        char why[256];
        if (tk__sockpath_world(world_opt, world_path, sizeof world_path, why, sizeof why) != 0) {
            fprintf(stderr, "tickd-load: --world: %s\n", why);
            return TK_LOAD_EXIT_USAGE;
        }
        o.socket = world_path;
    } else {
        o.socket = tk__sockpath_resolve(socket_opt);
    }
    o.progress = !o.quiet && isatty(STDERR_FILENO);

    tk_load_scenario_t sc;
    char *path = resolve_scenario(argv[optind], &err);
    if (!path) {
        fprintf(stderr, "tickd-load: %s\n", err);
        free(err);
        free(o.slo);
        return TK_LOAD_EXIT_USAGE;
    }
    int rc = tk__load_scenario_read(path, &sc, &err);
    free(path);
    if (rc < 0) {
        fprintf(stderr, "tickd-load: %s\n", err);
        free(err);
        free(o.slo);
        return TK_LOAD_EXIT_USAGE;
    }
    if (!o.connections)
        o.connections = sc.connections ? sc.connections : DEFAULT_CONNECTIONS;
    for (size_t i = 0; i < sc.nlines; i++) {
        if (sc.lines[i].conn >= o.connections) {
            fprintf(stderr,
                    "tickd-load: %s:%d: conn %d but the run has %d connections "
                    "(--connections)\n",
                    sc.path, sc.lines[i].lineno, sc.lines[i].conn, o.connections);
            tk__load_scenario_free(&sc);
            free(o.slo);
            return TK_LOAD_EXIT_USAGE;
        }
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    tk_load_result_t res;
    if (tk__load_run(&sc, &o, &stop_flag, &res, &err) < 0) {
        fprintf(stderr, "tickd-load: %s\n", err);
        free(err);
        tk__load_result_free(&res);
        tk__load_scenario_free(&sc);
        free(o.slo);
        return TK_LOAD_EXIT_USAGE;
    }
    bool slo_ok = tk__load_slo_eval(o.slo, o.nslo, &res);
    int code = TK_LOAD_EXIT_OK;
    if (res.aborted || res.interrupted)
        code = TK_LOAD_EXIT_USAGE;
    else if (!slo_ok || res.checks_failed)
        code = TK_LOAD_EXIT_FAIL;

    tk__load_report_text(stdout, &res, slo_ok);
    fflush(stdout);
    if (res.aborted)
        fprintf(stderr, "tickd-load: run aborted: %s\n", res.aborted);
    if (o.json_path && tk__load_report_json(o.json_path, &res, slo_ok, code, &err) < 0)
        goto write_fail;
    if (o.csv_path && tk__load_report_csv(o.csv_path, &res, &err) < 0)
        goto write_fail;
    if (o.svg_path && tk__load_report_svg(o.svg_path, &res, &err) < 0)
        goto write_fail;
    tk__load_result_free(&res);
    tk__load_scenario_free(&sc);
    free(o.slo);
    return code;
write_fail:
    fprintf(stderr, "tickd-load: %s\n", err);
    free(err);
    tk__load_result_free(&res);
    tk__load_scenario_free(&sc);
    free(o.slo);
    return TK_LOAD_EXIT_USAGE;
}
