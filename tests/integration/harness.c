/*
 * harness.c - the integration tests' harness: the real tickd in a temporary
 * directory, clients on its socket, JSON helpers (see harness.h).
 *
 * Ownership: everything handed out (daemons, connections, JSON values,
 * strings) is recorded in one per-process registry and released by an
 * atexit handler of the process that made it, so a passing test (which
 * ends with exit()) is leak-free under LeakSanitizer, and a failing one
 * (which ends with _exit()) leaves its directory to tkit_cleanup() and its
 * daemon to PR_SET_PDEATHSIG.
 *
 * What it deliberately does not do: retry a request, reorder what the
 * daemon sends, or interpret a method.  A wait that passes its deadline
 * fails the test; it never turns into a pass.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

#define READ_CHUNK  65536     /* bytes per read(2)                            */
#define STDERR_TAIL 3000      /* bytes of a daemon's stderr quoted on failure  */
#define FIRST_ID    1000000LL /* first id of tkit_send_request on a connection */
#define MAX_MSG     16384     /* bytes, longest failure message handed to Check  */

struct tkit_daemon {
    pid_t pid;      /* the daemon (or valgrind running it)             */
    bool exited;    /* reaped                                          */
    int status;     /* wait status once exited                         */
    bool freed;     /* tkit_free() ran                                 */
    char *dir;      /* its directory (owned)                           */
    char *sock;     /* socket path it was told to use (owned)          */
    char *config;   /* <dir>/tickd.ini (owned)                         */
    char *out_path; /* <dir>/stdout.log (owned)                        */
    char *err_path; /* <dir>/stderr.log (owned)                        */
};

struct tkit_conn {
    int fd;          /* -1 once closed                                  */
    char *buf;       /* bytes read, not yet returned as lines           */
    size_t len, cap; /* bytes used / allocated in buf                   */
    size_t off;      /* bytes of buf already consumed                   */
    bool eof;        /* the peer closed (or the socket failed)          */
    json_t **stash;  /* messages read while waiting for another one     */
    size_t nstash, cstash;
    long long next_id; /* id of the next tkit_send_request                */
};

/* ---- the per-process registry ---------------------------------------------------- */

static struct {
    pid_t pid; /* process that owns the entries           */
    tkit_daemon **d;
    size_t nd, cd;
    tkit_conn **c;
    size_t nc, cc;
    json_t **j;
    size_t nj, cj;
    char **s;
    size_t ns, cs;
} R;

static char base_dir[PATH_MAX]; /* /tmp/tickd-it-XXXXXX                    */
static pid_t base_owner;        /* process that created base_dir           */

static void release_all(void);

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fprintf(stderr, "harness: out of memory\n");
        abort();
    }
    return q;
}

#define PUSH(arr, n, cap, v)                                                                       \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            (cap) = (cap) ? (cap)*2 : 16;                                                          \
            (arr) = xrealloc((arr), (cap) * sizeof *(arr));                                        \
        }                                                                                          \
        (arr)[(n)++] = (v);                                                                        \
    } while (0)

/* Start the registry of this process (a fork child starts afresh: what it
 * inherited belongs to its parent). */
static void reg_begin(void)
{
    if (R.pid == getpid())
        return;
    memset(&R, 0, sizeof R);
    R.pid = getpid();
    atexit(release_all);
}

static json_t *keep_json(json_t *j)
{
    reg_begin();
    if (j)
        PUSH(R.j, R.nj, R.cj, j);
    return j;
}

static char *keep_str(char *s)
{
    reg_begin();
    if (s)
        PUSH(R.s, R.ns, R.cs, s);
    return s;
}

