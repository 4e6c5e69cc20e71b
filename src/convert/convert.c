/* mllm_convert: plan a dtype per tensor, then stream every tensor through
   the row converter into a .mllm v3 (or GGUF) writer. */
#include "convert/convert_internal.h"
#include "convert/pipeline.h"
#include "formats/hf_config.h"
#include "formats/mllm_v1v2.h"
#include "formats/mllmfile_model.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/error.h"
#include <stdio.h>
#include <string.h>

void mllm_convert_default_params(mllm_convert_params *p) { memset(p, 0, sizeof *p); }

static void progress(const cv_tensor *t) {
    const mllm_convert_params *p = t->params;
    if (!p->progress) return;
    char line[512], shape[96] = "";
    size_t n = 0;
    for (int d = 0; d < t->w->n_dims; d++) n += (size_t)snprintf(shape + n, sizeof shape - n, d ? ", %lld" : "%lld", (long long)t->w->ne[d]);
    char why[32];
    if (t->rule >= 0) snprintf(why, sizeof why, "rule %d", t->rule + 1);
    else snprintf(why, sizeof why, "%s", t->rule == -2 ? "1-D: f32" : "default");
    snprintf(line, sizeof line, "[%3zu/%zu] %-36s %-5s -> %-5s [%s] (%s)", t->index + 1, t->count, t->w->name,
             mllm_dtype_name(t->w->dtype), mllm_dtype_name(t->dtype), shape, why);
    p->progress(p->user, line);
}

/* Converts source row r into t->row. */
static void convert_row(cv_tensor *t, int64_t r) {
    const uint8_t *src = (const uint8_t *)t->w->data + (size_t)r * t->src_row;
    mllm_dtype_get(t->w->dtype)->to_float(src, t->tmp, t->w->ne[0]);
    mllm_dtype_get(t->dtype)->from_float(t->tmp, t->row, t->w->ne[0]);
    t->row_in_buf = r;
}

mllm_status cv_fill(void *user, void *buf, size_t offset, size_t n) {
    cv_tensor *t = user;
    if (offset == 0) progress(t);
    if (t->dtype == t->w->dtype) {
        memcpy(buf, (const uint8_t *)t->w->data + offset, n);
        return MLLM_OK;
    }
    uint8_t *out = buf;
    while (n) {
        int64_t r = (int64_t)(offset / t->dst_row);
        size_t in_row = offset % t->dst_row, take = t->dst_row - in_row < n ? t->dst_row - in_row : n;
        if (t->row_in_buf != r) convert_row(t, r);
        memcpy(out, t->row + in_row, take);
        out += take, offset += take, n -= take;
    }
    return MLLM_OK;
}

static bool is_vector(const mllm_weight *w) { return w->ne[1] == 1 && w->ne[2] == 1 && w->ne[3] == 1; }

/* Chooses each tensor's dtype and checks it can be produced. */
static mllm_status plan(const mllm_convert_params *p, const mllm_model_file *f, const mllm_pipeline *pl,
                        cv_tensor *t) {
    for (size_t i = 0; i < f->n_weights; i++) {
        const mllm_weight *w = &f->weights[i];
        cv_tensor *c = &t[i];
        c->params = p, c->w = w, c->index = i, c->count = f->n_weights, c->row_in_buf = -1;
        char hf[320];
        const char *hfn = mllm_gguf_name_to_hf(w->name, hf, sizeof hf) ? hf : NULL;
        int dt = mllm_pipeline_pick(pl, w->name, hfn, &c->rule);
        if (is_vector(w)) dt = MLLM_DTYPE_F32, c->rule = -2; /* norms and biases stay exact */
        c->dtype = dt == MLLM_PIPELINE_KEEP ? w->dtype : dt;
        const mllm_dtype_traits *src = mllm_dtype_get(w->dtype), *dst = mllm_dtype_get(c->dtype);
        c->src_row = mllm_dtype_row_size((mllm_dtype)w->dtype, w->ne[0]);
        c->dst_row = mllm_dtype_row_size((mllm_dtype)c->dtype, w->ne[0]);
        if (c->dtype == w->dtype) continue;
        mllm_status st = mllm_pipeline_check_dtype(c->dtype, p->in, w->name);
        if (st) return st;
        if (!src || !src->to_float) {
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s': its dtype %s cannot be converted (no to_float)",
                            p->in, w->name, mllm_dtype_name(w->dtype));
        }
        if (!c->dst_row || !dst) {
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s': rows of %lld values cannot be stored as %s "
                                                  "(block size %d); add a pipeline rule for it",
                            p->in, w->name, (long long)w->ne[0], mllm_dtype_name(c->dtype), dst ? dst->block_size : 0);
        }
        c->tmp = mllm_malloc((size_t)w->ne[0] * sizeof(float));
        c->row = mllm_malloc(c->dst_row);
        if (!c->tmp || !c->row) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", p->in);
    }
    return MLLM_OK;
}

