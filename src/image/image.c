/* Image decoding: signature sniffing, the dimension check before decoding,
   the decode budget, truncation checks, and the conversion to RGB over a
   white background (image.h says what is converted how). */
#include "image/image.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include "image/image_stb.h"
#include "image/image_webp.h"
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The decode budget: stb's live allocations for an image of P pixels
   (PNG: the compressed stream, the inflated rows at 16 bits a sample, the
   converted copy; progressive JPEG: 16-bit coefficients for 3 components;
   GIF: three w x h x 4 canvases) stay under 24 bytes a pixel plus twice
   the file plus 16 MB. A 1 x 1 PNG whose IDAT inflates to a gigabyte fails
   at that budget. */
#define IMAGE_BUDGET_PER_PIXEL 24
#define IMAGE_BUDGET_SLACK ((size_t)16 << 20)

static const char *sniff(const uint8_t *p, size_t n) {
    if (n >= 8 && !memcmp(p, "\x89PNG\r\n\x1a\n", 8)) return "PNG";
    if (n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) return "JPEG";
    if (n >= 2 && p[0] == 'B' && p[1] == 'M') return "BMP";
    if (n >= 6 && (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6))) return "GIF";
    if (n >= 12 && !memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) return "WebP";
    return NULL;
}

static uint32_t be16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t le16(const uint8_t *p) { return (uint32_t)p[1] << 8 | p[0]; }
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0]; }

/* The dimensions a header claims, read here rather than by stb: stb's
   probe fails on a PNG over 1 GB of pixels and then reports the last
   format it tried ("unknown image type"), which says nothing. Returns
   false when the header is cut short (JPEG: no frame header found). The
   checks here cover every fixed offset size_can_hold reads after it: a
   PNG's whole IHDR (its 13 data bytes end at offset 29; the bit depth and
   colour type are at 24 and 25), a BMP's info header up to offset 26. */
static bool header_dims(const char *fmt, const uint8_t *p, size_t n, int64_t *w, int64_t *h) {
    if (!strcmp(fmt, "PNG")) {
        if (n < 29 || be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4)) return false;
        *w = be32(p + 16), *h = be32(p + 20);
        return true;
    }
    if (!strcmp(fmt, "GIF")) {
        if (n < 10) return false;
        *w = le16(p + 6), *h = le16(p + 8);
        return true;
    }
    if (!strcmp(fmt, "BMP")) {
        if (n < 26) return false;
        uint32_t hsz = le32(p + 14);
        if (hsz == 12) {
            *w = le16(p + 18), *h = le16(p + 20);
        } else {
            *w = (int32_t)le32(p + 18), *h = (int32_t)le32(p + 22);
            if (*h < 0) *h = -*h; /* top-down rows */
        }
        return true;
    }
    /* JPEG: walk the marker segments to the first start-of-frame */
    size_t i = 2;
    while (i + 4 <= n) {
        if (p[i] != 0xFF) return false;
        uint8_t m = p[i + 1];
        if (m == 0xFF) { /* fill byte */
            i++;
            continue;
        }
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { /* no length */
            i += 2;
            continue;
        }
        uint32_t len = be16(p + i + 2);
        if (len < 2) return false;
        if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
            if (i + 9 > n || len < 7) return false;
            *h = be16(p + i + 5), *w = be16(p + i + 7);
            return true;
        }
        if (m == 0xDA || m == 0xD9) return false; /* scan before any frame */
        i += 2 + (size_t)len;
    }
    return false;
}

/* A JPEG's entropy-coded data stuffs every 0xFF byte (FF 00), so after the
   last start-of-scan marker the only FF D9 is the end-of-image marker. An
   EXIF thumbnail's own FF D9 comes before the main image's scans. */
static bool jpeg_has_eoi(const uint8_t *p, size_t n) {
    size_t last_sos = 0;
    bool seen = false;
    for (size_t i = 2; i + 1 < n; i++)
        if (p[i] == 0xFF && p[i + 1] == 0xDA) last_sos = i, seen = true;
    if (!seen) return false;
    for (size_t i = last_sos + 2; i + 1 < n; i++)
        if (p[i] == 0xFF && p[i + 1] == 0xD9) return true;
    return false;
}

