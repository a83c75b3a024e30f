/*
 * test_json.c - unit tests of canonical JSON `jcs-int53/1` (kernel.md §7.2,
 * conformance/VECTORS.md §1) and of decimal-string counters.
 *
 * Every rule of the profile and every numbered vector (1-11) of VECTORS.md §1
 * has a test here; the vector tests are named vectorN_*. The JSONTestSuite
 * files are run by tests/conformance/json_suite.c.
 *
 * Must never pass without exercising the parser or encoder: every helper
 * counts a check and reports the caller's line on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json/decimal.h"
#include "json/json.h"

/* ---- helpers: `lit` is a string literal (may hold NUL bytes) ---- */

/* A printable rendering of bytes for failure messages. */
static const char *show(const char *s, size_t n)
{
    static char out[4][200];
    static int slot;
    char *o = out[slot++ & 3];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < sizeof out[0]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            o[k++] = (char)c;
        } else if (c == '\\') {
            o[k++] = '\\';
            o[k++] = '\\';
        } else
            k += (size_t)snprintf(o + k, sizeof out[0] - k, "\\x%02x", c);
    }
    if (k + 8 >= sizeof out[0])
        k += (size_t)snprintf(o + k, sizeof out[0] - k, "...");
    o[k] = '\0';
    return o;
}

/* parse(in) succeeds and encodes to exactly `want`. */
static void expect_canon_at(int line, const char *in, size_t len, const char *want, size_t wlen)
{
    sp_error err = {0};
    check_count++;
    json_t *v = sp_json_parse(in, len, &err);
    if (!v) {
        check_fail(__FILE__, line, "parse(%s) failed: %s (%s)", show(in, len), err.code,
                   err.message);
        sp_error_clear(&err);
        return;
    }
    size_t elen = 0;
    char *enc = sp_json_encode_alloc(v, &elen, &err);
    if (!enc || elen != wlen || memcmp(enc, want, wlen) != 0)
        check_fail(__FILE__, line, "encode(parse(%s)) = %s, want %s", show(in, len),
                   enc ? show(enc, elen) : err.code, show(want, wlen));
    free(enc);
    json_decref(v);
    sp_error_clear(&err);
}
#define EXPECT_CANON(lit, want) \
    expect_canon_at(__LINE__, lit, sizeof(lit) - 1, want, sizeof(want) - 1)

/* parse(in) fails with `code`; when `needle` is set the message contains it. */
static void expect_error_at(int line, const char *in, size_t len, const char *code,
                            const char *needle)
{
    sp_error err = {0};
    check_count++;
    json_t *v = sp_json_parse(in, len, &err);
    if (v)
        check_fail(__FILE__, line, "parse(%s) succeeded, want %s", show(in, len), code);
    else if (strcmp(err.code, code) != 0)
        check_fail(__FILE__, line, "parse(%s): got %s (%s), want %s", show(in, len), err.code,
                   err.message, code);
    else if (needle && !strstr(err.message, needle))
        check_fail(__FILE__, line, "parse(%s): message \"%s\" does not name %s", show(in, len),
                   err.message, needle);
    json_decref(v);
    sp_error_clear(&err);
}
#define EXPECT_ERROR(lit, code) expect_error_at(__LINE__, lit, sizeof(lit) - 1, code, NULL)

/* parse_canonical(in) accepts (want == NULL) or fails with `want`. */
static void expect_strict_at(int line, const char *in, size_t len, const char *want)
{
    sp_error err = {0};
    check_count++;
    json_t *v = sp_json_parse_canonical(in, len, &err);
    if (!want && !v)
        check_fail(__FILE__, line, "parse_canonical(%s) failed: %s (%s)", show(in, len),
                   err.code, err.message);
    else if (want && v)
        check_fail(__FILE__, line, "parse_canonical(%s) accepted, want %s", show(in, len), want);
    else if (want && strcmp(err.code, want) != 0)
        check_fail(__FILE__, line, "parse_canonical(%s): got %s, want %s", show(in, len),
                   err.code, want);
    json_decref(v);
    sp_error_clear(&err);
}
#define EXPECT_CANONICAL(lit) expect_strict_at(__LINE__, lit, sizeof(lit) - 1, NULL)
#define EXPECT_NOT_CANONICAL(lit) \
    expect_strict_at(__LINE__, lit, sizeof(lit) - 1, "canonical.not-canonical")
#define EXPECT_STRICT_ERROR(lit, code) expect_strict_at(__LINE__, lit, sizeof(lit) - 1, code)

/* encode(v) (v is consumed) gives `want` bytes, or fails with `code`. */
static void expect_encode_at(int line, json_t *v, const char *want, size_t wlen,
                             const char *code)
{
    sp_error err = {0};
    check_count++;
    if (!v) {
        check_fail(__FILE__, line, "could not build the value");
        return;
    }
    size_t elen = 0;
    char *enc = sp_json_encode_alloc(v, &elen, &err);
    if (code && enc)
        check_fail(__FILE__, line, "encode gave %s, want %s", show(enc, elen), code);
    else if (code && strcmp(err.code, code) != 0)
        check_fail(__FILE__, line, "encode failed with %s, want %s", err.code, code);
    else if (!code && (!enc || elen != wlen || memcmp(enc, want, wlen) != 0))
        check_fail(__FILE__, line, "encode gave %s, want %s",
                   enc ? show(enc, elen) : err.code, show(want, wlen));
    free(enc);
    json_decref(v);
    sp_error_clear(&err);
}
#define EXPECT_ENCODE(v, want) expect_encode_at(__LINE__, v, want, sizeof(want) - 1, NULL)
#define EXPECT_ENCODE_ERROR(v, code) expect_encode_at(__LINE__, v, NULL, 0, code)

static json_t *parse_lit(const char *s, size_t n)
{
    return sp_json_parse(s, n, NULL);
}
#define PARSE(lit) parse_lit(lit, sizeof(lit) - 1)

/* `n` nested containers: "[[...]]" or {"a":{"a":...{}}}, optionally with
 * `inner` in the middle. Caller frees. */
static char *nested(int n, bool objects, const char *inner)
{
    size_t ilen = strlen(inner);
    char *s = malloc((size_t)n * 6 + ilen + 1);
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        if (objects) {
            memcpy(s + k, "{\"a\":", 5);
            k += 5;
        } else {
            s[k++] = '[';
        }
    }
    if (objects && n > 0 && ilen == 0) { /* innermost: {} instead of a missing value */
        k -= 5;
        memcpy(s + k, "{}", 2);
        k += 2;
        n--;
    }
    memcpy(s + k, inner, ilen);
    k += ilen;
    for (int i = 0; i < n; i++)
        s[k++] = objects ? '}' : ']';
    s[k] = '\0';
    return s;
}

static void expect_depth_result(int line, const char *doc, const char *code)
{
    expect_error_at(line, doc, strlen(doc), code, NULL);
}

static void expect_parses(int line, const char *doc, size_t len)
{
    sp_error err = {0};
    check_count++;
    json_t *v = sp_json_parse(doc, len, &err);
    if (!v)
        check_fail(__FILE__, line, "parse(%s) failed: %s (%s)", show(doc, len), err.code,
                   err.message);
    json_decref(v);
    sp_error_clear(&err);
}

