/* Shared by json_schema.c (the schema walk) and json_schema_prim.c (the
   fixed rules: JSON primitives, string formats, integer ranges). */
#ifndef MLLM_RUNTIME_JSON_SCHEMA_INTERNAL_H
#define MLLM_RUNTIME_JSON_SCHEMA_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *s;       /* (cap) NUL-terminated */
    size_t n, cap;
    bool oom;
} jsg_buf;

void jsg_putn(jsg_buf *b, const char *s, size_t n);
void jsg_puts(jsg_buf *b, const char *s);
void jsg_printf(jsg_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A GBNF literal ("...") of n bytes of UTF-8 text. */
void jsg_literal(jsg_buf *b, const char *s, size_t n);

/* The primitive rules, by bit: each names a rule written once. */
enum {
    JSG_WS = 1, JSG_CHAR = 2, JSG_STRING = 4, JSG_INTEGER = 8, JSG_NUMBER = 16, JSG_BOOLEAN = 32,
    JSG_NULL = 64, JSG_VALUE = 128, JSG_OBJECT = 256, JSG_ARRAY = 512, JSG_DATE = 1024, JSG_TIME = 2048,
    JSG_DATE_TIME = 4096, JSG_UUID = 8192, JSG_NONNEG_NUMBER = 16384,
};
/* The rule name of primitive `bit`; *need gets the bits of every rule it
   (transitively) uses, so they can be written at the end. */
const char *jsg_prim_name(unsigned bit, unsigned *need);
/* Appends the rules of every primitive in `need`. */
void jsg_prim_rules(jsg_buf *b, unsigned need);
/* An expression ( ... ) for the integers in [lo, hi]; has_lo / has_hi
   false: unbounded on that side (to 16 digits). lo <= hi. */
void jsg_int_range(jsg_buf *b, bool has_lo, int64_t lo, bool has_hi, int64_t hi);

#endif