/* Whether a file of n bytes can hold a w x h image at all. stb allocates
   the whole image before it finds that the data is missing, and a GIF's
   canvas may be far larger than its frames: without this a 100-byte file
   claiming 8000 x 8000 costs 256 MB and a decode. The bounds are the
   formats' best compression ratios, with room to spare: PNG's deflate at
   most 1032:1 on the filtered rows; BMP (uncompressed or bit fields; stb
   reads no RLE) the rows themselves; JPEG at least one bit per 8 x 8 block
   of its fullest component, bounded here at 8192 pixels a byte; GIF's LZW
   at most 4096 pixels per 12-bit code, 4096 pixels a byte here. */
static bool size_can_hold(const char *fmt, const uint8_t *p, size_t n, uint64_t w, uint64_t h) {
    const uint64_t len = n, slack = 1u << 20;
    if (!strcmp(fmt, "PNG")) {
        static const int ch[7] = {1, 0, 3, 1, 2, 0, 4};
        int bits = p[24] * (p[25] < 7 && ch[p[25]] ? ch[p[25]] : 1);
        uint64_t raw = h * (1 + (w * (uint64_t)bits + 7) / 8);
        return raw <= 1032 * len + slack;
    }
    if (!strcmp(fmt, "BMP")) {
        uint32_t hsz = le32(p + 14);
        if (hsz == 12) { /* OS/2 1.x: 16-bit sides, bits per pixel at 24, never compressed */
            uint64_t stride = (w * le16(p + 24) + 31) / 32 * 4;
            return h * stride <= len;
        }
        if (hsz < 40 || n < 34) return true; /* stb refuses the other sizes */
        uint32_t bpp = le16(p + 28), comp = le32(p + 30);
        if (comp != 0 && comp != 3) return true; /* stb refuses the others */
        uint64_t stride = (w * bpp + 31) / 32 * 4;
        return h * stride <= len;
    }
    if (!strcmp(fmt, "JPEG")) return w * h <= 8192 * len + slack;
    return w * h <= 4096 * len + slack; /* GIF */
}

/* Debian 12's stb_image 2.27 builds a Huffman table from a DHT segment
   without checking that its 16 code counts sum to at most 256 (fixed
   upstream in 2.28): a larger sum writes past the table, into the heap.
   Found by tests/fuzz/fuzz_image.c (regressions/image/dht_over_256). So
   every DHT segment of the file, before or between scans, is checked here
   before stb sees it. Returns false on an oversized table or a segment
   running past the end of the file. *scans: the start-of-scan segments
   seen (stb's work grows with their number: MLLM_IMAGE_MAX_SCAN_PIXELS). */
static bool jpeg_dht_ok(const uint8_t *p, size_t n, uint64_t *scans) {
    size_t i = 2;
    *scans = 0;
    while (i + 4 <= n) {
        if (p[i] != 0xFF) { /* entropy-coded data: find the next marker */
            i++;
            continue;
        }
        uint8_t m = p[i + 1];
        if (m == 0xFF || m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD8)) { /* fill, stuffed, RSTn, SOI */
            i += m == 0xFF ? 1 : 2;
            continue;
        }
        if (m == 0xD9) return true; /* EOI */
        size_t len = be16(p + i + 2);
        if (len < 2 || i + 2 + len > n) return false;
        if (m == 0xC4) {
            size_t q = i + 4, end = i + 2 + len;
            while (q < end) {
                if (q + 17 > end) return false;
                size_t total = 0;
                for (int k = 0; k < 16; k++) total += p[q + 1 + k];
                if (total > 256 || q + 17 + total > end) return false;
                q += 17 + total;
            }
        }
        if (m == 0xDA) ++*scans;
        i += 2 + len; /* after SOS the scan's entropy-coded data follows */
    }
    return true;
}

