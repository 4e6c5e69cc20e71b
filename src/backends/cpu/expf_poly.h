/* The constants of the vectorised Cephes-style expf every SIMD path uses
   (x86/ops_avx2.c, x86/ops_avx512.c, arm/ops_neon.c): x = n ln2 + r with
   ln2 split in two so r is exact enough, exp(r) by a degree-6 polynomial,
   2^n put in the exponent bits. One set of numbers, so the paths that
   must agree bit for bit (avx512 with avx2) cannot drift apart. */
#ifndef MLLM_EXPF_POLY_H
#define MLLM_EXPF_POLY_H

#define MLLM_EXPF_HI 88.0f        /* above: +inf */
#define MLLM_EXPF_LO (-87.33654f) /* below: 0 */
#define MLLM_EXPF_LOG2E 1.44269504088896341f
#define MLLM_EXPF_LN2_HI 0.693359375f
#define MLLM_EXPF_LN2_LO (-2.12194440e-4f)
#define MLLM_EXPF_P0 1.9875691500e-4f
#define MLLM_EXPF_P1 1.3981999507e-3f
#define MLLM_EXPF_P2 8.3334519073e-3f
#define MLLM_EXPF_P3 4.1665795894e-2f
#define MLLM_EXPF_P4 1.6666665459e-1f
#define MLLM_EXPF_P5 5.0000001201e-1f

#endif
