/* --image in mllm run and /image in mllm chat: the image file read and the
   conversation prefilled with it through mllm_chat_prefill (the model's
   vision tower and embedding cache, docs/vision.md). */
#include <stdio.h>
#include <stdlib.h>
#include "cli.h"

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

/* The file at path (malloc'd, *len bytes) or NULL after printing why. */
static unsigned char *read_image(const char *path, size_t *len, const char *who) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open image '%s'\n", who, path);
        return NULL;
    }
    unsigned char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) { /* regular file or not: read to the end, within the decoder's limit */
        if (*len == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *nb = cap <= MLLM_IMAGE_MAX_FILE_BYTES * 2 ? realloc(buf, cap) : NULL;
            if (!nb) {
                fprintf(stderr, "%s: image '%s': larger than %zu MiB, or out of memory\n", who, path,
                        MLLM_IMAGE_MAX_FILE_BYTES >> 20);
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0) break;
    }
    const int err = ferror(f);
    fclose(f);
    if (err || *len == 0) {
        fprintf(stderr, "%s: %s image '%s'\n", who, err ? "cannot read" : "empty", path);
        free(buf);
        return NULL;
    }
    return buf;
}

int cli_image_eval(mllm_session *s, const char *conv, const char *const *paths, int n, const char *who,
                   size_t *n_reused) {
    unsigned char *buf[64] = {0};
    size_t lens[64] = {0};
    if (n < 0 || n > 64) return 1;
    int rc = 1;
    for (int k = 0; k < n; k++)
        if (!(buf[k] = read_image(paths[k], &lens[k], who))) goto done;
    mllm_timings t0 = {.struct_size = sizeof t0}, t1 = {.struct_size = sizeof t1};
    mllm_session_timings(s, &t0);
    mllm_status st = mllm_chat_prefill(s, conv, (const void *const *)buf, lens, n, n_reused);
    if (st != MLLM_OK) {
        /* "image K" in the message is paths[K] */
        if (n == 1) fprintf(stderr, "%s: image '%s': %s (%s)\n", who, paths[0], mllm_status_str(st), mllm_last_error());
        else fprintf(stderr, "%s: %s (%s)\n", who, mllm_status_str(st), mllm_last_error());
        for (int k = 0; n > 1 && k < n; k++) fprintf(stderr, "%s:   image %d is '%s'\n", who, k, paths[k]);
        goto done;
    }
    mllm_session_timings(s, &t1);
    cli_image_report(who, &t0, &t1);
    rc = 0;
done:
    for (int k = 0; k < n; k++) free(buf[k]);
    return rc;
}
