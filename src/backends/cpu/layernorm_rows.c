/* The graph's LayerNorm on the CPU: the generic LayerNorm's exact
   operations, LN_GROUP rows side by side (moved here from Whisper's own
   forward when that became a graph). */
#include <math.h>

#include "backends/cpu/kernels.h"

#define LN_GROUP 4 /* rows normalised side by side */

/* LayerNorm of rows x[0..nr) (nr <= LN_GROUP) of dim values each: for
   every row exactly mllm_layernorm_generic's operations in its order (the
   sums in double, one value after another), the rows interleaved so their
   dependency chains overlap (one row at a time waits on each double add:
   1.2-1.6 ms a call for 1500 x 384, Whisper's encoder has nine of them). */
static void layernorm_rows(float *Y, const float *X, const float *g, const float *b, int nr, int dim, float eps) {
    float mean[LN_GROUP], scale[LN_GROUP];
    if (nr == LN_GROUP) { /* four named accumulators: kept in registers */
        const float *x0 = X, *x1 = X + dim, *x2 = X + 2 * (size_t)dim, *x3 = X + 3 * (size_t)dim;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (int i = 0; i < dim; i++) {
            s0 += x0[i];
            s1 += x1[i];
            s2 += x2[i];
            s3 += x3[i];
        }
        mean[0] = (float)(s0 / dim), mean[1] = (float)(s1 / dim), mean[2] = (float)(s2 / dim), mean[3] = (float)(s3 / dim);
        double v0 = 0, v1 = 0, v2 = 0, v3 = 0;
        for (int i = 0; i < dim; i++) {
            const float d0 = x0[i] - mean[0], d1 = x1[i] - mean[1], d2 = x2[i] - mean[2], d3 = x3[i] - mean[3];
            v0 += (double)d0 * d0;
            v1 += (double)d1 * d1;
            v2 += (double)d2 * d2;
            v3 += (double)d3 * d3;
        }
        scale[0] = 1.0f / sqrtf((float)(v0 / dim) + eps), scale[1] = 1.0f / sqrtf((float)(v1 / dim) + eps);
        scale[2] = 1.0f / sqrtf((float)(v2 / dim) + eps), scale[3] = 1.0f / sqrtf((float)(v3 / dim) + eps);
    } else {
        for (int r = 0; r < nr; r++) {
            const float *x = X + (size_t)r * dim;
            double sum = 0, var = 0;
            for (int i = 0; i < dim; i++) sum += x[i];
            mean[r] = (float)(sum / dim);
            for (int i = 0; i < dim; i++) {
                const float d = x[i] - mean[r];
                var += (double)d * d;
            }
            scale[r] = 1.0f / sqrtf((float)(var / dim) + eps);
        }
    }
    for (int r = 0; r < nr; r++) {
        const float *x = X + (size_t)r * dim, m = mean[r], sc = scale[r];
        float *y = Y + (size_t)r * dim;
        /* the generic's (g ? v * g : v) + (b ? b : 0), the tests hoisted so
           the loops vectorise (the same operations per value) */
        if (g && b)
            for (int i = 0; i < dim; i++) y[i] = (x[i] - m) * sc * g[i] + b[i];
        else if (g)
            for (int i = 0; i < dim; i++) y[i] = (x[i] - m) * sc * g[i] + 0.0f;
        else if (b)
            for (int i = 0; i < dim; i++) y[i] = (x[i] - m) * sc + b[i];
        else
            for (int i = 0; i < dim; i++) y[i] = (x[i] - m) * sc + 0.0f;
    }
}

void mllm_cpu_layernorm_rows(float *Y, const float *X, const float *gamma, const float *beta, int64_t M, int dim,
                             float eps) {
    for (int64_t m = 0; m < M; m += LN_GROUP) {
        const int nr = (int)(M - m < LN_GROUP ? M - m : LN_GROUP);
        layernorm_rows(Y + (size_t)m * dim, X + (size_t)m * dim, gamma, beta, nr, dim, eps);
    }
}
