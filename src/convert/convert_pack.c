/* Which tensors a .mllm stores in the x8 kernel layouts. The set is the one
   the loader repacks when it reads plain weights (models/llama_pack.c), so a
   packed .mllm and its GGUF source run the very same kernels on the very
   same bytes, and loading the .mllm skips the repack (pure mmap). */
#include "backends/cpu.h"
#include "convert/convert_internal.h"
#include "core/alloc.h"
#include <ctype.h>
#include <string.h>

/* "blk.<digits>.<matrix>.weight" for the seven per-layer matmul weights. */
static bool is_layer_matrix(const char *name) {
    static const char *const k_mats[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    if (strncmp(name, "blk.", 4) != 0) return false;
    const char *s = name + 4;
    if (!isdigit((unsigned char)*s)) return false;
    while (isdigit((unsigned char)*s)) s++;
    if (*s++ != '.') return false;
    for (size_t i = 0; i < sizeof k_mats / sizeof *k_mats; i++) {
        size_t n = strlen(k_mats[i]);
        if (!strncmp(s, k_mats[i], n) && !strcmp(s + n, ".weight")) return true;
    }
    return false;
}

/* The output projection: output.weight, or the embedding table when the
   model ties them (no output.weight). */
static bool is_output_matrix(const mllm_model_file *f, const char *name) {
    if (!strcmp(name, "output.weight")) return true;
    return !strcmp(name, "token_embd.weight") && !mllm_model_file_find(f, "output.weight");
}

int cv_pack_type(const mllm_convert_params *p, const mllm_model_file *f, const mllm_weight *w, int plain) {
    if (p->to_gguf || p->pack != MLLM_CONVERT_PACK_X8) return -1;
    if (w->n_dims != 2 || w->ne[2] != 1 || w->ne[3] != 1) return -1;
    if (!is_layer_matrix(w->name) && !is_output_matrix(f, w->name)) return -1;
    return mllm_repack_type_for((mllm_dtype)plain, w->ne[0], w->ne[1]);
}

void cv_tensor_release(cv_tensor *t) {
    mllm_free(t->tmp);
    mllm_free(t->row);
    mllm_free(t->src_unpacked);
    mllm_free(t->plain_rows);
    t->tmp = NULL, t->row = NULL, t->src_unpacked = NULL, t->plain_rows = NULL;
}
