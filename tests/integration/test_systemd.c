/*
 * test_systemd.c - tickd as a systemd service, without systemd: a fake
 * NOTIFY_SOCKET (path and abstract) receives READY, STATUS, WATCHDOG,
 * RELOADING/READY and STOPPING from the real daemon; the watchdog's cadence
 * and its silence while a frame is stuck; socket activation by hand
 * (LISTEN_FDS/LISTEN_PID) and with systemd-socket-activate; the shipped
 * units through systemd-analyze (verify, security); `make install` and
 * `make uninstall` into a temporary tree; the man pages against --help and
 * the config table.
 *
 * The harness strips the systemd variables and closes every descriptor
 * above 2 when it starts a daemon, so the daemons here are started by a
 * local spawn() that sets them; the harness still provides the temporary
 * directories, socket clients and JSON calls.  Times of notifications are
 * the kernel's receive timestamps (SO_TIMESTAMPNS), so the watchdog checks
 * measure the daemon's sends, not this process's scheduling.  Tools that
 * may be missing (systemd-analyze, systemd-socket-activate, groff) skip
 * their test with a message.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/notify.h"
#include "harness.h"
#include "tickd/log.h"

#define FAILF(...) tkit_fail(__FILE__, __LINE__, __VA_ARGS__)

/* ---- a fake NOTIFY_SOCKET ------------------------------------------------------ */

#define MAX_MSGS 4096

typedef struct nmsg {
    char text[512]; /* the datagram, NUL-terminated               */
    double at;      /* s, kernel receive time (CLOCK_REALTIME)    */
    pid_t pid;      /* sender, from SCM_CREDENTIALS               */
} nmsg;

typedef struct listener {
    int fd;              /* bound datagram socket                      */
    char name[108];      /* NOTIFY_SOCKET value ("/path" or "@name")   */
    nmsg msgs[MAX_MSGS]; /* received, oldest first                     */
    size_t n;            /* entries of msgs in use                     */
    size_t seen;         /* wait_msg's cursor                          */
} listener;

static listener L; /* one per test process */

/* Bind L at a fresh path in a temporary directory, or a fresh abstract name. */
static void listen_notify(bool abstract)
{
    static int seq;
    memset(&L, 0, sizeof L);
    L.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(L.fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    socklen_t len;
    if (abstract) {
        snprintf(L.name, sizeof L.name, "@tickd-it-notify-%d-%d", (int)getpid(), ++seq);
        memcpy(sa.sun_path, L.name, strlen(L.name));
        sa.sun_path[0] = '\0';
        len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(L.name));
    } else {
        snprintf(L.name, sizeof L.name, "%s/notify.sock", tkit_tmpdir());
        strcpy(sa.sun_path, L.name);
        len = sizeof sa;
    }
    ck_assert_msg(bind(L.fd, (struct sockaddr *)&sa, len) == 0, "bind %s: %s", L.name,
                  strerror(errno));
    int one = 1;
    ck_assert_int_eq(setsockopt(L.fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof one), 0);
    ck_assert_int_eq(setsockopt(L.fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one), 0);
}

/* Receive one datagram within `seconds` (unscaled); false at the deadline. */
static bool pump(double seconds)
{
    struct pollfd p = {.fd = L.fd, .events = POLLIN};
    int ms = seconds <= 0 ? 0 : (int)(seconds * 1000) + 1;
    if (poll(&p, 1, ms) <= 0)
        return false;
    nmsg *m = &L.msgs[L.n < MAX_MSGS ? L.n : MAX_MSGS - 1];
    char cbuf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(struct timespec))];
    struct iovec iov = {m->text, sizeof m->text - 1};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
    ssize_t r = recvmsg(L.fd, &mh, MSG_DONTWAIT);
    if (r < 0)
        return false;
    m->text[r] = '\0';
    m->pid = 0;
    m->at = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
            struct ucred uc;
            memcpy(&uc, CMSG_DATA(c), sizeof uc);
            m->pid = uc.pid;
        } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            m->at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        }
    }
    ck_assert_msg(L.n < MAX_MSGS, "more than %d notifications", MAX_MSGS);
    L.n++;
    return true;
}

/* The value of the line "KEY=value" in a message, or NULL. */
static const char *msg_value(const nmsg *m, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    for (const char *l = m->text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, kl) == 0 && l[kl] == '=') {
            const char *v = l + kl + 1;
            size_t vl = strcspn(v, "\n");
            snprintf(buf, len, "%.*s", (int)vl, v);
            return buf;
        }
    }
    return NULL;
}

/* True if the message holds the line KEY=VALUE exactly. */
static bool msg_has(const nmsg *m, const char *key, const char *value)
{
    char buf[512];
    const char *v = msg_value(m, key, buf, sizeof buf);
    return v && strcmp(v, value) == 0;
}

/* The next message (after the cursor) holding KEY=VALUE, or, with value
 * NULL, any KEY= line whose value contains `part` (NULL: any value).
 * Fails the test after `seconds` (scaled). */
static const nmsg *wait_msg_at(int line, const char *key, const char *value, const char *part,
                               double seconds)
{
    double deadline = tkit_now() + tkit_scale(seconds);
    for (;;) {
        for (; L.seen < L.n; L.seen++) {
            const nmsg *m = &L.msgs[L.seen];
            char buf[512];
            const char *v = msg_value(m, key, buf, sizeof buf);
            if (v && (value ? strcmp(v, value) == 0 : !part || strstr(v, part))) {
                L.seen++;
                return m;
            }
        }
        double left = deadline - tkit_now();
        if (left <= 0)
            tkit_fail(__FILE__, line, "no %s=%s within %.1f s (%zu notifications: last \"%s\")",
                      key,
                      value  ? value
                      : part ? part
                             : "*",
                      tkit_scale(seconds), L.n, L.n ? L.msgs[L.n - 1].text : "");
        pump(left);
    }
}
#define wait_msg(key, value, s) wait_msg_at(__LINE__, (key), (value), NULL, (s))
#define wait_status(part, s)    wait_msg_at(__LINE__, "STATUS", NULL, (part), (s))

/* Drain whatever has arrived, without waiting. */
static void pump_all(void)
{
    while (pump(0))
        ;
}

/* ---- daemons with systemd's environment ------------------------------------------ */

typedef struct sdd {
    pid_t pid;
    char dir[PATH_MAX];         /* working directory and files                */
    char sock[PATH_MAX + 32];   /* the socket to talk to                      */
    char config[PATH_MAX + 32]; /* <dir>/tickd.ini                            */
    int status;                 /* wait status once exited                    */
    bool exited;
} sdd;

static const char *tickd_bin(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("TICKD_BIN");
    const char *b = getenv("BUILD");
    char rel[PATH_MAX];
    if (env && *env)
        snprintf(rel, sizeof rel, "%s", env);
    else
        snprintf(rel, sizeof rel, "%s/tickd", b && *b ? b : "build");
    if (!realpath(rel, path) || access(path, X_OK) != 0)
        FAILF("tickd binary '%s' not found (build it first)", rel);
    return path;
}

static const char *tickctl_bin(void)
{
    static char path[PATH_MAX];
    const char *b = getenv("BUILD");
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/tickctl", b && *b ? b : "build");
    if (!realpath(rel, path) || access(path, X_OK) != 0)
        FAILF("tickctl binary '%s' not found (build it first)", rel);
    return path;
}

static const char *tickd_load_bin(void)
{
    static char path[PATH_MAX];
    const char *b = getenv("BUILD");
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/tickd-load", b && *b ? b : "build");
    if (!realpath(rel, path) || access(path, X_OK) != 0)
        FAILF("tickd-load binary '%s' not found (build it first)", rel);
    return path;
}

