/*
 * fuzz_runner_response.c - libFuzzer target for what comes back from a
 * runner (runners.md §3-4): the first byte picks the parser, the rest is
 * the bytes: 0 a spore_start response, 1 a spore_probe response, 2 the
 * jail's description of a module (checked against the world). Every input
 * must map to an activity output or a refusal, never crash or leak.
 */
#include <stddef.h>
#include <stdint.h>

#include "json/json.h"
#include "runners/component.h"
#include "wasm/world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *bytes = (const char *)data + 1;
    size_t len = size - 1;
    static json_t *action;
    if (!action)
        action = json_pack("{s:s,s:s,s:[s,s]}", "kind", "component", "module", "r.wasm",
                           "outcomes", "ok", "done");
    if (data[0] % 3 == 2) {
        sp_world_module m;
        if (sp_world_module_parse(bytes, len, &m) == 0) {
            sp_error err = {0};
            sp_world_check(&m, "a", &err);
            sp_error_clear(&err);
            sp_world_module_free(&m);
        }
        return 0;
    }
    json_t *doc = sp_json_parse(bytes, len, NULL);
    if (!doc)
        return 0;
    sp_activity_output out;
    bool finished = false;
    if (data[0] % 3 == 0)
        sp_component_start_response("a", action, doc, &out);
    else
        sp_component_probe_response("a", action, doc, &out, &finished);
    sp_activity_output_free(&out);
    json_decref(doc);
    return 0;
}
