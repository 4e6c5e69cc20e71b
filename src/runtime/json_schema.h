/* JSON Schema -> GBNF, so that constrained decoding can follow a schema
   (OpenAI's response_format json_schema, `mllm run --json-schema`).

   Supported: type (one or a list) object / array / string / number /
   integer / boolean / null; properties, required (the others optional, in
   declaration order), additionalProperties false / true / a schema (when
   absent and properties are given: none, as llama.cpp does); items,
   minItems, maxItems; minLength, maxLength; format date, time, date-time,
   uuid; minimum, maximum, exclusiveMinimum, exclusiveMaximum on integers
   (on numbers only minimum 0); enum, const; anyOf, oneOf (as anyOf: a
   text that matches several branches fails oneOf); allOf of object
   schemas; local $ref (#, #/$defs/..., #/definitions/..., any JSON pointer
   into the document), recursive ones included (each target is one rule).
   Annotations (title, description, default, examples, $schema, $id,
   $comment ...) are ignored. Anything else that constrains the value
   (pattern, patternProperties, prefixItems, uniqueItems: true, not,
   if/then/else, multipleOf, min/maxProperties, other formats ...) is
   refused with an error naming it, never ignored.

   Numbers and integers have at most 16 digits before the point, 16 after
   it and a 2-digit exponent; whitespace between tokens is at most two
   newlines and 20 spaces or tabs (llama.cpp's limits), so a model cannot
   pad the answer forever. */
#ifndef MLLM_RUNTIME_JSON_SCHEMA_H
#define MLLM_RUNTIME_JSON_SCHEMA_H
#include <cjson/cJSON.h>
#include <mllm/mllm.h>
#include <stddef.h>

/* Limits; a schema past one fails with a message that names it. */
#define MLLM_JSG_MAX_DEPTH 32        /* nested subschemas while compiling */
#define MLLM_JSG_MAX_ENUM 1024       /* values of one enum */
#define MLLM_JSG_MAX_PROPERTIES 256  /* properties of one object */
#define MLLM_JSG_MAX_REFS 256        /* distinct $ref targets */
#define MLLM_JSG_MAX_INT 999999999999999LL /* |minimum|, |maximum| of integers (15 digits) */

/* GBNF text (root rule "root") for the schema, malloc'd with mllm_malloc
   and NUL-terminated, into *out (length *len, may be NULL). Errors:
   MLLM_ERR_INVALID_ARG with mllm_last_error() = "json schema: at
   #/properties/x: what" (unsupported keyword, a limit, a bad $ref),
   MLLM_ERR_NOMEM. The text always compiles with mllm_gram_compile. */
mllm_status mllm_jsg_compile(const cJSON *schema, char **out, size_t *len);

#endif
