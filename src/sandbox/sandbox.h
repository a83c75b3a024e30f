/*
 * sandbox.h - the local process sandbox of agent steps (agent-step.md §7),
 * built with bubblewrap (Debian's `bubblewrap`, D8).
 *
 * What it is for: a sandbox is a private host directory (its work root, and
 * the files the runner writes for the step) plus the bwrap command line that
 * starts a program inside: new user, mount, PID, IPC, UTS and network
 * namespaces (network "host" shares the network), --new-session,
 * --die-with-parent, --clearenv with an explicit environment, every
 * capability dropped, read-only system directories (/usr and its symlinks,
 * a short list of /etc files), a private /proc, /dev and /tmp, a root that
 * is remounted read-only, the step's run directory writable, the action's
 * readable / writable grants at their own absolute paths (each resolved
 * and pinned first, grants.c: what is bound is the checked target, never
 * whatever a symlink points to at bind time), secret files mounted
 * read-only, and nothing else of the host: no home directory, no host
 * processes.
 *
 * Lifecycle: `reuse: "none"` makes a fresh sandbox per attempt and destroys
 * it afterwards; `reuse: "run"` keeps one per run (keyed by the run ID,
 * shared by the run's agent steps in this process and, through its
 * directory, by later processes) until it is tainted: a tainted sandbox is
 * destroyed and never handed out again. A `run` sandbox whose directory
 * says a step was in progress when its process died counts as tainted.
 *
 * bwrap: $SPORE_BWRAP (an absolute path) when set, else `bwrap` in PATH, else
 * /usr/bin/bwrap.
 *
 * Where: $SPORE_AGENT_DIR, else $XDG_RUNTIME_DIR/spore-agent, else
 * ${TMPDIR:-/tmp}/spore-agent-<uid>; created 0700 and refused unless it is
 * a real directory owned by this user and private.
 *
 * What it must never do: fall back to running unsandboxed, follow a symlink
 * while creating or destroying a sandbox directory, bind a grant by a path
 * that could be swapped for a symlink before bwrap mounts it, hand out a
 * tainted sandbox, or put a secret value on a command line (secrets are
 * files).
 */
#ifndef SPORE_SANDBOX_SANDBOX_H
#define SPORE_SANDBOX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define SP_SANDBOX_WORK_ROOT "/spore/work"   /* the work root inside */
#define SP_SANDBOX_BIN_DIR "/spore/bin"      /* step programs bound from outside /usr */
#define SP_SANDBOX_SECRETS "/var/secrets"    /* secret files */
#define SP_SANDBOX_MCP_CONFIG "/spore/mcp-servers.json"
#define SP_SANDBOX_GATEWAY "/spore/gateway.sock" /* the model gateway's socket */

/* What this machine offers (for the preflight and `capabilities`). */
typedef struct sp_sandbox_features {
    char bwrap[512];      /* path of bwrap, "" if not found */
    bool user_namespaces; /* the kernel allows creating them */
    bool works;           /* a trial sandbox ran `true` (with one --ro-bind-fd mount) */
    char problem[400];    /* what is missing, when !works */
} sp_sandbox_features;

/* Detect once per process (cached; thread-safe). */
const sp_sandbox_features *sp_sandbox_detect(void);

/* 0 when a sandbox can be built; agent.sandbox-unavailable naming what is
 * missing otherwise. */
int sp_sandbox_check(sp_error *err);

typedef struct sp_sandbox sp_sandbox;

/* A sandbox for one attempt: fresh (reuse none), or the run's (reuse run).
 * agent.sandbox-unavailable when its directory cannot be made. */
sp_sandbox *sp_sandbox_acquire(const char *run_id, bool reuse_run, sp_error *err);

/* Done with it: destroyed when `taint` or when not reused; kept otherwise. */
void sp_sandbox_release(sp_sandbox *s, bool taint);

/* The host directory behind SP_SANDBOX_WORK_ROOT, and the sandbox's own
 * directory (for files the runner writes for the step). */
