/* Tool calls in a model's answer (OpenAI `tools`): the parser that splits
   generated text into content and calls, for plain and streamed answers.
   It knows two syntaxes:
   - Hermes (Qwen2.5, Qwen3, SmolLM3, Hermes): calls anywhere in the text,
     each `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`;
   - Llama 3.1 / 3.2: the answer starts (after an optional <|python_tag|>)
     with `{"name": ..., "parameters": {...}}`, several separated by `;`.
   "arguments" and "parameters" are accepted in both, and Hermes answers
   may also start with bare call objects (small Qwen2.5 models often drop
   the tags), in both a leading ```json fence around such objects goes
   with them. The parser is a pure
   function of the text so far: a stream re-parses the longer text at each
   step, and what it reports only grows (content, a call's name once its
   string is complete, a call's arguments text), so the differences are the
   stream's deltas. (That holds while the calls are well-formed: a call
   that turns out malformed, or never completes, is text again.) No libmicrohttpd here, so it is fuzzed
   (tests/fuzz/fuzz_toolcall.c). */
#ifndef MLLM_SERVER_TOOLCALL_H
#define MLLM_SERVER_TOOLCALL_H
#include <stdbool.h>
#include <stddef.h>

typedef enum { SRV_TC_NONE = 0, SRV_TC_HERMES = 1, SRV_TC_LLAMA = 2 } srv_tc_style;

#define SRV_TC_MAX_CALLS 16   /* calls kept from one answer; later ones are dropped */
#define SRV_TC_MAX_DEPTH 64   /* JSON nesting inside a call; deeper is malformed */

typedef struct {
    char *name;       /* NUL-terminated, NULL until the name's string is complete */
    char *args;       /* (args_len) the arguments' JSON text so far, NUL-terminated */
    size_t args_len;
    bool complete;    /* the call's object is complete */
} srv_tc_call;

typedef struct {
    char *content;    /* (content_len) the text outside calls, without leading and
                         trailing whitespace; NUL-terminated */
    size_t content_len;
    srv_tc_call calls[SRV_TC_MAX_CALLS];
    int n_calls;
} srv_tc_result;

/* Parses text[0..len). final: the text is whole (the answer ended), so
   nothing is held back and a call that never completed is content again;
   otherwise what may still become a call (a partial `<tool_call>`, a
   partial object) is held back. max_calls (1..SRV_TC_MAX_CALLS) bounds
   the calls kept (parallel_tool_calls: false gives 1); later complete ones
   are dropped with their markup. Returns 0, or -1 when out of memory
   (out is then empty). Free with srv_tc_result_free. */
int srv_tc_parse(srv_tc_style style, const char *text, size_t len, bool final, int max_calls, srv_tc_result *out);
void srv_tc_result_free(srv_tc_result *r);

#endif
