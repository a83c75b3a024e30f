/*
 * capabilities.c - detecting and describing what this host can serve (see
 * capabilities.h). Sandbox features are probed, never assumed.
 */
#define _GNU_SOURCE
#include "runners/capabilities.h"

#include <linux/landlock.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runners/registry.h"
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

static long read_long(const char *path)
{
    FILE *f = fopen(path, "r");
    long v = -1;
    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
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

static json_t *sandbox(void)
{
    long userns = read_long("/proc/sys/user/max_user_namespaces");
    long unpriv = read_long("/proc/sys/kernel/unprivileged_userns_clone");
    return json_pack("{s:b,s:b,s:b,s:i}", "bubblewrap", access("/usr/bin/bwrap", X_OK) == 0,
                     "userNamespaces", userns > 0 && unpriv != 0, "seccomp",
                     prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0, "landlockAbi", landlock_abi());
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
                     "agentTransports", string_list(none), "sandbox", sandbox(), "storeAdapters",
                     string_list(sp_store_adapters()));
}
