/*
 * located.h - places in a text file (line and column) and errors that name
 * them: "<file>:<line>:<column>: <message>", with details {file, line,
 * column}, so that a person finds the problem in an editor and a script
 * reads it from JSON (authoring.md §1: every build error names its file,
 * line and column).
 *
 * What it is for: the one way the DOT reader, the folder builder and the
 * settings locator report a problem in a file.
 *
 * What it must never do: count a column in bytes (a column is one UTF-8
 * character, tabs included, as editors count them), or read past the text.
 */
#ifndef SPORE_AUTHORING_LOCATED_H
#define SPORE_AUTHORING_LOCATED_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* A place in a text: both 1-based; {0, 0} = no place (the whole file). */
typedef struct sp_text_pos {
    uint32_t line, column;
} sp_text_pos;

/* The place of byte `offset` of `text` (offset may equal len: the end). */
sp_text_pos sp_text_pos_of(const char *text, size_t len, size_t offset);

/* Move `pos` over one byte `c` of UTF-8 text: a newline starts a line, a
 * continuation byte stays in its character's column. */
void sp_text_pos_advance(sp_text_pos *pos, unsigned char c);

/* Fail with `code` at `pos` of `file`: the message is prefixed with
 * "<file>:<line>:<column>: " (or "<file>: " without a place), the details
 * are {file, line, column} (line and column omitted without a place).
 * Returns -1. */
int sp_fail_at(sp_error *err, const char *code, const char *file, sp_text_pos pos,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