/* stb_image 2.27 appends an IDAT chunk's data at idata + offset before it
   has allocated idata, so a first IDAT of length 0 does pointer arithmetic
   on NULL (undefined behaviour, caught by UBSan; found by
   tests/fuzz/fuzz_image.c, regressions/image/png_empty_first_idat). Such a
   file holds no image data where it starts, and no encoder writes one:
   refused. Walks the chunks with every length checked; false on a chunk
   past the end only when it is the first IDAT (the rest is stb's). */
static bool png_first_idat_ok(const uint8_t *p, size_t n) {
    size_t i = 8;
    while (i + 8 <= n) {
        const uint32_t len = be32(p + i);
        if (!memcmp(p + i + 4, "IDAT", 4)) return len > 0;
        if (len > n - i - 8 || n - i - 8 - len < 4) return true; /* cut short: stb reports it */
        i += 12 + (size_t)len;
    }
    return true;
}

/* PIL's Image.alpha_composite of src over an opaque white dst
   (libImaging/AlphaComposite.c, PRECISION_BITS 7), per channel. */
static uint8_t over_white(uint32_t c, uint32_t a) {
    const uint32_t pb = 7;
    uint32_t blend = 255 * (255 - a);
    uint32_t outa255 = a * 255 + blend;
    uint32_t coef1 = a * 255 * 255 * (1u << pb) / outa255;
    uint32_t coef2 = 255 * (1u << pb) - coef1;
    uint32_t t = c * coef1 + 255 * coef2 + (0x80u << pb);
    return (uint8_t)((((t >> 8) + t) >> 8) >> pb);
}

/* The RGBA pixels' conversion to RGB over white (rgb: px * 3 bytes). */
static void rgba_to_rgb(const uint8_t *rgba, size_t px, uint8_t *rgb) {
    for (size_t i = 0; i < px; i++) {
        const uint8_t *s = rgba + 4 * i;
        uint8_t *o = rgb + 3 * i;
        if (s[3] == 255) {
            o[0] = s[0], o[1] = s[1], o[2] = s[2];
        } else if (s[3] == 0) {
            o[0] = o[1] = o[2] = 255;
        } else {
            for (int c = 0; c < 3; c++) o[c] = over_white(s[c], s[3]);
        }
    }
}

static void set_info(mllm_image_info *info, int w, int h, int comp, int bits, const char *fmt) {
    if (!info) return;
    memset(info, 0, sizeof *info);
    info->width = w;
    info->height = h;
    info->channels = comp;
    info->bits = bits;
    snprintf(info->format, sizeof info->format, "%s", fmt);
}

/* The limits every format's claimed size must pass before decoding. */
static mllm_status check_dims(const char *label, const char *fmt, int64_t w, int64_t h, uint64_t max_pixels) {
    if (w <= 0 || h <= 0)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s of zero size (%lld x %lld)", label, fmt, (long long)w, (long long)h);
    if (w > MLLM_IMAGE_MAX_SIDE || h > MLLM_IMAGE_MAX_SIDE)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %s of %lld x %lld, a side over the %d-pixel limit", label, fmt,
                        (long long)w, (long long)h, MLLM_IMAGE_MAX_SIDE);
    uint64_t px = (uint64_t)w * (uint64_t)h;
    if (px > max_pixels)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %s of %lld x %lld = %llu pixels, over the limit of %llu pixels",
                        label, fmt, (long long)w, (long long)h, (unsigned long long)px, (unsigned long long)max_pixels);
    return MLLM_OK;
}

/* WebP (libwebp, image_webp.h): the header's size checked, then decoded
   into a buffer of that size. */
