/* The table of architectures, and the step that makes an opened file a
   model of one of them. */
#include "models/registry.h"
#include <stdio.h>
#include <string.h>
#include "core/error.h"
#include "core/alloc.h"
#include "formats/hf_config.h"
#include "models/speech.h"
#include "models/vision_tower.h"

/* Each row lives with its family (src/models/<folder>/). */
extern const mllm_arch mllm_arch_llama, mllm_arch_qwen2, mllm_arch_qwen2vl, mllm_arch_qwen3, mllm_arch_smollm3,
    mllm_arch_gemma3, mllm_arch_bert, mllm_arch_idefics3, mllm_arch_whisper, mllm_arch_qwen2vl_vision,
    mllm_arch_idefics3_vision;

static const mllm_arch *const k_rows[] = {
    &mllm_arch_llama,   &mllm_arch_qwen2,   &mllm_arch_qwen2vl,          &mllm_arch_qwen3,
    &mllm_arch_smollm3, &mllm_arch_gemma3,  &mllm_arch_bert,             &mllm_arch_idefics3,
    &mllm_arch_whisper, &mllm_arch_qwen2vl_vision, &mllm_arch_idefics3_vision,
};
#define N_ROWS (sizeof k_rows / sizeof *k_rows)

size_t mllm_arch_count(void) { return N_ROWS; }
const mllm_arch *mllm_arch_at(size_t i) { return i < N_ROWS ? k_rows[i] : NULL; }

const mllm_arch *mllm_arch_find(const char *name) {
    for (size_t i = 0; name && i < N_ROWS; i++)
        if (!strcmp(k_rows[i]->name, name)) return k_rows[i];
    return NULL;
}

const mllm_arch *mllm_arch_find_gguf(const char *arch) {
    const mllm_arch *row = mllm_arch_find(arch);
    for (size_t i = 0; !row && arch && i < N_ROWS; i++)
        if (k_rows[i]->gguf_arch && !strcmp(k_rows[i]->gguf_arch, arch)) row = k_rows[i];
    return row;
}

const char *mllm_kind_name(mllm_model_kind k) {
    switch (k) {
    case MLLM_KIND_DECODER: return "decoder";
    case MLLM_KIND_ENCODER: return "encoder";
    case MLLM_KIND_SPEECH: return "speech";
    case MLLM_KIND_VISION: return "vision";
    }
    return "?";
}

const mllm_arch *mllm_arch_probe_speech(const char *path) {
    for (size_t i = 0; path && i < N_ROWS; i++)
        if (k_rows[i]->kind == MLLM_KIND_SPEECH && k_rows[i]->speech->probe(path)) return k_rows[i];
    return NULL;
}

void mllm_speech_result_free(mllm_speech_result *r) {
    if (!r) return;
    for (int i = 0; i < r->n_segs; i++) {
        mllm_free(r->segs[i].text);
        mllm_free(r->segs[i].tokens);
    }
    mllm_free(r->segs);
    memset(r, 0, sizeof *r);
}

void mllm_vision_embedding_free(mllm_vision_embedding *e) {
    if (!e) return;
    mllm_free(e->emb);
    memset(e, 0, sizeof *e);
}

const char *mllm_arch_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t o = 0;
        for (size_t i = 0; i < N_ROWS && o < sizeof buf; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", k_rows[i]->name);
    }
    return buf;
}

/* Whether word is one of the space-separated words of list. */
static bool in_list(const char *list, const char *word) {
    size_t n = strlen(word);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ' ');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !memcmp(p, word, n)) return true;
        p = e ? e + 1 : NULL;
    }
    return false;
}

