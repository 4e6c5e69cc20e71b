/* Chooses the kernel path once per process: the best one this CPU and this
   build run, or the one MLLM_CPU asks for (generic | avx2 | avx512 on x86,
   generic | neon | neon-dotprod | neon-i8mm on arm64). avx512 is the avx2
   path (its kernels and ops) with AVX-512 kernels in front where written
   (the q8_0x8 matmul on VNNI, the float GEMM's tile, the softmax), each
   bit-identical to its AVX2 kernel; MLLM_CPU=avx2 on
   the same CPU runs without them. Asking for a path the
   CPU (or this build) cannot run falls back to the best available, with one
   warning on stderr. Every choice below names its ISA: a path that is not
   "generic" is not assumed to be any particular one. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/fp4.h"
#include "backends/cpu/kernels_internal.h"
#include "backends/cpu/kquants.h"
#include "backends/cpu/quant5.h"
#include "backends/cpu/repack.h"
#include "core/cpu_features.h"
#if MLLM_HAVE_ARM_KERNELS
#include "backends/cpu/arm/arm_kernels.h"
#endif

static const char *const g_isa_names[MLLM_CPU_ISA_COUNT] = {
    [MLLM_CPU_ISA_GENERIC] = "generic",   [MLLM_CPU_ISA_AVX2] = "avx2",
    [MLLM_CPU_ISA_AVX512] = "avx512",     [MLLM_CPU_ISA_NEON] = "neon",
    [MLLM_CPU_ISA_NEON_DOTPROD] = "neon-dotprod", [MLLM_CPU_ISA_NEON_I8MM] = "neon-i8mm",
};

static mllm_cpu_isa g_isa = MLLM_CPU_ISA_GENERIC;
static pthread_once_t g_path_once = PTHREAD_ONCE_INIT;

bool mllm_cpu_isa_available(mllm_cpu_isa isa) {
    const mllm_cpu_features *f = mllm_cpu_features_get();
    (void)f;
    switch (isa) {
    case MLLM_CPU_ISA_GENERIC: return true;
#if MLLM_HAVE_X86_KERNELS
    case MLLM_CPU_ISA_AVX2: return mllm_cpu_features_avx2_path();
    case MLLM_CPU_ISA_AVX512: return mllm_cpu_features_avx512_path();
#endif
#if MLLM_HAVE_ARM_KERNELS
    case MLLM_CPU_ISA_NEON: return f->neon;
    case MLLM_CPU_ISA_NEON_DOTPROD: return f->dotprod;
    case MLLM_CPU_ISA_NEON_I8MM: return f->i8mm;
#endif
    default: return false;
    }
}

bool mllm_cpu_has_avx2(void) { return mllm_cpu_isa_available(MLLM_CPU_ISA_AVX2); }
bool mllm_cpu_has_avx512(void) { return mllm_cpu_isa_available(MLLM_CPU_ISA_AVX512); }

const char *mllm_cpu_isa_name(mllm_cpu_isa isa) {
    return isa >= 0 && isa < MLLM_CPU_ISA_COUNT ? g_isa_names[isa] : "?";
}

int mllm_cpu_isa_parse(const char *name) {
    for (int i = 0; name && i < MLLM_CPU_ISA_COUNT; i++)
        if (strcmp(name, g_isa_names[i]) == 0) return i;
    return -1;
}

static void choose_path(void) {
    /* best first */
    static const mllm_cpu_isa order[] = {MLLM_CPU_ISA_AVX512, MLLM_CPU_ISA_AVX2, MLLM_CPU_ISA_NEON_I8MM,
                                         MLLM_CPU_ISA_NEON_DOTPROD, MLLM_CPU_ISA_NEON};
    mllm_cpu_isa best = MLLM_CPU_ISA_GENERIC;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (mllm_cpu_isa_available(order[i])) {
            best = order[i];
            break;
        }
    g_isa = best;
    const char *want = getenv("MLLM_CPU");
    if (!want || !*want) return;
    const int w = mllm_cpu_isa_parse(want);
    if (w >= 0 && mllm_cpu_isa_available((mllm_cpu_isa)w)) g_isa = (mllm_cpu_isa)w;
    else fprintf(stderr, "mllm: MLLM_CPU=%s is not available on this CPU/build; using %s\n", want, g_isa_names[best]);
}

mllm_cpu_isa mllm_cpu_isa_get(void) {
    pthread_once(&g_path_once, choose_path);
    return g_isa;
}