static char *xstrdup(const char *s)
{
    char *r = strdup(s);
    if (!r)
        abort();
    return r;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

static void conn_release(tkit_conn *c)
{
    tkit_close(c);
    for (size_t i = 0; i < c->nstash; i++)
        json_decref(c->stash[i]);
    free(c->stash);
    free(c->buf);
    free(c);
}

static void daemon_release(tkit_daemon *d)
{
    tkit_free(d);
    free(d->dir);
    free(d->sock);
    free(d->config);
    free(d->out_path);
    free(d->err_path);
    free(d);
}

static void release_all(void)
{
    if (R.pid != getpid())
        return;
    for (size_t i = 0; i < R.nc; i++)
        conn_release(R.c[i]);
    for (size_t i = 0; i < R.nd; i++)
        daemon_release(R.d[i]);
    for (size_t i = 0; i < R.nj; i++)
        json_decref(R.j[i]);
    for (size_t i = 0; i < R.ns; i++)
        free(R.s[i]);
    free(R.c);
    free(R.d);
    free(R.j);
    free(R.s);
    memset(&R, 0, sizeof R);
}

/* ---- time, failures ------------------------------------------------------------- */

double tkit_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

bool tkit_valgrind(void)
{
    const char *v = getenv("TICKD_VALGRIND");
    return v && strcmp(v, "1") == 0;
}

double tkit_scale(double seconds)
{
    /* TKIT_SCALE: a factor for slow builds (make tsan sets it); the
     * sanitized pass of make check (SAN=1) is about 3x slower. */
    const char *f = getenv("TKIT_SCALE"), *san = getenv("SAN");
    double k = f && atof(f) > 0 ? atof(f) : san && !strcmp(san, "1") ? 3.0 : 1.0;
    return (tkit_valgrind() ? seconds * 20.0 : seconds) * k;
}

/* A note on every daemon of this process that has died, with the tail of
 * its stderr: the usual reason behind a closed connection or a timeout. */
static char *daemon_notes(void)
{
    char *out = xstrdup("");
    if (R.pid != getpid())
        return out;
    for (size_t i = 0; i < R.nd; i++) {
        tkit_daemon *d = R.d[i];
        if (d->freed || !d->exited)
            continue;
        char how[64];
        if (WIFEXITED(d->status))
            snprintf(how, sizeof how, "exited with %d", WEXITSTATUS(d->status));
        else if (WIFSIGNALED(d->status))
            snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(d->status));
        else
            snprintf(how, sizeof how, "status %d", d->status);
        const char *err = tkit_slurp(d->err_path);
        if (!err)
            err = "";
        /* A sanitizer's report is quoted from its start, anything else by
         * its tail. */
        const char *from = strstr(err, "ERROR: AddressSanitizer");
        if (!from)
            from = strstr(err, "runtime error:");
        if (!from)
            from = strstr(err, "ERROR: LeakSanitizer");
        size_t n = strlen(err);
        if (!from)
            from = err + (n > STDERR_TAIL ? n - STDERR_TAIL : 0);
        char *next = xasprintf("%s\n[tickd pid %d %s; stderr:\n%.*s]", out, (int)d->pid, how,
                               STDERR_TAIL, from);
        free(out);
        out = next;
    }
    return out;
}

void tkit_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    for (size_t i = 0; R.pid == getpid() && i < R.nd; i++)
        tkit_running(R.d[i]); /* reap, so the notes know who died */
    char *notes = daemon_notes();
    /* Check refuses messages over its maximum (tkit_init sets MAX_MSG). */
    _ck_assert_failed(file, line, "Failed", "%.*s%.*s", MAX_MSG / 2, msg ? msg : fmt,
                      MAX_MSG / 2 - 64, notes);
}

#define FAIL(...) tkit_fail(file, line, __VA_ARGS__)

/* ---- files ------------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void tkit_rmtree(const char *path)
{
    if (path && path[0])
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tkit_slurp(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t len = 0, cap = 4096;
    char *buf = xrealloc(NULL, cap);
    for (;;) {
        if (cap - len < 4096) {
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        ssize_t n = read(fd, buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return keep_str(buf);
}

static void write_text(const char *file, int line, const char *path, const char *text)
{
    FILE *f = fopen(path, "we");
    if (!f)
        FAIL("cannot create %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    if (fwrite(text, 1, n, f) != n || fclose(f) != 0)
        FAIL("cannot write %s", path);
}

/* `s` with every "@DIR@", "@CONFIG@" and "@SOCK@" replaced (malloc'd). */
static char *substitute(const char *s, const char *dir)
{
    static const char *const keys[] = {"@DIR@", "@CONFIG@", "@SOCK@"};
    char *vals[3];
    vals[0] = xstrdup(dir);
    vals[1] = xasprintf("%s/tickd.ini", dir);
    vals[2] = xasprintf("%s/tickd.sock", dir);
    size_t cap = strlen(s) + 1, len = 0;
    char *out = xrealloc(NULL, cap);
    while (*s) {
        int k = -1;
        for (int i = 0; i < 3; i++)
            if (strncmp(s, keys[i], strlen(keys[i])) == 0)
                k = i;
        const char *add = k >= 0 ? vals[k] : s;
        size_t n = k >= 0 ? strlen(vals[k]) : 1;
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            out = xrealloc(out, cap);
        }
        memcpy(out + len, add, n);
        len += n;
        s += k >= 0 ? strlen(keys[k]) : 1;
    }
    out[len] = '\0';
    for (int i = 0; i < 3; i++)
        free(vals[i]);
    return out;
}

void tkit_init(void)
{
    snprintf(base_dir, sizeof base_dir, "/tmp/tickd-it-XXXXXX");
    if (!mkdtemp(base_dir)) {
        fprintf(stderr, "harness: mkdtemp: %s\n", strerror(errno));
        exit(EXIT_FAILURE);
    }
    base_owner = getpid();
    /* Room for a sanitizer's report in failure messages (Check: 4 KiB). */
    check_set_max_msg_size(MAX_MSG + 1024);
    /* A client writing to a socket the daemon closed must see EPIPE, not die. */
    signal(SIGPIPE, SIG_IGN);
}

void tkit_cleanup(void)
{
    if (base_dir[0] && getpid() == base_owner) {
        tkit_rmtree(base_dir);
        base_dir[0] = '\0';
    }
}

