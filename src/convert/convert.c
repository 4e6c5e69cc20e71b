/* mllm_convert: plan a dtype (and a kernel layout) per tensor, then stream
   every tensor through the row converter into a .mllm v3 (or GGUF) writer. */
#include "backends/cpu.h"
#include "convert/convert_internal.h"
#include "models/registry.h"
#include "models/whisper/whisper_open.h"
#include "convert/pipeline.h"
#include "formats/hf_config.h"
#include "formats/mllm_v1v2.h"
#include "formats/mllmfile_model.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/dtype_blocks.h"
#include "core/error.h"
#include "core/file_open.h"
#include <stdio.h>
#include <string.h>

void mllm_convert_default_params(mllm_convert_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->pack = MLLM_CONVERT_PACK_X8;
}

static void progress(const cv_tensor *t) {
    const mllm_convert_params *p = t->params;
    if (!p->progress) return;
    char line[512], shape[96] = "";
    size_t n = 0;
    for (int d = 0; d < t->w->n_dims; d++) n += (size_t)snprintf(shape + n, sizeof shape - n, d ? ", %lld" : "%lld", (long long)t->w->ne[d]);
    char why[64];
    n = t->rule >= 0 ? (size_t)snprintf(why, sizeof why, "rule %d", t->rule + 1)
                     : (size_t)snprintf(why, sizeof why, "%s", t->rule == -2 ? "1-D: f32" : "default");
    if (t->dtype != t->plain) snprintf(why + n, sizeof why - n, ", packed x8");
    else if (t->w->dtype != t->src_plain) snprintf(why + n, sizeof why - n, ", unpacked");
    snprintf(line, sizeof line, "[%3zu/%zu] %-36s %-6s -> %-6s [%s] (%s)", t->index + 1, t->count, t->w->name,
             mllm_dtype_name(t->w->dtype), mllm_dtype_name(t->dtype), shape, why);
    p->progress(p->user, line);
}

/* Converts source unit u (rows [u * unit_rows, (u + 1) * unit_rows)) into
   t->row: unpack the source if it is packed, change dtype row by row through
   f32 if the plain dtypes differ, pack if the target is packed. */
static void convert_unit(cv_tensor *t, int64_t u) {
    const int64_t K = t->w->ne[0];
    const uint8_t *src = (const uint8_t *)t->w->data + (size_t)u * (size_t)t->unit_rows * t->src_row;
    if (t->src_unpacked) {
        mllm_unpack_groups((mllm_dtype)t->w->dtype, src, t->src_unpacked, K, 0, 1);
        src = t->src_unpacked;
    }
    uint8_t *dst = t->plain_rows ? t->plain_rows : t->row;
    for (int64_t r = 0; r < t->unit_rows; r++) {
        const uint8_t *s = src + (size_t)r * t->src_row;
        uint8_t *d = dst + (size_t)r * t->dst_row;
        if (t->src_plain == t->plain) {
            memcpy(d, s, t->dst_row);
        } else {
            mllm_cpu_type_get(t->src_plain)->to_float(s, t->tmp, K);
            mllm_cpu_quantize_weight_row(t->plain, t->tmp, d, K);
        }
    }
    if (t->plain_rows) mllm_repack_groups((mllm_dtype)t->dtype, t->plain_rows, t->row, K, 0, 1);
    t->row_in_buf = u;
}

mllm_status cv_fill(void *user, void *buf, size_t offset, size_t n) {
    cv_tensor *t = user;
    if (offset == 0) progress(t);
    if (t->dtype == t->w->dtype) {
        memcpy(buf, (const uint8_t *)t->w->data + offset, n);
        return MLLM_OK;
    }
    const size_t unit = (size_t)t->unit_rows * t->dst_row;
    uint8_t *out = buf;
    while (n) {
        int64_t u = (int64_t)(offset / unit);
        size_t in_unit = offset % unit, take = unit - in_unit < n ? unit - in_unit : n;
        if (t->row_in_buf != u) convert_unit(t, u);
        memcpy(out, t->row + in_unit, take);
        out += take, offset += take, n -= take;
    }
    return MLLM_OK;
}