static mllm_status find_hf_row(const mllm_meta *m, const char *path, const mllm_arch **row) {
    const char *mt = mllm_meta_get_str(m, "model_type");
    const char *tmt = mllm_meta_get_str(m, "text_config.model_type");
    const mllm_meta_entry *archs = mllm_meta_find(m, "architectures");
    const char *cls = archs && archs->type == MLLM_META_ARR_STR && archs->len ? archs->str[0] : NULL;
    if (!mt && !cls) {
        if (mllm_meta_find(m, "model_type"))
            return mllm_err(MLLM_ERR_FORMAT, "%s: field 'model_type' must be a string", path);
        return mllm_err(MLLM_ERR_FORMAT, "%s: no 'general.architecture', 'model_type' or 'architectures' in its "
                                         "metadata", path);
    }
    /* the outer model_type first: a SmolVLM (model_type smolvlm) nests a
       text_config of model_type llama, and is its own row */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < N_ROWS; i++) {
            const mllm_arch *r = k_rows[i];
            if ((pass == 0 && ((mt && in_list(r->hf_types, mt)) || (!mt && cls && in_list(r->hf_classes, cls)))) ||
                (pass == 1 && tmt && in_list(r->hf_types, tmt))) {
                *row = r;
                return MLLM_OK;
            }
        }
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: model_type '%.64s' is not supported (%s)", path, mt ? mt : cls,
                    mllm_arch_names());
}

mllm_status mllm_family_resolve(mllm_model_file *f, mllm_hparams *hp) {
    const mllm_arch *row = NULL;
    const mllm_meta_entry *ae = mllm_meta_find(&f->meta, "general.architecture");
    bool hf = ae == NULL;
    mllm_status st;
    if (ae) {
        if (ae->type != MLLM_META_STR)
            return mllm_err(MLLM_ERR_FORMAT, "%s: key 'general.architecture' is not a string", f->path);
        row = mllm_arch_find_gguf(ae->s);
        if (!row)
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: architecture '%.64s' is not supported (%s)", f->path, ae->s,
                            mllm_arch_names());
    } else if ((st = find_hf_row(&f->meta, f->path, &row))) {
        const mllm_arch *sp = mllm_arch_probe_speech(f->path);
        return sp ? mllm_err(MLLM_ERR_UNSUPPORTED, "%s: a speech model (%s): run it with mllm transcribe (or "
                                                   "mllm_transcribe)", f->path, sp->name)
                  : st;
    }
    if (row->kind == MLLM_KIND_VISION)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: a vision tower (%s): give it with --mmproj "
                                              "(mllm_load_params.mmproj) beside its text model", f->path, row->name);
    if (row->kind != MLLM_KIND_DECODER && row->kind != MLLM_KIND_ENCODER)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: a %s model (%s), not a text model", f->path,
                        mllm_kind_name(row->kind), row->name);
    if (hf && (st = mllm_hf_canonicalize(f, row))) return st;
    if ((st = mllm_hparams_read_decoder(&f->meta, row, f->path, hp))) return st;
    if (hf && row->hf_fixup && (st = row->hf_fixup(f, hp))) return st;
    return row->check_tensors ? row->check_tensors(f, hp) : mllm_decoder_check_tensors(f, hp);
}

mllm_status mllm_family_open(const char *path, mllm_model_file **out, mllm_hparams *hp) {
    mllm_model_file *f = NULL;
    mllm_status st = mllm_model_file_open(path, &f);
    if (!st) st = mllm_family_resolve(f, hp);
    if (st) {
        mllm_model_file_close(f);
        f = NULL;
    }
    *out = f;
    return st;
}

mllm_status mllm_family_read_hf_config(const char *json, size_t len, const char *label, mllm_hparams *hp) {
    mllm_meta m = {0};
    const mllm_arch *row = NULL;
    memset(hp, 0, sizeof *hp);
    mllm_status st = mllm_hf_config_parse(json, len, label, &m);
    if (!st) st = find_hf_row(&m, label, &row);
    if (!st) st = mllm_hf_canonicalize_meta(&m, row, label);
    if (!st) st = mllm_hparams_read_decoder(&m, row, label, hp);
    bool tied = false;
    if (!st) hp->tied_embd = mllm_meta_get_bool(&m, "mllm.tie_word_embeddings", &tied) && tied;
    mllm_meta_free(&m);
    return st;
}