int tkit_run(Suite *(*make)(void))
{
    tkit_init();
    SRunner *sr = srunner_create(make());
    srunner_set_fork_status(sr, CK_FORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    tkit_cleanup();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

static const char *base(const char *file, int line)
{
    if (!base_dir[0])
        FAIL("tkit_init() was not called");
    return base_dir;
}

const char *tkit_tmpdir(void)
{
    char *p = xasprintf("%s/t-XXXXXX", base(__FILE__, __LINE__));
    if (!mkdtemp(p))
        tkit_fail(__FILE__, __LINE__, "mkdtemp %s: %s", p, strerror(errno));
    return keep_str(p);
}

/* ---- the generated config ------------------------------------------------------------ */

typedef struct cfg_kv {
    char *section, *key, *value;
} cfg_kv;

static void cfg_set(cfg_kv **kv, size_t *n, size_t *cap, const char *section, const char *key,
                    const char *value)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp((*kv)[i].section, section) == 0 && strcmp((*kv)[i].key, key) == 0) {
            free((*kv)[i].value);
            (*kv)[i].value = value ? xstrdup(value) : NULL;
            return;
        }
    }
    if (!value)
        return;
    cfg_kv e = {xstrdup(section), xstrdup(key), xstrdup(value)};
    PUSH(*kv, *n, *cap, e);
}

