#include "core/cpu_features.h"

#include <pthread.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void detect(mllm_cpu_features *f) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave) return; /* the OS does not save YMM/ZMM: no AVX at all */
    const uint64_t xcr0 = read_xcr0();
    const bool os_ymm = (xcr0 & 0x6) == 0x6;      /* SSE + AVX state */
    const bool os_zmm = (xcr0 & 0xe6) == 0xe6;    /* + opmask, ZMM_Hi256, Hi16_ZMM */
    if (!os_ymm) return;
    f->fma = fma;
    f->f16c = f16c;
    if (__get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = (b >> 5) & 1;
    if (os_zmm) {
        f->avx512f = (b >> 16) & 1;
        f->avx512dq = (b >> 17) & 1;
        f->avx512bw = (b >> 30) & 1;
        f->avx512vl = (b >> 31) & 1;
        f->avx512vnni = (c >> 11) & 1;
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        f->avx512bf16 = (a1 >> 5) & 1;
        (void)b1, (void)c1, (void)d1;
    }
}
#elif defined(__aarch64__)
#include <sys/auxv.h>

/* The bits of <asm/hwcap.h>, spelled out so an older libc's headers do. */
#define MLLM_HWCAP_ASIMD (1UL << 1)
#define MLLM_HWCAP_ASIMDDP (1UL << 20)
#define MLLM_HWCAP2_I8MM (1UL << 13)

static void detect(mllm_cpu_features *f) {
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f->neon = (hw & MLLM_HWCAP_ASIMD) != 0;
    f->dotprod = f->neon && (hw & MLLM_HWCAP_ASIMDDP) != 0;
    f->i8mm = f->dotprod && (hw2 & MLLM_HWCAP2_I8MM) != 0;
}
#else
static void detect(mllm_cpu_features *f) { (void)f; }
#endif

static mllm_cpu_features g_features;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void detect_once(void) { detect(&g_features); }

const mllm_cpu_features *mllm_cpu_features_get(void) {
    pthread_once(&g_once, detect_once);
    return &g_features;
}

bool mllm_cpu_features_avx2_path(void) {
    const mllm_cpu_features *f = mllm_cpu_features_get();
    return f->avx2 && f->fma && f->f16c;
}

bool mllm_cpu_features_avx512_path(void) {
    const mllm_cpu_features *f = mllm_cpu_features_get();
    return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->avx512vnni &&
           mllm_cpu_features_avx2_path();
}
