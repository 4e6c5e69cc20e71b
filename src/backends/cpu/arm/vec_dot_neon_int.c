/* The quantized dots on plain NEON (no SDOT: every arm64 CPU). */
#define MLLM_DOT(acc, a, b) neon_dot_s8(acc, a, b)
#define MLLM_SFX neon
#include "backends/cpu/arm/vec_dot_int_body.h"
