/* Audio decoding: container sniffing, libsndfile over virtual I/O (a file
   descriptor from mllm_file_open, or a memory image), channel mixing, and
   streaming resampling with libsamplerate, chunk by chunk, so memory holds
   the output plus one chunk of input whatever the source rate. */
#include "audio/audio.h"
#include "audio/ogg_check.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/file_open.h"
#include <errno.h>
#include <math.h>
#include <samplerate.h>
#include <sndfile.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Frames decoded per libsndfile call (x channels floats of scratch). */
#define AUDIO_CHUNK_FRAMES 4096
/* libsamplerate's converter: band-limited sinc, 97 dB SNR, 90% bandwidth;
   about 30x faster than its best quality and far above what speech needs. */
#define AUDIO_RESAMPLER SRC_SINC_MEDIUM_QUALITY
/* Bytes looked at to recognise a container. */
#define AUDIO_SNIFF_BYTES 12

/* ---- virtual I/O: a memory image or a descriptor, read with pread ------- */
typedef struct {
    const uint8_t *mem; /* NULL: read fd */
    int fd;
    sf_count_t size, pos;
    int io_errno;       /* first read error (0: none) */
} vsrc;

static sf_count_t v_len(void *u) { return ((vsrc *)u)->size; }

static sf_count_t v_seek(sf_count_t off, int whence, void *u) {
    vsrc *s = u;
    sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->pos : whence == SEEK_END ? s->size : -1;
    if (base < 0 || (off < 0 ? off < -base : off > INT64_MAX - base)) return -1;
    s->pos = base + off;
    return s->pos;
}

static sf_count_t v_read(void *ptr, sf_count_t count, void *u) {
    vsrc *s = u;
    if (count <= 0 || s->pos >= s->size) return 0;
    sf_count_t n = count < s->size - s->pos ? count : s->size - s->pos;
    if (s->mem) {
        memcpy(ptr, s->mem + s->pos, (size_t)n);
        s->pos += n;
        return n;
    }
    sf_count_t done = 0;
    while (done < n) {
        ssize_t r = pread(s->fd, (uint8_t *)ptr + done, (size_t)(n - done), (off_t)(s->pos + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            if (!s->io_errno) s->io_errno = r < 0 ? errno : EIO; /* 0: the file shrank under us */
            break;
        }
        done += r;
    }
    s->pos += done;
    return done;
}

static sf_count_t v_write(const void *ptr, sf_count_t count, void *u) { return 0; }
static sf_count_t v_tell(void *u) { return ((vsrc *)u)->pos; }

/* ---- containers ---------------------------------------------------------- */

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The container the first bytes announce, or NULL. */
static const char *sniff(const uint8_t *b, size_t n) {
    if (n >= 12 && (!memcmp(b, "RIFF", 4) || !memcmp(b, "RIFX", 4) || !memcmp(b, "RF64", 4)) &&
        !memcmp(b + 8, "WAVE", 4))
        return "WAV";
    if (n >= 12 && !memcmp(b, "FORM", 4) && (!memcmp(b + 8, "AIFF", 4) || !memcmp(b + 8, "AIFC", 4))) return "AIFF";
    if (n >= 4 && !memcmp(b, "fLaC", 4)) return "FLAC";
    if (n >= 4 && !memcmp(b, "OggS", 4)) return "OGG";
    if (n >= 3 && !memcmp(b, "ID3", 3)) return "MP3";
    /* An MPEG audio frame header: 11 sync bits, a version that exists, layer
       III/II/I, a bitrate that is not "bad", a rate that is not reserved. */
    if (n >= 4 && b[0] == 0xff && (b[1] & 0xe0) == 0xe0 && (b[1] & 0x18) != 0x08 && (b[1] & 0x06) != 0 &&
        (b[2] & 0xf0) != 0xf0 && (b[2] & 0x0c) != 0x0c)
        return "MP3";
    return NULL;
}

static uint32_t be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* libsndfile trims a WAV "data" (or AIFF "SSND") chunk that claims more
   bytes than the file holds and decodes what is there, silently, and takes
   a file cut inside a chunk header for one of no samples: a half-copied
   file would pass for a shorter one. So walk the chunks and compare. A
   size of 0 or 0xffffffff is a streaming writer's placeholder (and RF64
   keeps the real size elsewhere), so it is not taken as a claim. */
