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

#include "load.h"
#include "tickd/tickd.h" /* TICKD_VERSION only: tickd-load does not link libtickd */

#define DEFAULT_LOCAL_SOCKET  "run/tickd.sock"
#define DEFAULT_SYSTEM_SOCKET "/run/tickd/tickd.sock"
#define DEFAULT_CONNECTIONS   4
#define DEFAULT_DRAIN_S       10.0
#define SCENARIO_DIR          "scripts/scenarios"

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
          "SCENARIO is a file, or the name of one in " SCENARIO_DIR "/ (e.g. churn).\n"
          "\n"
          "  -s, --socket PATH       tickd's socket; default: $TICKD_SOCKET, else\n"
          "                          " DEFAULT_LOCAL_SOCKET
          " if it exists, else " DEFAULT_SYSTEM_SOCKET "\n"
          "  -c, --connections N     request connections (default: the scenario's\n"
          "                          \"connections\", else 4); one more monitors\n"
          "  -d, --duration SECONDS  end the run then (default: the scenario's end line,\n"
          "                          else 2 s after its last request)\n"
          "      --target-hz HZ      tick rate the achieved TPS is compared with\n"
          "                          (default: tickd's tick_rate from engine.info)\n"
          "      --drain SECONDS     wait this long for answers after the end (default 10)\n"
          "      --json FILE         write the full report as JSON\n"
          "      --csv FILE          write the per-second time series as CSV\n"
          "      --svg FILE          write a chart of MSPT p50/p99 and entities over time\n"
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
          "  errors          error responses + unanswered requests\n"
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

static const char *resolve_socket(const char *opt)
{
    if (opt)
        return opt;
    const char *env = getenv("TICKD_SOCKET");
    if (env && env[0])
        return env;
    struct stat st;
    if (stat(DEFAULT_LOCAL_SOCKET, &st) == 0 || (errno != ENOENT && errno != ENOTDIR))
        return DEFAULT_LOCAL_SOCKET;
    return DEFAULT_SYSTEM_SOCKET;
}

/*
 * The scenario file: `arg` itself if it exists or names a path, else
 * SCENARIO_DIR/<arg>.jsonl under the working directory, else under the
 * directory above the executable's (build/tickd-load -> ./scripts/...).
 * Returns a heap path (the argument itself when nothing else exists, so the
 * error names what the user typed).
 */
static char *resolve_scenario(const char *arg)
{
    struct stat st;
    if (stat(arg, &st) == 0 || strchr(arg, '/'))
        return tk__load_xstrdup(arg);
    char *p = tk__load_strf(SCENARIO_DIR "/%s.jsonl", arg);
    if (stat(p, &st) == 0)
        return p;
    free(p);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            p = tk__load_strf("%s/../" SCENARIO_DIR "/%s.jsonl", exe, arg);
            if (stat(p, &st) == 0)
                return p;
            free(p);
        }
    }
    return tk__load_xstrdup(arg);
}

int main(int argc, char **argv)
{
    enum { OPT_TARGET = 256, OPT_DRAIN, OPT_JSON, OPT_CSV, OPT_SVG, OPT_SLO };
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
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
    const char *socket_opt = NULL;
    char *err = NULL;
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, ":s:c:d:qVh", longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            socket_opt = optarg;
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
    o.socket = resolve_socket(socket_opt);
    o.progress = !o.quiet && isatty(STDERR_FILENO);

    tk_load_scenario_t sc;
    char *path = resolve_scenario(argv[optind]);
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
