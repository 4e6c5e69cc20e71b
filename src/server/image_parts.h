/* OpenAI image content parts in chat messages (image_parts.c):
   {"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}.
   Only base64 data URLs are taken: the server fetches nothing (an http(s)
   URL is a 400 that says so). The decoded files go with the job to the
   scheduler, which reads the conversation with them through
   mllm_engine_image_prompt_new (sched_engine.c). */
#ifndef MLLM_SERVER_IMAGE_PARTS_H
#define MLLM_SERVER_IMAGE_PARTS_H
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include "server/internal.h"

#define SRV_MAX_IMAGES 16                      /* image parts per request */
#define SRV_MAX_IMAGE_BYTES ((size_t)20 << 20) /* one decoded image file (OpenAI's limit) */

typedef struct srv_images_s {
    int n;
    uint8_t *data[SRV_MAX_IMAGES]; /* mllm_malloc'd encoded files */
    size_t len[SRV_MAX_IMAGES];
} srv_images;

void srv_images_free(srv_images *im); /* NULL: no-op; frees im itself */

/* Decodes a data URL "data:image/<type>;base64,<data>" (len bytes of url,
   not NUL-terminated) into *out (mllm_malloc'd) and *n; at most max_bytes
   decoded. 0, or -1 with e filled (400: not a data URL, an http(s) URL,
   not an image type, not base64, bad base64, too large). */
int srv_data_url_decode(const char *url, size_t len, size_t max_bytes, uint8_t **out, size_t *n, const char *param,
                        srv_err *e);

/* Whether a message's content parts hold an image_url part. */
bool srv_content_has_image(const cJSON *content);

/* A message's content parts (text and image_url; param names it) as the
   template's parts ([{"type": "image"}, {"type": "text", "text": ...}],
   in order) into *parts, each image decoded and appended to *im (created
   when NULL). 0, or -1 with e filled (400: other part types, a bad URL,
   more than SRV_MAX_IMAGES images). check_text checks each text. */
int srv_image_content(const cJSON *content, const char *param, srv_images **im, cJSON **parts,
                      int (*check_text)(const char *s, const char *param, srv_err *e), srv_err *e);

#endif