static mllm_status load_webp(const uint8_t *p, size_t len, const char *label, uint64_t max_pixels, mllm_image *out,
                             mllm_image_info *info) {
    if (!mllm_webp_built())
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: WebP support not built (install libwebp-dev and rebuild)", label);
    mllm_webp_info wi = mllm_webp_probe(p, len);
    if (!wi.ok) return mllm_err(MLLM_ERR_FORMAT, "%s: unreadable WebP (%s)", label, wi.reason);
    if (wi.animated) return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: animated WebP is not supported (still images only)", label);
    mllm_status st = check_dims(label, "WebP", wi.w, wi.h, max_pixels);
    if (st) return st;
    const size_t px = (size_t)wi.w * (size_t)wi.h;
    /* The bound size_can_hold gives a JPEG: a 34-byte header claiming
       8192 x 8192 would cost 512 MB and a decode. Lossy VP8 spends bits on
       every 16 x 16 macroblock; a lossless VP8L of one colour can spend
       none a pixel, so a large flat image in a tiny file is refused too
       (over 1 Mpx plus 8192 pixels a byte of file). */
    if ((uint64_t)px > 8192 * (uint64_t)len + ((uint64_t)1 << 20))
        return mllm_err(MLLM_ERR_FORMAT,
                        "%s: a WebP of %d x %d cannot be held in %zu bytes (truncated, or a decompression bomb)", label,
                        wi.w, wi.h, len);
    uint8_t *rgba = mllm_malloc(px * 4), *rgb = rgba ? mllm_malloc(px * 3) : NULL;
    if (!rgb) {
        mllm_free(rgba);
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory for %zu pixels", label, px);
    }
    if (!mllm_webp_decode(p, len, wi.w, wi.h, rgba)) {
        mllm_free(rgba);
        mllm_free(rgb);
        return mllm_err(MLLM_ERR_FORMAT, "%s: corrupt or truncated WebP", label);
    }
    rgba_to_rgb(rgba, px, rgb);
    mllm_free(rgba);
    *out = (mllm_image){.rgb = rgb, .width = wi.w, .height = wi.h};
    set_info(info, wi.w, wi.h, wi.alpha ? 4 : 3, 8, "WebP");
    return MLLM_OK;
}

