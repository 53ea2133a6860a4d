/*
 * test_hotmem.c - hot regions (src/daemon/hotmem.c): a save child reads
 * the regions exactly as they were at the fork, while the parent's writes
 * after the fork land in its own pages (never shared with the child, so
 * never copied on write); the regions fork as usual again afterwards.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/daemon/hotmem.h"
#include "../check_main.h"

static void wait_ready(tkd_hotmem *h, size_t bytes)
{
    for (int i = 0; i < 100000 && !tkd_hotmem_ready(h, bytes); i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    ck_assert(tkd_hotmem_ready(h, bytes));
}

static char *region(size_t len, char fill)
{
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(p != MAP_FAILED);
    memset(p, fill, len);
    return p;
}

/* Fork with the regions hot: the child checks it sees `was` everywhere
 * after the parent wrote `now` (told through a pipe); exit status 0 if so. */
static int fork_and_check(tkd_hotmem *h, struct iovec *reg, size_t n, char was, char now)
{
    char err[128];
    ck_assert_msg(tkd_hotmem_before_fork(h, reg, NULL, n, err, sizeof err) == 0, "%s", err);
    int go[2];
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(go[1]);
        if (tkd_hotmem_in_child(h) != 0)
            _exit(3);
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(4);
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < reg[i].iov_len; k++)
                if (((char *)reg[i].iov_base)[k] != was)
                    _exit(5);
        _exit(0);
    }
    close(go[0]);
    tkd_hotmem_after_fork(h);
    for (size_t i = 0; i < n; i++)
        memset(reg[i].iov_base, now, reg[i].iov_len);
    ck_assert_int_eq(write(go[1], "x", 1), 1);
    close(go[1]);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

START_TEST(hotmem_child_sees_the_fork)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    char *a = region(16 * ps, 'a'), *b = region(3 * ps, 'b');
    struct iovec reg[2] = {{a, 16 * ps}, {b, 3 * ps}};
    tkd_hotmem *h = tkd_hotmem_new();
    ck_assert(!tkd_hotmem_ready(h, 19 * ps)); /* grows on its thread first */
    wait_ready(h, 19 * ps);
    /* the child sees 'a'/'b' as they were... */
    memset(b, 'a', 3 * ps);
    ck_assert_int_eq(fork_and_check(h, reg, 2, 'a', 'z'), 0);
    /* ...and the parent what it wrote */
    for (size_t k = 0; k < 16 * ps; k++)
        ck_assert_int_eq(a[k], 'z');
    /* again with the same shadow: now 'z' at the fork */
    ck_assert(tkd_hotmem_ready(h, 19 * ps));
    ck_assert_int_eq(fork_and_check(h, reg, 2, 'z', 'y'), 0);
    /* a bigger need grows the shadow, the old one still serves meanwhile */
    ck_assert(!tkd_hotmem_ready(h, 1u << 24));
    wait_ready(h, 1u << 24);
    tkd_hotmem_free(h);
    munmap(a, 16 * ps);
    munmap(b, 3 * ps);
}
END_TEST

/* After the fork the regions fork as usual again: a plain child sees them. */
START_TEST(hotmem_regions_fork_again)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    char *a = region(4 * ps, 'q');
    struct iovec reg[1] = {{a, 4 * ps}};
    tkd_hotmem *h = tkd_hotmem_new();
    wait_ready(h, 4 * ps);
    ck_assert_int_eq(fork_and_check(h, reg, 1, 'q', 'r'), 0);
    pid_t pid = fork();
    if (pid == 0)
        _exit(a[0] == 'r' && a[4 * ps - 1] == 'r' ? 0 : 1);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    tkd_hotmem_free(h);
    munmap(a, 4 * ps);
}
END_TEST

/* Regions big enough that the copy is shared with a helper thread (pieces
 * that fall inside the first region and across the two): every byte reaches
 * the child at its place. */
