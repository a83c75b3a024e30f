/*
 * launch.c - starting the supervisor program for one command (supervisor.h).
 *
 * The program's image goes once per process into a sealed memfd; each
 * command is then one posix_spawn of /proc/self/fd/<memfd> (glibc's spawn
 * shares the worker's memory only until the execve, and copies none of its
 * page tables), in a new process group, with every signal blocked, and with
 * only the plan's descriptors inherited: each is dup2'd onto itself, which
 * clears its close-on-exec flag in the child alone (POSIX, glibc >= 2.29).
 *
 * What it must never do: change a descriptor's flags in the worker (another
 * thread may be spawning at the same moment), or start the program with a
 * vector protocol.h does not describe.
 */
#define _GNU_SOURCE
#include "supervisor/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "supervisor/image.h"

/* ---------------------------------------------------------------------------
 * The program, once per process
 */

static pthread_once_t program_once = PTHREAD_ONCE_INIT;
static char program_path[64]; /* "/proc/self/fd/N" once made */
static int program_errno;     /* why it could not be made */

static int write_all(int fd, const unsigned char *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static void make_program(void)
{
    size_t len;
    const unsigned char *bytes = sp_supervisor_image(&len);
    int fd = memfd_create(SP_SUP_PROGRAM_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        program_errno = errno;
        return;
    }
    if (write_all(fd, bytes, len) ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
        program_errno = errno ? errno : EIO;
        close(fd);
        return;
    }
    snprintf(program_path, sizeof program_path, "/proc/self/fd/%d", fd);
}

/* ---------------------------------------------------------------------------
 * The argument vector (protocol.h)
 */

typedef struct vector {
    char **v;
    size_t n;
    char *digits; /* room for every number, NUL-separated */
    size_t used;
    char *cwd;    /* SP_SUP_CWD_MARK + the directory */
} vector;

static size_t strv_len(char *const *v)
{
    size_t n = 0;
    while (v[n])
        n++;
    return n;
}

static void put(vector *vec, char *s)
{
    vec->v[vec->n++] = s;
}

static void put_number(vector *vec, long value)
{
    char *at = vec->digits + vec->used;
    vec->used += (size_t)sprintf(at, "%ld", value) + 1;
    put(vec, at);
}

static void vector_free(vector *vec)
{
    free(vec->v);
    free(vec->digits);
    free(vec->cwd);
}

static int encode(const sp_supervisor_plan *p, vector *vec)
{
    size_t npaths = strv_len(p->paths), argc = strv_len(p->argv);
    size_t numbers = SP_SUP_ARG_NPASS + p->npass + 2;
    *vec = (vector){0};
    vec->v = calloc(numbers + npaths + argc + 3, sizeof *vec->v);
    vec->digits = malloc(numbers * 24);
    if (p->cwd && (vec->cwd = malloc(strlen(p->cwd) + 2)))
        sprintf(vec->cwd, "%c%s", SP_SUP_CWD_MARK, p->cwd);
    if (!vec->v || !vec->digits || (p->cwd && !vec->cwd)) {
        vector_free(vec);
        return ENOMEM;
    }
    put(vec, SP_SUP_PROGRAM_NAME);
    put_number(vec, (long)getpid());
    put_number(vec, p->in_r);
    put_number(vec, p->out_w);
    put_number(vec, p->err_w);
    put_number(vec, p->rep_w);
    put_number(vec, (long)p->npass);
    for (size_t i = 0; i < p->npass; i++)
        put_number(vec, p->pass[i]);
    put_number(vec, (long)npaths);
    for (size_t i = 0; i < npaths; i++)
        put(vec, p->paths[i]);
    put(vec, p->cwd ? vec->cwd : SP_SUP_NO_CWD);
    for (size_t i = 0; i < argc; i++)
        put(vec, p->argv[i]);
    return 0;
}

/* ---------------------------------------------------------------------------
 * The spawn
 */

/* Each descriptor the program inherits, dup2'd onto itself. */
static int inherit(posix_spawn_file_actions_t *fa, const sp_supervisor_plan *p)
{
    int own[] = {p->in_r, p->out_w, p->err_w, p->rep_w};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (posix_spawn_file_actions_adddup2(fa, own[i], own[i]))
            return -1;
    for (size_t i = 0; i < p->npass; i++)
        if (posix_spawn_file_actions_adddup2(fa, p->pass[i], p->pass[i]))
            return -1;
    return 0;
}

static int spawn(const sp_supervisor_plan *p, char **argv, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t all;
    sigfillset(&all);
    if (posix_spawn_file_actions_init(&fa))
        return ENOMEM;
    if (posix_spawnattr_init(&attr)) {
        posix_spawn_file_actions_destroy(&fa);
        return ENOMEM;
    }
    int rc = ENOMEM;
    if (inherit(&fa, p) == 0 &&
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK) == 0 &&
        posix_spawnattr_setpgroup(&attr, 0) == 0 && posix_spawnattr_setsigmask(&attr, &all) == 0)
        rc = posix_spawn(pid, program_path, &fa, &attr, argv, p->envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

int sp_supervisor_start(const sp_supervisor_plan *plan, pid_t *pid, sp_sup_step *step)
{
    *step = SP_SUP_SETUP;
    if (plan->npass > SP_SUP_PASS_MAX)
        return EMFILE;
    pthread_once(&program_once, make_program);
    if (program_errno)
        return program_errno;
    vector vec;
    int rc = encode(plan, &vec);
    if (rc)
        return rc;
    rc = spawn(plan, vec.v, pid);
    vector_free(&vec);
    if (rc)
        *step = SP_SUP_FORK;
    return rc;
}