mllm_status mllm_image_load_memory(const void *buf, size_t len, const char *label, uint64_t max_pixels,
                                   mllm_image *out, mllm_image_info *info) {
    if (out) memset(out, 0, sizeof *out);
    if (!out || (!buf && len)) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_image_load: NULL argument");
    if (!label) label = "image";
    if (!max_pixels) max_pixels = MLLM_IMAGE_DEFAULT_MAX_PIXELS;
    const uint8_t *p = buf;
    if (len == 0) return mllm_err(MLLM_ERR_FORMAT, "%s: empty file, not an image", label);
    if (len > MLLM_IMAGE_MAX_FILE_BYTES)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %zu bytes, over the %zu-byte image file limit", label, len,
                        MLLM_IMAGE_MAX_FILE_BYTES);
    const char *fmt = sniff(p, len);
    if (!fmt)
        return mllm_err(MLLM_ERR_FORMAT, "%s: not a PNG, JPEG, BMP, GIF or WebP file (unknown signature)", label);
    if (!strcmp(fmt, "WebP")) return load_webp(p, len, label, max_pixels, out, info);
    int64_t w = 0, h = 0;
    if (!header_dims(fmt, p, len, &w, &h)) return mllm_err(MLLM_ERR_FORMAT, "%s: truncated or corrupt %s header", label, fmt);
    mllm_status st = check_dims(label, fmt, w, h, max_pixels);
    if (st) return st;
    uint64_t px = (uint64_t)w * (uint64_t)h;
    if (!size_can_hold(fmt, p, len, (uint64_t)w, (uint64_t)h))
        return mllm_err(MLLM_ERR_FORMAT,
                        "%s: a %s of %lld x %lld cannot be held in %zu bytes (truncated, or a decompression bomb)",
                        label, fmt, (long long)w, (long long)h, len);
    mllm_stb_info hi = mllm_stb_probe(p, len);
    if (!hi.ok) return mllm_err(MLLM_ERR_FORMAT, "%s: unreadable %s header (stb_image: %s)", label, fmt, hi.reason);
    if (hi.w != w || hi.h != h)
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s header of %lld x %lld read by stb as %d x %d", label, fmt,
                        (long long)w, (long long)h, hi.w, hi.h);
    if (!strcmp(fmt, "PNG") && !png_first_idat_ok(p, len))
        return mllm_err(MLLM_ERR_FORMAT, "%s: corrupt PNG (its first IDAT chunk is empty)", label);
    if (!strcmp(fmt, "JPEG") && !jpeg_has_eoi(p, len))
        return mllm_err(MLLM_ERR_FORMAT, "%s: truncated JPEG (no end-of-image marker after the last scan)", label);
    uint64_t scans = 0;
    if (!strcmp(fmt, "JPEG") && !jpeg_dht_ok(p, len, &scans))
        return mllm_err(MLLM_ERR_FORMAT, "%s: corrupt JPEG (a Huffman table over 256 codes or a segment past the end)",
                        label);
    if (scans > 1 && scans * px > MLLM_IMAGE_MAX_SCAN_PIXELS)
        return mllm_err(MLLM_ERR_UNSUPPORTED,
                        "%s: a JPEG of %llu scans over %lld x %lld pixels: more decoding work than the %llu "
                        "pixel-scans allowed (a scan bomb, or a progressive image too large)",
                        label, (unsigned long long)scans, (long long)w, (long long)h,
                        (unsigned long long)MLLM_IMAGE_MAX_SCAN_PIXELS);
    size_t budget = (size_t)px * IMAGE_BUDGET_PER_PIXEL + 2 * len + IMAGE_BUDGET_SLACK;
    mllm_stb_image d = mllm_stb_decode(p, len, budget);
    if (!d.rgba) {
        if (d.over_budget)
            return mllm_err(MLLM_ERR_UNSUPPORTED,
                            "%s: %s data inflates past the %zu-byte decode budget of a %d x %d image (a decompression "
                            "bomb or a corrupt file)",
                            label, fmt, budget, hi.w, hi.h);
        if (!strcmp(d.reason ? d.reason : "", "outofmem")) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
        return mllm_err(MLLM_ERR_FORMAT, "%s: corrupt or truncated %s (%s)", label, fmt, d.reason ? d.reason : "?");
    }
    if (d.w != hi.w || d.h != hi.h)
        st = mllm_err(MLLM_ERR_FORMAT, "%s: %s decoded as %d x %d after a header of %d x %d", label, fmt, d.w, d.h,
                      hi.w, hi.h);
    else if (d.read_past_end)
        st = mllm_err(MLLM_ERR_FORMAT, "%s: truncated %s (the pixel data ends before the image does)", label, fmt);
    uint8_t *rgb = st ? NULL : mllm_malloc((size_t)px * 3);
    if (!st && !rgb) st = mllm_err(MLLM_ERR_NOMEM, "%s: out of memory for %llu pixels", label, (unsigned long long)px);
    if (st) {
        mllm_stb_free(d.rgba);
        return st;
    }
    rgba_to_rgb(d.rgba, (size_t)px, rgb);
    mllm_stb_free(d.rgba);
    out->rgb = rgb;
    out->width = hi.w;
    out->height = hi.h;
    set_info(info, hi.w, hi.h, hi.comp, hi.is16 ? 16 : 8, fmt);
    return MLLM_OK;
}

mllm_status mllm_image_load(const char *path, uint64_t max_pixels, mllm_image *out, mllm_image_info *info) {
    if (out) memset(out, 0, sizeof *out);
    if (!path || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_image_load: NULL argument");
    char *buf = NULL;
    size_t len = 0;
    mllm_status st = mllm_file_read_all(path, MLLM_IMAGE_MAX_FILE_BYTES, &buf, &len);
    if (st) return st;
    st = mllm_image_load_memory(buf, len, path, max_pixels, out, info);
    mllm_free(buf);
    return st;
}

void mllm_image_free(mllm_image *img) {
    if (!img) return;
    mllm_free(img->rgb);
    memset(img, 0, sizeof *img);
}
