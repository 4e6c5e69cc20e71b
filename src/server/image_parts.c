/* Image content parts and data URLs (image_parts.h). Every length is
   checked: the URL against the decoded-size limit before any allocation,
   each base64 character against the alphabet, the padding against RFC 4648. */
#include "server/image_parts.h"
#include <string.h>
#include "core/alloc.h"

void srv_images_free(srv_images *im) {
    if (!im) return;
    for (int i = 0; i < im->n; i++) mllm_free(im->data[i]);
    mllm_free(im);
}

static int b64_value(unsigned char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

static bool starts_with_ci(const char *s, size_t n, const char *lit) {
    size_t k = strlen(lit);
    if (n < k) return false;
    for (size_t i = 0; i < k; i++) {
        char a = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
        if (a != lit[i]) return false;
    }
    return true;
}

int srv_data_url_decode(const char *url, size_t len, size_t max_bytes, uint8_t **out, size_t *n, const char *param,
                        srv_err *e) {
    *out = NULL;
    *n = 0;
    if (starts_with_ci(url, len, "http://") || starts_with_ci(url, len, "https://"))
        return srv_fail(e, 400, "invalid_image_url", param,
                        "'%s': image URLs are not fetched (this server has no network access): send the image "
                        "as a data URL, data:image/png;base64,...", param);
    if (!starts_with_ci(url, len, "data:"))
        return srv_fail(e, 400, "invalid_image_url", param, "'%s' must be a data URL (data:image/png;base64,...)",
                        param);
    const char *comma = memchr(url, ',', len);
    if (!comma) return srv_fail(e, 400, "invalid_image_url", param, "'%s': a data URL needs a ',' before its data", param);
    const char *meta = url + 5;
    const size_t mlen = (size_t)(comma - meta);
    if (!starts_with_ci(meta, mlen, "image/"))
        return srv_fail(e, 400, "invalid_image_url", param, "'%s': the data URL's media type must be image/...", param);
    if (mlen < 7 || !starts_with_ci(meta + mlen - 7, 7, ";base64"))
        return srv_fail(e, 400, "invalid_image_url", param, "'%s': only base64 data URLs (;base64,) are taken", param);
    const char *d = comma + 1;
    size_t dn = len - (size_t)(d - url);
    if (dn == 0) return srv_fail(e, 400, "invalid_image_url", param, "'%s': the data URL holds no data", param);
    if (dn % 4) return srv_fail(e, 400, "invalid_image_url", param, "'%s': base64 data whose length is not a multiple of 4", param);
    size_t pad = d[dn - 1] == '=' ? (d[dn - 2] == '=' ? 2 : 1) : 0;
    const size_t bytes = dn / 4 * 3 - pad;
    if (bytes > max_bytes)
        return srv_fail(e, 400, "image_too_large", param, "'%s': the image is %zu bytes, more than the %zu allowed",
                        param, bytes, max_bytes);
    uint8_t *buf = mllm_malloc(bytes ? bytes : 1);
    if (!buf) return srv_fail(e, 500, NULL, NULL, "out of memory");
    size_t o = 0;
    for (size_t i = 0; i < dn; i += 4) {
        int v[4];
        const bool last = i + 4 == dn;
        for (int k = 0; k < 4; k++) {
            const bool is_pad = last && k >= 4 - (int)pad;
            v[k] = is_pad ? 0 : b64_value((unsigned char)d[i + (size_t)k]);
            if (v[k] < 0) {
                mllm_free(buf);
                return srv_fail(e, 400, "invalid_image_url", param, "'%s': bad base64 at byte %zu", param,
                                i + (size_t)k);
            }
        }
        const uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        const int take = last ? 3 - (int)pad : 3;
        /* RFC 4648: the bits a padded group does not use must be zero */
        if (last && ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff)))) {
            mllm_free(buf);
            return srv_fail(e, 400, "invalid_image_url", param, "'%s': non-canonical base64 padding", param);
        }
        for (int k = 0; k < take; k++) buf[o++] = (uint8_t)(w >> (16 - 8 * k));
    }
    *out = buf;
    *n = o;
    return 0;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

bool srv_content_has_image(const cJSON *content) {
    const cJSON *part;
    if (!cJSON_IsArray(content)) return false;
    cJSON_ArrayForEach(part, content) {
        const cJSON *t = cJSON_IsObject(part) ? get(part, "type") : NULL;
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "image_url")) return true;
    }
    return false;
}

int srv_image_content(const cJSON *content, const char *param, srv_images **im, cJSON **parts,
                      int (*check_text)(const char *s, const char *param, srv_err *e), srv_err *e) {
    *parts = cJSON_CreateArray();
    if (!*parts) return srv_fail(e, 500, NULL, NULL, "out of memory");
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *t = cJSON_IsObject(part) ? get(part, "type") : NULL;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(*parts, o);
        if (cJSON_IsString(t) && !strcmp(t->valuestring, "text")) {
            const cJSON *text = get(part, "text");
            if (!cJSON_IsString(text))
                return srv_fail(e, 400, NULL, param, "'%s': a text part needs a string 'text'", param);
            if (check_text(text->valuestring, param, e)) return -1;
            cJSON_AddStringToObject(o, "type", "text");
            cJSON_AddStringToObject(o, "text", text->valuestring);
            continue;
        }
        if (!cJSON_IsString(t) || strcmp(t->valuestring, "image_url"))
            return srv_fail(e, 400, "unsupported_content", param,
                            "'%s': only text and image_url content parts are supported", param);
        const cJSON *iu = get(part, "image_url");
        const cJSON *url = cJSON_IsObject(iu) ? get(iu, "url") : iu; /* {"url": ...} or, as some clients send, the string */
        if (!cJSON_IsString(url))
            return srv_fail(e, 400, NULL, param, "'%s': an image_url part needs {\"url\": \"data:...\"}", param);
        const cJSON *detail = cJSON_IsObject(iu) ? get(iu, "detail") : NULL;
        if (detail && !(cJSON_IsString(detail) && (!strcmp(detail->valuestring, "auto") ||
                                                   !strcmp(detail->valuestring, "low") ||
                                                   !strcmp(detail->valuestring, "high"))))
            return srv_fail(e, 400, NULL, param, "'%s': image_url.detail must be auto, low or high", param);
        if (!*im && !(*im = mllm_calloc(1, sizeof **im))) return srv_fail(e, 500, NULL, NULL, "out of memory");
        if ((*im)->n == SRV_MAX_IMAGES)
            return srv_fail(e, 400, "too_many_images", param, "at most %d images per request", SRV_MAX_IMAGES);
        uint8_t *data = NULL;
        size_t n = 0;
        if (srv_data_url_decode(url->valuestring, strlen(url->valuestring), SRV_MAX_IMAGE_BYTES, &data, &n, param, e))
            return -1;
        (*im)->data[(*im)->n] = data;
        (*im)->len[(*im)->n++] = n;
        cJSON_AddStringToObject(o, "type", "image"); /* the template places it (detail: the model's own resolution) */
    }
    return 0;
}
