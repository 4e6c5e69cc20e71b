/* The persistent prefix store (kv_store.h): the file's layout, its checks
   at open, lookups, reads and append-then-commit writes. */
#define _GNU_SOURCE
#include "kv/kv_store.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_map.h"
#include "formats/mllmfile.h"

#define REC_MAGIC 0x3145564bu /* "KVE1" */
static const char HDR_MAGIC[8] = {'M', 'L', 'L', 'M', 'K', 'V', 'S', '1'};

typedef struct { /* the header's first bytes; the rest of the page is zero */
    char magic[8];
    uint32_t version, header_bytes;
    uint64_t model_id;
    int32_t n_layer, n_head_kv, head_dim, dtype, block_size;
    uint32_t n_slots;
    uint64_t block_bytes, slot_bytes, index_off, data_off, file_bytes;
    uint64_t sum; /* xxh64 of the bytes before it */
} store_hdr;

typedef struct {
    uint32_t magic, slot;
    uint64_t key, serial, parent, stamp, body_sum, reserved;
    uint64_t sum; /* xxh64 of the 56 bytes before it */
} store_rec;

_Static_assert(sizeof(store_rec) == MLLM_KV_STORE_RECORD, "record size");
_Static_assert(sizeof(store_hdr) == 96, "header size");

typedef struct {
    uint64_t key, serial, parent, stamp, body_sum;
    int32_t hnext;
    bool valid, dirty;
} store_ent;

struct mllm_kv_store {
    mllm_kv_store_geom g;
    store_hdr h;            /* the layout in use */
    uint64_t body_bytes;
    int fd;                 /* -1: an image being checked (no writes) */
    const uint8_t *map;
    size_t map_size;
    store_ent *ents;        /* (n_slots) */
    int32_t *tokens;        /* (n_slots * block_size) */
    int32_t *buckets, *dirty;
    int n_buckets, n_dirty;
    bool need_sync, broken;
    bool damaged; /* a read of the mapping faulted (file cut, or a hole no room could fill): no more reads */
    uint64_t next_serial, next_stamp;
    mllm_kv_store_stats st;
    char note[512];
};

static uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static bool geom_ok(const mllm_kv_store_geom *g) {
    return g->n_layer >= 1 && g->n_layer <= 4096 && g->n_head_kv >= 1 && g->head_dim >= 1 && g->block_size >= 1 &&
           g->block_size <= 4096 && g->block_bytes >= 1 && g->block_bytes <= ((uint64_t)1 << 36);
}

/* The layout for g with n_slots slots (geometry fields filled, sum not). */
static void layout(store_hdr *h, const mllm_kv_store_geom *g, uint32_t n_slots) {
    memset(h, 0, sizeof *h);
    memcpy(h->magic, HDR_MAGIC, 8);
    h->version = MLLM_KV_STORE_VERSION;
    h->header_bytes = MLLM_KV_STORE_HEADER;
    h->model_id = g->model_id;
    h->n_layer = g->n_layer;
    h->n_head_kv = g->n_head_kv;
    h->head_dim = g->head_dim;
    h->dtype = g->dtype;
    h->block_size = g->block_size;
    h->n_slots = n_slots;
    h->block_bytes = g->block_bytes;
    h->slot_bytes = round_up((uint64_t)g->block_size * 4 + (uint64_t)g->n_layer * g->block_bytes, 64);
    h->index_off = MLLM_KV_STORE_HEADER;
    h->data_off = round_up(h->index_off + (uint64_t)n_slots * MLLM_KV_STORE_RECORD, 4096);
    h->file_bytes = h->data_off + (uint64_t)n_slots * h->slot_bytes;
    h->sum = mllm_xxh64(h, offsetof(store_hdr, sum));
}

/* NULL when the header at img describes g's store (its layout copied to
   *out), else why not. */
