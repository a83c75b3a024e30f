/*
 * form.h - an action's form body (form.c): read through libmicrohttpd's
 * post processor into the request's ui_form, bounded.
 *
 * What it must never do: let an action see a form that passed a bound.
 */
#ifndef SPORE_UI_FORM_H
#define SPORE_UI_FORM_H

#include "ui/internal.h"

struct MHD_PostProcessor;

typedef struct ui_body {
    struct MHD_PostProcessor *pp;
    size_t len;  /* bytes received */
    bool over;   /* past UI_BODY_MAX, or the post processor refused */
} ui_body;

/* Before the body: the announced size and the encoding. 0, or 413
 * ui.body-too-large / 415 ui.unsupported-body. */
unsigned ui_body_start(ui_body *b, ui_request *r, sp_error *err);

/* A piece of the body (consumed: *size becomes 0). */
void ui_body_take(ui_body *b, const char *data, size_t *size);

/* After the body: 0, or 413 ui.body-too-large / ui.field-too-large, 400
 * ui.form-invalid. */
unsigned ui_body_bounds(const ui_body *b, const ui_form *f, sp_error *err);

/* Free the post processor and the fields. */
void ui_body_end(ui_body *b, ui_form *f);

#endif
