/*
 * detached-job.c - an example spore runner (docs/runners.md): it starts a
 * granted program as a detached job, recognises it later, and stops it.
 *
 * config: {"program": "bin/job", "args": [...], "settings": "data/settings.txt"}
 * - start: reads the settings file (a granted folder) with file_read, starts
 *   the program (a granted program) with process_start and the settings on
 *   its stdin, answers {"handle": {"process": <sealed process handle>}}.
 * - probe: process_alive on that handle: alive -> {"holder": "alive"};
 *   gone -> the step is finished: {"outcome": "ok", "output": {"finished": true}};
 *   cannot tell -> {"holder": "unknown"}.
 * - stop: TERM to the job's process group, up to 2 s for it to go, then KILL:
 *   {"stopped": true} once it is gone.
 *
 * Build (Debian's clang and lld, no libc):
 *   clang --target=wasm32 -O2 -nostdlib -mbulk-memory -fuse-ld=lld \
 *     -I include -Wl,--no-entry -Wl,--max-memory=67108864 \
 *     -o examples/runners/detached-job.wasm examples/runners/detached-job.c
 *
 * What it must never do: start anything but the configured program, or
 * signal anything but the process its own start returned.
 */
#include "spore/runner.h"

#define REPLY_CAP (1 << 20)

static char *reply;

static spore_i32 call(spore_i32 (*import)(const char *, spore_i32, char *, spore_i32),
                      const spore_buf *req)
{
    if (!reply)
        reply = (char *)spore_malloc(REPLY_CAP);
    return import(req->data, (spore_i32)req->len, reply, REPLY_CAP);
}

static spore_i64 answer(const char *text)
{
    return spore_result(text, spore_strlen(text));
}

SPORE_EXPORT(spore_start) spore_i64 spore_start(const char *req, spore_i32 len)
{
    spore_size clen = 0, plen = 0, alen = 0, slen = 0, dlen = 0;
    const char *config = spore_json_member(req, (spore_size)len, "config", &clen);
    const char *program = config ? spore_json_member(config, clen, "program", &plen) : 0;
    const char *args = config ? spore_json_member(config, clen, "args", &alen) : 0;
    const char *settings = config ? spore_json_member(config, clen, "settings", &slen) : 0;
    if (!program)
        return answer("{\"error\":{\"code\":\"job.config\",\"message\":\"config.program is "
                      "required\"},\"retryable\":false}");
    spore_buf r;
    spore_buf_init(&r, 4096 + plen + alen + REPLY_CAP);
    const char *data = 0;
    if (settings) { /* the settings file, from the granted folder */
        spore_buf_str(&r, "{\"path\":");
        spore_buf_put(&r, settings, slen);
        spore_buf_str(&r, "}");
        spore_i32 n = call(spore_file_read, &r);
        if (n < 0)
            return answer("{\"error\":{\"code\":\"job.settings\",\"message\":\"cannot read the "
                          "settings file\"},\"retryable\":false}");
        data = spore_json_member(reply, (spore_size)n, "data", &dlen);
        r.len = 0;
    }
    spore_buf_str(&r, "{\"args\":");
    if (args)
        spore_buf_put(&r, args, alen);
    else
        spore_buf_str(&r, "[]");
    spore_buf_str(&r, ",\"env\":{},\"program\":");
    spore_buf_put(&r, program, plen);
    if (data) {
        spore_buf_str(&r, ",\"stdin\":");
        spore_buf_put(&r, data, dlen);
    }
    spore_buf_str(&r, "}");
    spore_i32 n = call(spore_process_start, &r);
    if (n < 0)
        return answer("{\"error\":{\"code\":\"job.spawn\",\"message\":\"the job could not be "
                      "started\"},\"retryable\":true}");
    spore_log_str(1, "detached-job: the job started");
    spore_buf out;
    spore_buf_init(&out, (spore_size)n + 64);
    spore_buf_str(&out, "{\"handle\":{\"process\":");
    spore_buf_put(&out, reply, (spore_size)n);
    spore_buf_str(&out, "}}");
    return spore_buf_result(&out);
}

/* {"handle": <process handle>[, "signal": "<sig>"]} */
static void handle_request(spore_buf *r, const char *req, spore_i32 len, const char *signal)
{
    spore_size hlen = 0, plen = 0;
    const char *handle = spore_json_member(req, (spore_size)len, "handle", &hlen);
    const char *process = handle ? spore_json_member(handle, hlen, "process", &plen) : 0;
    spore_buf_init(r, plen + 64);
    spore_buf_str(r, "{\"handle\":");
    if (process)
        spore_buf_put(r, process, plen);
    else
        spore_buf_str(r, "null");
    if (signal) {
        spore_buf_str(r, ",\"signal\":\"");
        spore_buf_str(r, signal);
        spore_buf_str(r, "\"");
    }
    spore_buf_str(r, "}");
}

/* 1 alive, 0 gone, -1 cannot tell */
static int alive(const char *req, spore_i32 len)
{
    spore_buf r;
    handle_request(&r, req, len, 0);
    spore_i32 n = call(spore_process_alive, &r);
    spore_size vlen = 0;
    const char *v = n > 0 ? spore_json_member(reply, (spore_size)n, "alive", &vlen) : 0;
    if (v && vlen == 4 && v[0] == 't')
        return 1;
    if (v && vlen == 5 && v[0] == 'f')
        return 0;
    return -1;
}

SPORE_EXPORT(spore_probe) spore_i64 spore_probe(const char *req, spore_i32 len)
{
    switch (alive(req, len)) {
    case 1: return answer("{\"holder\":\"alive\"}");
    case 0: return answer("{\"outcome\":\"ok\",\"output\":{\"finished\":true}}");
    default: return answer("{\"holder\":\"unknown\"}");
    }
}

SPORE_EXPORT(spore_stop) spore_i64 spore_stop(const char *req, spore_i32 len)
{
    static const char *const signals[] = {"TERM", "KILL"};
    for (int s = 0; s < 2; s++) {
        if (alive(req, len) == 0)
            return answer("{\"stopped\":true}");
        spore_buf r;
        handle_request(&r, req, len, signals[s]);
        call(spore_process_signal, &r);
        for (int i = 0; i < 20 && alive(req, len) != 0; i++) {
            static const char wait[] = "{\"ms\":100}";
            spore_sleep_ms(wait, sizeof wait - 1, reply, REPLY_CAP);
        }
    }
    return answer(alive(req, len) == 0 ? "{\"stopped\":true}" : "{\"stopped\":false}");
}
