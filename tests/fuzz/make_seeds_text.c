/* Seeds of the text formats (tokenizer.json, llama2.c tokenizer.bin, chat
   templates), written by fuzz_make_seeds (make_seeds.c has the rest). */
#include "make_seeds.h"
#include "core/alloc.h"
#include "formats/st_config.h"
#include "template/template.h"
#include "tokenizer/tokenizer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- tokenizer.json -------------------------------------------------------- */
const char k_bpe_json[] =
    "{\"version\":\"1.0\",\"added_tokens\":["
    "{\"id\":16,\"content\":\"<|endoftext|>\",\"special\":true,\"lstrip\":false,\"rstrip\":false},"
    "{\"id\":17,\"content\":\"<|im_start|>\",\"special\":true},"
    "{\"id\":18,\"content\":\"<|im_end|>\",\"special\":true,\"rstrip\":true},"
    "{\"id\":19,\"content\":\"<tool>\",\"special\":false,\"lstrip\":true}],"
    "\"normalizer\":{\"type\":\"NFC\"},"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":["
    "{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(?i:'s|'t)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s+(?!\\\\S)|\\\\s+\"},"
    "\"behavior\":\"Isolated\",\"invert\":false},"
    "{\"type\":\"Digits\",\"individual_digits\":true},"
    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<|endoftext|>\",\"type_id\":0}},"
    "{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{\"<|endoftext|>\":{\"id\":\"<|endoftext|>\",\"ids\":[16]}}},"
    "\"decoder\":{\"type\":\"ByteLevel\"},"
    "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"ignore_merges\":false,"
    "\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"\\u0120\":3,\"\\u010a\":4,\"ab\":5,\"\\u0120a\":6,\"\\u0120ab\":7,"
    "\"bc\":8,\"abc\":9,\"1\":10,\"2\":11,\"!\":12,\"\\u00c3\":13,\"\\u00a9\":14,\"\\u00c3\\u00a9\":15},"
    "\"merges\":[\"a b\",\"\\u0120 a\",[\"\\u0120a\",\"b\"],\"b c\",\"ab c\",\"\\u00c3 \\u00a9\"]}}";

const char k_bpe_config[] =
    "{\"add_bos_token\":false,\"add_eos_token\":false,\"bos_token\":null,"
    "\"eos_token\":{\"content\":\"<|im_end|>\",\"lstrip\":false},\"pad_token\":\"<|endoftext|>\","
    "\"chat_template\":[{\"name\":\"default\",\"template\":\"{{ messages }}\"},{\"name\":\"tool_use\",\"template\":\"x\"}]}";

/* Llama-2 style: SentencePiece as BPE with byte fallback. */
static const char k_spm_json[] =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\",\"special\":true},"
    "{\"id\":1,\"content\":\"<s>\",\"special\":true},{\"id\":2,\"content\":\"</s>\",\"special\":true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\\u2581\"},"
    "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\\u2581\"}]},"
    "\"pre_tokenizer\":null,"
    "\"post_processor\":{\"type\":\"Sequence\",\"processors\":[{\"type\":\"TemplateProcessing\","
    "\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},"
    "{\"SpecialToken\":{\"id\":\"</s>\",\"type_id\":0}}],\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[1]}}}]},"
    "\"decoder\":{\"type\":\"Sequence\"},"
    "\"model\":{\"type\":\"BPE\",\"unk_token\":\"<unk>\",\"byte_fallback\":true,"
    "\"vocab\":{\"<unk>\":0,\"<s>\":1,\"</s>\":2,\"<0x0A>\":3,\"<0xC3>\":4,\"<0xA9>\":5,\"\\u2581\":6,"
    "\"a\":7,\"b\":8,\"c\":9,\"\\u2581a\":10,\"ab\":11,\"\\u2581ab\":12,\"bc\":13},"
    "\"merges\":[\"a b\",\"\\u2581 a\",\"\\u2581a b\",\"b c\"]}}";

