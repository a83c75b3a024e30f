/*
 * html.c - escaping, the page frame, times and bounded blocks (html.h).
 *
 * Must never append caller text without escaping it.
 */
#include "ui/html.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void ui_raw(sp_buf *b, const char *literal) { sp_buf_append_str(b, literal); }

void ui_esc_n(sp_buf *b, const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        switch (text[i]) {
        case '&': sp_buf_append_str(b, "&amp;"); break;
        case '<': sp_buf_append_str(b, "&lt;"); break;
        case '>': sp_buf_append_str(b, "&gt;"); break;
        case '"': sp_buf_append_str(b, "&quot;"); break;
        case '\'': sp_buf_append_str(b, "&#39;"); break;
        case '\0': sp_buf_append_str(b, "\xef\xbf\xbd"); break;
        default: sp_buf_append_char(b, text[i]);
        }
    }
}

void ui_esc(sp_buf *b, const char *text)
{
    if (text)
        ui_esc_n(b, text, strlen(text));
}

void ui_url_enc(sp_buf *b, const char *text)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)(text ? text : ""); *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-_.~", *p))
            sp_buf_append_char(b, (char)*p);
        else
            sp_buf_printf(b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
    }
}

void ui_page_begin(sp_buf *b, const char *title, const char *db_label)
{
    ui_raw(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
              "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
              "<title>");
    ui_esc(b, title);
    ui_raw(b, " \xc2\xb7 spore</title><link rel=\"stylesheet\" href=\"/assets/ui.css\">"
              "<script src=\"/assets/ui.js\" defer></script></head>\n<body>"
              "<header class=\"top\"><a class=\"brand\" href=\"/runs\">spore</a>"
              "<span class=\"db\">");
    ui_esc(b, db_label);
    ui_raw(b, "</span></header>\n<div class=\"page\">\n");
}

void ui_page_end(sp_buf *b) { ui_raw(b, "</div>\n</body></html>\n"); }

void ui_time_text(uint64_t ms, char *out, size_t n)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    if (ms == 0 || !gmtime_r(&secs, &tm) || !strftime(out, n, "%Y-%m-%d %H:%M:%SZ", &tm))
        snprintf(out, n, "-");
}

uint64_t ui_decimal(const json_t *o, const char *name)
{
    const char *s = json_string_value(json_object_get(o, name));
    return s ? strtoull(s, NULL, 10) : 0;
}

static void note_cut(sp_buf *b, size_t cut)
{
    sp_buf_printf(b, "<p class=\"note\">\xe2\x80\xa6 %zu more bytes not shown</p>", cut);
}

void ui_json_block(sp_buf *b, const json_t *v, size_t limit)
{
    char *text = v ? json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;
    size_t len = text ? strlen(text) : 0;
    ui_raw(b, "<pre class=\"json\">");
    ui_esc_n(b, text ? text : "null", text ? (len > limit ? limit : len) : 4);
    ui_raw(b, "</pre>");
    if (len > limit)
        note_cut(b, len - limit);
    free(text);
}

void ui_text_tail(sp_buf *b, const char *text, size_t limit)
{
    size_t len = text ? strlen(text) : 0;
    size_t from = len > limit ? len - limit : 0;
    while (from < len && ((unsigned char)text[from] & 0xC0) == 0x80)
        from++; /* start on a character */
    if (from)
        note_cut(b, from);
    ui_raw(b, "<pre class=\"log\">");
    ui_esc_n(b, text ? text + from : "", len - from);
    ui_raw(b, "</pre>");
}
