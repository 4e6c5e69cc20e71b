/* Ops from plugins (include/mllm/mllm.h, "Op plugins"): the table of
   registered ops and the loader of shared objects (plugin.c). A graph node
   of op MLLM_OP_CUSTOM points at its table entry through pp. */
#ifndef MLLM_BACKENDS_PLUGIN_H
#define MLLM_BACKENDS_PLUGIN_H
#include <mllm/mllm.h>

#define MLLM_MAX_CUSTOM_OPS 64
#define MLLM_CUSTOM_OP_NAME 64

typedef struct {
    char name[MLLM_CUSTOM_OP_NAME];
    mllm_op_def def; /* the plugin's, copied (struct_size of ours) */
} mllm_custom_op;

/* The op registered as name, or NULL after setting the error message. */
const mllm_custom_op *mllm_custom_op_find(const char *name);

#endif
