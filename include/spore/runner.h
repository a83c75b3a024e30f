/*
 * spore/runner.h - writing spore runners in C (runners.md §3, the world
 * spore:runner@0.1). Header-only; for clang --target=wasm32, no libc:
 *
 *   clang --target=wasm32 -O2 -nostdlib -mbulk-memory -Wl,--no-entry \
 *         -Wl,--max-memory=1048576 -o my-runner.wasm my-runner.c
 *
 * What it is for: the exact imports of the world (process_start, ...,
 * log), the four exports a runner defines (SPORE_EXPORT), a bump allocator
 * behind spore_alloc, and small helpers for the JSON that crosses the
 * boundary: finding a member's raw value in canonical JSON, comparing a
 * JSON string, and building a response in a buffer.
 *
 * A runner defines spore_start, spore_probe and spore_stop with
 * SPORE_EXPORT and includes this header once (it defines spore_alloc and
 * memory helpers). Every entry point receives the request JSON (ptr, len)
 * and returns spore_result(ptr, len) of its response JSON.
 *
 * What it must never do: assume a reply fits (imports return -1 when the
 * buffer is too small, -2 for a malformed request, -3 when the operation
 * failed), or parse JSON that is not canonical with these helpers (the
 * host always sends canonical JSON: no whitespace, sorted keys).
 */
#ifndef SPORE_RUNNER_H
#define SPORE_RUNNER_H

#define SPORE_RUNNER_WORLD "spore:runner@0.1"

typedef unsigned int spore_u32;
typedef int spore_i32;
typedef long long spore_i64;
typedef unsigned long long spore_u64;
typedef unsigned long spore_size;

#define SPORE_IMPORT(name) \
    __attribute__((import_module("spore:runner/host@0.1"), import_name(#name)))
#define SPORE_EXPORT(name) __attribute__((export_name(#name)))

/* ---- host imports: request JSON (ptr, len), reply into (out, cap) ---- */
SPORE_IMPORT(process_start) spore_i32 spore_process_start(const char *req, spore_i32 len, char *out, spore_i32 cap);
SPORE_IMPORT(process_alive) spore_i32 spore_process_alive(const char *req, spore_i32 len, char *out, spore_i32 cap);
SPORE_IMPORT(process_signal) spore_i32 spore_process_signal(const char *req, spore_i32 len, char *out, spore_i32 cap);
SPORE_IMPORT(socket_request) spore_i32 spore_socket_request(const char *req, spore_i32 len, char *out, spore_i32 cap);
SPORE_IMPORT(sleep_ms) spore_i32 spore_sleep_ms(const char *req, spore_i32 len, char *out, spore_i32 cap);
SPORE_IMPORT(file_read) spore_i32 spore_file_read(const char *req, spore_i32 len, char *out, spore_i32 cap);
SPORE_IMPORT(dir_list) spore_i32 spore_dir_list(const char *req, spore_i32 len, char *out, spore_i32 cap);
SPORE_IMPORT(log) void spore_log(spore_i32 level, const char *text, spore_i32 len);

#define SPORE_REPLY_TOO_SMALL (-1)
#define SPORE_REPLY_MALFORMED (-2)
#define SPORE_REPLY_FAILED (-3)

/* (ptr << 32) | len: what every entry point returns. */
static inline spore_i64 spore_result(const char *ptr, spore_size len)
{
    return (spore_i64)(((spore_u64)(spore_u32)(spore_size)ptr << 32) | (spore_u32)len);
}

/* ---- memory: a bump allocator over the module's linear memory ---- */
extern unsigned char __heap_base;
static unsigned char *spore_heap_top;

static inline void *spore_malloc(spore_size n)
{
    if (!spore_heap_top)
        spore_heap_top = &__heap_base;
    spore_size at = ((spore_size)spore_heap_top + 7u) & ~(spore_size)7u;
    spore_size end = at + n;
    spore_size have = __builtin_wasm_memory_size(0) * 65536u;
    if (end > have) {
        spore_size pages = (end - have + 65535u) / 65536u;
        if (__builtin_wasm_memory_grow(0, pages) == (spore_size)-1)
            return 0;
    }
    spore_heap_top = (unsigned char *)end;
    return (void *)at;
}

SPORE_EXPORT(spore_alloc) void *spore_alloc(spore_i32 size)
{
    return size < 0 ? 0 : spore_malloc((spore_size)size);
}

static inline void spore_copy(void *dst, const void *src, spore_size n)
{
    __builtin_memcpy(dst, src, n);
}

static inline int spore_memeq(const void *a, const void *b, spore_size n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (spore_size i = 0; i < n; i++)
        if (x[i] != y[i])
            return 0;
    return 1;
}

static inline spore_size spore_strlen(const char *s)
{
    spore_size n = 0;
    while (s[n])
        n++;
    return n;
}

/* ---- reading canonical JSON ---- */

/* The end of the value starting at p (one past it), or 0. */
static inline const char *spore_json_skip(const char *p, const char *end)
{
    if (p >= end)
        return 0;
    if (*p == '"') {
        for (p++; p < end; p++) {
            if (*p == '\\')
                p++;
            else if (*p == '"')
                return p + 1;
        }
        return 0;
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        for (; p < end; p++) {
            if (*p == '"') {
                p = spore_json_skip(p, end);
                if (!p)
                    return 0;
                p--;
            } else if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
        }
        return 0;
    }
    while (p < end && *p != ',' && *p != '}' && *p != ']')
        p++;
    return p;
}

/* The raw value of member `name` of the object json[0..len), or 0. */
static inline const char *spore_json_member(const char *json, spore_size len, const char *name,
                                            spore_size *vlen)
{
    const char *p = json, *end = json + len;
    spore_size n = spore_strlen(name);
    if (p >= end || *p != '{')
        return 0;
    p++;
    while (p < end && *p == '"') {
        const char *key = p + 1, *kend = spore_json_skip(p, end);
        if (!kend || kend >= end || *kend != ':')
            return 0;
        const char *v = kend + 1, *vend = spore_json_skip(v, end);
        if (!vend)
            return 0;
        if ((spore_size)(kend - 1 - key) == n && spore_memeq(key, name, n)) {
            *vlen = (spore_size)(vend - v);
            return v;
        }
        p = vend;
        if (p < end && *p == ',')
            p++;
    }
    return 0;
}

/* True when the raw JSON value v[0..len) is the string `s` (no escapes). */
static inline int spore_json_is(const char *v, spore_size len, const char *s)
{
    spore_size n = spore_strlen(s);
    return v && len == n + 2 && v[0] == '"' && spore_memeq(v + 1, s, n);
}

/* ---- building a response ---- */

typedef struct spore_buf {
    char *data;
    spore_size len, cap;
} spore_buf;

static inline void spore_buf_init(spore_buf *b, spore_size cap)
{
    b->data = (char *)spore_malloc(cap);
    b->len = 0;
    b->cap = b->data ? cap : 0;
}

static inline void spore_buf_put(spore_buf *b, const char *s, spore_size n)
{
    if (b->len + n > b->cap)
        n = b->cap - b->len; /* cut: the host refuses malformed JSON */
    spore_copy(b->data + b->len, s, n);
    b->len += n;
}

static inline void spore_buf_str(spore_buf *b, const char *s)
{
    spore_buf_put(b, s, spore_strlen(s));
}

static inline spore_i64 spore_buf_result(const spore_buf *b)
{
    return spore_result(b->data, b->len);
}

/* A log line (level 0 debug .. 3 error). */
static inline void spore_log_str(spore_i32 level, const char *s)
{
    spore_log(level, s, (spore_i32)spore_strlen(s));
}

#endif
