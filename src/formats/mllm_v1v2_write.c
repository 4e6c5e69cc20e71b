/* Writers of MLLM's v1 and v2 layouts (for tests and interop), written
   atomically (core/atomic_write.h). v1 packs the data with no alignment, as MLLM's does; v2
   aligns each tensor to 64 bytes. */
#include "formats/mllm_v1v2.h"
#include "core/alloc.h"
#include "core/atomic_write.h"
#include "core/error.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Writes buf (len bytes) atomically to path. */
static mllm_status commit(const char *path, const uint8_t *buf, size_t len) {
    mllm_atomic_file af;
    mllm_status st = mllm_atomic_open(&af, path);
    if (st) return st;
    if (fwrite(buf, 1, len, af.f) != len) st = mllm_err(MLLM_ERR_IO, "%s: write failed: %s", af.tmp, strerror(errno));
    return mllm_atomic_commit(&af, st);
}

mllm_status mllm_v1_write(const char *path, const mllm_v1v2_tensor *t, size_t n) {
    uint64_t index = 0, data = 0;
    for (size_t i = 0; i < n; i++) {
        index += 4 + strlen(t[i].name) + 20;
        data += t[i].size;
    }
    size_t len = (size_t)(12 + index + data);
    uint8_t *buf = mllm_calloc(1, len);
    if (!buf) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    put32(buf, MLLM_V1_MAGIC);
    put64(buf + 4, index);
    uint8_t *e = buf + 12;
    uint64_t off = 12 + index;
    for (size_t i = 0; i < n; i++) {
        uint32_t nl = (uint32_t)strlen(t[i].name);
        put32(e, nl);
        memcpy(e + 4, t[i].name, nl);
        put64(e + 4 + nl, t[i].size);
        put64(e + 12 + nl, off);
        put32(e + 20 + nl, (uint32_t)t[i].code);
        e += 24 + nl;
        memcpy(buf + off, t[i].data, t[i].size);
        off += t[i].size;
    }
    mllm_status st = commit(path, buf, len);
    mllm_free(buf);
    return st;
}

mllm_status mllm_v2_write(const char *path, const char *model_name, const mllm_v1v2_tensor *t, size_t n) {
    uint64_t table = MLLM_V2_HEADER_BYTES, data = (table + (uint64_t)n * MLLM_V2_RECORD_BYTES + 63) / 64 * 64;
    uint64_t end = data;
    for (size_t i = 0; i < n; i++) end = (end + 63) / 64 * 64 + t[i].size;
    uint8_t *buf = mllm_calloc(1, (size_t)end);
    if (!buf) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", path);
    put32(buf, MLLM_V2_MAGIC);
    put32(buf + 4, 2);
    snprintf((char *)buf + 8, 512, "%s", model_name ? model_name : "");
    put32(buf + 520, (uint32_t)n);
    put64(buf + 524, table);
    uint64_t off = data;
    for (size_t i = 0; i < n; i++) {
        uint8_t *r = buf + table + i * MLLM_V2_RECORD_BYTES;
        off = (off + 63) / 64 * 64;
        put32(r, (uint32_t)i);
        put32(r + 4, (uint32_t)t[i].code);
        put64(r + 8, t[i].size);
        put64(r + 16, off);
        put64(r + 24, (uint64_t)t[i].n_dims);
        for (int d = 0; d < t[i].n_dims; d++) put32(r + 32 + 4 * d, (uint32_t)t[i].ne[t[i].n_dims - 1 - d]);
        snprintf((char *)r + 96, MLLM_V2_NAME_BYTES, "%s", t[i].name);
        memcpy(buf + off, t[i].data, t[i].size);
        off += t[i].size;
    }
    mllm_status st = commit(path, buf, (size_t)end);
    mllm_free(buf);
    return st;
}
