/* Helpers shared by the fuzz targets (tests/fuzz/fuzz_*.c). Each target
   defines LLVMFuzzerTestOneInput; it is linked either with libFuzzer
   (clang -fsanitize=fuzzer, tests/CMakeLists.txt MLLM_FUZZ block) or with
   fuzz_replay.c, a plain main() that replays the corpus and the regression
   inputs as a ctest test (any compiler). */
#ifndef MLLM_FUZZ_UTIL_H
#define MLLM_FUZZ_UTIL_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant of the library broke: print where and abort, so libFuzzer
   (or ctest) records the input as a crash. Works without sanitizers too. */
#define FZ_CHECK(cond) \
    do { \
        if (!(cond)) fz_fail(__FILE__, __LINE__, #cond); \
    } while (0)
_Noreturn void fz_fail(const char *file, int line, const char *what);

/* After a call into the library: a failure must be a known error status
   with a non-empty message (never a silent or unnamed error). */
void fz_check_status(mllm_status st);

/* The unread rest of the fuzz input, consumed from the front. */
typedef struct {
    const uint8_t *p;
    size_t n;
} fz_input;

/* Next byte / little-endian u32 (0 when the input is exhausted). */
uint8_t fz_take_u8(fz_input *in);
uint32_t fz_take_u32(fz_input *in);
/* A length-prefixed part: u32 length (clamped to what is left), then the
   bytes. The seed writer (make_seeds.c) builds inputs the same way. */
fz_input fz_take_part(fz_input *in);

/* Exact-size heap copies, so that any read past the end is an ASan error
   (the fuzzer's own buffer may have slack). Free with free(). */
void *fz_dup(const void *p, size_t n);
/* Copy with a NUL after the n bytes (for text APIs). */
char *fz_dup_str(const void *p, size_t n);

/* A private folder for this process, created on first use and removed at
   a normal exit; under $MLLM_FUZZ_TMP if set, else /dev/shm, else $TMPDIR
   or /tmp (scripts/fuzz.sh points MLLM_FUZZ_TMP at a folder it cleans up,
   since a crashing input skips the exit handler). */
const char *fz_tmpdir(void);
/* Writes data into fz_tmpdir()/<rel> (rel may hold one sub-folder level,
   created as needed) and returns the full path in a static buffer, or NULL. */
const char *fz_write(const char *rel, const void *data, size_t n);
/* Removes fz_tmpdir()/<rel> (file or empty folder); missing is fine. */
void fz_remove(const char *rel);

#endif
