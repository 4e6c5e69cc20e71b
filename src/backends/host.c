/* backends/host.h over the CPU backend's kernels. */
#include "backends/host.h"

#include "backends/cpu/kernels.h"
#include "backends/cpu/repack.h"

void mllm_host_to_float(mllm_dtype t, const void *src, float *dst, int64_t n) { mllm_cpu_to_float(t, src, dst, n); }

void mllm_host_quantize_row(mllm_dtype t, const float *x, void *y, int64_t n) { mllm_cpu_quantize_row(t, x, y, n); }

bool mllm_host_reads_unaligned_rows(void) { return mllm_cpu_isa_is_x86(mllm_cpu_isa_get()); }

int mllm_host_packed_type(mllm_dtype t, int64_t K, int64_t N) { return mllm_repack_type_for(t, K, N); }

void mllm_host_pack_group(mllm_dtype packed, const void *src, void *dst, int64_t K) {
    mllm_repack_groups(packed, src, dst, K, 0, 1);
}

double mllm_host_sum_exp(const float *x, int n, float mx, int ts_from, double *ts_sum) {
    return mllm_cpu_sum_exp(x, n, mx, ts_from, ts_sum);
}
