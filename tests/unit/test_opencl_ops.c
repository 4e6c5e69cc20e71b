/* The OpenCL kernels (src/backends/opencl) against the CPU: every op on
   odd sizes, on the first OpenCL device (PoCL on the CPU in CI;
   $MLLM_OPENCL_DEVICE picks another). Tolerances, normalised MSE over all
   outputs of a case:
     matmul (f32, f16, q8_0, q4_0, q4_K, q6_K weights, f32 activations):
       < 1e-10 against a double-precision product of the dequantized
       weights, and < 1e-10 against the CPU's f32 path (mllm_cpu_mul_mat_exact);
     get_rows: < 1e-14 against the CPU's dequantization (the same products);
     rmsnorm, layernorm, softmax, rope, elementwise: < 1e-10 against the
       generic C kernels (float sums in another order; libm vs the device's
       exp/tanh/erf);
     attention: < 1e-10 against a double-precision softmax(q k^T) v.
   Without an OpenCL build or device every test prints SKIPPED. The test
   bodies are device_ops_cases.h, shared with test_cuda_ops.c. */
#include <stdio.h>

#include "testutil.h"

#ifdef MLLM_HAVE_OPENCL
#include "backends/opencl/ocl.h"

#define DEV(name) mllm_ocl_##name
#define DEV_CTX mllm_ocl
#define DEV_BUF mllm_ocl_buf
#define DEV_EW(op) MLLM_OCL_##op
#define DEV_EW_T mllm_ocl_elementwise
#define DEV_GET_ROWS_TYPES {MLLM_DTYPE_F32, MLLM_DTYPE_F16, MLLM_DTYPE_Q8_0, MLLM_DTYPE_Q4_0}
#define DEV_GET_ROWS_K 96
#define DEV_BAD_SPECS {"x", "9:0", "0:9"}
#define DEV_ROPE_REFUSES_IN_PLACE 0
#include "device_ops_cases.h"

int main(void) {
    const struct CMUnitTest tests[] = {DEV_TESTS};
    return cmocka_run_group_tests(tests, NULL, teardown);
}

#else /* no OpenCL in this build */

static void test_skipped(void **state) {
    (void)state;
    printf("SKIPPED: this build has no OpenCL (configure found no ICD loader, or -DMLLM_OPENCL=OFF)\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_skipped)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
