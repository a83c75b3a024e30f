/*
 * json_locate.c - the places of members in JSON text (see
 * json_locate.h). Never reads past the text, never recurses without bound.
 */
#include "authoring/json_locate.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct walk {
    const char *s;
    size_t len, at;
    const char *const *path;
    size_t npath;
    bool found;
    size_t key_at, value_at;
} walk;

static void skip_ws(walk *w)
{
    while (w->at < w->len && strchr(" \t\r\n", w->s[w->at]) && w->s[w->at])
        w->at++;
}

/* Past a string token starting at the quote; false when it never ends. */
static bool skip_string(walk *w)
{
    for (w->at++; w->at < w->len; w->at++) {
        if (w->s[w->at] == '\\')
            w->at++;
        else if (w->s[w->at] == '"') {
            w->at++;
            return true;
        }
    }
    return false;
}

/* Whether the string token s[from, to) decodes to `want`. */
static bool string_is(const char *s, size_t from, size_t to, const char *want)
{
    size_t n = to - from - 2, wlen = strlen(want);
    if (!memchr(s + from, '\\', to - from))
        return n == wlen && memcmp(s + from + 1, want, n) == 0;
    json_t *v = json_loadb(s + from, to - from, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    bool same = json_is_string(v) && json_string_length(v) == wlen &&
                memcmp(json_string_value(v), want, wlen) == 0;
    json_decref(v);
    return same;
}

static bool value(walk *w, size_t depth, size_t matched);

/* After a member: a ',' (skipped) or the container's end (left for the
 * caller); anything else ends the walk. */
static bool separator(walk *w, char end)
{
    skip_ws(w);
    if (w->at < w->len && w->s[w->at] == ',') {
        w->at++;
        return true;
    }
    return w->at < w->len && w->s[w->at] == end;
}

/* A container's member or element whose name matches the next segment
 * descends with one more segment matched. */
static bool member(walk *w, size_t depth, size_t matched, bool match, size_t key_at)
{
    skip_ws(w);
    size_t value_at = w->at;
    bool deeper = match && matched < w->npath;
    if (deeper && matched + 1 == w->npath) {
        w->found = true;
        w->key_at = key_at;
        w->value_at = value_at;
        return true;
    }
    return value(w, depth + 1, deeper ? matched + 1 : w->npath + 1);
}

static bool object(walk *w, size_t depth, size_t matched)
{
    w->at++;
    for (;;) {
        skip_ws(w);
        if (w->at >= w->len)
            return false;
        if (w->s[w->at] == '}') {
            w->at++;
            return true;
        }
        size_t key_at = w->at;
        if (w->s[w->at] != '"' || !skip_string(w))
            return false;
        bool match = matched < w->npath && string_is(w->s, key_at, w->at, w->path[matched]);
        skip_ws(w);
        if (w->at >= w->len || w->s[w->at] != ':')
            return false;
        w->at++;
        if (!member(w, depth, matched, match, key_at) || w->found)
            return w->found;
        if (!separator(w, '}'))
            return false;
    }
}

static bool array(walk *w, size_t depth, size_t matched)
{
    w->at++;
    for (size_t index = 0;; index++) {
        skip_ws(w);
        if (w->at >= w->len)
            return false;
        if (w->s[w->at] == ']') {
            w->at++;
            return true;
        }
        char text[24];
        snprintf(text, sizeof text, "%zu", index);
        bool match = matched < w->npath && strcmp(w->path[matched], text) == 0;
        if (!member(w, depth, matched, match, w->at) || w->found)
            return w->found;
        if (!separator(w, ']'))
            return false;
    }
}

static bool value(walk *w, size_t depth, size_t matched)
{
    skip_ws(w);
    if (w->at >= w->len || depth > SP_JSON_LOCATE_DEPTH)
        return false;
    char c = w->s[w->at];
    if (c == '{')
        return object(w, depth, matched);
    if (c == '[')
        return array(w, depth, matched);
    if (c == '"')
        return skip_string(w);
    while (w->at < w->len && !strchr(",}] \t\r\n", w->s[w->at]))
        w->at++;
    return true;
}

bool sp_json_locate(const char *text, size_t len, const char *const *path, size_t npath,
                    sp_json_place *out)
{
    walk w = {.s = text, .len = len, .path = path, .npath = npath};
    skip_ws(&w);
    size_t start = w.at;
    if (npath > 0)
        value(&w, 0, 0);
    size_t key_at = w.found ? w.key_at : start, value_at = w.found ? w.value_at : start;
    out->key = sp_text_pos_of(text, len, key_at);
    out->value = sp_text_pos_of(text, len, value_at);
    return npath == 0 || w.found;
}

sp_text_pos sp_json_error_pos(const char *text, size_t len, const char *message)
{
    /* "... at byte N": the problem starts there (the strict parser's own
     * findings); "... (byte N)": jansson stopped after the token it names */
    const char *at = message ? strstr(message, "byte ") : NULL;
    for (const char *more = at; more; more = strstr(more + 1, "byte "))
        at = more; /* the last one names the place */
    unsigned long long offset;
    if (!at || sscanf(at, "byte %llu", &offset) != 1 || offset > len)
        return (sp_text_pos){0, 0};
    if (at > message && at[-1] == '(' && offset > 0)
        offset--;
    return sp_text_pos_of(text, len, (size_t)offset);
}
