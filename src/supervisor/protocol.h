/*
 * protocol.h - what a worker and the supervisor program (main.c) say to each
 * other: the program's argument vector, the descriptors it inherits, and the
 * records it writes back on the report pipe.
 *
 * What it is for: one definition for both sides. The worker (launch.c, for
 * runners/process.c) encodes the vector and reads the records; the program
 * decodes the vector and writes the records. Nothing else crosses: the
 * command's environment is the program's own environment, and its stdio
 * comes through the descriptors named in the vector.
 *
 * What it must never do: hold anything but constants and plain types (the
 * program is linked without libspore), or change without both sides.
 */
#ifndef SPORE_SUPERVISOR_PROTOCOL_H
#define SPORE_SUPERVISOR_PROTOCOL_H

#include <stdint.h>

/* Where starting a command can fail, in the order it is tried. A record of
 * type SP_SUP_REPORT_ERRNO names one of these and the errno it met. */
typedef enum sp_sup_step {
    SP_SUP_SETUP,   /* the worker: memory, the program image */
    SP_SUP_PIPE,    /* the worker: the pipes */
    SP_SUP_FORK,    /* the worker starting the program, or the program the command */
    SP_SUP_SETPGID, /* the program: its own process group */
    SP_SUP_FDS,     /* the program: placing the descriptors */
    SP_SUP_SIGNALS, /* the death signals */
    SP_SUP_CHDIR,   /* the command: its working directory */
    SP_SUP_EXEC,    /* the command: execve of every candidate path */
    SP_SUP_STEP_COUNT
} sp_sup_step;

enum { SP_SUP_REPORT_ERRNO = 'E', SP_SUP_REPORT_STATUS = 'S' };

/* One record on the report pipe: ERRNO (step, errno) when the command could
 * not be started, STATUS (0, the wait status) when it ended. */
typedef struct sp_sup_report {
    int32_t type, step, value;
} sp_sup_report;

enum {
    SP_SUP_REPORT_FD = 3, /* the report pipe inside the program and the command */
    SP_SUP_PASS_FD = 4,   /* the first descriptor handed to the command */
    SP_SUP_PASS_MAX = 256 /* at most this many */
};
_Static_assert(SP_SUP_REPORT_FD < SP_SUP_PASS_FD, "passed descriptors come after the report pipe");

/* The argument vector, in order:
 *   [SP_SUP_ARG_NAME]    "spore-supervisor"
 *   [SP_SUP_ARG_WORKER]  the worker's pid (the program's expected parent)
 *   [SP_SUP_ARG_STDIN]   the descriptor that becomes the command's stdin,
 *   [SP_SUP_ARG_STDOUT]  stdout,
 *   [SP_SUP_ARG_STDERR]  stderr,
 *   [SP_SUP_ARG_REPORT]  and the report pipe's write end
 *   [SP_SUP_ARG_NPASS]   n, then n descriptors handed over at SP_SUP_PASS_FD + i
 *   then                 m, then m paths execve tries for the command, in order
 *   then                 the working directory: SP_SUP_NO_CWD, or
 *                        SP_SUP_CWD_MARK followed by the path
 *   then                 the command's own argv, to the end
 * Numbers are decimal. The descriptors are the worker's own numbers, which
 * the program inherits without close-on-exec. */
enum {
    SP_SUP_ARG_NAME,
    SP_SUP_ARG_WORKER,
    SP_SUP_ARG_STDIN,
    SP_SUP_ARG_STDOUT,
    SP_SUP_ARG_STDERR,
    SP_SUP_ARG_REPORT,
    SP_SUP_ARG_NPASS
};
#define SP_SUP_PROGRAM_NAME "spore-supervisor"
#define SP_SUP_NO_CWD "-"
#define SP_SUP_CWD_MARK '='

#endif
