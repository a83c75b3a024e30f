/*
 * agent_fixture.c - helper for the agent fixtures (tests/fixtures/agent/).
 *
 *   agent_fixture gen <recipe.json> <out>   materialize a generated file
 *   agent_fixture replay <case-dir>          act as a step CLI replaying a case
 *
 * Recipes keep large fixtures small in the repository: a JSON object
 * {"parts": [...]} whose parts are {"text": s}, {"repeat": s, "count": n}
 * or {"events": {"stepId": s, "until": n, "text": s?}} (valid event lines,
 * seq 1, 2, ..., until the file holds n bytes; the last line is cut there).
 *
 * replay reads the request from stdin, copies the case's result.json (if
 * any) into the request's runDir, writes the case's stdout to stdout and its
 * stderr (without a leading step-pid line: the wrapper writes its own) to
 * stderr, then ends as the case's `exit` file says: a code, signal:N, or
 * lost-stream (exit 255, the exec transport's lost-stream code in tests).
 *
 * Must never change a fixture file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            char *b = realloc(buf, cap * 2 + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

typedef struct sink {
    int fd;
    size_t written;
    size_t stop_at; /* 0 = none */
    bool ok;
} sink;

static void put(sink *s, const char *p, size_t n)
{
    if (!s->ok)
        return;
    if (s->stop_at && s->written + n > s->stop_at)
        n = s->stop_at - s->written;
    if (n && !write_all(s->fd, p, n))
        s->ok = false;
    s->written += n;
}

static int generate(const char *recipe_path, int fd)
{
    json_error_t je;
    json_t *recipe = json_load_file(recipe_path, 0, &je);
    if (!recipe) {
        fprintf(stderr, "agent_fixture: %s: %s\n", recipe_path, je.text);
        return 1;
    }
    sink s = {fd, 0, 0, true};
    size_t i;
    json_t *part;
    json_array_foreach(json_object_get(recipe, "parts"), i, part)
    {
        const char *text = json_string_value(json_object_get(part, "text"));
        const char *rep = json_string_value(json_object_get(part, "repeat"));
        json_t *ev = json_object_get(part, "events");
        if (text) {
            put(&s, text, strlen(text));
        } else if (rep) {
            json_int_t count = json_integer_value(json_object_get(part, "count"));
            size_t len = strlen(rep);
            char block[65536];
            size_t per = len && len <= sizeof block ? sizeof block / len : 0;
            for (size_t k = 0; k < per && k < (size_t)count; k++)
                memcpy(block + k * len, rep, len);
            for (json_int_t done = 0; done < count && s.ok;) {
                size_t n = per && (size_t)(count - done) > per ? per : (size_t)(count - done);
                if (per)
                    put(&s, block, n * len);
                else
                    put(&s, rep, len), n = 1;
                done += (json_int_t)n;
            }
        } else if (ev) {
            const char *step = json_string_value(json_object_get(ev, "stepId"));
            const char *t = json_string_value(json_object_get(ev, "text"));
            size_t until = (size_t)json_integer_value(json_object_get(ev, "until"));
            s.stop_at = until;
            char line[1024];
            for (unsigned long long seq = 1; s.ok && s.written < until; seq++) {
                int n = snprintf(line, sizeof line,
                                 "{\"v\":1,\"type\":\"event\",\"stepId\":\"%s\",\"seq\":%llu,"
                                 "\"ts\":\"2025-01-01T00:00:00.000Z\",\"kind\":\"thinking\","
                                 "\"data\":{\"text\":\"%s\"}}\n",
                                 step ? step : "step", seq, t ? t : "working");
                put(&s, line, (size_t)n);
            }
            s.stop_at = 0;
        }
    }
    json_decref(recipe);
    return s.ok ? 0 : 1;
}

static int cmd_gen(const char *recipe, const char *out)
{
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror(out);
        return 1;
    }
    int rc = generate(recipe, fd);
    close(fd);
    return rc;
}

/* stdout of a case: the file, or its recipe. */
static void replay_stdout(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/stdout.gen.json", dir);
    if (access(path, R_OK) == 0) {
        generate(path, 1);
        return;
    }
    snprintf(path, sizeof path, "%s/stdout", dir);
    size_t n;
    char *data = slurp(path, &n);
    if (data)
        write_all(1, data, n);
    free(data);
}

static void replay_stderr(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/stderr", dir);
    size_t n;
    char *data = slurp(path, &n);
    if (!data)
        return;
    const char *p = data;
    if (strncmp(p, "step-pid=", 9) == 0) {
        const char *lf = memchr(p, '\n', n);
        if (lf) {
            n -= (size_t)(lf + 1 - p);
            p = lf + 1;
        }
    }
    write_all(2, p, n);
    free(data);
}

static void copy_result(const char *dir)
{
    char path[4096];
    size_t n;
    char *req = slurp("/dev/stdin", &n);
    json_t *r = req ? json_loadb(req, n, 0, NULL) : NULL;
    free(req);
    const char *run_dir = json_string_value(json_object_get(r, "runDir"));
    snprintf(path, sizeof path, "%s/result.json", dir);
    size_t len;
    char *data = slurp(path, &len);
    if (!data) { /* maybe a recipe */
        char recipe[4096], out[4200];
        snprintf(recipe, sizeof recipe, "%s/result.json.gen.json", dir);
        if (run_dir && access(recipe, R_OK) == 0) {
            mkdir(run_dir, 0700);
            snprintf(out, sizeof out, "%s/result.json", run_dir);
            cmd_gen(recipe, out);
        }
    } else if (run_dir) {
        mkdir(run_dir, 0700);
        char out[4200];
        snprintf(out, sizeof out, "%s/result.json", run_dir);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            write_all(fd, data, len);
            close(fd);
        }
    }
    free(data);
    json_decref(r);
}

static int cmd_replay(const char *dir)
{
    signal(SIGPIPE, SIG_IGN);
    copy_result(dir);
    replay_stdout(dir);
    replay_stderr(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/exit", dir);
    size_t n;
    char *how = slurp(path, &n);
    if (!how)
        return 99;
    int rc = 0;
    if (strncmp(how, "signal:", 7) == 0) {
        int sig = atoi(how + 7);
        signal(sig, SIG_DFL);
        raise(sig);
        rc = 98;
    } else if (strncmp(how, "lost-stream", 11) == 0) {
        rc = 255;
    } else {
        rc = atoi(how);
    }
    free(how);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "gen") == 0)
        return cmd_gen(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "replay") == 0)
        return cmd_replay(argv[2]);
    fprintf(stderr, "usage: agent_fixture gen <recipe.json> <out> | replay <case-dir>\n");
    return 2;
}