/* The config text: defaults edited by `edits` ("s.k=v" / "!s.k"). */
static char *cfg_generate(const char *file, int line, const char *dir, const char *const *edits,
                          char **sock_out)
{
    cfg_kv *kv = NULL;
    size_t n = 0, cap = 0;
    char *sock = xasprintf("%s/tickd.sock", dir);
    char *snap = xasprintf("%s/snapshot.json", dir);
    cfg_set(&kv, &n, &cap, "engine", "tick_rate", "0");
    cfg_set(&kv, &n, &cap, "engine", "fixed_dt", "0.01");
    cfg_set(&kv, &n, &cap, "control", "socket", sock);
    cfg_set(&kv, &n, &cap, "snapshot", "path", snap);
    cfg_set(&kv, &n, &cap, "log", "level", "info");
    free(sock);
    free(snap);
    for (size_t i = 0; edits && edits[i]; i++) {
        char *e = substitute(edits[i], dir);
        bool del = e[0] == '!';
        char *sk = e + (del ? 1 : 0);
        char *dot = strchr(sk, '.');
        char *eq = strchr(sk, '=');
        if (!dot || (eq && eq < dot) || (!del && !eq) || (del && eq))
            FAIL("bad config edit '%s' (want section.key=value or !section.key)", edits[i]);
        *dot = '\0';
        if (eq)
            *eq = '\0';
        cfg_set(&kv, &n, &cap, sk, dot + 1, del ? NULL : eq + 1);
        free(e);
    }
    /* Emit section by section, in order of first appearance. */
    size_t tcap = 256, tlen = 0;
    char *text = xrealloc(NULL, tcap);
    text[0] = '\0';
    bool *done = calloc(n ? n : 1, sizeof *done);
    if (!done)
        abort();
    *sock_out = NULL;
    for (size_t i = 0; i < n; i++)
        if (kv[i].value && strcmp(kv[i].section, "control") == 0 &&
            strcmp(kv[i].key, "socket") == 0)
            *sock_out = xstrdup(kv[i].value);
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        char *hdr = xasprintf("[%s]\n", kv[i].section);
        size_t need = strlen(hdr);
        for (size_t j = i; j < n; j++)
            if (strcmp(kv[j].section, kv[i].section) == 0 && kv[j].value)
                need += strlen(kv[j].key) + strlen(kv[j].value) + 4;
        if (tlen + need + 1 > tcap) {
            tcap = (tlen + need + 1) * 2;
            text = xrealloc(text, tcap);
        }
        tlen += (size_t)sprintf(text + tlen, "%s", hdr);
        free(hdr);
        for (size_t j = i; j < n; j++) {
            if (strcmp(kv[j].section, kv[i].section) != 0)
                continue;
            done[j] = true;
            if (kv[j].value)
                tlen += (size_t)sprintf(text + tlen, "%s = %s\n", kv[j].key, kv[j].value);
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(kv[i].section);
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
    free(done);
    return text;
}

/* ---- daemons ---------------------------------------------------------------------------- */

static char *binary_path(const char *file, int line)
{
    const char *env = getenv("TICKD_BIN");
    char *rel;
    if (env && env[0]) {
        rel = xstrdup(env);
    } else {
        const char *b = getenv("BUILD");
        rel = xasprintf("%s/tickd", b && b[0] ? b : "build");
    }
    char *abs = realpath(rel, NULL);
    if (!abs || access(abs, X_OK) != 0) {
        char *msg = xasprintf("tickd binary '%s' not found or not executable (build it: make %s)",
                              rel, rel);
        free(rel);
        free(abs);
        keep_str(msg);
        FAIL("%s", msg);
    }
    free(rel);
    return abs;
}

static void child_exec(const char *dir, const char *out_path, const char *err_path, char **argv,
                       char **env, pid_t parent)
{
    /* Die with the test process that started us. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int in = open("/dev/null", O_RDONLY);
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
    if (in < 0 || out < 0 || err < 0)
        _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    close_range(3, ~0U, 0);
    if (chdir(dir) != 0)
        _exit(127);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDNAMES");
    unsetenv("AGONES_SDK_HTTP_PORT"); /* a test turns Agones on by its env */
    for (size_t i = 0; env && env[i]; i++)
        putenv(env[i]);
    execvp(argv[0], argv);
    dprintf(2, "harness: exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static bool try_ready(tkit_daemon *d, double deadline)
{
    tkit_conn *c = tkit_connect_path(d->sock);
    if (!c)
        return false;
    static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":\"ready\",\"method\":\"engine.info\"}\n";
    bool ok = false;
    if (tkit_try_send(c, req, sizeof req - 1) == 0) {
        double left = deadline - tkit_now();
        const char *l = tkit_read_line(c, left > 0 ? left / tkit_scale(1.0) : 0, NULL);
        ok = l && strstr(l, "\"result\"") && strstr(l, "\"ready\"");
    }
    tkit_close(c);
    return ok;
}

tkit_daemon *tkit_start_at(const char *file, int line, const tkit_opts *opts)
{
    static const tkit_opts none;
    if (!opts)
        opts = &none;
    reg_begin();
    char *bin = binary_path(file, line);
    tkit_daemon *d = calloc(1, sizeof *d);
    if (!d)
        abort();
    d->pid = -1;
    d->dir = xasprintf("%s/d-XXXXXX", base(file, line));
    if (!mkdtemp(d->dir))
        FAIL("mkdtemp %s: %s", d->dir, strerror(errno));
    PUSH(R.d, R.nd, R.cd, d);
    d->config = xasprintf("%s/tickd.ini", d->dir);
    d->out_path = xasprintf("%s/stdout.log", d->dir);
    d->err_path = xasprintf("%s/stderr.log", d->dir);
    char *sock = NULL;
    char *text = opts->config_text ? substitute(opts->config_text, d->dir)
                                   : cfg_generate(file, line, d->dir, opts->config, &sock);
    write_text(file, line, d->config, text);
    free(text);
    if (opts->sock) {
        free(sock);
        sock = xstrdup(opts->sock);
    }
    d->sock = sock ? sock : xasprintf("%s/tickd.sock", d->dir);
    for (size_t i = 0; opts->files && opts->files[i]; i += 2) {
        if (!opts->files[i + 1])
            FAIL("test bug: files must come in {name, text} pairs");
        char *path = xasprintf("%s/%s", d->dir, opts->files[i]);
        for (char *sl = strchr(path + strlen(d->dir) + 1, '/'); sl; sl = strchr(sl + 1, '/')) {
            *sl = '\0';
            mkdir(path, 0755);
            *sl = '/';
        }
        char *t = substitute(opts->files[i + 1], d->dir);
        write_text(file, line, path, t);
        free(t);
        free(path);
    }

    /* argv: [valgrind ...] tickd args */
    static const char *const def_args[] = {"--config", "@CONFIG@", NULL};
    const char *const *args = opts->args ? opts->args : def_args;
    size_t nargs = 0;
    while (args[nargs])
        nargs++;
    char **argv = calloc(nargs + 16, sizeof *argv);
    size_t k = 0;
    if (tkit_valgrind()) {
        argv[k++] = xstrdup("valgrind");
        argv[k++] = xstrdup("--error-exitcode=99");
        argv[k++] = xstrdup("--leak-check=full");
        argv[k++] = xstrdup("--errors-for-leak-kinds=definite");
        argv[k++] = xstrdup("-q");
    }
    argv[k++] = bin;
    for (size_t i = 0; i < nargs; i++) {
        argv[k] = substitute(args[i], d->dir);
        if (strcmp(args[i], "--socket") == 0 && args[i + 1]) {
            free(d->sock);
            d->sock = substitute(args[i + 1], d->dir);
        }
        k++;
    }
    argv[k] = NULL;
    if (d->sock[0] != '/') { /* relative to the daemon's working directory */
        char *abs = xasprintf("%s/%s", d->dir, d->sock);
        free(d->sock);
        d->sock = abs;
    }

    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        FAIL("fork: %s", strerror(errno));
    if (pid == 0)
        child_exec(d->dir, d->out_path, d->err_path, argv, (char **)opts->env, parent);
    d->pid = pid;
    for (size_t i = 0; i < k; i++)
        free(argv[i]);
    free(argv);

    if (opts->no_wait)
        return d;
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    for (;;) {
        if (!tkit_running(d))
            FAIL("tickd exited before it was ready"); /* notes quote its stderr */
        if (try_ready(d, deadline))
            return d;
        if (tkit_now() > deadline)
            FAIL("tickd not ready within %.0f s (socket %s); stderr:\n%s",
                 tkit_scale(TKIT_DEADLINE_S), d->sock, tkit_stderr(d));
        nap_ms(5);
    }
}

bool tkit_running(tkit_daemon *d)
{
    if (d->exited || d->pid <= 0)
        return false;
    int st;
    pid_t r = waitpid(d->pid, &st, WNOHANG);
    if (r == d->pid) {
        d->exited = true;
        d->status = st;
        return false;
    }
    return true;
}

void tkit_signal(tkit_daemon *d, int sig)
{
    if (tkit_running(d))
        kill(d->pid, sig);
}

int tkit_wait_exit(tkit_daemon *d, double seconds)
{
    double deadline = tkit_now() + tkit_scale(seconds);
    while (tkit_running(d)) {
        if (tkit_now() > deadline)
            return -1;
        nap_ms(2);
    }
    return d->status;
}

int tkit_stop_at(const char *file, int line, tkit_daemon *d, int sig)
{
    tkit_signal(d, sig);
    int st = tkit_wait_exit(d, TKIT_DEADLINE_S);
    if (st == -1) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, &d->status, 0);
        d->exited = true;
        FAIL("tickd did not exit within %.0f s of signal %d (killed)", tkit_scale(TKIT_DEADLINE_S),
             sig);
    }
    return st;
}

void tkit_finish_at(const char *file, int line, tkit_daemon *d)
{
    /* (failure messages get the daemon's stderr from daemon_notes) */
    int st = tkit_stop_at(file, line, d, SIGTERM);
    if (!WIFEXITED(st))
        FAIL("tickd ended by signal %d on SIGTERM", WTERMSIG(st));
    if (WEXITSTATUS(st) == 99 && tkit_valgrind())
        FAIL("valgrind found errors in tickd");
    if (WEXITSTATUS(st) != 0)
        FAIL("tickd exited with %d on SIGTERM, want 0", WEXITSTATUS(st));
    struct stat sb;
    if (lstat(d->sock, &sb) == 0)
        FAIL("tickd left its socket file %s behind", d->sock);
    tkit_free(d);
}

void tkit_free(tkit_daemon *d)
{
    if (!d || d->freed)
        return;
    if (tkit_running(d)) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, &d->status, 0);
        d->exited = true;
    }
    tkit_rmtree(d->dir);
    d->freed = true;
}

