/*
 * located.c - places in text files and the errors that name them (see
 * located.h). Never counts a column in bytes.
 */
#include "authoring/located.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>

void sp_text_pos_advance(sp_text_pos *pos, unsigned char c)
{
    if (c == '\n') {
        pos->line++;
        pos->column = 1;
    } else if ((c & 0xC0) != 0x80) {
        pos->column++;
    }
}

sp_text_pos sp_text_pos_of(const char *text, size_t len, size_t offset)
{
    sp_text_pos pos = {1, 1};
    for (size_t i = 0; i < offset && i < len; i++)
        sp_text_pos_advance(&pos, (unsigned char)text[i]);
    return pos;
}

int sp_fail_at(sp_error *err, const char *code, const char *file, sp_text_pos pos,
               const char *fmt, ...)
{
    char what[SP_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    json_t *details = json_pack("{s:s}", "file", file);
    if (details && pos.line) {
        json_object_set_new(details, "line", json_integer(pos.line));
        json_object_set_new(details, "column", json_integer(pos.column));
    }
    if (pos.line)
        return sp_fail_details(err, code, details, "%s:%u:%u: %s", file, pos.line, pos.column,
                               what);
    return sp_fail_details(err, code, details, "%s: %s", file, what);
}
