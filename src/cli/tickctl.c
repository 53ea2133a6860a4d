/*
 * tickctl.c - the command-line client of tickd: one JSON-RPC request per
 * invocation over the control socket, a batch, a script of requests read
 * from stdin, or a stream of event notifications.
 *
 *   tickctl [OPTIONS] METHOD [JSON-PARAMS | key=value ...]
 *   tickctl [OPTIONS] '[{"method":M, "params":{...}}, ...]'
 *   tickctl [OPTIONS] -
 *   tickctl [OPTIONS] stats
 *   tickctl [OPTIONS] --watch TOPIC[,TOPIC...]
 *
 * This command line is part of the protocol contract (PROTOCOL.md): the result
 * goes to stdout as pretty JSON (exit 0); an error response goes to stderr as
 * "tickctl: error CODE: MESSAGE" plus error.data (exit 1); a socket that cannot
 * be connected, or a bad command line, exits 2; a missing or malformed
 * response, a timeout or a lost connection exits 1.  stdout carries nothing
 * but the result, so tickctl composes in shell pipelines; SIGPIPE on stdout
 * ends it quietly (the default action, restored at start).
 *
 * The flow is Redis's redis-cli in miniature: build the request before
 * touching the socket (so a usage error never reaches tickd), connect, send
 * one line, read one line, print.  --watch subscribes, then prints each
 * notification as one compact JSON line, flushed, until SIGINT/SIGTERM
 * (exit 0) or until tickd closes the connection (exit 1).
 *
 * A JSON array in place of METHOD is sent as one JSON-RPC batch, and `-`
 * reads requests from stdin, one per line, pipelined over one connection
 * (script.c); both print every answer in the order of the requests, with
 * the statuses above (1 if any answer is an error).
 *
 * For people (human.c): `stats` sends engine.stats and prints one summary
 * line (--json/--compact: the JSON); --watch prints stats events as a table
 * when stdout is a terminal or with --table, JSON lines otherwise, so
 * scripts reading a pipe see what they always saw.  An unknown method or
 * parameter name gets a "did you mean" from the table below (suggest.c).
 *
 * What it deliberately does not do: check parameter names or types before
 * sending (tickd validates them and answers -32602, which is printed; tickd
 * may be newer than tickctl), retry, or reconnect.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/sockpath.h"
#include "tickctl_int.h"
#include "tickd/tickd.h" /* TICKD_VERSION only: tickctl does not link libtickd */


/*
 * Every method tickd answers (src/daemon/methods.c), for --help and for "did
 * you mean" (suggest.c takes the parameter names from `params`): keep it in
 * step with the daemon; test_tickctl.c checks it against engine.info.
 */