pid_t tkit_pid(const tkit_daemon *d) { return d->pid; }
const char *tkit_dir(const tkit_daemon *d) { return d->dir; }
const char *tkit_sock(const tkit_daemon *d) { return d->sock; }
const char *tkit_config_path(const tkit_daemon *d) { return d->config; }

const char *tkit_path(const tkit_daemon *d, const char *name)
{
    return keep_str(xasprintf("%s/%s", d->dir, name));
}

const char *tkit_write_file(const tkit_daemon *d, const char *name, const char *text)
{
    const char *p = tkit_path(d, name);
    char *t = substitute(text, d->dir);
    write_text(__FILE__, __LINE__, p, t);
    free(t);
    return p;
}

const char *tkit_stderr(const tkit_daemon *d)
{
    const char *s = tkit_slurp(d->err_path);
    return s ? s : "";
}

const char *tkit_stdout(const tkit_daemon *d)
{
    const char *s = tkit_slurp(d->out_path);
    return s ? s : "";
}

/* ---- clients ---------------------------------------------------------------------------- */

tkit_conn *tkit_connect_path(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return NULL;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    reg_begin();
    tkit_conn *c = calloc(1, sizeof *c);
    if (!c)
        abort();
    c->fd = fd;
    c->next_id = FIRST_ID;
    PUSH(R.c, R.nc, R.cc, c);
    return c;
}

tkit_conn *tkit_connect_at(const char *file, int line, tkit_daemon *d)
{
    tkit_conn *c = tkit_connect_path(d->sock);
    if (!c)
        FAIL("connect %s: %s", d->sock, strerror(errno));
    return c;
}

int tkit_fd(const tkit_conn *c) { return c->fd; }

void tkit_close(tkit_conn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

void tkit_half_close(tkit_conn *c)
{
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_WR);
}

int tkit_try_send(tkit_conn *c, const void *buf, size_t len)
{
    const char *p = buf;
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    while (len > 0) {
        if (c->fd < 0) {
            errno = EBADF;
            return -1;
        }
        ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            double left = deadline - tkit_now();
            if (left <= 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            struct pollfd pfd = {c->fd, POLLOUT, 0};
            poll(&pfd, 1, (int)(left * 1000) + 1);
            continue;
        }
        return -1;
    }
    return 0;
}

void tkit_send_raw_at(const char *file, int line, tkit_conn *c, const void *buf, size_t len)
{
    if (tkit_try_send(c, buf, len) != 0)
        FAIL("send of %zu bytes failed: %s", len, strerror(errno));
}

void tkit_sendf_at(const char *file, int line, tkit_conn *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort();
    if (tkit_try_send(c, s, (size_t)n) != 0) {
        int e = errno;
        free(s);
        FAIL("send failed: %s", strerror(e));
    }
    free(s);
}

