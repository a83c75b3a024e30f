/*
 * test_agent_sandbox.c - A5 (agent-step.md §10) with the real bubblewrap
 * sandbox and the real agent runner: a probe step CLI (agent_probe) tries
 * to read the user's home directory, write outside its run directory, see
 * the host's processes and reach a TCP listener of this test on the host;
 * each attempt must fail with network "none", and the positive controls
 * (its run directory, a granted writable path, the listener with network
 * "host") must succeed, so the test cannot pass by accident. Also: a fresh
 * sandbox per attempt is destroyed afterwards (reuse "none"); reuse "run"
 * keeps the work root across steps of one run until a step taints it; a
 * sandbox that cannot be built fails the step (agent.sandbox-unavailable,
 * naming what is missing) without running anything; the pinned grant
 * descriptors never reach the step; and a grant swapped for a symlink to /
 * between its check and bwrap's mount still mounts the checked directory.
 *
 * usage: test_agent_sandbox <agent_probe>
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "runners/agent.h"
#include "runners/process.h"
#include "sandbox/sandbox.h"

static char TMP[256], HOME_FILE[512], PROJECT[512], OUTSIDE[512], WRITABLE[512], AGENT_DIR[512];
static char *PROBE;

static void mkdirs(const char *path)
{
    char p[512];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int listener(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 8) == 0 &&
          getsockname(s, (struct sockaddr *)&a, &len) == 0);
    *port = ntohs(a.sin_port);
    return s;
}

static int accepted(int s)
{
    int n = 0, c;
    while ((c = accept(s, NULL, NULL)) >= 0) {
        close(c);
        n++;
    }
    return n;
}

static json_t *run_probe(const char *network, const char *reuse, const char *run_id,
                         const char *write_marker, const char *look_marker, int port,
                         sp_agent_outcome *o)
{
    char pid[32], port_text[32];
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    snprintf(port_text, sizeof port_text, "%d", port);
    json_t *action = json_pack(
        "{s:s,s:[s,s,s,s,s,s,s,s],s:{s:s,s:s,s:[s],s:[s]},s:s}", "kind", "agent", "stepCli",
        PROBE, HOME_FILE, OUTSIDE, WRITABLE, pid, port_text, write_marker, look_marker, "sandbox",
        "network", network, "reuse", reuse, "readable", "scen", "writable", "out", "provider",
        run_id);
    json_t *input = json_pack("{s:s}", "query", "probe");
    sp_agent_exec_in in = {"probe", action, input, run_id, "probe", 1, PROJECT, NULL, NULL, NULL,
                           NULL, NULL};
    sp_agent_execute(&in, o);
    json_decref(action);
    json_decref(input);
    if (o->status != SP_AGENT_SUCCESS) {
        json_t *j = sp_agent_outcome_json(o);
        char *t = json_dumps(j, JSON_COMPACT);
        fprintf(stderr, "probe failed: %s\n", t ? t : "?");
        free(t);
        json_decref(j);
    }
    return o->output;
}

static const char *out_str(const json_t *out, const char *name)
{
    const char *v = json_string_value(json_object_get(out, name));
    return v ? v : "(missing)";
}

#define DENIED(out, name)                                                                     \
    do {                                                                                      \
        check_count++;                                                                        \
        if (strcmp(out_str(out, name), "ok") == 0)                                            \
            check_fail(__FILE__, __LINE__, "the sandboxed step could %s", name);             \
    } while (0)
#define ALLOWED(out, name) CHECK_STR(out_str(out, name), "ok")

static int sandboxes(void)
{
    DIR *d = opendir(AGENT_DIR);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, "sb-", 3) == 0 || strncmp(e->d_name, "run-", 4) == 0;
    if (d)
        closedir(d);
    return n;
}

static void test_escapes(void)
{
    int port, s = listener(&port);
    unlink("/tmp/spore-probe-tmp");
    sp_agent_outcome o;
    const json_t *out = run_probe("none", "none", "run_escapes", "-", "-", port, &o);
    CHECK(o.status == SP_AGENT_SUCCESS);
    /* the user's home directory */
    DENIED(out, "readHome");
    DENIED(out, "listHome");
    /* writing outside the run directory */
    DENIED(out, "writeOutside");
    DENIED(out, "writeRoot");
    DENIED(out, "writeUsr");
    DENIED(out, "writeEtc");
    DENIED(out, "writeWorkRoot");
    CHECK(access(OUTSIDE, F_OK) != 0);
    ALLOWED(out, "writeRunDir");   /* positive control */
    ALLOWED(out, "writeWritable"); /* granted by the action */
    CHECK(access(WRITABLE, F_OK) == 0);
    ALLOWED(out, "writeTmp");                     /* a private /tmp ... */
    CHECK(access("/tmp/spore-probe-tmp", F_OK) != 0); /* ... that is not the host's */
    /* the host's processes */
    CHECK_STR(out_str(out, "hostPidVisible"), "no");
    CHECK(json_integer_value(json_object_get(out, "processes")) <= 4);
    /* the pinned grant descriptors bwrap mounted did not reach the step */
    CHECK(json_object_get(out, "extraFds") != NULL);
    CHECK_INT(json_integer_value(json_object_get(out, "extraFds")), 0);
    /* the network */
    DENIED(out, "connect");
    CHECK_INT(accepted(s), 0);
    sp_agent_outcome_free(&o);
    CHECK_INT(sandboxes(), 0); /* reuse "none": destroyed after the attempt */

    /* positive control for the network: "host" shares it */
    out = run_probe("host", "none", "run_escapes_host", "-", "-", port, &o);
    CHECK(o.status == SP_AGENT_SUCCESS);
    ALLOWED(out, "connect");
    CHECK_INT(accepted(s), 1);
    DENIED(out, "readHome");
    sp_agent_outcome_free(&o);
    close(s);
}

