/* Wall clock or SOURCE_DATE_EPOCH, and the monotonic clock: see clock.h. */
#include "core/clock.h"

#include <stdlib.h>

#include "core/error.h"

void mllm_clock_mono(struct timespec *ts) { clock_gettime(CLOCK_MONOTONIC, ts); }

double mllm_clock_mono_ms(void) {
    struct timespec ts;
    mllm_clock_mono(&ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

double mllm_clock_mono_seconds(void) {
    struct timespec ts;
    mllm_clock_mono(&ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool mllm_clock_parse_epoch(const char *s, int64_t *out) {
    if (!s || !*s) return false;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        v = v * 10 + (*p - '0');
        if (v > MLLM_CLOCK_MAX_EPOCH) return false; /* also stops overflow */
    }
    *out = v;
    return true;
}

mllm_status mllm_clock_now(int64_t *out, bool *pinned) {
    const char *e = getenv("SOURCE_DATE_EPOCH");
    if (pinned) *pinned = e != NULL;
    if (e) {
        if (!mllm_clock_parse_epoch(e, out))
            return mllm_err(MLLM_ERR_INVALID_ARG,
                            "SOURCE_DATE_EPOCH='%.40s' is not a whole number of seconds since 1970-01-01 UTC "
                            "(0..%lld); unset it to use the clock",
                            e, (long long)MLLM_CLOCK_MAX_EPOCH);
        return MLLM_OK;
    }
    *out = (int64_t)time(NULL);
    return MLLM_OK;
}

mllm_status mllm_clock_now_tm(struct tm *out) {
    int64_t now;
    bool pinned;
    mllm_status st = mllm_clock_now(&now, &pinned);
    if (st != MLLM_OK) return st;
    time_t t = (time_t)now;
    if (!(pinned ? gmtime_r(&t, out) : localtime_r(&t, out)))
        return mllm_err(MLLM_ERR_INVALID_ARG, "cannot break down the time %lld", (long long)now);
    return MLLM_OK;
}
