/*
 * jail_main.c - spore-wasm-jail, the jailed runner process as a program of
 * its own (runners.md §4): it checks its arguments (`__wasm-jail`, the frame
 * revision, the worker's PID), dies with the worker, and runs
 * sp_jail_child_main (jail_child.c).
 *
 * What it is for: a runner call used to start the whole `spore` binary
 * (`spore __wasm-jail`), which loads ~47 shared libraries before its first
 * instruction (14 ms a start on the 2-core test VM); this program links only
 * the jail's own code and libraries (the WebAssembly engine, jansson,
 * libseccomp) and starts in ~2 ms. The worker finds it beside its own
 * executable (jail.c, sp_jail_binary) and falls back to spore.
 *
 * The worker starts it with posix_spawn (jail.c), so the death signal that
 * a forked child would set before its execve is set here: SIGKILL when the
 * worker dies, and if the worker died before that (this process was handed
 * to another parent), no call at all.
 *
 * What it must never do: serve a call of another frame revision (a program
 * left from another build answers with a load error that says so), outlive
 * its worker, or do anything else before sp_jail_child_main, which sets the
 * jail's limits and filter itself.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "wasm/jail.h"
#include "wasm/protocol.h"

/* The worker's PID from its decimal argument; 0 when it is not one. */
static pid_t worker_of(const char *arg)
{
    char *end = NULL;
    long pid = strtol(arg, &end, 10);
    return end != arg && *end == '\0' && pid >= 1 && pid <= 0x3fffffff ? (pid_t)pid : 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], SP_JAIL_SUBCOMMAND) == 0 &&
        strcmp(argv[2], SP_JAIL_PROTOCOL) == 0 && worker_of(argv[3])) {
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != worker_of(argv[3]))
            return 127; /* the worker is gone: nobody waits for this call */
        return sp_jail_child_main();
    }
    char text[256];
    bool other = argc >= 3 && strcmp(argv[2], SP_JAIL_PROTOCOL) != 0;
    int len = other ? snprintf(text, sizeof text,
                               SP_JAIL_PROGRAM " speaks jail protocol " SP_JAIL_PROTOCOL
                                               ", the worker asked for %s: install spore and "
                               SP_JAIL_PROGRAM " from the same build",
                               argv[2])
                    : snprintf(text, sizeof text,
                               SP_JAIL_PROGRAM " takes the arguments " SP_JAIL_SUBCOMMAND
                                               " " SP_JAIL_PROTOCOL
                                               " <worker PID> from its worker: install spore and "
                               SP_JAIL_PROGRAM " from the same build");
    /* to the worker as the call's answer when it is one (fd 3), once its two
     * frames are read (a socket closed with unread data resets the peer's
     * reads), and to a person who ran it by hand */
    for (int i = 0; i < 2; i++) {
        uint8_t type;
        char *frame = NULL;
        size_t frame_len;
        if (sp_frame_read(SP_JAIL_FD, &type, &frame, &frame_len, SP_JAIL_MODULE_MAX) == 0)
            free(frame);
    }
    sp_frame_write(SP_JAIL_FD, SP_FRAME_LOAD_ERROR, text, (size_t)len, NULL, 0, 0);
    fprintf(stderr, "%s\n", text);
    return 2;
}