/* The directory of program `name` on PATH, or NULL. */
static const char *which(const char *name)
{
    static char buf[PATH_MAX];
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s:/usr/bin:/bin:/usr/sbin:/sbin", path ? path : "");
    for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(buf, sizeof buf, "%s/%s", d, name);
        if (access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

/*
 * Start `argv` (argv[0] a path) in d->dir with stdout/stderr in files there
 * and the environment edits `env` ("NAME=VALUE"; "NAME=@PID@" gets the
 * child's pid; "-NAME" unsets).  systemd's variables are unset first.
 * `fd3`, if >= 0, becomes descriptor 3; every other descriptor above 2 is
 * closed.  The child dies with this process.
 */
static void spawn_argv(sdd *d, char *const *argv, const char *const *env, int fd3)
{
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        char p[PATH_MAX + 16];
        snprintf(p, sizeof p, "%s/stdout.log", d->dir);
        int out = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
        snprintf(p, sizeof p, "%s/stderr.log", d->dir);
        int err = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
        int in = open("/dev/null", O_RDONLY);
        if (in < 0 || out < 0 || err < 0 || chdir(d->dir) != 0)
            _exit(127);
        if (fd3 >= 0 && fd3 != 3 && dup2(fd3, 3) != 3)
            _exit(127);
        if (fd3 == 3)
            fcntl(3, F_SETFD, 0);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        close_range(fd3 >= 0 ? 4 : 3, ~0U, 0);
        static const char *const sd_vars[] = {
            "NOTIFY_SOCKET", "WATCHDOG_USEC",  "WATCHDOG_PID",   "LISTEN_FDS",
            "LISTEN_PID",    "LISTEN_FDNAMES", "JOURNAL_STREAM", NULL};
        for (size_t i = 0; sd_vars[i]; i++)
            unsetenv(sd_vars[i]);
        for (size_t i = 0; env && env[i]; i++) {
            if (env[i][0] == '-') {
                unsetenv(env[i] + 1);
                continue;
            }
            const char *eq = strchr(env[i], '=');
            if (!eq)
                _exit(127);
            char name[64], val[512];
            snprintf(name, sizeof name, "%.*s", (int)(eq - env[i]), env[i]);
            if (strcmp(eq + 1, "@PID@") == 0)
                snprintf(val, sizeof val, "%d", (int)getpid());
            else
                snprintf(val, sizeof val, "%s", eq + 1);
            setenv(name, val, 1);
        }
        execv(argv[0], argv);
        dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    d->pid = pid;
}

/* A directory with a config: tick_rate, fixed_dt, socket <dir>/tickd.sock,
 * snapshot <dir>/snapshot.json, log level info. */
static void sdd_prepare(sdd *d, const char *tick_rate, const char *fixed_dt)
{
    memset(d, 0, sizeof *d);
    snprintf(d->dir, sizeof d->dir, "%s", tkit_tmpdir());
    snprintf(d->sock, sizeof d->sock, "%s/tickd.sock", d->dir);
    snprintf(d->config, sizeof d->config, "%s/tickd.ini", d->dir);
    FILE *f = fopen(d->config, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f,
            "[engine]\ntick_rate = %s\nfixed_dt = %s\n"
            "[control]\nsocket = %s\n"
            "[snapshot]\npath = %s/snapshot.json\n"
            "[log]\nlevel = info\n",
            tick_rate, fixed_dt, d->sock, d->dir);
    fclose(f);
}

/* Start tickd --config <dir>/tickd.ini (valgrind-wrapped when asked). */
static void sdd_start(sdd *d, const char *const *env, int fd3)
{
    char *argv[16];
    size_t k = 0;
    if (tkit_valgrind()) {
        argv[k++] = (char *)which("valgrind");
        argv[k++] = "--error-exitcode=99";
        argv[k++] = "--leak-check=full";
        argv[k++] = "--errors-for-leak-kinds=definite";
        argv[k++] = "-q";
        ck_assert_ptr_nonnull(argv[0]);
    }
    argv[k++] = (char *)tickd_bin();
    argv[k++] = "--config";
    argv[k++] = d->config;
    argv[k] = NULL;
    spawn_argv(d, argv, env, fd3);
}

static const char *sdd_stderr(const sdd *d)
{
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/stderr.log", d->dir);
    const char *s = tkit_slurp(p);
    return s ? s : "";
}

static bool sdd_running(sdd *d)
{
    if (d->exited)
        return false;
    int st;
    if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
        d->exited = true;
        d->status = st;
        return false;
    }
    return true;
}

/* Wait up to `seconds` (scaled) for the exit; the wait status, or -1. */
static int sdd_wait_exit(sdd *d, double seconds)
{
    double deadline = tkit_now() + tkit_scale(seconds);
    while (sdd_running(d)) {
        if (tkit_now() > deadline)
            return -1;
        pump(0.002); /* also collects notifications meanwhile */
    }
    return d->status;
}

/* Exit code of a daemon expected to exit by itself (start-up error...). */
static int sdd_exit_code(sdd *d)
{
    int st = sdd_wait_exit(d, TKIT_DEADLINE_S);
    if (st == -1) {
        kill(d->pid, SIGKILL);
        FAILF("tickd did not exit; stderr:\n%s", sdd_stderr(d));
    }
    ck_assert_msg(WIFEXITED(st), "tickd died by signal %d; stderr:\n%s", WTERMSIG(st),
                  sdd_stderr(d));
    return WEXITSTATUS(st);
}

/* Signal and expect a clean exit 0. */
static void sdd_stop(sdd *d, int sig)
{
    kill(d->pid, sig);
    ck_assert_int_eq(sdd_exit_code(d), 0);
}

/* Connect to `path` as soon as it accepts (deadline: the default). */
static tkit_conn *connect_wait(sdd *d, const char *path)
{
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    for (;;) {
        tkit_conn *c = tkit_connect_path(path);
        if (c)
            return c;
        if (!sdd_running(d))
            FAILF("tickd exited before %s accepted; stderr:\n%s", path, sdd_stderr(d));
        if (tkit_now() > deadline)
            FAILF("%s did not accept within the deadline; stderr:\n%s", path, sdd_stderr(d));
        pump(0.005);
    }
}

static bool file_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static uint64_t mono_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Every message so far came from `pid`. */
static void assert_all_from(pid_t pid)
{
    for (size_t i = 0; i < L.n; i++)
        ck_assert_msg(L.msgs[i].pid == pid, "notification \"%s\" from pid %d, not tickd's %d",
                      L.msgs[i].text, (int)L.msgs[i].pid, (int)pid);
}

/* ---- running commands -------------------------------------------------------------- */

/*
 * Run argv (argv[0] looked up on PATH) from the repository root with the
 * environment edits `env` ("NAME=VALUE" / "-NAME"), stdout and stderr
 * together into *out (harness-owned; NULL to drop).  Returns the exit code;
 * a signal death or running past `seconds` fails the test.
 */
static int run_cmd(const char *const *argv, const char *const *env, const char **out,
                   double seconds)
{
    char outp[PATH_MAX + 16];
    snprintf(outp, sizeof outp, "%s/cmd.out", tkit_tmpdir());
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);
        if (o < 0 || in < 0)
            _exit(127);
        dup2(in, 0);
        dup2(o, 1);
        dup2(o, 2);
        close_range(3, ~0U, 0);
        for (size_t i = 0; env && env[i]; i++) {
            if (env[i][0] == '-') {
                unsetenv(env[i] + 1);
            } else {
                char *kv = strdup(env[i]);
                if (!kv)
                    _exit(127);
                putenv(kv);
            }
        }
        execvp(argv[0], (char *const *)argv);
        dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    double deadline = tkit_now() + seconds;
    int st;
    while (waitpid(pid, &st, WNOHANG) != pid) {
        if (tkit_now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            FAILF("%s did not finish within %.0f s", argv[0], seconds);
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
    const char *text = tkit_slurp(outp);
    if (out)
        *out = text ? text : "";
    ck_assert_msg(WIFEXITED(st), "%s died by signal %d", argv[0], WTERMSIG(st));
    return WEXITSTATUS(st);
}

/* `make <target> VAR=...` for this build tree (BUILD and SAN passed on), as
 * a fresh make, not a child of the make that runs the tests. */
static int run_make(const char *target, const char *v1, const char *v2, const char *v3,
                    const char **out)
{
    static char b[PATH_MAX + 8], s[32];
    const char *argv[12];
    size_t k = 0;
    argv[k++] = "make";
    argv[k++] = "-s";
    argv[k++] = "--no-print-directory";
    argv[k++] = target;
    const char *build = getenv("BUILD"), *san = getenv("SAN");
    if (build && *build) {
        snprintf(b, sizeof b, "BUILD=%s", build);
        argv[k++] = b;
    }
    if (san && *san) {
        snprintf(s, sizeof s, "SAN=%s", san);
        argv[k++] = s;
    }
    if (v1)
        argv[k++] = v1;
    if (v2)
        argv[k++] = v2;
    if (v3)
        argv[k++] = v3;
    argv[k] = NULL;
    static const char *const env[] = {"-MAKEFLAGS", "-MAKELEVEL", "-MFLAGS", "-MAKEOVERRIDES",
                                      NULL};
    return run_cmd(argv, env, out, 300);
}

static char *xfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xfmt(const char *fmt, ...)
{
    static char bufs[16][PATH_MAX + 64];
    static int next;
    char *b = bufs[next++ % 16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof bufs[0], fmt, ap);
    va_end(ap);
    return b;
}

/* ---- the notify protocol --------------------------------------------------------------- */

/* READY after start, STATUS lines, RELOADING/READY on SIGHUP, STOPPING on
 * SIGTERM; every datagram from tickd's own pid. */
static void notify_lifecycle(bool abstract)
{
    listen_notify(abstract);
    sdd d;
    sdd_prepare(&d, "1000", "0.01"); /* 5 s of engine time = 500 frames */
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name), NULL};
    sdd_start(&d, env, -1);

    const nmsg *ready = wait_msg("READY", "1", TKIT_DEADLINE_S);
    ck_assert_msg(ready == &L.msgs[0], "READY=1 is not the first notification: \"%s\"",
                  L.msgs[0].text);
    /* Ready means the socket answers. */
    tkit_conn *c = tkit_connect_path(d.sock);
    ck_assert_msg(c != NULL, "READY=1 sent before %s accepts", d.sock);
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "engine.info", NULL), "name"), "tickd");
    char buf[512];
    const char *st = msg_value(ready, "STATUS", buf, sizeof buf);
    ck_assert_msg(st && strstr(st, "tick rate 1000 Hz") && strstr(st, "TPS") &&
                      strstr(st, "0 entities"),
                  "READY's STATUS: %s", st ? st : "(none)");

    /* STATUS every few seconds of engine time, with the entity count. */
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":7}");
    const nmsg *s = wait_status(", 7 entities", TKIT_DEADLINE_S);
    ck_assert_msg(strstr(s->text, "tick rate 1000 Hz, ") && strstr(s->text, " TPS, "), "STATUS: %s",
                  s->text);

    /* SIGHUP: RELOADING=1 with the monotonic time of the reload, then READY=1. */
    uint64_t before = mono_usec();
    kill(d.pid, SIGHUP);
    const nmsg *r = wait_msg("RELOADING", "1", TKIT_DEADLINE_S);
    uint64_t after = mono_usec();
    const char *mu = msg_value(r, "MONOTONIC_USEC", buf, sizeof buf);
    ck_assert_msg(mu, "RELOADING=1 without MONOTONIC_USEC: \"%s\"", r->text);
    unsigned long long usec = strtoull(mu, NULL, 10);
    ck_assert_msg(usec >= before && usec <= after, "MONOTONIC_USEC=%llu outside [%llu, %llu]", usec,
                  (unsigned long long)before, (unsigned long long)after);
    const nmsg *again = wait_msg("READY", "1", TKIT_DEADLINE_S);
    ck_assert_msg(msg_value(again, "STATUS", buf, sizeof buf), "READY after reload: %s",
                  again->text);
    ck_assert_str_eq(tkit_gets(tkit_ok(c, "engine.info", NULL), "name"), "tickd");

    /* SIGTERM: STOPPING=1, then a clean exit. */
    kill(d.pid, SIGTERM);
    wait_msg("STOPPING", "1", TKIT_DEADLINE_S);
    ck_assert_int_eq(sdd_exit_code(&d), 0);
    pump_all();
    size_t stopping = 0;
    for (size_t i = 0; i < L.n; i++)
        stopping += msg_has(&L.msgs[i], "STOPPING", "1");
    ck_assert_int_eq(stopping, 1);
    assert_all_from(d.pid);
    ck_assert_msg(!strstr(sdd_stderr(&d), "NOTIFY_SOCKET"), "notify errors logged:\n%s",
                  sdd_stderr(&d));
}

