/*
 * answer.c - what the API answers, as pages see it (JSON values, errors
 * with their codes), and the coded error reply every page and action
 * shares: an HTML page for people, or the CLI's JSON error object
 * ({"format": "spore.cli/0.1", "error": {code, message}}) when the client
 * asked for JSON.
 *
 * Must never show anything of an error but its code and message (never
 * details that could hold a secret), or drop the code.
 */
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "ui/answer.h"
#include "ui/html.h"

json_t *ui_api_answer(int rc, char *text, spore_error *e, sp_error *err)
{
    json_t *v = NULL;
    if (rc == 0)
        v = sp_json_parse(text, strlen(text), err);
    else
        sp_fail(err, e->code[0] ? e->code : "runtime", "%s", e->message);
    spore_free(text);
    spore_error_clear(e);
    return v;
}

void ui_json_reply(json_t *obj, unsigned status, ui_reply *out)
{
    json_object_set_new(obj, "format", json_string("spore.cli/0.1"));
    char *text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(obj);
    out->status = status;
    out->content_type = "application/json";
    if (text)
        sp_buf_append_str(&out->body, text);
    else
        out->body.oom = true;
    sp_buf_append_char(&out->body, '\n');
    free(text);
}

void ui_error_reply(const ui_request *r, unsigned status, const sp_error *err, ui_reply *out)
{
    int exit_code = r->ctx->cfg.exit_for ? r->ctx->cfg.exit_for(err->code) : 2;
    if (r->wants_json) {
        ui_json_reply(json_pack("{s:{s:s,s:s},s:i}", "error", "code", err->code, "message",
                                err->message, "exitCode", exit_code),
                      status, out);
        return;
    }
    out->status = status;
    sp_buf *b = &out->body;
    ui_page_begin(b, err->code, r->ctx->cfg.db_label);
    sp_buf_printf(b, "<section class=\"answer refused\"><h1>Refused: <code class=\"code\">");
    ui_esc(b, err->code);
    sp_buf_printf(b, "</code></h1><p class=\"message\">");
    ui_esc(b, err->message);
    sp_buf_printf(b, "</p><p class=\"hint\">HTTP %u; the command line would exit %d. "
                     "Nothing was changed.</p><p><a href=\"/runs\">all runs</a>",
                  status, exit_code);
    if (r->run_id[0]) {
        ui_raw(b, " \xc2\xb7 <a href=\"/runs/");
        ui_url_enc(b, r->run_id);
        ui_raw(b, "\">back to the run</a>");
    }
    ui_raw(b, "</p></section>\n");
    ui_page_end(b);
}
