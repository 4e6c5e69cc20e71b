/* core/atomic_write.h: a commit replaces the file and leaves no temporary;
   a writer's failure, or a destination that cannot be renamed onto, leaves
   the old file as it was, no temporary, and an error naming the file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/alloc.h"
#include "core/atomic_write.h"
#include "core/error.h"
#include "testutil.h"

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 256);
    if (buf && fread(buf, 1, 255, f) == 0) buf[0] = 0;
    fclose(f);
    return buf;
}

static mllm_status write_text(const char *path, const char *text, mllm_status writer_st) {
    mllm_atomic_file af;
    mllm_status st = mllm_atomic_open(&af, path);
    if (st) return st;
    fputs(text, af.f);
    return mllm_atomic_commit(&af, writer_st);
}

static bool tmp_exists(const char *path) {
    char *tmp = mllm_atomic_tmp_name(path);
    const bool there = access(tmp, F_OK) == 0;
    mllm_free(tmp);
    return there;
}

static void test_commit_and_discard(void **state) {
    (void)state;
    const char *path = tu_tmp("atomic.txt");
    assert_int_equal(write_text(path, "first", MLLM_OK), MLLM_OK);
    char *got = slurp(path);
    assert_string_equal(got, "first");
    free(got);
    assert_int_equal(write_text(path, "second", MLLM_OK), MLLM_OK);
    got = slurp(path);
    assert_string_equal(got, "second");
    free(got);
    assert_false(tmp_exists(path));
    /* The writer failed: its status comes back, the old file stays. */
    assert_int_equal(write_text(path, "half", MLLM_ERR_IO), MLLM_ERR_IO);
    got = slurp(path);
    assert_string_equal(got, "second");
    free(got);
    assert_false(tmp_exists(path));
    free((void *)path);
}

static void test_rename_failure_names_the_file(void **state) {
    (void)state;
    /* A folder cannot be replaced by a file: the rename fails. */
    const char *dir = tu_tmp("atomic_dir");
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/inner", dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkdir(sub, 0755), 0);
    assert_int_equal(write_text(dir, "x", MLLM_OK), MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "rename failed"));
    assert_non_null(strstr(mllm_last_error(), dir));
    assert_false(tmp_exists(dir));
    assert_int_equal(access(sub, F_OK), 0);
    /* No folder to create the temporary in: the error names it. */
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/no/such/file", dir);
    assert_int_equal(write_text(missing, "x", MLLM_OK), MLLM_ERR_IO);
    assert_non_null(strstr(mllm_last_error(), "cannot create"));
    free((void *)dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commit_and_discard),
        cmocka_unit_test(test_rename_failure_names_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