static const tk_ctl_method_t methods[] = {
    {"engine.info", "", "daemon name, version, protocol, methods, entity classes"},
    {"engine.stats", "", "frame, tps, mspt percentiles, group times, counters"},
    {"engine.set_tick_rate", "hz", "set the max tick rate in Hz (0 = unlimited)"},
    {"engine.sprint", "frames",
     "run frames as fast as possible, then timing (answered later)"},
    {"engine.sprint_stop", "", "stop running sprints (they answer what ran, stopped: true)"},
    {"engine.profile", "[seconds | frames]",
     "time per class x group x level, timers, tickables, slowest ticks (answered later)"},
    {"engine.shutdown", "", "stop the daemon gracefully"},
    {"world.status", "", "frame, world/real/unpaused time, paused, dilation, levels"},
    {"world.pause", "", "pause the world (only even_when_paused ticks run)"},
    {"world.unpause", "", "resume the world"},
    {"world.step", "frames", "run frames as if unpaused; needs paused (answered later)"},
    {"world.step_stop", "", "drop pending steps (waiting steps answer what ran, stopped: true)"},
    {"world.set_time_dilation", "value", "set the world's time dilation [0.0001, 20]"},
    {"world.trace", "frames",
     "tick functions (start, dur) and spans of the next frames <= 600 (answered later)"},
    {"world.save", "[path]", "write a snapshot (default path from the config)"},
    {"world.load", "[path]", "load a snapshot (default path from the config)"},
    {"world.hash", "", "a digest of the whole world, by sections (layout-independent)"},
    {"level.list", "", "levels and their entity counts"},
    {"level.add", "name", "add a level"},
    {"level.remove", "name", "remove a level and destroy its entities"},
    {"entity.spawn",
     "class [level count tick components prerequisites props\n"
     "               time_dilation life_span]",
     "spawn entities; returns ids (or first and count when count > 1000)"},
    {"entity.destroy", "ids | first count level class",
     "destroy entities by ids, or by selectors (first and count, level, class;\n"
     "      combined: those matching all); returns how many"},
    {"entity.get", "id", "class, level, props, tick report, components, prerequisites"},
    {"entity.list", "[level class offset limit]", "ids of entities, filtered, paged"},
    {"entity.set_props", "id props", "set an entity's props"},
    {"tick.set", "id [component] | ids | first count level class, <tick spec fields>",
     "change tick functions from the next frame (selectors: the actor ticks\n"
     "      of the selected entities; answers updated)"},
    {"tick.add_prerequisite", "id [component] prerequisite",
     "make a tick function wait for another (prerequisite: {id, component?})"},
    {"tick.remove_prerequisite", "id [component] prerequisite",
     "remove a prerequisite"},
    {"tick.dump", "[offset limit]", "every registered tick function (dumpticks)"},
    {"timer.set", "rate [loop first_delay action]",
     "start a timer running action {method, params}; returns handle"},
    {"timer.set_for_next_tick", "[action]", "run action on the next frame"},
    {"timer.clear", "handle", "cancel a timer"},
    {"timer.pause", "handle", "pause a timer"},
    {"timer.unpause", "handle", "resume a paused timer"},
    {"timer.get", "handle", "status, rate, loop, elapsed, remaining, fired"},
    {"timer.list", "[offset] [limit]", "timers, a page at a time (default 100)"},
    {"tickable.add", "class [tick_type when_paused props]",
     "add a tickable object (always, conditional, never); returns id"},
    {"tickable.set", "id [enabled when_paused tick_type]", "change a tickable"},
    {"tickable.remove", "id", "remove a tickable"},
    {"tickable.get", "id", "class, tick_type, enabled, ticks, last_frame, accum_dt"},
    {"tickable.list", "[offset] [limit]", "tickables, a page at a time (tickd extension)"},
    {"events.subscribe", "topics",
     "receive event notifications on this connection (see --watch)"},
    {"events.unsubscribe", "[topics]", "stop receiving notifications"},
    {"agones.allocate", "", "mark the Agones GameServer Allocated (answered when the SDK answers)"},
    {"agones.reserve", "seconds",
     "mark the Agones GameServer Reserved for seconds (0: until another change)"},
    {"rpc.discover", "", "OpenRPC document: every method, its params (types, ranges, enums)\n"
                         "      and its result"},
};

const tk_ctl_method_t *tk__ctl_methods(size_t *n)
{
    *n = sizeof methods / sizeof methods[0];
    return methods;
}

const char *const tk__ctl_tick_fields[] = {
    "group",  "end_group", "interval",         "enabled",    "even_when_paused",
    "high_priority", "batch", "on_dedicated_server", "any_thread", NULL};

/* Topics of events.subscribe, for --watch. */
static const char *const topics[] = {"frame", "stats", "overrun", "slow_tick", "log",
                                     "slow_request", "agones"};

/* The command line, parsed. */
typedef struct ctl_opts {
    const char *socket; /* control socket path (resolved) */
    const char *watch;  /* --watch topic list, NULL = one request */
    double timeout;     /* seconds; 0 = wait forever */
    bool compact;       /* print the result on one line */
    bool json;          /* --json: JSON even where people get text */
    bool table;         /* --table: the stats table even on a pipe */
    bool summary;       /* the `stats` command: engine.stats, one line */
    bool batch;         /* METHOD is a JSON array: one batch */
    bool script;        /* METHOD is "-": requests from stdin */
    json_t *id;         /* request id, owned: integer or string */
    const char *method; /* METHOD (NULL with --watch) */
    int nargs;          /* parameter arguments after METHOD */
    char **args;        /* argv slice: JSON-PARAMS or key=value ... */
} ctl_opts_t;

/* Set by SIGINT/SIGTERM in --watch mode; checked between waits. */
static volatile sig_atomic_t g_stop;

