/* mllm_model_summarize (what mllm bench prints of a model, as llama-bench
   names it), mllm_n_cpus and mllm_time_now: the facts a command needs that
   live below the API. */
#include <stdio.h>
#include <string.h>
#include "api/internal.h"
#include "backends/cpu.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "models/encoder.h"

/* llama.cpp's names of its file types (llama_model_ftype_name), so a
   Q4_K_M file reads "Q4_K - Medium" as in llama-bench, not its majority
   tensor type. */
static const char *ftype_name(uint32_t ft) {
    switch (ft) {
    case 0: return "all F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K - Medium";
    case 11: return "Q3_K - Small";
    case 12: return "Q3_K - Medium";
    case 13: return "Q3_K - Large";
    case 14: return "Q4_K - Small";
    case 15: return "Q4_K - Medium";
    case 16: return "Q5_K - Small";
    case 17: return "Q5_K - Medium";
    case 18: return "Q6_K";
    case 19: return "IQ2_XXS - 2.0625 bpw";
    case 20: return "IQ2_XS - 2.3125 bpw";
    case 21: return "Q2_K - Small";
    case 32: return "BF16";
    case 38: return "MXFP4 MoE";
    default: return NULL;
    }
}

/* The GGUF's general.file_type named as llama.cpp names it; otherwise (no
   such key, or ours: w4a32) the most common dtype among the 2-D weights. A
   .mllm's kernel layouts count as the type they hold (q4_1x8 is q4_1), so
   the same weights read the same from GGUF and .mllm. */
static void type_name(const mllm_model_file *f, char *buf, size_t cap) {
    uint32_t ft;
    const char *named = f->gguf && mllm_gguf_get_u32(f->gguf, "general.file_type", &ft) ? ftype_name(ft) : NULL;
    if (named) {
        snprintf(buf, cap, "%s", named);
        return;
    }
    size_t bytes[MLLM_DTYPE_COUNT] = {0};
    for (size_t i = 0; i < f->n_weights; i++) {
        const mllm_weight *w = &f->weights[i];
        if (w->n_dims == 2 && w->dtype >= 0 && w->dtype < MLLM_DTYPE_COUNT)
            bytes[mllm_repack_plain_type((mllm_dtype)w->dtype)] += w->size;
    }
    int best = 0;
    for (int t = 1; t < MLLM_DTYPE_COUNT; t++)
        if (bytes[t] > bytes[best]) best = t;
    snprintf(buf, cap, "%s", mllm_dtype_name(best));
    for (char *p = buf; *p; p++)
        if (*p >= 'a' && *p <= 'z') *p -= 32;
}

MLLM_API mllm_status mllm_model_summarize(const mllm_model *m, mllm_model_summary *out) {
    if (!m || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_model_summarize: NULL argument");
    if (!m->file) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_model_summarize: not a text model");
    memset(out, 0, sizeof *out);
    out->arch = m->dec.cfg.arch;
    /* llama-bench's column: the backend that computes the layers (the CPU
       takes what it lacks) */
    out->backend = m->dec.n_backends ? m->dec.backends[0]->name : "CPU";
    out->cpu_path = mllm_cpu_path();
    type_name(m->file, out->type, sizeof out->type);
    for (size_t i = 0; i < m->file->n_weights; i++) out->size += m->file->weights[i].size;
    out->n_params = m->enc ? m->row->encoder->n_params(m->enc) : m->dec.n_params;
    return MLLM_OK;
}

MLLM_API int mllm_n_cpus(void) { return mllm_cpu_count(); }

MLLM_API mllm_status mllm_time_now(int64_t *seconds) {
    if (!seconds) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_time_now: NULL argument");
    return mllm_clock_now(seconds, NULL);
}
