/*
 * provider.c - spore-step's providers behind one interface (step.h):
 * `fake` plays scenario files, `openai` (Chat Completions) and `anthropic`
 * (Messages) run the tool loop over their wire. Also what the wires share:
 * a parsed turn's release, the provider's error code in an error reply.
 *
 * Must never copy a provider's error message (it may quote the prompt):
 * only its code or type, bounded to plain characters.
 */
#include <stdlib.h>
#include <string.h>

#include "step/step.h"

static int run_fake(const step_provider *self, const step_request *r, const step_config *c,
                    const char *scenario, step_out *out)
{
    (void)self;
    (void)c;
    return step_fake_run(r, scenario, out);
}

static int run_wire(const step_provider *self, const step_request *r, const step_config *c,
                    const char *scenario, step_out *out)
{
    (void)scenario;
    return step_agent_run(r, c, self->wire, out);
}

static const step_provider PROVIDERS[] = {
    {"fake", NULL, run_fake},
    {"openai", &step_wire_openai, run_wire},
    {"anthropic", &step_wire_anthropic, run_wire},
};

const step_provider *step_provider_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof PROVIDERS / sizeof PROVIDERS[0]; i++)
        if (strcmp(PROVIDERS[i].name, name) == 0)
            return &PROVIDERS[i];
    return NULL;
}

void step_turn_free(step_turn *t)
{
    free(t->text);
    for (size_t i = 0; i < t->ncalls; i++)
        json_decref(t->calls[i].input);
    memset(t, 0, sizeof *t);
}

/* Letters, digits and ._:- only, at most 64 bytes: a code, never a sentence. */
static void plain_code(const json_t *v, char *out, size_t len)
{
    const char *s = json_string_value(v);
    size_t n = 0;
    for (; s && s[n] && n < 64 && n + 1 < len; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-' || c == ':'))
            break;
        out[n] = c;
    }
    out[n] = '\0';
}

void step_provider_error_code(const json_t *reply, char *out, size_t len)
{
    const json_t *e = json_object_get(reply, "error");
    out[0] = '\0';
    if (len == 0 || !json_is_object(e))
        return;
    plain_code(json_object_get(e, "code"), out, len);
    if (!out[0])
        plain_code(json_object_get(e, "type"), out, len);
}
