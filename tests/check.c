/*
 * check.c - failure reporting for check.h.
 */
#include "check.h"

#include <stdarg.h>
#include <stdio.h>

int check_failures = 0;
int check_count = 0;

void check_fail(const char *file, int line, const char *fmt, ...)
{
    check_failures++;
    fprintf(stderr, "%s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int check_done(const char *suite)
{
    printf("%s: %d checks, %d failed\n", suite, check_count, check_failures);
    return check_failures ? 1 : 0;
}
