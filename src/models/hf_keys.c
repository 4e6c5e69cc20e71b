/* Hugging Face checkpoints -> the GGUF vocabulary the families read: config
   fields become `<arch>.*` keys (the same names llama.cpp's converter
   writes), tensor names become GGUF names, through the row's tables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"
#include "formats/hf_config.h"
#include "models/registry.h"

/* Every decoder's fields. */
static const mllm_name_pair k_common[] = {
    {"hidden_size", "embedding_length"},
    {"intermediate_size", "feed_forward_length"},
    {"num_hidden_layers", "block_count"},
    {"num_attention_heads", "attention.head_count"},
    {"num_key_value_heads", "attention.head_count_kv"},
    {"head_dim", "attention.key_length"},
    {"vocab_size", "vocab_size"},
    {"max_position_embeddings", "context_length"},
    {"rms_norm_eps", "attention.layer_norm_rms_epsilon"},
    {"rope_theta", "rope.freq_base"},
    {"rope_parameters.rope_theta", "rope.freq_base"}, /* transformers >= 5 */
    {"rope_scaling.rope_type", "rope.scaling.type"},
    {"rope_scaling.type", "rope.scaling.type"},
    {"rope_scaling.factor", "rope.scaling.factor"},
    {"rope_scaling.low_freq_factor", "rope.scaling.low_freq_factor"},
    {"rope_scaling.high_freq_factor", "rope.scaling.high_freq_factor"},
    {"rope_scaling.original_max_position_embeddings", "rope.scaling.original_context_length"},
    {"rope_scaling.beta_fast", "rope.scaling.yarn_beta_fast"},
    {"rope_scaling.beta_slow", "rope.scaling.yarn_beta_slow"},
    {"sliding_window", "attention.sliding_window"},
    {"final_logit_softcapping", "final_logit_softcapping"},
    {NULL, NULL},
};

/* Copies field (or text_config.field, for multimodal configs) to
   <arch>.<suffix>; absent fields are skipped. */
static mllm_status map_field(mllm_meta *m, const char *arch, const char *field, const char *suffix) {
    char key[160], tkey[160];
    snprintf(tkey, sizeof tkey, "text_config.%s", field);
    const mllm_meta_entry *e = mllm_meta_find(m, field);
    if (!e) e = mllm_meta_find(m, tkey);
    if (!e) return MLLM_OK;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    switch (e->type) {
    case MLLM_META_INT: return mllm_meta_set_int(m, key, e->i);
    case MLLM_META_FLOAT: return mllm_meta_set_float(m, key, e->f);
    case MLLM_META_BOOL: return mllm_meta_set_bool(m, key, e->i != 0);
    case MLLM_META_ARR_NUM: {
        double *v = mllm_malloc((e->len ? e->len : 1) * sizeof *v); /* e may move when m grows */
        if (!v) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
        size_t n = e->len;
        memcpy(v, e->num, n * sizeof *v);
        mllm_status st = mllm_meta_set_arr_num(m, key, v, n);
        mllm_free(v);
        return st;
    }
    case MLLM_META_STR: {
        char *s = mllm_strndup(e->s, e->len); /* e may move when m grows */
        if (!s) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
        mllm_status st = mllm_meta_set_str(m, key, s, strlen(s));
        mllm_free(s);
        return st;
    }
    case MLLM_META_ARR_STR: {
        size_t n = e->len;
        char **v = mllm_calloc(n ? n : 1, sizeof *v);
        size_t *lens = mllm_calloc(n ? n : 1, sizeof *lens);
        mllm_status st = v && lens ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "out of memory");
        for (size_t i = 0; i < n && !st; i++) {
            lens[i] = strlen(e->str[i]);
            if (!(v[i] = mllm_strndup(e->str[i], lens[i]))) st = mllm_err(MLLM_ERR_NOMEM, "out of memory");
        }
        if (!st) st = mllm_meta_set_arr_str(m, key, (const char *const *)v, lens, n);
        for (size_t i = 0; v && i < n; i++) mllm_free(v[i]);
        mllm_free(v);
        mllm_free(lens);
        return st;
    }
    default: return MLLM_OK;
    }
}

/* The names outside the layers of rows that give none. */
static const mllm_name_pair k_llama_names[] = {
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
    {NULL, NULL},
};

static mllm_status rename_tensors(mllm_model_file *f, const mllm_arch *row) {
    char out[256];
    for (size_t i = 0; i < f->n_weights; i++) {
        const char *hf = f->weights[i].name;
        /* Gemma 3 and other multimodal checkpoints nest the decoder. */
        /* (Idefics3 / SmolVLM: model.text_model.) */
        static const char *const nests[] = {"model.language_model.", "model.text_model."};
        char flat[256];
        for (int k = 0; k < 2; k++) {
            const char *nested = nests[k];
            if (!strncmp(hf, nested, strlen(nested)) &&
                snprintf(flat, sizeof flat, "model.%s", hf + strlen(nested)) < (int)sizeof flat) {
                hf = flat;
                break;
            }
        }
        if (row->hf_strip_prefix && !strncmp(hf, row->hf_strip_prefix, strlen(row->hf_strip_prefix)))
            hf += strlen(row->hf_strip_prefix);
        bool ok;
        if (!row->hf_layer_names) {
            ok = mllm_hf_name_to_gguf(hf, out, sizeof out);
        } else {
            ok = false;
            const char *pre = row->hf_layer_prefix ? row->hf_layer_prefix : "model.layers.";
            for (const mllm_name_pair *p = row->hf_names ? row->hf_names : k_llama_names; p->from && !ok; p++)
                if (!strcmp(hf, p->from)) ok = snprintf(out, sizeof out, "%s", p->to) < (int)sizeof out;
            if (!ok && !strncmp(hf, pre, strlen(pre)) && hf[strlen(pre)] >= '0' && hf[strlen(pre)] <= '9') {
                char *end;
                long l = strtol(hf + strlen(pre), &end, 10);
                for (const mllm_name_pair *p = row->hf_layer_names; *end == '.' && p->from && !ok; p++)
                    if (!strcmp(end + 1, p->from)) ok = snprintf(out, sizeof out, "blk.%ld.%s", l, p->to) < (int)sizeof out;
            }
        }
        if (!ok) continue;
        if (mllm_model_file_find(f, out))
            return mllm_err(MLLM_ERR_FORMAT, "%s: two tensors map to '%s'", f->path, out);
        char *nn = mllm_strndup(out, strlen(out));
        if (!nn) return mllm_err(MLLM_ERR_NOMEM, "out of memory");
        mllm_free(f->weights[i].name);
        f->weights[i].name = nn;
    }
    return MLLM_OK;
}