static mllm_status check_sound_chunk(const vsrc *s, const uint8_t *head, const char *label) {
    const bool riff = !memcmp(head, "RIFF", 4), form = !memcmp(head, "FORM", 4);
    if (!riff && !form) return MLLM_OK;
    const char *kind = riff ? "WAV" : "AIFF", *sound = riff ? "data" : "SSND";
    sf_count_t at = 12;
    for (int guard = 0; guard < 4096 && at + 8 <= s->size; guard++) {
        uint8_t ch[8];
        vsrc k = *s;
        k.pos = at;
        if (v_read(ch, 8, &k) != 8) return MLLM_OK; /* a read error is reported by the decoder */
        uint32_t len = riff ? le32(ch + 4) : be32(ch + 4);
        if (!memcmp(ch, sound, 4)) {
            if (len != 0 && len != 0xffffffffu && (sf_count_t)len > s->size - at - 8) {
                return mllm_err(MLLM_ERR_FORMAT, "%s: truncated %s: its %s chunk claims %u bytes, the file holds %lld",
                                label, kind, sound, len, (long long)(s->size - at - 8));
            }
            return MLLM_OK;
        }
        at += 8 + (sf_count_t)len + (len & 1);
    }
    if (at < s->size && at + 8 > s->size)
        return mllm_err(MLLM_ERR_FORMAT, "%s: truncated %s: it ends inside a chunk header at byte %lld", label, kind,
                        (long long)at);
    return MLLM_OK;
}

/* ---- output ----------------------------------------------------------- */
typedef struct {
    float *p;
    size_t n, cap, max;
} fbuf;

static bool fbuf_reserve(fbuf *b, size_t more) {
    if (b->n + more <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < b->n + more) cap *= 2;
    if (cap > b->max) cap = b->max > b->n + more ? b->max : b->n + more;
    float *p = mllm_realloc(b->p, cap * sizeof *p);
    if (!p) return false;
    b->p = p;
    b->cap = cap;
    return true;
}

typedef struct {
    const char *label;
    int out_rate;
    SNDFILE *sf;
    SF_INFO in;
    SRC_STATE *src;
    float *chunk; /* (AUDIO_CHUNK_FRAMES, channels) interleaved */
    float *mono;  /* (AUDIO_CHUNK_FRAMES) */
    fbuf out;
    uint64_t frames, max_frames;
} decoder;

static mllm_status push(decoder *d, const float *mono, long n, bool last) {
    if (!d->src) {
        if (n == 0) return MLLM_OK;
        if (!fbuf_reserve(&d->out, (size_t)n)) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", d->label);
        memcpy(d->out.p + d->out.n, mono, (size_t)n * sizeof *mono);
        d->out.n += (size_t)n;
        return MLLM_OK;
    }
    double ratio = (double)d->out_rate / d->in.samplerate;
    SRC_DATA sd = {.data_in = mono, .input_frames = n, .src_ratio = ratio, .end_of_input = last};
    do {
        /* Room for this chunk's share plus the filter's delay line. */
        long room = (long)(n * ratio) + 256;
        if (!fbuf_reserve(&d->out, (size_t)room)) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", d->label);
        sd.data_out = d->out.p + d->out.n;
        sd.output_frames = (long)(d->out.cap - d->out.n);
        int e = src_process(d->src, &sd);
        if (e) return mllm_err(MLLM_ERR_FORMAT, "%s: resampling failed: %s", d->label, src_strerror(e));
        d->out.n += (size_t)sd.output_frames_gen;
        sd.data_in += sd.input_frames_used;
        sd.input_frames -= sd.input_frames_used;
        n = sd.input_frames;
    } while (sd.input_frames > 0 || (last && sd.output_frames_gen > 0));
    return MLLM_OK;
}

static mllm_status check_header(decoder *d, const char *format) {
    const SF_INFO *in = &d->in;
    if (in->channels <= 0) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: %s header has %d channels", d->label, format, in->channels);
    }
    if (in->channels > MLLM_AUDIO_MAX_CHANNELS) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %d channels (at most %d)", d->label, in->channels,
                        MLLM_AUDIO_MAX_CHANNELS);
    }
    if (in->samplerate < MLLM_AUDIO_MIN_RATE || in->samplerate > MLLM_AUDIO_MAX_RATE) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: sample rate %d Hz (supported: %d..%d)", d->label, in->samplerate,
                        MLLM_AUDIO_MIN_RATE, MLLM_AUDIO_MAX_RATE);
    }
    if (in->frames < 0) return mllm_err(MLLM_ERR_FORMAT, "%s: %s header has a negative length", d->label, format);
    d->max_frames = (uint64_t)MLLM_AUDIO_MAX_SECONDS * (uint64_t)in->samplerate;
    /* SF_COUNT_MAX: the length is unknown (a stream); counted as decoded. */
    if (in->frames != SF_COUNT_MAX && (uint64_t)in->frames > d->max_frames) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %lld frames at %d Hz is %.0f s, over the %d s limit", d->label,
                        (long long)in->frames, in->samplerate, (double)in->frames / in->samplerate,
                        MLLM_AUDIO_MAX_SECONDS);
    }
    return MLLM_OK;
}

