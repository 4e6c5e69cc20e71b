/* mllm info on a CTranslate2 model (a folder with model.bin, or the
   model.bin itself): spec, revision and the variable table. Whisper folders
   run with `mllm transcribe`, not through the model registry, so this lists
   what the file holds and says which command runs it. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "cli.h"
#include "core/dtype.h"
#include "formats/ctranslate2.h"

/* The model.bin path for a CTranslate2 folder or file, or false. A file
   counts when its first bytes are a known binary version and a short,
   printable spec name (nothing else this CLI reads starts like that). */
bool cli_ct2_path(const char *path, char *out, size_t cap) {
    struct stat sb;
    if (stat(path, &sb) != 0) return false;
    if (S_ISDIR(sb.st_mode)) {
        char st_path[4096];
        snprintf(st_path, sizeof st_path, "%s/model.safetensors", path);
        if (stat(st_path, &sb) == 0) return false; /* a Hugging Face folder */
        if ((size_t)snprintf(out, cap, "%s/model.bin", path) >= cap) return false;
        return stat(out, &sb) == 0 && S_ISREG(sb.st_mode);
    }
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    uint8_t h[7];
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n < sizeof h) return false;
    uint32_t version = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
    uint16_t len = (uint16_t)(h[4] | h[5] << 8);
    if (version < MLLM_CT2_MIN_VERSION || version > MLLM_CT2_MAX_VERSION || len < 2 ||
        len > MLLM_CT2_MAX_SPEC_NAME + 1 || h[6] < 'A' || h[6] > 'Z')
        return false;
    return (size_t)snprintf(out, cap, "%s", path) < cap;
}

int cmd_info_ct2(const char *path, bool tensors) {
    mllm_ct2 *c = NULL;
    mllm_status st = mllm_ct2_open(path, &c);
    if (st != MLLM_OK) return cli_fail("cannot read the CTranslate2 model", st);
    printf("format: CTranslate2 model.bin, binary version %u\n", mllm_ct2_version(c));
    printf("spec: %s, revision %u\n", mllm_ct2_spec_name(c), mllm_ct2_spec_revision(c));
    if (tensors) {
        uint64_t total = 0;
        printf("variables: %zu\n", mllm_ct2_n_tensors(c));
        for (size_t i = 0; i < mllm_ct2_n_tensors(c); i++) {
            const mllm_ct2_tensor *t = mllm_ct2_tensor_at(c, i);
            printf("  %-48s %-8s [", t->name, mllm_ct2_dtype_name(t->dtype));
            for (int d = 0; d < t->rank; d++) printf(d ? ", %u" : "%u", t->dims[d]);
            printf("] %zu bytes\n", t->size);
            total += t->size;
        }
        printf("aliases: %zu\n", mllm_ct2_n_aliases(c));
        for (size_t i = 0; i < mllm_ct2_n_aliases(c); i++) {
            const mllm_ct2_alias *a = mllm_ct2_alias_at(c, i);
            printf("  %s -> %s\n", a->name, mllm_ct2_tensor_at(c, a->target)->name);
        }
        printf("total variable bytes: %llu (%.1f MiB)\n", (unsigned long long)total, total / 1048576.0);
    }
    if (!strcmp(mllm_ct2_spec_name(c), "WhisperSpec"))
        printf("note: a Whisper model: run it with mllm transcribe -m FOLDER AUDIO, or serve it with mllm serve (mllm run/chat do not take it)\n");
    else
        printf("note: mllm runs only Whisper's CTranslate2 spec (mllm transcribe), not %s\n", mllm_ct2_spec_name(c));
    mllm_ct2_close(c);
    return 0;
}