/* HF fields every decoder config has or may have, by the kind of value they
   hold ('R' a required integer, 'i' integer, 'f' number, 'b' boolean), so
   errors speak config.json's names, not the GGUF ones they become. */
static const struct { const char *field; char kind; } k_fields[] = {
    {"hidden_size", 'R'}, {"intermediate_size", 'R'}, {"num_hidden_layers", 'R'}, {"num_attention_heads", 'R'},
    {"vocab_size", 'R'}, {"num_key_value_heads", 'i'}, {"head_dim", 'i'}, {"max_position_embeddings", 'i'},
    {"rms_norm_eps", 'f'}, {"rope_theta", 'f'}, {"sliding_window", 'i'}, {"tie_word_embeddings", 'b'},
    {NULL, 0},
};

static mllm_status check_fields(const mllm_meta *m, const char *label) {
    for (int i = 0; k_fields[i].field; i++) {
        const char *name = k_fields[i].field;
        char tname[96];
        snprintf(tname, sizeof tname, "text_config.%s", name);
        const mllm_meta_entry *e = mllm_meta_find(m, name);
        if (!e) e = mllm_meta_find(m, tname);
        const char kind = k_fields[i].kind;
        if (!e) {
            if (kind == 'R') return mllm_err(MLLM_ERR_FORMAT, "%s: missing field '%s'", label, name);
            continue;
        }
        bool ok = kind == 'b' ? e->type == MLLM_META_BOOL
                : kind == 'f' ? e->type == MLLM_META_INT || e->type == MLLM_META_FLOAT
                              : e->type == MLLM_META_INT;
        if (!ok)
            return mllm_err(MLLM_ERR_FORMAT, "%s: field '%s' must be %s", label, name,
                            kind == 'b' ? "true or false" : kind == 'f' ? "a number" : "an integer");
    }
    const mllm_meta_entry *rs = mllm_meta_find(m, "rope_scaling");
    if (rs) return mllm_err(MLLM_ERR_FORMAT, "%s: field 'rope_scaling' must be an object", label);
    bool scaled = false;
    for (size_t i = 0; i < m->n && !scaled; i++) scaled = !strncmp(m->e[i].key, "rope_scaling.", 13);
    if (scaled && !mllm_meta_get_str(m, "rope_scaling.rope_type") && !mllm_meta_get_str(m, "rope_scaling.type"))
        return mllm_err(MLLM_ERR_FORMAT, "%s: field 'rope_scaling.rope_type' must be a string", label);
    return MLLM_OK;
}

mllm_status mllm_hf_canonicalize_meta(mllm_meta *m, const mllm_arch *row, const char *label) {
    mllm_status st = check_fields(m, label);
    if (st) return st;
    st = mllm_meta_set_str(m, "general.architecture", row->name, strlen(row->name));
    for (const mllm_name_pair *p = k_common; p->from && !st; p++) st = map_field(m, row->name, p->from, p->to);
    for (const mllm_name_pair *p = row->hf_keys; p && p->from && !st; p++) st = map_field(m, row->name, p->from, p->to);
    char key[96];
    for (const mllm_hf_default *d = row->hf_defaults; d && d->key && !st; d++) {
        snprintf(key, sizeof key, "%s.%s", row->name, d->key);
        if (!mllm_meta_find(m, key))
            st = d->integer ? mllm_meta_set_int(m, key, (int64_t)d->value) : mllm_meta_set_float(m, key, d->value);
    }
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", row->name);
    if (!st && !mllm_meta_find(m, key)) st = mllm_meta_set_float(m, key, 1e-6); /* transformers' default */
    /* HF checkpoints rotate halves (rotate_half) whatever the family; GGUF
       Llama files have q/k permuted for pairs instead. */
    if (!st) st = mllm_meta_set_bool(m, "mllm.rope.neox", true);
    bool tied;
    if (!st && (mllm_meta_get_bool(m, "tie_word_embeddings", &tied) ||
                mllm_meta_get_bool(m, "text_config.tie_word_embeddings", &tied)))
        st = mllm_meta_set_bool(m, "mllm.tie_word_embeddings", tied);
    return st;
}

mllm_status mllm_hf_canonicalize(mllm_model_file *f, const mllm_arch *row) {
    mllm_status st = mllm_hf_canonicalize_meta(&f->meta, row, f->path);
    return st ? st : rename_tensors(f, row);
}
