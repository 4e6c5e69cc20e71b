/* "Now" is pinned by SOURCE_DATE_EPOCH (core/clock.h): strftime_now() renders
   that instant in UTC whatever TZ says, Python's naive-datetime directives
   (%z, %Z, %f) come out as transformers prints them, and a malformed value is
   an error that names it, never the wall clock. Each test sets the variable
   it needs, so the file passes on any day and in any zone (the CI guard
   reruns the suite under faketime and TZ=Pacific/Kiritimati). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/alloc.h"
#include "core/clock.h"
#include "template/template.h"
#include "testutil.h"

static char g_err[512];

/* Renders `src` with no variables; NULL (and the error in g_err) on failure. */
static char *render(const char *src) {
    char *out = NULL;
    g_err[0] = 0;
    if (mllm_template_render(src, "{}", &out, g_err, sizeof g_err) != MLLM_OK) return NULL;
    return out;
}

static void expect_render(const char *epoch, const char *src, const char *want) {
    setenv("SOURCE_DATE_EPOCH", epoch, 1);
    char *out = render(src);
    if (!out) printf("render of %s at %s failed: %s\n", src, epoch, g_err);
    assert_non_null(out);
    assert_string_equal(out, want);
    mllm_free(out);
}

static void test_parse(void **state) {
    (void)state;
    int64_t v = -1;
    assert_true(mllm_clock_parse_epoch("0", &v));
    assert_int_equal(v, 0);
    assert_true(mllm_clock_parse_epoch("1893456000", &v));
    assert_int_equal(v, 1893456000);
    assert_true(mllm_clock_parse_epoch("253402300799", &v));
    assert_int_equal(v, MLLM_CLOCK_MAX_EPOCH);
    const char *bad[] = {"", "-1", "+5", " 5", "5 ", "1e9", "0x10", "12a", "253402300800",
                         "99999999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 7;
        assert_false(mllm_clock_parse_epoch(bad[i], &v));
        assert_int_equal(v, 7); /* untouched on failure */
    }
}

/* The Llama 3.2 template's own call, at the instant the issue names, and at
   23:30 UTC, where any zone east of UTC would already be the next day. */
static void test_pinned_utc_whatever_tz(void **state) {
    (void)state;
    const char *zones[] = {"UTC", "Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Kolkata"};
    for (size_t i = 0; i < sizeof zones / sizeof *zones; i++) {
        setenv("TZ", zones[i], 1);
        tzset();
        expect_render("1893456000", "{{ strftime_now('%d %b %Y') }}", "01 Jan 2030");
        expect_render("1751326200", "{{ strftime_now('%d %b %Y %H:%M:%S') }}", "30 Jun 2025 23:30:00");
        expect_render("0", "{{ strftime_now('%Y-%m-%dT%H:%M:%S %A %B %j') }}",
                      "1970-01-01T00:00:00 Thursday January 001");
    }
    unsetenv("TZ");
    tzset();
}

/* Python's naive datetime: %z and %Z print nothing, %f six zeros; %% stays
   a literal percent even before z; glibc's %-d passes through as CPython
   passes it to the C library. */
static void test_python_directives(void **state) {
    (void)state;
    expect_render("1893456000", "{{ strftime_now('[%z][%Z][%f][%%z][%-d][%%]') }}", "[][][000000][%z][1][%]");
    expect_render("1893456000", "{{ strftime_now('') }}|{{ strftime_now('%Z') }}|", "||");
}

static void test_malformed_is_an_error(void **state) {
    (void)state;
    setenv("SOURCE_DATE_EPOCH", "yesterday", 1);
    char *out = render("a{{ strftime_now('%Y') }}");
    assert_null(out);
    if (!strstr(g_err, "SOURCE_DATE_EPOCH='yesterday'") || !strstr(g_err, "line 1")) printf("error: %s\n", g_err);
    assert_non_null(strstr(g_err, "SOURCE_DATE_EPOCH='yesterday'"));
    assert_non_null(strstr(g_err, "line 1"));
    int64_t now;
    assert_int_equal(mllm_clock_now(&now, NULL), MLLM_ERR_INVALID_ARG);
    /* A template that never asks for the date does not care. */
    out = render("no date");
    assert_non_null(out);
    assert_string_equal(out, "no date");
    mllm_free(out);
}

/* Unset: the wall clock. Bracketed by time() before and after, so the check
   holds on any day (a render that straddles a second boundary still lies
   between the two readings). */
static void test_unset_reads_the_clock(void **state) {
    (void)state;
    unsetenv("SOURCE_DATE_EPOCH");
    int64_t now = -1;
    bool pinned = true;
    time_t before = time(NULL);
    assert_int_equal(mllm_clock_now(&now, &pinned), MLLM_OK);
    time_t after = time(NULL);
    assert_false(pinned);
    assert_true(now >= (int64_t)before && now <= (int64_t)after);
    setenv("SOURCE_DATE_EPOCH", "42", 1);
    assert_int_equal(mllm_clock_now(&now, &pinned), MLLM_OK);
    assert_true(pinned);
    assert_int_equal(now, 42);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_pinned_utc_whatever_tz),
        cmocka_unit_test(test_python_directives),
        cmocka_unit_test(test_malformed_is_an_error),
        cmocka_unit_test(test_unset_reads_the_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