static const char *header_check(const uint8_t *img, size_t n, const mllm_kv_store_geom *g, store_hdr *out) {
    store_hdr h;
    if (n < MLLM_KV_STORE_HEADER) return "shorter than its header";
    memcpy(&h, img, sizeof h);
    if (memcmp(h.magic, HDR_MAGIC, 8)) return "not a prefix store";
    if (h.sum != mllm_xxh64(&h, offsetof(store_hdr, sum))) return "its header is damaged";
    if (h.version != MLLM_KV_STORE_VERSION) return "another format version";
    if (h.model_id != g->model_id) return "written for another model";
    if (h.n_layer != g->n_layer || h.n_head_kv != g->n_head_kv || h.head_dim != g->head_dim || h.dtype != g->dtype ||
        h.block_size != g->block_size || h.block_bytes != g->block_bytes)
        return "another K/V geometry (layers, heads, dtype or block size)";
    if (h.n_slots < 1 || h.n_slots > MLLM_KV_STORE_MAX_SLOTS) return "a slot count out of range";
    store_hdr want;
    layout(&want, g, h.n_slots);
    if (memcmp(&want, &h, sizeof h)) return "an inconsistent layout";
    *out = h;
    return NULL;
}

static int bucket_of(const mllm_kv_store *s, uint64_t key) { return (int)(key & (uint64_t)(s->n_buckets - 1)); }

static void hash_insert(mllm_kv_store *s, int i) {
    const int b = bucket_of(s, s->ents[i].key);
    s->ents[i].hnext = s->buckets[b];
    s->buckets[b] = i;
}

static void hash_remove(mllm_kv_store *s, int i) {
    int32_t *at = &s->buckets[bucket_of(s, s->ents[i].key)];
    while (*at >= 0 && *at != i) at = &s->ents[*at].hnext;
    if (*at == i) *at = s->ents[i].hnext;
}

static const uint8_t *body_of(const mllm_kv_store *s, int i) {
    return s->map + s->h.data_off + (uint64_t)i * s->h.slot_bytes;
}

static bool body_intact(const mllm_kv_store *s, int i) {
    return mllm_xxh64(body_of(s, i), (size_t)s->body_bytes) == s->ents[i].body_sum;
}

static int cmp_serial(const void *a, const void *b) {
    const uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return x < y ? -1 : x > y;
}

/* Reads every commit record and checks it and its body; the valid ones go
   into the index. Returns the entries (s->st.dropped: the broken ones). */
