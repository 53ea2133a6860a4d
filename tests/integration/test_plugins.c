/*
 * test_plugins.c - entity classes from plugins (tickd/plugin.h), tested
 * against the real daemon: every way a plugin is refused at start-up and by
 * --check-config, the whole ABI surface through a test plugin
 * (tests/plugins/probe.c: classes `probe` and `tally`), and the example
 * plugin plugins/boids.c through the protocol (flocking towards a leader,
 * the leader as a prerequisite, batched and unbatched runs identical,
 * snapshots).
 *
 * Plugins are found as the daemon is: $BUILD/tests/plugins/NAME.so and
 * $BUILD/plugins/boids.so (BUILD is build or build/asan; default build),
 * given to the daemon by absolute path since it runs in its own directory.
 * Time is driven in exact steps: the world is paused and frames run through
 * world.step at a fixed dt (0.01 s unless said otherwise).  Not here: the
 * loader's unit behaviour without a daemon, built-in classes
 * (test_methods.c, test_semantics.c).
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "tickd/plugin.h"

/* ---- helpers ------------------------------------------------------------------------ */

/* printf into one of a ring of static buffers (lives for a few dozen calls;
 * nothing to free, so a passing test stays leak-free). */
static const char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt(const char *f, ...)
{
    static char ring[32][2 * PATH_MAX];
    static unsigned next;
    char *b = ring[next++ % 32];
    va_list ap;
    va_start(ap, f);
    vsnprintf(b, sizeof ring[0], f, ap);
    va_end(ap);
    return b;
}

static const char *build_dir(void)
{
    const char *b = getenv("BUILD");
    return b && b[0] ? b : "build";
}

/* Absolute path of a built plugin ("tests/plugins/probe.so", "plugins/boids.so"
 * under the build directory); fails the test if it was not built. */
static const char *built(const char *rel)
{
    static char ring[16][PATH_MAX];
    static unsigned next;
    const char *path = fmt("%s/%s", build_dir(), rel);
    char *out = ring[next++ % 16];
    ck_assert_msg(realpath(path, out) && access(out, R_OK) == 0,
                  "plugin %s not built (make tests, or make %s)", path, path);
    return out;
}

/* A test plugin of tests/plugins/ by name. */
static const char *tplugin(const char *name) { return built(fmt("tests/plugins/%s.so", name)); }
static const char *boids(void) { return built("plugins/boids.so"); }

/* The probe and boids plugins, as `[plugins] load`. */
static const char *both(void) { return fmt("plugins.load=%s, %s", tplugin("probe"), boids()); }