static void test_reuse(void)
{
    int port, s = listener(&port);
    sp_agent_outcome o;
    const json_t *out = run_probe("none", "run", "run_reuse", "marker-1", "-", port, &o);
    CHECK(o.status == SP_AGENT_SUCCESS);
    sp_agent_outcome_free(&o);
    CHECK_INT(sandboxes(), 1); /* kept for the run */
    out = run_probe("none", "run", "run_reuse", "-", "marker-1", port, &o);
    CHECK_STR(out_str(out, "sawMarker"), "yes");
    sp_agent_outcome_free(&o);
    /* a step whose outcome taints the sandbox: it is destroyed */
    json_t *action = json_pack("{s:s,s:[s,s,s],s:{s:s}}", "kind", "agent", "stepCli", "/bin/sh",
                               "-c", "exit 7", "sandbox", "reuse", "run");
    json_t *input = json_pack("{s:s}", "query", "taint");
    sp_agent_exec_in in = {"t", action, input, "run_reuse", "taint", 1, PROJECT, NULL, NULL,
                           NULL, NULL, NULL};
    sp_agent_execute(&in, &o);
    CHECK_STR(o.code, "agent.unexpected-exit");
    CHECK(o.taint);
    sp_agent_outcome_free(&o);
    json_decref(action);
    json_decref(input);
    CHECK_INT(sandboxes(), 0);
    out = run_probe("none", "run", "run_reuse", "-", "marker-1", port, &o);
    CHECK_STR(out_str(out, "sawMarker"), "no"); /* a fresh sandbox */
    sp_agent_outcome_free(&o);
    close(s);
}

/* A grant swapped for a symlink to / after it was checked (what another
 * process could do between the check and bwrap's mount): the sandbox gets
 * the pinned directory that was checked, never what the path names by
 * then, and nothing is written on the host outside it. */
static void test_grant_swap(void)
{
    char dir[600], moved[620], file[700], name[64], on_root[80];
    snprintf(dir, sizeof dir, "%s/swap", PROJECT);
    snprintf(moved, sizeof moved, "%s/swap.moved", PROJECT);
    snprintf(name, sizeof name, "spore-swap-probe-%d", (int)getpid());
    snprintf(on_root, sizeof on_root, "/%s", name);
    mkdirs(dir);
    snprintf(file, sizeof file, "%s/checked", dir);
    write_text(file, "the checked directory\n");
    const char *writable[] = {"swap", NULL};
    sp_sandbox_grants g = {0};
    sp_error err = {0};
    CHECK(sp_sandbox_grants_resolve(NULL, writable, PROJECT, &g, &err) == 0);
    CHECK(rename(dir, moved) == 0 && symlink("/", dir) == 0); /* the swap */
    sp_sandbox *sb = sp_sandbox_acquire("run_swap", false, &err);
    CHECK(sb != NULL && g.n == 1);
    if (!sb || g.n != 1) {
        sp_error_clear(&err);
        sp_sandbox_grants_free(&g);
        return;
    }
    char script[4200];
    snprintf(script, sizeof script,
             "cat %s/checked && ! test -e %s/etc/passwd && echo new > %s/%s", dir, dir, dir,
             name);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    const char *env[] = {"PATH=/usr/bin:/bin", NULL};
    sp_sandbox_spec spec = {.grants = &g, .grant_fd = SP_PROC_PASS_FD, .cwd = "/", .env = env,
                            .argv = argv};
    char **bw = sp_sandbox_bwrap_argv(sb, &spec, &err);
    CHECK(bw != NULL);
    int fds[1] = {g.v[0].fd};
    sp_proc_spec ps = {.argv = (const char *const *)bw, .envp = env, .pass_fds = fds,
                       .npass_fds = 1, .has_timeout = true, .timeout_ms = 30000};
    sp_proc_result res;
    sp_proc_run(&ps, &res);
    if (res.end != SP_PROC_EXITED || res.exit_code != 0)
        fprintf(stderr, "swap: end %d exit %d: %s\n", (int)res.end, res.exit_code,
                res.err ? res.err : "");
    CHECK(res.end == SP_PROC_EXITED && res.exit_code == 0);
    CHECK(res.out && strstr(res.out, "the checked directory") != NULL);
    snprintf(file, sizeof file, "%s/%s", moved, name);
    CHECK(access(file, F_OK) == 0);       /* written into the checked directory ... */
    CHECK(access(on_root, F_OK) != 0);    /* ... not into the host's / */
    sp_proc_result_free(&res);
    sp_sandbox_strv_free(bw);
    sp_sandbox_release(sb, true);
    sp_sandbox_grants_free(&g);
    sp_error_clear(&err);
    unlink(dir);
}