static bool is_vector(const mllm_weight *w) { return w->ne[1] == 1 && w->ne[2] == 1 && w->ne[3] == 1; }

/* The buffers convert_unit needs for c. */
static mllm_status alloc_buffers(const mllm_convert_params *p, cv_tensor *c) {
    const bool src_packed = c->w->dtype != c->src_plain, dst_packed = c->dtype != c->plain;
    c->unit_rows = src_packed || dst_packed ? MLLM_PACK_ROWS : 1;
    c->tmp = mllm_malloc((size_t)c->w->ne[0] * sizeof(float));
    c->row = mllm_malloc((size_t)c->unit_rows * c->dst_row);
    if (src_packed) c->src_unpacked = mllm_malloc((size_t)c->unit_rows * c->src_row);
    if (dst_packed) c->plain_rows = mllm_malloc((size_t)c->unit_rows * c->dst_row);
    if (!c->tmp || !c->row || (src_packed && !c->src_unpacked) || (dst_packed && !c->plain_rows)) {
        return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", p->in);
    }
    return MLLM_OK;
}

/* Chooses each tensor's dtype and layout and checks it can be produced.
   Packed sources count as their plain dtype: `keep` keeps the values, and
   the layout is chosen afresh for this output. */
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
        c->src_plain = (int)mllm_repack_plain_type((mllm_dtype)w->dtype);
        c->plain = dt == MLLM_PIPELINE_KEEP ? c->src_plain : dt;
        const int packed = cv_pack_type(p, f, w, c->plain);
        c->dtype = packed >= 0 ? packed : c->plain;
        const mllm_dtype_traits *src = mllm_dtype_get(c->src_plain), *dst = mllm_dtype_get(c->plain);
        c->src_row = mllm_dtype_row_size((mllm_dtype)w->dtype, w->ne[0]);
        c->dst_row = mllm_dtype_row_size((mllm_dtype)c->dtype, w->ne[0]);
        if (c->dtype == w->dtype) continue;
        if (c->plain != c->src_plain) {
            mllm_status st = mllm_pipeline_check_dtype(c->plain, p->in, w->name);
            if (st) return st;
            if (!src || !mllm_cpu_type_get(c->src_plain)->to_float) {
                return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s': its dtype %s cannot be converted (no to_float)",
                                p->in, w->name, mllm_dtype_name(w->dtype));
            }
        }
        if (!c->dst_row || !dst) {
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: tensor '%s': rows of %lld values cannot be stored as %s "
                                                  "(block size %d); add a pipeline rule for it",
                            p->in, w->name, (long long)w->ne[0], mllm_dtype_name(c->plain), dst ? dst->block_size : 0);
        }
        mllm_status st = alloc_buffers(p, c);
        if (st) return st;
    }
    return MLLM_OK;
}

