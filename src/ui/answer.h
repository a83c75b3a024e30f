/*
 * answer.h - API answers as JSON values, and JSON replies (answer.c).
 *
 * What it must never do: lose an error's code.
 */
#ifndef SPORE_UI_ANSWER_H
#define SPORE_UI_ANSWER_H

#include <jansson.h>

#include "ui/internal.h"

/* The JSON of an API call that returned `rc` with `text` (freed), or NULL
 * with err holding e's code and message (e is cleared). */
json_t *ui_api_answer(int rc, char *text, spore_error *e, sp_error *err);

/* `obj` (taken) with "format": "spore.cli/0.1" as the reply. */
void ui_json_reply(json_t *obj, unsigned status, ui_reply *out);

#endif
