/* What the CPU we run on can do, detected once (cpuid + xgetbv: an ISA only
   counts when the OS also saves its registers). All false off x86-64. */
#ifndef MLLM_CORE_CPU_FEATURES_H
#define MLLM_CORE_CPU_FEATURES_H
#include <stdbool.h>

typedef struct {
    bool avx2, fma, f16c;                 /* the "avx2" kernel path needs all three */
    bool avx512f, avx512bw, avx512vl, avx512dq;
    bool avx512vnni, avx512bf16;
} mllm_cpu_features;

/* Detected once, thread-safe; never NULL. */
const mllm_cpu_features *mllm_cpu_features_get(void);
bool mllm_cpu_features_avx2_path(void);   /* avx2 && fma && f16c */
bool mllm_cpu_features_avx512_path(void); /* f, bw, vl, dq, vnni */

#endif
