/*
 * capabilities.c - detecting and describing what this host can serve (see
 * capabilities.h). Sandbox features are probed, never assumed. A host-wide
 * report (runners, sandbox, worlds, store adapters), so it lives with the
 * command line, above every component it asks.
 */
#define _GNU_SOURCE
#include "cli/capabilities.h"

#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runners/runner.h"
#include "sandbox/sandbox.h"
#include "store/store.h"
#include "wasm/world.h"

static json_t *string_list(const char *const *items)
{
    json_t *a = json_array();
    for (; a && *items; items++)
        json_array_append_new(a, json_string(*items));
    return a;
}

static json_t *kinds(bool async_only)
{
    json_t *a = json_array();
    for (const char *const *k = sp_runner_kinds(); a && *k; k++) {
        const sp_runner *r = sp_runner_find(*k);
        if (r && (!async_only || r->async))
            json_array_append_new(a, json_string(*k));
    }
    return a;
}

static int landlock_abi(void)
{
#ifdef SYS_landlock_create_ruleset
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return abi > 0 ? (int)abi : 0;
#else
    return 0;
#endif
}

/* The sandbox of agent steps, probed by running a trial bubblewrap sandbox
 * (src/sandbox: what the agent runner itself relies on). */
static json_t *sandbox(void)
{
    const sp_sandbox_features *f = sp_sandbox_detect();
    json_t *out = json_pack("{s:b,s:b,s:b,s:b,s:i}", "bubblewrap", f->bwrap[0] != '\0',
                            "works", f->works, "userNamespaces", f->user_namespaces, "seccomp",
                            prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0, "landlockAbi",
                            landlock_abi());
    if (out && !f->works && f->problem[0])
        json_object_set_new(out, "problem", json_string(f->problem));
    return out;
}

/* local needs a working sandbox; exec only the command prefix it is given. */
static json_t *agent_transports(void)
{
    static const char *const both[] = {"local", "exec", NULL};
    static const char *const exec_only[] = {"exec", NULL};
    static const char *const none[] = {NULL};
    if (!sp_runner_find("agent"))
        return string_list(none);
    return string_list(sp_sandbox_detect()->works ? both : exec_only);
}

json_t *sp_capabilities_json(void)
{
    static const char *const channels[] = {"store", "watch", NULL};
    static const char *const none[] = {NULL};
    static const char *const worlds[] = {SP_WORLD_NAME, NULL};
    static const char *const grants[] = {"programs", "sockets", "folders", NULL};
    bool component = sp_runner_find("component") != NULL;
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "actionKinds", kinds(false),
                     "asyncKinds", kinds(true), "resultChannels", string_list(channels),
                     "componentWorlds", string_list(component ? worlds : none), "grantKinds",
                     string_list(component ? grants : none),
                     "agentTransports", agent_transports(), "sandbox", sandbox(), "storeAdapters",
                     string_list(sp_store_adapters()));
}