const char *sp_sandbox_work_host(const sp_sandbox *s);
const char *sp_sandbox_dir(const sp_sandbox *s);
bool sp_sandbox_reused(const sp_sandbox *s);

/* A file bound read-only into the sandbox. */
typedef struct sp_sandbox_file {
    const char *host;
    const char *inside;
} sp_sandbox_file;

/* ---- grants (grants.c) ----
 *
 * A readable / writable entry as the sandbox binds it. Resolution, in this
 * order (the first that fails decides):
 * - a relative entry is joined to the base directory (the engine's), as
 *   written; the entry must exist (agent.sandbox-unavailable otherwise);
 * - every symlink is resolved and the result pinned (pin.h): a dangling
 *   symlink, "/" and the home directory (or a parent of it) are refused;
 * - a relative entry must still resolve inside the base directory (it
 *   cannot be written with "..", so it cannot name anything else);
 * - the resolved path must pass the rule every written path passes
 *   (sp_sandbox_path_reserved), and may not be the agent directory, inside
 *   it or above it (other sandboxes live there);
 * - a grant inside another one must name its target by the path the target
 *   has inside that one (bwrap looks it up there, where host symlinks are
 *   visible).
 * Refusals are agent.grant-refused with details {grant, entry, resolved,
 * reason}. The grant is mounted at its path as written (absolute), from
 * the pinned descriptor (bwrap --bind-fd / --ro-bind-fd, which verifies
 * that the mount is that very file). */
typedef struct sp_sandbox_grant {
    char *entry;    /* as written */
    char *inside;   /* ... made absolute: its mount point */
    char *resolved; /* the host file it names */
    int fd;         /* O_PATH on `resolved` (pinned) */
    bool writable;
} sp_sandbox_grant;

typedef struct sp_sandbox_grants {
    sp_sandbox_grant *v; /* sorted by `inside`: a grant below another is mounted after it */
    size_t n;
} sp_sandbox_grants;

/* Resolve every entry (NULL-terminated lists, may be NULL) against `base`.
 * 0, or -1 with agent.grant-refused / agent.sandbox-unavailable (and
 * nothing left open). */
int sp_sandbox_grants_resolve(const char *const *readable, const char *const *writable,
                              const char *base, sp_sandbox_grants *out, sp_error *err);
void sp_sandbox_grants_free(sp_sandbox_grants *g);

/* A path the sandbox provides itself, which no grant may name: "/", /usr,
 * /bin, /sbin, /lib, /lib64, /etc, /tmp, /var themselves, anything under
 * /proc, /dev, /spore or /var/secrets. */
bool sp_sandbox_path_reserved(const char *path);

typedef struct sp_sandbox_spec {
    bool network_host;
    const sp_sandbox_grants *grants; /* may be NULL */
    int grant_fd;                    /* grants->v[i].fd is descriptor grant_fd + i in bwrap */
    const sp_sandbox_file *files;
    size_t nfiles;
    const char *run_dir_host; /* the step's run directory on the host (reuse none) */
    const char *run_dir;      /* ... and inside */
    const char *cwd;          /* absolute working directory inside */
    const char *const *env;   /* "NAME=value" inside, NULL-terminated */
    const char *const *argv;  /* the command inside, NULL-terminated */
} sp_sandbox_spec;

/* The complete bwrap argv (NULL-terminated, argv[0] = the bwrap path).
 * Free with sp_sandbox_strv_free. NULL + error when out of memory or when a
 * path cannot be mounted as written. */
char **sp_sandbox_bwrap_argv(const sp_sandbox *s, const sp_sandbox_spec *spec, sp_error *err);
void sp_sandbox_strv_free(char **v);

/* The agent directory (created on first use); NULL + error when unusable. */
const char *sp_sandbox_root(sp_error *err);

/* Remove a directory tree without following symlinks, making directories
 * writable on the way (a step may have chmodded them). 0 or -1. */
int sp_sandbox_remove_tree(const char *path);

#endif