/* Read more bytes into c->buf, waiting until `deadline`.  Returns 1 if some
 * arrived, 0 at end of stream, -1 at the deadline. */
static int fill(tkit_conn *c, double deadline)
{
    if (c->eof || c->fd < 0) {
        c->eof = true;
        return 0;
    }
    if (c->off > 0 && c->off == c->len) {
        c->off = c->len = 0;
    } else if (c->off > (1u << 20)) {
        memmove(c->buf, c->buf + c->off, c->len - c->off);
        c->len -= c->off;
        c->off = 0;
    }
    if (c->cap - c->len < READ_CHUNK) {
        c->cap = c->cap ? c->cap * 2 : 2 * READ_CHUNK;
        c->buf = xrealloc(c->buf, c->cap);
    }
    for (;;) {
        double left = deadline - tkit_now();
        if (left < 0)
            return -1;
        struct pollfd pfd = {c->fd, POLLIN, 0};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            continue; /* re-check the deadline */
        ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0) {
            c->eof = true;
            return 0;
        }
        c->len += (size_t)n;
        return 1;
    }
}

/* Next line of the stream (malloc'd), or NULL at EOF (*eof) / deadline. */
static char *next_line(tkit_conn *c, double deadline, bool *eof)
{
    size_t scanned = 0; /* bytes after c->off already searched (fill keeps them) */
    for (;;) {
        size_t avail = c->len - c->off;
        char *nl =
            avail > scanned ? memchr(c->buf + c->off + scanned, '\n', avail - scanned) : NULL;
        if (nl) {
            size_t n = (size_t)(nl - (c->buf + c->off));
            char *l = xrealloc(NULL, n + 1);
            memcpy(l, c->buf + c->off, n);
            l[n] = '\0';
            c->off += n + 1;
            if (eof)
                *eof = false;
            return l;
        }
        scanned = avail;
        int r = fill(c, deadline);
        if (r <= 0) {
            if (eof)
                *eof = r == 0;
            return NULL;
        }
    }
}

const char *tkit_read_line(tkit_conn *c, double seconds, bool *eof)
{
    return keep_str(next_line(c, tkit_now() + tkit_scale(seconds), eof));
}

static json_t *parse_line(const char *file, int line, const char *l)
{
    json_error_t e;
    json_t *j = json_loads(l, JSON_DECODE_ANY, &e);
    if (!j) {
        size_t n = strlen(l);
        FAIL("tickd sent a line that is not JSON (%s): %.300s%s", e.text, l, n > 300 ? "..." : "");
    }
    return j;
}

static json_t *read_message(const char *file, int line, tkit_conn *c, double deadline,
                            const char *waiting_for)
{
    bool eof = false;
    char *l = next_line(c, deadline, &eof);
    if (!l) {
        if (eof)
            FAIL("tickd closed the connection while %s was awaited", waiting_for);
        FAIL("nothing from tickd within the deadline while %s was awaited", waiting_for);
    }
    json_t *j = parse_line(file, line, l);
    free(l);
    return j;
}

json_t *tkit_recv_at(const char *file, int line, tkit_conn *c, double seconds)
{
    if (c->nstash > 0) {
        json_t *j = c->stash[0];
        memmove(c->stash, c->stash + 1, (c->nstash - 1) * sizeof *c->stash);
        c->nstash--;
        return keep_json(j);
    }
    return keep_json(read_message(file, line, c, tkit_now() + tkit_scale(seconds), "a message"));
}

static bool is_response_to(const json_t *j, long long id)
{
    if (!json_is_object(j))
        return false;
    json_t *jid = json_object_get(j, "id");
    return json_is_integer(jid) && json_integer_value(jid) == id &&
           (json_object_get(j, "result") || json_object_get(j, "error"));
}

json_t *tkit_recv_id_at(const char *file, int line, tkit_conn *c, long long id)
{
    for (size_t i = 0; i < c->nstash; i++) {
        if (is_response_to(c->stash[i], id)) {
            json_t *j = c->stash[i];
            memmove(c->stash + i, c->stash + i + 1, (c->nstash - i - 1) * sizeof *c->stash);
            c->nstash--;
            return keep_json(j);
        }
    }
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    char what[64];
    snprintf(what, sizeof what, "the response to id %lld", id);
    for (;;) {
        json_t *j = read_message(file, line, c, deadline, what);
        if (is_response_to(j, id))
            return keep_json(j);
        PUSH(c->stash, c->nstash, c->cstash, j);
    }
}

size_t tkit_stashed(const tkit_conn *c) { return c->nstash; }

bool tkit_wait_eof(tkit_conn *c, double seconds)
{
    double deadline = tkit_now() + tkit_scale(seconds);
    for (;;) {
        bool eof = false;
        char *l = next_line(c, deadline, &eof);
        if (!l)
            return eof;
        json_error_t e;
        json_t *j = json_loads(l, JSON_DECODE_ANY, &e);
        if (!j)
            j = json_string(l);
        free(l);
        PUSH(c->stash, c->nstash, c->cstash, j);
    }
}

