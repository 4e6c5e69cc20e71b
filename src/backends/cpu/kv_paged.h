/* The paged KV cache as the CPU kernels see it: one layer's blocks of
   block_size token positions each, at base + id * block_bytes, in f32, f16
   or q8 (int8 per token and KV head, with an f32 scale). Which block holds
   which positions of which sequence is a block table (src/kv owns the
   blocks, refcounts and the prefix index; the graph passes the tables in as
   I32 inputs). Attention reads K/V through a table with an online softmax
   (flash-style): a query's positions are cut into fixed chunks of
   MLLM_KV_SPLIT positions, each chunk gives a partial (running max, sum of
   exponentials, unnormalised output) and the partials are merged in chunk
   order. The cut depends only on the positions, never on the batch or the
   thread count, so a token's output is the same bits whatever shares its
   batch; decode can still spread one token's chunks over threads. */
#ifndef MLLM_BACKENDS_CPU_KV_PAGED_H
#define MLLM_BACKENDS_CPU_KV_PAGED_H
#include <stddef.h>
#include <stdint.h>

#include "kv/kv_layout.h"

/* Positions per partial of the online softmax (see above). */
#define MLLM_KV_SPLIT 256

/* Writes one token's K and V rows (n_head_kv * head_dim floats each) at
   offset off (< block_size) of block id `block`, converting to the dtype. */
void mllm_kv_paged_write(const mllm_kv_paged *kv, int32_t block, int off, const float *k, const float *v);
/* Head kvh of positions [p0, p1) through a block table as floats: K rows
   (D floats each) into k (row p - p0), V transposed into vt (row d holds
   position p at vt[d * vt_stride + p - p0]). Either may be NULL. row is
   scratch for converted rows: MLLM_KV_GATHER_ROWS * head_dim floats. */
#define MLLM_KV_GATHER_ROWS 8
void mllm_kv_paged_gather(const mllm_kv_paged *kv, const int32_t *table, int p0, int p1, int kvh, float *k, float *vt,
                          size_t vt_stride, float *row);
/* Reads back one token's K (which = 0) or V (1) row as floats. */
void mllm_kv_paged_read(const mllm_kv_paged *kv, int32_t block, int off, int which, float *out);
/* A partial of the online softmax for one query head: part[0] the running
   max of the scaled scores, part[1] the sum of exp(score - max), part[2..]
   the sum of exp(score - max) * v (head_dim floats). */
#define MLLM_KV_PART_FLOATS(head_dim) ((size_t)(head_dim) + 2)

/* The partials of `group` query heads (q: group rows of head_dim floats, all
   reading KV head kvh) over positions [p0, p1) of the sequence whose block
   table is `table` (position p in block table[p / block_size]; an id
   outside [0, n_blocks) contributes nothing). scratch: at least
   mllm_kv_paged_scratch_floats() floats. part: group partials. */
size_t mllm_kv_paged_scratch_floats(const mllm_kv_paged *kv, int group);
void mllm_kv_paged_attn_part(const mllm_kv_paged *kv, const int32_t *table, int p0, int p1, const float *q,
                             int group, int kvh, float scale, float *scratch, float *part);
/* out (head_dim) = the normalised attention output of n partials, stride
   floats apart, merged in order. All empty: zeros. */
void mllm_kv_paged_merge(const float *parts, int n, size_t stride, int head_dim, float *out);

#endif
