/* Chat templates: a Jinja interpreter written for this project, complete
   enough for the chat templates that ship with models (Qwen2.5/3/3.5,
   Llama 2/3.x, SmolLM2/3, TinyLlama ...). It renders like Python's Jinja2
   configured as Hugging Face transformers does for apply_chat_template:
   trim_blocks and lstrip_blocks on, no autoescape, tojson that keeps
   non-ASCII text (json.dumps(ensure_ascii=False)), loop controls (break,
   continue), raise_exception(msg) and strftime_now(fmt) as globals.

       mllm_template *t;
       if (mllm_template_compile(src, strlen(src), "qwen3", &t) != MLLM_OK)
           puts(mllm_last_error());            // "qwen3: line 3: unknown filter 'foo'"
       char *text; size_t n;
       mllm_template_render_json(t, "{\"messages\": [...], \"add_generation_prompt\": true}",
                                 SIZE_MAX, NULL, &text, &n);
       ...
       mllm_free(text);
       mllm_template_free(t);

   A compiled template is immutable: any number of threads may render it at
   once. Errors (syntax, unsupported construct, runtime type errors,
   raise_exception) name the template, the line and the construct. */
#ifndef MLLM_TEMPLATE_TEMPLATE_H
#define MLLM_TEMPLATE_TEMPLATE_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct mllm_template mllm_template;

/* Parses `len` bytes of template source (UTF-8). `name` labels error
   messages (may be NULL). Errors: MLLM_ERR_FORMAT (syntax, unknown filter,
   test or tag, with the line), MLLM_ERR_NOMEM. */
mllm_status mllm_template_compile(const char *src, size_t len, const char *name,
                                  mllm_template **out);
void mllm_template_free(mllm_template *t);

/* Renders with the variables of a JSON object. ctx_len may be SIZE_MAX
   (then ctx_json is NUL-terminated). defaults_json (NULL or a JSON object,
   NUL-terminated) supplies variables the context lacks (the model's
   bos_token / eos_token). On success *out is a NUL-terminated string of
   *out_len bytes (out_len may be NULL) to release with mllm_free.
   Errors: MLLM_ERR_INVALID_ARG (bad context JSON, template runtime error,
   raise_exception: the message says which), MLLM_ERR_NOMEM. */
mllm_status mllm_template_render_json(const mllm_template *t, const char *ctx_json,
                                      size_t ctx_len, const char *defaults_json, char **out,
                                      size_t *out_len);

/* Rewrites a string of the context before rendering: returns 1 with a new
   string (*out of *out_n bytes, allocated with mllm_malloc; the template
   copies and frees it), 0 to keep the string as it is, -1 when out of
   memory. */
typedef int (*mllm_template_str_fn)(void *user, const char *s, size_t n, char **out, size_t *out_n);

/* mllm_template_render_json, with every string of the context (keys and
   values, at any depth; not those of defaults_json) passed through rewrite
   first. Chat uses it to mark the conversation's own text (NUL-safe: the
   strings carry lengths). Errors as mllm_template_render_json. */
mllm_status mllm_template_render_json_rewrite(const mllm_template *t, const char *ctx_json, size_t ctx_len,
                                              const char *defaults_json, mllm_template_str_fn rewrite,
                                              void *user, char **out, size_t *out_len);

/* One-shot: compile + render; on error the message is also copied to
   errbuf (cap errcap, may be 0). */
mllm_status mllm_template_render(const char *tmpl, const char *context_json, char **out,
                                 char *errbuf, size_t errcap);

/* The source of a template shipped with mllm by name ("chatml", "llama2",
   "llama3", "zephyr", ...); NULL if unknown. mllm_template_builtin_names
   lists them, comma separated. */
const char *mllm_template_builtin(const char *name);
const char *mllm_template_builtin_names(void);

/* The chat template a model carries, and its BOS / EOS token texts (NULL
   when it has none): from a GGUF file (tokenizer.chat_template,
   tokenizer.ggml.bos/eos_token_id), a Hugging Face folder
   (tokenizer_config.json's chat_template, bos_token, eos_token; or
   chat_template.jinja), a tokenizer_config.json file, or a .jinja file.
   Free with mllm_template_model_free. Errors: MLLM_ERR_IO, MLLM_ERR_FORMAT
   (unreadable, or no chat template: the message says which). */
typedef struct {
    char *source;
    char *bos_token;
    char *eos_token;
} mllm_template_model;
mllm_status mllm_template_model_load(const char *path, mllm_template_model *out);
void mllm_template_model_free(mllm_template_model *m);
/* {"bos_token": ..., "eos_token": ...} (the ones present) for the
   defaults_json of mllm_template_render_json; mllm_free the result. */
char *mllm_template_model_defaults(const mllm_template_model *m);

#endif
