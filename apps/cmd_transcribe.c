/* mllm transcribe: speech to text with Whisper (a CTranslate2 folder).
   The transcript goes to stdout in the format asked for; progress and
   timings go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "audio/audio.h"
#include "cli.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "models/whisper/whisper_open.h"
#include "models/whisper/whisper_transcribe.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: mllm transcribe -m MODEL FILE [-t N] [--language L] [--beam N]\n"
            "                       [--timestamps] [-o txt|srt|vtt|json] [options]\n"
            "\n"
            "Transcribes FILE (WAV, FLAC, OGG, MP3; any rate and channel count) with a\n"
            "Whisper model: a CTranslate2 folder (model.bin, config.json, tokenizer.json:\n"
            "what faster-whisper reads; scripts/fetch-whisper.sh) or a Hugging Face one\n"
            "(openai/whisper-* layout: config.json, model.safetensors, tokenizer.json),\n"
            "or a .mllm file made from either by mllm convert.\n"
            "The transcript goes to stdout, timings to stderr.\n"
            "\n"
            "  -t, --threads N      threads (default: all CPUs)\n"
            "  --language L         language code, or auto (default): a multilingual model\n"
            "                       detects it on the first 30 s (English-only models\n"
            "                       take only 'en' or auto)\n"
            "  --task T             transcribe (default) or translate (to English;\n"
            "                       multilingual models)\n"
            "  --beam N             beam search with N beams (1..8; default 1: greedy)\n"
            "  --patience P         beam search patience (default 1)\n"
            "  --best-of N          candidates sampled at temperature > 0 (default 5)\n"
            "  --temperature T      decode at T only (no fallback)\n"
            "  --no-fallback        decode at temperature 0 only\n"
            "  --no-condition       do not prompt a window with the previous text\n"
            "  --timestamps         decode Whisper's timestamp tokens (segments from the\n"
            "                       model; without it, one segment per 30-s window)\n"
            "  -o FORMAT            txt (default), srt, vtt or json\n"
            "  --weights T          f16 (default: as stored, used in place from the file),\n"
            "                       f32, q8_0 or q4_0 (converted at load); a .mllm file\n"
            "                       runs the weights it stores (convert --quant T)\n"
            "  --seed N             seed of the fallback's sampling (default 0)\n"
            "  -q, --quiet          no progress or timings on stderr\n");
}

typedef struct {
    const char *format;
    bool quiet;
    int n;
} out_state;

static void ts_fmt(double s, char *buf, size_t cap, char sep, bool hours) {
    if (s < 0) s = 0;
    long ms = (long)(s * 1000.0 + 0.5);
    long h = ms / 3600000, m = ms / 60000 % 60, sec = ms / 1000 % 60;
    if (hours || h > 0) snprintf(buf, cap, "%02ld:%02ld:%02ld%c%03ld", h, m, sec, sep, ms % 1000);
    else snprintf(buf, cap, "%02ld:%02ld%c%03ld", m, sec, sep, ms % 1000);
}

static const char *trim(const char *s) {
    while (*s == ' ') s++;
    return s;
}

static void json_str(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p == '\n') printf("\\n");
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}

/* Segments are printed as they become final. */
static void on_segment(const mllm_whisper_segment *s, void *user) {
    out_state *o = user;
    char a[32], b[32];
    const char *text = trim(s->text);
    if (!strcmp(o->format, "srt")) {
        ts_fmt(s->start, a, sizeof a, ',', true);
        ts_fmt(s->end, b, sizeof b, ',', true);
        printf("%d\n%s --> %s\n%s\n\n", o->n + 1, a, b, text);
    } else if (!strcmp(o->format, "vtt")) {
        ts_fmt(s->start, a, sizeof a, '.', true);
        ts_fmt(s->end, b, sizeof b, '.', true);
        printf("%s --> %s\n%s\n\n", a, b, text);
    } else if (!strcmp(o->format, "json")) {
        printf("%s\n    {\"id\": %d, \"start\": %.2f, \"end\": %.2f, \"text\": ", o->n ? "," : "", o->n, s->start, s->end);
        json_str(s->text);
        printf(", \"avg_logprob\": %.4f, \"no_speech_prob\": %.4f, \"compression_ratio\": %.3f, \"temperature\": %.1f}",
               (double)s->avg_logprob, (double)s->no_speech_prob, (double)s->compression_ratio, (double)s->temperature);
    } else {
        printf("%s\n", text);
    }
    fflush(stdout);
    o->n++;
}

