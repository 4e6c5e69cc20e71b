/* Which backends a decoder runs on: MLLM_BACKENDS names them in order of
   preference ("test,cpu"); the CPU is always the last resort. The matrices
   each backend can multiply are copied into its buffers once, here, so
   graphs never copy weights (graph/sched.h). */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "graph/sched.h"
#include "models/decoder.h"

mllm_status mllm_decoder_use_backends(mllm_decoder *m, const char *list) {
    mllm_decoder_drop_backends(m);
    if (!list || !*list) return MLLM_OK;
    char name[64];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 0 || n >= sizeof name) {
            mllm_decoder_drop_backends(m);
            return mllm_err(MLLM_ERR_INVALID_ARG, "MLLM_BACKENDS: bad list '%s' (names separated by commas)", list);
        }
        memcpy(name, p, n);
        name[n] = 0;
        mllm_backend *be = mllm_backend_by_name(name);
        if (!be) {
            char why[320]; /* mllm_err writes the buffer mllm_last_error reads */
            snprintf(why, sizeof why, "%s", mllm_last_error());
            mllm_status st = mllm_err(MLLM_ERR_INVALID_ARG, "MLLM_BACKENDS: %s", why);
            mllm_decoder_drop_backends(m);
            return st;
        }
        if (m->n_backends == MLLM_MAX_BACKENDS) {
            mllm_decoder_drop_backends(m);
            return mllm_err(MLLM_ERR_INVALID_ARG, "MLLM_BACKENDS: more than %d backends", MLLM_MAX_BACKENDS);
        }
        m->backends[m->n_backends++] = be;
        p += n + (p[n] == ',');
    }
    /* The CPU alone needs no schedule at all. */
    if (m->n_backends == 1 && m->backends[0] == mllm_backend_cpu()) {
        m->n_backends = 0;
        return MLLM_OK;
    }
    const int per_layer = 7;
    const int n_w = 1 + per_layer * m->cfg.n_layer;
    mllm_tensor **w = mllm_calloc((size_t)n_w, sizeof *w);
    if (!w) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
    int k = 0;
    w[k++] = m->output;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const mllm_decoder_layer *L = &m->layers[l];
        mllm_tensor *lw[7] = {L->wq, L->wk, L->wv, L->wo, L->w_gate, L->w_up, L->w_down};
        for (int j = 0; j < per_layer; j++) w[k++] = lw[j];
    }
    mllm_status st = MLLM_OK;
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
