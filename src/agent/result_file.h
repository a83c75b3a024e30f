/*
 * result_file.h - the fixed-vocabulary diagnostic of `<runDir>/result.json`
 * (agent-step.md §5).
 *
 * What it is for: after exit 4 (result written to the file, stdout result
 * line lost) or a lost stream, the runner looks at result.json, with the
 * same bounds (4 MiB) and strictness as a protocol line, only to describe
 * it: `file` (present | absent | unreadable | oversize | invalid-json |
 * invalid-record), `bytes`, `status` (200, 502 or null), `success` (bool or
 * null), `stepIdMatch`, one `has_<key>` flag for each of success, summary,
 * error, output, options, actionRequired, diagnosis, actionsTaken, checks,
 * content, and `otherKeys` (a count).
 *
 * What it must never do: copy any string from the file out (not even a key
 * name), follow a symlink, read more than 4 MiB + 1 bytes, or let the file
 * complete a step: any process in the sandbox can rewrite it.
 */
#ifndef SPORE_AGENT_RESULT_FILE_H
#define SPORE_AGENT_RESULT_FILE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define SP_AGENT_RESULT_FILE_MAX (4u * 1024 * 1024)
#define SP_AGENT_RESULT_FILE_KEYS 10

typedef struct sp_agent_result_file {
    const char *file;  /* one of the six words (static) */
    uint64_t bytes;
    int status;        /* 200, 502, or 0 for null */
    int success;       /* 1, 0, or -1 for null */
    int step_id_match; /* 1, 0, or -1 for null (not parsed) */
    bool has[SP_AGENT_RESULT_FILE_KEYS];
    uint64_t other_keys;
} sp_agent_result_file;

extern const char *const SP_AGENT_RESULT_FILE_KEY_NAMES[SP_AGENT_RESULT_FILE_KEYS];

/* Describe the file at `path` (opened without following a final symlink). */
void sp_agent_result_file_read(const char *path, const char *step_id, sp_agent_result_file *out);

/* Describe bytes already read (file must be "present"-able: the caller did
 * the open and size checks). */
void sp_agent_result_file_describe(const char *data, size_t len, const char *step_id,
                                   sp_agent_result_file *out);

/* The diagnostic of a file that is not there, and of one the runner cannot
 * reach (a remote run directory). */
void sp_agent_result_file_describe_absent(sp_agent_result_file *out);
void sp_agent_result_file_describe_unreachable(sp_agent_result_file *out);

/* The diagnostic as JSON (canonical domain). NULL when out of memory. */
json_t *sp_agent_result_file_json(const sp_agent_result_file *d);

#endif
