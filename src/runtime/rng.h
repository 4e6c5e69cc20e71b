/* A portable deterministic RNG (xoshiro256**, seeded by splitmix64), so a
   seed reproduces the same samples on every machine. */
#ifndef MLLM_RUNTIME_RNG_H
#define MLLM_RUNTIME_RNG_H
#include <stdint.h>

typedef struct { uint64_t s[4]; } mllm_rng;

void mllm_rng_seed(mllm_rng *r, uint64_t seed);
uint64_t mllm_rng_next(mllm_rng *r);
/* Uniform in [0, 1) with 53 bits. */
double mllm_rng_uniform(mllm_rng *r);

#endif
