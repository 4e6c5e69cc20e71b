/* Image input: the fixtures of tests/data/images (tools/reference/
   image_fixtures.py) decode to what PIL hands transformers (exactly for
   PNG, BMP, GIF; within a bound for JPEG, whose IDCT and chroma upsampling
   differ between stb and libjpeg); and hostile files made here (empty,
   unknown, zero size, huge dimensions, over the pixel limit, a
   decompression bomb, truncated PNG / JPEG / BMP / GIF) get clear errors. */
#include "testutil.h"
#include "core/alloc.h"
#include "image/image.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#if defined(MLLM_HAVE_WEBP)
#define MLLM_HAVE_WEBP_TEST 1
#else
#define MLLM_HAVE_WEBP_TEST 0
#endif

static mllm_image load_ok(const char *rel, mllm_image_info *info) {
    mllm_image im;
    mllm_status st = mllm_image_load(tu_datap(rel), 0, &im, info);
    if (st) fail_msg("%s: %s", rel, mllm_last_error());
    return im;
}

/* Mean and max absolute difference of two images of one size. */
static void diff(const mllm_image *a, const mllm_image *b, double *mean, int *max) {
    assert_int_equal(a->width, b->width);
    assert_int_equal(a->height, b->height);
    size_t n = (size_t)a->width * a->height * 3;
    double s = 0;
    *max = 0;
    for (size_t i = 0; i < n; i++) {
        int d = abs((int)a->rgb[i] - (int)b->rgb[i]);
        s += d;
        if (d > *max) *max = d;
    }
    *mean = s / (double)n;
}

static void expect_same_as_pil(const char *file, const char *pil, const char *fmt) {
    mllm_image_info info;
    mllm_image a = load_ok(file, &info), b = load_ok(pil, NULL);
    assert_string_equal(info.format, fmt);
    double mean;
    int max;
    diff(&a, &b, &mean, &max);
    if (max) fail_msg("%s: differs from PIL by up to %d (mean %g)", file, max, mean);
    mllm_image_free(&a);
    mllm_image_free(&b);
}

static void test_fixtures_match_pil(void **state) {
    (void)state;
    expect_same_as_pil("images/alpha.png", "images/pil_alpha_png.png", "PNG"); /* alpha over white */
    expect_same_as_pil("images/anim.gif", "images/pil_anim_gif.png", "GIF");   /* first frame */
    expect_same_as_pil("images/photo.bmp", "images/pil_photo_bmp.png", "BMP");
    expect_same_as_pil("images/rgb16.png", "images/pil_rgb16_png.png", "PNG"); /* high byte */
    mllm_image_info info;
    mllm_image im = load_ok("images/rgb16.png", &info);
    assert_int_equal(info.bits, 16);
    mllm_image_free(&im);
}

/* 16-bit gray keeps the high byte of each sample (PIL clips to 255). */
static void test_gray16(void **state) {
    (void)state;
    mllm_image_info info;
    mllm_image im = load_ok("images/gray16.png", &info);
    assert_int_equal(info.bits, 16);
    assert_int_equal(info.channels, 1);
    for (int i = 0; i < 40 * 30; i++) {
        int v = (i * 54) >> 8;
        assert_int_equal(im.rgb[3 * i], v);
        assert_int_equal(im.rgb[3 * i + 2], v);
    }
    mllm_image_free(&im);
}

/* JPEG: stb's decoder is not libjpeg's (PIL); measured on photo.jpg
   (300 x 199, quality 85): mean 0.084, max 3 levels from PIL's decode;
   cmyk.jpg (Adobe CMYK, PIL's naive CMYK -> RGB): mean 0.009, max 1. */
static void test_jpeg_close_to_pil(void **state) {
    (void)state;
    mllm_image_info info;
    mllm_image a = load_ok("images/photo.jpg", &info), b = load_ok("images/photo.png", NULL);
    assert_string_equal(info.format, "JPEG");
    double mean;
    int max;
    diff(&a, &b, &mean, &max);
    print_message("photo.jpg vs PIL: mean %.3f max %d\n", mean, max);
    assert_true(mean < 0.2);
    assert_true(max <= 6);
    mllm_image_free(&a);
    mllm_image_free(&b);
    a = load_ok("images/cmyk.jpg", &info);
    b = load_ok("images/pil_cmyk_jpg.png", NULL);
    print_message("cmyk.jpg: %d channels\n", info.channels);
    diff(&a, &b, &mean, &max);
    print_message("cmyk.jpg vs PIL: mean %.3f max %d\n", mean, max);
    assert_true(mean < 0.05);
    assert_true(max <= 2);
    mllm_image_free(&a);
    mllm_image_free(&b);
}