START_TEST(systemd_notify_path) { notify_lifecycle(false); }
END_TEST

START_TEST(systemd_notify_abstract) { notify_lifecycle(true); }
END_TEST

/* engine.shutdown (not a signal) also sends STOPPING=1; no watchdog pings
 * without WATCHDOG_USEC. */
START_TEST(systemd_notify_shutdown_method)
{
    listen_notify(true);
    sdd d;
    sdd_prepare(&d, "200", "0");
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name), NULL};
    sdd_start(&d, env, -1);
    wait_msg("READY", "1", TKIT_DEADLINE_S);
    tkit_conn *c = connect_wait(&d, d.sock);
    tkit_wait_frames(c, 20);
    tkit_ok(c, "engine.shutdown", NULL);
    wait_msg("STOPPING", "1", TKIT_DEADLINE_S);
    ck_assert_int_eq(sdd_exit_code(&d), 0);
    pump_all();
    for (size_t i = 0; i < L.n; i++)
        ck_assert_msg(!strstr(L.msgs[i].text, "WATCHDOG"), "\"%s\" without WATCHDOG_USEC",
                      L.msgs[i].text);
    assert_all_from(d.pid);
}
END_TEST

/* Without NOTIFY_SOCKET nothing is sent and nothing is logged about it. */
START_TEST(systemd_notify_unset)
{
    listen_notify(false);
    sdd d;
    sdd_prepare(&d, "200", "0");
    const char *env[] = {"WATCHDOG_USEC=100000", NULL};
    sdd_start(&d, env, -1);
    tkit_conn *c = connect_wait(&d, d.sock);
    tkit_wait_frames(c, 50);
    sdd_stop(&d, SIGTERM);
    ck_assert_msg(!pump(0), "a notification without NOTIFY_SOCKET: %s", L.msgs[0].text);
    ck_assert_msg(!strstr(sdd_stderr(&d), "NOTIFY"), "stderr:\n%s", sdd_stderr(&d));
}
END_TEST

/* A recovery from the journal says so before READY=1: a STATUS naming it,
 * with EXTEND_TIMEOUT_USEC (a long replay must not reach TimeoutStartSec). */
START_TEST(systemd_notify_recovery)
{
    listen_notify(false);
    sdd d;
    sdd_prepare(&d, "200", "0");
    FILE *f = fopen(d.config, "a");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "[journal]\npath = %s/journal\nfsync = always\n", d.dir);
    fclose(f);
    sdd_start(&d, NULL, -1);
    tkit_conn *c = connect_wait(&d, d.sock);
    tkit_ok(c, "entity.spawn", "{\"class\":\"counter\",\"count\":3}");
    tkit_wait_frames(c, 5);
    tkit_close(c);
    kill(d.pid, SIGKILL);
    ck_assert_int_ne(sdd_wait_exit(&d, TKIT_DEADLINE_S), -1);
    d.exited = false;
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name), NULL};
    sdd_start(&d, env, -1);
    const nmsg *m = wait_msg("EXTEND_TIMEOUT_USEC", "10000000", TKIT_DEADLINE_S);
    ck_assert_msg(m == &L.msgs[0], "the recovery is not the first notification: \"%s\"",
                  L.msgs[0].text);
    char buf[512];
    const char *st = msg_value(m, "STATUS", buf, sizeof buf);
    ck_assert_msg(st && strstr(st, "recovering: replaying the journal "), "STATUS: %s",
                  st ? st : "(none)");
    wait_msg("READY", "1", TKIT_DEADLINE_S);
    c = connect_wait(&d, d.sock);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "world.status", NULL), "entities"), 3);
    tkit_close(c);
    sdd_stop(&d, SIGTERM);
    assert_all_from(d.pid);
    ck_assert_msg(strstr(sdd_stderr(&d), "journal: recovering: replaying "), "stderr:\n%s",
                  sdd_stderr(&d));
}
END_TEST

static char logged[2048]; /* warnings of the module, one per line */

static void capture_log(void *ud, tk_log_level level, const char *msg)
{
    (void)ud;
    if (level <= TK_LOG_WARN && strlen(logged) + strlen(msg) + 2 < sizeof logged) {
        strcat(logged, msg);
        strcat(logged, "\n");
    }
}

/* The module on its own: variables read (bad ones warned about), pings
 * rate-limited on the time handed in, STOPPING once. */
START_TEST(systemd_notify_module)
{
    listen_notify(true);
    tk_log_set_handler(capture_log, NULL);
    tkd_notify n;

    setenv("NOTIFY_SOCKET", "relative/path", 1);
    tkd_notify_init(&n);
    ck_assert(!tkd_notify_enabled(&n));
    ck_assert_msg(strstr(logged, "NOTIFY_SOCKET=relative/path"), "logged: %s", logged);
    ck_assert_int_eq(tkd_notify_ready(&n, NULL), 0); /* disabled: a no-op */
    tkd_notify_fini(&n);

    setenv("NOTIFY_SOCKET", L.name, 1);
    setenv("WATCHDOG_USEC", "3000000", 1);
    setenv("WATCHDOG_PID", "1", 1); /* someone else's */
    tkd_notify_init(&n);
    ck_assert(tkd_notify_enabled(&n));
    ck_assert_uint_eq(tkd_notify_watchdog_due(&n), 0);
    ck_assert(!tkd_notify_watchdog(&n, 5000000000ull));
    tkd_notify_fini(&n);

    setenv("WATCHDOG_USEC", "3s", 1);
    unsetenv("WATCHDOG_PID");
    tkd_notify_init(&n);
    ck_assert_uint_eq(tkd_notify_watchdog_due(&n), 0);
    ck_assert_msg(strstr(logged, "WATCHDOG_USEC=3s"), "logged: %s", logged);
    tkd_notify_fini(&n);
    logged[0] = '\0';

    setenv("WATCHDOG_USEC", "3000000", 1);
    setenv("WATCHDOG_PID", xfmt("%d", (int)getpid()), 1);
    tkd_notify_init(&n);
    ck_assert_uint_eq(n.watchdog_ns, 3000000000ull);
    uint64_t t = 10000000000ull;           /* 10 s */
    ck_assert(tkd_notify_watchdog(&n, t)); /* the first one at once */
    ck_assert_uint_eq(tkd_notify_watchdog_due(&n), t + 1000000000ull);
    ck_assert(!tkd_notify_watchdog(&n, t + 999999999ull));
    ck_assert(tkd_notify_watchdog(&n, t + 1000000000ull));
    ck_assert(!tkd_notify_watchdog(&n, t + 1500000000ull));
    ck_assert_uint_eq(n.pings, 2);
    ck_assert_int_eq(tkd_notify_ready(&n, "up"), 0);
    ck_assert_int_eq(tkd_notify_stopping(&n), 0);
    ck_assert_int_eq(tkd_notify_stopping(&n), 0); /* sent once */
    tkd_notify_fini(&n);
    tkd_notify_fini(&n); /* twice is fine */

    const char *want[] = {"WATCHDOG=1", "WATCHDOG=1", "READY=1\nSTATUS=up", "STOPPING=1"};
    for (size_t i = 0; i < 4; i++) {
        double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
        while (L.n <= i && tkit_now() < deadline)
            pump(0.1);
        ck_assert_msg(L.n > i, "message %zu missing", i);
        ck_assert_str_eq(L.msgs[i].text, want[i]);
        ck_assert_int_eq(L.msgs[i].pid, getpid());
    }
    ck_assert(!pump(0));
    ck_assert_msg(logged[0] == '\0', "logged: %s", logged);
    tk_log_set_handler(NULL, NULL);
}
END_TEST

