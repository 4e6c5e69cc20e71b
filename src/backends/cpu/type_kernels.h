/* The CPU backend's code per dtype (mllm_cpu_type, mllm_cpu_init) is
   public to the library: backends/cpu.h. This header stays only for the
   files still including it (the Whisper model, being moved onto the graph
   by issue 31) and goes with them. */
#ifndef MLLM_BACKENDS_CPU_TYPE_KERNELS_H
#define MLLM_BACKENDS_CPU_TYPE_KERNELS_H
#include "backends/cpu.h"
#endif
