/* Chat templates shipped with mllm, for --chat-template NAME and for models
   that carry none. Written for this project in the prompt formats of the
   families (ChatML, Llama 2 [INST], Llama 3 headers, Zephyr/TinyLlama). */
#include <string.h>
#include "template/template.h"

static const struct { const char *name, *src; } BUILTIN[] = {
    {"chatml",
     "{%- for message in messages %}"
     "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"},
    {"llama2",
     "{%- if messages[0]['role'] == 'system' %}"
     "{%- set system = '<<SYS>>\\n' + messages[0]['content'] | trim + '\\n<</SYS>>\\n\\n' %}"
     "{%- set messages = messages[1:] %}"
     "{%- else %}{%- set system = '' %}{%- endif %}"
     "{%- for message in messages %}"
     "{%- if message['role'] == 'user' %}"
     "{{- bos_token + '[INST] ' + (system if loop.first else '') + message['content'] | trim + ' [/INST]' }}"
     "{%- elif message['role'] == 'assistant' %}"
     "{{- ' ' + message['content'] | trim + ' ' + eos_token }}"
     "{%- endif %}"
     "{%- endfor %}"},
    {"llama3",
     "{{- bos_token }}"
     "{%- for message in messages %}"
     "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"},
    /* Gemma: no system role; a system message is prepended to the first
       user turn, as Google's template does. */
    {"gemma",
     "{{- bos_token }}"
     "{%- if messages[0]['role'] == 'system' %}"
     "{%- set first = messages[0]['content'] + '\n\n' %}{%- set messages = messages[1:] %}"
     "{%- else %}{%- set first = '' %}{%- endif %}"
     "{%- for message in messages %}"
     "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
     "{{- '<start_of_turn>' + role + '\n' + (first if loop.first else '') + message['content'] | trim + '<end_of_turn>\n' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<start_of_turn>model\n' }}{%- endif %}"},
    {"zephyr",
     "{%- for message in messages %}"
     "{{- '<|' + message['role'] + '|>\\n' + message['content'] + eos_token + '\\n' }}"
     "{%- endfor %}"
     "{%- if add_generation_prompt %}{{- '<|assistant|>\\n' }}{%- endif %}"},
};

const char *mllm_template_builtin(const char *name) {
    if (!name) return NULL;
    if (!strcmp(name, "tinyllama")) name = "zephyr";
    for (size_t i = 0; i < sizeof BUILTIN / sizeof BUILTIN[0]; i++)
        if (!strcmp(BUILTIN[i].name, name)) return BUILTIN[i].src;
    return NULL;
}

const char *mllm_template_builtin_names(void) { return "chatml, gemma, llama2, llama3, zephyr (tinyllama)"; }