/* A daemon with probe.so and boids.so (plus `more` config edits), paused. */
static tkit_daemon *start_paused_with(const char *load, const char *more, tkit_conn **c)
{
    const char *cfg[] = {load, more, NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    *c = tkit_connect(d);
    tkit_ok(*c, "world.pause", NULL);
    return d;
}

static tkit_daemon *start_paused(tkit_conn **c) { return start_paused_with(both(), NULL, c); }

/* entity.spawn; the first id. */
static long long spawn(tkit_conn *c, const char *params)
{
    json_t *r = tkit_ok(c, "entity.spawn", "%s", params);
    json_t *ids = json_object_get(r, "ids");
    return ids ? tkit_geti(ids, "[0]") : tkit_geti(r, "first");
}

static long long tickable(tkit_conn *c, const char *params)
{
    return tkit_geti(tkit_ok(c, "tickable.add", "%s", params), "id");
}

static void step(tkit_conn *c, int n) { tkit_ok(c, "world.step", "{\"frames\":%d}", n); }

static json_t *entity(tkit_conn *c, long long id)
{
    return tkit_ok(c, "entity.get", "{\"id\":%lld}", id);
}

static json_t *props(tkit_conn *c, long long id) { return tkit_get(entity(c, id), "props"); }

static json_t *tprops(tkit_conn *c, long long id)
{
    return tkit_get(tkit_ok(c, "tickable.get", "{\"id\":%lld}", id), "props");
}

static double num(tkit_conn *c, long long id, const char *prop)
{
    return tkit_getd(props(c, id), prop);
}

static long long count(tkit_conn *c, long long id, const char *prop)
{
    return tkit_geti(props(c, id), prop);
}

static long long entities(tkit_conn *c)
{
    return tkit_geti(tkit_ok(c, "world.status", NULL), "entities");
}

static long long listed(tkit_conn *c, const char *cls)
{
    return tkit_geti(tkit_ok(c, "entity.list", "{\"class\":\"%s\",\"limit\":0}", cls), "total");
}

/* Index of (entity, component; -1 = actor) in a trace frame's ticks, -1 if absent. */
static long trace_index(json_t *ticks, long long id, int comp)
{
    for (size_t i = 0; i < json_array_size(ticks); i++) {
        json_t *t = json_array_get(ticks, i);
        json_t *e = json_object_get(t, "entity"), *k = json_object_get(t, "component");
        if (!json_is_integer(e) || json_integer_value(e) != id)
            continue;
        if ((comp < 0 && json_is_null(k)) ||
            (comp >= 0 && json_is_integer(k) && json_integer_value(k) == comp))
            return (long)i;
    }
    return -1;
}

/* The tick.dump entry of (entity, component; -1 = actor), failing if absent. */
static json_t *dump_entry(tkit_conn *c, long long id, int comp)
{
    json_t *ticks = tkit_get(tkit_ok(c, "tick.dump", "{\"limit\":1000}"), "ticks");
    long i = trace_index(ticks, id, comp);
    ck_assert_msg(i >= 0, "tick.dump has no entity %lld component %d: %s", id, comp,
                  tkit_dump(ticks));
    return json_array_get(ticks, (size_t)i);
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* ---- loading: every refusal, at start-up and with --check-config ---------------------- */

/*
 * One way of being refused.  `plugins` are loaded in order (a test plugin
 * name, or a path with "@DIR@" for a file of the daemon's directory); the
 * last one is at fault and must be named, with each of `needles`.
 * `names_first`: the message also names the first plugin's file.
 */
typedef struct refusal {
    const char *what;
    const char *plugins[2];
    const char *needles[3];
    bool names_first;
} refusal;

#define ABI_S(v) #v
#define ABI_STR(v) ABI_S(v)

static const refusal refusals[] = {
    {"missing file", {"@DIR@/no-such-plugin.so"}, {"cannot load", "No such file"}, false},
    {"not a shared object", {"@DIR@/not-a-plugin.so"}, {"cannot load"}, false},
    {"no tickd_plugin_abi", {"bad_noabi"}, {"missing symbol tickd_plugin_abi"}, false},
    {"ABI mismatch",
     {"bad_abi"},
     {"plugin ABI version 999", "this tickd speaks " ABI_STR(TICKD_PLUGIN_ABI)},
     false},
    {"ABI of an older tickd",
     {"bad_old_abi"},
     {"plugin ABI version 1", "this tickd speaks " ABI_STR(TICKD_PLUGIN_ABI)},
     false},
    {"no tickd_plugin_classes",
     {"bad_noclasses"},
     {"missing symbol tickd_plugin_classes"},
     false},
    {"classes NULL", {"bad_null"}, {"tickd_plugin_classes returned no class"}, false},
    {"classes 0", {"bad_empty"}, {"tickd_plugin_classes returned no class"}, false},
    {"init fails",
     {"bad_init"},
     {"tickd_plugin_init failed", "licence file /nonexistent/licensed.key is missing"},
     false},
    {"duplicate of a built-in", {"dup_builtin"}, {"class 'counter' already exists (from built-in)"},
     false},
    {"duplicate within a plugin", {"dup_within"}, {"class 'twin' is listed twice"}, false},
    {"duplicate across plugins", {"probe", "clash"}, {"class 'probe' already exists"}, true},
    {"prop outside the state",
     {"bad_prop"},
     {"class 'leaky'", "prop 'far'", "not an aligned field inside the state"},
     false},
    {"class without tick", {"bad_notick"}, {"class 'idle' has no tick function"}, false},
    {"class descriptor of another ABI",
     {"bad_class_abi"},
     {"class 'stale' speaks plugin ABI 0", "this tickd speaks " ABI_STR(TICKD_PLUGIN_ABI)},
     false},
};

#define N_REFUSALS ((int)(sizeof refusals / sizeof refusals[0]))

static const char *plugin_arg(const char *p) { return p[0] == '@' ? p : tplugin(p); }

/* Start tickd with `cfg` and `args` (NULL: the default), wait for its exit,
 * assert status 1 and return the daemon (exited). */
static tkit_daemon *run_refused(const refusal *r, const char *const *cfg, const char *const *args)
{
    static const char *const files[] = {"not-a-plugin.so",
                                        "This is a text file, not a shared object.\n"
                                        "It is long enough to hold an ELF header, but has none.\n",
                                        NULL};
    tkit_opts o = {.config = cfg, .args = args, .files = files, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1, "%s: tickd %s did not exit", r->what, args ? args[0] : "");
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: %s exit status %d; stderr:\n%s",
                  r->what, args ? args[0] : "start-up", st, tkit_stderr(d));
    return d;
}

static void assert_names(const refusal *r, tkit_daemon *d, const char *mode)
{
    const char *err = tkit_stderr(d);
    const char *last = r->plugins[1] ? r->plugins[1] : r->plugins[0];
    const char *file = last[0] == '@' ? fmt("%s%s", tkit_dir(d), last + 5) : tplugin(last);
    ck_assert_msg(strstr(err, fmt("[plugins] load: %s: ", file)),
                  "%s (%s): message does not name %s:\n%s", r->what, mode, file, err);
    for (int i = 0; i < 3 && r->needles[i]; i++)
        ck_assert_msg(strstr(err, r->needles[i]), "%s (%s): message lacks \"%s\":\n%s", r->what,
                      mode, r->needles[i], err);
    if (r->names_first)
        ck_assert_msg(strstr(err, fmt("(from %s)", tplugin(r->plugins[0]))),
                      "%s (%s): message does not name the first plugin:\n%s", r->what, mode, err);
}

START_TEST(plugins_load_refused)
{
    const refusal *r = &refusals[_i];
    const char *load = r->plugins[1] ? fmt("plugins.load=%s, %s", plugin_arg(r->plugins[0]),
                                           plugin_arg(r->plugins[1]))
                                     : fmt("plugins.load=%s", plugin_arg(r->plugins[0]));
    const char *cfg[] = {load, NULL};

    /* Start-up stops before the socket exists, naming the file and the fault. */
    tkit_daemon *d = run_refused(r, cfg, NULL);
    ck_assert_msg(strstr(tkit_stderr(d), "cannot start"), "%s: %s", r->what, tkit_stderr(d));
    assert_names(r, d, "start-up");
    ck_assert_msg(!file_exists(tkit_sock(d)), "%s: a socket was created", r->what);
    tkit_free(d);

    /* --check-config refuses the same configuration with the same message. */
    static const char *const args[] = {"--check-config", "--config", "@CONFIG@", NULL};
    d = run_refused(r, cfg, args);
    assert_names(r, d, "--check-config");
    ck_assert_msg(strstr(tkit_stderr(d), tkit_config_path(d)),
                  "%s: --check-config does not name the config file:\n%s", r->what,
                  tkit_stderr(d));
    ck_assert_msg(!strstr(tkit_stdout(d), "configuration OK"), "%s: %s", r->what, tkit_stdout(d));
    tkit_free(d);
}
END_TEST

START_TEST(plugins_load_good)
{
    /* --check-config loads the good plugins and passes. */
    const char *cfg[] = {both(), NULL};
    static const char *const args[] = {"--check-config", "--config", "@CONFIG@", NULL};
    tkit_opts o = {.config = cfg, .args = args, .no_wait = true};
    tkit_daemon *d = tkit_start(&o);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    ck_assert_msg(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d:\n%s", st,
                  tkit_stderr(d));
    ck_assert_msg(strstr(tkit_stdout(d), "configuration OK"), "%s", tkit_stdout(d));
    tkit_free(d);

    /* Start-up logs each plugin loaded. */
    tkit_opts o2 = {.config = cfg};
    d = tkit_start(&o2);
    ck_assert_msg(strstr(tkit_stderr(d), fmt("plugin %s loaded", tplugin("probe"))), "%s",
                  tkit_stderr(d));
    ck_assert_msg(strstr(tkit_stderr(d), fmt("plugin %s loaded", boids())), "%s", tkit_stderr(d));
    tkit_finish(d);

    /* clash.so is refused only beside probe.so: alone, its "probe" loads. */
    const char *cfg2[] = {fmt("plugins.load=%s", tplugin("clash")), NULL};
    tkit_opts o3 = {.config = cfg2};
    d = tkit_start(&o3);
    tkit_conn *c = tkit_connect(d);
    ck_assert(tkit_has_string(tkit_get(tkit_ok(c, "engine.info", NULL), "classes"), "probe"));
    tkit_finish(d);
}
END_TEST

/* ---- the ABI surface through probe.so ---------------------------------------------------- */

START_TEST(plugins_classes_listed)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    json_t *classes = tkit_get(tkit_ok(c, "engine.info", NULL), "classes");
    static const char *const all[] = {"counter", "mover",  "spawner", "follower",
                                      "burner",  "probe", "tally",   "boids"};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ck_assert_msg(tkit_has_string(classes, all[i]), "classes lacks %s: %s", all[i],
                      tkit_dump(classes));
    ck_assert_int_eq(json_array_size(classes), sizeof all / sizeof all[0]);

    long long p = spawn(c, "{\"class\":\"probe\",\"count\":2}");
    long long b = spawn(c, "{\"class\":\"boids\",\"count\":3}");
    spawn(c, "{\"class\":\"counter\"}");
    json_t *l = tkit_ok(c, "entity.list", "{\"class\":\"probe\"}");
    ck_assert_int_eq(tkit_geti(l, "total"), 2);
    ck_assert_int_eq(tkit_geti(l, "ids[0]"), p);
    ck_assert_int_eq(tkit_geti(l, "ids[1]"), p + 1);
    l = tkit_ok(c, "entity.list", "{\"class\":\"boids\",\"offset\":1}");
    ck_assert_int_eq(tkit_geti(l, "total"), 3);
    ck_assert_int_eq(json_array_size(tkit_get(l, "ids")), 2);
    ck_assert_int_eq(tkit_geti(l, "ids[0]"), b + 1);
    ck_assert_int_eq(listed(c, "tally"), 0);
    ck_assert_int_eq(listed(c, "counter"), 1);
    tkit_err(c, TKIT_INVALID_PARAMS, "unknown class 'probes'", "entity.list",
             "{\"class\":\"probes\"}");
    ck_assert_str_eq(tkit_gets(entity(c, p), "class"), "probe");
    long long t = tickable(c, "{\"class\":\"tally\"}");
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "tickable.get", "{\"id\":%lld}", t), "class"), "tally");
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_props_typed)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long k = spawn(c, "{\"class\":\"counter\"}");
    long long p = spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"x\":1.5,\"level\":2,"
                               "\"steps\":7,\"peer\":%lld,\"armed\":true}}",
                               k));
    json_t *pr = props(c, p);
    ck_assert_msg(json_is_real(tkit_get(pr, "level")), "%s", tkit_dump(pr));
    ck_assert_double_eq(tkit_getd(pr, "level"), 2.0);
    ck_assert_double_eq(tkit_getd(pr, "x"), 1.5);
    ck_assert_msg(json_is_integer(tkit_get(pr, "steps")), "%s", tkit_dump(pr));
    ck_assert_int_eq(tkit_geti(pr, "steps"), 7);
    ck_assert_msg(json_is_integer(tkit_get(pr, "peer")), "%s", tkit_dump(pr));
    ck_assert_int_eq(tkit_geti(pr, "peer"), k);
    ck_assert_msg(json_is_true(tkit_get(pr, "armed")), "%s", tkit_dump(pr));
    ck_assert_msg(json_is_null(tkit_get(pr, "offspring")), "%s", tkit_dump(pr));
    /* Defaults from the declarations. */
    ck_assert_double_eq(tkit_getd(pr, "seen"), -1.0);
    ck_assert_double_eq(tkit_getd(pr, "timer_rate"), 0.0);

    /* The host validates against the declarations; nothing is created. */
    long long before = entities(c);
    tkit_err(c, TKIT_INVALID_PARAMS, "props.level: must be in [0, 100]", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"level\":101}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props.steps: must be an integer", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"steps\":1.5}}");
    tkit_err(c, TKIT_NOT_FOUND, "props.peer: entity 999 does not exist", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"peer\":999}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props.armed: must be true or false", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"armed\":1}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "class 'probe' has no prop 'nope'", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"nope\":1}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props.offspring: must be entity.spawn params", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"offspring\":5}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props.offspring.class: unknown class 'nope'",
             "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"offspring\":{\"class\":\"nope\"}}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "components[0].props.level: must be in [0, 100]",
             "entity.spawn",
             "{\"class\":\"counter\",\"components\":"
             "[{\"class\":\"probe\",\"props\":{\"level\":-1}}]}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props.level", "tickable.add",
             "{\"class\":\"probe\",\"props\":{\"level\":1000}}");
    ck_assert_int_eq(entities(c), before);
    /* entity.set_props too, before any change. */
    tkit_err(c, TKIT_INVALID_PARAMS, "props.level: must be in [0, 100]", "entity.set_props",
             "{\"id\":%lld,\"props\":{\"x\":3,\"level\":-1}}", p);
    pr = props(c, p);
    ck_assert_double_eq(tkit_getd(pr, "x"), 1.5);
    ck_assert_int_eq(tkit_geti(pr, "changes"), 0);
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_check_refuses)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long t = tickable(c, "{\"class\":\"tally\"}");
    /* 100 entities, each with a good and a refused component: nothing at all. */
    tkit_err(c, TKIT_INVALID_PARAMS,
             "components[1].props: armed: an armed probe needs a level of at most 50 (got 80)",
             "entity.spawn",
             "{\"class\":\"probe\",\"count\":100,\"components\":["
             "{\"class\":\"probe\",\"props\":{\"armed\":true,\"level\":20}},"
             "{\"class\":\"probe\",\"props\":{\"armed\":true,\"level\":80}}]}");
    tkit_err(c, TKIT_INVALID_PARAMS, "props: armed: an armed probe needs a level of at most 50",
             "entity.spawn",
             "{\"class\":\"probe\",\"count\":100,\"props\":{\"armed\":true,\"level\":50.5}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "armed: an armed probe", "tickable.add",
             "{\"class\":\"probe\",\"props\":{\"armed\":true,\"level\":99}}");
    step(c, 1);
    ck_assert_int_eq(entities(c), 0);
    ck_assert_int_eq(listed(c, "probe"), 0);
    json_t *tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "created"), 0);
    ck_assert_int_eq(tkit_geti(tp, "live"), 0);
    /* The refusal consumed no id; the good combination passes. */
    json_t *r = tkit_ok(c, "entity.spawn",
                        "{\"class\":\"probe\",\"count\":100,\"props\":{\"armed\":true,"
                        "\"level\":50},\"components\":["
                        "{\"class\":\"probe\",\"props\":{\"armed\":true,\"level\":20}},"
                        "{\"class\":\"probe\",\"props\":{\"armed\":false,\"level\":80}}]}");
    ck_assert_int_eq(tkit_geti(r, "ids[0]"), 1);
    ck_assert_int_eq(json_array_size(tkit_get(r, "ids")), 100);
    step(c, 1);
    tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "created"), 300);
    ck_assert_int_eq(tkit_geti(tp, "live"), 300);
    ck_assert_double_eq(tkit_getd(tp, "level_sum"), 100 * (50 + 20 + 80));
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_create_destroy_hooks)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long t = tickable(c, "{\"class\":\"tally\"}");
    long long p = spawn(c, "{\"class\":\"probe\",\"count\":5}");
    long long e = spawn(c, "{\"class\":\"counter\",\"components\":[{\"class\":\"probe\"},"
                           "{\"class\":\"probe\"}]}");
    step(c, 1);
    json_t *tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "created"), 7);
    ck_assert_int_eq(tkit_geti(tp, "destroyed"), 0);
    ck_assert_int_eq(tkit_geti(tp, "live"), 7);
    ck_assert(json_is_true(tkit_get(tp, "ordered")));

    /* entity.destroy: an actor and an entity with two probe components. */
    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld,%lld]}", p + 1, e);
    step(c, 1);
    tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "destroyed"), 3);
    ck_assert_int_eq(tkit_geti(tp, "live"), 4);

    /* level.remove. */
    tkit_ok(c, "level.add", "{\"name\":\"lv\"}");
    spawn(c, "{\"class\":\"probe\",\"count\":2,\"level\":\"lv\"}");
    step(c, 1);
    ck_assert_int_eq(tkit_geti(tprops(c, t), "created"), 9);
    tkit_ok(c, "level.remove", "{\"name\":\"lv\"}");
    step(c, 1);
    tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "destroyed"), 5);
    ck_assert_int_eq(tkit_geti(tp, "live"), 4);

    /* A life span: destroyed by the world's timer at 0.05 s. */
    long long l = spawn(c, "{\"class\":\"probe\",\"life_span\":0.05}");
    step(c, 10);
    tkit_err(c, TKIT_NOT_FOUND, NULL, "entity.get", "{\"id\":%lld}", l);
    step(c, 1);
    tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "created"), 10);
    ck_assert_int_eq(tkit_geti(tp, "destroyed"), 6);
    ck_assert_int_eq(tkit_geti(tp, "live"), 4);
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_props_changed)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long p = spawn(c, "{\"class\":\"probe\",\"props\":{\"level\":3}}");
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"level\":9}}", p);
    json_t *pr = props(c, p);
    ck_assert_int_eq(tkit_geti(pr, "changes"), 1);
    ck_assert_double_eq(tkit_getd(pr, "old_level"), 3.0);
    ck_assert_double_eq(tkit_getd(pr, "level"), 9.0);
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"armed\":true,\"y\":4}}", p);
    pr = props(c, p);
    ck_assert_int_eq(tkit_geti(pr, "changes"), 2);
    ck_assert_double_eq(tkit_getd(pr, "old_level"), 9.0);
    ck_assert(json_is_true(tkit_get(pr, "armed")));
    ck_assert_double_eq(tkit_getd(pr, "y"), 4.0);
    tkit_finish(d);
}
END_TEST

