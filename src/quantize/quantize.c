/* mllm_quantize_file: open the source, pick each tensor's dtype with the
   mix rules, quantize its rows on n_threads threads (one tensor in memory
   at a time, produced when the writer first asks for its bytes), write a
   GGUF. */
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "formats/model_file.h"
#include "quantize/quantize.h"
#include "quantize/quantize_internal.h"
#include "models/registry.h"

enum { MAX_THREADS = 256 };

void mllm_quantize_default_params(mllm_quantize_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->type = "q4_k_m";
    p->n_threads = 1;
}

typedef struct {
    regex_t re;
    int dtype;
} override_rule;

typedef struct job job;
typedef struct {
    const mllm_weight *w;
    int dtype;           /* target */
    size_t out_size;
    size_t index, count;
    job *j;
} tensor_plan;

struct job {
    const mllm_quantize_params *p;
    uint8_t *buf;        /* the tensor being written (quantized) */
    size_t buf_cap;
    const tensor_plan *cur;
    int n_threads;
};

typedef struct {
    const tensor_plan *t;
    uint8_t *out;
    int64_t r0, r1;
    mllm_status st;
} worker_arg;

/* Rows [r0, r1): source row -> floats (unless already f32) -> target. */
static void *quantize_rows(void *vp) {
    worker_arg *a = vp;
    const mllm_weight *w = a->t->w;
    const int64_t K = w->ne[0];
    const mllm_cpu_type *src = mllm_cpu_type_get(w->dtype), *dst = mllm_cpu_type_get(a->t->dtype);
    const size_t in_rs = mllm_dtype_row_size((mllm_dtype)w->dtype, K), out_rs = mllm_dtype_row_size((mllm_dtype)a->t->dtype, K);
    float *tmp = w->dtype == MLLM_DTYPE_F32 ? NULL : mllm_malloc((size_t)K * sizeof(float));
    if (w->dtype != MLLM_DTYPE_F32 && !tmp) {
        a->st = mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory");
        return NULL;
    }
    for (int64_t r = a->r0; r < a->r1; r++) {
        const uint8_t *in = (const uint8_t *)w->data + (size_t)r * in_rs;
        const float *x = (const float *)in;
        if (tmp) {
            src->to_float(in, tmp, K);
            x = tmp;
        }
        dst->from_float(x, a->out + (size_t)r * out_rs, K);
    }
    mllm_free(tmp);
    return NULL;
}

static mllm_status quantize_tensor(job *j, const tensor_plan *t) {
    if (t->out_size > j->buf_cap) {
        mllm_free(j->buf);
        j->buf = mllm_malloc(t->out_size);
        j->buf_cap = j->buf ? t->out_size : 0;
        if (!j->buf) return mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory for %s (%zu bytes)", t->w->name, t->out_size);
    }
    int64_t rows = 1;
    for (int d = 1; d < t->w->n_dims; d++) rows *= t->w->ne[d];
    int nt = j->n_threads;
    if (nt > rows) nt = (int)rows;
    if (nt < 1) nt = 1;
    pthread_t th[MAX_THREADS];
    worker_arg args[MAX_THREADS];
    bool joined[MAX_THREADS];
    for (int i = 0; i < nt; i++) {
        args[i] = (worker_arg){t, j->buf, rows * i / nt, rows * (i + 1) / nt, MLLM_OK};
        /* The last slice runs on this thread, and so does any slice the OS
           refuses a thread for. */
        joined[i] = i < nt - 1 && pthread_create(&th[i], NULL, quantize_rows, &args[i]) == 0;
        if (!joined[i]) quantize_rows(&args[i]);
    }
    mllm_status st = MLLM_OK;
    for (int i = 0; i < nt; i++) {
        if (joined[i]) pthread_join(th[i], NULL);
        if (args[i].st && !st) st = args[i].st;
    }
    return st;
}

static void report(const mllm_quantize_params *p, const tensor_plan *t) {
    if (!p->progress) return;
    char line[320], shape[64] = "";
    size_t o = 0;
    for (int d = 0; d < t->w->n_dims; d++)
        o += (size_t)snprintf(shape + o, sizeof shape - o, "%s%6lld", d ? ", " : "", (long long)t->w->ne[d]);
    const bool conv = t->dtype != t->w->dtype;
    snprintf(line, sizeof line, "[%4zu/%4zu] %-36s - [%s], type = %6s, %s %-9s size = %8.3f MiB -> %8.3f MiB",
             t->index + 1, t->count, t->w->name, shape, mllm_dtype_name(t->w->dtype),
             conv ? "converting to" : "keeping      ", mllm_dtype_name(t->dtype), (double)t->w->size / 1048576.0,
             (double)t->out_size / 1048576.0);
    p->progress(p->user, line);
}

