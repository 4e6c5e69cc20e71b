/* Fuzz target: GGUF. The input is a GGUF image: it is parsed in memory
   (mllm_gguf_open_memory) and every key/value and tensor is walked through
   the public getters, checking that whatever the reader hands out lies inside
   the input. A parsable image is also written to a scratch file and opened
   with mllm_gguf_open (same verdict expected) and mllm_model_file_open
   (config + weight-shape checks). */
#include "fuzz_model_check.h"
#include "fuzz_util.h"
#include "core/dtype.h"
#include "formats/gguf.h"
#include <stdlib.h>
#include <string.h>

/* Array elements visited per key: enough to reach every code path. */
#define FZ_ARR_VISIT 256

typedef struct {
    const uint8_t *begin, *end;
} span;

static void check_in(const span *s, const void *p, uint64_t n) {
    const uint8_t *q = p;
    FZ_CHECK(n == 0 || q != NULL);
    if (n == 0) return;
    FZ_CHECK(q >= s->begin && q <= s->end && n <= (uint64_t)(s->end - q));
}

static void check_str(const span *s, mllm_gguf_str str) { check_in(s, str.ptr, str.len); }

/* A NUL-terminated copy of a name, or NULL if the name holds a NUL (it can
   then not be looked up through the char* API). */
static char *name_of(mllm_gguf_str s) {
    if (s.len && memchr(s.ptr, 0, (size_t)s.len)) return NULL;
    return fz_dup_str(s.ptr, (size_t)s.len);
}

static void walk_kv(const mllm_gguf *g, const span *s, uint64_t i) {
    mllm_gguf_str k = mllm_gguf_kv_key(g, i);
    check_str(s, k);
    mllm_gguf_type type = mllm_gguf_kv_type(g, i);
    FZ_CHECK((unsigned)type <= MLLM_GGUF_FLOAT64);
    char *key = name_of(k);
    if (!key) return;
    FZ_CHECK(mllm_gguf_find_key(g, key) == (int64_t)i);
    uint32_t u32;
    int64_t i64;
    float f32;
    bool b;
    mllm_gguf_str str;
    (void)mllm_gguf_get_u32(g, key, &u32);
    (void)mllm_gguf_get_i64(g, key, &i64);
    (void)mllm_gguf_get_f32(g, key, &f32);
    (void)mllm_gguf_get_bool(g, key, &b);
    if (mllm_gguf_get_str(g, key, &str)) {
        FZ_CHECK(type == MLLM_GGUF_STRING);
        check_str(s, str);
    }
    mllm_gguf_type elem;
    uint64_t n = 0;
    const void *data = NULL;
    if (mllm_gguf_get_arr(g, key, &elem, &n, &data)) {
        FZ_CHECK(type == MLLM_GGUF_ARRAY);
        FZ_CHECK(elem != MLLM_GGUF_ARRAY);
        if (elem != MLLM_GGUF_STRING) {
            /* Numeric data must hold all n elements. */
            uint64_t esz = 0;
            switch (elem) {
            case MLLM_GGUF_UINT8: case MLLM_GGUF_INT8: case MLLM_GGUF_BOOL: esz = 1; break;
            case MLLM_GGUF_UINT16: case MLLM_GGUF_INT16: esz = 2; break;
            case MLLM_GGUF_UINT32: case MLLM_GGUF_INT32: case MLLM_GGUF_FLOAT32: esz = 4; break;
            default: esz = 8; break;
            }
            FZ_CHECK(n <= (uint64_t)(s->end - s->begin) / esz);
            check_in(s, data, n * esz);
        }
        uint64_t visit = n < FZ_ARR_VISIT ? n : FZ_ARR_VISIT;
        for (uint64_t j = 0; j < visit; j++) {
            double d;
            int64_t v;
            if (mllm_gguf_get_arr_str(g, key, j, &str)) check_str(s, str);
            (void)mllm_gguf_arr_f64(g, key, j, &d);
            (void)mllm_gguf_arr_i64(g, key, j, &v);
        }
        if (n > visit) (void)mllm_gguf_get_arr_str(g, key, n - 1, &str);
        double d;
        int64_t v;
        FZ_CHECK(!mllm_gguf_get_arr_str(g, key, n, &str));
        FZ_CHECK(!mllm_gguf_arr_f64(g, key, n, &d));
        FZ_CHECK(!mllm_gguf_arr_i64(g, key, n, &v));
        FZ_CHECK(!mllm_gguf_arr_i64(g, key, UINT64_MAX, &v));
    }
    free(key);
}

static void walk_tensor(const mllm_gguf *g, const span *s, uint64_t i) {
    const mllm_gguf_tensor *t = mllm_gguf_tensor_at(g, i);
    FZ_CHECK(t != NULL);
    check_str(s, t->name);
    FZ_CHECK(t->n_dims <= 4);
    const mllm_dtype_traits *tr = mllm_dtype_get(t->dtype);
    FZ_CHECK(tr != NULL);
    uint64_t n_el = 1;
    for (int d = 0; d < 4; d++) {
        FZ_CHECK(t->ne[d] >= 0);
        FZ_CHECK(d < (int)t->n_dims || t->ne[d] == 1);
        n_el *= (uint64_t)t->ne[d];
    }
    FZ_CHECK(n_el % (uint64_t)tr->block_size == 0);
    FZ_CHECK(t->size == n_el / (uint64_t)tr->block_size * tr->type_size);
    check_in(s, t->data, t->size);
    char *name = name_of(t->name);
    if (name) {
        FZ_CHECK(mllm_gguf_find_tensor(g, name) == t);
        free(name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mllm_gguf *g = NULL;
    mllm_status st = mllm_gguf_open_memory(data, size, "fuzz.gguf", &g);
    fz_check_status(st);
    if (st) {
        FZ_CHECK(g == NULL);
        return 0;
    }
    span s = {data, data + size};
    FZ_CHECK(mllm_gguf_version(g) == 2 || mllm_gguf_version(g) == 3);
    FZ_CHECK(mllm_gguf_file_size(g) == size);
    uint64_t n_kv = mllm_gguf_n_kv(g), n_t = mllm_gguf_n_tensors(g);
    FZ_CHECK(n_kv <= size && n_t <= size);
    for (uint64_t i = 0; i < n_kv; i++) walk_kv(g, &s, i);
    for (uint64_t i = 0; i < n_t; i++) walk_tensor(g, &s, i);
    FZ_CHECK(mllm_gguf_tensor_at(g, n_t) == NULL);
    /* A lookup that hits must hit that very key (the fuzzer can plant any
       name, so absence is not an invariant). */
    static const char probe[] = "general.architecture";
    int64_t k = mllm_gguf_find_key(g, probe);
    if (k >= 0) {
        mllm_gguf_str ks = mllm_gguf_kv_key(g, (uint64_t)k);
        FZ_CHECK(ks.len == sizeof probe - 1 && memcmp(ks.ptr, probe, sizeof probe - 1) == 0);
    }
    mllm_gguf_close(g);

    /* The file readers must agree with the memory reader. */
    const char *path = fz_write("model.gguf", data, size);
    FZ_CHECK(path != NULL);
    st = mllm_gguf_open(path, &g);
    fz_check_status(st);
    FZ_CHECK(st == MLLM_OK);
    FZ_CHECK(mllm_gguf_n_kv(g) == n_kv && mllm_gguf_n_tensors(g) == n_t);
    mllm_gguf_close(g);
    fz_open_model_file(path);
    fz_remove("model.gguf");
    return 0;
}
