/*
 * snapshot.c - the canonical bytes of a run state, encoded once per
 * transition (kernel.md §7.4, step-path.md §5). With a memo - kept in the
 * host's sp_kernel_state between transitions - the members of the two maps
 * that grow with the workflow, `nodes` (one record per node that ran) and
 * `visits`, are encoded once and remembered in canonical key order; a later
 * transition re-encodes only the members whose value changed and copies the
 * others, so a step of a 250-node run does not sort and re-encode 250
 * records.
 *
 * Must never produce a byte that sp_json_encode() of the same state would
 * not. A remembered member is reused only when its key and its value - the
 * same object, a reference held so that its address cannot be reused - are
 * those it was encoded from; that is enough because the kernel never
 * mutates a node record or a visit count in place, it replaces them
 * (transition.c, obj_set). The order in which a map is walked decides only
 * what is re-encoded, never the output. A failure (depth, memory) gives no
 * bytes: the caller clears the memo and asks the plain encoder, whose error
 * is the result.
 */
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "kernel/internal.h"

static void member_free(kmemo_member *e)
{
    free(e->key);
    json_decref(e->value);
    free(e->bytes);
}

static void map_clear(kmemo_map *m)
{
    for (size_t i = 0; i < m->n; i++)
        member_free(&m->m[i]);
    free(m->m);
    free(m->order);
    memset(m, 0, sizeof *m);
}

void kmemo_clear(kmemo *memo)
{
    map_clear(&memo->nodes);
    map_clear(&memo->visits);
    memo->last_len = 0;
}

/* (Re-)encode `"key":value` of a map nested at depth 1 into `e`. */
static int member_set(kmemo_member *e, const char *key, size_t klen, json_t *value,
                      sp_error *err)
{
    sp_buf b = SP_BUF_INIT;
    if (sp_json_encode_member(key, klen, value, 1, &b, err)) {
        sp_buf_free(&b);
        return -1;
    }
    free(e->bytes);
    e->bytes = sp_buf_take(&b, &e->len);
    json_incref(value);
    json_decref(e->value);
    e->value = value;
    return 0;
}

/* A member the memo does not know yet: last in walk order, placed in key
 * order by binary search. */
static int map_append(kmemo_map *m, const char *key, size_t klen, json_t *value, sp_error *err)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 16;
        kmemo_member *mm = realloc(m->m, cap * sizeof *mm);
        if (!mm)
            return sp_oom(err);
        m->m = mm;
        size_t *order = realloc(m->order, cap * sizeof *order);
        if (!order)
            return sp_oom(err);
        m->order = order;
        m->cap = cap;
    }
    kmemo_member *e = &m->m[m->n];
    memset(e, 0, sizeof *e);
    if (!(e->key = malloc(klen + 1)))
        return sp_oom(err);
    memcpy(e->key, key, klen);
    e->key[klen] = '\0';
    e->klen = klen;
    if (member_set(e, key, klen, value, err)) {
        member_free(e);
        return -1;
    }
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const kmemo_member *x = &m->m[m->order[mid]];
        if (sp_json_key_cmp(x->key, x->klen, key, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    memmove(&m->order[lo + 1], &m->order[lo], (m->n - lo) * sizeof *m->order);
    m->order[lo] = m->n;
    m->n++;
    return 0;
}

/* Walk `obj` against the memo: 0 when it now matches, 1 when a member was
 * removed or the walk order changed (start again from empty), -1 on error. */
static int map_walk(kmemo_map *m, const json_t *obj, sp_error *err)
{
    size_t i = 0;
    for (void *it = json_object_iter((json_t *)obj); it;
         it = json_object_iter_next((json_t *)obj, it), i++) {
        const char *key = json_object_iter_key(it);
        size_t klen = json_object_iter_key_len(it);
        json_t *v = json_object_iter_value(it);
        if (i < m->n) {
            kmemo_member *e = &m->m[i];
            if (e->klen != klen || (klen && e->key[0] != key[0]) ||
                memcmp(e->key, key, klen) != 0)
                return 1;
            if (e->value != v && member_set(e, key, klen, v, err))
                return -1;
        } else if (map_append(m, key, klen, v, err)) {
            return -1;
        }
    }
    return i == m->n ? 0 : 1;
}

static int map_encode(kmemo_map *m, const json_t *obj, sp_buf *out, sp_error *err)
{
    int rc = map_walk(m, obj, err);
    if (rc == 1) {
        map_clear(m);
        rc = map_walk(m, obj, err);
    }
    if (rc)
        return -1;
    size_t total = 2 + (m->n ? m->n - 1 : 0); /* braces and commas */
    for (size_t i = 0; i < m->n; i++)
        total += m->m[i].len;
    char *p = sp_buf_extend(out, total);
    if (!p)
        return sp_oom(err);
    *p++ = '{';
    for (size_t i = 0; i < m->n; i++) {
        const kmemo_member *e = &m->m[m->order[i]];
        if (i)
            *p++ = ',';
        memcpy(p, e->bytes, e->len);
        p += e->len;
    }
    *p = '}';
    return 0;
}

static bool key_is(const sp_json_member *m, const char *lit)
{
    size_t n = strlen(lit);
    return m->len == n && memcmp(m->key, lit, n) == 0;
}

char *ksnapshot_encode(const json_t *state, kmemo *memo, size_t *len, sp_error *err)
{
    if (!memo || !json_is_object(state))
        return sp_json_encode_alloc(state, len, err);
    bool oom;
    size_t n = json_object_size(state);
    sp_json_member *top = sp_json_sorted_members(state, &oom);
    if (!top) {
        if (oom)
            sp_oom(err);
        return oom ? NULL : sp_json_encode_alloc(state, len, err);
    }
    sp_buf b = SP_BUF_INIT;
    sp_buf_reserve(&b, memo->last_len + 1024); /* about the last snapshot's size: no regrowth */
    int rc = 0;
    sp_buf_append_char(&b, '{');
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i)
            sp_buf_append_char(&b, ',');
        kmemo_map *map = key_is(&top[i], "nodes")    ? &memo->nodes
                         : key_is(&top[i], "visits") ? &memo->visits
                                                     : NULL;
        if (map && json_is_object(top[i].value)) {
            /* the two keys need no escape */
            sp_buf_append_char(&b, '"');
            sp_buf_append(&b, top[i].key, top[i].len);
            sp_buf_append(&b, "\":", 2);
            rc = map_encode(map, top[i].value, &b, err);
        } else {
            rc = sp_json_encode_member(top[i].key, top[i].len, top[i].value, 0, &b, err);
        }
    }
    sp_buf_append_char(&b, '}');
    free(top);
    if (rc == 0 && !sp_buf_ok(&b))
        rc = sp_oom(err);
    if (rc) {
        sp_buf_free(&b);
        return NULL;
    }
    memo->last_len = b.len;
    return sp_buf_take(&b, len);
}
