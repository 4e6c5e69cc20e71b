/* Load-time repacking of the decoder's matmul weights: the CPU keeps them
   in its repacked-weights buffer type (backends/cpu.h,
   mllm_cpu_repack_weights), which packs them into the x8 kernel layouts and
   requantizes them on the way when m->requant asks. A .mllm file that
   already stores packed weights skips all of this (pure mmap). */
#include "models/decoder/decoder.h"

#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/error.h"

/* The matmul weights of the model; the embedding table only when it is also
   the output matrix (get_rows reads packed rows too). */
static int list_matrices(mllm_decoder *m, mllm_tensor **out) {
    int n = 0;
    out[n++] = m->output;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        mllm_decoder_layer *L = &m->layers[l];
        mllm_tensor *ts[7] = {L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down};
        for (int i = 0; i < 7; i++) out[n++] = ts[i];
    }
    return n;
}

mllm_status mllm_decoder_pack(mllm_decoder *m, const mllm_model_file *f, int repack, int n_threads) {
    if (repack == 0 && m->requant < 0) return MLLM_OK;
    const int n_max = 1 + 7 * m->cfg.n_layer;
    mllm_tensor **ts = mllm_malloc((size_t)n_max * sizeof *ts);
    bool *drop = mllm_malloc((size_t)n_max * sizeof *drop);
    if (!ts || !drop) {
        mllm_free(ts);
        mllm_free(drop);
        return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    const int n_all = list_matrices(m, ts);
    int n = 0;
    for (int i = 0; i < n_all; i++) {
        if (ts[i]->mirror) continue; /* computed on another backend */
        const mllm_weight *w = mllm_model_file_find(f, ts[i]->name);
        ts[n] = ts[i];
        drop[n++] = w && w->data == ts[i]->data && w->mapped;
    }
    const mllm_cpu_repack_params p = {.repack = repack, .requant = m->requant, .n_threads = n_threads};
    mllm_status st = mllm_cpu_repack_weights(ts, drop, n, &p, &m->packed_buf, &m->requant_saved);
    mllm_free(ts);
    mllm_free(drop);
    return st;
}
