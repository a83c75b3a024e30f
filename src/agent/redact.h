/*
 * redact.h - removing secrets from text that came out of a sandbox
 * (agent-step.md §6).
 *
 * What it is for: the agent runner knows every secret it handed to a step
 * (the action's secret files, MCP secret files, provider credentials). Before
 * any text from the sandbox is stored, logged or put into an error (stderr
 * tail, body.error, summary, event text, structured output), every
 * occurrence of every secret is replaced with ***REDACTED***, in the forms a
 * step is likely to print it: raw, with surrounding whitespace trimmed,
 * JSON-escaped (minimal, with "\/", and ASCII-only \uXXXX as Python's
 * json.dumps writes it) and base64 (standard, unpadded, URL-safe, and the
 * alignment-independent cores that occur inside a longer base64 blob).
 *
 * How: every occurrence of every form is marked in a byte mask first and
 * each run of marked bytes becomes one marker, so overlapping secrets (one
 * containing or overlapping another) never leave a piece behind; this is
 * what "longest first" protects against, made order-independent.
 *
 * A second layer of pattern rules for well-known token shapes (private key
 * blocks, `Authorization:` values and `Bearer` tokens, common provider key
 * prefixes such as sk-, ghp_, github_pat_, xox?-, AKIA, AIza, glpat-, hf_)
 * applies where asked (stderr and event text).
 *
 * What it must never do: keep a secret anywhere but in the redactor itself,
 * print or log one, or return text in which a registered form survives.
 */
#ifndef SPORE_AGENT_REDACT_H
#define SPORE_AGENT_REDACT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define SP_REDACTED "***REDACTED***"
#define SP_REDACT_SECRET_MAX (60u * 1024) /* a longer secret cannot be redacted in a 64 KiB window */
#define SP_REDACT_SECRETS_MAX 128

enum { SP_REDACT_EXACT = 0, SP_REDACT_PATTERNS = 1 };

typedef struct sp_redactor sp_redactor;

sp_redactor *sp_redactor_new(void);
void sp_redactor_free(sp_redactor *r);

/* Register a secret value (its forms are derived here). An empty value is
 * ignored. agent.secret-too-large past SP_REDACT_SECRET_MAX bytes,
 * agent.too-many-secrets past SP_REDACT_SECRETS_MAX. */
int sp_redactor_add(sp_redactor *r, const char *secret, size_t len, sp_error *err);

/* Number of secrets registered, and the longest raw one in bytes. */
size_t sp_redactor_count(const sp_redactor *r);
size_t sp_redactor_longest(const sp_redactor *r);
/* The longest registered form in bytes (0 without secrets): a window cut
 * out of a longer text can hold the end of a secret in at most this many
 * bytes minus one at its start, where no form matches it whole. */
size_t sp_redactor_longest_form(const sp_redactor *r);

/* Read a secret's value from the file at `path` (a regular file of at most
 * SP_REDACT_SECRET_MAX bytes) into buf (SP_REDACT_SECRET_MAX + 1 bytes;
 * the caller wipes it). 0 with *len, or -1 with secret.unavailable ("cannot
 * be read from <path>: <why>") or secret.too-large; the message never holds
 * the value. */
int sp_secret_file_read(const char *path, char *buf, size_t *len, sp_error *err);

/* A redacted copy of text[0..len) (NUL-terminated, *out_len bytes); `r` may
 * be NULL (patterns only). `flags` SP_REDACT_PATTERNS adds the pattern
 * rules. NULL when out of memory. */
char *sp_redact(const sp_redactor *r, const char *text, size_t len, int flags, size_t *out_len);

/* True when text[0..len) contains a registered form (for checks). */
bool sp_redact_contains(const sp_redactor *r, const char *text, size_t len);

/* A copy of `v` with every string value and object key redacted (exact
 * forms). NULL when out of memory, or when two keys became equal
 * (*collision set). */
json_t *sp_redact_json(const sp_redactor *r, const json_t *v, bool *collision);

#endif
