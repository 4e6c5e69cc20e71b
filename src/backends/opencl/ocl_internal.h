/* Shared by ocl_runtime.c (context, program, buffers) and ocl_ops.c (the
   launches): the kernels by index, the structs behind the handles. */
#ifndef MLLM_BACKENDS_OPENCL_OCL_INTERNAL_H
#define MLLM_BACKENDS_OPENCL_OCL_INTERNAL_H
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "backends/opencl/ocl.h"

/* Work-group size of the reductions: LWS in kernels.cl. */
#define MLLM_OCL_LWS 64

/* X(enum name, kernel name in kernels.cl) */
#define MLLM_OCL_KERNELS(X)                                                                                    \
    X(K_MM_F32, "mul_mat_f32") X(K_MM_F16, "mul_mat_f16") X(K_MM_Q8_0, "mul_mat_q8_0")                       \
    X(K_MM_Q4_0, "mul_mat_q4_0") X(K_MM_Q4_K, "mul_mat_q4_K") X(K_MM_Q6_K, "mul_mat_q6_K")                   \
    X(K_GR_F32, "get_rows_f32") X(K_GR_F16, "get_rows_f16") X(K_GR_Q8_0, "get_rows_q8_0")                    \
    X(K_GR_Q4_0, "get_rows_q4_0") X(K_RMSNORM, "rmsnorm") X(K_LAYERNORM, "layernorm") X(K_SOFTMAX, "softmax") \
    X(K_ROPE, "rope") X(K_ADD, "add_f32") X(K_SILU_MUL, "silu_mul") X(K_GELU_MUL, "gelu_mul")                \
    X(K_GELU, "gelu_erf") X(K_SCALE, "scale_f32") X(K_SOFTCAP, "softcap") X(K_ATTN_SCORES, "attn_scores")      \
    X(K_ATTN_PV, "attn_pv") X(K_GELU_TANH, "gelu_tanh") X(K_IM2COL, "im2col") X(K_ATTN_ENC, "attn_enc")

#define MLLM_OCL_ENUM(e, name) MLLM_OCL_##e,
typedef enum { MLLM_OCL_KERNELS(MLLM_OCL_ENUM) MLLM_OCL_N_KERNELS } mllm_ocl_kernel;
#undef MLLM_OCL_ENUM

/* Plugin ops' programs, built on first use (ocl_custom.c), by the key the
   caller gives (the op's table entry: ops are never unregistered). */
#define MLLM_OCL_MAX_CUSTOM 64
typedef struct {
    const void *key;
    cl_program prog;
    cl_kernel k;
} mllm_ocl_custom_prog;

struct mllm_ocl {
    cl_context ctx;
    cl_device_id dev;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k[MLLM_OCL_N_KERNELS];
    char name[256];
    mllm_ocl_custom_prog custom[MLLM_OCL_MAX_CUSTOM];
    int n_custom;
};

/* Frees the plugin programs (mllm_ocl_close). */
void mllm_ocl_custom_release(mllm_ocl *c);

struct mllm_ocl_buf {
    mllm_ocl *c;
    cl_mem mem;
    size_t size;
};

/* An OpenCL error as an mllm status with a message naming what failed. */
mllm_status mllm_ocl_fail(cl_int err, const char *what);

#endif