static void on_stop_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* ---- messages ------------------------------------------------------------ */

/* Print "tickctl: MSG (try 'tickctl --help')" on stderr and exit 2. */
__attribute__((noreturn, format(printf, 1, 2))) static void usage_error(const char *fmt,
                                                                         ...)
{
    va_list ap;
    fputs("tickctl: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs(" (try 'tickctl --help')\n", stderr);
    exit(TK_CTL_EXIT_USAGE);
}

static void print_help(void)
{
    printf("Usage: tickctl [OPTIONS] METHOD [JSON-PARAMS | key=value ...]\n"
           "       tickctl [OPTIONS] '[{\"method\":METHOD, \"params\":{...}}, ...]'\n"
           "       tickctl [OPTIONS] -\n"
           "       tickctl [OPTIONS] stats\n"
           "       tickctl [OPTIONS] --watch TOPIC[,TOPIC...]\n"
           "       tickctl [-s PATH | -w NAME] top [-n N] [--once] [--rows R]\n"
           "       tickctl [-s PATH | -w NAME] trace [--frames N] [-o FILE]\n"
           "\n"
           "Send one JSON-RPC request to tickd over its control socket and print "
           "the\nresult as JSON on stdout.  A JSON array instead of METHOD is sent "
           "as one\nbatch (ids numbered by tickctl where absent); - reads requests "
           "from stdin,\none a line (a request object, a batch array, or METHOD "
           "and its parameters\nas on this command line; # starts a comment), "
           "and sends them over one\nconnection without waiting for answers.  "
           "Either way every answer is printed\nin the order of the requests: "
           "results on stdout, errors on stderr.\n"
           "\n"
           "Options:\n"
           "  -s, --socket PATH     tickd's socket; default: $TICKD_SOCKET, else\n"
           "                        " TK_SOCKPATH_LOCAL " if it exists, else "
           TK_SOCKPATH_ACTIVATED " if it\n"
           "                        exists (socket activation), else "
           TK_SOCKPATH_SYSTEM "\n"
           "  -w, --world NAME      the socket of instance NAME (tickd@NAME.service):\n"
           "                        $TICKD_RUNTIME_DIR/NAME.sock, default "
           TK_RUNTIME_DIR "/NAME.sock\n"
           "      --watch TOPICS    subscribe to comma-separated event topics and "
           "print\n"
           "                        each notification as one JSON line until "
           "interrupted\n"
           "      --timeout SECONDS give up waiting after SECONDS (default 0: "
           "forever);\n"
           "                        a batch or - gets SECONDS for all its answers, "
           "--watch\n"
           "                        for connecting and subscribing\n"
           "      --compact         print each result as one line of compact JSON\n"
           "      --json            stats: print engine.stats as JSON, not the "
           "summary;\n"
           "                        --watch: JSON lines even on a terminal\n"
           "      --table           --watch stats: a table even on a pipe (default "
           "on a\n"
           "                        terminal; JSON lines on a pipe)\n"
           "      --id VALUE        request id, an integer or a string (default 1;\n"
           "                        not with a batch or -)\n"
           "  -h, --help            print this help and exit\n"
           "      --version         print the version and exit\n"
           "\n"
           "Parameters: either one JSON object, or key=value pairs.  A value is "
           "JSON\n"
           "where the whole value is one JSON value (count=1000, enabled=false,\n"
           "ids=[1,2], props='{\"x\":1}', name='\"42\"'), else a string "
           "(class=counter).\n"
           "A value starting with { or [ must be valid JSON.  Dotted keys nest:\n"
           "tick.group=post_physics tick.interval=0.5 sends\n"
           "{\"tick\":{\"group\":\"post_physics\",\"interval\":0.5}}.  A key may "
           "appear once.\n"
           "\n"
           "Commands:\n"
           "  stats\n"
           "      one line: TPS (1 s, 1 min), MSPT p50/p99/max, entities, overruns\n"
           "\n"
           "Methods ([...] optional; answered later = replies when done):\n");
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        printf("  %s%s%s\n      %s\n", methods[i].name, methods[i].params[0] ? " " : "",
               methods[i].params, methods[i].desc);
    printf("\n"
           "Tick spec fields (tick, components[].tick, tick.set): group end_group\n"
           "  interval enabled even_when_paused high_priority batch "
           "on_dedicated_server\n"
           "  any_thread.  Groups: pre_physics start_physics during_physics "
           "end_physics\n"
           "  post_physics post_update_work last_demotable.\n"
           "A tick target is id (the actor's own tick) or id and component "
           "(an index).\n"
           "Entity classes: counter mover spawner follower burner, and plugin "
           "classes\n"
           "  (see engine.info).\n"
           "\n"
           "Watch topics: ");
    for (size_t i = 0; i < sizeof topics / sizeof topics[0]; i++)
        printf("%s%s", i ? ", " : "", topics[i]);
    printf(".\n"
           "\n"
           "Exit status: 0 success (--watch: stopped by SIGINT or SIGTERM; a "
           "batch or -:\n"
           "every answer a result); 1 an error response (any, in a batch or -), "
           "malformed\n"
           "or missing response, timeout, connection lost; 2 usage error (in -: a "
           "line that\n"
           "is not a request; it and what follows are not sent) or socket cannot "
           "be\n"
           "connected.  An unknown method or parameter gets a \"did you mean\" on "
           "stderr.\n"
           "\n"
           "Examples:\n"
           "  tickctl engine.info\n"
           "  tickctl entity.spawn class=counter count=1000\n"
           "  tickctl entity.spawn class=mover tick.group=post_physics "
           "props='{\"vx\":1}'\n"
           "  tickctl world.pause\n"
           "  tickctl world.step frames=10\n"
           "  tickctl timer.set rate=1 loop=true action='{\"method\":"
           "\"world.status\"}'\n"
           "  tickctl stats\n"
           "  tickctl --compact engine.stats\n"
           "  tickctl rpc.discover > tickd.openrpc.json\n"
           "  tickctl --watch stats\n"
           "  tickctl -s /tmp/tickd.sock --watch overrun,slow_tick\n"
           "  tickctl -w alpha stats\n"
           "  tickctl '[{\"method\":\"world.trace\",\"params\":{\"frames\":2}},\n"
           "            {\"method\":\"world.step\",\"params\":{\"frames\":2}}]'\n"
           "  printf 'world.pause\\nentity.spawn class=counter count=10\\n' | "
           "tickctl -\n");
}

/* ---- command line -------------------------------------------------------- */

/*
 * The option text at fault after getopt_long returned '?' or ':'.  An
 * unknown long option leaves optopt 0 and its text in argv[optind - 1]; a
 * long option missing its value leaves its text there too; otherwise it is
 * the short option `optopt`.  Returns static storage.
 */
static const char *bad_option(char *const argv[], bool missing_value)
{
    static char text[3];
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    if (arg && (optopt == 0 || missing_value) && strncmp(arg, "--", 2) == 0)
        return arg;
    text[0] = '-';
    text[1] = (char)optopt;
    text[2] = '\0';
    return text;
}

/*
 * The socket from --socket and --world (each NULL when absent): one of
 * them, or the default order of sockpath.h.  Exits 2 when both are given
 * or the world name is not one (tk__sockpath_world's message).
 */
static const char *ctl_socket(const char *socket_opt, const char *world_opt)
{
    static char path[512];
    if (socket_opt && world_opt)
        usage_error("--socket and --world exclude each other");
    if (!world_opt)
        return tk__sockpath_resolve(socket_opt);
    char why[256];
    if (tk__sockpath_world(world_opt, path, sizeof path, why, sizeof why) != 0)
        usage_error("--world: %s", why);
    return path;
}

/*
 * Parse argv into `o`.  Options may come before or after METHOD (getopt
 * permutes; "--" ends them).  Prints help/version and exits 0, or exits 2 on
 * a usage error; returns only with a complete, valid `o`.
 */
static void parse_args(int argc, char *argv[], ctl_opts_t *o)
{
    enum { OPT_WATCH = 256 }; /* long options without a short form */
    static const struct option longopts[] = {
        {"socket", required_argument, NULL, 's'},
        {"world", required_argument, NULL, 'w'},
        {"watch", required_argument, NULL, OPT_WATCH},
        {"timeout", required_argument, NULL, 't'},
        {"compact", no_argument, NULL, 'c'},
        {"json", no_argument, NULL, 'j'},
        {"table", no_argument, NULL, 'T'},
        {"id", required_argument, NULL, 'i'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *socket_opt = NULL, *world_opt = NULL, *id_text = NULL;
    memset(o, 0, sizeof *o);
    opterr = 0; /* our own one-line messages */
    int c;
    while ((c = getopt_long(argc, argv, ":s:w:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (!optarg[0])
                usage_error("--socket needs a non-empty path");
            socket_opt = optarg;
            break;
        case 'w':
            if (!optarg[0])
                usage_error("--world needs a name");
            world_opt = optarg;
            break;
        case OPT_WATCH:
            o->watch = optarg;
            break;
        case 't': {
            char *end;
            errno = 0;
            double t = strtod(optarg, &end);
            if (end == optarg || *end || errno || !isfinite(t) || t < 0 || t > 1e9)
                usage_error("--timeout needs seconds >= 0, got '%s'", optarg);
            o->timeout = t;
            break;
        }
        case 'c':
            o->compact = true;
            break;
        case 'j':
            o->json = true;
            break;
        case 'T':
            o->table = true;
            break;
        case 'i':
            id_text = optarg;
            break;
        case 'h':
            print_help();
            if (fflush(stdout) != 0 || ferror(stdout))
                exit(TK_CTL_EXIT_FAIL);
            exit(TK_CTL_EXIT_OK);
        case 'V':
            printf("tickctl %s\n", TICKD_VERSION);
            if (fflush(stdout) != 0 || ferror(stdout))
                exit(TK_CTL_EXIT_FAIL);
            exit(TK_CTL_EXIT_OK);
        case ':':
            usage_error("option '%s' needs a value", bad_option(argv, true));
        default:
            usage_error("unknown option '%s'", bad_option(argv, false));
        }
    }

    if (o->watch) {
        if (optind < argc)
            usage_error("--watch takes no METHOD or parameters (got '%s')",
                        argv[optind]);
    } else {
        if (optind >= argc)
            usage_error("no METHOD given");
        o->method = argv[optind];
        if (!o->method[0])
            usage_error("METHOD is empty");
        if (!tk__ctl_utf8_valid(o->method, strlen(o->method)))
            usage_error("METHOD is not valid UTF-8");
        o->nargs = argc - optind - 1;
        o->args = argv + optind + 1;
        if (!strcmp(o->method, "-") || o->method[strspn(o->method, " \t\n")] == '[') {
            o->script = o->method[0] == '-';
            o->batch = !o->script;
            if (o->nargs)
                usage_error("%s takes no parameters (got '%s')",
                            o->script ? "-" : "a batch", o->args[0]);
            if (id_text)
                usage_error("--id does not apply to %s: tickctl numbers the requests "
                            "that have no \"id\"",
                            o->script ? "-" : "a batch");
        }
        if (!strcmp(o->method, "stats")) {
            if (o->nargs)
                usage_error("stats takes no parameters (got '%s')", o->args[0]);
            o->summary = true;
            o->method = "engine.stats";
        }
    }
    if (o->json && o->table)
        usage_error("--json and --table exclude each other");
    if (o->table && !o->watch)
        usage_error("--table goes with --watch stats");

    if (id_text) {
        char *err = NULL;
        o->id = tk__ctl_value_parse(id_text, &err);
        if (!o->id)
            usage_error("--id: %s", err);
        if (!json_is_integer(o->id) && !json_is_string(o->id))
            usage_error("--id must be an integer or a string, got '%s'", id_text);
    } else {
        o->id = json_integer(1);
        if (!o->id)
            tk__ctl_oom();
    }
    o->socket = ctl_socket(socket_opt, world_opt);
}

/*
 * The topics array of --watch "stats,frame": known topics, none twice.
 * Exits 2 on a usage error.  Returns a new array.
 */
static json_t *parse_topics(const char *list)
{
    json_t *arr = json_array();
    if (!arr)
        tk__ctl_oom();
    const char *p = list;
    for (;;) {
        size_t n = strcspn(p, ",");
        size_t k;
        for (k = 0; k < sizeof topics / sizeof topics[0]; k++)
            if (strlen(topics[k]) == n && memcmp(topics[k], p, n) == 0)
                break;
        if (n == 0)
            usage_error("--watch: empty topic in '%s'", list);
        if (k == sizeof topics / sizeof topics[0])
            usage_error("--watch: unknown topic '%.*s' (topics: frame, stats, "
                        "overrun, slow_tick, log, slow_request, agones)",
                        (int)n, p);
        for (size_t i = 0; i < json_array_size(arr); i++)
            if (strcmp(json_string_value(json_array_get(arr, i)), topics[k]) == 0)
                usage_error("--watch: topic '%s' given twice", topics[k]);
        if (json_array_append_new(arr, json_string(topics[k])) < 0)
            tk__ctl_oom();
        if (p[n] == '\0')
            return arr;
        p += n + 1;
    }
}

/* ---- request and response ------------------------------------------------ */

/* The request line (compact JSON + "\n") for `method`/`params` (borrowed;
 * NULL params: no "params" member) into `out`. */
static void build_request(tk_ctl_buf_t *out, json_t *id, const char *method,
                          json_t *params)
{
    json_t *req = json_object();
    json_t *jm = json_string(method);
    if (!req || !jm)
        tk__ctl_oom();
    if (json_object_set_new(req, "jsonrpc", json_string("2.0")) < 0 ||
        json_object_set(req, "id", id) < 0 ||
        json_object_set_new(req, "method", jm) < 0 ||
        (params && json_object_set(req, "params", params) < 0))
        tk__ctl_oom();
    tk__ctl_json_append(out, req, 0);
    tk__ctl_buf_putc(out, '\n');
    json_decref(req);
}

/*
 * Parse and classify one received line.  *msg receives the parsed value
 * (caller owns it; NULL when the line is not JSON), and for
 * TK_CTL_MSG_MALFORMED *why a heap sentence (caller frees).
 */
static tk_ctl_msg_kind_t parse_message(const char *line, size_t len, json_t **msg, char **why)
{
    json_error_t jerr;
    *msg = json_loadb(line, len, JSON_ALLOW_NUL, &jerr);
    if (!*msg) {
        *why = tk__ctl_strf("not JSON (column %d: %s)", jerr.column, jerr.text);
        return TK_CTL_MSG_MALFORMED;
    }
    return tk__ctl_msg_classify(*msg, why);
}

/* An error response of the one request, "did you mean" included. */
static void print_error_response(const json_t *msg, const char *method)
{
    tk__ctl_print_error(msg, method, NULL);
}

/*
 * Connect, send `req`, and read lines until the response: empty lines and
 * notifications before it are skipped (none are expected before a
 * subscription).  Returns 0 with *msg (caller owns) of kind *kind
 * (TK_CTL_MSG_RESULT or TK_CTL_MSG_ERROR), or an exit status (-1: stopped by a signal).
 */
static int exchange(const ctl_opts_t *o, tk_ctl_conn_t *c, const tk_ctl_buf_t *req,
                    json_t **msg, tk_ctl_msg_kind_t *kind)
{
    int rc = tk__ctl_conn_open(c, o->socket);
    if (rc < 0)
        return tk__ctl_conn_error(o->socket, o->timeout, c, rc, "connecting to");
    rc = tk__ctl_conn_send(c, req->data, req->len);
    /* ECLOSED: tickd may have answered (e.g. -32003, line too long) and
     * closed; read what it left. */
    if (rc < 0 && rc != TK_CTL_ECLOSED)
        return tk__ctl_conn_error(o->socket, o->timeout, c, rc, "sending to");
    for (;;) {
        const char *line;
        size_t len;
        rc = tk__ctl_conn_read_line(c, &line, &len);
        if (rc < 0)
            return tk__ctl_conn_error(o->socket, o->timeout, c, rc, "waiting for");
        if (len == 0)
            continue;
        char *why = NULL;
        *kind = parse_message(line, len, msg, &why);
        if (*kind == TK_CTL_MSG_NOTIFICATION) {
            json_decref(*msg);
            continue;
        }
        if (*kind == TK_CTL_MSG_MALFORMED) {
            tk__ctl_say("malformed response from tickd at %s: %s", o->socket, why);
            free(why);
            json_decref(*msg);
            return TK_CTL_EXIT_FAIL;
        }
        if (*kind == TK_CTL_MSG_RESULT && !json_equal(json_object_get(*msg, "id"), o->id)) {
            tk__ctl_say("response from tickd at %s has an id other than the request's",
                o->socket);
            json_decref(*msg);
            return TK_CTL_EXIT_FAIL;
        }
        return 0;
    }
}

/* ---- modes ----------------------------------------------------------------- */

/* One request: print the result (exit 0) or the error (exit 1). */
static int run_request(const ctl_opts_t *o)
{
    json_t *params = NULL;
    char *err = NULL;
    if (tk__ctl_params_build(o->nargs, o->args, &params, &err) < 0)
        usage_error("%s", err);

    tk_ctl_buf_t req = {0};
    build_request(&req, o->id, o->method, params);
    json_decref(params);

    tk_ctl_conn_t c = {.fd = -1};
    if (o->timeout > 0)
        c.deadline_ns = tk__ctl_now_ns() + (uint64_t)(o->timeout * 1e9) + 1;
    json_t *msg = NULL;
    tk_ctl_msg_kind_t kind = TK_CTL_MSG_MALFORMED;
    int rc = exchange(o, &c, &req, &msg, &kind);
    tk__ctl_conn_close(&c);
    tk__ctl_buf_free(&req);
    if (rc != 0)
        return rc < 0 ? TK_CTL_EXIT_FAIL : rc;

    if (kind == TK_CTL_MSG_ERROR) {
        print_error_response(msg, o->method);
        json_decref(msg);
        return TK_CTL_EXIT_FAIL;
    }
    tk_ctl_buf_t out = {0};
    if (o->summary && !o->json && !o->compact) {
        tk__ctl_stats_line(&out, json_object_get(msg, "result"));
    } else {
        tk__ctl_json_append(&out, json_object_get(msg, "result"),
                            o->compact ? 0 : TK_CTL_PRETTY_INDENT);
        tk__ctl_buf_putc(&out, '\n');
    }
    json_decref(msg);
    tk__ctl_emit(out.data, out.len);
    tk__ctl_buf_free(&out);
    return TK_CTL_EXIT_OK;
}

/*
 * Catch SIGINT and SIGTERM into g_stop, keep them blocked outside ppoll, and
 * store in *waitmask the mask that lets them in during waits.  Both are caught
 * even when inherited as ignored (a shell starts `cmd &` with SIGINT ignored),
 * so `kill -INT` always ends a watch with status 0, as documented.
 * Known limit: while a write to stdout blocks (a reader that stopped reading),
 * a signal takes effect only once the write completes; lines are never cut.
 */
static void catch_stop_signals(sigset_t *waitmask)
{
    sigset_t block;
    sigemptyset(&block);
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], &sa, NULL) < 0) {
            tk__ctl_say("sigaction: %s", strerror(errno));
            exit(TK_CTL_EXIT_FAIL);
        }
        sigaddset(&block, sigs[i]);
    }
    if (sigprocmask(SIG_BLOCK, &block, waitmask) < 0) {
        tk__ctl_say("sigprocmask: %s", strerror(errno));
        exit(TK_CTL_EXIT_FAIL);
    }
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigdelset(waitmask, sigs[i]);
}