/* ---- hostile files ------------------------------------------------------ */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;
static void put(buf *b, const void *d, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n) memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void be32(buf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, x, 4);
}
static void chunk(buf *b, const char *type, const uint8_t *d, size_t n) {
    be32(b, (uint32_t)n);
    size_t at = b->n;
    put(b, type, 4);
    put(b, d, n);
    be32(b, (uint32_t)crc32(0, b->p + at, (uInt)(n + 4)));
}
/* An 8-bit RGB PNG claiming w x h whose IDAT inflates to raw_len zero bytes. */
static buf make_png(uint32_t w, uint32_t h, size_t raw_len) {
    buf b = {0};
    put(&b, "\x89PNG\r\n\x1a\n", 8);
    uint8_t ihdr[13] = {(uint8_t)(w >> 24), (uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w,
                        (uint8_t)(h >> 24), (uint8_t)(h >> 16), (uint8_t)(h >> 8), (uint8_t)h, 8, 2, 0, 0, 0};
    chunk(&b, "IHDR", ihdr, 13);
    uint8_t *raw = calloc(raw_len ? raw_len : 1, 1);
    uLongf zn = compressBound((uLong)raw_len);
    uint8_t *z = malloc(zn);
    assert_int_equal(compress2(z, &zn, raw, (uLong)raw_len, 9), Z_OK);
    chunk(&b, "IDAT", z, zn);
    chunk(&b, "IEND", NULL, 0);
    free(raw);
    free(z);
    return b;
}

static mllm_status try_mem(const void *p, size_t n, uint64_t max_px) {
    mllm_image im;
    mllm_status st = mllm_image_load_memory(p, n, "hostile", max_px, &im, NULL);
    if (st == MLLM_OK) {
        mllm_image_free(&im);
    } else {
        assert_null(im.rgb);
        assert_true(strstr(mllm_last_error(), "hostile") != NULL); /* names the file */
    }
    return st;
}

static void expect_err(const void *p, size_t n, uint64_t max_px, mllm_status want, const char *needle) {
    mllm_status st = try_mem(p, n, max_px);
    if (st != want || !strstr(mllm_last_error(), needle))
        fail_msg("status %d (want %d), message '%s' (want '%s')", st, want, mllm_last_error(), needle);
}

static void test_hostile_headers(void **state) {
    (void)state;
    expect_err("", 0, 0, MLLM_ERR_FORMAT, "empty file");
    expect_err("II*\0\x08\0\0\0", 8, 0, MLLM_ERR_FORMAT, "not a PNG, JPEG, BMP, GIF or WebP"); /* TIFF */
    buf b = make_png(8, 8, 8 * 25);
    assert_int_equal(try_mem(b.p, b.n, 0), MLLM_OK); /* the generator itself is right */
    free(b.p);
    b = make_png(0, 8, 10);
    expect_err(b.p, b.n, 0, MLLM_ERR_FORMAT, "PNG of zero size (0 x 8)");
    free(b.p);
    /* huge dimensions, a few hundred bytes: refused before decoding */
    b = make_png(60000, 60000, 1000);
    expect_err(b.p, b.n, 0, MLLM_ERR_UNSUPPORTED, "over the limit of");
    free(b.p);
    b = make_png(100000, 100000, 1000);
    expect_err(b.p, b.n, 0, MLLM_ERR_UNSUPPORTED, "a side over the 65535-pixel limit");
    free(b.p);
    /* the configurable limit */
    size_t n = 0;
    void *png = tu_read_file(tu_datap("images/photo.png"), &n);
    expect_err(png, n, 300 * 199 - 1, MLLM_ERR_UNSUPPORTED, "300 x 199 = 59700 pixels, over the limit of 59699");
    assert_int_equal(try_mem(png, n, 300 * 199), MLLM_OK);
    free(png);
}

/* A decompression bomb: a 1 x 1 PNG whose IDAT inflates to 256 MB (250 kB
   on disk), and a 4000 x 4000 all-zero PNG (16 kB) against a 1 Mpx limit. */
static void test_decompression_bomb(void **state) {
    (void)state;
    buf b = make_png(1, 1, (size_t)256 << 20);
    print_message("1 x 1 bomb: %zu bytes\n", b.n);
    expect_err(b.p, b.n, 0, MLLM_ERR_UNSUPPORTED, "decode budget");
    free(b.p);
    /* a header promising far more than the file can hold (PNG, BMP, GIF) */
    b = make_png(4000, 4000, 1000);
    expect_err(b.p, b.n, 0, MLLM_ERR_FORMAT, "cannot be held in");
    free(b.p);
    uint8_t bmp[64] = {'B', 'M'};
    bmp[14] = 40;                                   /* BITMAPINFOHEADER */
    bmp[18] = 0x40, bmp[19] = 0x1F;                 /* width 8000 */
    bmp[22] = 0x40, bmp[23] = 0x1F;                 /* height 8000 */
    bmp[26] = 1, bmp[28] = 24;                      /* 1 plane, 24 bpp, BI_RGB */
    expect_err(bmp, sizeof bmp, 0, MLLM_ERR_FORMAT, "BMP of 8000 x 8000 cannot be held in 64 bytes");
    uint8_t gif[40] = {'G', 'I', 'F', '8', '9', 'a', 0xFF, 0xFF, 0xFF, 0x3F}; /* a 65535 x 16383 canvas */
    expect_err(gif, sizeof gif, 0, MLLM_ERR_UNSUPPORTED, "over the limit");
    expect_err(gif, sizeof gif, (uint64_t)1 << 40, MLLM_ERR_FORMAT, "cannot be held in 40 bytes");
    /* #42: work a few bytes can cost. An 8192 x 8192 JPEG header followed
       by 1000 copies of its scan header (14.6 KB): stb decodes the image
       once per scan. A 30-byte WebP (lossless header) claiming 8192 x 8192,
       a 30-byte OS/2 BMP claiming 10000 x 10000. Each refused before any
       decoding. */
    const struct {
        const char *file, *needle;
        mllm_status want;
    } bombs[] = {{"images/hostile_scans.jpg", "a JPEG of 1000 scans over 8192 x 8192", MLLM_ERR_UNSUPPORTED},
                 {"images/hostile_8192.webp", "a WebP of 8192 x 8192 cannot be held in 30 bytes", MLLM_ERR_FORMAT},
                 {"images/hostile_os2.bmp", "BMP of 10000 x 10000 cannot be held in 30 bytes", MLLM_ERR_FORMAT}};
    for (size_t i = 0; i < sizeof bombs / sizeof *bombs; i++) {
        if (!MLLM_HAVE_WEBP_TEST && strstr(bombs[i].file, ".webp")) continue; /* test_webp covers that build */
        size_t fn = 0;
        void *fp = tu_read_file(tu_datap(bombs[i].file), &fn);
        expect_err(fp, fn, (uint64_t)1 << 27, bombs[i].want, bombs[i].needle);
        free(fp);
    }
    b = make_png(4000, 4000, (size_t)4000 * (4000 * 3 + 1));
    print_message("4000 x 4000 zeros: %zu bytes\n", b.n);
    expect_err(b.p, b.n, 1 << 20, MLLM_ERR_UNSUPPORTED, "over the limit");
    free(b.p);
}

static void truncated(const char *rel, size_t keep_num, size_t keep_den) {
    size_t n = 0;
    uint8_t *p = tu_read_file(tu_datap(rel), &n);
    mllm_status st = try_mem(p, n * keep_num / keep_den, 0);
    if (st != MLLM_ERR_FORMAT) fail_msg("%s cut to %zu/%zu: status %d", rel, keep_num, keep_den, st);
    print_message("%s cut: %s\n", rel, mllm_last_error());
    free(p);
}

static void test_truncated(void **state) {
    (void)state;
    const char *files[] = {"images/photo.png", "images/photo.jpg", "images/photo.bmp", "images/anim.gif",
                           "images/alpha.png", "images/cmyk.jpg"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        truncated(files[i], 1, 2);
        /* a GIF cut after its first frame is a whole first frame */
        if (!strstr(files[i], ".gif")) truncated(files[i], 9, 10);
        truncated(files[i], 1, 8);
    }
    /* every file cut within its first 64 bytes (the headers' fixed offsets:
       a PNG cut inside its IHDR was read past its end), each cut in a heap
       block of exactly its size so that ASan sees any read beyond it */
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        size_t fn = 0;
        uint8_t *fp = tu_read_file(tu_datap(files[i]), &fn);
        for (size_t k = 1; k <= 64 && k < fn; k++) {
            uint8_t *cut = malloc(k);
            assert_non_null(cut);
            memcpy(cut, fp, k);
            if (try_mem(cut, k, 0) != MLLM_ERR_FORMAT) fail_msg("%s cut to %zu bytes: %s", files[i], k, mllm_last_error());
            free(cut);
        }
        free(fp);
    }
    /* one byte short of the end */
    size_t n = 0;
    uint8_t *p = tu_read_file(tu_datap("images/photo.bmp"), &n);
    assert_int_equal(try_mem(p, n, 0), MLLM_OK);
    assert_int_equal(try_mem(p, n - 1, 0), MLLM_ERR_FORMAT);
    free(p);
}