const char *mllm_cpu_path(void) { return g_isa_names[mllm_cpu_isa_get()]; }

bool mllm_cpu_isa_is_x86(mllm_cpu_isa isa) { return isa == MLLM_CPU_ISA_AVX2 || isa == MLLM_CPU_ISA_AVX512; }

bool mllm_cpu_reads_unaligned_rows(void) { return mllm_cpu_isa_is_x86(mllm_cpu_isa_get()); }

bool mllm_cpu_isa_is_arm(mllm_cpu_isa isa) {
    return isa == MLLM_CPU_ISA_NEON || isa == MLLM_CPU_ISA_NEON_DOTPROD || isa == MLLM_CPU_ISA_NEON_I8MM;
}

/* AVX2 (and so avx512) and the NEON paths have kernels for every packed
   layout (repack.h, arm/repack_body.h). Elsewhere a packed
   layout would run through the generic reference, slower than the file's
   own layout. */
bool mllm_cpu_has_packed_kernels(void) {
    const mllm_cpu_isa isa = mllm_cpu_isa_get();
    return mllm_cpu_isa_is_x86(isa) || mllm_cpu_isa_is_arm(isa);
}

bool mllm_cpu_has_packed_kernel(mllm_dtype packed) {
    const mllm_cpu_isa isa = mllm_cpu_isa_get();
    if (mllm_cpu_isa_is_x86(isa)) return true;
#if MLLM_HAVE_ARM_KERNELS
    if (mllm_cpu_isa_is_arm(isa)) return mllm_packed_tiles_neon(packed) != NULL;
#endif
    (void)packed;
    return false;
}

#if !MLLM_HAVE_X86_KERNELS
const mllm_cpu_ops *mllm_cpu_ops_avx2(void) { return NULL; }
const mllm_cpu_ops *mllm_cpu_ops_avx512(void) { return NULL; }
#endif

const mllm_cpu_ops *mllm_cpu_ops_get(void) {
    const mllm_cpu_isa isa = mllm_cpu_isa_get();
    const mllm_cpu_ops *o = NULL;
    if (isa == MLLM_CPU_ISA_AVX2) o = mllm_cpu_ops_avx2();
    if (isa == MLLM_CPU_ISA_AVX512) o = mllm_cpu_ops_avx512();
#if MLLM_HAVE_ARM_KERNELS
    if (mllm_cpu_isa_is_arm(isa)) o = mllm_cpu_ops_neon();
#endif
    return o ? o : mllm_cpu_ops_generic();
}

static mllm_vec_dot_fn vec_dot_generic(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_F32: return mllm_vec_dot_f32_generic;
    case MLLM_DTYPE_F16: return mllm_vec_dot_f16_generic;
    case MLLM_DTYPE_BF16: return mllm_vec_dot_bf16_generic;
    case MLLM_DTYPE_Q8_0: return mllm_vec_dot_q8_0_generic;
    case MLLM_DTYPE_Q4_0: return mllm_vec_dot_q4_0_generic;
    case MLLM_DTYPE_Q4_1: return mllm_vec_dot_q4_1_generic;
    case MLLM_DTYPE_Q8_1: return mllm_vec_dot_q8_1_generic;
    case MLLM_DTYPE_Q5_0: return mllm_vec_dot_q5_0_generic;
    case MLLM_DTYPE_Q5_1: return mllm_vec_dot_q5_1_generic;
    case MLLM_DTYPE_Q4_K: return mllm_vec_dot_q4_k_generic;
    case MLLM_DTYPE_Q5_K: return mllm_vec_dot_q5_k_generic;
    case MLLM_DTYPE_Q6_K: return mllm_vec_dot_q6_k_generic;
    case MLLM_DTYPE_Q8_K: return mllm_vec_dot_q8_k_generic;
    case MLLM_DTYPE_MXFP4: return mllm_vec_dot_mxfp4_generic;
    case MLLM_DTYPE_W4A32_G32: return mllm_vec_dot_w4a32_g32_generic;
    case MLLM_DTYPE_W4A32_G64: return mllm_vec_dot_w4a32_g64_generic;
    default: return NULL;
    }
}