/* A WordPiece (BERT uncased) tokenizer.json: BertNormalizer, BertPreTokenizer, [CLS] $A [SEP]. */
static const char k_wp_json[] =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"[PAD]\",\"special\":true},"
    "{\"id\":1,\"content\":\"[UNK]\",\"special\":true},{\"id\":2,\"content\":\"[CLS]\",\"special\":true},"
    "{\"id\":3,\"content\":\"[SEP]\",\"special\":true}],"
    "\"normalizer\":{\"type\":\"BertNormalizer\",\"clean_text\":true,\"handle_chinese_chars\":true,"
    "\"strip_accents\":null,\"lowercase\":true},\"pre_tokenizer\":{\"type\":\"BertPreTokenizer\"},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"[CLS]\"}},"
    "{\"Sequence\":{\"id\":\"A\"}},{\"SpecialToken\":{\"id\":\"[SEP]\"}}],"
    "\"special_tokens\":{\"[CLS]\":{\"ids\":[2]},\"[SEP]\":{\"ids\":[3]}}},"
    "\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"##\"},"
    "\"model\":{\"type\":\"WordPiece\",\"unk_token\":\"[UNK]\",\"continuing_subword_prefix\":\"##\","
    "\"max_input_chars_per_word\":100,\"vocab\":{\"[PAD]\":0,\"[UNK]\":1,\"[CLS]\":2,\"[SEP]\":3,"
    "\"a\":4,\"b\":5,\"ab\":6,\"##b\":7,\"##c\":8,\"!\":9,\"\u4e2d\":10,\"e\":11}}}";

void tokenizer_json_seeds(void) {
    struct { const char *name, *json, *cfg; uint8_t flags; } seeds[] = {
        {"bytelevel_cfg.bin", k_bpe_json, k_bpe_config, 3},
        {"bytelevel_nocfg.bin", k_bpe_json, NULL, 1},
        {"spm_bpe.bin", k_spm_json, NULL, 3},
        {"wordpiece.bin", k_wp_json, NULL, 3},
        {"spm_bpe_cfg.bin", k_spm_json, "{\"add_bos_token\":true,\"bos_token\":\"<s>\",\"chat_template\":\"t\"}", 0},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        mllm_tokenizer *t = NULL;
        const char *cfg = seeds[i].cfg;
        expect_ok(seeds[i].name, mllm_tokenizer_from_hf_memory(seeds[i].json, strlen(seeds[i].json), cfg,
                                                                cfg ? strlen(cfg) : 0, seeds[i].name, &t));
        mllm_tokenizer_free(t);
        buf b = {0};
        put_part(&b, seeds[i].json, strlen(seeds[i].json));
        if (cfg) put_part(&b, cfg, strlen(cfg));
        else put_u32(&b, 0xffffffffu);
        put_text(&b, seeds[i].flags);
        save("tokenizer_json", seeds[i].name, b.p, b.n);
        free(b.p);
    }
}

/* ---- llama2.c tokenizer.bin ---------------------------------------------- */
void tokenizer_bin_seeds(void) {
    buf tok = {0};
    put_u32(&tok, 8);
    const char *fixed[] = {"<unk>", "\n<s>\n", "\n</s>\n"};
    for (int i = 0; i < 3; i++) {
        put_f32(&tok, 0.0f);
        put_u32(&tok, (uint32_t)strlen(fixed[i]));
        put_str(&tok, fixed[i]);
    }
    for (int byte = 0; byte < 256; byte++) {
        char s[8];
        snprintf(s, sizeof s, "<0x%02X>", byte);
        put_f32(&tok, 0.0f);
        put_u32(&tok, 6);
        put(&tok, s, 6);
    }
    const char *words[] = {" ", "a", "b", "c", " a", "ab", " ab", "bc", "abc", " abc", "\xc3\xa9"};
    for (int i = 0; i < 11; i++) {
        put_f32(&tok, -(float)i);
        put_u32(&tok, (uint32_t)strlen(words[i]));
        put_str(&tok, words[i]);
    }
    char path[64];
    snprintf(path, sizeof path, "/tmp/mllm-seed-tok-%d.bin", (int)getpid());
    FILE *f = fopen(path, "wb");
    fwrite(tok.p, 1, tok.n, f);
    fclose(f);
    mllm_tokenizer *t = NULL;
    expect_ok("tokenizer.bin", mllm_tokenizer_from_llama2c(path, &t));
    mllm_tokenizer_free(t);
    unlink(path);
    for (int v = 0; v < 2; v++) {
        buf b = {0};
        put_part(&b, tok.p, tok.n);
        put_text(&b, (uint8_t)(v ? 1 : 2));
        save("tokenizer_bin", v ? "bytes_words_bos.bin" : "bytes_words.bin", b.p, b.n);
        free(b.p);
    }
    /* A minimal one: the three fixed tokens and two letters. */
    buf small = {0};
    put_u32(&small, 3);
    const char *few[] = {"<unk>", "<s>", "</s>", "h", "i", "hi"};
    for (int i = 0; i < 6; i++) {
        put_f32(&small, (float)i);
        put_u32(&small, (uint32_t)strlen(few[i]));
        put_str(&small, few[i]);
    }
    buf b = {0};
    put_part(&b, small.p, small.n);
    put_text(&b, 0);
    save("tokenizer_bin", "minimal.bin", b.p, b.n);
    free(b.p);
    free(small.p);
    free(tok.p);
}


