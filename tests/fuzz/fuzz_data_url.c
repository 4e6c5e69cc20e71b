/* Fuzz target: image content parts and base64 data URLs
   (src/server/image_parts.c). Input: a mode byte, then the text. Mode bit 0
   clear: the text is an image URL, decoded with a 4096-byte limit; on
   success the decoded bytes, encoded again as base64 (an independent
   encoder here), must be the URL's data exactly (canonical base64 only),
   and never more than the limit; on refusal, a 400 with a message. Bit 0
   set: the text is parsed as JSON and, when it is an array, taken as a
   message's content parts: success means every part became a text or an
   image part and each image was decoded. */
#include "fuzz_util.h"
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "server/image_parts.h"

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int no_check(const char *s, const char *param, srv_err *e) {
    (void)s, (void)param, (void)e;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_input in = {data, size};
    const uint8_t mode = fz_take_u8(&in);
    char *text = fz_dup_str(in.p, in.n);
    srv_err e = {0};
    if (!(mode & 1)) {
        uint8_t *out = NULL;
        size_t n = 0;
        if (srv_data_url_decode(text, in.n, 4096, &out, &n, "url", &e) == 0) {
            FZ_CHECK(out != NULL && n <= 4096);
            const char *comma = memchr(text, ',', in.n);
            FZ_CHECK(comma != NULL);
            const char *d = comma + 1;
            const size_t dn = in.n - (size_t)(d - text);
            FZ_CHECK(dn == (n + 2) / 3 * 4);
            for (size_t i = 0, o = 0; i < n; i += 3, o += 4) {
                uint32_t w = (uint32_t)out[i] << 16 | (i + 1 < n ? (uint32_t)out[i + 1] << 8 : 0) |
                             (i + 2 < n ? out[i + 2] : 0);
                char enc[4] = {B64[w >> 18 & 63], B64[w >> 12 & 63], i + 1 < n ? B64[w >> 6 & 63] : '=',
                               i + 2 < n ? B64[w & 63] : '='};
                FZ_CHECK(!memcmp(enc, d + o, 4));
            }
            mllm_free(out);
        } else {
            FZ_CHECK(out == NULL && n == 0);
            FZ_CHECK((e.status == 400 || e.status == 500) && e.msg[0]);
        }
    } else {
        cJSON *j = cJSON_ParseWithLength(text, in.n);
        if (cJSON_IsArray(j)) {
            srv_images *im = NULL;
            cJSON *parts = NULL;
            const bool has = srv_content_has_image(j);
            if (srv_image_content(j, "content", &im, &parts, no_check, &e) == 0) {
                FZ_CHECK(cJSON_GetArraySize(parts) == cJSON_GetArraySize(j));
                int n_img = 0;
                const cJSON *p;
                cJSON_ArrayForEach(p, parts) {
                    const cJSON *t = cJSON_GetObjectItemCaseSensitive(p, "type");
                    FZ_CHECK(cJSON_IsString(t));
                    n_img += !strcmp(t->valuestring, "image");
                }
                FZ_CHECK(n_img == (im ? im->n : 0) && n_img <= SRV_MAX_IMAGES && (n_img > 0) == has);
            } else {
                FZ_CHECK((e.status == 400 || e.status == 500) && e.msg[0]);
            }
            cJSON_Delete(parts);
            srv_images_free(im);
        }
        cJSON_Delete(j);
    }
    free(text);
    return 0;
}
