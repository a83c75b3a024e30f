/*
 * check.h - the small assertion harness of spore's C tests.
 *
 * CHECK(cond) records a failure with file and line and goes on; a test binary
 * exits non-zero when any check failed (check_done()). Tests assert real
 * behaviour: no check here can pass without evaluating its condition.
 */
#ifndef SPORE_TESTS_CHECK_H
#define SPORE_TESTS_CHECK_H

#include <stdbool.h>
#include <stddef.h>

extern int check_failures;
extern int check_count;

void check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int check_done(const char *suite);

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        check_count++;                                                                   \
        if (!(cond))                                                                     \
            check_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                          \
    } while (0)

#define CHECK_STR(actual, expected)                                                      \
    do {                                                                                 \
        const char *check_a_ = (actual), *check_e_ = (expected);                         \
        check_count++;                                                                   \
        if (!check_a_ || !check_e_ || strcmp(check_a_, check_e_) != 0)                   \
            check_fail(__FILE__, __LINE__, "%s: got \"%s\", want \"%s\"", #actual,       \
                       check_a_ ? check_a_ : "(null)", check_e_ ? check_e_ : "(null)");  \
    } while (0)

#define CHECK_INT(actual, expected)                                                      \
    do {                                                                                 \
        long long check_a_ = (long long)(actual), check_e_ = (long long)(expected);      \
        check_count++;                                                                   \
        if (check_a_ != check_e_)                                                        \
            check_fail(__FILE__, __LINE__, "%s: got %lld, want %lld", #actual, check_a_, \
                       check_e_);                                                        \
    } while (0)

#endif