/* The timers of the world owned by entity `owner`. */
static json_t *timers_of(tkit_conn *c, long long owner)
{
    json_t *all = tkit_get(tkit_ok(c, "timer.list", NULL), "timers");
    json_t *mine = tkit_json("[]");
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *t = json_array_get(all, i);
        json_t *o = json_object_get(t, "owner");
        if (json_is_integer(o) && json_integer_value(o) == owner)
            json_array_append(mine, t);
    }
    return mine;
}

START_TEST(plugins_timer)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long p = spawn(c, "{\"class\":\"probe\",\"props\":{\"timer_rate\":0.05}}");
    json_t *ts = timers_of(c, p);
    ck_assert_int_eq(json_array_size(ts), 1);
    ck_assert_double_eq_tol(tkit_getd(ts, "[0].rate"), 0.05, 1e-12);
    ck_assert(tkit_getb(ts, "[0].loop"));
    /* Every 5 frames of 0.01 s, exactly. */
    step(c, 20);
    long long f20 = count(c, p, "timer_fires");
    ck_assert_int_ge(f20, 3);
    step(c, 10);
    ck_assert_int_eq(count(c, p, "timer_fires"), f20 + 2);
    /* props_changed clears it (timer_clear) ... */
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"timer_rate\":0}}", p);
    ck_assert_int_eq(json_array_size(timers_of(c, p)), 0);
    step(c, 10);
    ck_assert_int_eq(count(c, p, "timer_fires"), f20 + 2);
    /* ... and sets another. */
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"timer_rate\":0.02}}", p);
    ts = timers_of(c, p);
    ck_assert_int_eq(json_array_size(ts), 1);
    ck_assert_double_eq_tol(tkit_getd(ts, "[0].rate"), 0.02, 1e-12);
    step(c, 2);
    long long f = count(c, p, "timer_fires");
    step(c, 10);
    ck_assert_int_eq(count(c, p, "timer_fires"), f + 5);
    /* A component's timer belongs to its entity; destroying either clears it. */
    long long e = spawn(c, "{\"class\":\"counter\",\"components\":[{\"class\":\"probe\","
                           "\"props\":{\"timer_rate\":0.03}}]}");
    ck_assert_int_eq(json_array_size(timers_of(c, e)), 1);
    step(c, 6);
    ck_assert_int_ge(tkit_geti(entity(c, e), "components[0].props.timer_fires"), 1);
    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld,%lld]}", p, e);
    ck_assert_int_eq(json_array_size(timers_of(c, p)), 0);
    ck_assert_int_eq(json_array_size(timers_of(c, e)), 0);
    step(c, 10); /* nothing fires into the freed instances (ASan pass) */
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_spawn_prop)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    /* A template: 3 probes of level 7 at the spawner's second tick, ticking
     * in that same frame through the newly-spawned pass. */
    long long p = spawn(c, "{\"class\":\"probe\",\"props\":{\"spawn_at\":2,\"offspring\":"
                           "{\"class\":\"probe\",\"count\":3,\"props\":{\"level\":7}}}}");
    json_t *pr = props(c, p);
    ck_assert_str_eq(tkit_gets(pr, "offspring.class"), "probe");
    ck_assert_int_eq(tkit_geti(pr, "offspring.count"), 3);
    step(c, 1);
    ck_assert_int_eq(listed(c, "probe"), 1);
    step(c, 1);
    ck_assert_int_eq(count(c, p, "spawned"), 1);
    ck_assert_int_eq(listed(c, "probe"), 4);
    for (long long id = p + 1; id <= p + 3; id++) {
        pr = props(c, id);
        ck_assert_double_eq(tkit_getd(pr, "level"), 7.0);
        ck_assert_int_eq(tkit_geti(pr, "steps"), 1);
        ck_assert_int_eq(tkit_geti(pr, "owner"), id);
        ck_assert_double_eq(tkit_getd(pr, "role"), -1.0);
    }

    /* "self": a copy with the props as they are (spawn_at already passed
     * for the copy, so no chain).  Its id and spawn props are set: see
     * plugins_self_spawn_unset_* for unset ones. */
    long long s = spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"level\":4,\"spawn_at\":1,"
                               "\"offspring\":\"self\",\"spare\":\"self\",\"peer\":%lld}}",
                               p));
    ck_assert_str_eq(tkit_gets(props(c, s), "offspring"), "self");
    step(c, 1);
    ck_assert_int_eq(count(c, s, "spawned"), 1);
    pr = props(c, s + 1);
    ck_assert_double_eq(tkit_getd(pr, "level"), 4.0);
    ck_assert_str_eq(tkit_gets(pr, "offspring"), "self");
    ck_assert_int_eq(tkit_geti(pr, "spawn_at"), 1);
    ck_assert_int_eq(tkit_geti(pr, "peer"), p);
    step(c, 3);
    ck_assert_int_eq(listed(c, "probe"), 6);

    /* Nothing to spawn: refused, counted and logged through api->log. */
    long long n = spawn(c, "{\"class\":\"probe\",\"props\":{\"spawn_at\":1}}");
    step(c, 1);
    pr = props(c, n);
    ck_assert_int_eq(tkit_geti(pr, "spawn_errors"), 1);
    ck_assert_int_eq(tkit_geti(pr, "spawned"), 0);
    const char *want = fmt("warn: probe of entity %lld could not spawn: nothing to spawn", n);
    ck_assert_msg(strstr(tkit_stderr(d), want), "no \"%s\" in:\n%s", want, tkit_stderr(d));
    ck_assert_int_eq(listed(c, "probe"), 7);
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_entity_state_for_each)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long t = tickable(c, "{\"class\":\"tally\"}");
    long long k = spawn(c, "{\"class\":\"counter\"}");
    long long a = spawn(c, "{\"class\":\"probe\",\"props\":{\"level\":5}}");
    long long b = spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"peer\":%lld}}", a));
    long long x = spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"peer\":%lld}}", k));
    tickable(c, "{\"class\":\"probe\",\"props\":{\"level\":2}}");
    spawn(c, "{\"class\":\"counter\",\"components\":[{\"class\":\"mover\"},"
             "{\"class\":\"probe\",\"props\":{\"level\":3}}]}");
    step(c, 1);
    ck_assert_double_eq(num(c, b, "seen"), 5.0);  /* a probe's state */
    ck_assert_double_eq(num(c, x, "seen"), -1.0); /* a counter: not a probe */
    ck_assert_double_eq(num(c, a, "seen"), -1.0); /* no peer */
    json_t *tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "live"), 5);
    ck_assert_double_eq(tkit_getd(tp, "level_sum"), 5 + 1 + 1 + 2 + 3);
    ck_assert(json_is_true(tkit_get(tp, "ordered")));
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"level\":8}}", a);
    step(c, 1);
    ck_assert_double_eq(num(c, b, "seen"), 8.0);
    ck_assert_double_eq(tkit_getd(tprops(c, t), "level_sum"), 8 + 1 + 1 + 2 + 3);
    /* The peer gone: entity_state finds nothing. */
    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld]}", a);
    step(c, 1);
    ck_assert_double_eq(num(c, b, "seen"), -1.0);
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_roles)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long a = spawn(c, "{\"class\":\"probe\",\"props\":{\"level\":2}}");
    long long e = spawn(c, "{\"class\":\"counter\",\"components\":[{\"class\":\"mover\"},"
                           "{\"class\":\"probe\",\"props\":{\"level\":3}}]}");
    long long k = tickable(c, "{\"class\":\"probe\",\"props\":{\"level\":4}}");
    /* A built-in follower follows a plugin entity (its declared position). */
    long long f = spawn(c, fmt("{\"class\":\"follower\",\"props\":{\"target\":%lld}}", a));

    json_t *pa = props(c, a);
    ck_assert_double_eq(tkit_getd(pa, "role"), -1.0);
    ck_assert_int_eq(tkit_geti(pa, "owner"), a);
    ck_assert(json_is_true(tkit_get(pa, "class_ok")));
    json_t *ge = entity(c, e);
    ck_assert_str_eq(tkit_gets(ge, "components[1].class"), "probe");
    ck_assert_double_eq(tkit_getd(ge, "components[1].props.role"), 1.0);
    ck_assert_int_eq(tkit_geti(ge, "components[1].props.owner"), e);
    ck_assert(tkit_getb(ge, "components[1].props.class_ok"));
    json_t *pk = tprops(c, k);
    ck_assert_double_eq(tkit_getd(pk, "role"), -2.0);
    ck_assert_int_eq(tkit_geti(pk, "owner"), 0);
    ck_assert(json_is_true(tkit_get(pk, "class_ok")));

    /* tick.dump names the plugin class of each function. */
    ck_assert_str_eq(tkit_gets(dump_entry(c, a, -1), "class"), "probe");
    ck_assert_str_eq(tkit_gets(dump_entry(c, e, 1), "class"), "probe");
    ck_assert_str_eq(tkit_gets(dump_entry(c, e, 0), "class"), "mover");
    json_t *fe = dump_entry(c, f, -1);
    ck_assert_str_eq(tkit_gets(fe, "class"), "follower");
    ck_assert_int_eq(json_array_size(tkit_get(fe, "prerequisites")), 1);
    ck_assert_int_eq(tkit_geti(fe, "prerequisites[0]"), a);

    /* world.trace: the probe's actor and component tick, the follower after
     * the probe it follows. */
    json_t *frames = tkit_step_traced(c, 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *ticks = tkit_get(json_array_get(frames, i), "ticks");
        long ia = trace_index(ticks, a, -1), ie = trace_index(ticks, e, 1),
             iff = trace_index(ticks, f, -1);
        ck_assert_msg(ia >= 0 && ie >= 0 && iff >= 0, "trace: %s", tkit_dump(ticks));
        ck_assert_msg(ia < iff, "follower before its target: %s", tkit_dump(ticks));
    }
    step(c, 8);
    pa = props(c, a);
    ck_assert_int_eq(tkit_geti(pa, "steps"), 10);
    ck_assert_double_eq(tkit_getd(props(c, f), "x"), tkit_getd(pa, "x"));
    ck_assert_double_eq_tol(tkit_getd(pa, "x"), 10 * 2 * 0.01, 1e-6);
    ck_assert_int_eq(tkit_geti(entity(c, e), "components[1].props.steps"), 10);
    ck_assert_int_eq(tkit_geti(tprops(c, k), "steps"), 10);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "tickable.get", "{\"id\":%lld}", k), "ticks"), 10);
    tkit_finish(d);
}
END_TEST

