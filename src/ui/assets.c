/*
 * assets.c - the compiled-in static files of the web view (ui.css, ui.js):
 * arrays that src/ui/embed.cmake writes from src/ui/assets/ at build time,
 * served under /assets/<name> with their content type.
 *
 * Must never serve a file from the disk, or a name not in this table.
 */
#include <string.h>

#include "ui/internal.h"

extern const unsigned char ui_asset_ui_css[], ui_asset_ui_js[];
extern const unsigned long ui_asset_ui_css_len, ui_asset_ui_js_len;

typedef struct asset {
    const char *name, *type;
    const unsigned char *bytes;
    const unsigned long *len;
} asset;

static const asset ASSETS[] = {
    {"ui.css", "text/css; charset=utf-8", ui_asset_ui_css, &ui_asset_ui_css_len},
    {"ui.js", "text/javascript; charset=utf-8", ui_asset_ui_js, &ui_asset_ui_js_len},
};

bool ui_asset(const char *name, ui_reply *out)
{
    for (size_t i = 0; i < sizeof ASSETS / sizeof ASSETS[0]; i++)
        if (strcmp(name, ASSETS[i].name) == 0) {
            out->status = 200;
            out->content_type = ASSETS[i].type;
            out->static_body = ASSETS[i].bytes;
            out->static_len = *ASSETS[i].len;
            return true;
        }
    return false;
}