/* ---- chat templates ------------------------------------------------------- */
static const char k_conversation[] =
    "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
    "{\"role\":\"user\",\"content\":\"Hi \\u00e9 \\\"q\\\"\"},"
    "{\"role\":\"assistant\",\"content\":\"Hello!\",\"tool_calls\":[{\"type\":\"function\","
    "\"function\":{\"name\":\"f\",\"arguments\":{\"x\":1}}}]},"
    "{\"role\":\"tool\",\"content\":\"42\"},{\"role\":\"user\",\"content\":\"Bye\"}],"
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}],"
    "\"add_generation_prompt\":true,\"enable_thinking\":false}";

/* Constructs the built-in templates may not use. */
static const char k_features[] =
    "{%- set ns = namespace(n=0) -%}{% macro m(a, b=2) %}[{{ a }}{{ b }}]{% endmacro %}"
    "{% for x in messages if x.role != 'tool' %}{{ loop.index }}{{ m(x.role|upper) }}"
    "{% set ns.n = ns.n + 1 %}{% if loop.last %}{% break %}{% endif %}{% endfor %}"
    "{{ ns.n }} {{ (messages|length) is divisibleby 2 }} {{ 'a,b'.split(',')|join('-') }}"
    "{{ messages[0].content[1:3]|trim|replace('e','E') }} {{ tools|tojson }} {{ range(3)|list }}"
    "{{ 7 // 2 }}{{ 2 ** 3 }}{{ 7 % 3 }} {{ bos_token ~ eos_token }}"
    "{% filter upper %}f{% endfilter %}{{ 'x' if enable_thinking else 'y' }}"
    "{%- if not add_generation_prompt %}{{ raise_exception('no') }}{% endif %}";

void template_seeds(void) {
    const char *names = mllm_template_builtin_names();
    char list[1024];
    snprintf(list, sizeof list, "%s", names);
    int k = 0;
    for (char *pos = NULL, *nm = strtok_r(list, ",", &pos); nm; nm = strtok_r(NULL, ",", &pos)) {
        while (*nm == ' ') nm++;
        const char *src = mllm_template_builtin(nm);
        if (!src) continue;
        char *out = NULL;
        char err[256];
        if (mllm_template_render(src, k_conversation, &out, err, sizeof err) != MLLM_OK) {
            /* Some templates refuse tool messages: keep the seed anyway. */
            printf("  (builtin %s: %s)\n", nm, err);
        }
        mllm_free(out);
        buf b = {0};
        put_part(&b, src, strlen(src));
        put_str(&b, k_conversation);
        char name[96];
        snprintf(name, sizeof name, "builtin_%s.bin", nm);
        save("template", name, b.p, b.n);
        free(b.p);
        k++;
    }
    char *out = NULL;
    char err[256];
    expect_ok("template features", mllm_template_render(k_features, k_conversation, &out, err, sizeof err));
    if (out == NULL) fprintf(stderr, "  %s\n", err);
    mllm_free(out);
    buf b = {0};
    put_part(&b, k_features, strlen(k_features));
    put_str(&b, k_conversation);
    save("template", "features.bin", b.p, b.n);
    free(b.p);
}


/* ---- sentence-transformers configs ---------------------------------------- */
void st_config_seeds(void) {
    static const char modules[] =
        "[{\"idx\":0,\"name\":\"0\",\"path\":\"\",\"type\":\"sentence_transformers.models.Transformer\"},"
        "{\"idx\":1,\"name\":\"1\",\"path\":\"1_Pooling\",\"type\":\"sentence_transformers.models.Pooling\"},"
        "{\"idx\":2,\"name\":\"2\",\"path\":\"2_Normalize\",\"type\":\"sentence_transformers.models.Normalize\"}]";
    static const char pooling[] = "{\"word_embedding_dimension\":384,\"pooling_mode_cls_token\":false,"
                                  "\"pooling_mode_mean_tokens\":true,\"pooling_mode_max_tokens\":false}";
    static const char sbert[] = "{\"max_seq_length\":256,\"do_lower_case\":false}";
    mllm_st_config c;
    expect_ok("st_config", mllm_st_config_parse(modules, pooling, sbert, "seed", &c));
    buf b = {0};
    put_part(&b, modules, strlen(modules));
    put_part(&b, pooling, strlen(pooling));
    put_part(&b, sbert, strlen(sbert));
    save("st_config", "minilm.bin", b.p, b.n);
    free(b.p);
}
