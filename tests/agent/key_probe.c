/*
 * key_probe.c - the key canary's eyes inside the sandbox (agent-providers.md
 * §3, §4): run by the `run` tool of a real-provider step, it looks for the
 * provider key in every file it can read (/proc, /sys, /dev and the host's read-only /usr aside), in
 * every process's environment and arguments (/proc/<pid>/environ and
 * cmdline, which the PID namespace limits to the sandbox), and reports the
 * counts. A control string the test planted in a writable file must be
 * found, so a blind probe cannot pass.
 *
 * usage: key_probe <key XOR 0x5a, hex> <control XOR 0x5a, hex>
 * (masked, so neither value is itself in this process's arguments).
 * Output: "key files=F env=E args=A control files=C scanned=N".
 *
 * Must never follow a symlink, or print either value.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_MAX (16 * 1024 * 1024)

typedef struct needle {
    char *v;
    size_t len;
    unsigned files, env, args;
} needle;

static needle key, control;
static unsigned scanned;

static bool unmask(const char *hex, needle *n)
{
    size_t len = strlen(hex) / 2;
    n->v = malloc(len + 1);
    for (size_t i = 0; n->v && i < len; i++) {
        unsigned b;
        if (sscanf(hex + 2 * i, "%2x", &b) != 1)
            return false;
        n->v[i] = (char)(b ^ 0x5a);
    }
    n->len = len;
    return n->v && len > 0;
}

static char *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    char *buf = malloc(FILE_MAX);
    size_t n = 0;
    ssize_t r;
    while (buf && n < FILE_MAX && (r = read(fd, buf + n, FILE_MAX - n)) > 0)
        n += (size_t)r;
    close(fd);
    *len = n;
    return buf;
}

static bool has(const char *buf, size_t len, const needle *n)
{
    return memmem(buf, len, n->v, n->len) != NULL;
}

static void scan_file(const char *path)
{
    size_t len;
    char *buf = slurp(path, &len);
    if (!buf)
        return;
    scanned++;
    key.files += has(buf, len, &key);
    control.files += has(buf, len, &control);
    free(buf);
}

static void walk(const char *dir, int depth)
{
    DIR *d = depth < 40 ? opendir(dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name);
        if (strcmp(path, "/proc") == 0 || strcmp(path, "/sys") == 0 || strcmp(path, "/dev") == 0 ||
            strcmp(path, "/usr") == 0) /* the host's system files, read-only */
            continue;
        struct stat st;
        if (lstat(path, &st))
            continue;
        if (S_ISDIR(st.st_mode))
            walk(path, depth + 1);
        else if (S_ISREG(st.st_mode))
            scan_file(path);
    }
    if (d)
        closedir(d);
}

static void scan_processes(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300];
        size_t len;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        char *buf = slurp(path, &len);
        if (buf)
            key.env += has(buf, len, &key);
        free(buf);
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        buf = slurp(path, &len);
        if (buf)
            key.args += has(buf, len, &key);
        free(buf);
    }
    if (d)
        closedir(d);
}

int main(int argc, char **argv)
{
    if (argc != 3 || !unmask(argv[1], &key) || !unmask(argv[2], &control)) {
        fprintf(stderr, "usage: key_probe <masked key hex> <masked control hex>\n");
        return 2;
    }
    walk("/", 0);
    scan_processes();
    printf("key files=%u env=%u args=%u control files=%u scanned=%u\n", key.files, key.env,
           key.args, control.files, scanned);
    return 0;
}