static mllm_status decode(decoder *d, vsrc *vs, const char *format) {
    mllm_status st = check_header(d, format);
    if (st) return st;
    int ch = d->in.channels;
    d->chunk = mllm_malloc((size_t)AUDIO_CHUNK_FRAMES * (size_t)ch * sizeof *d->chunk);
    d->mono = mllm_malloc(AUDIO_CHUNK_FRAMES * sizeof *d->mono);
    if (!d->chunk || !d->mono) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", d->label);
    double ratio = (double)d->out_rate / d->in.samplerate;
    d->out.max = (size_t)((double)d->max_frames * ratio) + 1024;
    if (d->in.samplerate != d->out_rate) {
        int e = 0;
        d->src = src_new(AUDIO_RESAMPLER, 1, &e);
        if (!d->src) return mllm_err(MLLM_ERR_NOMEM, "%s: cannot start the resampler: %s", d->label, src_strerror(e));
    }
    /* The output grows by doubling as audio is decoded, never to what a
       header claims: a 4 KB FLAC may announce 3 hours. */
    for (;;) {
        sf_count_t got = sf_readf_float(d->sf, d->chunk, AUDIO_CHUNK_FRAMES);
        if (got < 0) got = 0;
        for (sf_count_t i = 0; i < got; i++) {
            float acc = 0;
            for (int c = 0; c < ch; c++) {
                float v = d->chunk[(size_t)i * (size_t)ch + (size_t)c];
                if (!(fabsf(v) <= MLLM_AUDIO_MAX_SAMPLE)) {
                    unsigned long long at = d->frames + (uint64_t)i;
                    if (!isfinite(v)) {
                        return mllm_err(MLLM_ERR_FORMAT, "%s: sample %llu (channel %d) is %s", d->label, at, c,
                                        isnan(v) ? "NaN" : "infinite");
                    }
                    return mllm_err(MLLM_ERR_FORMAT,
                                    "%s: sample %llu (channel %d) is %g, over the %g limit (full scale: 1)", d->label,
                                    at, c, (double)v, (double)MLLM_AUDIO_MAX_SAMPLE);
                }
                acc += v;
            }
            d->mono[i] = acc / (float)ch;
        }
        d->frames += (uint64_t)got;
        if (d->frames > d->max_frames) {
            return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: longer than the %d s limit", d->label, MLLM_AUDIO_MAX_SECONDS);
        }
        bool last = got < AUDIO_CHUNK_FRAMES;
        if ((st = push(d, d->mono, (long)got, last))) return st;
        if (last) break;
    }
    if (vs->io_errno) {
        return mllm_err(MLLM_ERR_IO, "%s: read error after %llu frames: %s", d->label, (unsigned long long)d->frames,
                        strerror(vs->io_errno));
    }
    int e = sf_error(d->sf);
    if (e != SF_ERR_NO_ERROR) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: cannot decode this %s after %llu frames: %s", d->label, format,
                        (unsigned long long)d->frames, sf_error_number(e));
    }
    /* An MP3's length is mpg123's estimate (from the bitrate, for VBR files
       without a Xing header), so only exact lengths are held to. */
    bool exact = strcmp(format, "MP3") != 0;
    if (exact && d->in.frames != SF_COUNT_MAX && d->frames < (uint64_t)d->in.frames) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: truncated %s: its header announces %lld frames, only %llu could be decoded",
                        d->label, format, (long long)d->in.frames, (unsigned long long)d->frames);
    }
    return MLLM_OK;
}

