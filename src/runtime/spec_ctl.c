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

void mllm_spec_ctl_observe(mllm_spec_ctl *c, int k, int accepted) {
    /* one trial per position checked: the kept ones, then the refused one */
    for (int i = 0; i <= accepted && i < k; i++) {
        c->kept *= MLLM_SPEC_CTL_DECAY;
        c->refused *= MLLM_SPEC_CTL_DECAY;
        if (i < accepted) c->kept += 1;
        else c->refused += 1;
    }
}

double mllm_spec_ctl_keep(const mllm_spec_ctl *c) {
    return (c->kept + MLLM_SPEC_CTL_PRIOR_KEPT) /
           (c->kept + c->refused + MLLM_SPEC_CTL_PRIOR_KEPT + MLLM_SPEC_CTL_PRIOR_REFUSED);
}

/* costs[k * step]: what the (k+1)-th proposal costs (step 0: all alike). */
static int len_of(const mllm_spec_ctl *c, const double *costs, int step, int cap) {
    const double p = mllm_spec_ctl_keep(c);
    int k = 0;
    for (double q = p; k < cap && q > costs[k * step]; q *= p) k++;
    return k;
}

int mllm_spec_ctl_len(const mllm_spec_ctl *c, double cost, int cap) {
    if (!(cost < 1)) return 0;
    return len_of(c, &cost, 0, cap);
}

int mllm_spec_ctl_len_costs(const mllm_spec_ctl *c, const double *costs, int cap) { return len_of(c, costs, 1, cap); }

void mllm_spec_cost_init(mllm_spec_cost *f, double prior) { *f = (mllm_spec_cost){.prior = prior}; }

void mllm_spec_cost_add(mllm_spec_cost *f, int T, double ms) {
    const double a = f->n < 20 ? 1.0 / (f->n + 1) : 0.05, dt = T - f->t, dy = ms - f->y;
    f->t += a * dt;
    f->y += a * dy;
    f->tt = (1 - a) * (f->tt + a * dt * dt);
    f->ty = (1 - a) * (f->ty + a * dt * dy);
    f->n++;
}

double mllm_spec_cost_token(const mllm_spec_cost *f, int B) {
    if (B < 1) B = 1;
    /* The prior is a floor too: on a shared machine the steps' spread is
       mostly other work's, which flattens the slope, and the fit is most
       often wrong that way (a one-token step slowed as much as a full one). */
    const double prior = f->prior / (1.0 / B + f->prior);
    if (f->n < 8 || !(f->tt > 0.25)) return prior;
    const double slope = f->ty / f->tt, base = f->y - slope * f->t;
    if (!(slope > 0) || !(base > 0)) return prior; /* meaningless: noise */
    const double c = slope / (base / B + slope);
    return c > prior ? c : prior;
}

double mllm_spec_cost_step_ms(const mllm_spec_cost *f, int T) {
    if (f->n < 1 || !(f->t > 0) || !(f->y > 0)) return 0;
    if (f->n >= 8 && f->tt > 0.25) {
        const double slope = f->ty / f->tt, ms = f->y + slope * (T - f->t);
        if (slope > 0 && ms > 0) return ms;
    }
    return f->y / f->t * T;
}

int mllm_spec_draft_take(const mllm_spec_price *pr, double *p_run, double conf, double p_min, int i, int cap) {
    if (conf < p_min) return 0; /* unsure: the model would likely reject it, and the ones after it */
    *p_run *= conf;
    if (pr && !mllm_spec_ctl_draft_more(*p_run, 0, pr->row[i])) return 0;
    if (i + 1 >= cap || (pr && !mllm_spec_ctl_draft_more(*p_run, pr->step, pr->row[i + 1]))) return 1;
    return 2;
}

void mllm_spec_passes_init(mllm_spec_passes *p, double per_token) {
    *p = (mllm_spec_passes){.per_token = per_token, .timed = 1u << 1};
    for (int n = 0; n < MLLM_SPEC_MAX_DRAFT + 2; n++) p->c[n] = 1;
}

double mllm_spec_passes_cost(const mllm_spec_passes *p, int n) {
    int m = n;
    while (m > 1 && !(p->timed >> m & 1)) m--;
    return p->c[m] + p->per_token * (n - m);
}

void mllm_spec_passes_add(mllm_spec_passes *p, int n, double ms) {
    if (n < 1 || n > MLLM_SPEC_MAX_DRAFT + 1 || !(ms > 0)) return;
    if (n == 1) {
        p->c1_ms = p->c1_n ? 0.8 * p->c1_ms + 0.2 * ms : ms;
        p->c1_n++;
        return;
    }
    if (!p->c1_n) return; /* nothing to compare it with yet */
    /* A pass over more tokens never costs less than one over one: a faster
       one says the one-token time is stale (the first plain pass runs
       cold, and plain passes are rare while speculation pays). */
    if (ms < p->c1_ms) p->c1_ms = ms;
    const double v = ms / p->c1_ms;
    p->c[n] = p->timed >> n & 1 ? 0.8 * p->c[n] + 0.2 * (v > 1 ? v : 1) : (v > 1 ? v : 1);
    p->timed |= 1u << n;
}
