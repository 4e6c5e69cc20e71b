/* The CUDA kernels (src/backends/cuda) against the CPU: every op on odd
   sizes, on the first CUDA device ($MLLM_CUDA_DEVICE picks another); the
   twin of test_opencl_ops.c. Tolerances, normalised MSE over all outputs
   of a case:
     matmul (f32, f16, q8_0, q4_0, q4_K, q6_K weights, f32 activations):
       < 1e-10 against a double-precision product of the dequantized
       weights, and < 1e-10 against the CPU's f32 path (mllm_cpu_mul_mat_exact);
     get_rows (the same six types): < 1e-14 against the CPU's dequantization
       (the same products);
     rmsnorm, layernorm, softmax, rope, elementwise: < 1e-10 against the
       generic C kernels (float sums in another order; libm vs the device's
       expf/tanhf/erff);
     attention: < 1e-10 against a double-precision softmax(q k^T) v.
   Without a CUDA build, driver or device every test prints SKIPPED with
   the reason (the CUDA error). The kernels' arithmetic is also checked on
   the host, without a GPU, by test_cuda_math.c. The test bodies are
   device_ops_cases.h, shared with test_opencl_ops.c. */
#include <stdio.h>

#include "testutil.h"

#ifdef MLLM_HAVE_CUDA
#include "backends/cuda/cuda.h"

#define DEV(name) mllm_cuda_##name
#define DEV_CTX mllm_cuda
#define DEV_BUF mllm_cuda_buf
#define DEV_EW(op) MLLM_CUDA_##op
#define DEV_EW_T mllm_cuda_elementwise
#define DEV_GET_ROWS_TYPES {MLLM_DTYPE_F32, MLLM_DTYPE_F16, MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_0, MLLM_DTYPE_Q4_K, MLLM_DTYPE_Q6_K}
#define DEV_GET_ROWS_K 768
#define DEV_BAD_SPECS {"x", "1x", "999"}
#define DEV_ROPE_REFUSES_IN_PLACE 1
#include "device_ops_cases.h"

int main(void) {
    const struct CMUnitTest tests[] = {DEV_TESTS};
    return cmocka_run_group_tests(tests, NULL, teardown);
}

#else /* no CUDA in this build */

static void test_skipped(void **state) {
    (void)state;
    printf("SKIPPED: this build has no CUDA (configure found no nvcc / CUDA toolkit, or -DMLLM_CUDA=OFF)\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_skipped)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
