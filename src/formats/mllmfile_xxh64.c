/* xxHash64 (seed 0), written from the algorithm's published specification
   (xxhash.com, "xxHash fast digest algorithm", XXH64). Streaming, so the
   writer can hash a tensor while it is produced row by row. */
#include "formats/mllmfile.h"
#include <string.h>

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

static inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Little-endian loads (the format is little-endian; so is every target). */
static inline uint64_t rd64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t rd32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t in) {
    acc += in * P2;
    acc = rotl(acc, 31);
    return acc * P1;
}

static inline uint64_t merge(uint64_t acc, uint64_t v) {
    acc ^= round64(0, v);
    return acc * P1 + P4;
}

void mllm_xxh64_init(mllm_xxh64_state *s) {
    memset(s, 0, sizeof *s);
    s->v[0] = P1 + P2;
    s->v[1] = P2;
    s->v[2] = 0;
    s->v[3] = (uint64_t)0 - P1;
}

/* The hot loop of `mllm info --verify`: 32-byte stripes, four lanes. */
static void stripes(uint64_t v[4], const uint8_t *p, size_t n_stripes) {
    uint64_t a = v[0], b = v[1], c = v[2], d = v[3];
    for (size_t i = 0; i < n_stripes; i++, p += 32) {
        a = round64(a, rd64(p));
        b = round64(b, rd64(p + 8));
        c = round64(c, rd64(p + 16));
        d = round64(d, rd64(p + 24));
    }
    v[0] = a, v[1] = b, v[2] = c, v[3] = d;
}

void mllm_xxh64_update(mllm_xxh64_state *s, const void *data, size_t n) {
    const uint8_t *p = data;
    s->total += n;
    if (s->n_buf) {
        size_t take = 32 - s->n_buf < n ? 32 - s->n_buf : n;
        memcpy(s->buf + s->n_buf, p, take);
        s->n_buf += (uint32_t)take;
        p += take;
        n -= take;
        if (s->n_buf < 32) return;
        stripes(s->v, s->buf, 1);
        s->n_buf = 0;
    }
    stripes(s->v, p, n / 32);
    p += n / 32 * 32;
    n %= 32;
    memcpy(s->buf, p, n);
    s->n_buf = (uint32_t)n;
}

uint64_t mllm_xxh64_digest(const mllm_xxh64_state *s) {
    uint64_t h;
    if (s->total >= 32) {
        h = rotl(s->v[0], 1) + rotl(s->v[1], 7) + rotl(s->v[2], 12) + rotl(s->v[3], 18);
        for (int i = 0; i < 4; i++) h = merge(h, s->v[i]);
    } else {
        h = P5; /* seed + P5 */
    }
    h += s->total;
    const uint8_t *p = s->buf;
    size_t n = s->n_buf;
    for (; n >= 8; n -= 8, p += 8) {
        h ^= round64(0, rd64(p));
        h = rotl(h, 27) * P1 + P4;
    }
    if (n >= 4) {
        h ^= (uint64_t)rd32(p) * P1;
        h = rotl(h, 23) * P2 + P3;
        p += 4;
        n -= 4;
    }
    for (; n; n--, p++) {
        h ^= (uint64_t)*p * P5;
        h = rotl(h, 11) * P1;
    }
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    h ^= h >> 32;
    return h;
}

uint64_t mllm_xxh64(const void *data, size_t n) {
    mllm_xxh64_state s;
    mllm_xxh64_init(&s);
    mllm_xxh64_update(&s, data, n);
    return mllm_xxh64_digest(&s);
}