/* A snapshot document without the fields that change with every save or
 * while paused frames pass (owned by the harness). */
static json_t *stable_snapshot(const char *path)
{
    const char *text = tkit_slurp(path);
    ck_assert_msg(text != NULL, "cannot read %s", path);
    json_t *doc = tkit_json("%s", text);
    json_object_del(doc, "saved_at");
    json_t *w = tkit_get(doc, "world");
    json_object_del(w, "frame");
    json_object_del(w, "unpaused_time");
    json_object_del(w, "real_time");
    json_object_del(w, "unpaused_time_ns");
    json_object_del(w, "real_time_ns");
    /* The probe's create hook sets a timer again when the loaded world is
     * swapped in, after its timers were restored: that timer takes the
     * next serial (README, Snapshots). */
    json_object_del(w, "timer_serial");
    return doc;
}

/* entity.get of every entity, in id order (owned by the harness). */
static json_t *all_entities(tkit_conn *c)
{
    json_t *ids = tkit_get(tkit_ok(c, "entity.list", "{\"limit\":1000}"), "ids");
    json_t *out = tkit_json("[]");
    for (size_t i = 0; i < json_array_size(ids); i++)
        json_array_append(out, entity(c, (long long)json_integer_value(json_array_get(ids, i))));
    return out;
}

/* Props of every entity and tickable, in order (owned by the harness). */
static json_t *all_props(tkit_conn *c)
{
    json_t *out = tkit_json("[]");
    json_t *es = all_entities(c);
    for (size_t i = 0; i < json_array_size(es); i++) {
        json_t *e = json_array_get(es, i);
        json_array_append(out, tkit_get(e, "props"));
        json_t *cs = tkit_get(e, "components");
        for (size_t j = 0; j < json_array_size(cs); j++)
            json_array_append(out, tkit_get(json_array_get(cs, j), "props"));
    }
    json_t *ts = tkit_get(tkit_ok(c, "tickable.list", NULL), "tickables");
    for (size_t i = 0; i < json_array_size(ts); i++)
        json_array_append(out, tkit_get(json_array_get(ts, i), "props"));
    return out;
}

/* Empty the tally props of an all_props() array: they count process-wide
 * creates and destroys, which differ between a daemon that loaded a
 * snapshot over its world and one that started with it (the live counts
 * after a load are checked by plugins_tickable_load). */
static void drop_tallies(json_t *all)
{
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *p = json_array_get(all, i);
        if (json_object_get(p, "created") && json_object_get(p, "ordered"))
            json_object_clear(p);
    }
}

/*
 * A world of plugin instances in every role, each with its id props and
 * spawn props set, saved, loaded and saved again.
 */