/* ---- the watchdog ------------------------------------------------------------------------ */

/* Watchdog periods are stretched less than deadlines under valgrind: the
 * pings' precision depends on the frame time, which stays small. */
static double wd_period(double seconds) { return tkit_valgrind() ? 3 * seconds : seconds; }

/* Kernel timestamps of the WATCHDOG=1 notifications received so far. */
static size_t ping_times(double *at, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < L.n && k < cap; i++)
        if (msg_has(&L.msgs[i], "WATCHDOG", "1"))
            at[k++] = L.msgs[i].at;
    return k;
}

/* Wait for `n` more WATCHDOG=1 within `seconds` each. */
static void wait_pings(size_t n, double seconds)
{
    for (size_t i = 0; i < n; i++)
        wait_msg("WATCHDOG", "1", seconds);
}

/* Pings after completed frames, at least twice per period and not after
 * every frame: gaps between a quarter and a half of the period. */
START_TEST(systemd_watchdog_cadence)
{
    listen_notify(false);
    sdd d;
    sdd_prepare(&d, "100", "0");
    double period = wd_period(0.9);
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name),
                         xfmt("WATCHDOG_USEC=%llu", (unsigned long long)(period * 1e6)),
                         "WATCHDOG_PID=@PID@", NULL};
    sdd_start(&d, env, -1);
    wait_msg("READY", "1", TKIT_DEADLINE_S);
    wait_pings(6, TKIT_DEADLINE_S);
    double at[64];
    size_t n = ping_times(at, 64);
    ck_assert_uint_ge(n, 6);
    for (size_t i = 1; i < n; i++) {
        double gap = at[i] - at[i - 1];
        /* tickd pings every period / 2; systemd needs one within the
         * period (a loaded machine may delay a ping, not skip it). */
        ck_assert_msg(gap >= period / 4 && gap < period,
                      "ping %zu came %.0f ms after the previous one (period %.0f ms)", i, gap * 1e3,
                      period * 1e3);
    }
    sdd_stop(&d, SIGTERM);
    assert_all_from(d.pid);
}
END_TEST

/* A tick rate slower than the period: the loop pings while it waits for the
 * next frame, so a legitimately slow world is not killed. */
START_TEST(systemd_watchdog_slow_tick_rate)
{
    listen_notify(true);
    sdd d;
    sdd_prepare(&d, "2", "0"); /* a frame every 500 ms */
    double period = wd_period(0.3);
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name),
                         xfmt("WATCHDOG_USEC=%llu", (unsigned long long)(period * 1e6)),
                         NULL};
    sdd_start(&d, env, -1);
    wait_msg("READY", "1", TKIT_DEADLINE_S);
    wait_pings(8, TKIT_DEADLINE_S);
    double at[64];
    size_t n = ping_times(at, 64);
    /* Within the period (tickd aims at half of it), though frames are 500
     * ms apart: without pings while it waits, gaps would be 500 ms. */
    for (size_t i = 1; i < n; i++)
        ck_assert_msg(at[i] - at[i - 1] < period,
                      "ping %zu came %.0f ms after the previous one (period %.0f ms)", i,
                      (at[i] - at[i - 1]) * 1e3, period * 1e3);
    sdd_stop(&d, SIGTERM);
}
END_TEST

/* WATCHDOG_PID naming another process: no pings. */
START_TEST(systemd_watchdog_other_pid)
{
    listen_notify(false);
    sdd d;
    sdd_prepare(&d, "100", "0");
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name), "WATCHDOG_USEC=150000", "WATCHDOG_PID=1",
                         NULL};
    sdd_start(&d, env, -1);
    wait_msg("READY", "1", TKIT_DEADLINE_S);
    tkit_conn *c = connect_wait(&d, d.sock);
    uint64_t f0 = tkit_frame(c);
    while (pump(0.3)) /* a quiet stretch of two periods */
        ;
    ck_assert_uint_gt(tkit_frame(c), f0);
    sdd_stop(&d, SIGTERM);
    for (size_t i = 0; i < L.n; i++)
        ck_assert_msg(!msg_has(&L.msgs[i], "WATCHDOG", "1"), "pinged for another pid");
}
END_TEST

/* A frame stuck (busy in ticks) longer than the period sends no ping, so
 * systemd would kill the service; pings resume once frames complete
 * promptly again. */
START_TEST(systemd_watchdog_stuck_frame)
{
    listen_notify(false);
    sdd d;
    sdd_prepare(&d, "0", "0"); /* unlimited: the socket is served between any two frames */
    double period = wd_period(0.2);
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name),
                         xfmt("WATCHDOG_USEC=%llu", (unsigned long long)(period * 1e6)), NULL};
    sdd_start(&d, env, -1);
    wait_msg("READY", "1", TKIT_DEADLINE_S);
    tkit_conn *c = connect_wait(&d, d.sock);
    wait_pings(3, TKIT_DEADLINE_S);

    /* Burners (at most 1 s of work per tick each) make a frame last three
     * periods; they are destroyed as soon as the spawn has answered, i.e.
     * once that frame completed. */
    double stuck = 3 * period;
    int count = (int)(stuck / 1.0) + 1;
    double work = stuck / count; /* s per burner */
    json_t *res = tkit_ok(c, "entity.spawn",
                          "{\"class\":\"burner\",\"count\":%d,\"props\":{\"work_us\":%.0f}}", count,
                          work * 1e6);
    tkit_ok(c, "entity.destroy", "{\"ids\":%s}", tkit_dump(tkit_get(res, "ids")));
    wait_pings(3, TKIT_DEADLINE_S);

    double at[256];
    size_t n = ping_times(at, 256);
    double worst = 0;
    for (size_t i = 1; i < n; i++)
        if (at[i] - at[i - 1] > worst)
            worst = at[i] - at[i - 1];
    ck_assert_msg(worst >= 0.9 * count * work,
                  "longest silence %.0f ms, a stuck frame lasted %.0f ms: pinged while stuck",
                  worst * 1e3, count * work * 1e3);
    ck_assert_msg(worst > period, "longest silence %.0f ms within the period %.0f ms", worst * 1e3,
                  period * 1e3);
    /* Healthy again: the last pings at the usual cadence. */
    ck_assert_uint_ge(n, 6);
    ck_assert_msg(at[n - 1] - at[n - 2] <= period / 2, "pings after the stall %.0f ms apart",
                  (at[n - 1] - at[n - 2]) * 1e3);
    sdd_stop(&d, SIGTERM);
    assert_all_from(d.pid);
}
END_TEST

/* ---- socket activation -------------------------------------------------------------------- */

/* A listening Unix stream socket at `path`. */
static int listening_socket(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    ck_assert_msg(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0, "bind %s: %s", path,
                  strerror(errno));
    ck_assert_int_eq(listen(fd, 16), 0);
    return fd;
}

/* LISTEN_FDS=1 with LISTEN_PID = tickd's pid: fd 3 is served, the config's
 * socket is not bound, and the handed-in socket file is left in place. */
START_TEST(systemd_activation_fd)
{
    listen_notify(false);
    sdd d;
    sdd_prepare(&d, "200", "0");
    char act[PATH_MAX + 16];
    snprintf(act, sizeof act, "%s/act.sock", d.dir);
    int lfd = listening_socket(act);
    const char *env[] = {xfmt("NOTIFY_SOCKET=%s", L.name), "LISTEN_FDS=1", "LISTEN_PID=@PID@",
                         "LISTEN_FDNAMES=tickd.socket", NULL};
    sdd_start(&d, env, lfd);
    close(lfd);
    wait_msg("READY", "1", TKIT_DEADLINE_S);
    tkit_conn *c = tkit_connect_path(act);
    ck_assert_msg(c != NULL, "the activated socket does not accept");
    json_t *info = tkit_ok(c, "engine.info", NULL);
    ck_assert_int_eq(tkit_geti(info, "pid"), d.pid);
    ck_assert_msg(!file_exists(d.sock), "tickd bound its own socket too");
    ck_assert_msg(strstr(sdd_stderr(&d), "LISTEN_FDS"), "stderr:\n%s", sdd_stderr(&d));
    tkit_close(c);
    sdd_stop(&d, SIGTERM);
    ck_assert_msg(file_exists(act), "tickd removed the socket systemd owns");
}
END_TEST

