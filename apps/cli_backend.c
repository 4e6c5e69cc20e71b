/* --backend and -ngl, shared by run, chat, bench, perplexity and serve:
   which backend the model computes on and how many of its layers go there
   (mllm_load_params.backend / n_gpu_layers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

const char *const cli_backend_usage =
    "      --backend NAME    where the model computes: cpu (default), opencl (the first GPU,\n"
    "                        else the first OpenCL device; MLLM_OPENCL_DEVICE=P:D picks one,\n"
    "                        as clinfo -l numbers them) or cuda (device 0; MLLM_CUDA_DEVICE=N\n"
    "                        picks one). The KV cache of the offloaded layers and their\n"
    "                        attention run on the device; what it has no kernel for (paged\n"
    "                        KV, M-RoPE, ...) runs on the CPU. Default: the MLLM_BACKENDS\n"
    "                        list if set, else cpu\n"
    "  -ngl, --n-gpu-layers N  with --backend opencl or cuda: offload the last N layers; more\n"
    "                        than the model has (99) also offloads the embeddings and the\n"
    "                        output (default: everything)\n";

void cli_backend_defaults(cli_backend_opts *o) {
    o->backend = NULL;
    o->n_gpu_layers = -1;
}

int cli_backend_arg(cli_backend_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--backend")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        o->backend = v;
    } else if (!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers") || !strcmp(a, "--gpu-layers")) {
        if (!(v = cli_value(argc, argv, i)) || !cli_int(a, v, 0, 1 << 20, &o->n_gpu_layers)) return -1;
    } else {
        return 0;
    }
    return 1;
}

void cli_backend_apply(const cli_backend_opts *o, mllm_load_params *lp, const char *who) {
    lp->backend = o->backend;
    lp->n_gpu_layers = (int)o->n_gpu_layers;
    if (o->n_gpu_layers >= 0 && !o->backend && !getenv("MLLM_BACKENDS"))
        fprintf(stderr, "%s: note: -ngl without --backend opencl or cuda: everything runs on the CPU\n", who);
}

void cli_backend_report(const char *who) {
    static const char *const names[] = {"opencl", "cuda"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const char *dev = mllm_backend_device(names[k]); /* NULL: not opened by this load */
        if (dev) fprintf(stderr, "%s: %s device: %s\n", who, names[k], dev);
    }
}
