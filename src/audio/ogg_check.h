/* The headers of an Ogg Vorbis stream, checked by libvorbisfile before
   libsndfile opens it: libsndfile 1.2's Vorbis reader leaks its
   vorbis_info (about 5.8 KB, from vorbis_info_init) on every stream whose
   header packets it cannot parse, so each hostile upload would grow a
   server for good (#40). libvorbisfile parses the same packets with the
   same libvorbis and frees all it took (ov_clear), so such a stream is
   refused here and never reaches libsndfile. */
#ifndef MLLM_AUDIO_OGG_CHECK_H
#define MLLM_AUDIO_OGG_CHECK_H

#include <stdint.h>

/* Reading the stream: the shapes of libsndfile's virtual I/O. */
typedef struct {
    void *ctx;
    int64_t (*read)(void *buf, int64_t n, void *ctx);
    int64_t (*seek)(int64_t off, int whence, void *ctx);
    int64_t (*tell)(void *ctx);
} mllm_ogg_io;

typedef enum {
    MLLM_OGG_VORBIS_OK,  /* Vorbis, its three header packets parse */
    MLLM_OGG_NOT_VORBIS, /* Ogg carrying another codec (Opus, FLAC): left to libsndfile */
    MLLM_OGG_BAD,        /* Vorbis headers that do not parse, or no stream at all */
} mllm_ogg_check;

/* Checks the stream from its start; leaves the position where it was not
   (the caller seeks back). *why: a static phrase for the error. */
mllm_ogg_check mllm_ogg_vorbis_check(const mllm_ogg_io *io, const char **why);

#endif
