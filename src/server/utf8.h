/* UTF-8 checks for text that crosses the HTTP boundary: request strings
   must be valid UTF-8, and JSON we send must be too. */
#ifndef MLLM_SERVER_UTF8_H
#define MLLM_SERVER_UTF8_H
#include <stdbool.h>
#include <stddef.h>

/* Well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF). */
bool srv_utf8_valid(const char *s, size_t n);
/* Length of the valid sequence at s[0..n), 0 if none starts there. */
size_t srv_utf8_seq(const unsigned char *s, size_t n);
/* A NUL-terminated copy with every invalid byte replaced by U+FFFD
   (mllm_free it), or NULL when out of memory. */
char *srv_utf8_sanitize(const char *s, size_t n);

#endif
