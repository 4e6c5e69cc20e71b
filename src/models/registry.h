/* The model registry: one table row per architecture (registry.c), the only
   list of what this build runs, and the contract every family meets. A row
   has a kind (a text decoder, an encoder for embeddings, a speech model, a
   vision tower) and names the architecture as GGUF (general.architecture),
   Hugging Face (model_type / architectures) and .mllm files call it. It
   gives what differs per family: how to read its hyper-parameters from
   generic metadata, its Hugging Face tensor and field names, and the hooks
   src/api calls instead of naming a family: the encoder's graph
   (models/encoder.h), the speech model (models/speech.h), the vision tower
   a decoder takes images from (models/vision_tower.h). Adding a family is
   a folder under src/models and a row here. Errors and `mllm info
   --architectures` print the list from here. */
#ifndef MLLM_MODELS_REGISTRY_H
#define MLLM_MODELS_REGISTRY_H
#include <mllm/mllm.h>
#include "core/meta.h"
#include "formats/model_file.h"
#include "models/hparams.h"

typedef struct { const char *from, *to; } mllm_name_pair;
/* A GGUF key suffix and the value transformers' config class gives it when
   a config.json leaves the field out. */
typedef struct { const char *key; double value; bool integer; } mllm_hf_default;

/* What a row's model does; `mllm info --architectures` prints it. */
typedef enum {
    MLLM_KIND_DECODER = 0, /* text generation: the decoder graph (models/decoder/) */
    MLLM_KIND_ENCODER,     /* hidden states for embeddings (models/encoder.h) */
    MLLM_KIND_SPEECH,      /* speech to text (models/speech.h) */
    MLLM_KIND_VISION,      /* a vision tower: image embeddings for a decoder (models/vision_tower.h) */
} mllm_model_kind;
const char *mllm_kind_name(mllm_model_kind k);

struct mllm_encoder_family;
struct mllm_speech_family;
struct mllm_vision_family;

typedef struct mllm_arch {
    const char *name;        /* GGUF general.architecture, and the .mllm name */
    mllm_model_kind kind;
    const char *about;       /* one line for `mllm info --architectures` */
    /* general.architecture of its GGUF files when it is not name (an
       mmproj tower's "clip"), or NULL. */
    const char *gguf_arch;
    const char *hf_types;    /* HF model_type values, space-separated */
    const char *hf_classes;  /* HF architectures[0] values, space-separated */
    const char *family;      /* the source file that builds it (src/models/<family>.c) */
    bool rope_neox;          /* GGUF files of this architecture rotate halves */
    const char *chat_template; /* builtin template for files that carry none, or NULL */
    /* GGUF tokenizer.ggml.pre of its byte-level BPE tokenizers (tokenizer.json
       does not name it) when quantize writes an HF folder as GGUF; NULL:
       "gpt2", and "llama-bpe" for vocabularies of 128k and more (Llama 3). */
    const char *tokenizer_pre;
    /* HF config field -> GGUF key suffix, beyond the ones every decoder shares. */
    const mllm_name_pair *hf_keys;
    /* Defaults of this family's HF config class for absent fields. */
    const mllm_hf_default *hf_defaults;
    /* HF tensor name suffix after "model.layers.N." -> GGUF suffix after "blk.N.". */
    const mllm_name_pair *hf_layer_names;
    /* Reads what only this family has (after the shared decoder keys). */
    mllm_status (*read)(const mllm_meta *m, const char *path, mllm_hparams *hp);
    /* Adjusts HF weights to the GGUF convention (Gemma: norm weights + 1). */
    mllm_status (*hf_fixup)(mllm_model_file *f, const mllm_hparams *hp);
    /* MLLM_KIND_ENCODER: the graph that outputs hidden states for
       embeddings, not logits; no KV cache, no generation. */
    const struct mllm_encoder_family *encoder;
    /* MLLM_KIND_SPEECH: the model; its files are not read by the generic
       readers, so probe says whether a path is one (before them). */
    const struct mllm_speech_family *speech;
    /* MLLM_KIND_VISION: the tower. A decoder row: the tower it takes images
       from (NULL: text only). */
    const struct mllm_vision_family *vision;
    /* HF tensor names when they are not Llama's: the prefix of the layers
       (NULL: "model.layers."), the names outside the layers, whole (NULL:
       embed_tokens, norm, lm_head), and a prefix some checkpoints put
       before all of them ("bert."), or NULL. */
    const char *hf_layer_prefix;
    const mllm_name_pair *hf_names;
    const char *hf_strip_prefix;
    /* Checks the tensors instead of the decoder's check (decoder_check.c). */
    mllm_status (*check_tensors)(const mllm_model_file *f, mllm_hparams *hp);
} mllm_arch;

