/* Which backends a decoder runs on: mllm_load_params.backend or
   MLLM_BACKENDS names them in order of preference ("opencl", "cuda,cpu");
   the CPU is always the last resort. The weights each backend can use (of
   the layers offloaded: -ngl) are copied into its buffers once, here,
   before the CPU repacks the rest, so graphs never copy weights
   (graph/sched.h). */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "graph/sched.h"
#include "models/decoder/decoder.h"

mllm_status mllm_decoder_use_backends(mllm_decoder *m, const char *list, int n_offload, const char *what) {
    mllm_decoder_drop_backends(m);
    if (!list || !*list) return MLLM_OK;
    mllm_status st = mllm_backends_parse(list, what, m->backends, &m->n_backends);
    if (st != MLLM_OK) {
        mllm_decoder_drop_backends(m);
        return st;
    }
    if (m->n_backends == 0) return MLLM_OK; /* the CPU alone */
    /* -ngl: the last n_offload layers, and with more than n_layer also the
       embeddings and the output (llama.cpp's rule: -ngl 99 is everything). */
    const int n_layer = m->cfg.n_layer;
    const int ngl = n_offload < 0 || n_offload > n_layer ? n_layer + 1 : n_offload;
    const int first = n_layer - (ngl < n_layer ? ngl : n_layer);
    enum { PER_LAYER = 16 };
    const int n_w = 3 + PER_LAYER * n_layer;
    mllm_tensor **w = mllm_calloc((size_t)n_w, sizeof *w);
    if (!w) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    int k = 0;
    if (ngl > n_layer) {
        w[k++] = m->output;
        w[k++] = m->output_norm;
        w[k++] = m->tok_embd;
    }
    for (int l = first; l < n_layer; l++) {
        const mllm_decoder_layer *L = &m->layers[l];
        mllm_tensor *lw[PER_LAYER] = {L->attn_norm, L->wq,       L->wk,      L->wv,     L->wo,         L->bq,
                                      L->bk,        L->bv,       L->q_norm,  L->k_norm, L->post_attn_norm,
                                      L->ffn_norm,  L->w_gate,   L->w_up,    L->w_down, L->post_ffw_norm};
        for (int j = 0; j < PER_LAYER; j++)
            if (lw[j]) w[k++] = lw[j];
    }
    st = MLLM_OK;
    for (int b = 0; b < m->n_backends && st == MLLM_OK; b++)
        if (!(m->placed[b] = mllm_sched_place_weights(m->backends[b], w, k)))
            st = mllm_err(MLLM_ERR_NOMEM, "out of memory placing the weights on backend %s", m->backends[b]->name);
    mllm_free(w);
    if (st != MLLM_OK) mllm_decoder_drop_backends(m);
    return st;
}

void mllm_decoder_drop_backends(mllm_decoder *m) {
    for (int b = 0; b < MLLM_MAX_BACKENDS; b++) {
        mllm_placement_free(m->placed[b]);
        m->placed[b] = NULL;
    }
    m->n_backends = 0;
}
