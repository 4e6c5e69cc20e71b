/* stb_image (Debian's libstb-dev header; v2.27 on Debian 12) compiled for
   image.c: only the four formats image.h names are built (PSD, HDR, PIC,
   PNM and TGA parsers never see untrusted input), no stdio, static symbols,
   and an allocator that keeps a per-thread count of stb's live bytes and
   refuses what would pass the caller's budget. Reads go through callbacks
   so a decoder asking for bytes past the end is seen: stb pads a short
   file with zeros and may report success on a truncated JPEG, BMP or GIF.
   The header is third-party code; its warnings are not ours to fix. */
#include "image/image_stb.h"
#include "core/alloc.h"
#include <stdint.h>
#include <string.h>

typedef struct {
    size_t live, budget;
    bool over;
} stb_budget;
static _Thread_local stb_budget tl_budget;

/* Each block carries its size in a 16-byte header (keeps 16-byte alignment).
   Every byte stb gets is zeroed (grown tails of a realloc too): a hostile
   JPEG can make stb 2.27 read decoder state it never set (fuzzing found an
   out-of-bounds read in stbi__jpeg_huff_decode that only showed when a
   block held an earlier input's bytes); zeros make such reads the same on
   every run and keep their indexes in range. */
#define HDR 16
static void *cap_malloc(size_t n) {
    if (n > SIZE_MAX - HDR || tl_budget.live + n > tl_budget.budget) {
        tl_budget.over = true;
        return NULL;
    }
    uint8_t *p = mllm_calloc(1, n + HDR);
    if (!p) return NULL;
    memcpy(p, &n, sizeof n);
    tl_budget.live += n;
    return p + HDR;
}
static void cap_free(void *q) {
    if (!q) return;
    uint8_t *p = (uint8_t *)q - HDR;
    size_t n;
    memcpy(&n, p, sizeof n);
    tl_budget.live -= n;
    mllm_free(p);
}
static void *cap_realloc(void *q, size_t n) {
    if (!q) return cap_malloc(n);
    uint8_t *p = (uint8_t *)q - HDR;
    size_t old;
    memcpy(&old, p, sizeof old);
    if (n > SIZE_MAX - HDR || (n > old && tl_budget.live + (n - old) > tl_budget.budget)) {
        tl_budget.over = true;
        return NULL;
    }
    uint8_t *np = mllm_realloc(p, n + HDR);
    if (!np) return NULL;
    if (n > old) memset(np + HDR + old, 0, n - old);
    memcpy(np, &n, sizeof n);
    tl_budget.live = tl_budget.live - old + n;
    return np + HDR;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wmisleading-indentation"
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_MAX_DIMENSIONS 65535
#define STBI_MALLOC(n) cap_malloc(n)
#define STBI_REALLOC(p, n) cap_realloc(p, n)
#define STBI_FREE(p) cap_free(p)
#define STBI_ASSERT(x) ((void)0)
#include <stb/stb_image.h>
/* (no pop: "declared static but never defined" is reported at the end of the file) */

mllm_stb_info mllm_stb_probe(const uint8_t *buf, size_t len) {
    mllm_stb_info r = {0};
    if (len > INT32_MAX) {
        r.reason = "file too large for stb";
        return r;
    }
    tl_budget = (stb_budget){0, (size_t)64 << 20, false};
    r.ok = stbi_info_from_memory(buf, (int)len, &r.w, &r.h, &r.comp);
    if (r.ok) r.is16 = stbi_is_16_bit_from_memory(buf, (int)len) != 0;
    else r.reason = stbi_failure_reason();
    return r;
}

typedef struct {
    const uint8_t *p;
    size_t len, pos;
    bool past_end;
} cb_src;

static int cb_read(void *u, char *data, int size) {
    cb_src *s = u;
    size_t left = s->len - s->pos;
    size_t n = size > 0 ? (size_t)size : 0;
    if (n > left) n = left;
    if (n == 0 && size > 0) s->past_end = true;
    memcpy(data, s->p + s->pos, n);
    s->pos += n;
    return (int)n;
}
static void cb_skip(void *u, int n) {
    cb_src *s = u;
    if (n < 0) {
        size_t back = (size_t)-(int64_t)n;
        s->pos = back > s->pos ? 0 : s->pos - back;
        return;
    }
    if ((size_t)n > s->len - s->pos) {
        s->pos = s->len;
        s->past_end = true;
    } else {
        s->pos += (size_t)n;
    }
}
static int cb_eof(void *u) {
    cb_src *s = u;
    return s->pos >= s->len;
}

mllm_stb_image mllm_stb_decode(const uint8_t *buf, size_t len, size_t budget) {
    mllm_stb_image r = {0};
    if (len > INT32_MAX) {
        r.reason = "file too large for stb";
        return r;
    }
    tl_budget = (stb_budget){0, budget, false};
    cb_src src = {buf, len, 0, false};
    stbi_io_callbacks cb = {cb_read, cb_skip, cb_eof};
    int comp = 0;
    r.rgba = stbi_load_from_callbacks(&cb, &src, &r.w, &r.h, &comp, 4);
    r.read_past_end = src.past_end;
    r.over_budget = tl_budget.over;
    if (!r.rgba) r.reason = stbi_failure_reason();
    return r;
}

void mllm_stb_free(void *p) { stbi_image_free(p); }