static mllm_status load(vsrc *vs, const char *label, int out_rate, float **samples, size_t *n_samples,
                        mllm_audio_info *info) {
    if ((uint64_t)vs->size > MLLM_AUDIO_MAX_FILE_BYTES) {
        return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: %lld bytes, over the %llu-byte limit for an audio file", label,
                        (long long)vs->size, (unsigned long long)MLLM_AUDIO_MAX_FILE_BYTES);
    }
    uint8_t head[AUDIO_SNIFF_BYTES] = {0};
    size_t nh = (size_t)v_read(head, AUDIO_SNIFF_BYTES, vs);
    vs->pos = 0;
    if (vs->io_errno) return mllm_err(MLLM_ERR_IO, "%s: cannot read: %s", label, strerror(vs->io_errno));
    const char *format = sniff(head, nh);
    /* The bytes are never printed: the path may name any file. */
    if (!format) {
        return mllm_err(MLLM_ERR_FORMAT, "%s: not an audio file this reader knows (WAV, FLAC, OGG, MP3, AIFF)",
                        label);
    }
    mllm_status st = check_sound_chunk(vs, head, label);
    if (st) return st;
    if (!strcmp(format, "OGG")) {
        const mllm_ogg_io io = {vs, v_read, v_seek, v_tell};
        const char *why = "";
        const mllm_ogg_check oc = mllm_ogg_vorbis_check(&io, &why);
        vs->pos = 0;
        if (vs->io_errno) return mllm_err(MLLM_ERR_IO, "%s: cannot read: %s", label, strerror(vs->io_errno));
        if (oc == MLLM_OGG_BAD) return mllm_err(MLLM_ERR_FORMAT, "%s: corrupt Ogg Vorbis: %s", label, why);
    }
    decoder d = {.label = label, .out_rate = out_rate};
    SF_VIRTUAL_IO vio = {v_len, v_seek, v_read, v_write, v_tell};
    d.sf = sf_open_virtual(&vio, SFM_READ, &d.in, vs);
    if (!d.sf) {
        if (vs->io_errno) return mllm_err(MLLM_ERR_IO, "%s: cannot read: %s", label, strerror(vs->io_errno));
        return mllm_err(MLLM_ERR_FORMAT, "%s: looks like %s, but libsndfile cannot decode it: %s", label, format,
                        sf_strerror(NULL));
    }
    st = decode(&d, vs, format);
    sf_close(d.sf);
    if (d.src) src_delete(d.src);
    mllm_free(d.chunk);
    mllm_free(d.mono);
    if (st) {
        mllm_free(d.out.p);
        return st;
    }
    if (info) {
        info->source_rate = d.in.samplerate;
        info->channels = d.in.channels;
        info->source_frames = d.frames;
        snprintf(info->format, sizeof info->format, "%s", format);
    }
    *samples = d.out.p ? d.out.p : mllm_malloc(sizeof(float));
    if (!*samples) return mllm_err(MLLM_ERR_NOMEM, "%s: out of memory", label);
    *n_samples = d.out.n;
    return MLLM_OK;
}

static mllm_status check_args(const char *what, int out_rate, float **samples, size_t *n_samples) {
    if (!samples || !n_samples) return mllm_err(MLLM_ERR_INVALID_ARG, "%s: NULL argument", what);
    *samples = NULL;
    *n_samples = 0;
    if (out_rate < MLLM_AUDIO_MIN_RATE || out_rate > MLLM_AUDIO_MAX_RATE) {
        return mllm_err(MLLM_ERR_INVALID_ARG, "%s: output rate %d Hz (supported: %d..%d)", what, out_rate,
                        MLLM_AUDIO_MIN_RATE, MLLM_AUDIO_MAX_RATE);
    }
    return MLLM_OK;
}

mllm_status mllm_audio_load_memory(const void *buf, size_t len, const char *label, int out_rate, float **samples,
                                   size_t *n_samples, mllm_audio_info *info) {
    mllm_status st = check_args("mllm_audio_load_memory", out_rate, samples, n_samples);
    if (st) return st;
    if (!buf && len) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_audio_load_memory: NULL buffer");
    static const uint8_t empty[1];
    vsrc vs = {.mem = buf ? buf : empty, .fd = -1, .size = (sf_count_t)len};
    return load(&vs, label ? label : "<memory>", out_rate, samples, n_samples, info);
}

mllm_status mllm_audio_load(const char *path, int out_rate, float **samples, size_t *n_samples,
                            mllm_audio_info *info) {
    mllm_status st = check_args("mllm_audio_load", out_rate, samples, n_samples);
    if (st) return st;
    if (!path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_audio_load: NULL path");
    int fd = -1;
    uint64_t size = 0;
    if ((st = mllm_file_open(path, &fd, &size))) return st;
    if (size > (uint64_t)INT64_MAX) size = (uint64_t)INT64_MAX;
    vsrc vs = {.fd = fd, .size = (sf_count_t)size};
    st = load(&vs, path, out_rate, samples, n_samples, info);
    close(fd);
    return st;
}
