/*
 * dot_lex.c - the tokens of spore's DOT dialect (see dot_lex.h). Never
 * reads past the input and never keeps an ID longer than SP_DOT_ID_MAX.
 */
#include "authoring/dot_lex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/utf8.h"

static int invalid(dot_lexer *L, sp_text_pos pos, sp_error *err, const char *what)
{
    return sp_fail_at(err, "dot.invalid", L->file, pos, "%s", what);
}

int dot_lex_begin(dot_lexer *L, const char *s, size_t len, const char *file, sp_error *err)
{
    *L = (dot_lexer){.s = s, .len = len, .pos = {1, 1}, .file = file};
    for (size_t i = 0; i < len;) {
        size_t n = s[i] ? sp_utf8_char_len(s + i, len - i) : 0;
        if (n == 0)
            return invalid(L, sp_text_pos_of(s, len, i), err,
                           s[i] ? "the file is not UTF-8 here" : "a NUL byte");
        i += n;
    }
    return 0;
}

static int peek(const dot_lexer *L, size_t ahead)
{
    return L->at + ahead < L->len ? (unsigned char)L->s[L->at + ahead] : -1;
}

static void advance(dot_lexer *L, size_t n)
{
    for (size_t i = 0; i < n && L->at < L->len; i++)
        sp_text_pos_advance(&L->pos, (unsigned char)L->s[L->at++]);
}

static void skip_line(dot_lexer *L)
{
    while (L->at < L->len && L->s[L->at] != '\n')
        advance(L, 1);
}

/* Whitespace and the three comment forms; an unterminated block comment is
 * refused where it starts. */
static int skip_blank(dot_lexer *L, sp_error *err)
{
    for (;;) {
        int c = peek(L, 0);
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            advance(L, 1);
        } else if (c == '#' || (c == '/' && peek(L, 1) == '/')) {
            skip_line(L);
        } else if (c == '/' && peek(L, 1) == '*') {
            sp_text_pos start = L->pos;
            advance(L, 2);
            while (L->at < L->len && !(peek(L, 0) == '*' && peek(L, 1) == '/'))
                advance(L, 1);
            if (L->at >= L->len)
                return invalid(L, start, err, "a /* comment is never closed");
            advance(L, 2);
        } else {
            return 0;
        }
    }
}

static bool id_start(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c >= 0x80;
}
static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool id_char(int c) { return id_start(c) || is_digit(c); }

static int take_text(dot_lexer *L, dot_token *t, sp_buf *b, sp_error *err)
{
    if (b->over_limit) {
        sp_buf_free(b);
        return sp_fail_at(err, "dot.too-large", L->file, t->pos,
                          "an ID or string is longer than %d bytes", SP_DOT_ID_MAX);
    }
    if (b->oom) {
        sp_buf_free(b);
        return sp_oom(err);
    }
    if (!b->data)
        sp_buf_append(b, "", 0);
    t->text = sp_buf_take(b, &t->len);
    return t->text ? 0 : sp_oom(err);
}

static dot_token_kind keyword(const char *s, size_t n)
{
    static const struct {
        const char *word;
        dot_token_kind kind;
    } words[] = {{"digraph", DOT_KW_DIGRAPH}, {"graph", DOT_KW_GRAPH},
                 {"node", DOT_KW_NODE},       {"edge", DOT_KW_EDGE},
                 {"subgraph", DOT_KW_SUBGRAPH}, {"strict", DOT_KW_STRICT}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strlen(words[i].word) == n && strncasecmp(words[i].word, s, n) == 0)
            return words[i].kind;
    return DOT_ID;
}

static int lex_id(dot_lexer *L, dot_token *t, sp_error *err)
{
    sp_buf b = {.limit = SP_DOT_ID_MAX};
    while (id_char(peek(L, 0))) {
        sp_buf_append_char(&b, L->s[L->at]);
        advance(L, 1);
    }
    if (take_text(L, t, &b, err))
        return -1;
    t->kind = keyword(t->text, t->len);
    return 0;
}

static int lex_numeral(dot_lexer *L, dot_token *t, sp_error *err)
{
    sp_buf b = {.limit = SP_DOT_ID_MAX};
    size_t digits = 0;
    bool dot = false;
    if (peek(L, 0) == '-') {
        sp_buf_append_char(&b, '-');
        advance(L, 1);
    }
    for (int c; (c = peek(L, 0)) >= 0 && (is_digit(c) || (c == '.' && !dot));) {
        dot = dot || c == '.';
        digits += is_digit(c);
        sp_buf_append_char(&b, (char)c);
        advance(L, 1);
    }
    t->kind = DOT_NUMERAL;
    if (digits == 0 || id_start(peek(L, 0)) || peek(L, 0) == '.') {
        sp_buf_free(&b);
        return invalid(L, t->pos, err,
                       "a malformed number (an ID that starts with a digit must be quoted)");
    }
    return take_text(L, t, &b, err);
}

