/*
 * html.h - writing HTML safely: every text and attribute value goes through
 * ui_esc (& < > " ' escaped), the page frame (head with the compiled-in
 * assets, the header, the foot), times, and JSON shown as escaped, bounded
 * text.
 *
 * What it must never do: append a caller's text unescaped (ui_raw is for
 * the module's own literals and for Graphviz's SVG only), or load anything
 * from another origin.
 */
#ifndef SPORE_UI_HTML_H
#define SPORE_UI_HTML_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

void ui_raw(sp_buf *b, const char *literal);
void ui_esc(sp_buf *b, const char *text);
void ui_esc_n(sp_buf *b, const char *text, size_t len);
/* Percent-encode for a query value or a path segment. */
void ui_url_enc(sp_buf *b, const char *text);

/* <!doctype html> ... <body>, with the title and the top bar. */
void ui_page_begin(sp_buf *b, const char *title, const char *db_label);
void ui_page_end(sp_buf *b);

/* "2026-01-02 03:04:05Z" from milliseconds since the epoch (UTC). */
void ui_time_text(uint64_t ms, char *out, size_t n);
/* A decimal string member of `o` (counters are strings in the API's JSON). */
uint64_t ui_decimal(const json_t *o, const char *name);

/* A JSON value pretty-printed, escaped, inside <pre>, cut at `limit` bytes
 * with a note saying how much was left out. */
void ui_json_block(sp_buf *b, const json_t *v, size_t limit);
/* Text escaped inside <pre>: its last `limit` bytes, with a note. */
void ui_text_tail(sp_buf *b, const char *text, size_t limit);

#endif