START_TEST(plugins_snapshot_round_trip)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    tkit_ok(c, "level.add", "{\"name\":\"arena\"}");
    long long lead = spawn(c, "{\"class\":\"mover\",\"level\":\"arena\",\"props\":{\"vx\":2}}");
    long long a = spawn(c, fmt("{\"class\":\"probe\",\"level\":\"arena\",\"props\":{\"level\":5,"
                               "\"peer\":%lld,\"timer_rate\":0.03,\"spawn_at\":100,"
                               "\"offspring\":{\"class\":\"probe\",\"count\":2,"
                               "\"props\":{\"level\":6,\"peer\":%lld,\"offspring\":\"self\"}},"
                               "\"spare\":\"self\"}}",
                               lead, lead));
    spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"peer\":%lld,\"armed\":true,"
                 "\"offspring\":\"self\",\"spare\":{\"class\":\"counter\"}}}",
                 a));
    spawn(c, fmt("{\"class\":\"counter\",\"components\":[{\"class\":\"probe\",\"props\":"
                 "{\"peer\":%lld,\"offspring\":\"self\",\"spare\":\"self\",\"level\":3}},"
                 "{\"class\":\"tally\"}]}",
                 a));
    for (int i = 0; i < 6; i++)
        spawn(c, fmt("{\"class\":\"boids\",\"level\":\"arena\",\"props\":{\"leader\":%lld,"
                     "\"x\":%d,\"y\":%d,\"vy\":1}}",
                     lead, 10 + 2 * i, 5 + (i % 3)));
    tickable(c, "{\"class\":\"tally\"}");
    tickable(c, fmt("{\"class\":\"probe\",\"props\":{\"peer\":%lld,\"offspring\":\"self\","
                    "\"spare\":\"self\",\"level\":2}}",
                    a));
    step(c, 7);
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"level\":4}}", a);

    const char *s1 = tkit_path(d, "s1.json"), *s2 = tkit_path(d, "s2.json");
    json_t *r = tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s1);
    ck_assert_int_eq(tkit_geti(r, "entities"), 10);
    ck_assert_int_eq(tkit_geti(r, "tickables"), 2);
    json_t *before = all_entities(c);
    json_t *tick_before = tkit_get(tkit_ok(c, "tickable.list", NULL), "tickables");
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", s1);
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s2);
    json_t *j1 = stable_snapshot(s1), *j2 = stable_snapshot(s2);
    ck_assert_msg(json_equal(j1, j2), "snapshots differ:\n%s\n%s", tkit_dump(j1), tkit_dump(j2));
    json_t *after = all_entities(c);
    ck_assert_msg(json_equal(before, after), "entities differ after load:\n%s\n%s",
                  tkit_dump(before), tkit_dump(after));
    json_t *tick_after = tkit_get(tkit_ok(c, "tickable.list", NULL), "tickables");
    ck_assert_msg(json_equal(tick_before, tick_after), "%s\n%s", tkit_dump(tick_before),
                  tkit_dump(tick_after));
    /* The boids' leader link is back (from the snapshot and create). */
    json_t *lb = tkit_get(entity(c, a + 3), "prerequisites");
    ck_assert_int_eq(json_array_size(lb), 1);
    ck_assert_int_eq(tkit_geti(lb, "[0]"), lead);
    ck_assert_int_eq(json_array_size(timers_of(c, a)), 1);

    /* The loaded world runs on as the same snapshot loaded by another daemon. */
    tkit_conn *c2;
    tkit_daemon *d2 = start_paused(&c2);
    /* Each daemon loads only from its own [snapshot] dir. */
    tkit_ok(c2, "world.load", "{\"path\":\"%s\"}",
            tkit_write_file(d2, "s1.json", tkit_slurp(s1)));
    step(c, 12);
    step(c2, 12);
    json_t *p1 = all_props(c), *p2 = all_props(c2);
    drop_tallies(p1);
    drop_tallies(p2);
    ck_assert_msg(json_equal(p1, p2), "after the load the worlds differ:\n%s\n%s", tkit_dump(p1),
                  tkit_dump(p2));
    ck_assert_int_ge(tkit_geti(props(c, a), "timer_fires"), 3);
    tkit_finish(d2);
    tkit_finish(d);
}
END_TEST

/*
 * Props left at their declared defaults: an id prop at 0 (none) and a spawn
 * prop never given are rendered as 0 and null.  A snapshot holding them
 * loads like any other.
 */
START_TEST(plugins_unset_props_snapshot)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    spawn(c, "{\"class\":\"probe\",\"props\":{\"level\":3}}");
    spawn(c, "{\"class\":\"boids\",\"count\":2,\"props\":{\"x\":1}}");
    tickable(c, "{\"class\":\"probe\"}");
    step(c, 2);
    json_t *pr = props(c, 1);
    ck_assert_int_eq(tkit_geti(pr, "peer"), 0);
    ck_assert(json_is_null(tkit_get(pr, "spare")));
    const char *s1 = tkit_path(d, "s1.json"), *s2 = tkit_path(d, "s2.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s1);
    json_t *before = all_props(c);
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", s1);
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s2);
    json_t *j1 = stable_snapshot(s1), *j2 = stable_snapshot(s2);
    ck_assert_msg(json_equal(j1, j2), "snapshots differ:\n%s\n%s", tkit_dump(j1), tkit_dump(j2));
    json_t *after = all_props(c);
    drop_tallies(before);
    drop_tallies(after);
    ck_assert_msg(json_equal(before, after), "%s\n%s", tkit_dump(before), tkit_dump(after));
    tkit_finish(d);
}
END_TEST

/* "self" copies the props as they are, an id prop at 0 (none) included. */
START_TEST(plugins_self_spawn_unset_id)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long p = spawn(c, "{\"class\":\"probe\",\"props\":{\"spawn_at\":1,\"offspring\":\"self\","
                           "\"spare\":\"self\"}}");
    step(c, 1);
    json_t *pr = props(c, p);
    ck_assert_msg(tkit_geti(pr, "spawned") == 1, "the copy was refused: %s\n%s", tkit_dump(pr),
                  tkit_stderr(d));
    ck_assert_int_eq(tkit_geti(props(c, p + 1), "peer"), 0);
    tkit_finish(d);
}
END_TEST

/* "self" copies the props as they are, a spawn prop never given included. */
START_TEST(plugins_self_spawn_unset_spawn)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long k = spawn(c, "{\"class\":\"counter\"}");
    long long p = spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"spawn_at\":1,"
                               "\"offspring\":\"self\",\"peer\":%lld}}",
                               k));
    step(c, 1);
    json_t *pr = props(c, p);
    ck_assert_msg(tkit_geti(pr, "spawned") == 1, "the copy was refused: %s\n%s", tkit_dump(pr),
                  tkit_stderr(d));
    ck_assert(json_is_null(tkit_get(props(c, p + 1), "spare")));
    tkit_finish(d);
}
END_TEST

/* destroy pairs with create for tickables as for entities. */
START_TEST(plugins_tickable_destroy_hook)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long t = tickable(c, "{\"class\":\"tally\"}");
    long long k = tickable(c, "{\"class\":\"probe\"}");
    spawn(c, "{\"class\":\"probe\"}");
    step(c, 1);
    json_t *tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "created"), 2);
    ck_assert_int_eq(tkit_geti(tp, "live"), 2);
    tkit_ok(c, "tickable.remove", "{\"id\":%lld}", k);
    step(c, 1);
    tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "live"), 1);
    ck_assert_msg(tkit_geti(tp, "destroyed") == 1, "removed tickable not destroyed: %s",
                  tkit_dump(tp));
    tkit_finish(d);
}
END_TEST

/*
 * A world.load replaces the tickables: for_each then visits each live one
 * once, and every instance alive went through create (creates minus
 * destroys is the number alive).
 */
START_TEST(plugins_tickable_load)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    /* Id and spawn props set (see plugins_unset_props_snapshot). */
    long long k = spawn(c, "{\"class\":\"counter\"}");
    long long t = tickable(c, "{\"class\":\"tally\"}");
    tickable(c, fmt("{\"class\":\"probe\",\"props\":{\"level\":2,\"peer\":%lld,"
                    "\"offspring\":\"self\",\"spare\":\"self\"}}",
                    k));
    spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"level\":5,\"peer\":%lld,"
                 "\"offspring\":\"self\",\"spare\":\"self\"}}",
                 k));
    step(c, 1);
    json_t *tp = tprops(c, t);
    ck_assert_int_eq(tkit_geti(tp, "live"), 2);
    ck_assert_double_eq(tkit_getd(tp, "level_sum"), 7.0);
    const char *s = tkit_path(d, "s.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s);
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", s);
    step(c, 1);
    tp = tprops(c, t);
    ck_assert_msg(tkit_geti(tp, "live") == 2 && tkit_getd(tp, "level_sum") == 7.0,
                  "for_each after the load: %s", tkit_dump(tp));
    ck_assert_msg(tkit_geti(tp, "created") - tkit_geti(tp, "destroyed") == 2,
                  "creates and destroys do not pair up: %s", tkit_dump(tp));
    tkit_finish(d);
}
END_TEST

/*
 * world.load of a world of probes (a plugin class whose create and destroy
 * hooks share state with its ticks) over another world of probes: the new
 * world is built aside and swapped in, and the hooks run on the frame
 * thread only (the probes count any call off it), each instance's once:
 * the old world's probes destroyed, the file's created (their timers run
 * in the new world).  The debug log says how many hooks the swap ran.
 */
