/* mllm info on a CTranslate2 model (a folder with model.bin, or the
   model.bin itself): spec, revision and the variable table, read through
   mllm_file_info; it says which command runs the model. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

int cmd_info_ct2(const char *path, bool tensors) {
    mllm_file_info *f = NULL;
    mllm_status st = mllm_file_info_open(path, &f);
    if (st != MLLM_OK) return cli_fail("cannot read the CTranslate2 model", st);
    uint32_t revision = 0;
    const char *spec = mllm_file_info_spec(f, &revision);
    printf("format: CTranslate2 model.bin, binary version %u\n", mllm_file_info_version(f));
    printf("spec: %s, revision %u\n", spec, revision);
    if (tensors) {
        uint64_t total = 0;
        printf("variables: %zu\n", mllm_file_info_n_tensors(f));
        for (size_t i = 0; i < mllm_file_info_n_tensors(f); i++) {
            mllm_tensor_info t = {.struct_size = sizeof t};
            if (mllm_file_info_tensor(f, i, &t) != MLLM_OK) break;
            printf("  %-48s %-8s [", t.name, t.dtype);
            for (int d = 0; d < t.n_dims; d++) printf(d ? ", %lld" : "%lld", (long long)t.ne[d]);
            printf("] %llu bytes\n", (unsigned long long)t.size);
            total += t.size;
        }
        printf("aliases: %zu\n", mllm_file_info_n_aliases(f));
        for (size_t i = 0; i < mllm_file_info_n_aliases(f); i++) {
            const char *name = NULL, *target = NULL;
            if (mllm_file_info_alias(f, i, &name, &target) == MLLM_OK) printf("  %s -> %s\n", name, target);
        }
        printf("total variable bytes: %llu (%.1f MiB)\n", (unsigned long long)total, total / 1048576.0);
    }
    if (!strcmp(spec, "WhisperSpec"))
        printf("note: a Whisper model: run it with mllm transcribe -m FOLDER AUDIO, or serve it with mllm serve (mllm run/chat do not take it)\n");
    else
        printf("note: mllm runs only Whisper's CTranslate2 spec (mllm transcribe), not %s\n", spec);
    mllm_file_info_close(f);
    return 0;
}