/*
 * Print one notification as a compact JSON line: its members as received
 * except "jsonrpc", i.e. {"method":"event.stats","params":{...}}.
 */
static void print_notification(json_t *msg, tk_ctl_buf_t *out)
{
    json_object_del(msg, "jsonrpc"); /* present: parse_message checked it */
    out->len = 0;
    tk__ctl_json_append(out, msg, 0);
    tk__ctl_buf_putc(out, '\n');
    tk__ctl_emit(out->data, out->len);
}

/* --watch: subscribe, then print notifications until a signal (exit 0) or
 * until tickd closes the connection (exit 1). */
static int run_watch(const ctl_opts_t *o)
{
    json_t *params = json_object();
    if (!params || json_object_set_new(params, "topics", parse_topics(o->watch)) < 0)
        tk__ctl_oom();
    tk_ctl_buf_t req = {0};
    build_request(&req, o->id, "events.subscribe", params);
    json_decref(params);

    sigset_t waitmask;
    catch_stop_signals(&waitmask);
    tk_ctl_conn_t c = {.fd = -1};
    c.waitmask = &waitmask;
    c.stop = &g_stop;
    if (o->timeout > 0)
        c.deadline_ns = tk__ctl_now_ns() + (uint64_t)(o->timeout * 1e9) + 1;

    json_t *msg = NULL;
    tk_ctl_msg_kind_t kind = TK_CTL_MSG_MALFORMED;
    int rc = exchange(o, &c, &req, &msg, &kind);
    tk__ctl_buf_free(&req);
    if (rc != 0) {
        tk__ctl_conn_close(&c);
        return rc < 0 ? TK_CTL_EXIT_OK : rc;
    }
    if (kind == TK_CTL_MSG_ERROR) {
        print_error_response(msg, "events.subscribe");
        json_decref(msg);
        tk__ctl_conn_close(&c);
        return TK_CTL_EXIT_FAIL;
    }
    json_decref(msg);

    /* Subscribed: from here on only a signal or the server ends the watch.
     * stats events become table rows for people (a terminal, or --table). */
    c.deadline_ns = 0;
    tk_ctl_buf_t out = {0};
    int status;
    bool table = o->table || (!o->json && !o->compact && isatty(STDOUT_FILENO));
    unsigned long rows = 0;
    for (;;) {
        const char *line;
        size_t len;
        rc = tk__ctl_conn_read_line(&c, &line, &len);
        if (rc < 0) {
            if (rc == TK_CTL_ECLOSED) {
                tk__ctl_say("tickd at %s closed the connection", o->socket);
                status = TK_CTL_EXIT_FAIL;
            } else {
                status = tk__ctl_conn_error(o->socket, o->timeout, &c, rc, "reading from");
                if (status < 0)
                    status = TK_CTL_EXIT_OK;
            }
            break;
        }
        if (len == 0)
            continue;
        char *why = NULL;
        kind = parse_message(line, len, &msg, &why);
        if (kind == TK_CTL_MSG_NOTIFICATION && table &&
            !strcmp(json_string_value(json_object_get(msg, "method")), "event.stats")) {
            out.len = 0;
            tk__ctl_stats_row(&out, json_object_get(msg, "params"), rows++);
            tk__ctl_emit(out.data, out.len);
            json_decref(msg);
            continue;
        }
        if (kind == TK_CTL_MSG_NOTIFICATION) {
            print_notification(msg, &out);
            json_decref(msg);
            continue;
        }
        if (kind == TK_CTL_MSG_ERROR) {
            print_error_response(msg, NULL);
            json_decref(msg);
            status = TK_CTL_EXIT_FAIL;
            break;
        }
        if (kind == TK_CTL_MSG_MALFORMED) {
            tk__ctl_say("malformed message from tickd at %s: %s", o->socket, why);
            free(why);
            json_decref(msg);
            status = TK_CTL_EXIT_FAIL;
            break;
        }
        /* A result for a request we did not send: not ours to print. */
        tk__ctl_say("ignoring an unexpected response from tickd at %s", o->socket);
        json_decref(msg);
    }
    tk__ctl_buf_free(&out);
    tk__ctl_conn_close(&c);
    return status;
}

int main(int argc, char *argv[])
{
    /* SIGPIPE's default action makes `tickctl ... | head` end quietly; a
     * parent may have left it ignored or blocked. */
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    if (signal(SIGPIPE, SIG_DFL) == SIG_ERR ||
        sigprocmask(SIG_UNBLOCK, &pipe_set, NULL) < 0) {
        tk__ctl_say("cannot restore SIGPIPE: %s", strerror(errno));
        return TK_CTL_EXIT_FAIL;
    }

    /* Commands for people, with options of their own (top.c, trace.c). */
    int sub = tk__ctl_subcommand(argc, argv, ctl_socket);
    if (sub >= 0)
        return sub;

    ctl_opts_t o;
    parse_args(argc, argv, &o);
    tk_ctl_session_t session = {o.socket, o.timeout, o.compact};
    int status = o.watch    ? run_watch(&o)
                 : o.batch  ? tk__ctl_run_batch(&session, o.method)
                 : o.script ? tk__ctl_run_script(&session)
                            : run_request(&o);
    json_decref(o.id);
    return status;
}