START_TEST(plugins_hooked_load_aside)
{
    enum { N = 2000 };
    const char *cfg[] = {both(), "log.level=debug", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    long long p = spawn(c, fmt("{\"class\":\"probe\",\"count\":%d,\"props\":{\"level\":1,"
                               "\"timer_rate\":0.01}}",
                               N));
    spawn(c, fmt("{\"class\":\"counter\",\"count\":%d,\"components\":[{\"class\":\"probe\"}]}", N));
    tickable(c, "{\"class\":\"probe\"}");
    long long t = tickable(c, "{\"class\":\"tally\"}");
    step(c, 1);
    const char *s = tkit_path(d, "hooked.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s);
    /* Another world of probes: half the actors gone, new ones. */
    tkit_ok(c, "entity.destroy", "{\"first\":%lld,\"count\":%d}", p, N / 2);
    spawn(c, "{\"class\":\"probe\",\"count\":300}");
    step(c, 1);
    json_t *tp = tprops(c, t);
    long long created = tkit_geti(tp, "created"), destroyed = tkit_geti(tp, "destroyed");
    long long live = tkit_geti(tp, "live");
    ck_assert_int_eq(live, N / 2 + 300 + N + 1);
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", s);
    step(c, 3);
    tp = tprops(c, t);
    ck_assert_msg(tkit_geti(tp, "live") == 2 * N + 1 &&
                      tkit_geti(tp, "created") - created == 2 * N + 1 &&
                      tkit_geti(tp, "destroyed") - destroyed == live &&
                      tkit_geti(tp, "off_thread") == 0,
                  "after the load (before: %lld created, %lld destroyed, %lld live): %s", created,
                  destroyed, live, tkit_dump(tp));
    ck_assert_int_ge(count(c, p, "timer_fires"), 1);
    ck_assert_ptr_nonnull(strstr(tkit_stderr(d), fmt("(%lld destroy and %d create hooks on the "
                                                      "frame thread)",
                                                      live, 2 * N + 1)));
    tkit_finish(d);
}
END_TEST

/*
 * String and id-list props: typed, limited, checked by the class through
 * api->prop_string / prop_ids, kept across set_props (props_changed sees the
 * old string), copied by "self" spawns and saved in snapshots.
 */
START_TEST(plugins_string_and_ids_props)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long a = spawn(c, "{\"class\":\"probe\"}");
    long long b = spawn(c, "{\"class\":\"probe\"}");
    ck_assert_str_eq(tkit_gets(props(c, a), "label"), "");
    ck_assert_int_eq(json_array_size(tkit_get(props(c, a), "friends")), 0);
    long long p = spawn(c, fmt("{\"class\":\"probe\",\"props\":{\"label\":\"hello\","
                               "\"friends\":[%lld,%lld],\"offspring\":\"self\","
                               "\"spawn_at\":1}}",
                               a, b));
    json_t *pp = props(c, p);
    ck_assert_str_eq(tkit_gets(pp, "label"), "hello");
    ck_assert_int_eq(tkit_geti(pp, "friends[0]"), a);
    ck_assert_int_eq(tkit_geti(pp, "friends[1]"), b);
    step(c, 1);
    ck_assert_int_eq(count(c, p, "friends_seen"), 2);
    /* The "self" copy spawned at its first tick has the same label and friends. */
    ck_assert_int_eq(count(c, p, "spawned"), 1);
    json_t *cp = props(c, p + 1);
    ck_assert_str_eq(tkit_gets(cp, "label"), "hello");
    ck_assert_int_eq(tkit_geti(cp, "friends[1]"), b);

    /* Refused, creating nothing. */
    long long before = tkit_geti(tkit_ok(c, "entity.list", NULL), "total");
    tkit_err(c, TKIT_INVALID_PARAMS, "label: longer than 16 bytes", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"label\":\"seventeen bytes!!\"}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "label: must be a string", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"label\":5}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "forbidden", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"label\":\"forbidden\"}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "must be an array of entity ids", "entity.spawn",
             "{\"class\":\"probe\",\"props\":{\"friends\":[\"x\"]}}");
    tkit_err(c, TKIT_INVALID_PARAMS, "more than 4 ids", "entity.spawn",
             fmt("{\"class\":\"probe\",\"props\":{\"friends\":[%lld,%lld,%lld,%lld,%lld]}}",
                 a, a, a, a, a));
    tkit_err(c, TKIT_INVALID_PARAMS, "named twice", "entity.spawn",
             fmt("{\"class\":\"probe\",\"props\":{\"friends\":[%lld,%lld]}}", a, a));
    tkit_err(c, TKIT_NOT_FOUND, "friends[1]: entity 999999 does not exist", "entity.spawn",
             fmt("{\"class\":\"probe\",\"props\":{\"friends\":[%lld,999999]}}", a));
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "entity.list", NULL), "total"), before);

    /* set_props: props_changed sees the old label. */
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"label\":\"self\",\"friends\":[]}}",
            p);
    pp = props(c, p);
    ck_assert_str_eq(tkit_gets(pp, "label"), "self");
    ck_assert_int_eq(json_array_size(tkit_get(pp, "friends")), 0);
    ck_assert_int_eq(tkit_geti(pp, "old_label_len"), 5);
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"label\":\"\"}}", p);
    ck_assert_int_eq(count(c, p, "old_label_len"), 4);

    /* A friend destroyed stays listed; the snapshot keeps both props. */
    tkit_ok(c, "entity.destroy", "{\"ids\":[%lld]}", a);
    step(c, 1);
    ck_assert_int_eq(count(c, p + 1, "friends_seen"), 1);
    const char *s = tkit_path(d, "s.json");
    tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s);
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", s);
    cp = props(c, p + 1);
    ck_assert_str_eq(tkit_gets(cp, "label"), "hello");
    ck_assert_int_eq(tkit_geti(cp, "friends[0]"), a);
    tkit_finish(d);
}
END_TEST

/*
 * A tickable's plugin timer is owned by the tickable: timer.get names it,
 * it is not saved in snapshots, and tickable.remove clears it.
 */
START_TEST(plugins_tickable_timer)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long k = tickable(c, "{\"class\":\"probe\",\"props\":{\"timer_rate\":0.05}}");
    json_t *ts = tkit_get(tkit_ok(c, "timer.list", NULL), "timers");
    ck_assert_int_eq(json_array_size(ts), 1);
    ck_assert_int_eq(tkit_geti(ts, "[0].tickable"), k);
    ck_assert(!tkit_find(ts, "[0].owner") && !tkit_find(ts, "[0].action"));
    step(c, 20); /* 0.01 s frames: an expiry every 5 */
    long long f = tkit_geti(tprops(c, k), "timer_fires");
    ck_assert_int_ge(f, 3);
    step(c, 10);
    ck_assert_int_eq(tkit_geti(tprops(c, k), "timer_fires"), f + 2);
    const char *s = tkit_path(d, "s.json");
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.save", "{\"path\":\"%s\"}", s), "timers"), 0);
    /* The load replaces the tickable; its create sets a new timer. */
    tkit_ok(c, "world.load", "{\"path\":\"%s\"}", s);
    ts = tkit_get(tkit_ok(c, "timer.list", NULL), "timers");
    ck_assert_int_eq(json_array_size(ts), 1);
    ck_assert_int_eq(tkit_geti(ts, "[0].tickable"), k);
    tkit_ok(c, "tickable.remove", "{\"id\":%lld}", k);
    ck_assert_int_eq(json_array_size(tkit_get(tkit_ok(c, "timer.list", NULL), "timers")), 0);
    step(c, 20); /* nothing fires into the freed instance (ASan pass) */
    tkit_finish(d);
}
END_TEST

/* `method` {"path": path} and world.step {"frames": n} in one batch, so that
 * no pause frame runs between them (the frame counter moves on while
 * paused); returns the batch's responses. */
static json_t *then_step(tkit_conn *c, const char *method, const char *path, int n)
{
    tkit_sendf(c,
               "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":{\"path\":\"%s\"}},"
               "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"world.step\",\"params\":"
               "{\"frames\":%d}}]\n",
               method, path, n);
    json_t *r = tkit_recv(c);
    ck_assert_msg(json_is_array(r) && !tkit_find(r, "[0].error") && !tkit_find(r, "[1].error"),
                  "%s", tkit_dump(r));
    return r;
}

/*
 * world.load puts ctx->frame back; ctx->serial keeps growing.
 */
START_TEST(plugins_serial_after_load)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long t = tickable(c, "{\"class\":\"tally\"}");
    spawn(c, "{\"class\":\"probe\"}");
    step(c, 3);
    const char *s = tkit_path(d, "s.json");
    then_step(c, "world.save", s, 5); /* probe ticks at frames S .. S+4 */
    then_step(c, "world.load", s, 2); /* and again at S, S+1 */
    json_t *tp = tprops(c, t);
    ck_assert_msg(tkit_geti(tp, "frame_back") == 1 && tkit_geti(tp, "serial_back") == 0,
                  "frame and serial across a load: %s", tkit_dump(tp));
    tkit_finish(d);
}
END_TEST

