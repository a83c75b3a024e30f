/*
 * form.c - the form of an action: its body through libmicrohttpd's post
 * processor (application/x-www-form-urlencoded or multipart), with its
 * bounds: the Content-Length announced, the bytes that really come, the
 * number of fields, their names and sizes (limits.h). Past a bound the
 * rest is read and dropped, and the action is answered with the code.
 *
 * Must never keep more than UI_FIELD_MAX bytes of a field or UI_FIELDS_MAX
 * fields, or let an action run on a form that passed a bound.
 */
#include "ui/form.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ui_field *field_for(ui_form *f, const char *key)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->fields[i].name, key) == 0)
            return &f->fields[i];
    if (f->n == UI_FIELDS_MAX) {
        f->too_many = true;
        return NULL;
    }
    if (strlen(key) >= sizeof f->fields[0].name) {
        f->bad_name = true;
        return NULL;
    }
    ui_field *fl = &f->fields[f->n++];
    snprintf(fl->name, sizeof fl->name, "%s", key);
    fl->value.limit = UI_FIELD_MAX;
    sp_buf_append(&fl->value, "", 0);
    return fl;
}

static enum MHD_Result on_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *filename, const char *content_type,
                                const char *transfer_encoding, const char *data, uint64_t off,
                                size_t size)
{
    ui_form *f = cls;
    ui_field *fl = field_for(f, key);
    if (!fl)
        return MHD_YES;
    sp_buf_append(&fl->value, data, size);
    if (fl->value.over_limit)
        f->too_large = true;
    return MHD_YES;
}

unsigned ui_body_start(ui_body *b, ui_request *r, sp_error *err)
{
    const char *length = ui_header(r, "Content-Length");
    if (length && strtoull(length, NULL, 10) > UI_BODY_MAX)
        return sp_fail(err, "ui.body-too-large", "a form is at most %d bytes", UI_BODY_MAX), 413;
    b->pp = MHD_create_post_processor(r->conn, UI_POST_BUFFER, on_field, &r->form);
    if (!b->pp)
        return sp_fail(err, "ui.unsupported-body",
                       "an action takes an application/x-www-form-urlencoded form"), 415;
    return 0;
}

void ui_body_take(ui_body *b, const char *data, size_t *size)
{
    b->len += *size;
    if (b->len > UI_BODY_MAX)
        b->over = true;
    if (!b->over && MHD_post_process(b->pp, data, *size) != MHD_YES)
        b->over = true;
    *size = 0;
}

unsigned ui_body_bounds(const ui_body *b, const ui_form *f, sp_error *err)
{
    if (b->over)
        return sp_fail(err, "ui.body-too-large", "a form is at most %d bytes", UI_BODY_MAX), 413;
    if (f->too_large)
        return sp_fail(err, "ui.field-too-large", "a form field is at most %d bytes",
                       UI_FIELD_MAX), 413;
    if (f->too_many || f->bad_name)
        return sp_fail(err, "ui.form-invalid", "at most %d fields with names under 32 bytes",
                       UI_FIELDS_MAX), 400;
    return 0;
}

void ui_body_end(ui_body *b, ui_form *f)
{
    if (b->pp)
        MHD_destroy_post_processor(b->pp);
    b->pp = NULL;
    for (int i = 0; i < f->n; i++)
        sp_buf_free(&f->fields[i].value);
}
