/* What a build runs and what a model or file holds (mllm/mllm_info.h):
   the registry's rows, a loaded model's tensors and decode graph, and
   .mllm / CTranslate2 files read without loading them (`mllm info`). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "api/internal.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/ctranslate2.h"
#include "formats/mllmfile.h"

/* The fields up to and including `last` fit in a struct_size of n. */
#define FITS(n, type, last) ((n) >= offsetof(type, last) + sizeof(((type *)0)->last))

size_t mllm_architecture_count(void) { return mllm_arch_count(); }

mllm_status mllm_architecture_get(size_t i, mllm_architecture_info *out) {
    if (!out || i >= mllm_arch_count() || !FITS(out->struct_size, mllm_architecture_info, about))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_architecture_get: NULL, index %zu or struct_size", i);
    const mllm_arch *a = mllm_arch_at(i);
    *out = (mllm_architecture_info){.struct_size = out->struct_size, .name = a->name, .kind = mllm_kind_name(a->kind),
                                    .family = a->family, .hf_types = a->hf_types, .hf_classes = a->hf_classes,
                                    .about = a->about};
    return MLLM_OK;
}

/* Fills *out from the format-neutral fields; ne has n_dims entries. */
static mllm_status tensor_info(mllm_tensor_info *out, const char *name, size_t name_len, const char *dtype,
                               int n_dims, const int64_t *ne, uint64_t size) {
    if (!FITS(out->struct_size, mllm_tensor_info, size))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_tensor_info: struct_size %u is too small", out->struct_size);
    *out = (mllm_tensor_info){.struct_size = out->struct_size, .name = name, .name_len = name_len, .dtype = dtype,
                              .n_dims = n_dims, .size = size};
    for (int d = 0; d < n_dims && d < MLLM_TENSOR_MAX_DIMS; d++) out->ne[d] = ne[d];
    return MLLM_OK;
}

size_t mllm_model_n_tensors(const mllm_model *m) {
    return m && !mllm_model_can_transcribe(m) && m->file ? m->file->n_weights : 0;
}

mllm_status mllm_model_tensor_info(const mllm_model *m, size_t i, mllm_tensor_info *out) {
    if (!out || i >= mllm_model_n_tensors(m))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_model_tensor_info: NULL or index %zu out of range", i);
    const mllm_weight *w = &m->file->weights[i];
    return tensor_info(out, w->name, strlen(w->name), mllm_dtype_name(w->dtype), w->n_dims, w->ne, w->size);
}

double mllm_model_load_ms(const mllm_model *m) { return m ? m->load_ms : 0; }

mllm_status mllm_session_decode_graph(const mllm_session *s, int *n_nodes, size_t *act_bytes, mllm_text_sink sink,
                                      void *user) {
    if (!s) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_session_decode_graph: NULL session");
    if (n_nodes) *n_nodes = s->decode.n_nodes;
    if (act_bytes) *act_bytes = s->decode.buf_size;
    if (sink) mllm_graph_print(&s->decode, sink, user);
    return MLLM_OK;
}

mllm_status mllm_file_verify(const char *path, size_t *n_checked) {
    if (!path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_file_verify: NULL path");
    mllm_mllmfile *mf = NULL;
    size_t n = 0;
    mllm_status st = mllm_mllmfile_open(path, &mf);
    if (st == MLLM_OK) st = mllm_mllmfile_verify(mf, &n);
    mllm_mllmfile_close(mf);
    if (st == MLLM_OK && n_checked) *n_checked = n;
    return st;
}

/* The model.bin of a CTranslate2 folder or file into out, or false. A file
   counts when its first bytes are a known binary version and a short,
   printable spec name (no other format the library reads starts so). */
static bool ct2_path(const char *path, char *out, size_t cap) {
    struct stat sb;
    if (!path || stat(path, &sb) != 0) return false;
    if (S_ISDIR(sb.st_mode)) {
        char st_path[4096];
        snprintf(st_path, sizeof st_path, "%s/model.safetensors", path);
        if (stat(st_path, &sb) == 0) return false; /* a Hugging Face folder */
        if ((size_t)snprintf(out, cap, "%s/model.bin", path) >= cap) return false;
        return stat(out, &sb) == 0 && S_ISREG(sb.st_mode);
    }
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    uint8_t h[7];
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n < sizeof h) return false;
    uint32_t version = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
    uint16_t len = (uint16_t)(h[4] | h[5] << 8);
    if (version < MLLM_CT2_MIN_VERSION || version > MLLM_CT2_MAX_VERSION || len < 2 ||
        len > MLLM_CT2_MAX_SPEC_NAME + 1 || h[6] < 'A' || h[6] > 'Z')
        return false;
    return (size_t)snprintf(out, cap, "%s", path) < cap;
}

