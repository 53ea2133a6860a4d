/*
 * check_main.h - the main() of a unit test program: its suite, each test in
 * its own process (a crash fails one test, not the run).
 */
#ifndef TICKD_TESTS_CHECK_MAIN_H
#define TICKD_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

/* An assertion for hot loops: Check reports every passing ck_assert to the
 * parent process (a write per call), so loops over thousands of items test
 * plainly and fail through ck_abort_msg. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)

#define TK_CHECK_MAIN(make_suite)                                                                  \
    int main(void)                                                                                 \
    {                                                                                              \
        SRunner *sr = srunner_create(make_suite());                                                \
        srunner_set_fork_status(sr, CK_FORK);                                                      \
        srunner_run_all(sr, CK_NORMAL);                                                            \
        int failed = srunner_ntests_failed(sr);                                                    \
        srunner_free(sr);                                                                          \
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;                                               \
    }

#endif