/* ---- boids through the protocol ------------------------------------------------------------ */

/* Mean distance of the flock to the leader and RMS distance to its centre. */
static void flock_measure(tkit_conn *c, long long leader, long long first, int n, double *dist,
                          double *spread)
{
    json_t *lp = props(c, leader);
    double lx = tkit_getd(lp, "x"), ly = tkit_getd(lp, "y");
    double xs[64], ys[64], cx = 0, cy = 0;
    ck_assert_int_le(n, 64);
    for (int i = 0; i < n; i++) {
        json_t *p = props(c, first + i);
        xs[i] = tkit_getd(p, "x");
        ys[i] = tkit_getd(p, "y");
        cx += xs[i] / n;
        cy += ys[i] / n;
    }
    double dsum = 0, ssum = 0;
    for (int i = 0; i < n; i++) {
        dsum += hypot(xs[i] - lx, ys[i] - ly);
        ssum += (xs[i] - cx) * (xs[i] - cx) + (ys[i] - cy) * (ys[i] - cy);
    }
    *dist = dsum / n;
    *spread = sqrt(ssum / n);
}

START_TEST(plugins_boids_flock)
{
    const char *cfg[] = {both(), NULL};
    static const char *const args[] = {"--config", "@CONFIG@", "--fixed-dt", "0.05", NULL};
    tkit_opts o = {.config = cfg, .args = args};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "world.pause", NULL);
    long long lead = spawn(c, "{\"class\":\"mover\",\"props\":{\"vx\":1}}");
    long long first = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) {
            long long id = spawn(c, fmt("{\"class\":\"boids\",\"props\":{\"leader\":%lld,"
                                        "\"x\":%d,\"y\":%d}}",
                                        lead, 50 + 6 * i, 40 + 6 * j));
            if (!first)
                first = id;
        }
    double d0, s0, d1, s1;
    flock_measure(c, lead, first, 20, &d0, &s0);
    step(c, 160);
    flock_measure(c, lead, first, 20, &d1, &s1);
    ck_assert_msg(d1 < 0.25 * d0, "flock not closer to its leader: %.3f -> %.3f", d0, d1);
    ck_assert_msg(s1 < 0.75 * s0, "flock spread did not shrink: %.3f -> %.3f", s0, s1);
    json_t *e = entity(c, first + 19);
    ck_assert_int_eq(tkit_geti(e, "tick.ticks"), 160);
    ck_assert_double_eq_tol(tkit_getd(e, "tick.last_dt"), 0.05, 1e-6);
    /* Speeds stay within max_speed (10 units/s). */
    for (int i = 0; i < 20; i++) {
        json_t *p = props(c, first + i);
        ck_assert_double_le(hypot(tkit_getd(p, "vx"), tkit_getd(p, "vy")), 10.0 + 1e-9);
    }
    tkit_finish(d);
}
END_TEST

/* Distance in the plane between the positions of two entities. */
static double distance(tkit_conn *c, long long a, long long b)
{
    json_t *pa = props(c, a), *pb = props(c, b);
    return hypot(tkit_getd(pa, "x") - tkit_getd(pb, "x"), tkit_getd(pa, "y") - tkit_getd(pb, "y"));
}

START_TEST(plugins_boids_leader_prerequisite)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    /* Boids without a leader first, then a leader ticking in post_physics. */
    long long b = spawn(c, "{\"class\":\"boids\",\"count\":4,\"props\":{\"vx\":1}}");
    long long lead = spawn(c, "{\"class\":\"mover\",\"tick\":{\"group\":\"post_physics\"},"
                              "\"props\":{\"x\":30,\"vy\":1}}");
    /* Two get the leader through entity.set_props (props_changed), two more
     * boids get it at spawn (create). */
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"leader\":%lld}}", b, lead);
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"leader\":%lld}}", b + 1, lead);
    long long s = spawn(c, fmt("{\"class\":\"boids\",\"count\":2,\"props\":{\"leader\":%lld,"
                               "\"y\":-40}}",
                               lead));
    long long followers[] = {b, b + 1, s, s + 1};
    for (int i = 0; i < 4; i++) {
        json_t *pre = tkit_get(entity(c, followers[i]), "prerequisites");
        ck_assert_msg(json_array_size(pre) == 1 && tkit_geti(pre, "[0]") == lead,
                      "boid %lld prerequisites %s", followers[i], tkit_dump(pre));
    }
    ck_assert_int_eq(json_array_size(tkit_get(entity(c, b + 2), "prerequisites")), 0);

    json_t *frames = tkit_step_traced(c, 2);
    for (size_t f = 0; f < 2; f++) {
        json_t *ticks = tkit_get(json_array_get(frames, f), "ticks");
        long il = trace_index(ticks, lead, -1);
        ck_assert_msg(il >= 0, "%s", tkit_dump(ticks));
        for (int i = 0; i < 4; i++) {
            long ib = trace_index(ticks, followers[i], -1);
            ck_assert_msg(ib > il, "boid %lld ticked before its leader: %s", followers[i],
                          tkit_dump(ticks));
            /* Demoted to the leader's group, as an attached child. */
            ck_assert_str_eq(tkit_gets(json_array_get(ticks, (size_t)ib), "group"),
                             "post_physics");
        }
        long ifree = trace_index(ticks, b + 2, -1);
        ck_assert_msg(ifree >= 0 && ifree < il, "%s", tkit_dump(ticks));
        ck_assert_str_eq(tkit_gets(json_array_get(ticks, (size_t)ifree), "group"), "pre_physics");
    }
    ck_assert_str_eq(tkit_gets(entity(c, b), "tick.actual_group"), "post_physics");

    /* Another leader: the old prerequisite goes, the new one comes. */
    long long lead2 = spawn(c, "{\"class\":\"mover\"}");
    tkit_ok(c, "entity.set_props", "{\"id\":%lld,\"props\":{\"leader\":%lld}}", b, lead2);
    json_t *pre = tkit_get(entity(c, b), "prerequisites");
    ck_assert_msg(json_array_size(pre) == 1 && tkit_geti(pre, "[0]") == lead2, "%s",
                  tkit_dump(pre));
    frames = tkit_step_traced(c, 1);
    json_t *ticks = tkit_get(json_array_get(frames, 0), "ticks");
    long ib = trace_index(ticks, b, -1);
    ck_assert_msg(ib > trace_index(ticks, lead2, -1), "%s", tkit_dump(ticks));
    ck_assert_str_eq(tkit_gets(json_array_get(ticks, (size_t)ib), "group"), "pre_physics");

    /* The seek: a boid with a leader, alone, heads for it. */
    double d0 = distance(c, lead, s);
    step(c, 50);
    double d1 = distance(c, lead, s);
    ck_assert_msg(d1 < d0 - 1, "boid did not close in on its leader: %.3f -> %.3f", d0, d1);
    tkit_finish(d);
}
END_TEST

START_TEST(plugins_boids_check)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long lead = spawn(c, "{\"class\":\"mover\"}");
    tkit_err(c, TKIT_INVALID_PARAMS, "max_speed: a boid with a leader needs a max_speed above 0",
             "entity.spawn",
             "{\"class\":\"boids\",\"count\":50,\"props\":{\"leader\":%lld,\"max_speed\":0}}",
             lead);
    ck_assert_int_eq(listed(c, "boids"), 0);
    spawn(c, "{\"class\":\"boids\",\"props\":{\"max_speed\":0}}");
    ck_assert_int_eq(listed(c, "boids"), 1);
    tkit_finish(d);
}
END_TEST

/* Spawn the same flock in a daemon: `batch` as each spawn's tick.batch. */
static void spawn_flock(tkit_conn *c, bool batch, long long *first, int *n)
{
    const char *tick = batch ? "" : ",\"tick\":{\"batch\":false}";
    long long l1 = spawn(c, fmt("{\"class\":\"mover\",\"props\":{\"x\":-20,\"vx\":1}%s}", tick));
    long long l2 = spawn(c, fmt("{\"class\":\"mover\",\"props\":{\"x\":40,\"y\":30,\"vy\":-2}%s}",
                                tick));
    *first = 0;
    *n = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) {
            long long lead = (i + j) % 3 == 0 ? 0 : (i < 4 ? l1 : l2);
            const char *lp = lead ? fmt(",\"leader\":%lld", lead) : "";
            long long id = spawn(c, fmt("{\"class\":\"boids\",\"props\":{\"x\":%g,\"y\":%g,"
                                        "\"vx\":%g,\"vy\":%g,\"radius\":6%s}%s}",
                                        i * 2.5, j * 3.0 + (i % 2), (i - 4) * 0.3,
                                        (j - 3) * 0.2, lp, tick));
            if (!*first)
                *first = id;
            (*n)++;
        }
}

/* slow_tick events of class `cls` among the messages stashed on `c`; sets
 * *batched to the largest "batch" seen (0: none). */