int mllm_file_is_ctranslate2(const char *path) {
    char bin[4096];
    return ct2_path(path, bin, sizeof bin);
}

_Static_assert(MLLM_CT2_MAX_RANK <= MLLM_TENSOR_MAX_DIMS, "a CTranslate2 variable's dims fit mllm_tensor_info");

struct mllm_file_info {
    mllm_mllmfile *mf; /* one of the two */
    mllm_ct2 *ct2;
};

mllm_status mllm_file_info_open(const char *path, mllm_file_info **out) {
    if (!path || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_file_info_open: NULL argument");
    *out = NULL;
    mllm_file_info *f = mllm_calloc(1, sizeof *f);
    if (!f) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    char bin[4096];
    mllm_status st = ct2_path(path, bin, sizeof bin) ? mllm_ct2_open(bin, &f->ct2) : mllm_mllmfile_open(path, &f->mf);
    if (st != MLLM_OK) {
        mllm_free(f);
        return st;
    }
    *out = f;
    return MLLM_OK;
}

void mllm_file_info_close(mllm_file_info *f) {
    if (!f) return;
    mllm_mllmfile_close(f->mf);
    mllm_ct2_close(f->ct2);
    mllm_free(f);
}

int mllm_file_info_format(const mllm_file_info *f) {
    return !f ? 0 : f->ct2 ? MLLM_FILE_CTRANSLATE2 : MLLM_FILE_MLLM;
}

uint32_t mllm_file_info_version(const mllm_file_info *f) {
    return !f ? 0 : f->ct2 ? mllm_ct2_version(f->ct2) : 3;
}

const char *mllm_file_info_spec(const mllm_file_info *f, uint32_t *revision) {
    if (!f || !f->ct2) return NULL;
    if (revision) *revision = mllm_ct2_spec_revision(f->ct2);
    return mllm_ct2_spec_name(f->ct2);
}

const char *mllm_file_info_config(const mllm_file_info *f, size_t *len) {
    return f && f->mf ? mllm_mllmfile_config(f->mf, len) : NULL;
}

size_t mllm_file_info_n_tensors(const mllm_file_info *f) {
    return !f ? 0 : f->ct2 ? mllm_ct2_n_tensors(f->ct2) : mllm_mllmfile_n_tensors(f->mf);
}

mllm_status mllm_file_info_tensor(const mllm_file_info *f, size_t i, mllm_tensor_info *out) {
    if (!out || i >= mllm_file_info_n_tensors(f))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_file_info_tensor: NULL or index %zu out of range", i);
    if (f->mf) {
        const mllm_mllmfile_tensor *t = mllm_mllmfile_tensor_at(f->mf, i);
        return tensor_info(out, t->name, t->name_len, mllm_dtype_name(t->dtype), t->n_dims, t->ne, t->size);
    }
    const mllm_ct2_tensor *t = mllm_ct2_tensor_at(f->ct2, i);
    int64_t ne[MLLM_CT2_MAX_RANK];
    for (int d = 0; d < t->rank; d++) ne[d] = t->dims[d];
    return tensor_info(out, t->name, strlen(t->name), mllm_ct2_dtype_name(t->dtype), t->rank, ne, t->size);
}

size_t mllm_file_info_n_aliases(const mllm_file_info *f) { return f && f->ct2 ? mllm_ct2_n_aliases(f->ct2) : 0; }

mllm_status mllm_file_info_alias(const mllm_file_info *f, size_t i, const char **name, const char **target) {
    if (!name || !target || i >= mllm_file_info_n_aliases(f))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_file_info_alias: NULL or index %zu out of range", i);
    const mllm_ct2_alias *a = mllm_ct2_alias_at(f->ct2, i);
    *name = a->name;
    *target = mllm_ct2_tensor_at(f->ct2, a->target)->name;
    return MLLM_OK;
}
