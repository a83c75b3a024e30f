/*
 * store_crash_child.c - the child process of the crash test (Q03): opens the
 * store at argv[1] and performs crash operation argv[2] (an index into
 * crash_op) on a fixed clock. The parent arms SPORE_FAILPOINTS in its
 * environment, so the process aborts inside the store's commit path.
 *
 * Must never do anything but the one mutation: exit 0 only if it was not
 * interrupted (which the parent treats as a failure of the failpoint).
 */
#include <stdio.h>
#include <stdlib.h>

#include "crash.h"
#include "fixture.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: store_crash_child <store> <op>\n");
        return 2;
    }
    int op = atoi(argv[2]);
    if (op < 0 || op >= CRASH_OPS)
        return 2;
    manual_clock clock;
    manual_clock_set(&clock, CRASH_MS);
    sp_clock c = manual_clock_of(&clock);
    sp_error err = {0};
    sp_store *s = sp_store_open(argv[1], &c, &err);
    if (!s) {
        fprintf(stderr, "store_crash_child: %s: %s\n", err.code, err.message);
        return 3;
    }
    sp_disposition d;
    sp_store_rc rc = crash_perform(s, (crash_op)op, &d, &err);
    printf("not interrupted: %s %s\n", sp_store_rc_name(rc), err.code);
    sp_error_clear(&err);
    sp_store_close(s);
    return 0;
}
