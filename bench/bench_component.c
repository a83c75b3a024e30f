/*
 * bench_component.c - the latency of one component runner call (runners.md
 * §4: jail start, instantiate, spore_start returning a handle), next to a
 * bare fork/exec of /bin/true measured in the same run, so the printed
 * ratio survives a change of machine.
 *
 * usage: bench_component <spore-wasm-jail or spore binary> <runners dir> [--calls N]
 *        (the jail binary the calls run: what spore runs is spore-wasm-jail,
 *        beside it; `spore __wasm-jail` is the fallback it replaced)
 *
 * Three measurements, each --calls times (default 200), median and p95:
 *   fork/exec   fork, execve /bin/true, waitpid (the floor of any process);
 *   instantiate the jail binary: a fresh child, the module loaded under
 *               the seccomp filter and instantiated, no call;
 *   start       the same plus spore_alloc, the request copied in and
 *               spore_start answering {"handle": ...} (hold.wasm, no
 *               host import): what a held component step costs to start.
 *
 * What it must never do: assert on speed, or time a call that failed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wasm/jail.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, int n, double base)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    double med = v[n / 2], p95 = v[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1];
    printf("%-12s median %8.0f us   p95 %8.0f us", name, med, p95);
    if (base > 0)
        printf("   %.1fx fork/exec", med / base);
    printf("\n");
}

static int no_import(void *ctx, int import, const char *request, size_t len, uint32_t cap,
                     uint64_t deadline_ms, int32_t *status, char **reply, size_t *reply_len)
{
    *status = -3;
    *reply = NULL;
    *reply_len = 0;
    return 0;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_component <spore-wasm-jail or spore binary> <runners dir>"
                        " [--calls N]\n");
        return 2;
    }
    int calls = 200;
    if (argc == 5 && strcmp(argv[3], "--calls") == 0)
        calls = atoi(argv[4]) > 0 ? atoi(argv[4]) : 200;
    setenv("SPORE_JAIL_BIN", argv[1], 1);
    char path[4096];
    snprintf(path, sizeof path, "%s/hold.wasm", argv[2]);
    size_t len = 0;
    char *module = read_all(path, &len);
    if (!module) {
        fprintf(stderr, "bench_component: cannot read %s\n", path);
        return 1;
    }
    double *t = calloc((size_t)calls, sizeof *t);
    if (!t)
        return 1;

    for (int i = 0; i < calls; i++) {
        double t0 = now_us();
        pid_t pid = fork();
        if (pid == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        waitpid(pid, NULL, 0);
        t[i] = now_us() - t0;
    }
    qsort(t, (size_t)calls, sizeof *t, cmp);
    double base = t[calls / 2];
    printf("%d calls each; hold.wasm (spore_start answers a handle at once) %zu bytes\n", calls, len);
    report("fork/exec", t, calls, 0);

    sp_jail_host host = {.import = no_import, .stop_fd = -1};
    const char *request = "{\"config\":{\"hold\":true},\"input\":{},\"run\":{\"attempt\":1,"
                          "\"effectKey\":\"inv_0\",\"invocationId\":\"inv_0\",\"nodeId\":\"job\","
                          "\"runId\":\"run_0\",\"traceparent\":null}}";
    const char *names[2] = {"instantiate", "start"};
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < calls; i++) {
            sp_jail_call call = {module, len, false, k ? "spore_start" : NULL, request,
                                 strlen(request), 10000};
            sp_jail_result r;
            double t0 = now_us();
            sp_jail_run(&call, &host, &r);
            t[i] = now_us() - t0;
            sp_jail_end want = k ? SP_JAIL_DONE : SP_JAIL_READY;
            if (r.end != want || (k && !strstr(r.response, "\"handle\""))) {
                fprintf(stderr, "bench_component: %s failed: %s: %s\n", names[k],
                        sp_jail_end_name(r.end), r.message);
                return 1;
            }
            sp_jail_result_free(&r);
        }
        report(names[k], t, calls, base);
    }
    free(t);
    free(module);
    return 0;
}
