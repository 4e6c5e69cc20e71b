/* --image in mllm run and /image in mllm chat: the image file read and the
   conversation prefilled with it through mllm_chat_prefill (the model's
   vision tower and embedding cache, docs/vision.md). */
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"
#include "image/image.h"

void cli_image_report(const char *who, const mllm_timings *a, const mllm_timings *b) {
    const int n = b->n_images - a->n_images;
    if (n <= 0) return;
    const int hits = b->n_images_cached - a->n_images_cached;
    fprintf(stderr, "%s: %d image%s, %d image tokens; decode + preprocess %.1f ms, vision tower %.1f ms", who, n,
            n == 1 ? "" : "s", b->n_image_tokens - a->n_image_tokens, b->image_decode_ms - a->image_decode_ms,
            b->vision_ms - a->vision_ms);
    if (hits) fprintf(stderr, " (%d from the embedding cache)", hits);
    fprintf(stderr, "\n");
}

int cli_image_eval(mllm_session *s, const char *conv, const char *image_path, const char *who) {
    FILE *f = image_path ? fopen(image_path, "rb") : NULL;
    if (image_path && !f) {
        fprintf(stderr, "%s: cannot open image '%s'\n", who, image_path);
        return 1;
    }
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    while (f) { /* regular file or not: read to the end, within the decoder's limit */
        if (len == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *nb = cap <= MLLM_IMAGE_MAX_FILE_BYTES + 1 ? realloc(buf, cap) : NULL;
            if (!nb) {
                fprintf(stderr, "%s: image '%s': larger than %zu MiB, or out of memory\n", who, image_path,
                        MLLM_IMAGE_MAX_FILE_BYTES >> 20);
                free(buf);
                fclose(f);
                return 1;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (f && ferror(f)) {
        fprintf(stderr, "%s: cannot read image '%s'\n", who, image_path);
        free(buf);
        fclose(f);
        return 1;
    }
    if (f) fclose(f);
    if (f && len == 0) {
        fprintf(stderr, "%s: image '%s' is empty\n", who, image_path);
        free(buf);
        return 1;
    }
    mllm_timings t0 = {.struct_size = sizeof t0}, t1 = {.struct_size = sizeof t1};
    mllm_session_timings(s, &t0);
    const void *img[1] = {buf};
    const size_t lens[1] = {len};
    mllm_status st = mllm_chat_prefill(s, conv, img, lens, f ? 1 : 0, NULL);
    free(buf);
    if (st != MLLM_OK) {
        fprintf(stderr, "%s: %s%s%s: %s (%s)\n", who, image_path ? "image '" : "", image_path ? image_path : "",
                image_path ? "'" : "", mllm_status_str(st), mllm_last_error());
        return 1;
    }
    mllm_session_timings(s, &t1);
    cli_image_report(who, &t0, &t1);
    return 0;
}
