/*
 * fuzz_canonical.c - libFuzzer target for the canonical JSON parser.
 *
 * Properties checked on every input (a violation aborts, which libFuzzer
 * reports): parsing never crashes; whatever parses re-encodes; the encoding
 * parses canonically to the same bytes (idempotence); parse_canonical accepts
 * exactly the inputs equal to their own encoding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

static void require(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_canonical: property violated: %s\n", what);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    sp_error err = {0};
    json_t *v = sp_json_parse((const char *)data, size, &err);
    if (!v) {
        require(strncmp(err.code, "canonical.", 10) == 0 ||
                    strcmp(err.code, "runtime.out-of-memory") == 0,
                "a parse error carries a canonical.* code");
        json_t *c = sp_json_parse_canonical((const char *)data, size, NULL);
        require(c == NULL, "parse_canonical rejects what parse rejects");
        sp_error_clear(&err);
        return 0;
    }
    size_t len;
    char *enc = sp_json_encode_alloc(v, &len, &err);
    require(enc != NULL, "a parsed value encodes");
    json_t *again = sp_json_parse_canonical(enc, len, &err);
    require(again != NULL, "an encoding parses canonically");
    size_t len2;
    char *enc2 = sp_json_encode_alloc(again, &len2, NULL);
    require(enc2 && len2 == len && memcmp(enc, enc2, len) == 0, "encoding is idempotent");
    json_t *direct = sp_json_parse_canonical((const char *)data, size, NULL);
    int same = size == len && memcmp(data, enc, len) == 0;
    require((direct != NULL) == same, "parse_canonical accepts exactly canonical bytes");
    json_decref(direct);
    free(enc2);
    json_decref(again);
    free(enc);
    json_decref(v);
    sp_error_clear(&err);
    return 0;
}