static int scan(mllm_kv_store *s) {
    const int n = (int)s->h.n_slots, bs = s->g.block_size;
    uint64_t max_serial = 0, max_stamp = 0;
    for (int i = 0; i < n; i++) {
        store_rec r;
        memcpy(&r, s->map + s->h.index_off + (uint64_t)i * MLLM_KV_STORE_RECORD, sizeof r);
        store_ent *e = &s->ents[i];
        memset(e, 0, sizeof *e);
        e->hnext = -1;
        if (r.magic == 0 && r.sum == 0) { /* a free slot; tokens there: a write that never committed */
            const uint8_t *b = body_of(s, i);
            size_t z = 0;
            while (z < (size_t)bs * 4 && !b[z]) z++;
            if (z < (size_t)bs * 4) {
                s->st.incomplete++;
                if (s->fd >= 0) { /* cleared, so the next open counts only new ones */
                    static const uint8_t zeros[512];
                    for (size_t o = 0; o < (size_t)bs * 4; o += sizeof zeros)
                        if (pwrite(s->fd, zeros, (size_t)bs * 4 - o < sizeof zeros ? (size_t)bs * 4 - o : sizeof zeros,
                                   (off_t)(s->h.data_off + (uint64_t)i * s->h.slot_bytes + o)) < 0)
                            break;
                }
            }
            continue;
        }
        e->body_sum = r.body_sum;
        if (r.magic != REC_MAGIC || r.sum != mllm_xxh64(&r, offsetof(store_rec, sum)) || r.slot != (uint32_t)i ||
            r.serial == 0 || r.parent >= r.serial || r.serial > (UINT64_C(1) << 62) || r.stamp > (UINT64_C(1) << 62) ||
            !body_intact(s, i)) {
            s->st.dropped++;
            continue;
        }
        e->key = r.key;
        e->serial = r.serial;
        e->parent = r.parent;
        e->stamp = r.stamp;
        e->valid = true;
        memcpy(s->tokens + (size_t)i * (size_t)bs, body_of(s, i), (size_t)bs * sizeof(int32_t));
        if (r.serial > max_serial) max_serial = r.serial;
        if (r.stamp > max_stamp) max_stamp = r.stamp;
    }
    /* Serials are unique in a store this code wrote; a file with two alike
       keeps neither (a child names its parent by serial). */
    uint64_t *order = mllm_malloc((size_t)n * 2 * sizeof *order);
    int k = 0;
    for (int i = 0; i < n && order; i++)
        if (s->ents[i].valid) order[2 * k] = s->ents[i].serial, order[2 * k + 1] = (uint64_t)i, k++;
    if (order) {
        qsort(order, (size_t)k, 2 * sizeof *order, cmp_serial);
        for (int a = 0; a < k;) {
            int b = a + 1;
            while (b < k && order[2 * b] == order[2 * a]) b++;
            if (b - a > 1)
                for (int c = a; c < b; c++) s->ents[order[2 * c + 1]].valid = false, s->st.dropped++;
            a = b;
        }
        mllm_free(order);
    } else {
        for (int i = 0; i < n; i++) s->ents[i].valid = false; /* cannot check: serve nothing */
    }
    int count = 0;
    for (int i = 0; i < n; i++)
        if (s->ents[i].valid) hash_insert(s, i), count++;
    s->next_serial = max_serial + 1;
    s->next_stamp = max_stamp + 1;
    s->st.n_entries = count;
    return count;
}

static mllm_status alloc_index(mllm_kv_store *s) {
    const size_t n = s->h.n_slots;
    int nb = 1;
    while ((size_t)nb < n) nb <<= 1;
    s->n_buckets = nb;
    s->ents = mllm_calloc(n, sizeof *s->ents);
    s->tokens = mllm_calloc(n * (size_t)s->g.block_size, sizeof *s->tokens);
    s->buckets = mllm_malloc((size_t)nb * sizeof *s->buckets);
    s->dirty = mllm_malloc(n * sizeof *s->dirty);
    if (!s->ents || !s->tokens || !s->buckets || !s->dirty)
        return mllm_err(MLLM_ERR_NOMEM, "out of memory for a prefix store of %zu entries", n);
    for (int i = 0; i < nb; i++) s->buckets[i] = -1;
    s->body_bytes = (uint64_t)s->g.block_size * 4 + (uint64_t)s->g.n_layer * s->g.block_bytes;
    s->st.n_slots = (int)n;
    s->st.slot_bytes = s->h.slot_bytes;
    s->st.file_bytes = s->h.file_bytes;
    return MLLM_OK;
}

static void free_index(mllm_kv_store *s) {
    mllm_free(s->ents);
    mllm_free(s->tokens);
    mllm_free(s->buckets);
    mllm_free(s->dirty);
}

int mllm_kv_store_check_image(const uint8_t *img, size_t n, const mllm_kv_store_geom *g) {
    mllm_kv_store s;
    memset(&s, 0, sizeof s);
    s.g = *g;
    s.fd = -1;
    if (!geom_ok(g) || header_check(img, n, g, &s.h) || s.h.file_bytes > n) return -1;
    s.map = img;
    s.map_size = (size_t)s.h.file_bytes;
    int count = alloc_index(&s) == MLLM_OK ? scan(&s) : -1;
    free_index(&s);
    return count;
}

/* Test hook: MLLM_KV_STORE_TEST_SLOW_US=N writes in 512-byte pieces N
   microseconds apart, so a crash test's SIGKILL lands inside writes
   (tests/e2e/serve_prefix_store.py). */
static unsigned slow_us = 0;

