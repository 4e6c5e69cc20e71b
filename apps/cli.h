/* The mllm command-line tool: one binary, one file per sub-command. */
#ifndef MLLM_APPS_CLI_H
#define MLLM_APPS_CLI_H
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <mllm/mllm.h>

int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_grammar(int argc, char **argv);
int cmd_transcribe(int argc, char **argv);

/* cmd_info_ct2.c: mllm info's listing of a CTranslate2 model (a folder or
   its model.bin: mllm_file_is_ctranslate2). */
int cmd_info_ct2(const char *path, bool tensors);

/* Option parsing helpers: each returns false (after printing why) on a bad
   or missing value. */
bool cli_int(const char *opt, const char *val, long lo, long hi, long *out);
/* --kv-type f32|f16|q8: the paged KV pool with that K/V type (mllm_session_params.kv_type). */
bool cli_kv_type(const char *opt, const char *val, int *out);
/* The --help line of --kv-type. */
#define CLI_KV_TYPE_USAGE \
    "      --kv-type T       KV cache as a pool of 16-token blocks with K/V in f32, f16 or q8\n" \
    "                        (int8 per token and head, f32 scale); default: one contiguous f32 cache\n"
bool cli_float(const char *opt, const char *val, double lo, double hi, double *out);
/* The value after argv[*i], advancing *i; prints an error if missing. */
const char *cli_value(int argc, char **argv, int *i);
/* The whole file, NUL-terminated (malloc'd; *len may be NULL); NULL after
   printing why. */
char *cli_read_file(const char *path, size_t *len);
/* Prints "mllm: <what>: <status> (<detail>)" to stderr, returns 1. */
int cli_fail(const char *what, mllm_status st);
/* --image / /image (cli_image.c): prefills the conversation (JSON whose
   {"type": "image"} parts are the files paths[0..n), n <= 64, in order)
   with mllm_chat_prefill and prints the images' token count and times to
   stderr. *n_reused (may be NULL): prompt tokens kept from the KV cache.
   0 on success, else 1 (message printed, prefixed by who). */
int cli_image_eval(mllm_session *s, const char *conv, const char *const *paths, int n, const char *who,
                   size_t *n_reused);
/* The counters a prefill with images added since *before, on stderr. */
void cli_image_report(const char *who, const mllm_timings *before, const mllm_timings *after);

/* --backend NAME, -ngl N (cli_backend.c). */
typedef struct {
    const char *backend; /* NULL: MLLM_BACKENDS, else the CPU */
    long n_gpu_layers;   /* -1: everything */
} cli_backend_opts;
extern const char *const cli_backend_usage; /* the options' --help lines */
void cli_backend_defaults(cli_backend_opts *o);
/* argv[*i] is one of the options: 1 (its value consumed), -1 (bad value,
   printed), 0 (not one of them). */
int cli_backend_arg(cli_backend_opts *o, int argc, char **argv, int *i);
/* Into the load parameters; who prefixes a note ("mllm run"). */
void cli_backend_apply(const cli_backend_opts *o, mllm_load_params *lp, const char *who);
/* After a load: the OpenCL / CUDA device in use, on stderr ("who: opencl device: ..."). */
void cli_backend_report(const char *who);

/* Speculative decoding options (cli_spec.c): --draft, --draft-quant, --draft-max,
   --draft-p-min, --no-lookup, --speculative, --no-speculative. */
typedef struct {
    const char *draft; /* draft model path or NULL */
    const char *draft_quant; /* mllm_load_params.requant of the draft, NULL: keep */
    int mode;          /* mllm_spec_mode */
    bool lookup;
    long n_max;
    double p_min;
} cli_spec_opts;
extern const char *const cli_spec_usage; /* the options' --help lines */
void cli_spec_defaults(cli_spec_opts *o);
/* argv[*i] is one of the options: 1 (its value consumed), -1 (bad value,
   printed), 0 (not one of them). */
int cli_spec_arg(cli_spec_opts *o, int argc, char **argv, int *i);
/* Loads o->draft (NULL without one, or when speculation is off). */
mllm_status cli_spec_load(const cli_spec_opts *o, int n_threads, mllm_model **draft);
/* The parameters the options say, with draft as the draft model. */
void cli_spec_params(const cli_spec_opts *o, mllm_model *draft, mllm_speculative_params *p);
/* Sets the session's speculation; errors are printed. */
mllm_status cli_spec_apply(const cli_spec_opts *o, mllm_model *draft, mllm_session *s);
/* " | lookup: a/d accepted in n passes ..." on stderr (nothing if none). */
void cli_spec_report(const mllm_session *s);

/* A seed from /dev/urandom (--seed -1, the default, as in llama.cpp). */
uint64_t cli_random_seed(void);
/* The largest --seed an option takes: 2^62, or LONG_MAX where long has 32
   bits (wasm32). */
#if LONG_MAX > 0x7fffffffL
#define CLI_SEED_MAX (1L << 62)
#else
#define CLI_SEED_MAX LONG_MAX
#endif
/* The process's peak resident memory in MiB (getrusage; on wasm32-wasi the
   size of the linear memory, which only grows). */
double cli_peak_rss_mib(void);

typedef struct {
    long max_tokens;    /* -1: until end of generation (or the context, without a shift) */
    bool context_shift; /* when the context fills: drop old tokens and go on */
    int n_keep;         /* tokens a shift never drops (the system prompt) */
} cli_gen_opts;
typedef struct {
    int n_gen;          /* tokens generated */
    int n_shifts;       /* context shifts made */
    bool context_full;  /* stopped because the context was full */
} cli_gen_result;
/* Samples from the session's current logits like mllm_generate_ids. A full
   context is not an error: it ends the generation with res->context_full
   set, or, with o->context_shift, keeps the first n_keep tokens, drops half
   of the rest (oldest first), re-evaluates and goes on. */
mllm_status cli_generate(mllm_session *s, const mllm_sampling *sp, const cli_gen_opts *o, mllm_on_token cb,
                         void *user, cli_gen_result *res);

#endif
