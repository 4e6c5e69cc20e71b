/* mllm transcribe: speech to text with Whisper (a CTranslate2 folder).
   The transcript goes to stdout in the format asked for; progress and
   timings go to stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"

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
    char *text;      /* every segment's text joined, for json's "text" (NULL: out of memory) */
    size_t len;
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

/* The text of every segment printed, also the ones with only spaces that
   the transcript drops, as json's "text" always joined them. */
static void keep_text(out_state *o, const char *text) {
    if (!o->text) return;
    const size_t l = strlen(text);
    char *t = realloc(o->text, o->len + l + 1);
    if (!t) {
        free(o->text);
        o->text = NULL;
        return;
    }
    memcpy(t + o->len, text, l + 1);
    o->text = t;
    o->len += l;
}

/* Segments are printed as they become final; json's opening is printed
   then too, so that a refused option leaves stdout empty. */
static void on_segment(void *user, const mllm_transcript_segment *s) {
    out_state *o = user;
    char a[32], b[32];
    if (!o->n && !strcmp(o->format, "json")) printf("{\"segments\": [");
    keep_text(o, s->text);
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

/* What follows json's segments: the whole text, the language, the length. */
static void json_close(const out_state *o, const mllm_transcript *tr) {
    if (!o->n) printf("{\"segments\": [");
    printf("\n  ],\n  \"text\": ");
    if (o->text) json_str(trim(o->text));
    float prob = 0;
    const char *code = mllm_transcript_language(tr, &prob);
    printf(", \"language\": \"%s\", \"language_probability\": %.4f, \"duration\": %.3f}\n", code, (double)prob,
           mllm_transcript_duration(tr));
}

/* 2 after saying why when the model cannot take --language / --task (the
   library would refuse them too, but after decoding the audio), else 0. */
static int check_language(const char *lang, bool translate, bool multilingual) {
    if (lang && !multilingual && strcmp(lang, "en") != 0) {
        fprintf(stderr, "mllm transcribe: this model is English-only; --language %s cannot be used\n", lang);
        return 2;
    }
    if (lang && multilingual && !mllm_language_name(lang)) {
        fprintf(stderr, "mllm transcribe: unknown language code '%s'\n", lang);
        return 2;
    }
    if (translate && !multilingual) {
        fprintf(stderr, "mllm transcribe: this model is English-only; --task translate needs a multilingual one\n");
        return 2;
    }
    return 0;
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
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 1, MLLM_TRANSCRIBE_MAX_BEAM, &beam)) return 2;
        } else if (!strcmp(a, "--best-of")) {
            if (!(v = cli_value(argc, argv, &i)) || !cli_int(a, v, 1, MLLM_TRANSCRIBE_MAX_BEAM, &best_of)) return 2;
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
    if (strcmp(wt, "f16") && strcmp(wt, "f32") && strcmp(wt, "q8_0") && strcmp(wt, "q4_0")) {
        fprintf(stderr, "mllm transcribe: --weights takes f16, f32, q8_0 or q4_0, not '%s'\n", wt);
        return 2;
    }
    if (!mllm_path_can_transcribe(model)) {
        fprintf(stderr,
                "mllm transcribe: %s is not a CTranslate2 Whisper folder (model.bin, config.json, tokenizer.json)\n"
                "  nor a Hugging Face one (config.json with model_type whisper, model.safetensors, tokenizer.json)\n"
                "  nor a .mllm file converted from one\n",
                model);
        return 1;
    }
    const double t0 = mllm_time_ms() / 1e3;
    mllm_load_params lp;
    mllm_load_default_params(&lp);
    lp.n_threads = (int)threads;
    lp.weights = weights_given ? wt : NULL; /* NULL: a .mllm file's own type, a folder's f16 */
    mllm_model *m = NULL;
    mllm_status st = mllm_model_load(model, &lp, &m);
    if (st != MLLM_OK) return cli_fail("cannot load the Whisper model", st);
    const bool multilingual = mllm_model_multilingual(m);
    mllm_transcribe_params tp;
    mllm_transcribe_default_params(&tp); /* the CLI's defaults but the beam (greedy) */
    tp.beam_size = (int)beam;
    tp.best_of = (int)best_of;
    tp.patience = (float)patience;
    tp.timestamps = timestamps;
    tp.condition_on_previous = !no_condition;
    tp.seed = (uint64_t)seed;
    tp.language = lang;
    tp.translate = !strcmp(task, "translate");
    if (temperature >= 0) tp.temperature = (float)temperature;
    tp.fallback = temperature < 0 && !no_fallback;
    tp.on_segment = on_segment;
    tp.on_segment_user = &out;
    int rc = check_language(lang, tp.translate, multilingual);
    if (rc) {
        mllm_model_free(m);
        return rc;
    }
    const double t1 = mllm_time_ms() / 1e3, c1 = cpu_seconds();
    size_t len = 0;
    char *audio = cli_read_file(file, &len);
    mllm_audio_desc info = {.struct_size = sizeof info};
    st = audio ? mllm_audio_probe(audio, len, file, &info) : MLLM_ERR_IO;
    if (st != MLLM_OK) {
        free(audio);
        mllm_model_free(m);
        return audio ? cli_fail("cannot read the audio", st) : 1;
    }
    const double t2 = mllm_time_ms() / 1e3;
    if (!out.quiet)
        fprintf(stderr, "transcribe: %s: %s, %d Hz, %d channel(s), %.2f s; %ld thread(s), %s\n", file, info.format,
                info.sample_rate, info.channels, info.duration, threads, beam > 1 ? "beam search" : "greedy");
    if (!strcmp(out.format, "vtt")) printf("WEBVTT\n\n");
    out.text = calloc(1, 1);
    mllm_transcript *tr = NULL;
    st = mllm_transcribe(m, audio, len, file, &tp, &tr);
    free(audio);
    const double t3 = mllm_time_ms() / 1e3, c3 = cpu_seconds();
    if (st == MLLM_OK && !strcmp(out.format, "json")) json_close(&out, tr);
    free(out.text);
    if (st == MLLM_OK && !out.quiet && multilingual && !lang) {
        float prob = 0;
        const char *code = mllm_transcript_language(tr, &prob);
        fprintf(stderr, "transcribe: detected language %s (p %.3f)\n", code, (double)prob);
    }
    mllm_transcript_stats ts = {.struct_size = sizeof ts};
    if (st == MLLM_OK && !out.quiet && mllm_transcript_get_stats(tr, &ts) == MLLM_OK) {
        const double dur = mllm_transcript_duration(tr);
        fprintf(stderr,
                "transcribe: load %.3f s, audio %.3f s, mel %.3f s, encoder %.3f s, decoder %.3f s; total %.3f s "
                "(%d window(s), %d fallback(s), %.1fx real time); cpu %.3f s after the load\n",
                t1 - t0, t2 - t1, ts.mel_ms / 1e3, ts.encoder_ms / 1e3, ts.decoder_ms / 1e3, t3 - t0, ts.n_windows,
                ts.n_fallbacks, t3 - t2 > 0 ? dur / (t3 - t2) : 0.0, c3 - c1);
    }
    if (st == MLLM_ERR_INVALID_ARG) { /* an option the model refused (a language it lacks) */
        fprintf(stderr, "mllm transcribe: %s\n", mllm_last_error());
        rc = 2;
    } else if (st != MLLM_OK) {
        rc = cli_fail("transcription failed", st);
    }
    mllm_transcript_free(tr);
    mllm_model_free(m);
    return rc;
}