/* WebP (libwebp): lossless and alpha equal PIL's decode (alpha over white);
   lossy within a level (PIL bundles a newer libwebp: measured equal);
   animated, truncated, a header claiming 16384 x 16384 and a pixel limit
   are refused; a build without libwebp says so. */
static void test_webp(void **state) {
    (void)state;
    size_t len = 0;
    char *photo = tu_read_file(tu_datap("images/photo.webp"), &len);
    if (!MLLM_HAVE_WEBP_TEST) {
        expect_err(photo, len, 0, MLLM_ERR_UNSUPPORTED, "WebP support not built");
        free(photo);
        return;
    }
    expect_same_as_pil("images/photo.webp", "images/pil_photo_webp.png", "WebP");
    expect_same_as_pil("images/alpha.webp", "images/pil_alpha_webp.png", "WebP");
    mllm_image_info info;
    mllm_image a = load_ok("images/photo_lossy.webp", &info), b = load_ok("images/pil_photo_lossy_webp.png", NULL);
    double mean;
    int max;
    diff(&a, &b, &mean, &max);
    print_message("lossy WebP vs PIL: mean %.3g, max %d levels\n", mean, max);
    assert_true(max <= 1);
    mllm_image_free(&a);
    mllm_image_free(&b);
    size_t alen = 0;
    char *anim = tu_read_file(tu_datap("images/anim.webp"), &alen);
    expect_err(anim, alen, 0, MLLM_ERR_UNSUPPORTED, "animated WebP");
    free(anim);
    for (size_t cut = 12; cut < len; cut += len / 7) expect_err(photo, cut, 0, MLLM_ERR_FORMAT, "WebP");
    expect_err(photo, len, 100, MLLM_ERR_UNSUPPORTED, "over the limit");
    /* VP8L: signature 0x2f, then 14 bits of width - 1 and of height - 1 */
    unsigned char big[64] = "RIFF\x38\0\0\0WEBPVP8L\x2c\0\0\0\x2f\xff\xff\xff\x0f";
    expect_err(big, sizeof big, 0, MLLM_ERR_UNSUPPORTED, "16384 x 16384");
    unsigned char junk[20] = "RIFF\x0c\0\0\0WEBPVP8 ";
    expect_err(junk, sizeof junk, 0, MLLM_ERR_FORMAT, "unreadable WebP");
    free(photo);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_match_pil), cmocka_unit_test(test_gray16),
        cmocka_unit_test(test_jpeg_close_to_pil),  cmocka_unit_test(test_hostile_headers),
        cmocka_unit_test(test_decompression_bomb), cmocka_unit_test(test_truncated), cmocka_unit_test(test_webp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
