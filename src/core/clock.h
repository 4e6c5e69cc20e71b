/* "Now" for everything that prints a date or stamps a response: the chat
   template's strftime_now(), the server's `created`, bench's test_time.

   SOURCE_DATE_EPOCH (the reproducible-builds convention) pins it: when the
   variable is set, now is that many seconds after 1970-01-01 00:00:00 UTC and
   dates are broken down in UTC whatever TZ says, so a test, a build or a
   replayed conversation renders the same text on any day in any zone.
   Unset, now is the wall clock broken down in local time (what transformers'
   datetime.now() gives). */
#ifndef MLLM_CORE_CLOCK_H
#define MLLM_CORE_CLOCK_H
#include <mllm/mllm.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The largest SOURCE_DATE_EPOCH accepted: 9999-12-31 23:59:59 UTC, the last
   instant a four-digit %Y can print. */
#define MLLM_CLOCK_MAX_EPOCH 253402300799LL

/* Seconds since the epoch into *out; *pinned (may be NULL) says whether it
   came from SOURCE_DATE_EPOCH. MLLM_ERR_INVALID_ARG, with mllm_last_error()
   naming the value, when the variable is set but is not a decimal whole
   number in 0..MLLM_CLOCK_MAX_EPOCH (empty, signs, spaces, overflow): a
   malformed pin is an error, never silently the wall clock. */
mllm_status mllm_clock_now(int64_t *out, bool *pinned);

/* Now broken down: UTC when pinned, local time otherwise. Same errors. */
mllm_status mllm_clock_now_tm(struct tm *out);

/* Parses a SOURCE_DATE_EPOCH value as mllm_clock_now does (exposed for
   tests); false when it is malformed. */
bool mllm_clock_parse_epoch(const char *s, int64_t *out);

/* The monotonic clock (CLOCK_MONOTONIC): the one clock of every timing,
   timeout and timed wait (a pthread condition set to it); never a date.
   mllm_clock_mono reads it; the others are the same reading in ms and s. */
void mllm_clock_mono(struct timespec *ts);
double mllm_clock_mono_ms(void);
double mllm_clock_mono_seconds(void);

#endif
