/*
 * main.c - embedding spore in a C program: register two native functions,
 * start a run of workflow.json, work on it until it is parked, print its
 * status. Built against the installed library (see Makefile, README.md).
 *
 * Run it twice with the same database: the second time the start key names
 * the run that already exists, nothing runs again, and the same status is
 * printed. That is the durability promise, in twenty lines of main().
 *
 * What it must never do: include anything of spore but <spore/spore.h>, or
 * perform an effect without keying it by the effect key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spore/spore.h>

/* "reserve": pretend to call a reservation service. Its first attempt meets
 * a busy service (a retryable failure, so the workflow's retry policy runs
 * it again); every attempt carries the same effect key, which a real service
 * would use to reserve at most once. */
static int reserve(void *user, const char *input, size_t len, spore_call *call)
{
    (void)user, (void)len;
    const char *key = spore_call_effect_key(call);
    unsigned attempt = spore_call_attempt(call);
    if (attempt == 1) {
        printf("  reserve attempt %u (effect key %s): service busy, will retry\n", attempt, key);
        return spore_call_fail(call, "demo.busy", "the reservation service is busy", true);
    }
    printf("  reserve attempt %u (effect key %s): reserved\n", attempt, key);
    char out[512];
    int n = snprintf(out, sizeof out, "{\"reservation\": \"res-%s\", \"request\": %s}", key,
                     input);
    if (n < 0 || (size_t)n >= sizeof out)
        return spore_call_fail(call, "demo.too-large", "the request is too large", false);
    return spore_call_succeed(call, "ok", out, (size_t)n);
}

/* "confirm": its input is canonical JSON, so it can be embedded as is. */
static int confirm(void *user, const char *input, size_t len, spore_call *call)
{
    (void)user, (void)len;
    printf("  confirm attempt %u: confirmed\n", spore_call_attempt(call));
    char out[1024];
    int n = snprintf(out, sizeof out, "{\"confirmed\": true, \"order\": %s}", input);
    if (n < 0 || (size_t)n >= sizeof out)
        return spore_call_fail(call, "demo.too-large", "the order is too large", false);
    return spore_call_succeed(call, NULL, out, (size_t)n);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap + 1);
    if (buf)
        len = fread(buf, 1, cap, f);
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static int fail(const char *what, spore_error *err)
{
    fprintf(stderr, "embed: %s: %s: %s\n", what, err->code, err->message);
    spore_error_clear(err);
    return 2;
}

int main(int argc, char **argv)
{
    const char *workflow_path = argc > 1 ? argv[1] : "workflow.json";
    const char *db_path = argc > 2 ? argv[2] : "embed.db";
    const char *start_key = argc > 3 ? argv[3] : "embed-demo-1";
    const char *input = "{\"customer\": \"ada\", \"item\": \"lamp\"}";

    char *workflow = read_file(workflow_path);
    if (!workflow) {
        fprintf(stderr, "embed: cannot read %s\n", workflow_path);
        return 2;
    }
    spore_error err = {0};
    spore_db *db = spore_open(db_path, &err);
    if (!db) {
        free(workflow);
        return fail("open", &err);
    }
    printf("libspore %s, store %s\n", spore_version(), db_path);

    int code = 2;
    char *run_id = NULL, *status = NULL;
    bool created = false;
    spore_park park;
    if (spore_register_native(db, "reserve", reserve, NULL, &err) ||
        spore_register_native(db, "confirm", confirm, NULL, &err))
        code = fail("register", &err);
    else if (spore_start(db, workflow, input, start_key, &run_id, &created, &err))
        code = fail("start", &err);
    else if (printf("run %s (%s)\n", run_id, created ? "new" : "existing") < 0 ||
             spore_run_until_parked(db, run_id, &park, &err))
        code = fail("run", &err);
    else if (spore_status(db, run_id, &status, &err))
        code = fail("status", &err);
    else {
        printf("parked: %s\nstatus: %s\n", spore_park_name(park), status);
        code = park == SPORE_PARK_COMPLETED ? 0 : 1;
    }
    spore_free(status);
    spore_free(run_id);
    spore_close(db);
    free(workflow);
    return code;
}