/* Run in a child process with SPORE_BWRAP pointing nowhere (detection is
 * cached per process). */
static int unavailable_child(void)
{
    char marker[600];
    snprintf(marker, sizeof marker, "%s/never-ran", TMP);
    json_t *action = json_pack("{s:s,s:[s,s]}", "kind", "agent", "stepCli", "/usr/bin/touch", marker);
    json_t *input = json_pack("{s:s}", "query", "q");
    sp_agent_exec_in in = {"u", action, input, "run_unavailable", "u", 1, PROJECT, NULL, NULL,
                           NULL, NULL, NULL};
    sp_agent_outcome o;
    sp_agent_execute(&in, &o);
    bool ok = strcmp(o.code, "agent.sandbox-unavailable") == 0 && o.error &&
              strstr(o.error, "SPORE_BWRAP") && access(marker, F_OK) != 0 && !o.retryable;
    if (!ok)
        fprintf(stderr, "unavailable: code %s error %s\n", o.code, o.error ? o.error : "");
    sp_agent_outcome_free(&o);
    json_decref(action);
    json_decref(input);
    return ok ? 0 : 1;
}

static void test_unavailable(const char *self)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("SPORE_BWRAP", "/nonexistent/bwrap", 1);
        execl(self, self, PROBE, "--unavailable", TMP, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void setup(void)
{
    snprintf(HOME_FILE, sizeof HOME_FILE, "%s/home/user/.ssh/id_rsa", TMP);
    snprintf(PROJECT, sizeof PROJECT, "%s/home/user/project", TMP);
    snprintf(OUTSIDE, sizeof OUTSIDE, "%s/outside/escaped", TMP);
    snprintf(WRITABLE, sizeof WRITABLE, "%s/home/user/project/out/written", TMP);
    snprintf(AGENT_DIR, sizeof AGENT_DIR, "%s/agent", TMP);
    char p[600];
    snprintf(p, sizeof p, "%s/home/user/.ssh", TMP);
    mkdirs(p);
    write_text(HOME_FILE, "-----BEGIN OPENSSH PRIVATE KEY-----\nnot really\n");
    snprintf(p, sizeof p, "%s/scen", PROJECT);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/out", PROJECT);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/outside", TMP);
    mkdirs(p);
    mkdir(AGENT_DIR, 0700);
    setenv("SPORE_AGENT_DIR", AGENT_DIR, 1);
    snprintf(p, sizeof p, "%s/home/user", TMP);
    setenv("HOME", p, 1); /* spore runs from a project inside the user's home */
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[2], "--unavailable") == 0) {
        PROBE = argv[1];
        snprintf(TMP, sizeof TMP, "%s", argv[3]);
        snprintf(PROJECT, sizeof PROJECT, "%s/home/user/project", TMP);
        snprintf(AGENT_DIR, sizeof AGENT_DIR, "%s/agent", TMP);
        setenv("SPORE_AGENT_DIR", AGENT_DIR, 1);
        return unavailable_child();
    }
    if (argc != 2) {
        fprintf(stderr, "usage: test_agent_sandbox <agent_probe>\n");
        return 2;
    }
    PROBE = realpath(argv[1], NULL);
    CHECK(PROBE != NULL);
    snprintf(TMP, sizeof TMP, "%s/spore-agent-sandbox-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!PROBE || !mkdtemp(TMP))
        return check_done("agent sandbox (A5)");
    setup();
    sp_error err = {0};
    if (sp_sandbox_check(&err)) { /* never skipped: a missing sandbox fails A5 */
        check_fail(__FILE__, __LINE__, "%s", err.message);
        sp_error_clear(&err);
    } else {
        test_unavailable(argv[0]);
        test_escapes();
        test_reuse();
        test_grant_swap();
    }
    sp_sandbox_remove_tree(TMP);
    free(PROBE);
    return check_done("agent sandbox (A5)");
}