static bool pwrite_all(int fd, const void *p, size_t n, uint64_t off) {
    const uint8_t *b = p;
    while (n > 0) {
        if (slow_us) usleep(slow_us);
        ssize_t w = pwrite(fd, b, slow_us && n > 512 ? 512 : n, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        b += w, n -= (size_t)w, off += (uint64_t)w;
    }
    return true;
}

/* A fresh store: no entries, the header written and synced. */
static bool init_file(mllm_kv_store *s) {
    uint8_t page[MLLM_KV_STORE_HEADER] = {0};
    memcpy(page, &s->h, sizeof s->h);
    return ftruncate(s->fd, 0) == 0 && ftruncate(s->fd, (off_t)s->h.file_bytes) == 0 &&
           pwrite_all(s->fd, page, sizeof page, 0) && fdatasync(s->fd) == 0;
}

/* The folder a store lives in must not let another user put a file or a
   link where the store will be (as ssh's StrictModes and systemd's
   tmpfiles refuse): not writable by group or others, unless it is sticky
   (others cannot remove or rename our file there) and ours. */
mllm_status mllm_kv_store_check_folder(const char *dir) {
    struct stat d;
    if (stat(dir, &d) != 0) return mllm_err(MLLM_ERR_IO, "prefix store folder %s: %s", dir, strerror(errno));
    const bool shared = (d.st_mode & (S_IWGRP | S_IWOTH)) != 0;
#ifdef __wasi__
    const bool ours = true; /* WASI has no users: the host's preopened folder is the module's */
#else
    const bool ours = d.st_uid == geteuid();
#endif
    if (shared && !((d.st_mode & S_ISVTX) && ours))
        return mllm_err(MLLM_ERR_IO,
                        "prefix store folder %s is writable by other users (mode %03o): another user could put a file "
                        "or a link where the store goes; use a folder only you can write (chmod go-w), or a sticky "
                        "one you own",
                        dir, (unsigned)(d.st_mode & 07777));
    return MLLM_OK;
}

static mllm_status folder_check(const char *path) {
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if ((size_t)(slash - path) >= sizeof dir) return mllm_err(MLLM_ERR_INVALID_ARG, "prefix store: path too long");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return mllm_kv_store_check_folder(dir);
}

/* Whether the first bytes of a non-empty file are (the start of) a store
   header: anything else is not ours to overwrite. */
static bool looks_like_store(int fd, off_t size) {
    char m[8] = {0};
    const size_t n = size < 8 ? (size_t)size : 8;
    return pread(fd, m, n, 0) == (ssize_t)n && !memcmp(m, HDR_MAGIC, n);
}

mllm_status mllm_kv_store_open(const char *path, const mllm_kv_store_geom *g, uint64_t max_bytes,
                               mllm_kv_store **out, const char **note) {
    *out = NULL;
    if (note) *note = "";
    if (!geom_ok(g)) return mllm_err(MLLM_ERR_INVALID_ARG, "prefix store: invalid K/V geometry");
    store_hdr want;
    layout(&want, g, 1);
    const uint64_t per = want.slot_bytes + MLLM_KV_STORE_RECORD, fixed = MLLM_KV_STORE_HEADER + 4096;
    if (max_bytes < fixed + per)
        return mllm_err(MLLM_ERR_INVALID_ARG, "prefix store: %llu bytes hold no block (one takes %llu)",
                        (unsigned long long)max_bytes, (unsigned long long)(fixed + per));
    uint64_t n_slots = (max_bytes - fixed) / per;
    if (n_slots > MLLM_KV_STORE_MAX_SLOTS) n_slots = MLLM_KV_STORE_MAX_SLOTS;
    layout(&want, g, (uint32_t)n_slots);
    if (want.file_bytes > (uint64_t)SIZE_MAX / 2) return mllm_err(MLLM_ERR_INVALID_ARG, "prefix store: too large");
    const char *slow = getenv("MLLM_KV_STORE_TEST_SLOW_US");
    slow_us = slow ? (unsigned)strtoul(slow, NULL, 10) % 100000 : 0;
    mllm_kv_store *s = mllm_calloc(1, sizeof *s);
    if (!s) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    s->g = *g;
    mllm_status st = folder_check(path);
    /* O_NOFOLLOW: a link named like the store is refused, never written
       through (the lock is taken on this same descriptor). O_NONBLOCK: a
       FIFO there does not hang the open; it is refused below. */
    s->fd = st != MLLM_OK ? -1 : open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (st == MLLM_OK && s->fd < 0)
        st = errno == ELOOP ? mllm_err(MLLM_ERR_IO, "prefix store %s: is a symbolic link (a store is never opened "
                                                    "through a link; remove it)",
                                       path)
                            : mllm_err(MLLM_ERR_IO, "prefix store %s: %s", path, strerror(errno));
    if (st != MLLM_OK) {
        mllm_free(s);
        return st;
    }
    struct stat sb;
    if (flock(s->fd, LOCK_EX | LOCK_NB) != 0)
        st = mllm_err(MLLM_ERR_IO, "prefix store %s: in use by another process (%s)", path, strerror(errno));
    else if (fstat(s->fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        st = mllm_err(MLLM_ERR_IO, "prefix store %s: not a regular file", path);
    else if (sb.st_size > 0 && !looks_like_store(s->fd, sb.st_size))
        st = mllm_err(MLLM_ERR_IO, "prefix store %s: the file there is not a prefix store (it does not begin with "
                                   "MLLMKVS1); it is left as it is: remove it or use another --prefix-store folder",
                      path);
    const char *why = NULL;
    if (st == MLLM_OK) {
        uint8_t hb[sizeof(store_hdr)] = {0};
        const bool have = sb.st_size >= MLLM_KV_STORE_HEADER && pread(s->fd, hb, sizeof hb, 0) == (ssize_t)sizeof hb;
        /* header_check reads only the struct's bytes; the length says whether the file has a header at all */
        why = sb.st_size == 0 ? "" : !have ? "shorter than its header" : header_check(hb, MLLM_KV_STORE_HEADER, g, &s->h);
        if (!why && s->h.n_slots != want.n_slots) why = "another --prefix-store-size";
        bool sized = true;
        if (why) {
            s->h = want;
            sized = init_file(s);
        } else if ((uint64_t)sb.st_size != s->h.file_bytes) {
            /* a cut file grows back with zeros (their records are free slots, their bodies fail) */
            sized = ftruncate(s->fd, (off_t)s->h.file_bytes) == 0;
        }
        if (!sized && (errno == ENOSPC || errno == EFBIG || errno == EDQUOT)) {
            /* No room (a full file system, a file-size limit): the server
               runs without a store; the caller logs the note. */
            static _Thread_local char off[700];
            snprintf(off, sizeof off, "prefix store %s: no room for its %llu bytes (%s): running without it", path,
                     (unsigned long long)s->h.file_bytes, strerror(errno));
            if (note) *note = off;
            mllm_kv_store_close(s);
            return MLLM_OK;
        }
        if (!sized) st = mllm_err(MLLM_ERR_IO, "prefix store %s: cannot create or resize: %s", path, strerror(errno));
    }
    if (st == MLLM_OK) {
        void *m = mmap(NULL, (size_t)s->h.file_bytes, PROT_READ, MAP_SHARED, s->fd, 0);
        if (m == MAP_FAILED) st = mllm_err(MLLM_ERR_IO, "prefix store %s: cannot map: %s", path, strerror(errno));
        else s->map = m, s->map_size = (size_t)s->h.file_bytes;
        /* a page the file no longer has reads zeros instead of SIGBUS */
        if (s->map) mllm_file_map_guard(m, s->map_size);
    }
    if (st == MLLM_OK) st = alloc_index(s);
    if (st != MLLM_OK) {
        mllm_kv_store_close(s);
        return st;
    }
    const int n = scan(s);
    if (mllm_file_map_damaged(s->map)) {
        s->damaged = s->broken = true;
        snprintf(s->note, sizeof s->note, "prefix store %s: pages of the file cannot be read (a full file system?): "
                 "running without it", path);
    } else if (why && *why)
        snprintf(s->note, sizeof s->note, "prefix store %s: %s, started afresh (%d slots of %llu bytes)", path, why,
                 s->st.n_slots, (unsigned long long)s->h.slot_bytes);
    else if (why)
        snprintf(s->note, sizeof s->note, "prefix store %s: created (%d slots of %llu bytes)", path, s->st.n_slots,
                 (unsigned long long)s->h.slot_bytes);
    else
        snprintf(s->note, sizeof s->note,
                 "prefix store %s: %d blocks of %d slots, %d broken ones dropped, %d uncommitted writes cleared", path,
                 n, s->st.n_slots, s->st.dropped, s->st.incomplete);
    if (note) *note = s->note;
    *out = s;
    return MLLM_OK;
}

void mllm_kv_store_close(mllm_kv_store *s) {
    if (!s) return;
    if (s->fd >= 0 && s->ents) mllm_kv_store_flush(s);
    if (s->map) {
        mllm_file_map_unguard(s->map);
        munmap((void *)s->map, s->map_size);
    }
    if (s->fd >= 0) close(s->fd); /* releases the lock */
    free_index(s);
    mllm_free(s);
}

int mllm_kv_store_find(const mllm_kv_store *s, uint64_t key, uint64_t parent, const int32_t *tokens) {
    const int bs = s->g.block_size;
    for (int32_t i = s->buckets[bucket_of(s, key)]; i >= 0; i = s->ents[i].hnext)
        if (s->ents[i].key == key && s->ents[i].parent == parent &&
            !memcmp(s->tokens + (size_t)i * (size_t)bs, tokens, (size_t)bs * sizeof *tokens))
            return i;
    return -1;
}

uint64_t mllm_kv_store_serial(const mllm_kv_store *s, int entry) { return s->ents[entry].serial; }

static void mark_dirty(mllm_kv_store *s, int i) {
    if (s->ents[i].dirty) return;
    s->ents[i].dirty = true;
    s->dirty[s->n_dirty++] = i;
}

/* Forgets entry i (in memory; its record on disk is zeroed when writable). */
static void drop(mllm_kv_store *s, int i) {
    hash_remove(s, i);
    s->ents[i].valid = false;
    s->st.n_entries--;
    if (s->fd >= 0 && !s->broken) {
        static const store_rec zero;
        if (!pwrite_all(s->fd, &zero, sizeof zero, s->h.index_off + (uint64_t)i * MLLM_KV_STORE_RECORD))
            s->broken = true;
    }
}

mllm_status mllm_kv_store_read(mllm_kv_store *s, int entry, uint8_t *const *dst) {
    if (entry < 0 || entry >= (int)s->h.n_slots || !s->ents[entry].valid)
        return mllm_err(MLLM_ERR_INVALID_ARG, "prefix store: no entry %d", entry);
    if (s->damaged) return mllm_err(MLLM_ERR_IO, "prefix store: its file could not be read; it is off");
    if (!body_intact(s, entry)) { /* changed on disk since it was checked */
        if (mllm_file_map_damaged(s->map)) {
            s->damaged = s->broken = true;
            return mllm_err(MLLM_ERR_IO, "prefix store: its file shrank while in use; it is off from now on");
        }
        drop(s, entry);
        return mllm_err(MLLM_ERR_FORMAT, "prefix store: entry %d is damaged", entry);
    }
    const uint8_t *b = body_of(s, entry) + (size_t)s->g.block_size * 4;
    for (int l = 0; l < s->g.n_layer; l++) memcpy(dst[l], b + (size_t)l * s->g.block_bytes, (size_t)s->g.block_bytes);
    /* The file cut while in use: the pages past its end read as zeros
       (core/file_map.h), maybe after the checksum above passed. */
    if (mllm_file_map_damaged(s->map)) {
        s->damaged = s->broken = true;
        return mllm_err(MLLM_ERR_IO, "prefix store: its file shrank while in use; it is off from now on");
    }
    s->ents[entry].stamp = s->next_stamp++;
    mark_dirty(s, entry);
    s->st.hits++;
    return MLLM_OK;
}

uint64_t mllm_kv_store_put(mllm_kv_store *s, uint64_t key, uint64_t parent, const int32_t *tokens,
                           const uint8_t *const *src) {
    if (s->broken || s->fd < 0) return 0;
    const int n = (int)s->h.n_slots, bs = s->g.block_size;
    int slot = -1;
    for (int i = 0; i < n && slot < 0; i++)
        if (!s->ents[i].valid) slot = i;
    if (slot < 0) { /* the least recently used */
        slot = 0;
        for (int i = 1; i < n; i++)
            if (s->ents[i].stamp < s->ents[slot].stamp) slot = i;
        drop(s, slot);
        s->st.evictions++;
    } else if (s->fd >= 0) {
        static const store_rec zero; /* a broken record left from open */
        if (!pwrite_all(s->fd, &zero, sizeof zero, s->h.index_off + (uint64_t)slot * MLLM_KV_STORE_RECORD))
            s->broken = true;
    }
    /* The body; its commit record follows at the next flush. */
    const uint64_t off = s->h.data_off + (uint64_t)slot * s->h.slot_bytes;
    mllm_xxh64_state h;
    mllm_xxh64_init(&h);
    mllm_xxh64_update(&h, tokens, (size_t)bs * 4);
    bool ok = !s->broken && pwrite_all(s->fd, tokens, (size_t)bs * 4, off);
    for (int l = 0; ok && l < s->g.n_layer; l++) {
        mllm_xxh64_update(&h, src[l], (size_t)s->g.block_bytes);
        ok = pwrite_all(s->fd, src[l], (size_t)s->g.block_bytes, off + (uint64_t)bs * 4 + (uint64_t)l * s->g.block_bytes);
    }
    if (!ok) {
        s->broken = true;
        return 0;
    }
    store_ent *e = &s->ents[slot];
    e->key = key;
    e->parent = parent;
    e->serial = s->next_serial++;
    e->stamp = s->next_stamp++;
    e->body_sum = mllm_xxh64_digest(&h);
    e->valid = true;
    memcpy(s->tokens + (size_t)slot * (size_t)bs, tokens, (size_t)bs * sizeof *tokens);
    hash_insert(s, slot);
    mark_dirty(s, slot);
    s->need_sync = true;
    s->st.n_entries++;
    s->st.writes++;
    return e->serial;
}

mllm_status mllm_kv_store_flush(mllm_kv_store *s) {
    if (s->fd < 0) return MLLM_OK;
    mllm_status st = MLLM_OK;
    if (!s->broken && s->need_sync && fdatasync(s->fd) != 0) s->broken = true; /* bodies before their records */
    s->need_sync = false;
    for (int k = 0; k < s->n_dirty; k++) {
        const int i = s->dirty[k];
        store_ent *e = &s->ents[i];
        e->dirty = false;
        if (!e->valid || s->broken) continue;
        store_rec r = {.magic = REC_MAGIC, .slot = (uint32_t)i, .key = e->key, .serial = e->serial,
                       .parent = e->parent, .stamp = e->stamp, .body_sum = e->body_sum};
        r.sum = mllm_xxh64(&r, offsetof(store_rec, sum));
        if (!pwrite_all(s->fd, &r, sizeof r, s->h.index_off + (uint64_t)i * MLLM_KV_STORE_RECORD)) s->broken = true;
    }
    s->n_dirty = 0;
    if (s->broken) st = mllm_err(MLLM_ERR_IO, "prefix store: write failed (%s); it is read-only from now on",
                                 strerror(errno));
    return st;
}

void mllm_kv_store_get_stats(const mllm_kv_store *s, mllm_kv_store_stats *out) { *out = s->st; }
