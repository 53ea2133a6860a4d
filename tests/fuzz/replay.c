/*
 * replay.c - replays the stored fuzz corpora through the fuzz targets; a
 * plain main (gcc, no libFuzzer) that `make check` runs in both its passes.
 *
 *   replay                   every file of tests/fuzz/corpus/<name>/ through
 *                            tkd_fuzz_<name>, for every target below
 *   replay NAME FILE...      the given files through tkd_fuzz_<name>
 *
 * Paths are relative to the working directory: make check runs from the
 * repository root.  Each input runs in a child process of its own, with a
 * time limit of REPLAY_TIMEOUT seconds, so that one failure names its file
 * and does not hide the others, and every input starts from a fresh process
 * (as `fuzz_<name> FILE` reproduces it).  The children's TMPDIR is a
 * directory of the replay's own, removed at the end, so that inputs that
 * crash leave no temp files behind.  A crash, a sanitizer report, a
 * broken invariant (the targets abort) or a timeout fails the input.  The
 * output ends with "replayed N inputs of K targets: ok", or with the list of
 * failed inputs and exit status 1.
 *
 * What it deliberately does not do: mutate inputs (that is `make fuzz`), or
 * find targets by itself - they are listed below, one line per
 * tests/fuzz/fuzz_<name>.c.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"

#define CORPUS_DIR     "tests/fuzz/corpus"
#define REPLAY_TIMEOUT 30 /* s per input: inputs take milliseconds, even under ASan */

typedef struct target {
    const char *name; /* corpus directory name */
    int (*fn)(const uint8_t *data, size_t size);
} target;

static const target targets[] = {
    {"request", tkd_fuzz_request},
    {"config", tkd_fuzz_config},
    {"snapshot", tkd_fuzz_snapshot},
    {"agones", tkd_fuzz_agones},
    {"journal", tkd_fuzz_journal},
};

#define N_TARGETS (sizeof targets / sizeof targets[0])

static unsigned long g_run;    /* inputs replayed                   */
static unsigned long g_failed; /* of which failed                   */
static char g_tmp[256];        /* the children's TMPDIR, "" if none */

/* Make the children's TMPDIR (in /dev/shm if usable, else $TMPDIR or /tmp).
 * Without one the children fall back to their own defaults. */
static void tmp_setup(void)
{
    const char *env = getenv("TMPDIR");
    const char *bases[] = {"/dev/shm", env && *env ? env : "/tmp", "/tmp"};
    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        snprintf(g_tmp, sizeof g_tmp, "%s/tickd-replay-XXXXXX", bases[i]);
        if (mkdtemp(g_tmp)) {
            setenv("TMPDIR", g_tmp, 1);
            return;
        }
    }
    g_tmp[0] = '\0';
}

/* Remove the children's TMPDIR and what they left in it (their private
 * directories, one level of files each). */
static void tmp_cleanup(void)
{
    if (g_tmp[0])
        tkd_fuzz_rmdir(g_tmp, 1);
}

/* Read a whole file (malloc'd; *size its length).  NULL on error. */
static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger)
                free(buf);
            buf = bigger;
        }
    }
    if (ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = n;
    return buf;
}

/* Child: run one input and exit (0 on success; a failure aborts). */
static void child(const target *t, const char *path)
{
    alarm(REPLAY_TIMEOUT);
    size_t size;
    uint8_t *data = slurp(path, &size);
    if (!data) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        exit(2);
    }
    t->fn(data, size);
    free(data);
    exit(0);
}

/* Replay one input in a child process; report a failure. */
static void replay_one(const target *t, const char *path)
{
    fflush(stdout);
    fflush(stderr);
    g_run++;
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "replay: fork: %s\n", strerror(errno));
        g_failed++;
        return;
    }
    if (pid == 0)
        child(t, path);
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "replay: waitpid: %s\n", strerror(errno));
            g_failed++;
            return;
        }
    }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return;
    g_failed++;
    if (WIFSIGNALED(st))
        fprintf(stderr, "FAIL fuzz_%s %s: %s%s\n", t->name, path, strsignal(WTERMSIG(st)),
                WTERMSIG(st) == SIGALRM ? " (timed out)" : "");
    else
        fprintf(stderr, "FAIL fuzz_%s %s: exit status %d\n", t->name, path, WEXITSTATUS(st));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay every regular file of the target's corpus directory, in name
 * order.  Returns the number of inputs, or -1 if the directory is unusable. */
static long replay_corpus(const target *t)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", CORPUS_DIR, t->name);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "FAIL fuzz_%s: cannot open %s: %s (run from the repository root)\n",
                t->name, dir, strerror(errno));
        g_failed++;
        return -1;
    }
    size_t n = 0, cap = 64;
    char **paths = malloc(cap * sizeof *paths);
    struct dirent *e;
    while (paths && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[1024];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (n == cap) {
            char **bigger = realloc(paths, (cap *= 2) * sizeof *paths);
            if (!bigger)
                break;
            paths = bigger;
        }
        paths[n++] = strdup(p);
    }
    closedir(d);
    if (!paths) {
        fprintf(stderr, "replay: out of memory\n");
        exit(1);
    }
    qsort(paths, n, sizeof *paths, cmp_str);
    for (size_t i = 0; i < n; i++) {
        replay_one(t, paths[i]);
        free(paths[i]);
    }
    free(paths);
    if (n == 0) {
        fprintf(stderr, "FAIL fuzz_%s: %s holds no inputs\n", t->name, dir);
        g_failed++;
    }
    printf("fuzz_%s: %zu inputs from %s\n", t->name, n, dir);
    return (long)n;
}

int main(int argc, char **argv)
{
    size_t used = 0;
    tmp_setup();
    /* Every input gets every check: no sampling by size, no skipping of a
     * document already checked (fuzz_request.c). */
    setenv("TICKD_FUZZ_FULL", "1", 1);
    if (argc >= 2) {
        const target *t = NULL;
        for (size_t i = 0; i < N_TARGETS; i++)
            if (!strcmp(targets[i].name, argv[1]))
                t = &targets[i];
        if (!t || argc < 3) {
            fprintf(stderr, "usage: %s [TARGET FILE...]   (targets:", argv[0]);
            for (size_t i = 0; i < N_TARGETS; i++)
                fprintf(stderr, " %s", targets[i].name);
            fprintf(stderr, ")\n");
            tmp_cleanup();
            return 2;
        }
        for (int i = 2; i < argc; i++)
            replay_one(t, argv[i]);
        used = 1;
    } else {
        for (size_t i = 0; i < N_TARGETS; i++)
            replay_corpus(&targets[i]);
        used = N_TARGETS;
    }
    tmp_cleanup();
    if (g_failed) {
        printf("replayed %lu inputs of %zu targets: %lu FAILED\n", g_run, used, g_failed);
        return 1;
    }
    printf("replayed %lu inputs of %zu targets: ok\n", g_run, used);
    return 0;
}