/* "..." : \" is a quote, backslash-newline is nothing, any other backslash
 * stays as it is (Graphviz's rules). */
static int lex_quoted(dot_lexer *L, dot_token *t, sp_error *err)
{
    sp_buf b = {.limit = SP_DOT_ID_MAX};
    advance(L, 1);
    for (;;) {
        int c = peek(L, 0);
        if (c < 0) {
            sp_buf_free(&b);
            return invalid(L, t->pos, err, "a quoted string is never closed");
        }
        if (c == '"') {
            advance(L, 1);
            break;
        }
        if (c == '\\' && (peek(L, 1) == '"' || peek(L, 1) == '\n')) {
            if (peek(L, 1) == '"')
                sp_buf_append_char(&b, '"');
            advance(L, 2);
            continue;
        }
        if (c == '\\' && peek(L, 1) == '\r' && peek(L, 2) == '\n') {
            advance(L, 3);
            continue;
        }
        sp_buf_append_char(&b, (char)c);
        advance(L, 1);
    }
    t->kind = DOT_QUOTED;
    return take_text(L, t, &b, err);
}

/* A character no DOT token of the dialect starts with. */
static int refuse_char(dot_lexer *L, dot_token *t, sp_error *err)
{
    int c = peek(L, 0);
    if (c == '-' && peek(L, 1) == '-')
        return invalid(L, t->pos, err, "undirected edges (--) are not supported: use ->");
    if (c == ':')
        return invalid(L, t->pos, err, "ports (node:port) are not supported");
    if (c == '<')
        return invalid(L, t->pos, err,
                       "HTML strings (<...>) are not supported: use a quoted string");
    if (c == '+')
        return invalid(L, t->pos, err, "string concatenation (+) is not supported");
    char what[64];
    if (c >= 0x20 && c < 0x7f)
        snprintf(what, sizeof what, "unexpected character '%c'", c);
    else
        snprintf(what, sizeof what, "unexpected character (byte 0x%02x)", (unsigned)c);
    return invalid(L, t->pos, err, what);
}

int dot_lex_next(dot_lexer *L, dot_token *t, sp_error *err)
{
    *t = (dot_token){0};
    if (skip_blank(L, err))
        return -1;
    t->pos = L->pos;
    int c = peek(L, 0);
    static const struct {
        char c;
        dot_token_kind kind;
    } singles[] = {{'{', DOT_LBRACE}, {'}', DOT_RBRACE}, {'[', DOT_LBRACKET}, {']', DOT_RBRACKET},
                   {'=', DOT_EQUALS}, {';', DOT_SEMI},   {',', DOT_COMMA}};
    if (c < 0) {
        t->kind = DOT_EOF;
        return 0;
    }
    for (size_t i = 0; i < sizeof singles / sizeof singles[0]; i++)
        if (c == singles[i].c) {
            t->kind = singles[i].kind;
            advance(L, 1);
            return 0;
        }
    if (c == '-' && peek(L, 1) == '>') {
        t->kind = DOT_ARROW;
        advance(L, 2);
        return 0;
    }
    if (id_start(c))
        return lex_id(L, t, err);
    if (is_digit(c) || c == '.' || (c == '-' && (is_digit(peek(L, 1)) || peek(L, 1) == '.')))
        return lex_numeral(L, t, err);
    if (c == '"')
        return lex_quoted(L, t, err);
    return refuse_char(L, t, err);
}

void dot_token_clear(dot_token *t)
{
    free(t->text);
    *t = (dot_token){0};
}

bool dot_token_is_id(const dot_token *t)
{
    return t->kind == DOT_ID || t->kind == DOT_NUMERAL || t->kind == DOT_QUOTED;
}

void dot_token_describe(const dot_token *t, char *out, size_t n)
{
    static const char *const names[] = {
        [DOT_EOF] = "the end of the file", [DOT_LBRACE] = "'{'", [DOT_RBRACE] = "'}'",
        [DOT_LBRACKET] = "'['",           [DOT_RBRACKET] = "']'", [DOT_EQUALS] = "'='",
        [DOT_SEMI] = "';'",               [DOT_COMMA] = "','",  [DOT_ARROW] = "'->'",
    };
    if (t->text)
        snprintf(out, n, "\"%.60s\"", t->text);
    else if (t->kind < sizeof names / sizeof names[0] && names[t->kind])
        snprintf(out, n, "%s", names[t->kind]);
    else
        snprintf(out, n, "a keyword");
}
