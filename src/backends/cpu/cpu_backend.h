/* The CPU backend (backends/backend.h): the per-op compute functions of
   node_compute.c / node_compute_paged.c / node_compute_encoder.c over the
   thread pool, with the kernel path chosen at build and run time
   (cpu_dispatch.c). */
#ifndef MLLM_BACKENDS_CPU_CPU_BACKEND_H
#define MLLM_BACKENDS_CPU_CPU_BACKEND_H
#include "backends/backend.h"
#include "backends/cpu.h"
#include "backends/cpu/kv_paged.h"
#include "core/tensor.h"

/* The host-memory buffer type every CPU tensor lives in ("cpu"). */
const mllm_buffer_type *mllm_cpu_buffer_type(void);
/* The kernel layouts' buffer type, mllm_cpu_repack_buffer_type: backends/cpu.h. */

/* Whether the CPU computes op (every built-in op but the leaves and views). */
bool mllm_cpu_supports_op(const mllm_tensor *t);
/* Runs nodes[0..n) on x->pool, growing x->work for the largest node. */
bool mllm_cpu_compute_nodes(mllm_exec_ctx *x, mllm_tensor **nodes, int n);

/* The compute function of a node, per thread (node_compute.c), and the
   scratch it needs for nth threads. */
void mllm_cpu_compute_node(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth);
size_t mllm_cpu_node_work_size(const mllm_tensor *t, int nth);
/* The cos/sin of the n_rot/2 rotation angles at position pos, with the
   arithmetic of ggml's rope cache (YaRN included): what every backend's
   RoPE must use to round as the CPU does (the OpenCL backend's host-side
   table). */
void mllm_cpu_rope_table(const mllm_rope_params *rp, int pos, float *cs, float *sn);
/* node_compute_paged.c */
void mllm_compute_kv_store_paged(mllm_tensor *t, int ith, int nth);
void mllm_compute_attention_paged(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth);
size_t mllm_attention_paged_work_size(const mllm_tensor *t, int nth);
/* node_compute_encoder.c */
void mllm_compute_rope_table(mllm_tensor *t, int ith, int nth);
void mllm_compute_attention_segments(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth);
size_t mllm_attention_segments_work_size(const mllm_tensor *t, int nth);
/* node_compute_kv.c: the encoder-decoder ops (graph.h) */
void mllm_compute_im2col(mllm_tensor *t, int ith, int nth);
void mllm_compute_attention_full(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth);
void mllm_compute_kv_slots_store(mllm_tensor *t, int ith, int nth);
void mllm_compute_attention_slots(const mllm_exec_ctx *g, mllm_tensor *t, int ith, int nth);
size_t mllm_attention_kv_work_size(const mllm_tensor *t, int nth);

#endif
