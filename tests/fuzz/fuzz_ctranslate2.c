/* Fuzz target: a CTranslate2 model.bin image, parsed in memory. Every
   tensor handed out must lie inside the image, have the byte size its dtype
   and dims imply, and be found by its name; every alias and scale must
   name a real tensor. */
#include "fuzz_util.h"
#include "core/dtype.h"
#include "formats/ctranslate2.h"
#include <string.h>

static size_t item_size(int dtype) {
    switch (dtype) {
    case MLLM_DTYPE_F32: case MLLM_DTYPE_I32: return 4;
    case MLLM_DTYPE_F16: case MLLM_DTYPE_BF16: case MLLM_DTYPE_I16: return 2;
    case MLLM_DTYPE_I8: return 1;
    default: return 0;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mllm_ct2 *c = NULL;
    mllm_status st = mllm_ct2_open_memory(data, size, "fuzz.bin", &c);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(c == NULL);
        return 0;
    }
    FZ_CHECK(mllm_ct2_version(c) >= MLLM_CT2_MIN_VERSION && mllm_ct2_version(c) <= MLLM_CT2_MAX_VERSION);
    FZ_CHECK(mllm_ct2_spec_name(c) && strlen(mllm_ct2_spec_name(c)) <= MLLM_CT2_MAX_SPEC_NAME);
    size_t n = mllm_ct2_n_tensors(c);
    const uint8_t *end = data + size;
    for (size_t i = 0; i < n; i++) {
        const mllm_ct2_tensor *t = mllm_ct2_tensor_at(c, i);
        FZ_CHECK(t && t->name && *t->name);
        FZ_CHECK(t->rank >= 0 && t->rank <= MLLM_CT2_MAX_RANK);
        FZ_CHECK(item_size(t->dtype) != 0);
        uint64_t n_el = 1;
        for (int d = 0; d < MLLM_CT2_MAX_RANK; d++) {
            FZ_CHECK(d < t->rank || t->dims[d] == 1);
            n_el *= t->dims[d];
        }
        FZ_CHECK(n_el == t->n_elements && t->size == n_el * item_size(t->dtype));
        const uint8_t *p = t->data;
        FZ_CHECK(p >= data && p <= end && t->size <= (size_t)(end - p));
        FZ_CHECK(mllm_ct2_find(c, t->name) == t);
        if (t->scale >= 0) {
            const mllm_ct2_tensor *s = mllm_ct2_tensor_at(c, (size_t)t->scale);
            FZ_CHECK(s && (t->dtype == MLLM_DTYPE_I8 || t->dtype == MLLM_DTYPE_I16));
            FZ_CHECK(s->n_elements == (t->dtype == MLLM_DTYPE_I8 ? t->dims[0] : 1));
        }
    }
    FZ_CHECK(mllm_ct2_tensor_at(c, n) == NULL);
    for (size_t i = 0; i < mllm_ct2_n_aliases(c); i++) {
        const mllm_ct2_alias *a = mllm_ct2_alias_at(c, i);
        FZ_CHECK(a && a->name && a->target < n);
        FZ_CHECK(mllm_ct2_find(c, a->name) == mllm_ct2_tensor_at(c, a->target));
    }
    mllm_ct2_close(c);
    return 0;
}
