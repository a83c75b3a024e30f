/*
 * json_locate.h - where a member stands in JSON text: the line and column
 * of its key and of its value, for build errors that point into
 * settings.json (authoring.md §1) and into schema files.
 *
 * What it is for: jansson's values carry no positions; this scanner walks
 * the text the strict parser already accepted and finds the place of one
 * path (object keys, array indexes as decimal text).
 *
 * What it must never do: read past the text, recurse deeper than
 * SP_JSON_LOCATE_DEPTH, or judge the JSON (the parser did; on text it
 * cannot walk it answers "not found").
 */
#ifndef SPORE_AUTHORING_JSON_LOCATE_H
#define SPORE_AUTHORING_JSON_LOCATE_H

#include <stdbool.h>
#include <stddef.h>

#include "authoring/located.h"

#define SP_JSON_LOCATE_DEPTH 64

typedef struct sp_json_place {
    sp_text_pos key;   /* the member's key (an array element: its value) */
    sp_text_pos value; /* the member's value */
} sp_json_place;

/* The place of `path` (npath segments; 0 = the document itself) in `text`.
 * False when the path is not there: *out is then the document's start. */
bool sp_json_locate(const char *text, size_t len, const char *const *path, size_t npath,
                    sp_json_place *out);

/* The place of byte `offset` named in a parse error message ("... (byte N)",
 * "... at byte N"), or {0, 0} when the message names none. */
sp_text_pos sp_json_error_pos(const char *text, size_t len, const char *message);

#endif
