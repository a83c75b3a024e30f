/*
 * pin.h - a host path granted to a confined step, resolved and pinned
 * before it is used: the sandbox's readable / writable entries
 * (sandbox.h) and the absolute folders of component runners
 * (runners/component_io.h).
 *
 * What it is for: turn a path as written into the real file or directory
 * it names today: every symlink resolved (realpath), the result refused
 * when it is the whole file system or the user's home directory as a whole
 * (or a directory above it: granting it would grant the home directory
 * too), then opened again along the resolved path with no symlink allowed
 * anywhere (openat2 RESOLVE_NO_SYMLINKS, O_PATH), so that a component
 * swapped for a symlink between the check and the open is refused instead
 * of followed. The descriptor, not the path, is what gets used (bwrap
 * --bind-fd, the dirfd of openat2 RESOLVE_BENEATH): it stays on the checked
 * file whatever happens to the path afterwards.
 *
 * The home directory is $HOME and the password database's home of this
 * user, each resolved (a home that does not exist is not checked).
 *
 * What it must never do: follow a symlink after the check, accept "/" or a
 * home directory (or a parent of one), or hand out a descriptor without
 * O_CLOEXEC.
 */
#ifndef SPORE_SANDBOX_PIN_H
#define SPORE_SANDBOX_PIN_H

#include <stdbool.h>

typedef enum sp_pin_status {
    SP_PIN_OK,
    SP_PIN_MISSING,  /* nothing at the path as written */
    SP_PIN_DANGLING, /* the path is (or passes through) a symlink that leads nowhere */
    SP_PIN_ROOT,     /* it resolves to / */
    SP_PIN_HOME,     /* it resolves to a home directory or a directory above one */
    SP_PIN_CHANGED,  /* the resolved path gained a symlink while it was opened */
    SP_PIN_FAILED,   /* cannot be resolved or opened: errno */
} sp_pin_status;

typedef struct sp_pin {
    char *path; /* resolved, absolute (malloc'd); NULL when nothing resolved */
    int fd;     /* O_PATH | O_CLOEXEC on `path`; -1 unless SP_PIN_OK */
} sp_pin;

/* Resolve and pin `path` (absolute, or relative to the working directory).
 * Always fills `out` (release with sp_pin_release); on SP_PIN_ROOT and
 * SP_PIN_HOME out->path says what it resolved to. */
sp_pin_status sp_pin_path(const char *path, sp_pin *out);
void sp_pin_release(sp_pin *pin);

/* Why a status is a refusal, for messages ("resolves to / (the whole file
 * system)"); a short name for details ("root"). */
const char *sp_pin_status_text(sp_pin_status s);
const char *sp_pin_status_name(sp_pin_status s);

/* True when `dir` is `path` or a directory above it (both absolute and
 * canonical: no "." or "..", no trailing "/" except for "/" itself). */
bool sp_path_covers(const char *dir, const char *path);

#endif