START_TEST(hotmem_big_copy_in_two_halves)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    size_t la = (5u << 20) + 3 * ps, lb = (1u << 20) + ps;
    char *a = region(la, 0), *b = region(lb, 0);
    for (size_t k = 0; k < la; k++)
        a[k] = (char)(k * 7 % 251);
    for (size_t k = 0; k < lb; k++)
        b[k] = (char)(k * 13 % 241 + 1);
    struct iovec reg[2] = {{a, la}, {b, lb}};
    tkd_hotmem *h = tkd_hotmem_new();
    wait_ready(h, la + lb);
    char err[128];
    ck_assert_msg(tkd_hotmem_before_fork(h, reg, NULL, 2, err, sizeof err) == 0, "%s", err);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (tkd_hotmem_in_child(h) != 0)
            _exit(3);
        for (size_t k = 0; k < la; k++)
            if (a[k] != (char)(k * 7 % 251))
                _exit(4);
        for (size_t k = 0; k < lb; k++)
            if (b[k] != (char)(k * 13 % 241 + 1))
                _exit(5);
        _exit(0);
    }
    tkd_hotmem_after_fork(h);
    memset(a, 'x', la);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    tkd_hotmem_free(h);
    munmap(a, la);
    munmap(b, lb);
}
END_TEST

/* Only the bytes in use are copied, in pieces that cross regions: many
 * regions of odd sizes, each with part of it in use, more than a piece in
 * all; the child sees every byte in use at its place. */
START_TEST(hotmem_copies_what_is_used)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    enum { N = 9 };
    char *r[N];
    struct iovec reg[N];
    size_t used[N], total = 0;
    for (size_t i = 0; i < N; i++) {
        size_t len = (i * 97 % 300 + 1) * ps;
        used[i] = i == 3 ? len : (i * 31 % (len / ps)) * ps; /* 0 .. all of it */
        r[i] = region(len, 0);
        for (size_t k = 0; k < len; k++)
            r[i][k] = (char)((k + i * 7) % 253 + 1);
        reg[i] = (struct iovec){r[i], len};
        total += len;
    }
    tkd_hotmem *h = tkd_hotmem_new();
    wait_ready(h, total);
    char err[128];
    ck_assert_msg(tkd_hotmem_before_fork(h, reg, used, N, err, sizeof err) == 0, "%s", err);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (tkd_hotmem_in_child(h) != 0)
            _exit(3);
        for (size_t i = 0; i < N; i++)
            for (size_t k = 0; k < used[i]; k++)
                if (r[i][k] != (char)((k + i * 7) % 253 + 1))
                    _exit(4);
        _exit(0);
    }
    tkd_hotmem_after_fork(h);
    for (size_t i = 0; i < N; i++)
        memset(r[i], 0, reg[i].iov_len);
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    tkd_hotmem_free(h);
    for (size_t i = 0; i < N; i++)
        munmap(r[i], reg[i].iov_len);
}
END_TEST

/* Refusals change nothing: regions not whole pages, a shadow too small. */
START_TEST(hotmem_refusals)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    char *a = region(4 * ps, 'q');
    tkd_hotmem *h = tkd_hotmem_new();
    char err[128];
    struct iovec odd[1] = {{a + 8, ps}};
    ck_assert_int_eq(tkd_hotmem_before_fork(h, odd, NULL, 1, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "whole pages"));
    struct iovec big[1] = {{a, 4 * ps}};
    ck_assert_int_eq(tkd_hotmem_before_fork(h, big, NULL, 1, err, sizeof err), -1);
    ck_assert_ptr_nonnull(strstr(err, "shadow"));
    tkd_hotmem_after_fork(h); /* nothing marked: harmless */
    tkd_hotmem_free(h);
    munmap(a, 4 * ps);
}
END_TEST

static Suite *hotmem_suite(void)
{
    Suite *s = suite_create("hotmem");
    TCase *tc = tcase_create("hotmem");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, hotmem_child_sees_the_fork);
    tcase_add_test(tc, hotmem_regions_fork_again);
    tcase_add_test(tc, hotmem_refusals);
    tcase_add_test(tc, hotmem_big_copy_in_two_halves);
    tcase_add_test(tc, hotmem_copies_what_is_used);
    suite_add_tcase(s, tc);
    return s;
}

TK_CHECK_MAIN(hotmem_suite)