bool tkit_quiet(tkit_conn *c, double seconds)
{
    if (c->nstash > 0 || c->off < c->len)
        return false;
    struct pollfd pfd = {c->fd, POLLIN, 0};
    double deadline = tkit_now() + seconds;
    for (;;) {
        double left = deadline - tkit_now();
        if (left <= 0)
            return true;
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr > 0)
            return false;
    }
}

/* ---- calls ---------------------------------------------------------------------------------- */

static json_t *vparse(const char *file, int line, const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    json_error_t e;
    json_t *j = json_loads(s, JSON_DECODE_ANY, &e);
    if (!j) {
        keep_str(s);
        FAIL("test bug: params do not parse (%s): %s", e.text, s);
    }
    free(s);
    return j;
}

static long long vsend_request(const char *file, int line, tkit_conn *c, const char *method,
                               const char *fmt, va_list ap)
{
    json_t *req = json_object();
    long long id = c->next_id++;
    json_object_set_new(req, "jsonrpc", json_string("2.0"));
    json_object_set_new(req, "id", json_integer(id));
    json_object_set_new(req, "method", json_string(method));
    if (fmt)
        json_object_set_new(req, "params", vparse(file, line, fmt, ap));
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    size_t n = strlen(text);
    text = xrealloc(text, n + 2);
    text[n] = '\n';
    text[n + 1] = '\0';
    int rc = tkit_try_send(c, text, n + 1);
    int e = errno;
    free(text);
    if (rc != 0)
        FAIL("sending %s failed: %s", method, strerror(e));
    return id;
}

long long tkit_send_request_at(const char *file, int line, tkit_conn *c, const char *method,
                               const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    long long id = vsend_request(file, line, c, method, fmt, ap);
    va_end(ap);
    return id;
}

json_t *tkit_call_at(const char *file, int line, tkit_conn *c, const char *method, const char *fmt,
                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    long long id = vsend_request(file, line, c, method, fmt, ap);
    va_end(ap);
    return tkit_recv_id_at(file, line, c, id);
}

json_t *tkit_assert_result_at(const char *file, int line, json_t *resp)
{
    if (!json_is_object(resp))
        FAIL("response is not an object: %s", tkit_dump(resp));
    json_t *v = json_object_get(resp, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
        FAIL("response without \"jsonrpc\":\"2.0\": %s", tkit_dump(resp));
    if (json_object_get(resp, "error"))
        FAIL("want a result, got an error: %s", tkit_dump(resp));
    json_t *r = json_object_get(resp, "result");
    if (!r)
        FAIL("response without result: %s", tkit_dump(resp));
    return r;
}

json_t *tkit_assert_error_at(const char *file, int line, json_t *resp, int code, const char *needle)
{
    if (!json_is_object(resp))
        FAIL("response is not an object: %s", tkit_dump(resp));
    json_t *v = json_object_get(resp, "jsonrpc");
    if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
        FAIL("response without \"jsonrpc\":\"2.0\": %s", tkit_dump(resp));
    if (json_object_get(resp, "result"))
        FAIL("want error %d, got a result: %s", code, tkit_dump(resp));
    json_t *err = json_object_get(resp, "error");
    if (!json_is_object(err))
        FAIL("want error %d, got: %s", code, tkit_dump(resp));
    json_t *jc = json_object_get(err, "code");
    json_t *jm = json_object_get(err, "message");
    if (!json_is_integer(jc) || json_integer_value(jc) != code)
        FAIL("want error %d, got: %s", code, tkit_dump(resp));
    if (!json_is_string(jm) || json_string_length(jm) == 0)
        FAIL("error without a message: %s", tkit_dump(resp));
    if (needle && !strstr(json_string_value(jm), needle))
        FAIL("error message should name '%s': %s", needle, tkit_dump(resp));
    return err;
}

json_t *tkit_ok_at(const char *file, int line, tkit_conn *c, const char *method, const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    long long id = vsend_request(file, line, c, method, fmt, ap);
    va_end(ap);
    json_t *resp = tkit_recv_id_at(file, line, c, id);
    if (!json_object_get(resp, "result") || json_object_get(resp, "error"))
        FAIL("%s: want a result, got: %s", method, tkit_dump(resp));
    return tkit_assert_result_at(file, line, resp);
}

json_t *tkit_err_at(const char *file, int line, tkit_conn *c, int code, const char *needle,
                    const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    long long id = vsend_request(file, line, c, method, fmt, ap);
    va_end(ap);
    json_t *resp = tkit_recv_id_at(file, line, c, id);
    json_t *err = json_object_get(resp, "error");
    json_t *jc = err ? json_object_get(err, "code") : NULL;
    if (!jc || json_integer_value(jc) != code)
        FAIL("%s: want error %d, got: %s", method, code, tkit_dump(resp));
    return tkit_assert_error_at(file, line, resp, code, needle);
}

/* ---- JSON ------------------------------------------------------------------------------------ */

json_t *tkit_json_at(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *j = vparse(file, line, fmt, ap);
    va_end(ap);
    return keep_json(j);
}

const char *tkit_dump(const json_t *j)
{
    if (!j)
        return "(none)";
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s && strlen(s) > 2000)
        strcpy(s + 1990, "...");
    return keep_str(s ? s : xstrdup("(unprintable)"));
}