static mllm_status fill_tensor(void *user, void *buf, size_t offset, size_t n) {
    tensor_plan *t = user;
    job *j = t->j;
    if (t->dtype == t->w->dtype) { /* kept: the source bytes as they are */
        if (offset == 0) report(j->p, t);
        if (offset + n > t->out_size || t->out_size != t->w->size)
            return mllm_err(MLLM_ERR_INVALID_ARG, "quantize: size mismatch copying %s", t->w->name);
        memcpy(buf, (const uint8_t *)t->w->data + offset, n);
        return MLLM_OK;
    }
    if (offset == 0) {
        report(j->p, t);
        const mllm_status st = quantize_tensor(j, t);
        if (st) return st;
        j->cur = t;
    }
    if (j->cur != t || offset + n > t->out_size)
        return mllm_err(MLLM_ERR_INVALID_ARG, "quantize: writer asked for bytes out of order (%s)", t->w->name);
    memcpy(buf, j->buf + offset, n);
    return MLLM_OK;
}

static mllm_status parse_overrides(const mllm_quantize_params *p, override_rule *rules, size_t *n_ok) {
    *n_ok = 0;
    for (size_t i = 0; i < p->n_tensor_types; i++) {
        const char *spec = p->tensor_types[i], *eq = spec ? strrchr(spec, '=') : NULL;
        if (!eq || eq == spec || !eq[1])
            return mllm_err(MLLM_ERR_INVALID_ARG, "--tensor-type '%s': expected PATTERN=TYPE", spec ? spec : "");
        const int t = mllm_dtype_from_name(eq + 1);
        const mllm_dtype_traits *tr = mllm_dtype_get(t);
        if (!tr || !tr->supported || !mllm_cpu_type_get(t)->from_float || t == MLLM_DTYPE_Q8_K || t == MLLM_DTYPE_Q8_1)
            return mllm_err(MLLM_ERR_INVALID_ARG, "--tensor-type '%s': '%s' is not a type we can write", spec, eq + 1);
        char pat[256];
        const size_t len = (size_t)(eq - spec);
        if (len >= sizeof pat) return mllm_err(MLLM_ERR_INVALID_ARG, "--tensor-type '%s': pattern too long", spec);
        memcpy(pat, spec, len);
        pat[len] = 0;
        if (regcomp(&rules[i].re, pat, REG_EXTENDED | REG_NOSUB) != 0)
            return mllm_err(MLLM_ERR_INVALID_ARG, "--tensor-type '%s': bad regular expression '%s'", spec, pat);
        rules[i].dtype = t;
        (*n_ok)++;
    }
    return MLLM_OK;
}

