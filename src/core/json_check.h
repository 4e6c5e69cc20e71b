/* What cJSON lets through but must not pass: cJSON accepts raw control
   bytes inside strings (JSON forbids them) and decodes "\u0000" into a NUL
   that silently ends the C string it returns ("a\u0000bcdefgh" became "a").
   Readers that parse untrusted JSON with cJSON (the server's request
   bodies, mllm_chat's conversation) check the text with this first. The
   template engine's own JSON reader carries lengths and needs no check. */
#ifndef MLLM_CORE_JSON_CHECK_H
#define MLLM_CORE_JSON_CHECK_H
#include <stdbool.h>
#include <stddef.h>

/* True when no string of the JSON text json[0..len) holds a raw byte below
   0x20 or a \u0000 escape, and no raw NUL lies anywhere in it. Otherwise
   false, with a sentence naming the byte offset in why (cap bytes). The
   text need not be valid JSON otherwise: the parser judges the rest. */
bool mllm_json_text_check(const char *json, size_t len, char *why, size_t cap);

#endif
