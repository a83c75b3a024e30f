/*
 * step.h - spore-step, the reference step CLI (agent-step.md §9): what its
 * modules share.
 *
 * spore-step reads at most 983,040 bytes of stdin, validates the request
 * strictly (exit 2), creates runDir (0700, refusing symlinks; exit 3 when it
 * cannot), moves its real stdout to a private descriptor and points fd 1 at
 * stderr, writes `start`, runs the provider, writes result.json atomically
 * (temp file, fsync, rename, fsync of the directory) and then the result
 * line (exit 4 when that line cannot be written), and ends with 128+N on
 * SIGTERM, SIGINT or SIGHUP, without a result.
 *
 * What it must never do: write anything but protocol records to the
 * private stdout, print a secret on its own account, or exit 0 without a
 * result line.
 */
#ifndef SPORE_STEP_STEP_H
#define SPORE_STEP_STEP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define STEP_EXIT_OK 0
#define STEP_EXIT_INTERNAL 1
#define STEP_EXIT_REQUEST 2
#define STEP_EXIT_PRECONDITION 3
#define STEP_EXIT_UNVERIFIED 4

typedef struct step_request {
    json_t *query;   /* string */
    json_t *context; /* object or NULL */
    json_t *system_prompt;
    json_t *output_schema;
    unsigned long long timeout_ms;
    char step_id[41];
    char run_dir[4097];
    char traceparent[64]; /* "" when absent */
    json_t *doc;          /* owns the values above */
} step_request;

/* request.c: read stdin (bounded) and validate; 0, or an exit code after
 * printing the reason to stderr. */
int step_read_request(step_request *r);
void step_request_free(step_request *r);

/* emit.c: the protocol writer over the private stdout descriptor. */
typedef struct step_out {
    int fd;
    const char *step_id;
    unsigned long long seq;
} step_out;

bool step_emit_start(step_out *o);
bool step_emit_event(step_out *o, const char *kind, json_t *data); /* takes data */
bool step_emit_raw(step_out *o, const char *line);                 /* a line as is (+LF) */
bool step_emit_result(step_out *o, int status, json_t *body);      /* borrows body */
/* result.json in runDir: temp file, fsync, rename, fsync of the directory. */
bool step_write_result_file(const char *run_dir, const char *step_id, int status,
                            const json_t *body);

/* fake.c: the scripted provider. Returns the exit code. */
int step_fake_run(const step_request *r, const char *scenario_path, step_out *out);

#endif
