#include "runtime/spec_ctl.h"

void mllm_spec_ctl_init(mllm_spec_ctl *c, int n_cur) {
    *c = (mllm_spec_ctl){.backoff = MLLM_SPEC_CTL_BACKOFF_MIN, .n_cur = n_cur};
}

void mllm_spec_ctl_adapt(mllm_spec_ctl *c, int k, int accepted, int n_max) {
    if (accepted == k) c->n_cur = c->n_cur + 2 < n_max ? c->n_cur + 2 : n_max;
    else c->n_cur = accepted + 1;
}

bool mllm_spec_ctl_judge(mllm_spec_ctl *c, double gain, double cost, int now) {
    c->w_passes++;
    c->w_gain += gain;
    c->w_cost += cost;
    if (c->w_passes < MLLM_SPEC_CTL_WINDOW) return false;
    const bool off = c->w_gain < c->w_cost;
    if (off) {
        c->off_until = now + c->backoff;
        c->backoff = c->backoff * 2 < MLLM_SPEC_CTL_BACKOFF_MAX ? c->backoff * 2 : MLLM_SPEC_CTL_BACKOFF_MAX;
    } else {
        c->backoff = MLLM_SPEC_CTL_BACKOFF_MIN;
    }
    c->w_passes = 0;
    c->w_gain = c->w_cost = 0;
    return off;
}
