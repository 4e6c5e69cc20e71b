/* Ogg Vorbis header check with libvorbisfile (ogg_check.h). */
#include "audio/ogg_check.h"
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <vorbis/vorbisfile.h>

static size_t cb_read(void *ptr, size_t size, size_t nmemb, void *u) {
    const mllm_ogg_io *io = u;
    if (size == 0 || nmemb == 0) return 0;
    const int64_t got = io->read(ptr, (int64_t)(size * nmemb), io->ctx);
    return got > 0 ? (size_t)got / size : 0;
}

static int cb_seek(void *u, ogg_int64_t off, int whence) {
    const mllm_ogg_io *io = u;
    return io->seek(off, whence, io->ctx) < 0 ? -1 : 0;
}

static long cb_tell(void *u) {
    const mllm_ogg_io *io = u;
    return (long)io->tell(io->ctx);
}

/* Whether the first packet of the first page is a Vorbis identification
   header, which is how libsndfile picks its Vorbis reader (a damaged
   comment or setup packet makes libvorbis answer OV_ENOTVORBIS as well, so
   ov_test's answer cannot tell the codec). Reads at most 64 KB. */
static bool first_packet_vorbis(const mllm_ogg_io *io) {
    ogg_sync_state oy;
    ogg_sync_init(&oy);
    ogg_page og;
    bool page = false;
    for (int i = 0; i < 16 && !page; i++) {
        char *buf = ogg_sync_buffer(&oy, 4096);
        const int64_t got = buf ? io->read(buf, 4096, io->ctx) : -1;
        if (got <= 0) break;
        ogg_sync_wrote(&oy, (long)got);
        while (!page) {
            const int r = ogg_sync_pageout(&oy, &og);
            if (r == 0) break; /* more data */
            page = r > 0;      /* r < 0: bytes skipped to the next page */
        }
    }
    bool vorbis = false;
    ogg_stream_state os;
    if (page && ogg_stream_init(&os, ogg_page_serialno(&og)) == 0) {
        ogg_packet op;
        if (ogg_stream_pagein(&os, &og) == 0 && ogg_stream_packetout(&os, &op) == 1)
            vorbis = op.bytes >= 7 && !memcmp(op.packet, "\x01vorbis", 7);
        ogg_stream_clear(&os);
    }
    ogg_sync_clear(&oy);
    return vorbis;
}

mllm_ogg_check mllm_ogg_vorbis_check(const mllm_ogg_io *io, const char **why) {
    *why = "";
    OggVorbis_File vf;
    const ov_callbacks cb = {cb_read, cb_seek, NULL, cb_tell};
    /* ov_test reads the header packets only (no seek to the end); on
       failure it has freed what it took, on success ov_clear frees it. */
    const int r = ov_test_callbacks((void *)io, &vf, NULL, 0, cb);
    if (r == 0) {
        ov_clear(&vf);
        return MLLM_OGG_VORBIS_OK;
    }
    io->seek(0, SEEK_SET, io->ctx);
    if (!first_packet_vorbis(io)) return MLLM_OGG_NOT_VORBIS;
    switch (r) {
    case OV_ENOTVORBIS: *why = "a Vorbis stream whose later header packets are not Vorbis"; break;
    case OV_EREAD: *why = "a read error in its header pages"; break;
    case OV_EVERSION: *why = "a Vorbis version this decoder does not know"; break;
    case OV_EBADHEADER: *why = "its Vorbis header packets do not parse"; break;
    default: *why = "its Ogg pages or Vorbis headers are damaged"; break;
    }
    return MLLM_OGG_BAD;
}