/* LISTEN_PID of another process: the variables are not for tickd, which
 * binds its own socket. */
START_TEST(systemd_activation_other_pid)
{
    sdd d;
    sdd_prepare(&d, "200", "0");
    char act[PATH_MAX + 16];
    snprintf(act, sizeof act, "%s/act.sock", d.dir);
    int lfd = listening_socket(act);
    const char *env[] = {"LISTEN_FDS=1", "LISTEN_PID=1", NULL};
    sdd_start(&d, env, lfd);
    close(lfd);
    tkit_conn *c = connect_wait(&d, d.sock);
    ck_assert_int_eq(tkit_geti(tkit_ok(c, "engine.info", NULL), "pid"), d.pid);
    tkit_close(c);
    sdd_stop(&d, SIGTERM);
    ck_assert_msg(!file_exists(d.sock), "its own socket was not removed");
}
END_TEST

/* Malformed or unusable activation: start-up error, exit 1, a message. */
START_TEST(systemd_activation_errors)
{
    static const struct {
        const char *fds, *pid; /* LISTEN_FDS, LISTEN_PID */
        int fd3;               /* 0 none, 1 a listening socket, 2 a connected one */
        const char *needle;
    } cases[] = {
        {"2", "@PID@", 1, "2 sockets passed"},
        {"x", "@PID@", 1, "LISTEN_FDS=x"},
        {"1", "12ab", 1, "LISTEN_PID=12ab"},
        {"1", "@PID@", 0, "fd 3"},
        {"1", "@PID@", 2, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sdd d;
        sdd_prepare(&d, "200", "0");
        int fd = -1, pair[2] = {-1, -1};
        if (cases[i].fd3 == 1)
            fd = listening_socket(xfmt("%s/act.sock", d.dir));
        else if (cases[i].fd3 == 2) {
            ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
            fd = pair[0];
        }
        const char *env[] = {xfmt("LISTEN_FDS=%s", cases[i].fds),
                             xfmt("LISTEN_PID=%s", cases[i].pid), NULL};
        sdd_start(&d, env, fd);
        if (fd >= 0)
            close(fd);
        if (pair[1] >= 0)
            close(pair[1]);
        ck_assert_msg(sdd_exit_code(&d) == 1, "case %zu: stderr:\n%s", i, sdd_stderr(&d));
        const char *err = sdd_stderr(&d);
        ck_assert_msg(strstr(err, "cannot start"), "case %zu: stderr:\n%s", i, err);
        if (cases[i].needle)
            ck_assert_msg(strstr(err, cases[i].needle), "case %zu: no \"%s\" in:\n%s", i,
                          cases[i].needle, err);
        ck_assert_msg(!file_exists(d.sock), "case %zu: bound its own socket", i);
    }
}
END_TEST

/* systemd-socket-activate listens, and execs tickd on the first connection
 * with LISTEN_FDS/LISTEN_PID set: that connection is served. */
START_TEST(systemd_activation_tool)
{
    const char *tool = which("systemd-socket-activate");
    if (!tool) {
        printf("systemd_activation_tool: skipped, systemd-socket-activate not found\n");
        return;
    }
    char toolpath[PATH_MAX];
    snprintf(toolpath, sizeof toolpath, "%s", tool);
    listen_notify(false);
    sdd d;
    sdd_prepare(&d, "200", "0");
    char act[PATH_MAX + 16];
    snprintf(act, sizeof act, "%s/act.sock", d.dir);
    char *argv[] = {
        toolpath,   "-l",     act, "-E", xfmt("NOTIFY_SOCKET=%s", L.name), (char *)tickd_bin(),
        "--config", d.config, NULL};
    spawn_argv(&d, argv, NULL, -1);

    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    while (!file_exists(act)) {
        ck_assert_msg(sdd_running(&d), "systemd-socket-activate exited: %s", sdd_stderr(&d));
        ck_assert_msg(tkit_now() < deadline, "%s never appeared", act);
        pump(0.005);
    }
    ck_assert_msg(L.n == 0, "a notification before the first connection");
    tkit_conn *c = connect_wait(&d, act); /* waits in the backlog while tickd starts */
    json_t *info = tkit_ok(c, "engine.info", NULL);
    ck_assert_int_eq(tkit_geti(info, "pid"), d.pid); /* the tool exec'd tickd in place */
    const nmsg *ready = wait_msg("READY", "1", TKIT_DEADLINE_S);
    ck_assert_int_eq(ready->pid, d.pid);
    ck_assert_msg(!file_exists(d.sock), "tickd bound its own socket too");
    tkit_close(c);
    kill(d.pid, SIGTERM);
    wait_msg("STOPPING", "1", TKIT_DEADLINE_S);
    ck_assert_int_eq(sdd_exit_code(&d), 0);
}
END_TEST

/* ---- units, install, man pages ----------------------------------------------------------------
 */

static const char *read_repo_file(const char *path)
{
    const char *s = tkit_slurp(path);
    if (!s)
        FAILF("cannot read %s (tests run from the repository root)", path);
    return s;
}

/* Each of the NULL-terminated `lines` is in `text` (the file `name`). */
static void has_lines(const char *text, const char *name, const char *const *lines)
{
    for (size_t i = 0; lines[i]; i++)
        ck_assert_msg(strstr(text, lines[i]), "%s lacks %s", name, lines[i]);
}

/* The unit files say what the issue asks, line by line. */
START_TEST(systemd_units_content)
{
    const char *svc = read_repo_file("systemd/tickd.service");
    static const char *const lines[] = {
        "Type=notify\n",
        "NotifyAccess=main\n",
        "ExecStart=/usr/local/bin/tickd --config /etc/tickd/tickd.ini\n",
        "ExecReload=/bin/kill -HUP $MAINPID\n",
        "WatchdogSec=",
        "Restart=on-failure\n",
        "RuntimeDirectory=tickd\n",
        "RuntimeDirectoryMode=0750\n",
        "StateDirectory=tickd\n",
        "User=tickd\n",
        "Group=tickd\n",
        NULL};
    has_lines(svc, "tickd.service", lines);
    const char *sock = read_repo_file("systemd/tickd.socket");
    const char *ls = strstr(sock, "\nListenStream=");
    ck_assert_ptr_nonnull(ls);
    ck_assert_msg(strncmp(ls + 14, "/run/tickd/", 11) != 0,
                  "the activated socket is inside the service's RuntimeDirectory");
    ck_assert_msg(strstr(sock, "\nSocketGroup=tickd\n") && strstr(sock, "\nSocketMode=0660\n"),
                  "tickd.socket: group tickd, mode 0660");
    /* The template: one world per instance, every file of its own. */
    const char *tpl = read_repo_file("systemd/tickd@.service");
    static const char *const tlines[] = {
        "Type=notify\n",
        "NotifyAccess=main\n",
        "ExecStart=/usr/local/bin/tickd --config /etc/tickd/%i.ini --set instance.name=%i "
        "--socket /run/tickd/%i.sock ",
        "--set snapshot.dir=/var/lib/tickd/%i ",
        "--set snapshot.path=/var/lib/tickd/%i/snapshot.json ",
        "--set metrics.listen=${TICKD_METRICS}\n",
        "Environment=TICKD_METRICS=unix:/run/tickd/%i.metrics.sock\n",
        "WatchdogSec=",
        "Restart=on-failure\n",
        "RuntimeDirectory=tickd\n",
        "RuntimeDirectoryPreserve=yes\n",
        "StateDirectory=tickd/%i\n",
        "WorkingDirectory=/var/lib/tickd/%i\n",
        "User=tickd\n",
        "Group=tickd\n",
        NULL};
    has_lines(tpl, "tickd@.service", tlines);
    /* Its sandbox is the singleton's, line for line. */
    const char *from = strstr(svc, "\nNoNewPrivileges=");
    const char *to = strstr(svc, "\n[Install]");
    ck_assert_ptr_nonnull(from);
    ck_assert_ptr_nonnull(to);
    for (const char *l = from + 1; l < to; l = strchr(l, '\n') + 1) {
        char line[256];
        snprintf(line, sizeof line, "\n%.*s\n", (int)strcspn(l, "\n"), l);
        if (line[1] != '\n' && line[1] != '#')
            ck_assert_msg(strstr(tpl, line), "tickd@.service lacks the singleton's%s", line);
    }
    const char *tsock = read_repo_file("systemd/tickd@.socket");
    ck_assert_msg(strstr(tsock, "\nListenStream=/run/tickd/%i.sock\n") &&
                      strstr(tsock, "\nSocketGroup=tickd\n") &&
                      strstr(tsock, "\nSocketMode=0660\n"),
                  "tickd@.socket: /run/tickd/%%i.sock, group tickd, mode 0660");
    const char *su = read_repo_file("systemd/tickd.sysusers");
    ck_assert_msg(strstr(su, "\nu tickd "), "sysusers: no user tickd");
    /* The shipped config's socket and snapshot lines, which install rewrites. */
    const char *ini = read_repo_file("config/tickd.ini");
    ck_assert_msg(strstr(ini, "\nsocket = run/tickd.sock\n") &&
                      strstr(ini, "\npath = run/tickd.snapshot.json\n"),
                  "config/tickd.ini: make install expects the default socket and path lines");
}
END_TEST

/* systemd-analyze on the units as installed with a PREFIX (so ExecStart
 * names a real binary and the man pages are found): verify prints nothing,
 * security rates the service at most 1.0. */
START_TEST(systemd_units_analyze)
{
    if (!which("systemd-analyze")) {
        printf("systemd_units_analyze: skipped, systemd-analyze not found\n");
        return;
    }
    char analyze[PATH_MAX];
    snprintf(analyze, sizeof analyze, "%s", which("systemd-analyze"));
    const char *root = tkit_tmpdir();
    const char *out;
    char prefix[PATH_MAX], etc[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/usr", root);
    snprintf(etc, sizeof etc, "%s/etc", root);
    int rc = run_make("install", xfmt("PREFIX=%s", prefix), xfmt("SYSCONFDIR=%s", etc), NULL, &out);
    ck_assert_msg(rc == 0, "make install PREFIX=%s failed:\n%s", prefix, out);
    char svc[PATH_MAX + 64], sock[PATH_MAX + 64];
    snprintf(svc, sizeof svc, "%s/lib/systemd/system/tickd.service", prefix);
    snprintf(sock, sizeof sock, "%s/lib/systemd/system/tickd.socket", prefix);
    const char *text = tkit_slurp(svc);
    ck_assert_ptr_nonnull(text);
    ck_assert_msg(
        strstr(text, xfmt("\nExecStart=%s/bin/tickd --config %s/tickd/tickd.ini\n", prefix, etc)),
        "installed ExecStart does not follow PREFIX/SYSCONFDIR:\n%s", text);

    char tsvc[PATH_MAX + 64], tsock[PATH_MAX + 64];
    snprintf(tsvc, sizeof tsvc, "%s/lib/systemd/system/tickd@.service", prefix);
    snprintf(tsock, sizeof tsock, "%s/lib/systemd/system/tickd@.socket", prefix);
    ck_assert_msg(strstr(tkit_slurp(tsvc),
                         xfmt("\nExecStart=%s/bin/tickd --config %s/tickd/%%i.ini ", prefix, etc)),
                  "installed tickd@.service: ExecStart does not follow PREFIX/SYSCONFDIR");

    const char *env[] = {xfmt("MANPATH=%s/share/man", prefix),
                         "SYSTEMD_PAGER=", "-SYSTEMD_LOG_LEVEL", NULL};
    const char *verify[] = {analyze, "verify", svc, sock, tsvc, tsock, NULL};
    rc = run_cmd(verify, env, &out, 60);
    ck_assert_msg(rc == 0 && out[0] == '\0', "systemd-analyze verify (exit %d) printed:\n%s", rc,
                  out);

    /* --threshold counts tenths: 10 means an exposure of 1.0.  The
     * template (analyzed as its instance "i") scores as low as the
     * singleton. */
    double level[2];
    const char *units[2] = {svc, tsvc};
    const char *names[2] = {"tickd.service", "tickd@i.service"};
    for (int u = 0; u < 2; u++) {
        const char *sec[] = {analyze, "security", "--offline=true", "--threshold=10",
                             "--no-pager", units[u], NULL};
        rc = run_cmd(sec, env, &out, 60);
        const char *head = xfmt("Overall exposure level for %s: ", names[u]);
        const char *ov = strstr(out, head);
        ck_assert_msg(ov, "no overall exposure in:\n%s", out);
        level[u] = strtod(ov + strlen(head), NULL);
        ck_assert_msg(rc == 0 && level[u] <= 1.0, "%s: exposure %.1f (exit %d):\n%s", names[u],
                      level[u], rc, out);
    }
    ck_assert_msg(level[1] <= level[0], "tickd@.service exposure %.1f, tickd.service %.1f",
                  level[1], level[0]);
}
END_TEST

/* make install DESTDIR=... lays out every file; the config is kept on a
 * second install; uninstall removes everything but the config. */
START_TEST(systemd_install_layout)
{
    const char *dest = tkit_tmpdir();
    const char *out;
    int rc = run_make("install", xfmt("DESTDIR=%s", dest), NULL, NULL, &out);
    ck_assert_msg(rc == 0, "make install failed:\n%s", out);
    static const struct {
        const char *path;
        unsigned mode;
    } files[] = {
        {"/usr/local/bin/tickd", 0755},
        {"/usr/local/bin/tickctl", 0755},
        {"/usr/local/bin/tickd-load", 0755},
        {"/usr/local/lib/tickd/plugins/boids.so", 0755},
        {"/usr/local/share/tickd/scenarios/smoke.jsonl", 0644},
        {"/usr/local/share/tickd/scenarios/churn.jsonl", 0644},
        {"/usr/local/lib/libtickd.a", 0644},
        {"/usr/local/include/tickd/tickd.h", 0644},
        {"/usr/local/share/man/man8/tickd.8", 0644},
        {"/usr/local/share/man/man1/tickctl.1", 0644},
        {"/usr/local/share/man/man1/tickd-load.1", 0644},
        {"/usr/local/lib/systemd/system/tickd.service", 0644},
        {"/usr/local/lib/systemd/system/tickd.socket", 0644},
        {"/usr/local/lib/systemd/system/tickd@.service", 0644},
        {"/usr/local/lib/systemd/system/tickd@.socket", 0644},
        {"/usr/local/lib/sysusers.d/tickd.conf", 0644},
        {"/etc/tickd/tickd.ini", 0644},
    };
    size_t nfiles = sizeof files / sizeof files[0];
    for (size_t i = 0; i < nfiles; i++) {
        struct stat sb;
        const char *p = xfmt("%s%s", dest, files[i].path);
        ck_assert_msg(stat(p, &sb) == 0 && S_ISREG(sb.st_mode), "%s not installed", p);
        ck_assert_msg((sb.st_mode & 07777) == files[i].mode, "%s: mode %04o, want %04o", p,
                      sb.st_mode & 07777, files[i].mode);
    }
    ck_assert_str_eq(tkit_slurp(xfmt("%s/usr/local/lib/systemd/system/tickd.service", dest)),
                     read_repo_file("systemd/tickd.service"));
    ck_assert_str_eq(tkit_slurp(xfmt("%s/usr/local/lib/systemd/system/tickd@.service", dest)),
                     read_repo_file("systemd/tickd@.service"));

    /* The installed config: the service's paths, and valid. */
    const char *ini_path = xfmt("%s/etc/tickd/tickd.ini", dest);
    char ini[PATH_MAX];
    snprintf(ini, sizeof ini, "%s", ini_path);
    const char *cfg = tkit_slurp(ini);
    ck_assert_msg(strstr(cfg, "\nsocket = /run/tickd/tickd.sock\n") &&
                      strstr(cfg, "\npath = /var/lib/tickd/tickd.snapshot.json\n"),
                  "installed config:\n%s", cfg);
    const char *check[] = {xfmt("%s/usr/local/bin/tickd", dest), "--check-config", "--config", ini,
                           NULL};
    rc = run_cmd(check, NULL, &out, 60);
    ck_assert_msg(rc == 0, "installed config rejected:\n%s", out);

    /* An operator's edit survives another install. */
    FILE *f = fopen(ini, "a");
    ck_assert_ptr_nonnull(f);
    fputs("; edited by the operator\n", f);
    fclose(f);
    char *edited = strdup(tkit_slurp(ini));
    rc = run_make("install", xfmt("DESTDIR=%s", dest), NULL, NULL, &out);
    ck_assert_msg(rc == 0, "second make install failed:\n%s", out);
    ck_assert_str_eq(tkit_slurp(ini), edited);
    free(edited);

    rc = run_make("uninstall", xfmt("DESTDIR=%s", dest), NULL, NULL, &out);
    ck_assert_msg(rc == 0, "make uninstall failed:\n%s", out);
    for (size_t i = 0; i < nfiles; i++) {
        const char *p = xfmt("%s%s", dest, files[i].path);
        if (strcmp(files[i].path, "/etc/tickd/tickd.ini") == 0)
            ck_assert_msg(file_exists(p), "uninstall removed the operator's config");
        else
            ck_assert_msg(!file_exists(p), "%s left after uninstall", p);
    }
}
END_TEST

/*
 * make install PREFIX=... puts the scenarios where the installed tickd-load
 * finds them by name, from a directory that is no source tree; a name it
 * cannot find is an error listing every place it looked.  uninstall removes
 * them.  (The build is made again with the default PREFIX at the end: the
 * scenario directory is compiled in.)
 */
START_TEST(systemd_install_scenarios)
{
    const char *root = tkit_tmpdir();
    char prefix[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/usr", root);
    const char *out;
    int rc = run_make("install", xfmt("PREFIX=%s", prefix), xfmt("SYSCONFDIR=%s/etc", root), NULL,
                      &out);
    ck_assert_msg(rc == 0, "make install PREFIX=%s failed:\n%s", prefix, out);
    const char *dir = xfmt("%s/share/tickd/scenarios", prefix);
    ck_assert_str_eq(tkit_slurp(xfmt("%s/smoke.jsonl", dir)),
                     read_repo_file("scripts/scenarios/smoke.jsonl"));
    ck_assert_msg(file_exists(xfmt("%s/share/man/man1/tickd-load.1", prefix)),
                  "tickd-load.1 not installed");

    /* Found by name: the run gets as far as connecting (nothing listens). */
    const char *load = xfmt("%s/bin/tickd-load", prefix);
    const char *run_smoke =
        xfmt("cd '%s' && exec '%s' --socket '%s/none.sock' smoke", root, load, root);
    const char *sh1[] = {"sh", "-c", run_smoke, NULL};
    rc = run_cmd(sh1, NULL, &out, 60);
    ck_assert_msg(rc == 2 && strstr(out, "cannot connect") && !strstr(out, "not found"),
                  "installed tickd-load smoke (exit %d):\n%s", rc, out);

    /* Not found: every place looked at, and what is there. */
    const char *run_nope = xfmt("cd '%s' && exec '%s' no-such-scenario", root, load);
    const char *sh2[] = {"sh", "-c", run_nope, NULL};
    rc = run_cmd(sh2, NULL, &out, 60);
    ck_assert_msg(rc == 2, "exit %d:\n%s", rc, out);
    static const char *const needles[] = {"scenario \"no-such-scenario\" not found; looked for:",
                                          "\n  no-such-scenario (a file)\n",
                                          "\n  scripts/scenarios/no-such-scenario.jsonl\n", NULL};
    for (size_t i = 0; needles[i]; i++)
        ck_assert_msg(strstr(out, needles[i]), "lacks \"%s\":\n%s", needles[i], out);
    ck_assert_msg(strstr(out, xfmt("\n  %s/no-such-scenario.jsonl\n", dir)) &&
                      strstr(out, xfmt("scenarios in %s: burst churn mixed ramp-1m runaway smoke",
                                       dir)),
                  "the installed directory is not listed:\n%s", out);

    rc = run_make("uninstall", xfmt("PREFIX=%s", prefix), xfmt("SYSCONFDIR=%s/etc", root), NULL,
                  &out);
    ck_assert_msg(rc == 0, "make uninstall failed:\n%s", out);
    ck_assert_msg(!file_exists(dir) && !file_exists(xfmt("%s/share/tickd", prefix)),
                  "scenarios left after uninstall");
    ck_assert_msg(!file_exists(xfmt("%s/share/man/man1/tickd-load.1", prefix)),
                  "tickd-load.1 left after uninstall");
    rc = run_make("build", NULL, NULL, NULL, &out);
    ck_assert_msg(rc == 0, "make build failed:\n%s", out);
}
END_TEST

/* `s` with every '-' written as roff's "\-". */
static const char *roff_dashes(const char *s)
{
    static char buf[256];
    size_t k = 0;
    for (; *s && k + 3 < sizeof buf; s++) {
        if (*s == '-')
            buf[k++] = '\\';
        buf[k++] = *s;
    }
    buf[k] = '\0';
    return buf;
}

/* Every "--long-option" in `help` appears in the roff page. */
static void options_in_page(const char *help, const char *page, const char *name)
{
    int found = 0;
    for (const char *p = strstr(help, "--"); p; p = strstr(p + 2, "--")) {
        if (p > help && p[-1] != ' ' && p[-1] != '\'' && p[-1] != '(')
            continue;
        char opt[64];
        size_t n = 0;
        while (n + 1 < sizeof opt && (p[n] == '-' || (p[n] >= 'a' && p[n] <= 'z')))
            opt[n] = p[n], n++;
        opt[n] = '\0';
        if (n < 4)
            continue;
        ck_assert_msg(strstr(page, roff_dashes(opt)), "%s does not document %s", name, opt);
        found++;
    }
    ck_assert_int_ge(found, 5);
}

/* ---- the documented config against the table ---------------------------------- */

/* `s` (n bytes) with roff's "\-" as "-" and surrounding blanks trimmed. */
static const char *unroff(const char *s, size_t n)
{
    static char buf[8][256];
    static int k;
    k = (k + 1) % 8;
    size_t o = 0;
    for (size_t i = 0; i < n && o + 1 < sizeof buf[k]; i++) {
        if (s[i] == '\\' && i + 1 < n && s[i + 1] == '-')
            continue;
        buf[k][o++] = s[i];
    }
    while (o && (buf[k][o - 1] == ' ' || buf[k][o - 1] == '.'))
        o--;
    buf[k][o] = '\0';
    char *p = buf[k];
    while (*p == ' ')
        p++;
    return p;
}

/* A documented bound ("64k", "1g", "0.0001", "-1", "0777") as a number. */
static double doc_number(const char *text, const tkd_config_key *k)
{
    char *end;
    if (k->type == TKD_CFG_MODE)
        return (double)strtol(text, &end, 8);
    double v = strtod(text, &end);
    switch (*end) {
    case 'k': return v * 1024;
    case 'm': return v * 1048576;
    case 'g': return v * 1073741824.0;
    default: break;
    }
    ck_assert_msg(*end == '\0' || *end == ' ', "[%s] %s: bound '%s' is not a number", k->section,
                  k->name, text);
    return v;
}

/* A documented value of `k` means the table's default: the same canonical
 * text once parsed by the config reader ("64m" is 67108864). */
static void same_default(const tkd_config_key *k, const char *text, const char *where)
{
    if (text[0] == '\0' || !strcmp(text, "empty")) {
        ck_assert_msg(k->def[0] == '\0', "%s: [%s] %s defaults to empty, the table says '%s'",
                      where, k->section, k->name, k->def);
        return;
    }
    tkd_config def, doc;
    tkd_config_init(&def);
    tkd_config_init(&doc);
    char err[512] = "";
    ck_assert_msg(tkd_config_set(&doc, k->section, k->name, text, where, err, sizeof err) == 0,
                  "%s", err);
    char a[256], b[256];
    tkd_config_format(&def, k, a, sizeof a);
    tkd_config_format(&doc, k, b, sizeof b);
    ck_assert_msg(!strcmp(a, b), "%s: [%s] %s defaults to '%s' (%s), the table says '%s' (%s)",
                  where, k->section, k->name, text, b, k->def, a);
    tkd_config_free(&def);
    tkd_config_free(&doc);
}

/* A documented range "A .. B" is the table's [min, max]. */
static void same_range(const tkd_config_key *k, const char *range, const char *where)
{
    const char *dots = strstr(range, " .. ");
    ck_assert_msg(dots, "%s: [%s] %s: range '%s'", where, k->section, k->name, range);
    double lo = doc_number(unroff(range, (size_t)(dots - range)), k);
    double hi = doc_number(unroff(dots + 4, strcspn(dots + 4, ",)( ")), k);
    ck_assert_msg(lo == k->min && hi == k->max,
                  "%s: [%s] %s: documented range %g .. %g, the table says %g .. %g", where,
                  k->section, k->name, lo, hi, k->min, k->max);
}

/*
 * man/tickd.8 gives each key as `.BR name " (type, unit, A .. B, default X,
 * reloaded)"`; config/tickd.ini gives `name = X` after a comment with
 * "Range: A .. B" and "Reloaded on SIGHUP." or "Needs a restart.".  Both
 * must say what the table says: default, range, and whether SIGHUP applies
 * it.  (The shipped file turns [metrics] listen on: its value is the one
 * documented exception.)
 */
static void defaults_documented(const char *t8, const char *ini)
{
    size_t nkeys;
    const tkd_config_key *keys = tkd_config_keys(&nkeys);
    for (size_t i = 0; i < nkeys; i++) {
        const tkd_config_key *k = &keys[i];
        /* The man page. */
        const char *sec = strstr(t8, xfmt(".SS [%s]\n", k->section));
        const char *at = strstr(sec, xfmt("\n.BR %s \" (", k->name));
        ck_assert_msg(at, "tickd.8: no '.BR %s \" (' entry", k->name);
        const char *open = strchr(at + 1, '(');
        size_t plen = strcspn(open, "\n");
        char paren[512];
        snprintf(paren, sizeof paren, "%.*s", (int)plen, open);
        const char *d = strstr(paren, "default ");
        ck_assert_msg(d, "tickd.8: [%s] %s gives no default: %s", k->section, k->name, paren);
        d += strlen("default ");
        same_default(k, unroff(d, strcspn(d, ",:)\"")), "tickd.8");
        if (k->type != TKD_CFG_PATH && k->type != TKD_CFG_LIST && k->type != TKD_CFG_BOOL &&
            k->type != TKD_CFG_LEVEL && k->type != TKD_CFG_PACING && k->type != TKD_CFG_FSYNC) {
            const char *r = strstr(paren, " .. ");
            ck_assert_msg(r, "tickd.8: [%s] %s gives no range: %s", k->section, k->name, paren);
            while (r > paren && r[-1] != ' ' && r[-1] != '(')
                r--;
            same_range(k, r, "tickd.8");
        }
        ck_assert_msg((strstr(paren, "reloaded") != NULL) == k->reloadable,
                      "tickd.8: [%s] %s is %s on SIGHUP", k->section, k->name,
                      k->reloadable ? "reloaded" : "not reloaded");

        /* The shipped config file: the comment above `name =` in its section. */
        const char *isec = strstr(ini, xfmt("\n[%s]\n", k->section));
        ck_assert_msg(isec, "config/tickd.ini has no [%s]", k->section);
        const char *line = strstr(isec, xfmt("\n%s =", k->name));
        ck_assert_msg(line, "config/tickd.ini: no '%s =' in [%s]", k->name, k->section);
        const char *block = line;
        while (block > isec && !(block[-1] == '\n' && block[0] == '\n'))
            block--;
        char comment[2048];
        snprintf(comment, sizeof comment, "%.*s", (int)(line - block), block);
        const char *v = line + 1 + strlen(k->name) + 2;
        if (strcmp(k->section, "metrics") || strcmp(k->name, "listen"))
            same_default(k, unroff(v, strcspn(v, "\n")), "config/tickd.ini");
        const char *r = strstr(comment, "Range: ");
        if (r && strstr(r, " .. "))
            same_range(k, r + strlen("Range: "), "config/tickd.ini");
        else
            ck_assert_msg(k->type == TKD_CFG_PATH || k->type == TKD_CFG_LIST ||
                              k->type == TKD_CFG_BOOL || k->type == TKD_CFG_LEVEL ||
                              k->type == TKD_CFG_PACING || k->type == TKD_CFG_FSYNC,
                          "config/tickd.ini: [%s] %s gives no range", k->section, k->name);
        bool reloaded = strstr(comment, "Reloaded on SIGHUP.") != NULL;
        bool restart = strstr(comment, "Needs a restart.") != NULL;
        ck_assert_msg(reloaded != restart && reloaded == k->reloadable,
                      "config/tickd.ini: [%s] %s must say %s", k->section, k->name,
                      k->reloadable ? "\"Reloaded on SIGHUP.\"" : "\"Needs a restart.\"");
    }
}

/* The man pages render without warnings and cover every flag, config key,
 * signal, exit status and (tickctl) method. */
START_TEST(systemd_man_pages)
{
    const char *t8 = read_repo_file("man/tickd.8");
    const char *t1 = read_repo_file("man/tickctl.1");
    const char *tl = read_repo_file("man/tickd-load.1");
    const char *out;
    const char *help8[] = {tickd_bin(), "--help", NULL};
    ck_assert_int_eq(run_cmd(help8, NULL, &out, 60), 0);
    options_in_page(out, t8, "tickd.8");
    char ctl[PATH_MAX];
    snprintf(ctl, sizeof ctl, "%s", tickctl_bin());
    const char *help1[] = {ctl, "--help", NULL};
    ck_assert_int_eq(run_cmd(help1, NULL, &out, 60), 0);
    options_in_page(out, t1, "tickctl.1");
    ck_assert_msg(strstr(out, "/run/tickd.sock"), "tickctl --help omits /run/tickd.sock:\n%s",
                  out);
    /* Methods: the help's lines "  name.verb ..." */
    int methods = 0;
    for (const char *l = out; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, "  ", 2) != 0 || l[2] < 'a' || l[2] > 'z')
            continue;
        size_t n = strspn(l + 2, "abcdefghijklmnopqrstuvwxyz_.");
        char m[64];
        snprintf(m, sizeof m, "%.*s", (int)n, l + 2);
        if (!strchr(m, '.') || strchr(m, '.') == m + n - 1 || strstr(m, "tickctl"))
            continue;
        ck_assert_msg(strstr(t1, m), "tickctl.1 does not document %s", m);
        methods++;
    }
    ck_assert_int_ge(methods, 30);

    size_t nkeys;
    const tkd_config_key *keys = tkd_config_keys(&nkeys);
    for (size_t i = 0; i < nkeys; i++) {
        const char *sec = strstr(t8, xfmt(".SS [%s]\n", keys[i].section));
        ck_assert_msg(sec, "tickd.8 has no [%s] section", keys[i].section);
        const char *end = strstr(sec + 4, ".SS ");
        const char *key = strstr(sec, xfmt("\n.BR %s ", keys[i].name));
        ck_assert_msg(key && (!end || key < end), "tickd.8 does not document [%s] %s",
                      keys[i].section, keys[i].name);
    }
    defaults_documented(t8, read_repo_file("config/tickd.ini"));
    static const char *const words[] = {".B SIGHUP",       "SIGTERM",        "SIGINT",
                                        ".SH EXIT STATUS", "\n.B 0\n",       "\n.B 1\n",
                                        "\n.B 2\n",        "NOTIFY_SOCKET",  "WATCHDOG_USEC",
                                        "LISTEN_FDS",      "JOURNAL_STREAM", NULL};
    for (size_t i = 0; words[i]; i++)
        ck_assert_msg(strstr(t8, words[i]), "tickd.8 lacks %s", words[i]);
    ck_assert_msg(strstr(t1, ".SH EXIT STATUS") && strstr(t1, "TICKD_SOCKET"),
                  "tickctl.1: exit status, TICKD_SOCKET");

    /* tickd-load(1): every option, the socket fallbacks, the SLO names. */
    const char *helpl[] = {tickd_load_bin(), "--help", NULL};
    ck_assert_int_eq(run_cmd(helpl, NULL, &out, 60), 0);
    options_in_page(out, tl, "tickd-load.1");
    static const char *const lwords[] = {".SH EXIT STATUS", "TICKD_SOCKET", "/run/tickd.sock",
                                         "/run/tickd/tickd.sock", "share/tickd/scenarios",
                                         "mspt_p99", "latency_p99", "tps_min", "rps_min",
                                         "\n.B errors\n", "overruns", "rss_mib", NULL};
    for (size_t i = 0; lwords[i]; i++)
        ck_assert_msg(strstr(tl, lwords[i]), "tickd-load.1 lacks %s", lwords[i]);
    ck_assert_msg(strstr(out, "/run/tickd.sock"), "tickd-load --help omits /run/tickd.sock");

    if (!which("groff")) {
        printf("systemd_man_pages: groff not found, rendering not checked\n");
        return;
    }
    const char *pages[] = {"man/tickd.8", "man/tickctl.1", "man/tickd-load.1"};
    for (size_t i = 0; i < 3; i++) {
        const char *g[] = {"groff", "-man", "-ww", "-z", pages[i], NULL};
        int rc = run_cmd(g, NULL, &out, 60);
        ck_assert_msg(rc == 0 && out[0] == '\0', "groff %s (exit %d):\n%s", pages[i], rc, out);
    }
}
END_TEST

static Suite *systemd_suite(void)
{
    Suite *s = suite_create("systemd");
    TCase *tc = tcase_create("notify");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, systemd_notify_path);
    tcase_add_test(tc, systemd_notify_abstract);
    tcase_add_test(tc, systemd_notify_shutdown_method);
    tcase_add_test(tc, systemd_notify_unset);
    tcase_add_test(tc, systemd_notify_module);
    tcase_add_test(tc, systemd_notify_recovery);
    suite_add_tcase(s, tc);
    tc = tcase_create("watchdog");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, systemd_watchdog_cadence);
    tcase_add_test(tc, systemd_watchdog_slow_tick_rate);
    tcase_add_test(tc, systemd_watchdog_other_pid);
    tcase_add_test(tc, systemd_watchdog_stuck_frame);
    suite_add_tcase(s, tc);
    tc = tcase_create("activation");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, systemd_activation_fd);
    tcase_add_test(tc, systemd_activation_other_pid);
    tcase_add_test(tc, systemd_activation_errors);
    tcase_add_test(tc, systemd_activation_tool);
    suite_add_tcase(s, tc);
    tc = tcase_create("install");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, systemd_units_content);
    tcase_add_test(tc, systemd_units_analyze);
    tcase_add_test(tc, systemd_install_layout);
    tcase_add_test(tc, systemd_install_scenarios);
    tcase_add_test(tc, systemd_man_pages);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return tkit_run(systemd_suite); }
