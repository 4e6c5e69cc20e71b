/* The x8 packed-layout tiles with SDOT by element (Armv8.2 dotprod; built
   with +dotprod, run only where HWCAP_ASIMDDP says the CPU has it). */
#include <arm_neon.h>

#define MLLM_DOTL(acc, w, y, lane) vdotq_laneq_s32(acc, w, y, lane)
#define MLLM_SFX dotprod
#include "backends/cpu/arm/repack_body.h"
