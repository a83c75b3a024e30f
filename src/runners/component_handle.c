/*
 * component_handle.c - sealing and opening process handles (see
 * component_handle.h). Never accepts a handle without verifying its MAC.
 */
#include "runners/component_handle.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest/hmac.h"
#include "json/decimal.h"
#include "json/json.h"

static char BOOT[SP_BOOT_ID_MAX + 1];
static pthread_once_t BOOT_ONCE = PTHREAD_ONCE_INIT;

static void read_boot(void)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    if (!fgets(BOOT, sizeof BOOT, f))
        BOOT[0] = '\0';
    fclose(f);
    BOOT[strcspn(BOOT, "\n")] = '\0';
}

const char *sp_boot_id(void)
{
    pthread_once(&BOOT_ONCE, read_boot);
    return BOOT;
}

/* The six sealed members (without mac). */
static json_t *body(const sp_process_handle *p, const char *program, const char *run_id,
                    const char *invocation_id)
{
    char started[SP_DECIMAL_MAX_LEN + 1];
    return json_pack("{s:I,s:s,s:s,s:s,s:s,s:s}", "pid", (json_int_t)p->pid, "started",
                     sp_decimal_format(p->started, started), "boot", p->boot, "program", program,
                     "run", run_id, "invocation", invocation_id);
}

static bool mac_of(const unsigned char key[32], const json_t *b, char out[2 * SP_HMAC_LEN + 1])
{
    size_t len;
    char *text = sp_json_encode_alloc(b, &len, NULL);
    if (!text)
        return false;
    sp_hmac_sha256_hex(key, 32, text, len, 2 * SP_HMAC_LEN, out);
    free(text);
    return true;
}

json_t *sp_handle_seal(const unsigned char key[32], const sp_process_handle *p,
                       const char *program, const char *run_id, const char *invocation_id)
{
    json_t *h = body(p, program, run_id, invocation_id);
    char mac[2 * SP_HMAC_LEN + 1];
    if (!h || !mac_of(key, h, mac) || json_object_set_new(h, "mac", json_string(mac))) {
        json_decref(h);
        return NULL;
    }
    return h;
}

bool sp_handle_open(const unsigned char key[32], const json_t *h, const char *run_id,
                    const char *invocation_id, sp_process_handle *out)
{
    const json_t *pid = json_object_get(h, "pid"), *mac = json_object_get(h, "mac");
    const char *boot = json_string_value(json_object_get(h, "boot"));
    const char *program = json_string_value(json_object_get(h, "program"));
    const char *run = json_string_value(json_object_get(h, "run"));
    const char *inv = json_string_value(json_object_get(h, "invocation"));
    memset(out, 0, sizeof *out);
    if (!json_is_object(h) || json_object_size(h) != 7 || !json_is_integer(pid) ||
        json_integer_value(pid) <= 1 || json_integer_value(pid) > INT32_MAX || !boot ||
        strlen(boot) > SP_BOOT_ID_MAX || !program || !run || !inv || !json_is_string(mac) ||
        json_string_length(mac) != 2 * SP_HMAC_LEN ||
        !sp_decimal_from_json(json_object_get(h, "started"), &out->started))
        return false;
    out->pid = json_integer_value(pid);
    snprintf(out->boot, sizeof out->boot, "%s", boot);
    json_t *b = body(out, program, run, inv);
    char want[2 * SP_HMAC_LEN + 1];
    bool ok = b && mac_of(key, b, want) && sp_mac_equal(want, json_string_value(mac), 2 * SP_HMAC_LEN);
    json_decref(b);
    /* the MAC first, then whose it is: both refusals look the same */
    return ok && strcmp(run, run_id) == 0 && strcmp(inv, invocation_id) == 0;
}
