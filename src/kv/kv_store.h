/* The persistent prefix store: K/V blocks of the prefix cache (kv_pool.h)
   kept in one file, so a restarted server finds them again. The file is
   memory-mapped for reading; writes go through pwrite.

   File layout (little-endian, every number checked before use):
     header   (MLLM_KV_STORE_HEADER bytes): magic "MLLMKVS1", version, the
              model's identity, the K/V geometry (layers, KV heads, head
              size, dtype, block size, bytes per layer block), the slot
              count and size, and an xxh64 of the header. Any mismatch with
              the caller's geometry or identity: the file is started afresh
              (never read).
     index    n_slots commit records of MLLM_KV_STORE_RECORD bytes:
              magic, slot number, chain key, serial, parent serial, LRU
              stamp, the xxh64 of the slot's body, and an xxh64 of the
              record itself.
     slots    n_slots bodies of slot_bytes: the block's block_size tokens
              (int32), then each layer's block bytes as the pool holds them.

   An entry is one full block: its tokens, the serial of the entry of the
   block before it (0: the first block of a prompt) and its chain key (the
   pool's hash of every token up to its end). A lookup matches the key,
   the parent's serial and the tokens themselves, so, link by link, an
   entry is only ever found by the exact token prefix it was computed for;
   a hash collision costs a failed comparison, never a wrong block.

   Crash safety (SIGKILL at any moment; power loss too, see fsync below):
   a write first overwrites the slot's commit record with zeros, then
   writes the body; mllm_kv_store_flush does one fdatasync and then writes
   the commit records of the bodies written since. On open every record is
   checked (magic, its own checksum, slot number, serials) and so is every
   body (its checksum); whatever fails is dropped and its slot is free. A
   body is checked again each time it is read. So an interrupted write
   leaves either no record (free slot) or a record whose body checksum
   fails (dropped), never a wrong block. The fdatasync orders data before
   commit on disk after a power loss; the checksums alone already keep a
   torn or reordered write from being served.

   Eviction: the store holds n_slots entries; a new one takes a free slot,
   else the least recently used (stamps: written or read). One process
   uses a store file at a time (an exclusive flock; a second is refused). */
#ifndef MLLM_KV_KV_STORE_H
#define MLLM_KV_KV_STORE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <mllm/mllm.h>

#define MLLM_KV_STORE_HEADER 4096
#define MLLM_KV_STORE_RECORD 64
#define MLLM_KV_STORE_VERSION 2
#define MLLM_KV_STORE_MAX_SLOTS (1 << 20) /* the index keeps each slot's tokens in memory */

typedef struct {
    uint64_t model_id;     /* the model's identity (the engine's hash of its file and settings) */
    int n_layer, n_head_kv, head_dim, dtype, block_size;
    uint64_t block_bytes;  /* one layer's block (mllm_kv_paged.block_bytes) */
} mllm_kv_store_geom;

typedef struct {
    int n_slots, n_entries;
    int dropped;           /* entries found broken at open */
    int incomplete;        /* free slots holding a body that was never committed (cleared at open) */
    uint64_t slot_bytes, file_bytes;
    uint64_t hits, writes, evictions; /* entries read, written, overwritten */
} mllm_kv_store_stats;

typedef struct mllm_kv_store mllm_kv_store;

/* MLLM_OK when dir is a folder only we can write (or a sticky one we own):
   the store and the files kept beside it (the model's content hash) may
   be trusted there. Errors say why (MLLM_ERR_IO). */
mllm_status mllm_kv_store_check_folder(const char *dir);

/* Opens (creating, or starting afresh after a mismatch) the store file at
   path for this geometry, max_bytes in all (header and index included; at
   least one slot). *note describes what was found (a static buffer of the
   store, valid while it lives). Errors: MLLM_ERR_INVALID_ARG (geometry,
   size), MLLM_ERR_IO (cannot open / lock / grow / map). */
mllm_status mllm_kv_store_open(const char *path, const mllm_kv_store_geom *g, uint64_t max_bytes,
                               mllm_kv_store **out, const char **note);
void mllm_kv_store_close(mllm_kv_store *s); /* NULL ok; flushes first */

/* The entry with this chain key, parent serial (0: none) and block_size
   tokens, or -1. */
int mllm_kv_store_find(const mllm_kv_store *s, uint64_t key, uint64_t parent, const int32_t *tokens);
uint64_t mllm_kv_store_serial(const mllm_kv_store *s, int entry);
/* Copies entry's K/V into dst[l] (n_layer buffers of block_bytes) after
   checking its body again: a mismatch drops the entry (MLLM_ERR_FORMAT).
   Refreshes its LRU stamp. */
mllm_status mllm_kv_store_read(mllm_kv_store *s, int entry, uint8_t *const *dst);
/* Writes a new entry from src[l] (n_layer buffers of block_bytes); it is
   found at once, committed on disk at the next flush. Returns its serial,
   0 when the store cannot write (an I/O error, after which it only reads). */
uint64_t mllm_kv_store_put(mllm_kv_store *s, uint64_t key, uint64_t parent, const int32_t *tokens,
                           const uint8_t *const *src);
/* fdatasync, then the commit records written since the last flush (and
   refreshed stamps). MLLM_ERR_IO stops writing. */
mllm_status mllm_kv_store_flush(mllm_kv_store *s);
void mllm_kv_store_get_stats(const mllm_kv_store *s, mllm_kv_store_stats *out);

/* For the fuzz target and tests: checks a store image the way open does
   (header against g, every record and body) without a file; returns the
   valid entries, -1 for a header that does not match. */
int mllm_kv_store_check_image(const uint8_t *img, size_t n, const mllm_kv_store_geom *g);

#endif
