/* Speculative decoding options shared by run, chat and serve. */
#include <stdio.h>
#include <string.h>
#include "cli.h"

const char *const cli_spec_usage =
    "      --draft PATH      a draft model with the same vocabulary: it proposes tokens,\n"
    "                        the model checks them in one pass (greedy output unchanged)\n"
    "      --draft-quant T   requantize the draft's matrices to T at load, in memory: q4_0\n"
    "                        (default: fewer bytes per proposal), q4_1, q5_0, q5_1, q8_0,\n"
    "                        q4_k, q5_k, q6_k, or keep (as the file has them)\n"
    "      --draft-max N     most tokens proposed per pass, 1..16 (default 8; adapts)\n"
    "      --draft-p-min P   the draft stops proposing below this probability (default 0.1;\n"
    "                        above it, what a proposal costs decides)\n"
    "      --no-lookup       no prompt lookup (proposals copied from an earlier match of\n"
    "                        the last tokens in the context; on by default)\n"
    "      --speculative M   auto (default: speculate where it is measured to pay), off,\n"
    "                        or always (whenever a proposer has tokens)\n"
    "      --no-speculative  the same as --speculative off\n";

void cli_spec_defaults(cli_spec_opts *o) {
    memset(o, 0, sizeof *o);
    o->mode = MLLM_SPEC_AUTO;
    o->lookup = true;
    o->n_max = 8;
    o->p_min = 0.1;
    o->draft_quant = "q4_0";
}

int cli_spec_arg(cli_spec_opts *o, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--draft")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        o->draft = v;
    } else if (!strcmp(a, "--draft-quant")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        o->draft_quant = strcmp(v, "keep") ? v : NULL;
    } else if (!strcmp(a, "--draft-max")) {
        if (!(v = cli_value(argc, argv, i)) || !cli_int(a, v, 1, MLLM_SPEC_MAX_DRAFT, &o->n_max)) return -1;
    } else if (!strcmp(a, "--draft-p-min")) {
        if (!(v = cli_value(argc, argv, i)) || !cli_float(a, v, 0, 1, &o->p_min)) return -1;
    } else if (!strcmp(a, "--no-lookup")) {
        o->lookup = false;
    } else if (!strcmp(a, "--no-speculative")) {
        o->mode = MLLM_SPEC_OFF;
    } else if (!strcmp(a, "--speculative")) {
        if (!(v = cli_value(argc, argv, i))) return -1;
        if (!strcmp(v, "auto")) o->mode = MLLM_SPEC_AUTO;
        else if (!strcmp(v, "off")) o->mode = MLLM_SPEC_OFF;
        else if (!strcmp(v, "always")) o->mode = MLLM_SPEC_ALWAYS;
        else {
            fprintf(stderr, "mllm: --speculative expects auto, off or always, got '%s'\n", v);
            return -1;
        }
    } else {
        return 0;
    }
    return 1;
}

mllm_status cli_spec_load(const cli_spec_opts *o, int n_threads, mllm_model **draft) {
    *draft = NULL;
    if (!o->draft || o->mode == MLLM_SPEC_OFF) return MLLM_OK;
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = n_threads;
    lp.requant = o->draft_quant;
    mllm_status st = mllm_model_load(o->draft, &lp, draft);
    if (st != MLLM_OK) cli_fail("cannot load the draft model", st);
    return st;
}

void cli_spec_params(const cli_spec_opts *o, mllm_model *draft, mllm_speculative_params *p) {
    mllm_speculative_default_params(p);
    p->mode = o->mode;
    p->draft = draft;
    p->lookup = o->lookup;
    p->n_draft_max = (int)o->n_max;
    p->draft_p_min = (float)o->p_min;
}

mllm_status cli_spec_apply(const cli_spec_opts *o, mllm_model *draft, mllm_session *s) {
    mllm_speculative_params p;
    cli_spec_params(o, draft, &p);
    mllm_status st = mllm_session_set_speculative(s, &p);
    if (st != MLLM_OK) cli_fail("cannot use the draft model", st);
    return st;
}

void cli_spec_report(const mllm_session *s) {
    mllm_speculative_stats t = {.struct_size = sizeof t};
    mllm_session_speculative_stats(s, &t);
    if (t.n_lookup_passes)
        fprintf(stderr, " | lookup: %d/%d accepted in %d passes", t.n_lookup_accepted, t.n_lookup_drafted,
                t.n_lookup_passes);
    if (t.n_draft_passes)
        fprintf(stderr, " | draft: %d/%d accepted in %d passes, %d draft evaluations", t.n_draft_accepted,
                t.n_draft_drafted, t.n_draft_passes, t.n_draft_evals);
    if (t.n_turned_off) fprintf(stderr, " | speculation paused %d times", t.n_turned_off);
}