mllm_status mllm_quantize_file(const char *in, const char *out, const mllm_quantize_params *p,
                               mllm_quantize_stats *stats) {
    mllm_quantize_params defaults;
    if (!p) mllm_quantize_default_params(&defaults), p = &defaults;
    if (!in || !out) return mllm_err(MLLM_ERR_INVALID_ARG, "quantize: NULL argument");
    if (p->struct_size != sizeof *p)
        return mllm_err(MLLM_ERR_INVALID_ARG, "quantize: struct_size %u is not %zu (fill the params with "
                        "mllm_quantize_default_params)", p->struct_size, sizeof *p);
    const mllm_quant_mix *mix = mllm_quant_mix_find(p->type);
    if (!mix)
        return mllm_err(MLLM_ERR_INVALID_ARG,
                        "quantize: unknown type '%s' (q4_k_m q4_k_s q5_k_m q5_k_s q6_k q8_0 q4_0 q4_1 q5_0 q5_1 "
                        "mxfp4 w4a32 w4a32_g64 f16 bf16 f32)", p->type ? p->type : "");
    mllm_cpu_init();
    override_rule *rules = p->n_tensor_types ? mllm_calloc(p->n_tensor_types, sizeof *rules) : NULL;
    if (p->n_tensor_types && !rules) return mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory");
    size_t n_rules = 0;
    mllm_status st = parse_overrides(p, rules, &n_rules);
    mllm_model_file *f = NULL;
    mllm_hparams hp;
    if (!st) st = mllm_family_open(in, &f, &hp);
    /* As llama-quantize: quantizing quantized weights again compounds the
       error, so it is refused unless asked for. */
    for (size_t i = 0; !st && !p->allow_requantize && i < f->n_weights; i++) {
        const mllm_weight *wt = &f->weights[i];
        const mllm_dtype_traits *tr = mllm_dtype_get(wt->dtype);
        if (wt->n_dims >= 2 && tr && tr->block_size > 1)
            st = mllm_err(MLLM_ERR_INVALID_ARG,
                          "quantize: %s is already quantized (tensor '%s' is %s): quantizing it again compounds the "
                          "error; quantize the f16/bf16/f32 original, or pass --allow-requantize", in, wt->name,
                          mllm_dtype_name(wt->dtype));
    }
    tensor_plan *plan = NULL;
    mllm_gguf_writer *w = NULL;
    job j = {.p = p, .n_threads = p->n_threads < 1 ? 1 : p->n_threads > MAX_THREADS ? MAX_THREADS : p->n_threads};
    mllm_quantize_stats s = {0};
    if (!st) {
        plan = mllm_calloc(f->n_weights ? f->n_weights : 1, sizeof *plan);
        if (!plan) st = mllm_err(MLLM_ERR_NOMEM, "quantize: out of memory");
    }
    if (!st) st = mllm_gguf_writer_new(&w);
    if (!st) st = f->gguf ? quant_meta_copy_gguf(f->gguf, w, NULL) : quant_meta_from_config(f, &hp, w);
    if (!st && !f->gguf) st = quant_meta_hf_tokenizer(f, &hp, w);
    if (!st) st = mllm_gguf_writer_add_u32(w, "general.quantization_version", 2);
    if (!st) st = mllm_gguf_writer_add_u32(w, "general.file_type", mix->ftype);
    if (!st) {
        mllm_quant_rules r = {.mix = mix, .n_layer = hp.n_layer, .tied = true, .pure = p->pure};
        for (size_t i = 0; i < f->n_weights; i++) {
            if (strstr(f->weights[i].name, "attn_v.weight") || strstr(f->weights[i].name, "attn_qkv.weight")) r.n_attn_v++;
            if (!strcmp(f->weights[i].name, "output.weight")) r.tied = false;
        }
        for (size_t i = 0; i < f->n_weights && !st; i++) {
            const mllm_weight *wt = &f->weights[i];
            int manual = -1;
            for (size_t k = 0; k < n_rules && manual < 0; k++)
                if (regexec(&rules[k].re, wt->name, 0, NULL, 0) == 0) manual = rules[k].dtype;
            const mllm_dtype_traits *src = mllm_dtype_get(wt->dtype);
            int t = mllm_quant_rules_pick(&r, wt->name, wt->n_dims, wt->ne, wt->dtype, manual);
            if (t != wt->dtype && (!src || !mllm_cpu_type_get(wt->dtype)->to_float))
                st = mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s' has dtype %s, which we cannot convert", in,
                              wt->name, mllm_dtype_name(wt->dtype));
            if (st) break;
            plan[i] = (tensor_plan){wt, t, mllm_dtype_row_size((mllm_dtype)t, wt->ne[0]), i, f->n_weights, &j};
            for (int d = 1; d < wt->n_dims; d++) plan[i].out_size *= (size_t)wt->ne[d];
            s.bytes_in += wt->size;
            s.bytes_out += plan[i].out_size;
            s.n_tensors++;
            if (t != wt->dtype) s.n_quantized++;
            st = mllm_gguf_writer_add_tensor_fn(w, wt->name, t, wt->n_dims, wt->ne, fill_tensor, &plan[i]);
        }
    }
    if (!st) st = mllm_gguf_writer_write(w, out);
    if (!st && stats && stats->struct_size > sizeof stats->struct_size) {
        s.struct_size = stats->struct_size;
        memcpy(stats, &s, stats->struct_size < sizeof s ? stats->struct_size : sizeof s);
    }
    mllm_gguf_writer_free(w);
    mllm_free(j.buf);
    mllm_free(plan);
    mllm_model_file_close(f);
    for (size_t k = 0; k < n_rules; k++) regfree(&rules[k].re);
    mllm_free(rules);
    return st;
}
