/*
 * main.c - tickd: defaults -> config file -> command-line flags -> init ->
 * frame loop -> graceful teardown (Redis's main, as thin as it can be).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"
#include "replay.h"

#define DEFAULT_CONFIG "config/tickd.ini"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: tickd [OPTION]...\n"
            "A headless dedicated-server simulation daemon with Unreal Engine's tick\n"
            "semantics, driven over a JSON-RPC Unix socket (see tickctl).\n"
            "\n"
            "  -c, --config FILE        read FILE (default: " DEFAULT_CONFIG " if it exists,\n"
            "                           else built-in defaults)\n"
            "  -s, --socket PATH        control socket path ([control] socket)\n"
            "  -r, --tick-rate HZ       max tick rate, 0 = unlimited ([engine] tick_rate)\n"
            "  -f, --fixed-dt SECONDS   every frame advances exactly SECONDS ([engine] fixed_dt)\n"
            "  -n, --frames N           run N frames, then shut down gracefully\n"
            "  -l, --log-level LEVEL    error, warn, info or debug ([log] level)\n"
            "      --set SECTION.KEY=VALUE  override any config key\n"
            "      --check-config       validate the configuration (and AGONES_SDK_HTTP_PORT)\n"
            "                           and exit (0 ok, 1 not)\n"
            "      --journal-truncate-corrupt  start even if the journal ([journal] path) is\n"
            "                           corrupt before its end: cut it at the bad record\n"
            "      --replay JOURNAL     re-run a journal on its snapshot offline, checking the\n"
            "                           world hashes it recorded (exit 1 at the first that\n"
            "                           differs, naming the frame); no socket unless --socket\n"
            "      --until-frame N      (--replay) stop once N frames completed\n"
            "      --step               (--replay) stop at the journal's first frame\n"
            "                           (with --socket: world.step replays frames one by one)\n"
            "  -V, --version            print the version and exit\n"
            "  -h, --help               print this help and exit\n"
            "\n"
            "With --replay and --socket PATH, tickd serves PATH at the stop: methods that\n"
            "read (engine.info, world.status, world.hash, entity.get, tick.dump,\n"
            "world.trace...) and world.step, which replays the next recorded frames.\n"
            "\n"
            "Flags override the config file, also across SIGHUP reloads.\n"
            "With AGONES_SDK_HTTP_PORT set (or [agones] enabled) tickd drives its Agones\n"
            "GameServer through the SDK server on 127.0.0.1 (tickd(8), AGONES).\n"
            "Signals: SIGTERM/SIGINT graceful shutdown; SIGHUP reloads reloadable keys.\n"
            "Exit status: 0 after a graceful shutdown, 1 on a configuration or start-up\n"
            "error (the message names the file, line and key, or the cause), 2 on a usage\n"
            "error.\n");
}

static int override(tkd_config *c, const char *sec, const char *key, const char *val,
                    const char *flag)
{
    char err[512];
    if (tkd_config_override(c, sec, key, val, flag, err, sizeof err) != 0) {
        fprintf(stderr, "tickd: %s\n", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},   {"socket", required_argument, NULL, 's'},
        {"tick-rate", required_argument, NULL, 'r'}, {"fixed-dt", required_argument, NULL, 'f'},
        {"frames", required_argument, NULL, 'n'},   {"log-level", required_argument, NULL, 'l'},
        {"set", required_argument, NULL, 'S'},      {"check-config", no_argument, NULL, 'C'},
        {"replay", required_argument, NULL, 'P'},   {"until-frame", required_argument, NULL, 'U'},
        {"step", no_argument, NULL, 'T'},
        {"journal-truncate-corrupt", no_argument, NULL, 'J'},
        {"version", no_argument, NULL, 'V'},        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    const char *config_path = NULL;
    const char *socket = NULL, *rate = NULL, *fixed = NULL, *level = NULL;
    const char *sets[64];
    size_t nsets = 0;
    uint64_t frames = 0;
    bool check = false, truncate_corrupt = false;
    tkd_replay_opts ropts = {0};
    int ch;
    while ((ch = getopt_long(argc, argv, "c:s:r:f:n:l:Vh", opts, NULL)) != -1) {
        switch (ch) {
        case 'c':
            config_path = optarg;
            break;
        case 's':
            socket = optarg;
            break;
        case 'r':
            rate = optarg;
            break;
        case 'f':
            fixed = optarg;
            break;
        case 'l':
            level = optarg;
            break;
        case 'n': {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!*optarg || *end || optarg[0] == '-') {
                fprintf(stderr, "tickd: --frames: '%s' is not a number of frames\n", optarg);
                return 2;
            }
            frames = v;
            break;
        }
        case 'S':
            if (nsets == sizeof sets / sizeof sets[0]) {
                fprintf(stderr, "tickd: too many --set flags\n");
                return 2;
            }
            sets[nsets++] = optarg;
            break;
        case 'C':
            check = true;
            break;
        case 'P':
            ropts.journal = optarg;
            break;
        case 'U': {
            char *end;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!*optarg || *end || optarg[0] == '-') {
                fprintf(stderr, "tickd: --until-frame: '%s' is not a frame number\n", optarg);
                return 2;
            }
            ropts.until_frame = v;
            ropts.has_until = true;
            break;
        }
        case 'T':
            ropts.step = true;
            break;
        case 'J':
            truncate_corrupt = true;
            break;
        case 'V':
            printf("tickd %s (protocol 1)\n", TKD_VERSION);
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            fprintf(stderr, "Try 'tickd --help'.\n");
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tickd: unexpected argument '%s'\nTry 'tickd --help'.\n", argv[optind]);
        return 2;
    }
    if (!ropts.journal && (ropts.has_until || ropts.step)) {
        fprintf(stderr, "tickd: --until-frame and --step go with --replay\nTry 'tickd --help'.\n");
        return 2;
    }
    if (ropts.step && ropts.has_until) {
        fprintf(stderr, "tickd: --step stops at the first frame: not with --until-frame\n");
        return 2;
    }
    ropts.serve = ropts.journal && socket;

    static tkd d;
    tkd_config_init(&d.cfg);
    if (socket && override(&d.cfg, "control", "socket", socket, "--socket"))
        return 1;
    if (rate && override(&d.cfg, "engine", "tick_rate", rate, "--tick-rate"))
        return 1;
    if (fixed && override(&d.cfg, "engine", "fixed_dt", fixed, "--fixed-dt"))
        return 1;
    if (level && override(&d.cfg, "log", "level", level, "--log-level"))
        return 1;
    for (size_t i = 0; i < nsets; i++) {
        char err[512];
        if (tkd_config_override_arg(&d.cfg, sets[i], "--set", err, sizeof err) != 0) {
            fprintf(stderr, "tickd: %s\n", err);
            return 1;
        }
    }
    struct stat st;
    if (!config_path && stat(DEFAULT_CONFIG, &st) == 0)
        config_path = DEFAULT_CONFIG;
    if (config_path) {
        char err[512];
        if (tkd_config_load(&d.cfg, config_path, err, sizeof err) != 0) {
            fprintf(stderr, "tickd: %s\n", err);
            tkd_config_free(&d.cfg);
            return 1;
        }
    }
    /* Level names are checked here as well as at start-up. */
    for (size_t i = 0; i < d.cfg.levels.count; i++) {
        const char *n = d.cfg.levels.items[i];
        size_t len = strlen(n);
        bool ok = len >= 1 && len <= TK_LEVEL_NAME_MAX;
        for (size_t k = 0; ok && k < len; k++)
            ok = (n[k] >= 'a' && n[k] <= 'z') || (n[k] >= 'A' && n[k] <= 'Z') ||
                 (n[k] >= '0' && n[k] <= '9') || n[k] == '_' || n[k] == '.' || n[k] == '-';
        if (!ok) {
            fprintf(stderr, "tickd: %s: [world] levels: '%s' is not a valid level name\n",
                    config_path ? config_path : "(defaults)", n);
            tkd_config_free(&d.cfg);
            return 1;
        }
    }
    if (check) {
        char perr[512];
        if (tkd_check_plugins(&d.cfg, perr, sizeof perr) != 0) {
            /* Blame where the list came from: a flag, the file or the default. */
            const char *origin = tkd_config_origin(&d.cfg, "plugins", "load");
            fprintf(stderr, "tickd: %s: %s\n",
                    origin ? origin : config_path ? config_path : "(defaults)", perr);
            tkd_config_free(&d.cfg);
            return 1;
        }
        unsigned agones_port;
        if (tkd_agones_port(&d, &agones_port, perr, sizeof perr) < 0) {
            fprintf(stderr, "tickd: %s\n", perr);
            tkd_config_free(&d.cfg);
            return 1;
        }
        printf("tickd: configuration OK (%s)\n", config_path ? config_path : "built-in defaults");
        tkd_config_free(&d.cfg);
        return 0;
    }

    tkd_logging_init();
    tkd_logging_set_name(d.cfg.instance_name);
    tk_log_set_level(d.cfg.log_level);
    char err[512];
    d.journal_truncate_corrupt = truncate_corrupt;
    if (ropts.journal) {
        /* tickd --replay: the journal re-run offline, its hashes checked. */
        d.replay_opts = &ropts;
        int rc = 1;
        if (tkd_init(&d, err, sizeof err) != 0)
            tk_log_error("replay: %s", err);
        else
            rc = tkd_replay_main(&d);
        tkd_fini(&d);
        tkd_config_free(&d.cfg);
        tkd_logging_shutdown();
        return rc;
    }
    if (tkd_init(&d, err, sizeof err) != 0) {
        tk_log_error("cannot start: %s", err);
        tkd_fini(&d);
        tkd_config_free(&d.cfg);
        tkd_logging_shutdown();
        return 1;
    }
    tkd_run(&d, frames);
    tkd_fini(&d);
    tk_log_info("stopped");
    tkd_config_free(&d.cfg);
    tkd_logging_shutdown();
    return d.exit_code;
}
