/* The x8 packed-layout tiles on plain NEON (no SDOT: every arm64 CPU). An
   SDOT by element is emulated: the 4 activation bytes broadcast (DUP by
   element), two widening multiplies, pairwise adds down to one int32 per
   row; exact, as SDOT is. */
#include "backends/cpu/arm/neon_util.h"

static inline int32x4_t neon_dot4(int32x4_t acc, int8x16_t w, int8x16_t yb) {
    const int32x4_t p0 = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(yb)));
    const int32x4_t p1 = vpaddlq_s16(vmull_high_s8(w, yb));
    return vaddq_s32(acc, vpaddq_s32(p0, p1));
}
#define MLLM_DOTL(acc, w, y, lane) neon_dot4(acc, w, vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(y), lane)))
#define MLLM_SFX neon
#include "backends/cpu/arm/repack_body.h"
