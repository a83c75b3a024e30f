/*
 * agent_probe.c - a step CLI for the sandbox tests (A5): it speaks the
 * protocol, tries to get out of the sandbox in every way the test names,
 * and reports what it managed as structured output.
 *
 * usage: agent_probe <home-file> <outside-file> <writable-file> <host-pid> <port>
 *                    [<marker-to-write-in-work-root> | -] [<marker-to-look-for> | -]
 *
 * Output members (each a string: "ok" or the errno name): readHome (open and
 * read a file of the user's home), listHome (opendir of its directory),
 * writeOutside (create <outside-file>), writeRoot, writeUsr, writeEtc,
 * writeWorkRoot (beside the run directory), writeRunDir, writeTmp,
 * writeWritable (<writable-file>, which the action grants), connect (TCP to
 * 127.0.0.1:<port> on the host), hostPidVisible ("yes"/"no"), processes (the
 * number of PIDs in /proc), sawMarker ("yes"/"no"), extraFds (how many
 * descriptors above 2 it inherited: the pinned grants bwrap mounted must
 * not be among them, an O_PATH descriptor of a directory would lead out).
 *
 * Must never write anything on stdout but protocol records.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static const char *err_name(int e) { return e ? strerrorname_np(e) : "ok"; }

static const char *try_read(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return err_name(errno);
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    int e = n < 0 ? errno : 0;
    close(fd);
    return err_name(e);
}

static const char *try_list(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir)
        *slash = '\0';
    DIR *d = opendir(dir);
    if (!d)
        return err_name(errno);
    closedir(d);
    return "ok";
}

static const char *try_write(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return err_name(errno);
    int e = write(fd, "escaped\n", 8) == 8 ? 0 : errno;
    close(fd);
    return err_name(e);
}

static const char *try_connect(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return err_name(errno);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(s, (struct sockaddr *)&a, sizeof a);
    int e = rc ? errno : 0;
    close(s);
    return err_name(e);
}

static int processes(void)
{
    DIR *d = opendir("/proc");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] >= '1' && e->d_name[0] <= '9';
    if (d)
        closedir(d);
    return n;
}

static int extra_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += atoi(e->d_name) > 2 && atoi(e->d_name) != dirfd(d);
    if (d)
        closedir(d);
    return n;
}

static void line(json_t *rec)
{
    char *t = json_dumps(rec, JSON_COMPACT);
    printf("%s\n", t);
    fflush(stdout);
    free(t);
    json_decref(rec);
}

int main(int argc, char **argv)
{
    if (argc < 6)
        return 3;
    int inherited = extra_fds(); /* before this program opens anything */
    char req[1 << 16];
    size_t n = fread(req, 1, sizeof req - 1, stdin);
    req[n] = '\0';
    json_t *r = json_loads(req, 0, NULL);
    const char *step = json_string_value(json_object_get(r, "stepId"));
    const char *run_dir = json_string_value(json_object_get(r, "runDir"));
    if (!step || !run_dir)
        return 2;
    line(json_pack("{s:i,s:s,s:s}", "v", 1, "type", "start", "stepId", step));
    char path[4200], host_pid[64];
    json_t *out = json_object();
    json_object_set_new(out, "readHome", json_string(try_read(argv[1])));
    json_object_set_new(out, "listHome", json_string(try_list(argv[1])));
    json_object_set_new(out, "writeOutside", json_string(try_write(argv[2])));
    json_object_set_new(out, "writeRoot", json_string(try_write("/probe")));
    json_object_set_new(out, "writeUsr", json_string(try_write("/usr/probe")));
    json_object_set_new(out, "writeEtc", json_string(try_write("/etc/probe")));
    snprintf(path, sizeof path, "%s/../probe-beside", run_dir);
    json_object_set_new(out, "writeWorkRoot", json_string(try_write(path)));
    snprintf(path, sizeof path, "%s/probe", run_dir);
    json_object_set_new(out, "writeRunDir", json_string(try_write(path)));
    json_object_set_new(out, "writeTmp", json_string(try_write("/tmp/spore-probe-tmp")));
    json_object_set_new(out, "writeWritable", json_string(try_write(argv[3])));
    json_object_set_new(out, "connect", json_string(try_connect(atoi(argv[5]))));
    snprintf(host_pid, sizeof host_pid, "/proc/%s", argv[4]);
    json_object_set_new(out, "hostPidVisible", json_string(access(host_pid, F_OK) == 0 ? "yes" : "no"));
    json_object_set_new(out, "processes", json_integer(processes()));
    json_object_set_new(out, "extraFds", json_integer(inherited));
    if (argc > 6 && strcmp(argv[6], "-") != 0) {
        snprintf(path, sizeof path, "%s/../%s", run_dir, argv[6]);
        try_write(path);
    }
    if (argc > 7 && strcmp(argv[7], "-") != 0) {
        snprintf(path, sizeof path, "%s/../%s", run_dir, argv[7]);
        json_object_set_new(out, "sawMarker", json_string(access(path, F_OK) == 0 ? "yes" : "no"));
    }
    json_object_set_new(out, "success", json_true());
    json_object_set_new(out, "summary", json_string("probed"));
    line(json_pack("{s:i,s:s,s:s,s:i,s:o}", "v", 1, "type", "result", "stepId", step, "status",
                   200, "body", out));
    json_decref(r);
    return 0;
}