/* Processor time of the process, all threads (C's clock(); glibc reads
   CLOCK_PROCESS_CPUTIME_ID): what a run costs on a busy machine, where the
   wall clock mostly measures the other programs. */
static double cpu_seconds(void) { return (double)clock() / CLOCKS_PER_SEC; }

int cmd_transcribe(int argc, char **argv) {
    const char *model = NULL, *file = NULL, *lang = NULL, *wt = "f16", *task = "transcribe";
    bool weights_given = false;
    out_state out = {.format = "txt"};
    long threads = mllm_n_cpus(), beam = 1, best_of = 5, seed = 0;
    double patience = 1.0, temperature = -1;
    bool timestamps = false, no_fallback = false, no_condition = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(model = cli_value(argc, argv, &i))) return 2;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 1, 256, &threads)) return 2;
        } else if (!strcmp(a, "--language")) {
            if (!(lang = cli_value(argc, argv, &i))) return 2;
            if (!strcmp(lang, "auto")) lang = NULL;
        } else if (!strcmp(a, "--task")) {
            if (!(task = cli_value(argc, argv, &i))) return 2;
            if (strcmp(task, "transcribe") && strcmp(task, "translate")) {
                fprintf(stderr, "mllm transcribe: --task takes transcribe or translate, not '%s'\n", task);
                return 2;
            }
        } else if (!strcmp(a, "--beam")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 1, MLLM_WHISPER_MAX_SEQ / 2, &beam)) return 2;
        } else if (!strcmp(a, "--best-of")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 1, MLLM_WHISPER_MAX_SEQ / 2, &best_of)) return 2;
        } else if (!strcmp(a, "--patience")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_float(a, v, 0.1, 10, &patience)) return 2;
        } else if (!strcmp(a, "--temperature")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_float(a, v, 0, 2, &temperature)) return 2;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 0, 0x7fffffff, &seed)) return 2;
        } else if (!strcmp(a, "--no-fallback")) {
            no_fallback = true;
        } else if (!strcmp(a, "--no-condition")) {
            no_condition = true;
        } else if (!strcmp(a, "--timestamps")) {
            timestamps = true;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output-format")) {
            if (!(out.format = cli_value(argc, argv, &i))) return 2;
            if (strcmp(out.format, "txt") && strcmp(out.format, "srt") && strcmp(out.format, "vtt") &&
                strcmp(out.format, "json")) {
                fprintf(stderr, "mllm transcribe: -o takes txt, srt, vtt or json, not '%s'\n", out.format);
                return 2;
            }
        } else if (!strcmp(a, "--weights")) {
            if (!(wt = cli_value(argc, argv, &i))) return 2;
            weights_given = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            out.quiet = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "mllm transcribe: unknown option '%s' (try --help)\n", a);
            return 2;
        } else if (!file) {
            file = a;
        } else {
            fprintf(stderr, "mllm transcribe: one audio file at a time ('%s' is a second)\n", a);
            return 2;
        }
    }
    if (!model || !file) {
        usage(stderr);
        return 2;
    }
    mllm_whisper_params wp = {.n_threads = (int)threads, .weight_type_given = weights_given};
    if (!strcmp(wt, "f16")) wp.weight_type = MLLM_DTYPE_F16;
    else if (!strcmp(wt, "f32")) wp.weight_type = MLLM_DTYPE_F32;
    else if (!strcmp(wt, "q8_0")) wp.weight_type = MLLM_DTYPE_Q8_0;
    else if (!strcmp(wt, "q4_0")) wp.weight_type = MLLM_DTYPE_Q4_0;
    else {
        fprintf(stderr, "mllm transcribe: --weights takes f16, f32, q8_0 or q4_0, not '%s'\n", wt);
        return 2;
    }
    if (mllm_whisper_probe(model) == MLLM_WHISPER_NONE) {
        fprintf(stderr,
                "mllm transcribe: %s is not a CTranslate2 Whisper folder (model.bin, config.json, tokenizer.json)\n"
                "  nor a Hugging Face one (config.json with model_type whisper, model.safetensors, tokenizer.json)\n"
                "  nor a .mllm file converted from one\n",
                model);
        return 1;
    }
    const double t0 = mllm_time_ms() / 1e3;
    mllm_whisper *w = NULL;
    mllm_status st = mllm_whisper_open(model, &wp, &w);
    if (st != MLLM_OK) return cli_fail("cannot load the Whisper model", st);
    const mllm_whisper_special *sp = mllm_whisper_tokens(w);
    mllm_whisper_options o;
    mllm_whisper_options_default(&o);
    o.beam_size = (int)beam;
    o.best_of = (int)best_of;
    o.patience = (float)patience;
    o.timestamps = timestamps;
    o.condition_on_previous_text = !no_condition;
    o.seed = (uint64_t)seed;
    if (temperature >= 0) {
        o.temperatures[0] = (float)temperature;
        o.n_temperatures = 1;
    } else if (no_fallback) {
        o.n_temperatures = 1;
    }
    int rc = 0;
    if (lang && !sp->multilingual && strcmp(lang, "en") != 0) {
        fprintf(stderr, "mllm transcribe: this model is English-only; --language %s cannot be used\n", lang);
        rc = 2;
    } else if (lang && sp->multilingual && (o.language = mllm_whisper_lang_token(w, lang)) < 0) {
        fprintf(stderr, "mllm transcribe: unknown language code '%s'\n", lang);
        rc = 2;
    } else if (!strcmp(task, "translate") && !sp->multilingual) {
        fprintf(stderr, "mllm transcribe: this model is English-only; --task translate needs a multilingual one\n");
        rc = 2;
    }
    o.translate = !strcmp(task, "translate");
    if (rc) {
        mllm_whisper_free(w);
        return rc;
    }
    const double t1 = mllm_time_ms() / 1e3, c1 = cpu_seconds();
    float *pcm = NULL;
    size_t n = 0;
    mllm_audio_info info;
    st = mllm_audio_load(file, MLLM_AUDIO_SAMPLE_RATE, &pcm, &n, &info);
    if (st != MLLM_OK) {
        mllm_whisper_free(w);
        return cli_fail("cannot read the audio", st);
    }
    const double t2 = mllm_time_ms() / 1e3;
    if (!out.quiet)
        fprintf(stderr, "transcribe: %s: %s, %d Hz, %d channel(s), %.2f s; %ld thread(s), %s\n", file, info.format,
                info.source_rate, info.channels, (double)n / MLLM_AUDIO_SAMPLE_RATE, threads,
                beam > 1 ? "beam search" : "greedy");
    o.on_segment = (mllm_whisper_segment_cb){on_segment, &out};
    if (!strcmp(out.format, "vtt")) printf("WEBVTT\n\n");
    if (!strcmp(out.format, "json")) printf("{\"segments\": [");
    mllm_whisper_result res;
    st = mllm_whisper_transcribe(w, pcm, n, &o, &res);
    const double t3 = mllm_time_ms() / 1e3, c3 = cpu_seconds();
    if (st == MLLM_OK && !strcmp(out.format, "json")) {
        printf("\n  ],\n  \"text\": ");
        size_t len = 0;
        for (int i = 0; i < res.n_segs; i++) len += strlen(res.segs[i].text);
        char *all = malloc(len + 1);
        if (all) {
            all[0] = 0;
            for (int i = 0; i < res.n_segs; i++) strcat(all, res.segs[i].text);
            json_str(trim(all));
            free(all);
        }
        const char *code = mllm_whisper_lang_code(w, res.language >= 0 ? res.language : sp->lang_first);
        printf(", \"language\": \"%s\", \"language_probability\": %.4f, \"duration\": %.3f}\n", code ? code : "en",
               (double)res.language_prob, res.duration);
    }
    if (st == MLLM_OK && !out.quiet && sp->multilingual && !lang)
        fprintf(stderr, "transcribe: detected language %s (p %.3f)\n", mllm_whisper_lang_code(w, res.language),
                (double)res.language_prob);
    if (st == MLLM_OK && !out.quiet)
        fprintf(stderr,
                "transcribe: load %.3f s, audio %.3f s, mel %.3f s, encoder %.3f s, decoder %.3f s; total %.3f s "
                "(%d window(s), %d fallback(s), %.1fx real time); cpu %.3f s after the load\n",
                t1 - t0, t2 - t1, res.mel_s, res.encode_s, res.decode_s, t3 - t0, res.n_windows, res.n_fallbacks,
                t3 - t2 > 0 ? res.duration / (t3 - t2) : 0.0, c3 - c1);
    if (st == MLLM_OK) mllm_whisper_result_free(&res);
    mllm_free(pcm);
    mllm_whisper_free(w);
    if (st != MLLM_OK) return cli_fail("transcription failed", st);
    return 0;
}
