/* What the CPU we run on can do, detected once. x86: cpuid + xgetbv (an ISA
   only counts when the OS also saves its registers). arm64: the kernel's
   getauxval(AT_HWCAP / AT_HWCAP2) bits, which is what the OS lets user code
   run. Features of the other architecture are always false. */
#ifndef MLLM_CORE_CPU_FEATURES_H
#define MLLM_CORE_CPU_FEATURES_H
#include <stdbool.h>

typedef struct {
    bool avx2, fma, f16c;                 /* the "avx2" kernel path needs all three */
    bool avx512f, avx512bw, avx512vl, avx512dq;
    bool avx512vnni, avx512bf16;
    bool neon;    /* AdvSIMD: baseline on every arm64 CPU Linux runs on */
    bool dotprod; /* SDOT/UDOT (Armv8.2+, optional before 8.4): HWCAP_ASIMDDP */
    bool i8mm;    /* SMMLA/USMMLA (Armv8.6, optional from 8.2): HWCAP2_I8MM */
} mllm_cpu_features;

/* Detected once, thread-safe; never NULL. */
const mllm_cpu_features *mllm_cpu_features_get(void);
bool mllm_cpu_features_avx2_path(void);   /* avx2 && fma && f16c */
bool mllm_cpu_features_avx512_path(void); /* f, bw, vl, dq, vnni */

#endif
