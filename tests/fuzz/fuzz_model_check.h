/* Invariants of an opened mllm_model_file that the model code relies on
   (it indexes weights blindly after mllm_model_file_open succeeds). */
#ifndef MLLM_FUZZ_MODEL_CHECK_H
#define MLLM_FUZZ_MODEL_CHECK_H
#include "formats/model_file.h"
#include "models/hparams.h"

/* Every weight: known dtype, size = rows x row size, both ends readable
   (a weight past the mapping faults here, inside the fuzzer). */
void fz_check_model_file(const mllm_model_file *f, const mllm_hparams *c);
/* Opens path with mllm_model_file_open, checks the status and, on success,
   the invariants above and loads the tokenizer the file carries (as
   mllm_model_load does); closes it again. */
void fz_open_model_file(const char *path);

#endif
