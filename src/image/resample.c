/* Pillow's bicubic resize (resample.h). The arithmetic below follows
   Pillow 13.0's libImaging/Resample.c step by step (precompute_coeffs,
   normalize_coeffs_8bpc, the 8-bpc passes), since any other rounding
   moves pixels by a level and the preprocessed patches with them. */
#include "image/resample.h"
#include "core/alloc.h"
#include "core/error.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define PRECISION_BITS (32 - 8 - 2)

static double bicubic(double x) {
    const double a = -0.5;
    if (x < 0.0) x = -x;
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

/* Pillow's LANCZOS: a sinc windowed by a sinc, support 3. */
static double sinc(double x) {
    if (x == 0.0) return 1.0;
    x *= M_PI;
    return sin(x) / x;
}

static double lanczos(double x) { return -3.0 <= x && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0; }

typedef struct {
    double (*fn)(double);
    double support;
} filter;

static const filter k_bicubic = {bicubic, 2.0}, k_lanczos = {lanczos, 3.0};

static uint8_t clip8(int v) {
    v >>= PRECISION_BITS; /* arithmetic shift, as in Pillow */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

typedef struct {
    int ksize;
    int *bounds;  /* per output: first input index, count */
    int32_t *kk;  /* per output: ksize fixed-point weights */
} coeffs;

static bool precompute(int in_size, int out_size, const filter *f, coeffs *c) {
    double scale = (double)(float)in_size / out_size, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = f->support * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    double *k = mllm_malloc((size_t)out_size * (size_t)ksize * sizeof(double));
    c->bounds = mllm_malloc((size_t)out_size * 2 * sizeof(int));
    c->kk = mllm_malloc((size_t)out_size * (size_t)ksize * sizeof(int32_t));
    c->ksize = ksize;
    if (!k || !c->bounds || !c->kk) {
        mllm_free(k);
        return false;
    }
    for (int xx = 0; xx < out_size; xx++) {
        double center = (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5);
        if (xmin < 0) xmin = 0;
        int xmax = (int)(center + support + 0.5);
        if (xmax > in_size) xmax = in_size;
        xmax -= xmin;
        double *kr = k + (size_t)xx * ksize;
        int x = 0;
        for (; x < xmax; x++) {
            double w = f->fn((x + xmin - center + 0.5) * ss);
            kr[x] = w;
            ww += w;
        }
        for (x = 0; x < xmax; x++)
            if (ww != 0.0) kr[x] /= ww;
        for (; x < ksize; x++) kr[x] = 0;
        c->bounds[2 * xx] = xmin;
        c->bounds[2 * xx + 1] = xmax;
    }
    for (size_t i = 0; i < (size_t)out_size * (size_t)ksize; i++)
        c->kk[i] = k[i] < 0 ? (int32_t)(-0.5 + k[i] * (1 << PRECISION_BITS))
                            : (int32_t)(0.5 + k[i] * (1 << PRECISION_BITS));
    mllm_free(k);
    return true;
}

/* Horizontal pass: rows x in_w -> rows x out_w. */
static void pass_h(const uint8_t *src, int in_w, int rows, const coeffs *c, int out_w, uint8_t *dst) {
    for (int yy = 0; yy < rows; yy++) {
        const uint8_t *row = src + (size_t)yy * in_w * 3;
        for (int xx = 0; xx < out_w; xx++) {
            int xmin = c->bounds[2 * xx], xmax = c->bounds[2 * xx + 1];
            const int32_t *k = c->kk + (size_t)xx * c->ksize;
            int s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
            for (int x = 0; x < xmax; x++) {
                const uint8_t *p = row + (size_t)(x + xmin) * 3;
                s0 += p[0] * k[x];
                s1 += p[1] * k[x];
                s2 += p[2] * k[x];
            }
            uint8_t *o = dst + ((size_t)yy * out_w + xx) * 3;
            o[0] = clip8(s0), o[1] = clip8(s1), o[2] = clip8(s2);
        }
    }
}

/* Vertical pass: src (whose row 0 is source row y_off) -> out_h x w. */
static void pass_v(const uint8_t *src, int w, const coeffs *c, int y_off, int out_h, uint8_t *dst) {
    for (int yy = 0; yy < out_h; yy++) {
        int ymin = c->bounds[2 * yy] - y_off, ymax = c->bounds[2 * yy + 1];
        const int32_t *k = c->kk + (size_t)yy * c->ksize;
        for (int xx = 0; xx < w; xx++) {
            int s0 = 1 << (PRECISION_BITS - 1), s1 = s0, s2 = s0;
            for (int y = 0; y < ymax; y++) {
                const uint8_t *p = src + ((size_t)(y + ymin) * w + xx) * 3;
                s0 += p[0] * k[y];
                s1 += p[1] * k[y];
                s2 += p[2] * k[y];
            }
            uint8_t *o = dst + ((size_t)yy * w + xx) * 3;
            o[0] = clip8(s0), o[1] = clip8(s1), o[2] = clip8(s2);
        }
    }
}

static void coeffs_free(coeffs *c) {
    mllm_free(c->bounds);
    mllm_free(c->kk);
}

static mllm_status resize(const mllm_image *in, int out_w, int out_h, const filter *f, mllm_image *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!in || !in->rgb || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "image resize: NULL argument");
    if (out_w < 1 || out_h < 1 || out_w > MLLM_IMAGE_MAX_SIDE || out_h > MLLM_IMAGE_MAX_SIDE || in->width < 1 ||
        in->height < 1)
        return mllm_err(MLLM_ERR_INVALID_ARG, "image resize: bad size %d x %d -> %d x %d", in->width, in->height,
                        out_w, out_h);
    const int iw = in->width, ih = in->height;
    coeffs cv = {0}, ch = {0};
    uint8_t *tmp = NULL, *dst = NULL;
    mllm_status st = MLLM_OK;
    const bool need_h = out_w != iw, need_v = out_h != ih;
    /* Pillow 13 runs the vertical pass first when the height shrinks by
       more than twice what the width does (Resample.c, horizontal_first);
       Pillow 12 and older always ran the horizontal pass first. The order
       moves pixels by up to ~20 levels, so it is Pillow 13's here. */
    const bool h_first = !((ih - out_h) > 0 && (ih - out_h) > (iw - out_w) * 2);
    if (!precompute(ih, out_h, f, &cv)) goto nomem;
    if (need_h && !precompute(iw, out_w, f, &ch)) goto nomem;
    dst = mllm_malloc((size_t)out_w * (size_t)out_h * 3);
    if (!dst) goto nomem;
    if (!need_h && !need_v) {
        memcpy(dst, in->rgb, (size_t)iw * ih * 3);
    } else if (h_first) {
        /* only the rows the vertical pass reads */
        int y_first = cv.bounds[0], y_last = cv.bounds[2 * out_h - 2] + cv.bounds[2 * out_h - 1];
        if (!need_v) y_first = 0, y_last = ih;
        const uint8_t *src = in->rgb;
        if (need_h) {
            uint8_t *hdst = need_v ? (tmp = mllm_malloc((size_t)out_w * (size_t)(y_last - y_first) * 3)) : dst;
            if (!hdst) goto nomem;
            pass_h(in->rgb + (size_t)y_first * iw * 3, iw, y_last - y_first, &ch, out_w, hdst);
            src = hdst;
        }
        if (need_v) pass_v(src, need_h ? out_w : iw, &cv, need_h ? y_first : 0, out_h, dst);
    } else {
        const uint8_t *src = in->rgb;
        if (need_v) {
            uint8_t *vdst = need_h ? (tmp = mllm_malloc((size_t)iw * (size_t)out_h * 3)) : dst;
            if (!vdst) goto nomem;
            pass_v(in->rgb, iw, &cv, 0, out_h, vdst);
            src = vdst;
        }
        if (need_h) pass_h(src, iw, out_h, &ch, out_w, dst);
    }
    out->rgb = dst, out->width = out_w, out->height = out_h;
    dst = NULL;
    goto done;
nomem:
    st = mllm_err(MLLM_ERR_NOMEM, "image resize to %d x %d: out of memory", out_w, out_h);
done:
    mllm_free(dst);
    coeffs_free(&cv);
    coeffs_free(&ch);
    mllm_free(tmp);
    return st;
}

mllm_status mllm_image_resize_bicubic(const mllm_image *in, int out_w, int out_h, mllm_image *out) {
    return resize(in, out_w, out_h, &k_bicubic, out);
}

mllm_status mllm_image_resize_lanczos(const mllm_image *in, int out_w, int out_h, mllm_image *out) {
    return resize(in, out_w, out_h, &k_lanczos, out);
}