static mllm_status write_mllm(const mllm_convert_params *p, const mllm_model_file *f, const mllm_hparams *hp,
                              cv_tensor *t) {
    mllm_mllmfile_writer *w = NULL;
    mllm_status st = mllm_mllmfile_writer_new(&w);
    if (st) return st;
    mllm_meta meta = {0};
    char *cfg = NULL;
    size_t n = 0;
    st = mllm_family_model_meta(f, hp, &meta);
    if (!st) st = mllm_mllmfile_config_to_json(&meta, &cfg, &n);
    mllm_meta_free(&meta);
    if (!st) st = mllm_mllmfile_writer_set_config(w, cfg, n);
    mllm_free(cfg);
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

/* One closing progress line: how many tensors went into kernel layouts. */
static void summary(const mllm_convert_params *p, const cv_tensor *t, size_t n) {
    if (!p->progress) return;
    size_t packed = 0, unpacked = 0;
    for (size_t i = 0; i < n; i++) {
        packed += t[i].dtype != t[i].plain;
        unpacked += t[i].w->dtype != t[i].src_plain && t[i].dtype == t[i].plain;
    }
    char line[256];
    if (p->to_gguf) snprintf(line, sizeof line, "kernel layouts: none in GGUF (%zu packed tensors unpacked)", unpacked);
    else if (p->pack == MLLM_CONVERT_PACK_NONE) snprintf(line, sizeof line, "kernel layouts: none (--pack none)");
    else snprintf(line, sizeof line, "kernel layouts: %zu of %zu tensors stored packed (x8)", packed, n);
    p->progress(p->user, line);
}

static mllm_status open_file(const mllm_convert_params *p, mllm_model_file **f) {
    if (p->config_path) {
        uint8_t head[8] = {0};
        FILE *fp = mllm_file_fopen(p->in);
        size_t got = fp ? fread(head, 1, sizeof head, fp) : 0;
        if (fp) fclose(fp);
        if (!mllm_v1v2_sniff(head, got)) {
            return mllm_err(MLLM_ERR_INVALID_ARG, "%s: --config is only for MLLM v1/v2 files", p->in);
        }
        return mllm_v1v2_model_open(p->in, p->config_path, f);
    }
    return mllm_model_file_open(p->in, f);
}

static mllm_status open_source(const mllm_convert_params *p, mllm_model_file **f, mllm_hparams *hp) {
    mllm_status st = open_file(p, f);
    return st ? st : mllm_family_resolve(*f, hp);
}

mllm_status mllm_convert(const mllm_convert_params *p) {
    if (!p || !p->in || !p->out) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_convert: --in and --out are required");
    if (p->struct_size != sizeof *p)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_convert: struct_size %u is not %zu (fill the params with "
                        "mllm_convert_default_params)", p->struct_size, sizeof *p);
    if (p->pipeline_path && p->quant) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_convert: give --pipeline or --quant, not both");
    }
    if (p->pack != MLLM_CONVERT_PACK_NONE && p->pack != MLLM_CONVERT_PACK_X8) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_convert: unknown pack mode %d", p->pack);
    }
    mllm_cpu_init();
    if (mllm_whisper_probe(p->in) != MLLM_WHISPER_NONE) return cv_convert_whisper(p);
    mllm_pipeline *pl = NULL;
    mllm_status st;
    if (p->pipeline_path) {
        st = mllm_pipeline_load(p->pipeline_path, &pl);
    } else {
        int dt = p->quant ? mllm_dtype_from_name(p->quant) : MLLM_PIPELINE_KEEP;
        if (p->quant && dt < 0) st = mllm_err(MLLM_ERR_INVALID_ARG, "--quant %s: unknown dtype", p->quant);
        else if (dt >= 0 && (int)mllm_repack_plain_type((mllm_dtype)dt) != dt)
            st = mllm_err(MLLM_ERR_INVALID_ARG, "--quant %s: a kernel layout, not a dtype; give --quant %s "
                                                "(stored packed by --pack x8, the default)",
                          p->quant, mllm_dtype_name(mllm_repack_plain_type((mllm_dtype)dt)));
        else st = mllm_pipeline_uniform(dt, &pl);
    }
    if (st) return st;
    mllm_model_file *f = NULL;
    mllm_hparams hp;
    st = open_source(p, &f, &hp);
    cv_tensor *t = NULL;
    if (!st) {
        t = mllm_calloc(f->n_weights ? f->n_weights : 1, sizeof *t);
        st = t ? plan(p, f, pl, t) : mllm_err(MLLM_ERR_NOMEM, "out of memory");
    }
    if (!st) st = p->to_gguf ? cv_write_gguf(f, &hp, t, f->n_weights, p->out) : write_mllm(p, f, &hp, t);
    if (!st) summary(p, t, f->n_weights);
    for (size_t i = 0; t && i < f->n_weights; i++) cv_tensor_release(&t[i]);
    mllm_free(t);
    mllm_model_file_close(f);
    mllm_pipeline_free(pl);
    return st;
}
