/* The quantized dots with SDOT (Armv8.2 dotprod; built with +dotprod, run
   only where HWCAP_ASIMDDP says the CPU has it). */
#define MLLM_DOT(acc, a, b) vdotq_s32(acc, a, b)
#define MLLM_SFX dotprod
#include "backends/cpu/arm/vec_dot_int_body.h"
