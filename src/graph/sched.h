/* The scheduler: splits a planned node list into runs of consecutive nodes
   per backend and copies tensors between them.

   Each node goes to the first backend of the list that supports it
   (supports_op) and holds its weights: a weight (a leaf that is not a graph
   input) must be in that backend's buffer type, either the host memory it
   was mapped in (the CPU's) or a copy placed there at load
   (mllm_sched_place_weights). The CPU, last in the list, takes the rest.
   A node that reads no weight (RoPE, adds, activations) goes to the most
   preferred backend among those that made its inputs and can compute it,
   so a layer whose weights stayed on the CPU (-ngl) stays there whole.
   A KV store and the attention nodes that read its layer go to one
   backend, which holds that layer's cache: a device keeps its own copy
   (backends/dev_kv.c), so the store goes to a backend only if it can
   also compute those attentions, and the attentions follow their store.

   The graph's nodes stay the CPU's (host memory, placed by the planner).
   A run on a backend with another buffer type computes shadows of its
   nodes in a buffer of that type: its inputs from outside the run are
   copied in before it (buffer set), and its nodes that are read after it
   or are outputs are copied back after it (buffer get). A run on the CPU
   computes the graph's own nodes, so a CPU-only graph needs no schedule at
   all (mllm_graph_execute's fast path). */
#ifndef MLLM_GRAPH_SCHED_H
#define MLLM_GRAPH_SCHED_H
#include "backends/backend.h"
#include "core/tensor.h"

typedef struct mllm_sched mllm_sched;

/* NULL when out of memory (or n_backends < 1). nodes must be planned
   (data set) and stay alive as long as the schedule. */
mllm_sched *mllm_sched_new(mllm_tensor **nodes, int n_nodes, mllm_backend *const *backends, int n_backends);
void mllm_sched_free(mllm_sched *s);
/* Runs the schedule once; false on failure (a backend ran out of memory). */
bool mllm_sched_execute(mllm_sched *s, mllm_exec_ctx *x);

typedef struct {
    int n_runs;            /* runs of consecutive nodes on one backend */
    int n_nodes[MLLM_MAX_BACKENDS]; /* nodes per backend, in the order given to mllm_sched_new */
    int n_copies;          /* tensor copies per execute, both directions */
    size_t copy_bytes;     /* their bytes per execute */
} mllm_sched_stats;
void mllm_sched_get_stats(const mllm_sched *s, mllm_sched_stats *out);

/* Weights on a backend: copies of w[i] in one buffer of be's type for each
   weight be has a use for (supports_op passes a matmul by it, a row lookup
   in it, or for an f32 vector an RMSNorm with it as the weight), setting
   w[i]->mirror; the others stay where they are. NULL
   when out of memory; a backend with the CPU's buffer type places nothing. */
typedef struct mllm_placement mllm_placement;
mllm_placement *mllm_sched_place_weights(mllm_backend *be, mllm_tensor **w, int n);
/* How many weights it placed. */
int mllm_placement_count(const mllm_placement *p);
/* Clears the mirrors it set and frees the copies. */
void mllm_placement_free(mllm_placement *p);

#endif