json_t *tkit_find(json_t *j, const char *path)
{
    const char *p = path;
    while (j && *p) {
        if (*p == '.') {
            p++;
            continue;
        }
        if (*p == '[') {
            char *end;
            long idx = strtol(p + 1, &end, 10);
            if (*end != ']' || idx < 0)
                return NULL;
            j = json_is_array(j) ? json_array_get(j, (size_t)idx) : NULL;
            p = end + 1;
            continue;
        }
        size_t n = strcspn(p, ".[");
        char key[128];
        if (n >= sizeof key)
            return NULL;
        memcpy(key, p, n);
        key[n] = '\0';
        j = json_is_object(j) ? json_object_get(j, key) : NULL;
        p += n;
    }
    return j;
}

json_t *tkit_get_at(const char *file, int line, json_t *j, const char *path)
{
    json_t *v = tkit_find(j, path);
    if (!v)
        FAIL("no '%s' in %s", path, tkit_dump(j));
    return v;
}

long long tkit_geti_at(const char *file, int line, json_t *j, const char *path)
{
    json_t *v = tkit_get_at(file, line, j, path);
    if (!json_is_integer(v))
        FAIL("'%s' is not an integer in %s", path, tkit_dump(j));
    return json_integer_value(v);
}

double tkit_getd_at(const char *file, int line, json_t *j, const char *path)
{
    json_t *v = tkit_get_at(file, line, j, path);
    if (!json_is_number(v))
        FAIL("'%s' is not a number in %s", path, tkit_dump(j));
    return json_number_value(v);
}

const char *tkit_gets_at(const char *file, int line, json_t *j, const char *path)
{
    json_t *v = tkit_get_at(file, line, j, path);
    if (!json_is_string(v))
        FAIL("'%s' is not a string in %s", path, tkit_dump(j));
    return json_string_value(v);
}

bool tkit_getb_at(const char *file, int line, json_t *j, const char *path)
{
    json_t *v = tkit_get_at(file, line, j, path);
    if (!json_is_boolean(v))
        FAIL("'%s' is not a boolean in %s", path, tkit_dump(j));
    return json_is_true(v);
}

bool tkit_has_string(const json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

/* ---- waiting on the daemon ------------------------------------------------------------------ */

uint64_t tkit_frame_at(const char *file, int line, tkit_conn *c)
{
    json_t *r = tkit_ok_at(file, line, c, "world.status", NULL);
    long long f = tkit_geti_at(file, line, r, "frame");
    if (f < 0)
        FAIL("negative frame %lld", f);
    return (uint64_t)f;
}

uint64_t tkit_wait_frames_at(const char *file, int line, tkit_conn *c, uint64_t n)
{
    uint64_t start = tkit_frame_at(file, line, c);
    double deadline = tkit_now() + tkit_scale(TKIT_DEADLINE_S);
    for (;;) {
        uint64_t f = tkit_frame_at(file, line, c);
        if (f >= start + n)
            return f;
        if (tkit_now() > deadline)
            FAIL("frame counter went from %llu to only %llu in %.0f s (want +%llu)",
                 (unsigned long long)start, (unsigned long long)f, tkit_scale(TKIT_DEADLINE_S),
                 (unsigned long long)n);
        nap_ms(1);
    }
}

/*
 * Run `n` frames as world.step does and return world.trace's "frames" for
 * exactly those frames (one batch: both are taken at one frame boundary).
 */
json_t *tkit_step_traced(tkit_conn *c, int n)
{
    tkit_sendf(c,
               "[{\"jsonrpc\":\"2.0\",\"id\":\"tr\",\"method\":\"world.trace\","
               "\"params\":{\"frames\":%d}},"
               "{\"jsonrpc\":\"2.0\",\"id\":\"st\",\"method\":\"world.step\","
               "\"params\":{\"frames\":%d}}]\n",
               n, n);
    json_t *r = tkit_recv(c);
    ck_assert_msg(json_is_array(r) && json_array_size(r) == 2, "trace+step -> %s", tkit_dump(r));
    json_t *frames = NULL;
    for (size_t i = 0; i < 2; i++) {
        json_t *m = json_array_get(r, i);
        json_t *res = tkit_assert_result(m);
        if (strcmp(tkit_gets(m, "id"), "tr") == 0)
            frames = tkit_get(res, "frames");
    }
    ck_assert_msg(frames && json_array_size(frames) == (size_t)n, "trace of %d frames: %s", n,
                  tkit_dump(r));
    for (size_t i = 1; i < (size_t)n; i++)
        ck_assert_int_eq(tkit_geti(json_array_get(frames, i), "frame"),
                         tkit_geti(json_array_get(frames, i - 1), "frame") + 1);
    return frames;
}