/* ================= the numbered vectors of VECTORS.md §1 ================= */

static void vector1_whitespace_and_key_order(void)
{
    EXPECT_CANON(" { \"b\" : 1, \"a\" : [ true , null ] } ", "{\"a\":[true,null],\"b\":1}");
    /* every JSON whitespace character is accepted on parse and dropped */
    EXPECT_CANON("\t\r\n [\t1\r,\n2 ]\n", "[1,2]");
    /* array order is preserved */
    EXPECT_CANON("[3,1,2]", "[3,1,2]");
}

static void vector2_utf16_key_order(void)
{
    /* escape form in, raw UTF-8 out: U+1F600 (D83D DE00) before U+FB33 */
    EXPECT_CANON("{\"\\ufb33\":1,\"\\ud83d\\ude00\":2}",
                 "{\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":1}");
    /* raw form in, either order */
    EXPECT_CANON("{\"\xef\xac\xb3\":1,\"\xf0\x9f\x98\x80\":2}",
                 "{\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":1}");
    EXPECT_CANON("{\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":1}",
                 "{\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":1}");
}

static void vector3_rfc8785_key_order(void)
{
    EXPECT_CANON("{\"\\u20ac\":\"Euro Sign\",\"\\r\":\"Carriage Return\","
                 "\"\\ufb33\":\"Hebrew Letter Dalet With Dagesh\",\"1\":\"One\","
                 "\"\\ud83d\\ude00\":\"Emoji: Grinning Face\",\"\\u0080\":\"Control\","
                 "\"\\u00f6\":\"Latin Small Letter O With Diaeresis\"}",
                 "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\","
                 "\"\xc3\xb6\":\"Latin Small Letter O With Diaeresis\","
                 "\"\xe2\x82\xac\":\"Euro Sign\","
                 "\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
                 "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

static void vector4_minimal_escapes(void)
{
    static const unsigned char want[] = {0x22, 0x61, 0x5c, 0x22, 0x62, 0x5c, 0x5c, 0x63,
                                         0x5c, 0x62, 0x5c, 0x74, 0x5c, 0x6e, 0x5c, 0x66,
                                         0x5c, 0x72, 0x5c, 0x75, 0x30, 0x30, 0x31, 0x66,
                                         0x7f, 0xc3, 0xa9, 0xe2, 0x80, 0xa8, 0x22};
    static const char value[] = "a\"b\\c\b\t\n\f\r\x1f\x7f\xc3\xa9\xe2\x80\xa8";
    /* a typed string value */
    expect_encode_at(__LINE__, json_stringn(value, sizeof value - 1), (const char *)want,
                     sizeof want, NULL);
    /* the same string parsed from escapes (upper-case hex in, lower-case out) */
    static const char escaped[] = "\"a\\\"b\\\\c\\b\\t\\n\\f\\r\\u001F\\u007F\\u00E9\\u2028\"";
    expect_canon_at(__LINE__, escaped, sizeof escaped - 1, (const char *)want, sizeof want);
    /* and parse_canonical accepts exactly those bytes */
    expect_strict_at(__LINE__, (const char *)want, sizeof want, NULL);
}

static void vector5_duplicate_keys(void)
{
    expect_error_at(__LINE__, "{\"a\":1,\"a\":2}", 13, "canonical.duplicate-key", "\"a\"");
    expect_error_at(__LINE__, "[{\"x\":{\"k\":1,\"k\":1}}]", 21, "canonical.duplicate-key",
                    "\"k\"");
    /* keys are compared after decoding escapes */
    EXPECT_ERROR("{\"a\":1,\"\\u0061\":2}", "canonical.duplicate-key");
    EXPECT_ERROR("{\"\xc3\xa9\":1,\"\\u00e9\":2}", "canonical.duplicate-key");
    /* at the deepest allowed level, and with equal values */
    char *deep = nested(31, false, "{\"d\":null,\"d\":null}");
    expect_error_at(__LINE__, deep, strlen(deep), "canonical.duplicate-key", "\"d\"");
    free(deep);
}

static void vector6_numbers(void)
{
    EXPECT_ERROR("1.5", "canonical.non-integer");
    EXPECT_ERROR("1e-3", "canonical.non-integer");
    EXPECT_ERROR("9007199254740992", "canonical.integer-out-of-range");
    EXPECT_ERROR("-9007199254740992", "canonical.integer-out-of-range");
    EXPECT_ERROR("18446744073709551616", "canonical.integer-out-of-range");
    EXPECT_CANON("9007199254740991", "9007199254740991");
    EXPECT_CANON("-9007199254740991", "-9007199254740991");
    json_t *v = PARSE("[9007199254740991,-9007199254740991]");
    CHECK(v && json_is_integer(json_array_get(v, 0)));
    CHECK(v && json_integer_value(json_array_get(v, 0)) == SP_JSON_MAX_SAFE);
    CHECK(v && json_integer_value(json_array_get(v, 1)) == -SP_JSON_MAX_SAFE);
    json_decref(v);
}

static void vector7_negative_zero(void)
{
    EXPECT_CANON("-0", "0");
    EXPECT_CANON("[-0]", "[0]");
    json_t *v = PARSE("-0");
    CHECK(v && json_is_integer(v) && json_integer_value(v) == 0);
    json_decref(v);
}

static void vector8_syntax_errors(void)
{
    EXPECT_ERROR("1 2", "canonical.syntax");
    EXPECT_ERROR("{", "canonical.syntax");
    EXPECT_ERROR("\"\\ud800\"", "canonical.syntax");
}

static void vector9_depth(void)
{
    char *ok = nested(32, false, ""), *deep = nested(33, false, "");
    expect_parses(__LINE__, ok, strlen(ok));
    expect_depth_result(__LINE__, deep, "canonical.too-deep");
    json_t *v = sp_json_parse(ok, strlen(ok), NULL);
    CHECK_INT(sp_json_depth(v), 32);
    json_decref(v);
    free(ok);
    free(deep);
}

static void vector10_exact_bytes(void)
{
    EXPECT_CANONICAL("{\"a\":1,\"b\":2}");
    EXPECT_NOT_CANONICAL("{\"b\":2,\"a\":1}");
    EXPECT_NOT_CANONICAL("{\"a\": 1}");
}

static void vector11_encode_typed_values(void)
{
    EXPECT_ENCODE_ERROR(json_real(1.5), "canonical.non-integer");
    /* u64::MAX does not fit json_int_t; the largest values that do are beyond
     * the range just the same */
    EXPECT_ENCODE_ERROR(json_integer(INT64_MAX), "canonical.integer-out-of-range");
    EXPECT_ENCODE_ERROR(json_integer(INT64_MIN), "canonical.integer-out-of-range");
}

/* ============================ numbers ============================ */

static void numbers_range_bounds(void)
{
    EXPECT_ENCODE(json_integer(SP_JSON_MAX_SAFE), "9007199254740991");
    EXPECT_ENCODE(json_integer(-SP_JSON_MAX_SAFE), "-9007199254740991");
    EXPECT_ENCODE_ERROR(json_integer(SP_JSON_MAX_SAFE + 1), "canonical.integer-out-of-range");
    EXPECT_ENCODE_ERROR(json_integer(-SP_JSON_MAX_SAFE - 1), "canonical.integer-out-of-range");
    EXPECT_ERROR("9223372036854775807", "canonical.integer-out-of-range");  /* 2^63-1 */
    EXPECT_ERROR("9223372036854775808", "canonical.integer-out-of-range");  /* 2^63 */
    EXPECT_ERROR("-9223372036854775809", "canonical.integer-out-of-range"); /* -2^63-1 */
    EXPECT_ERROR("-18446744073709551616", "canonical.integer-out-of-range");
    EXPECT_ERROR("10000000000000000", "canonical.integer-out-of-range"); /* 17 digits */
    EXPECT_ERROR("[1,99999999999999999999999999999999999999999]",
                 "canonical.integer-out-of-range");
    EXPECT_CANON("[0,1,-1,1000000000000000]", "[0,1,-1,1000000000000000]");
}

static void numbers_zero_tokens_normalize(void)
{
    EXPECT_CANON("0.0", "0");
    EXPECT_CANON("-0.0", "0");
    EXPECT_CANON("0e5", "0");
    EXPECT_CANON("-0E-7", "0");
    EXPECT_CANON("0.000e+99999", "0");
    EXPECT_CANON("[0.0,-0.0,{\"z\":-0.00}]", "[0,0,{\"z\":0}]");
    EXPECT_CANON("[[[0e1]]]", "[[[0]]]");
    json_t *v = PARSE("{\"a\":[0.0]}");
    json_t *z = v ? json_array_get(json_object_get(v, "a"), 0) : NULL;
    CHECK(z && json_is_integer(z) && json_integer_value(z) == 0);
    json_decref(v);
    v = PARSE("-0.0");
    CHECK(v && json_is_integer(v));
    json_decref(v);
}

static void numbers_float_forms_non_integer(void)
{
    EXPECT_ERROR("1.0", "canonical.non-integer");
    EXPECT_ERROR("1e3", "canonical.non-integer");
    EXPECT_ERROR("1E3", "canonical.non-integer");
    EXPECT_ERROR("1e+0", "canonical.non-integer");
    EXPECT_ERROR("-1.0", "canonical.non-integer");
    EXPECT_ERROR("100e-2", "canonical.non-integer"); /* integral value 1, float form */
    EXPECT_ERROR("0.5e1", "canonical.non-integer");  /* 5 */
    EXPECT_ERROR("1e-400", "canonical.non-integer"); /* underflows a double */
    EXPECT_ERROR("-1e-400", "canonical.non-integer");
    EXPECT_ERROR("9007199254740991.0", "canonical.non-integer"); /* in range: non-integer */
    EXPECT_ERROR("90071992547409910e-1", "canonical.non-integer");
    EXPECT_ERROR("[0.1]", "canonical.non-integer");
}

static void numbers_float_forms_out_of_range(void)
{
    /* an integral float-form token above the bound is out of range */
    EXPECT_ERROR("1e400", "canonical.integer-out-of-range"); /* overflows a double */
    EXPECT_ERROR("-1e400", "canonical.integer-out-of-range");
    EXPECT_ERROR("1.5e300", "canonical.integer-out-of-range");
    EXPECT_ERROR("1e16", "canonical.integer-out-of-range");
    EXPECT_ERROR("9007199254740992.0", "canonical.integer-out-of-range");
    EXPECT_ERROR("90071992547409920e-1", "canonical.integer-out-of-range");
    EXPECT_ERROR("-9.007199254740992e15", "canonical.integer-out-of-range");
    EXPECT_ERROR("1e99999999999999999999", "canonical.integer-out-of-range");
    /* ... but a fraction that remains makes it non-integer whatever the size */
    EXPECT_ERROR("1e-99999999999999999999", "canonical.non-integer");
    EXPECT_ERROR("9007199254740992.5", "canonical.non-integer");
}

static void numbers_malformed_are_syntax(void)
{
    EXPECT_ERROR("[1.]", "canonical.syntax");
    EXPECT_ERROR("[-]", "canonical.syntax");
    EXPECT_ERROR("[01]", "canonical.syntax");
    EXPECT_ERROR("[-01]", "canonical.syntax");
    EXPECT_ERROR("[1e]", "canonical.syntax");
    EXPECT_ERROR("[1e+]", "canonical.syntax");
    EXPECT_ERROR("[1.e3]", "canonical.syntax");
    EXPECT_ERROR("[.5]", "canonical.syntax");
    EXPECT_ERROR("[+1]", "canonical.syntax");
    EXPECT_ERROR("[0x10]", "canonical.syntax");
    EXPECT_ERROR("[Infinity]", "canonical.syntax");
    EXPECT_ERROR("[-Infinity]", "canonical.syntax");
    EXPECT_ERROR("[NaN]", "canonical.syntax");
    EXPECT_ERROR("1.", "canonical.syntax");
    EXPECT_ERROR("-", "canonical.syntax");
}

/* ============================ strings ============================ */

static void strings_nul_escape_accepted(void)
{
    EXPECT_CANON("\"\\u0000\"", "\"\\u0000\"");
    EXPECT_CANON("[\"a\\u0000b\"]", "[\"a\\u0000b\"]");
    json_t *v = PARSE("\"a\\u0000b\"");
    CHECK(v && json_string_length(v) == 3 && memcmp(json_string_value(v), "a\0b", 3) == 0);
    json_decref(v);
    EXPECT_CANONICAL("\"\\u0000\"");
    EXPECT_ENCODE(json_stringn("\0", 1), "\"\\u0000\"");
}

static void strings_raw_nul_is_syntax(void)
{
    EXPECT_ERROR("\"a\0b\"", "canonical.syntax");
    EXPECT_ERROR("[1,\0]", "canonical.syntax");
    EXPECT_ERROR("1\0", "canonical.syntax");   /* jansson alone would stop at the NUL */
    EXPECT_ERROR("{}\0x", "canonical.syntax");
    EXPECT_ERROR("\0", "canonical.syntax");
    EXPECT_ERROR("{\"a\0\":1}", "canonical.syntax");
}

static void strings_keys_with_nul(void)
{
    EXPECT_CANON("{\"a\\u0000b\":1}", "{\"a\\u0000b\":1}");
    EXPECT_CANONICAL("{\"a\\u0000b\":1}");
    json_t *v = PARSE("{\"a\\u0000b\":1}");
    void *it = v ? json_object_iter(v) : NULL;
    const char *key = it ? json_object_iter_key(it) : NULL;
    size_t klen = it ? json_object_iter_key_len(it) : 0;
    CHECK(key && klen == 3 && memcmp(key, "a\0b", 3) == 0);
    json_t *one = v ? json_object_getn(v, "a\0b", 3) : NULL;
    CHECK(one && json_integer_value(one) == 1);
    json_decref(v);
    /* "a" and "a\0" are different keys; "a" sorts first (prefix) */
    EXPECT_CANON("{\"a\\u0000\":1,\"a\":2}", "{\"a\":2,\"a\\u0000\":1}");
    EXPECT_CANON("{\"\\u0000\":1,\"\\u0000\\u0000\":2,\"\":3}",
                 "{\"\":3,\"\\u0000\":1,\"\\u0000\\u0000\":2}");
    /* nested, with zero normalization and escapes around the NUL */
    EXPECT_CANON("[{\"x\":{\"\\u0000\":[{\"\\\\u0000\\u0000\\n\":-0.0}]}}]",
                 "[{\"x\":{\"\\u0000\":[{\"\\\\u0000\\u0000\\n\":0}]}}]");
    /* a string value with \u0000 next to such a key keeps its NUL */
    EXPECT_CANON("{\"k\\u0000\":\"v\\u0000\"}", "{\"k\\u0000\":\"v\\u0000\"}");
    /* the document already uses the private-use characters the parser tries first */
    EXPECT_CANON("{\"\\ue000\":1,\"\xee\x80\x81\":2,\"\\u0000\":3}",
                 "{\"\\u0000\":3,\"\xee\x80\x80\":1,\"\xee\x80\x81\":2}");
    /* duplicates among keys with NUL are still duplicates, and only those */
    EXPECT_ERROR("{\"\\u0000\":1,\"\\u0000\":2}", "canonical.duplicate-key");
    EXPECT_ERROR("{\"a\\u0000\":1,\"a\\u0000\":2}", "canonical.duplicate-key");
    EXPECT_CANON("{\"a\\u0000\":1,\"a\\ue000\":2}", "{\"a\\u0000\":1,\"a\xee\x80\x80\":2}");
}

/* A document whose strings use every BMP character but U+0000 (and, when
 * `spare` is non-zero, all but that one), with a key containing U+0000. */
static char *every_bmp_character(unsigned spare, size_t *len)
{
    size_t cap = 0x10000 * 6 + 64, k = 0;
    char *s = malloc(cap);
    k += (size_t)snprintf(s + k, cap - k, "[\"");
    for (unsigned cp = 1; cp <= 0xFFFF; cp++) {
        if ((cp >= 0xD800 && cp <= 0xDFFF) || cp == spare)
            continue;
        if (cp < 0x20 || cp == '"' || cp == '\\')
            k += (size_t)snprintf(s + k, cap - k, "\\u%04x", cp);
        else if (cp < 0x80)
            s[k++] = (char)cp;
        else if (cp < 0x800) {
            s[k++] = (char)(0xC0 | cp >> 6);
            s[k++] = (char)(0x80 | (cp & 0x3F));
        } else {
            s[k++] = (char)(0xE0 | cp >> 12);
            s[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            s[k++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    k += (size_t)snprintf(s + k, cap - k, "\",{\"x\\u0000\":1}]");
    *len = k;
    return s;
}

static void strings_keys_with_nul_limit(void)
{
    /* the one documented limit: no character left for the marker */
    size_t len;
    char *all = every_bmp_character(0, &len);
    expect_error_at(__LINE__, all, len, "canonical.syntax", "U+0000");
    free(all);
    /* one character spare (a non-private-use one) is enough */
    char *spare = every_bmp_character(0x4E00, &len);
    json_t *v = sp_json_parse(spare, len, NULL);
    json_t *obj = v ? json_array_get(v, 1) : NULL;
    CHECK(obj && json_object_size(obj) == 1 && json_object_getn(obj, "x\0", 2));
    json_decref(v);
    free(spare);
}

static void strings_control_characters(void)
{
    static const char *want[32] = {
        "\"\\u0000\"", "\"\\u0001\"", "\"\\u0002\"", "\"\\u0003\"", "\"\\u0004\"",
        "\"\\u0005\"", "\"\\u0006\"", "\"\\u0007\"", "\"\\b\"",     "\"\\t\"",
        "\"\\n\"",     "\"\\u000b\"", "\"\\f\"",     "\"\\r\"",     "\"\\u000e\"",
        "\"\\u000f\"", "\"\\u0010\"", "\"\\u0011\"", "\"\\u0012\"", "\"\\u0013\"",
        "\"\\u0014\"", "\"\\u0015\"", "\"\\u0016\"", "\"\\u0017\"", "\"\\u0018\"",
        "\"\\u0019\"", "\"\\u001a\"", "\"\\u001b\"", "\"\\u001c\"", "\"\\u001d\"",
        "\"\\u001e\"", "\"\\u001f\""};
    for (int c = 0; c < 32; c++) {
        char b = (char)c;
        expect_encode_at(__LINE__, json_stringn(&b, 1), want[c], strlen(want[c]), NULL);
        /* and the canonical form is accepted back */
        expect_strict_at(__LINE__, want[c], strlen(want[c]), NULL);
    }
    /* raw control characters inside a string are invalid JSON */
    EXPECT_ERROR("\"\x01\"", "canonical.syntax");
    EXPECT_ERROR("\"\t\"", "canonical.syntax");
    EXPECT_ERROR("\"a\nb\"", "canonical.syntax");
    EXPECT_ERROR("\"\x1f\"", "canonical.syntax");
}

static void strings_raw_above_0x1f(void)
{
    /* DEL, U+2028, U+2029, non-ASCII: raw; "/" never escaped */
    EXPECT_CANON("\"\\u007f\\u2028\\u2029\\u00e9\"", "\"\x7f\xe2\x80\xa8\xe2\x80\xa9\xc3\xa9\"");
    EXPECT_CANON("\"\\/a/b\"", "\"/a/b\"");
    EXPECT_CANON("\"\\u0041\\u0061\"", "\"Aa\"");
    EXPECT_CANON("\"\\uFFFF\\uFDD0\"", "\"\xef\xbf\xbf\xef\xb7\x90\"");
    EXPECT_CANON("\"\\uD834\\uDD1E\"", "\"\xf0\x9d\x84\x9e\"");
    EXPECT_ENCODE(json_string("/\x7f\xe2\x80\xa9"), "\"/\x7f\xe2\x80\xa9\"");
    EXPECT_ENCODE(json_string("'<>&"), "\"'<>&\"");
}

static void strings_no_unicode_normalization(void)
{
    /* e + combining acute (NFD) and U+00E9 (NFC) stay different, also as keys */
    EXPECT_CANON("\"e\\u0301\"", "\"e\xcc\x81\"");
    EXPECT_CANON("{\"\\u00e9\":1,\"e\\u0301\":2}", "{\"e\xcc\x81\":2,\"\xc3\xa9\":1}");
    /* the Angstrom sign is not folded into U+00C5 */
    EXPECT_CANON("\"\\u212b\"", "\"\xe2\x84\xab\"");
}

static void strings_invalid_utf8_is_syntax(void)
{
    EXPECT_ERROR("\"\xff\"", "canonical.syntax");
    EXPECT_ERROR("\"\xc3\"", "canonical.syntax");              /* truncated sequence */
    EXPECT_ERROR("\"\xc0\xaf\"", "canonical.syntax");          /* overlong "/" */
    EXPECT_ERROR("\"\xe0\x80\xaf\"", "canonical.syntax");      /* overlong, 3 bytes */
    EXPECT_ERROR("\"\xed\xa0\x80\"", "canonical.syntax");      /* U+D800 in UTF-8 */
    EXPECT_ERROR("\"\xf4\x90\x80\x80\"", "canonical.syntax");  /* above U+10FFFF */
    EXPECT_ERROR("\"\x80\"", "canonical.syntax");              /* lone continuation */
    EXPECT_ERROR("\"\xe9t\xe9\"", "canonical.syntax");         /* ISO-8859-1 */
    EXPECT_ERROR("{\"\xff\":1}", "canonical.syntax");          /* in a key */
    EXPECT_ERROR("[\xc3\xa9]", "canonical.syntax");            /* outside a string */
    EXPECT_ERROR("\xef\xbb\xbf{}", "canonical.syntax");        /* a BOM */
}

static void strings_lone_surrogates_are_syntax(void)
{
    EXPECT_ERROR("\"\\ud800\"", "canonical.syntax");
    EXPECT_ERROR("\"\\udc00\"", "canonical.syntax");
    EXPECT_ERROR("\"\\uDBFF\"", "canonical.syntax");
    EXPECT_ERROR("\"\\ud800x\"", "canonical.syntax");
    EXPECT_ERROR("\"\\ud800\\u0041\"", "canonical.syntax");
    EXPECT_ERROR("\"\\ud800\\ud800\"", "canonical.syntax");
    EXPECT_ERROR("\"\\ude00\\ud83d\"", "canonical.syntax"); /* inverted pair */
    EXPECT_ERROR("{\"\\udfaa\":0}", "canonical.syntax");
    EXPECT_CANON("\"\\ud83d\\ude00\"", "\"\xf0\x9f\x98\x80\"");
}

static void strings_bad_escapes_are_syntax(void)
{
    EXPECT_ERROR("\"\\x41\"", "canonical.syntax");
    EXPECT_ERROR("\"\\u12\"", "canonical.syntax");
    EXPECT_ERROR("\"\\U0041\"", "canonical.syntax");
    EXPECT_ERROR("\"\\'\"", "canonical.syntax");
    EXPECT_ERROR("\"\\\"", "canonical.syntax");
    EXPECT_ERROR("'a'", "canonical.syntax");
}

/* ====================== structure and syntax ====================== */

static void syntax_trailing_data(void)
{
    EXPECT_ERROR("1 2", "canonical.syntax");
    EXPECT_ERROR("{}x", "canonical.syntax");
    EXPECT_ERROR("[]]", "canonical.syntax");
    EXPECT_ERROR("nullx", "canonical.syntax");
    EXPECT_ERROR("\"a\"\"b\"", "canonical.syntax");
    EXPECT_ERROR("{} {}", "canonical.syntax");
    EXPECT_ERROR("[1]//", "canonical.syntax");
    /* trailing and leading whitespace is only whitespace */
    EXPECT_CANON(" \n1\t\r\n ", "1");
}

static void syntax_truncated(void)
{
    EXPECT_ERROR("{", "canonical.syntax");
    EXPECT_ERROR("[", "canonical.syntax");
    EXPECT_ERROR("", "canonical.syntax");
    EXPECT_ERROR("  ", "canonical.syntax");
    EXPECT_ERROR("\"abc", "canonical.syntax");
    EXPECT_ERROR("{\"a\":", "canonical.syntax");
    EXPECT_ERROR("{\"a\"", "canonical.syntax");
    EXPECT_ERROR("[1,", "canonical.syntax");
    EXPECT_ERROR("tru", "canonical.syntax");
    EXPECT_ERROR("\"\\u00", "canonical.syntax");
    CHECK(sp_json_parse(NULL, 0, NULL) == NULL);
}

static void syntax_other(void)
{
    EXPECT_ERROR("[1,]", "canonical.syntax");
    EXPECT_ERROR("{\"a\":1,}", "canonical.syntax");
    EXPECT_ERROR("{a:1}", "canonical.syntax");
    EXPECT_ERROR("{1:1}", "canonical.syntax");
    EXPECT_ERROR("[1 2]", "canonical.syntax");
    EXPECT_ERROR("True", "canonical.syntax");
    EXPECT_ERROR("\f1", "canonical.syntax");           /* form feed is no JSON whitespace */
    EXPECT_ERROR("\xc2\xa0" "1", "canonical.syntax");  /* neither is NBSP */
    EXPECT_ERROR("[1]/* c */", "canonical.syntax");
    EXPECT_CANON("[null,true,false,\"\",[],{}]", "[null,true,false,\"\",[],{}]");
    EXPECT_CANON("null", "null");
    EXPECT_CANON("\"\"", "\"\"");
}

static void depth_arrays_objects_mixed(void)
{
    struct {
        int n;
        bool objects;
        const char *inner;
        const char *code; /* NULL: accepted */
    } cases[] = {
        {32, false, "", NULL},           {33, false, "", "canonical.too-deep"},
        {32, true, "", NULL},            {33, true, "", "canonical.too-deep"},
        {31, false, "[1,{\"b\":null}]", "canonical.too-deep"},
        {31, false, "[1,2]", NULL},      {31, true, "{\"b\":[]}", "canonical.too-deep"},
        {31, true, "[]", NULL},          {32, false, "\"[[[[\"", NULL},
        {32, true, "7", NULL},           {40, false, "", "canonical.too-deep"},
        {2000, false, "", "canonical.too-deep"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *doc = nested(cases[i].n, cases[i].objects, cases[i].inner);
        if (cases[i].code)
            expect_depth_result(__LINE__, doc, cases[i].code);
        else
            expect_parses(__LINE__, doc, strlen(doc));
        free(doc);
    }
    /* alternating arrays and objects: 16 pairs = 32 levels OK, one more not */
    char mixed[400];
    size_t k = 0;
    for (int i = 0; i < 16; i++)
        k += (size_t)snprintf(mixed + k, sizeof mixed - k, "[{\"k\":");
    k += (size_t)snprintf(mixed + k, sizeof mixed - k, "0");
    for (int i = 0; i < 16; i++)
        k += (size_t)snprintf(mixed + k, sizeof mixed - k, "}]");
    expect_parses(__LINE__, mixed, k);
    json_t *v = sp_json_parse(mixed, k, NULL);
    CHECK_INT(sp_json_depth(v), 32);
    json_decref(v);
    char *deeper = nested(1, false, mixed);
    expect_depth_result(__LINE__, deeper, "canonical.too-deep");
    free(deeper);
    /* the limit is about nesting, not about the number of containers */
    EXPECT_CANON("[[],[],[[]],{},{\"a\":[]}]", "[[],[],[[]],{},{\"a\":[]}]");
    /* a deep branch after a shallow one is still found */
    char *deep = nested(32, false, "");
    char doc[200];
    int dl = snprintf(doc, sizeof doc, "[[],%s]", deep); /* 33 levels in all */
    expect_error_at(__LINE__, doc, (size_t)dl, "canonical.too-deep", NULL);
    free(deep);
}

static void depth_encoder(void)
{
    json_t *inner = json_array();
    json_t *v = inner;
    for (int i = 1; i < 32; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, v);
        v = outer;
    }
    CHECK_INT(sp_json_depth(v), 32);
    char *want = nested(32, false, "");
    expect_encode_at(__LINE__, json_incref(v), want, strlen(want), NULL);
    free(want);
    json_t *obj = json_object();
    json_object_set(obj, "a", v);
    CHECK_INT(sp_json_depth(obj), 33);
    EXPECT_ENCODE_ERROR(obj, "canonical.too-deep");
    json_decref(v);
}

/* ================ precedence: earliest in the document ================ */

static void precedence_earliest_problem_wins(void)
{
    EXPECT_ERROR("[1.5,{\"a\":1,\"a\":2}]", "canonical.non-integer");
    EXPECT_ERROR("[{\"a\":1,\"a\":2},1.5]", "canonical.duplicate-key");
    EXPECT_ERROR("[9007199254740992,1.5]", "canonical.integer-out-of-range");
    EXPECT_ERROR("[1.5,9007199254740992]", "canonical.non-integer");
    EXPECT_ERROR("[1e400,1.5]", "canonical.integer-out-of-range");
    EXPECT_ERROR("[1.5,1e400]", "canonical.non-integer");
    EXPECT_ERROR("[18446744073709551616,1.5]", "canonical.integer-out-of-range");
    EXPECT_ERROR("[1.5,18446744073709551616]", "canonical.non-integer");
    EXPECT_ERROR("[\"\\ud800\",1.5]", "canonical.syntax");
    EXPECT_ERROR("[1.5,\"\\ud800\"]", "canonical.non-integer");
    EXPECT_ERROR("[x,1.5]", "canonical.syntax");
    EXPECT_ERROR("[1.5,x]", "canonical.non-integer");
    EXPECT_ERROR("[1.5", "canonical.non-integer"); /* the number precedes the missing ']' */
    EXPECT_ERROR("[1.,1.5]", "canonical.syntax");
    EXPECT_ERROR("[1.5,1.]", "canonical.non-integer");
    EXPECT_ERROR("[a1.5]", "canonical.syntax");
    EXPECT_ERROR("[0.1.2]", "canonical.non-integer"); /* "0.1", then a stray "." */
    /* a well-formed token is judged on its own even where it does not belong */
    EXPECT_ERROR("{\"a\" 1.5}", "canonical.non-integer");
    EXPECT_ERROR("{\"a\" 1}", "canonical.syntax");
    /* raw NUL bytes take their place in the order too */
    EXPECT_ERROR("[1.5,\"\0\"]", "canonical.non-integer");
    EXPECT_ERROR("[\"\0\",1.5]", "canonical.syntax");
    EXPECT_ERROR("[{\"a\":1,\"a\":2},\"\0\"]", "canonical.duplicate-key");
    EXPECT_ERROR("[\"\0\",{\"a\":1,\"a\":2}]", "canonical.syntax");
    EXPECT_ERROR("[1e400,\0]", "canonical.integer-out-of-range");
    /* keys with U+0000 do not change the order */
    EXPECT_ERROR("[{\"\\u0000\":1},1.5]", "canonical.non-integer");
    EXPECT_ERROR("[1.5,{\"\\u0000\":1}]", "canonical.non-integer");
    EXPECT_ERROR("[{\"\\u0000\":1},{\"a\":1,\"a\":2}]", "canonical.duplicate-key");
    EXPECT_ERROR("[{\"\\u0000\":1},}", "canonical.syntax");
    EXPECT_ERROR("[{\"\\u0000\":1},\"\0\"]", "canonical.syntax");
    EXPECT_ERROR("[{\"\\u0000\":1},\"\\ud800\"]", "canonical.syntax");
}

static void precedence_depth(void)
{
    char *deep = nested(33, false, "1.5");
    expect_depth_result(__LINE__, deep, "canonical.too-deep");
    free(deep);
    char *ok = nested(5, false, ""), doc[400];
    deep = nested(33, false, "");
    int n = snprintf(doc, sizeof doc, "[1.5,%s]", deep);
    expect_error_at(__LINE__, doc, (size_t)n, "canonical.non-integer", NULL);
    n = snprintf(doc, sizeof doc, "{\"a\":1,\"a\":%s}", deep);
    expect_error_at(__LINE__, doc, (size_t)n, "canonical.duplicate-key", NULL);
    n = snprintf(doc, sizeof doc, "{\"a\":%s,\"a\":1}", deep);
    expect_error_at(__LINE__, doc, (size_t)n, "canonical.too-deep", NULL);
    n = snprintf(doc, sizeof doc, "[%s,\"\\ud800\"]", deep);
    expect_error_at(__LINE__, doc, (size_t)n, "canonical.too-deep", NULL);
    n = snprintf(doc, sizeof doc, "[%s,1.5,%s]", ok, deep);
    expect_error_at(__LINE__, doc, (size_t)n, "canonical.non-integer", NULL);
    free(ok);
    free(deep);
}

/* ====================== parse_canonical ====================== */

static void canonical_accepts_exact_bytes(void)
{
    EXPECT_CANONICAL("{\"a\":1,\"b\":2}");
    EXPECT_CANONICAL("[true,null,false,\"x\",-1,0,{}]");
    EXPECT_CANONICAL("\"\\u001f\\n\\\\\\\"/\x7f\"");
    EXPECT_CANONICAL("{\"\xf0\x9f\x98\x80\":2,\"\xef\xac\xb3\":1}");
    EXPECT_CANONICAL("9007199254740991");
    EXPECT_CANONICAL("{\"\":{\"\":[]}}");
}

static void canonical_rejects_other_bytes(void)
{
    EXPECT_NOT_CANONICAL("{\"b\":2,\"a\":1}");
    EXPECT_NOT_CANONICAL("{\"a\": 1}");
    EXPECT_NOT_CANONICAL("{\"a\":1 }");
    EXPECT_NOT_CANONICAL(" 1");
    EXPECT_NOT_CANONICAL("1\n");
    EXPECT_NOT_CANONICAL("[1, 2]");
    EXPECT_NOT_CANONICAL("\"\\u0041\"");
    EXPECT_NOT_CANONICAL("\"\\u00e9\"");
    EXPECT_NOT_CANONICAL("\"\\/\"");
    EXPECT_NOT_CANONICAL("\"\\u001F\"");
    EXPECT_NOT_CANONICAL("\"\\u000a\"");
    EXPECT_NOT_CANONICAL("\"\\u007f\"");
    EXPECT_NOT_CANONICAL("\"\\u2028\"");
    EXPECT_NOT_CANONICAL("-0");
    EXPECT_NOT_CANONICAL("0.0");
    EXPECT_NOT_CANONICAL("[0e1]");
    EXPECT_NOT_CANONICAL("{\"\\ufb33\":1,\"\\ud83d\\ude00\":2}");
    EXPECT_NOT_CANONICAL("{\"\xef\xac\xb3\":1,\"\xf0\x9f\x98\x80\":2}"); /* code point order */
    EXPECT_NOT_CANONICAL("{\"\\u0000\":1,\"\":2}");
}

static void canonical_reports_parse_errors_first(void)
{
    EXPECT_STRICT_ERROR("{", "canonical.syntax");
    EXPECT_STRICT_ERROR("1.0", "canonical.non-integer");
    EXPECT_STRICT_ERROR(" 1.5", "canonical.non-integer");
    EXPECT_STRICT_ERROR("{\"b\":1,\"b\":2}", "canonical.duplicate-key");
    EXPECT_STRICT_ERROR("9007199254740992", "canonical.integer-out-of-range");
    char *deep = nested(33, false, "");
    expect_strict_at(__LINE__, deep, strlen(deep), "canonical.too-deep");
    free(deep);
}

/* ============================ encoder ============================ */

static void encoder_rejects_outside_domain(void)
{
    EXPECT_ENCODE_ERROR(json_real(1.0), "canonical.non-integer");
    EXPECT_ENCODE_ERROR(json_real(-2.5), "canonical.non-integer");
    EXPECT_ENCODE_ERROR(json_pack("[i,f]", 1, 0.5), "canonical.non-integer");
    EXPECT_ENCODE_ERROR(json_pack("{s:{s:I}}", "a", "b", (json_int_t)1 << 53),
                        "canonical.integer-out-of-range");
    EXPECT_ENCODE(json_real(0.0), "0");
    EXPECT_ENCODE(json_real(-0.0), "0");
    EXPECT_ENCODE(json_pack("[f,f]", 0.0, -0.0), "[0,0]");
    sp_error err = {0};
    sp_buf b = SP_BUF_INIT;
    CHECK(sp_json_encode(NULL, &b, &err) == -1);
    sp_buf_free(&b);
    sp_error_clear(&err);
}

static void encoder_ignores_insertion_order(void)
{
    json_t *a = json_object(), *b = json_object();
    const char *keys[] = {"b", "\xef\xac\xb3", "a", "\xf0\x9f\x98\x80", "", "aa", "\x7f"};
    size_t n = sizeof keys / sizeof keys[0];
    for (size_t i = 0; i < n; i++) {
        json_object_set_new(a, keys[i], json_integer((json_int_t)i));
        json_object_set_new(b, keys[n - 1 - i], json_integer((json_int_t)(n - 1 - i)));
    }
    static const char want[] = "{\"\":4,\"a\":2,\"aa\":5,\"b\":0,\"\x7f\":6,"
                               "\"\xf0\x9f\x98\x80\":3,\"\xef\xac\xb3\":1}";
    CHECK(sp_json_same(a, b));
    expect_encode_at(__LINE__, json_incref(a), want, sizeof want - 1, NULL);
    expect_encode_at(__LINE__, json_incref(b), want, sizeof want - 1, NULL);
    json_object_set_new(b, "c", json_null());
    CHECK(!sp_json_same(a, b));
    json_decref(a);
    json_decref(b);
    /* values the encoder refuses are never "the same" */
    json_t *r = json_real(1.5);
    CHECK(!sp_json_same(r, r));
    json_decref(r);
}

static void encoder_alloc_and_idempotence(void)
{
    json_t *v = PARSE(" {\"z\":[1, \"\\u0000\"],\"a\":{\"y\":-0.0}} ");
    size_t len = 0;
    char *enc = sp_json_encode_alloc(v, &len, NULL);
    CHECK(enc && len == strlen(enc));
    CHECK_STR(enc, "{\"a\":{\"y\":0},\"z\":[1,\"\\u0000\"]}");
    json_t *again = enc ? sp_json_parse_canonical(enc, len, NULL) : NULL;
    CHECK(again && sp_json_same(v, again));
    json_decref(again);
    free(enc);
    json_decref(v);
}

/* ========================= key ordering ========================= */

static int cmp(const char *a, size_t alen, const char *b, size_t blen)
{
    int r = sp_json_key_cmp(a, alen, b, blen), back = sp_json_key_cmp(b, blen, a, alen);
    CHECK((r < 0 && back > 0) || (r > 0 && back < 0) || (r == 0 && back == 0));
    return r;
}
#define CMP(a, b) cmp(a, sizeof(a) - 1, b, sizeof(b) - 1)

static void key_cmp_edge_cases(void)
{
    CHECK(CMP("", "") == 0);
    CHECK(CMP("abc", "abc") == 0);
    CHECK(CMP("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80") == 0);
    CHECK(CMP("", "a") < 0);
    CHECK(CMP("a", "ab") < 0);          /* a prefix sorts first */
    CHECK(CMP("ab", "b") < 0);
    CHECK(CMP("a", "a\0") < 0);         /* lengths, not C strings */
    CHECK(CMP("a\0b", "a\0c") < 0);
    CHECK(CMP("\x7f", "\xc2\x80") < 0); /* U+007F < U+0080 */
    CHECK(CMP("\xc3\xb6", "\xe2\x82\xac") < 0);
    /* supplementary (surrogates D800-DBFF) before BMP U+E000..U+FFFF */
    CHECK(CMP("\xf0\x9f\x98\x80", "\xef\xac\xb3") < 0);     /* U+1F600 < U+FB33 */
    CHECK(CMP("\xf0\x90\x80\x80", "\xef\xbf\xbf") < 0);     /* U+10000 < U+FFFF */
    CHECK(CMP("\xf4\x8f\xbf\xbf", "\xee\x80\x80") < 0);     /* U+10FFFF < U+E000 */
    /* ... but after BMP below U+D800 */
    CHECK(CMP("\xed\x9f\xbf", "\xf0\x90\x80\x80") < 0);     /* U+D7FF < U+10000 */
    CHECK(CMP("\xe2\x82\xac", "\xf0\x9f\x98\x80") < 0);     /* U+20AC < U+1F600 */
    /* two supplementary characters: same high surrogate, then the low one */
    CHECK(CMP("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x81") < 0); /* U+1F600 < U+1F601 */
    CHECK(CMP("\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf") < 0);
    /* the difference after a shared multi-byte prefix */
    CHECK(CMP("\xe2\x82\xac" "a", "\xe2\x82\xac" "b") < 0);
    CHECK(CMP("x\xf0\x9f\x98\x80", "x\xef\xac\xb3") < 0);
    /* differing in a continuation byte of the same lead */
    CHECK(CMP("\xef\xac\xb3", "\xef\xbf\xbf") < 0);
    CHECK(CMP("\xf0\x9f\x98\x80", "\xf0\x9f\x99\x80") < 0);
}

static void sorted_members(void)
{
    json_t *o = PARSE("{\"\\ufb33\":1,\"b\":2,\"\\ud83d\\ude00\":3,\"a\":4}");
    bool oom = true;
    sp_json_member *m = sp_json_sorted_members(o, &oom);
    CHECK(m && !oom);
    if (m) {
        CHECK(m[0].len == 1 && memcmp(m[0].key, "a", 1) == 0);
        CHECK(m[1].len == 1 && memcmp(m[1].key, "b", 1) == 0);
        CHECK(m[2].len == 4 && json_integer_value(m[2].value) == 3);
        CHECK(m[3].len == 3 && json_integer_value(m[3].value) == 1);
    }
    free(m);
    json_decref(o);
    json_t *empty = json_object();
    oom = true;
    CHECK(sp_json_sorted_members(empty, &oom) == NULL && !oom);
    json_decref(empty);
}

/* An object assembled from sp_json_encode_member() pieces in sorted key
 * order is the object's encoding; nesting counts from the document. */
static void encode_member(void)
{
    json_t *o = PARSE("{\"b\":[1,{\"z\":null}],\"a\\u0000\":\"x\\ny\",\"\\ud83d\\ude00\":-3}");
    bool oom;
    sp_json_member *m = sp_json_sorted_members(o, &oom);
    sp_buf b = SP_BUF_INIT;
    sp_buf_append_char(&b, '{');
    for (size_t i = 0; i < json_object_size(o); i++) {
        if (i)
            sp_buf_append_char(&b, ',');
        CHECK(sp_json_encode_member(m[i].key, m[i].len, m[i].value, 0, &b, NULL) == 0);
    }
    sp_buf_append_char(&b, '}');
    size_t len;
    char *want = sp_json_encode_alloc(o, &len, NULL);
    CHECK(want && b.len == len && memcmp(b.data, want, len) == 0);
    free(want);
    free(m);
    sp_buf_free(&b);
    json_decref(o);

    /* 31 nested arrays fit as a member of the document (depth 0) but not
     * of an object nested at depth 1 */
    json_t *v = json_array();
    for (int i = 1; i < 31; i++) {
        json_t *outer = json_array();
        json_array_append_new(outer, v);
        v = outer;
    }
    sp_error err = {0};
    sp_buf c = SP_BUF_INIT;
    CHECK(sp_json_encode_member("k", 1, v, 0, &c, &err) == 0);
    sp_buf_reset(&c);
    CHECK(sp_json_encode_member("k", 1, v, 1, &c, &err) == -1);
    CHECK_STR(err.code, "canonical.too-deep");
    sp_error_clear(&err);
    sp_buf_free(&c);
    json_decref(v);
}

static void depth_function(void)
{
    json_t *v;
    CHECK_INT(sp_json_depth(v = PARSE("1")), 0);
    json_decref(v);
    CHECK_INT(sp_json_depth(v = PARSE("\"[[\"")), 0);
    json_decref(v);
    CHECK_INT(sp_json_depth(v = PARSE("[]")), 1);
    json_decref(v);
    CHECK_INT(sp_json_depth(v = PARSE("{}")), 1);
    json_decref(v);
    CHECK_INT(sp_json_depth(v = PARSE("[[]]")), 2);
    json_decref(v);
    CHECK_INT(sp_json_depth(v = PARSE("{\"a\":[{}]}")), 3);
    json_decref(v);
    CHECK_INT(sp_json_depth(v = PARSE("[1,[2,[3]],[],{\"k\":[[4]]}]")), 4);
    json_decref(v);
}

/* ========================= decimal strings ========================= */

static bool dec(const char *s, uint64_t *out)
{
    *out = 12345;
    return sp_decimal_parse(s, strlen(s), out);
}

static void decimal_strings(void)
{
    uint64_t v;
    CHECK(dec("0", &v) && v == 0);
    CHECK(dec("1", &v) && v == 1);
    CHECK(dec("10", &v) && v == 10);
    CHECK(dec("9223372036854775807", &v) && v == UINT64_C(9223372036854775807));
    CHECK(dec("1000000000000000000", &v) && v == UINT64_C(1000000000000000000));
    CHECK(!dec("9223372036854775808", &v));
    CHECK(!dec("9999999999999999999", &v));
    CHECK(!dec("18446744073709551615", &v));
    CHECK(!dec("10000000000000000000", &v)); /* 20 digits */
    CHECK(!dec("00000000000000000001", &v));
    CHECK(!dec("", &v));
    CHECK(!dec("01", &v));
    CHECK(!dec("00", &v));
    CHECK(!dec("-1", &v));
    CHECK(!dec("-0", &v));
    CHECK(!dec("+1", &v));
    CHECK(!dec(" 1", &v));
    CHECK(!dec("1 ", &v));
    CHECK(!dec("1a", &v));
    CHECK(!dec("1.0", &v));
    CHECK(!dec("1e3", &v));
    CHECK(sp_decimal_parse("12", 1, &v) && v == 1); /* only `len` bytes count */
    CHECK(!sp_decimal_parse("1\0", 2, &v));
}

static void decimal_json_and_format(void)
{
    char buf[SP_DECIMAL_MAX_LEN + 1];
    CHECK_STR(sp_decimal_format(0, buf), "0");
    CHECK_STR(sp_decimal_format(UINT64_C(9223372036854775807), buf), "9223372036854775807");
    json_t *j = sp_decimal_json(42);
    uint64_t v = 0;
    CHECK(j && json_is_string(j) && strcmp(json_string_value(j), "42") == 0);
    CHECK(sp_decimal_from_json(j, &v) && v == 42);
    json_decref(j);
    json_t *i = json_integer(42);
    CHECK(!sp_decimal_from_json(i, &v));
    json_decref(i);
    CHECK(!sp_decimal_from_json(NULL, &v));
    json_t *bad = json_string("042");
    CHECK(!sp_decimal_from_json(bad, &v));
    json_decref(bad);
    json_t *nul = json_stringn("4\0", 2);
    CHECK(!sp_decimal_from_json(nul, &v));
    json_decref(nul);
}

int main(void)
{
    vector1_whitespace_and_key_order();
    vector2_utf16_key_order();
    vector3_rfc8785_key_order();
    vector4_minimal_escapes();
    vector5_duplicate_keys();
    vector6_numbers();
    vector7_negative_zero();
    vector8_syntax_errors();
    vector9_depth();
    vector10_exact_bytes();
    vector11_encode_typed_values();

    numbers_range_bounds();
    numbers_zero_tokens_normalize();
    numbers_float_forms_non_integer();
    numbers_float_forms_out_of_range();
    numbers_malformed_are_syntax();

    strings_nul_escape_accepted();
    strings_raw_nul_is_syntax();
    strings_keys_with_nul();
    strings_keys_with_nul_limit();
    strings_control_characters();
    strings_raw_above_0x1f();
    strings_no_unicode_normalization();
    strings_invalid_utf8_is_syntax();
    strings_lone_surrogates_are_syntax();
    strings_bad_escapes_are_syntax();

    syntax_trailing_data();
    syntax_truncated();
    syntax_other();
    depth_arrays_objects_mixed();
    depth_encoder();

    precedence_earliest_problem_wins();
    precedence_depth();

    canonical_accepts_exact_bytes();
    canonical_rejects_other_bytes();
    canonical_reports_parse_errors_first();

    encoder_rejects_outside_domain();
    encoder_ignores_insertion_order();
    encoder_alloc_and_idempotence();

    key_cmp_edge_cases();
    sorted_members();
    encode_member();
    depth_function();

    decimal_strings();
    decimal_json_and_format();
    return check_done("test_json");
}