/* NULL when name is not a row. */
const mllm_arch *mllm_arch_find(const char *name);
/* The row whose GGUF files say general.architecture = arch (its name, or
   its gguf_arch), or NULL. */
const mllm_arch *mllm_arch_find_gguf(const char *arch);
/* The speech row whose probe recognizes path (its files are folders or
   files the generic readers do not take), or NULL. */
const mllm_arch *mllm_arch_probe_speech(const char *path);
/* "llama, qwen2, ..." */
const char *mllm_arch_names(void);
size_t mllm_arch_count(void);
const mllm_arch *mllm_arch_at(size_t i);

/* Makes an opened file a model: finds its row (from general.architecture,
   or an HF config's model_type/architectures), rewrites HF config fields and
   tensor names into the GGUF ones, reads and checks the hyper-parameters,
   and checks that every tensor the graph needs is there with the right
   shape. Errors name the file and what is wrong. */
mllm_status mllm_family_resolve(mllm_model_file *f, mllm_hparams *hp);
/* mllm_model_file_open + mllm_family_resolve. */
mllm_status mllm_family_open(const char *path, mllm_model_file **f, mllm_hparams *hp);

/* Shared by the rows (hparams.c, hf_keys.c, decoder_check.c). */
mllm_status mllm_hparams_read_decoder(const mllm_meta *m, const mllm_arch *row, const char *path, mllm_hparams *hp);
mllm_status mllm_hparams_check(const mllm_hparams *hp, const char *path);
mllm_status mllm_hf_canonicalize(mllm_model_file *f, const mllm_arch *row);
mllm_status mllm_hf_canonicalize_meta(mllm_meta *m, const mllm_arch *row, const char *label);
/* The hyper-parameters a config.json alone gives (no tensors: the biases,
   q/k norms and post norms that decoder_check.c finds stay false; tied_embd
   is what tie_word_embeddings says). For tests and the fuzzer. */
mllm_status mllm_family_read_hf_config(const char *json, size_t len, const char *label, mllm_hparams *hp);
mllm_status mllm_decoder_check_tensors(const mllm_model_file *f, mllm_hparams *hp);
/* A typed metadata read for family hooks: `<arch>.<suffix>`. def_ok false
   makes the key required. */
mllm_status mllm_hp_int(const mllm_meta *m, const char *arch, const char *suffix, const char *path, bool required,
                        int32_t *out);
mllm_status mllm_hp_float(const mllm_meta *m, const char *arch, const char *suffix, const char *path, float *out);



/* The model's own keys, for writing it out (.mllm config section, GGUF
   exports): general.architecture, every `<arch>.*` key and the mllm.* notes
   (RoPE layout of HF-origin weights). */
mllm_status mllm_family_model_meta(const mllm_model_file *f, const mllm_hparams *hp, mllm_meta *out);
/* Writes each entry of m (but mllm.* keys) as a GGUF key of the natural
   type: integers u32 (i64 when out of range), numbers f32, arrays likewise. */
struct mllm_gguf_writer;
mllm_status mllm_family_write_gguf_keys(const mllm_meta *m, struct mllm_gguf_writer *w);
#endif