static mllm_status write_mllm(const mllm_convert_params *p, const mllm_model_file *f, cv_tensor *t) {
    mllm_mllmfile_writer *w = NULL;
    mllm_status st = mllm_mllmfile_writer_new(&w);
    if (st) return st;
    char cfg[2048];
    int n = mllm_mllmfile_config_to_json(&f->cfg, cfg, sizeof cfg);
    if (n < 0 || n >= (int)sizeof cfg) st = mllm_err(MLLM_ERR_INVALID_ARG, "%s: config does not fit", p->in);
    if (!st) st = mllm_mllmfile_writer_set_config(w, cfg, (size_t)n);
    mllm_tok_kind kind = MLLM_TOK_NONE;
    void *tok = NULL;
    size_t tok_len = 0;
    char *tmpl = NULL;
    if (!st) st = cv_tokenizer_section(f, p->out, &kind, &tok, &tok_len, &tmpl);
    if (!st) st = mllm_mllmfile_writer_set_tokenizer(w, kind, tok, tok_len);
    if (!st && tmpl) st = mllm_mllmfile_writer_set_chat_template(w, tmpl, strlen(tmpl));
    for (size_t i = 0; i < f->n_weights && !st; i++) {
        st = mllm_mllmfile_writer_add_tensor(w, t[i].w->name, t[i].dtype, t[i].w->n_dims, t[i].w->ne, cv_fill, &t[i]);
    }
    if (!st) st = mllm_mllmfile_writer_write(w, p->out);
    mllm_free(tok);
    mllm_free(tmpl);
    mllm_mllmfile_writer_free(w);
    return st;
}

static mllm_status open_source(const mllm_convert_params *p, mllm_model_file **f) {
    if (p->config_path) {
        uint8_t head[8] = {0};
        FILE *fp = fopen(p->in, "rb");
        size_t got = fp ? fread(head, 1, sizeof head, fp) : 0;
        if (fp) fclose(fp);
        if (!mllm_v1v2_sniff(head, got)) {
            return mllm_err(MLLM_ERR_INVALID_ARG, "%s: --config is only for MLLM v1/v2 files", p->in);
        }
        return mllm_v1v2_model_open(p->in, p->config_path, f);
    }
    return mllm_model_file_open(p->in, f);
}

mllm_status mllm_convert(const mllm_convert_params *p) {
    if (!p || !p->in || !p->out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_convert: --in and --out are required");
    if (p->pipeline_path && p->quant) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_convert: give --pipeline or --quant, not both");
    }
    mllm_dtype_init();
    mllm_pipeline *pl = NULL;
    mllm_status st;
    if (p->pipeline_path) {
        st = mllm_pipeline_load(p->pipeline_path, &pl);
    } else {
        int dt = p->quant ? mllm_dtype_from_name(p->quant) : MLLM_PIPELINE_KEEP;
        st = p->quant && dt < 0 ? mllm_err(MLLM_ERR_INVALID_ARG, "--quant %s: unknown dtype", p->quant)
                                : mllm_pipeline_uniform(dt, &pl);
    }
    if (st) return st;
    mllm_model_file *f = NULL;
    st = open_source(p, &f);
    cv_tensor *t = NULL;
    if (!st) {
        t = mllm_calloc(f->n_weights ? f->n_weights : 1, sizeof *t);
        st = t ? plan(p, f, pl, t) : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    if (!st) st = p->to_gguf ? cv_write_gguf(f, t, f->n_weights, p->out) : write_mllm(p, f, t);
    for (size_t i = 0; t && i < f->n_weights; i++) {
        mllm_free(t[i].tmp);
        mllm_free(t[i].row);
    }
    mllm_free(t);
    mllm_model_file_close(f);
    mllm_pipeline_free(pl);
    return st;
}
