/*
 * dot_lex.h - the tokens of spore's strict DOT dialect (authoring.md §1,
 * docs/authoring.md "The DOT dialect").
 *
 * What it is for: turning workflow.dot's bytes into tokens with their line
 * and column, skipping whitespace and comments (//, / * * /, #), and
 * refusing at the character what the dialect never accepts: `--`, ports
 * (`:`), HTML strings (`<...>`), string concatenation (`+`), bytes that are
 * not UTF-8.
 *
 * What it must never do: read past the input, keep a string or ID longer
 * than SP_DOT_ID_MAX bytes, or accept a byte the dialect does not define
 * (every refusal is dot.invalid with a place; a bound passed is
 * dot.too-large).
 */
#ifndef SPORE_AUTHORING_DOT_LEX_H
#define SPORE_AUTHORING_DOT_LEX_H

#include <stdbool.h>
#include <stddef.h>

#include "authoring/located.h"
#include "base/error.h"

#define SP_DOT_ID_MAX 4096 /* bytes of one ID or quoted string, after unescaping */

typedef enum dot_token_kind {
    DOT_EOF,
    DOT_ID,      /* [A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]* that is no keyword */
    DOT_NUMERAL, /* -?(.[0-9]+|[0-9]+(.[0-9]*)?) */
    DOT_QUOTED,  /* "..." with \" unescaped and \<newline> removed */
    DOT_LBRACE,
    DOT_RBRACE,
    DOT_LBRACKET,
    DOT_RBRACKET,
    DOT_EQUALS,
    DOT_SEMI,
    DOT_COMMA,
    DOT_ARROW,
    DOT_KW_DIGRAPH, /* keywords, in any case, as Graphviz reads them */
    DOT_KW_GRAPH,
    DOT_KW_NODE,
    DOT_KW_EDGE,
    DOT_KW_SUBGRAPH,
    DOT_KW_STRICT,
} dot_token_kind;

typedef struct dot_token {
    dot_token_kind kind;
    sp_text_pos pos;
    char *text; /* ID, numeral, quoted: the value (malloc'd, NUL-terminated); else NULL */
    size_t len;
} dot_token;

typedef struct dot_lexer {
    const char *s;
    size_t len, at;
    sp_text_pos pos;
    const char *file; /* for messages */
} dot_lexer;

/* Start reading `s` (checked to be UTF-8 without NUL bytes first). */
int dot_lex_begin(dot_lexer *L, const char *s, size_t len, const char *file, sp_error *err);

/* The next token (t->text owned by the caller: dot_token_clear). */
int dot_lex_next(dot_lexer *L, dot_token *t, sp_error *err);

void dot_token_clear(dot_token *t);

/* Whether a token can stand where the grammar wants an ID. */
bool dot_token_is_id(const dot_token *t);

/* A token as people read it in a message ("`->`", "\"abc\"", "end of file"). */
void dot_token_describe(const dot_token *t, char *out, size_t n);

#endif