static int slow_ticks(tkit_conn *c, const char *cls, long long *batched)
{
    int n = 0;
    *batched = 0;
    while (tkit_stashed(c) > 0) {
        json_t *m = tkit_recv(c);
        json_t *method = json_object_get(m, "method");
        if (!json_is_string(method) || strcmp(json_string_value(method), "event.slow_tick") != 0)
            continue;
        json_t *p = tkit_get(m, "params");
        if (strcmp(tkit_gets(p, "class"), cls) != 0)
            continue;
        n++;
        json_t *b = json_object_get(p, "batch");
        if (json_is_integer(b) && json_integer_value(b) > *batched)
            *batched = json_integer_value(b);
    }
    return n;
}

/* One step with slow_tick events on (every tick function reports: the
 * threshold is 1 ns), stashed until read. */
static void step_reporting(tkit_conn *c)
{
    tkit_ok(c, "events.subscribe", "{\"topics\":[\"slow_tick\"]}");
    long long id = tkit_send_request(c, "world.step", "{\"frames\":1}");
    tkit_assert_result(tkit_recv_id(c, id));
    tkit_ok(c, "events.unsubscribe", NULL);
}

START_TEST(plugins_boids_batch_identical)
{
    const char *more = "stats.slow_tick_ms=0.000001";
    tkit_conn *ca, *cb;
    tkit_daemon *da = start_paused_with(both(), more, &ca);
    tkit_daemon *db = start_paused_with(both(), more, &cb);
    long long fa, fb;
    int na, nb;
    spawn_flock(ca, true, &fa, &na);
    spawn_flock(cb, false, &fb, &nb);
    ck_assert_int_eq(fa, fb);
    ck_assert_int_eq(na, nb);
    ck_assert(tkit_getb(entity(ca, fa), "tick.batch"));
    ck_assert(!tkit_getb(entity(cb, fb), "tick.batch"));
    json_t *start = props(ca, fa + 7);

    /* The batched daemon runs boids through tick_batch, the other one by one. */
    step_reporting(ca);
    step_reporting(cb);
    long long batched_a, batched_b;
    ck_assert_int_gt(slow_ticks(ca, "boids", &batched_a), 0);
    ck_assert_msg(batched_a >= 2, "no boids batch in the batched daemon");
    ck_assert_int_ge(slow_ticks(cb, "boids", &batched_b), na);
    ck_assert_msg(batched_b == 0, "a batch of %lld in the unbatched daemon", batched_b);

    for (int round = 0; round < 3; round++) {
        step(ca, 20);
        step(cb, 20);
        for (int i = 0; i < na; i++) {
            json_t *pa = props(ca, fa + i), *pb = props(cb, fb + i);
            ck_assert_msg(json_equal(pa, pb),
                          "boid %lld after %d frames:\nbatched   %s\nunbatched %s", fa + i,
                          1 + 20 * (round + 1), tkit_dump(pa), tkit_dump(pb));
        }
    }
    /* Not a comparison of standing still. */
    ck_assert_msg(!json_equal(start, props(ca, fa + 7)), "the flock did not move");
    tkit_finish(db);
    tkit_finish(da);
}
END_TEST

/*
 * A class's batch form receives its run's own states (tkp_run): tallies
 * spawned interleaved with movers and probes, a third of them destroyed, then
 * stepped; every tally ticked through the batch form, and in each run the
 * i-th state was the i-th instance's (probe.c counts the others in
 * bad_runs).  With tick.batch false they tick one by one: batched stays 0.
 */
START_TEST(plugins_batch_gets_runs)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long ids[90];
    for (int i = 0; i < 90; i++)
        ids[i] = spawn(c, i % 3 == 0   ? "{\"class\":\"tally\"}"
                          : i % 3 == 1 ? "{\"class\":\"mover\",\"props\":{\"vx\":1}}"
                                       : "{\"class\":\"probe\"}");
    long long solo = spawn(c, "{\"class\":\"tally\",\"tick\":{\"batch\":false}}");
    step(c, 2);
    for (int i = 0; i < 90; i += 7)
        tkit_ok(c, "entity.destroy", "{\"ids\":[%lld]}", ids[i]);
    step(c, 5);
    int alive = 0;
    for (int i = 0; i < 90; i += 3) {
        if (i % 7 == 0)
            continue;
        alive++;
        json_t *p = props(c, ids[i]);
        ck_assert_int_eq(tkit_geti(p, "batched"), 7);
        ck_assert_int_eq(tkit_geti(p, "bad_runs"), 0);
        /* Each tally counted the live probes. */
        ck_assert_int_eq(tkit_geti(p, "live"), 30 - 4);
    }
    ck_assert_int_eq(alive, 30 - 5);
    ck_assert_int_eq(count(c, solo, "batched"), 0);
    ck_assert_int_eq(count(c, solo, "live"), 30 - 4);
    tkit_finish(d);
}
END_TEST

/*
 * A snapshot loaded and stepped gives what stepping from the save gave,
 * even when the load rewinds the frame counter to a frame the flock
 * already ticked (the save and the load each in one batch with the step).
 */
START_TEST(plugins_boids_load_replays)
{
    tkit_conn *c;
    tkit_daemon *d = start_paused(&c);
    long long lead = spawn(c, "{\"class\":\"mover\",\"props\":{\"vx\":1}}");
    long long first = 0;
    for (int i = 0; i < 12; i++) {
        long long id = spawn(c, fmt("{\"class\":\"boids\",\"props\":{\"leader\":%lld,"
                                    "\"x\":%d,\"y\":%d}}",
                                    lead, 10 + 3 * (i % 4), 10 + 3 * (i / 4)));
        if (!first)
            first = id;
    }
    step(c, 3);
    const char *s = tkit_path(d, "s.json");
    then_step(c, "world.save", s, 1);
    json_t *want = all_props(c);
    ck_assert_int_eq(tkit_geti(then_step(c, "world.load", s, 1), "[0].result.entities"), 13);
    json_t *got = all_props(c);
    ck_assert_msg(json_equal(want, got), "replayed frame differs:\nfirst  %s\nreplay %s",
                  tkit_dump(want), tkit_dump(got));
    tkit_finish(d);
}
END_TEST

/* ---- the suite ------------------------------------------------------------------------------ */

/* A plugin built for ABI 2 loads; its class is not thread-safe (ABI 2 has no
 * flags), so its ticks never run as parallel work. */
START_TEST(plugins_abi2_loads_not_thread_safe)
{
    const char *load = fmt("plugins.load=%s", tplugin("abi2"));
    const char *const cfg[] = {load, "engine.threads=2", "engine.split_min_us=0.001", NULL};
    tkit_opts o = {.config = cfg};
    tkit_daemon *d = tkit_start(&o);
    tkit_conn *c = tkit_connect(d);
    tkit_ok(c, "entity.spawn", "{\"class\":\"elder\",\"count\":10}");
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":10}");
    tkit_wait_frames(c, 2);
    json_t *st = tkit_ok(c, "engine.stats", NULL);
    ck_assert_int_eq(tkit_geti(st, "ticks_run_last_frame"), 20);
    /* The counters ran as parallel work, the elders did not. */
    ck_assert_int_eq(tkit_geti(st, "threads.parallel_ticks"), 10);
    tkit_finish(d);
}
END_TEST

static Suite *plugins_suite(void)
{
    Suite *s = suite_create("plugins");
    TCase *tc = tcase_create("plugins");
    tcase_set_timeout(tc, tkit_scale(60));
    tcase_add_loop_test(tc, plugins_load_refused, 0, N_REFUSALS);
    tcase_add_test(tc, plugins_load_good);
    tcase_add_test(tc, plugins_classes_listed);
    tcase_add_test(tc, plugins_props_typed);
    tcase_add_test(tc, plugins_check_refuses);
    tcase_add_test(tc, plugins_create_destroy_hooks);
    tcase_add_test(tc, plugins_props_changed);
    tcase_add_test(tc, plugins_timer);
    tcase_add_test(tc, plugins_spawn_prop);
    tcase_add_test(tc, plugins_entity_state_for_each);
    tcase_add_test(tc, plugins_roles);
    tcase_add_test(tc, plugins_snapshot_round_trip);
    tcase_add_test(tc, plugins_unset_props_snapshot);
    tcase_add_test(tc, plugins_self_spawn_unset_id);
    tcase_add_test(tc, plugins_self_spawn_unset_spawn);
    tcase_add_test(tc, plugins_tickable_destroy_hook);
    tcase_add_test(tc, plugins_tickable_load);
    tcase_add_test(tc, plugins_hooked_load_aside);
    tcase_add_test(tc, plugins_tickable_timer);
    tcase_add_test(tc, plugins_string_and_ids_props);
    tcase_add_test(tc, plugins_serial_after_load);
    tcase_add_test(tc, plugins_boids_flock);
    tcase_add_test(tc, plugins_boids_leader_prerequisite);
    tcase_add_test(tc, plugins_boids_check);
    tcase_add_test(tc, plugins_boids_batch_identical);
    tcase_add_test(tc, plugins_batch_gets_runs);
    tcase_add_test(tc, plugins_boids_load_replays);
    tcase_add_test(tc, plugins_abi2_loads_not_thread_safe);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(plugins_suite); }