#if MLLM_HAVE_X86_KERNELS
/* NULL where AVX2 has no kernel of its own (the generic one runs). */
static mllm_vec_dot_fn vec_dot_avx2(mllm_dtype t) {
    switch (t) {
    case MLLM_DTYPE_F32: return mllm_vec_dot_f32_avx2;
    case MLLM_DTYPE_F16: return mllm_vec_dot_f16_avx2;
    case MLLM_DTYPE_BF16: return mllm_vec_dot_bf16_avx2;
    case MLLM_DTYPE_Q8_0: return mllm_vec_dot_q8_0_avx2;
    case MLLM_DTYPE_Q4_0: return mllm_vec_dot_q4_0_avx2;
    case MLLM_DTYPE_Q4_1: return mllm_vec_dot_q4_1_avx2;
    case MLLM_DTYPE_Q5_0: return mllm_vec_dot_q5_0_avx2;
    case MLLM_DTYPE_Q5_1: return mllm_vec_dot_q5_1_avx2;
    case MLLM_DTYPE_Q4_K: return mllm_vec_dot_q4_k_avx2;
    case MLLM_DTYPE_Q5_K: return mllm_vec_dot_q5_k_avx2;
    case MLLM_DTYPE_Q6_K: return mllm_vec_dot_q6_k_avx2;
    case MLLM_DTYPE_MXFP4: return mllm_vec_dot_mxfp4_avx2;
    case MLLM_DTYPE_W4A32_G32: return mllm_vec_dot_w4a32_g32_avx2;
    case MLLM_DTYPE_W4A32_G64: return mllm_vec_dot_w4a32_g64_avx2;
    default: return NULL;
    }
}
#endif

mllm_vec_dot_fn mllm_cpu_vec_dot_for(mllm_dtype t, const char *path) {
    const int isa = mllm_cpu_isa_parse(path);
    mllm_vec_dot_fn f = NULL;
    if (isa < 0 || !mllm_cpu_isa_available((mllm_cpu_isa)isa)) return vec_dot_generic(t);
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_isa_is_x86((mllm_cpu_isa)isa)) f = vec_dot_avx2(t);
#endif
#if MLLM_HAVE_ARM_KERNELS
    if (mllm_cpu_isa_is_arm((mllm_cpu_isa)isa)) f = mllm_vec_dot_arm(t, (mllm_cpu_isa)isa);
#endif
    return f ? f : vec_dot_generic(t);
}

void mllm_cpu_quantize_weight_row(mllm_dtype t, const float *x, void *y, int64_t n) {
#if MLLM_HAVE_X86_KERNELS
    if (t == MLLM_DTYPE_Q4_0 && mllm_cpu_isa_is_x86(mllm_cpu_isa_get())) {
        mllm_quantize_row_q4_0_avx2(x, y, n);
        return;
    }
#endif
    mllm_cpu_type_get(t)->from_float(x, y, n);
}

void mllm_cpu_quantize_row(mllm_dtype t, const float *x, void *y, int64_t n) {
    const mllm_cpu_isa isa = mllm_cpu_isa_get();
#if MLLM_HAVE_X86_KERNELS
    if (mllm_cpu_isa_is_x86(isa)) {
        switch (t) {
        case MLLM_DTYPE_Q8_0: mllm_quantize_row_q8_0_act_avx2(x, y, n); return;
        case MLLM_DTYPE_Q8_0S: mllm_quantize_row_q8_0s_avx2(x, y, n); return;
        case MLLM_DTYPE_Q8_K32: mllm_quantize_row_q8_k32_avx2(x, y, n); return;
        case MLLM_DTYPE_Q8_1: mllm_quantize_row_q8_1_act_avx2(x, y, n); return;
        case MLLM_DTYPE_F16: mllm_row_float_to_f16_avx2(x, y, n); return;
        default: break;
        }
    }
#endif
#if MLLM_HAVE_ARM_KERNELS
    if (mllm_cpu_isa_is_arm(isa) && mllm_quantize_row_arm(t, x, y, n)) return;
#endif
    (void)isa;
    switch (t) {
    case MLLM_DTYPE_Q8_0: mllm_quantize_row_q8_0_act_generic(x, y, n); return;
    case MLLM_DTYPE_Q8_0S: mllm_quantize_row_q8_0s_generic(x, y, n); return;
    case MLLM_DTYPE_Q8_K32: mllm_quantize_row_q8_k32_generic(x, y, n); return;
    case MLLM_DTYPE_Q8_1: mllm_quantize_row_q8_1_act_generic(x, y, n); return;
    case MLLM_DTYPE_F16: mllm_row_float_to_f16(x, y, n); return;
    default: {
        const mllm_cpu_type *ct = mllm_cpu_type_get(t);
        if (ct->from_float) ct->from_float(x, y, n);
    }
    }
}
