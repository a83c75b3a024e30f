/*
 * reader.h - the step protocol reader (agent-step.md §3): a step CLI's
 * stdout, one line at a time, incrementally, with every bound and
 * strictness rule.
 *
 * What it is for: bytes go in as they arrive (any chunking); the reader
 * assembles one line at a time, ignores up to 64 KiB of non-protocol lines
 * before the `start` record (the preamble), then requires every line to be a
 * valid record: `start` once and first, `event`s with seq 1, 2, 3… and
 * closed per-kind data, at most one `result`, last. Every record has exactly
 * the envelope `v` (= 1), `type`, `stepId` (= the request's) plus its own
 * members. Lines are parsed by jsontape.c (RFC 8259, depth 64, no duplicate
 * names, UTF-8, no BOM, no CR outside strings, integers 0..2^53-1 where an
 * integer is required). Bounds (LF not counted): start/event line 256 KiB,
 * result line 4 MiB, all stdout 64 MiB.
 *
 * At the first violation the reader stops (feed returns false; the caller
 * kills the step) and remembers the rule and the line number: never the
 * content. Events are handed to a callback as they are read; they never
 * decide anything.
 *
 * What it must never do: hold more than one line (at most 4 MiB + the tape)
 * plus bounded state, read past a violation, or copy text from the stream
 * into a violation.
 */
#ifndef SPORE_AGENT_READER_H
#define SPORE_AGENT_READER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/jsontape.h"

#define SP_AGENT_LINE_MAX (256u * 1024)             /* start and event lines */
#define SP_AGENT_RESULT_LINE_MAX (4u * 1024 * 1024) /* the result line */
#define SP_AGENT_STDOUT_MAX (64u * 1024 * 1024)     /* all of stdout */
#define SP_AGENT_PREAMBLE_MAX (64u * 1024)          /* non-protocol lines before start */
#define SP_AGENT_BODY_CONVERT_MAX (1024u * 1024)    /* larger bodies are not converted */
#define SP_AGENT_STEP_ID_MAX 40

/* The rules a stream can break (besides jsontape's json.* rules). */
#define SP_RULE_LINE_TOO_LONG "stream.line-too-long"
#define SP_RULE_RESULT_TOO_LONG "stream.result-too-long"
#define SP_RULE_STDOUT_TOO_LARGE "stream.stdout-too-large"
#define SP_RULE_PREAMBLE_TOO_LONG "stream.preamble-too-long"
#define SP_RULE_BLANK_LINE "stream.blank-line"
#define SP_RULE_AFTER_RESULT "stream.after-result"
#define SP_RULE_FINAL_LF "stream.final-lf"
#define SP_RULE_NO_START "stream.no-start"
#define SP_RULE_NO_RESULT "stream.no-result"
#define SP_RULE_NOT_OBJECT "record.not-object"
#define SP_RULE_VERSION "record.version"
#define SP_RULE_TYPE "record.type"
#define SP_RULE_STEP_ID "record.step-id"
#define SP_RULE_MISSING "record.missing-member"
#define SP_RULE_UNKNOWN "record.unknown-member"
#define SP_RULE_ORDER "record.order"
#define SP_RULE_SEQ "event.seq"
#define SP_RULE_TS "event.ts"
#define SP_RULE_KIND "event.kind"
#define SP_RULE_DATA "event.data"
#define SP_RULE_STATUS "result.status"
#define SP_RULE_BODY "result.body"

typedef enum sp_reader_state {
    SP_READER_PREAMBLE,
    SP_READER_STARTED,
    SP_READER_DONE, /* the result was read */
    SP_READER_VIOLATED,
} sp_reader_state;

/* Called for every valid event record: the tape holds the line, `record` is
 * the record object's node, `data` its data object's node. The tape and the
 * line are valid only during the call. */
typedef void (*sp_reader_event_fn)(void *ctx, const sp_jt *tape, size_t record, size_t data,
                                   uint64_t seq, const char *line, size_t len);

typedef struct sp_agent_result {
    int status;        /* 200 or 502 */
    bool success;      /* 200 only */
    char *summary;     /* 200: decoded; owned */
    char *error;       /* 200: body.error or NULL; 502: the error; owned */
    json_t *body;      /* 200: the body (NULL when body_too_large); owned */
    bool body_too_large;
    size_t line;       /* the result's line number */
} sp_agent_result;

typedef struct sp_agent_reader {
    char step_id[SP_AGENT_STEP_ID_MAX + 1];
    sp_reader_state state;
    char *line; /* the line being assembled (when split across chunks) */
    size_t line_len, line_cap;
    uint64_t total;    /* bytes fed */
    uint64_t consumed; /* bytes of lines read without a violation (LF included):
                          independent of how the stream was chunked */
    uint64_t lines;    /* complete lines read */
    uint64_t lines_bytes; /* their bytes, LF included */
    size_t preamble;   /* bytes of ignored preamble lines */
    uint64_t next_seq; /* the seq the next event must carry */
    uint64_t events;
    bool saw_start;
    const char *rule;  /* the first violation, NULL if none */
    uint64_t rule_line;
    sp_agent_result result; /* valid when state == SP_READER_DONE */
    sp_jt tape;
    sp_reader_event_fn on_event;
    void *ctx;
} sp_agent_reader;

/* Prepare a reader for `step_id` (which must match ^[a-z0-9-]{1,40}$).
 * Returns 0, or -1 for an invalid step ID. */
int sp_agent_reader_init(sp_agent_reader *r, const char *step_id, sp_reader_event_fn on_event,
                         void *ctx);
void sp_agent_reader_free(sp_agent_reader *r);

/* Feed stdout bytes. Returns false once a violation happened (now or
 * earlier): stop reading and kill the step. */
bool sp_agent_reader_feed(sp_agent_reader *r, const char *data, size_t len);

/* What a normal end of stream (EOF) would break, without changing the
 * state: stream.final-lf, stream.no-start or stream.no-result; NULL when
 * the stream is complete (or already violated: see r->rule). */
const char *sp_agent_reader_eof_rule(const sp_agent_reader *r, uint64_t *line);

/* True when `id` matches ^[a-z0-9-]{1,40}$. */
bool sp_agent_step_id_valid(const char *id);

#endif
