/* GPT-2's byte-level mapping: every byte is shown as a printable code point
   so that BPE vocabularies can be stored as text. Printable Latin-1 bytes
   (33..126, 161..172, 174..255) map to themselves; the other 68 bytes map,
   in increasing order, to U+0100, U+0101, ... */
#include "tokenizer/tokenizer_internal.h"

static bool printable(unsigned b) {
    return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

static uint32_t byte_to_cp(uint8_t b) {
    if (printable(b)) return b;
    /* Count the non-printable bytes before b. */
    uint32_t n = 0;
    for (unsigned i = 0; i < b; i++) n += !printable(i);
    return 256 + n;
}

int tok_byte_to_utf8(uint8_t b, char out[2]) {
    uint32_t cp = byte_to_cp(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

int tok_cp_to_byte(uint32_t cp) {
    if (cp < 256) return printable(cp) ? (int)cp : -1;
    if (cp >= 256 + 68) return -1;
    uint32_t n = cp - 256;
    for (unsigned i = 0; i < 256; i++) {
        if (!printable(i)) {
            if (n == 0) return (int)i;
            n--;
        }
    }
    return -1;
}

size_t tok_utf8_len(uint8_t c) {
    if (c < 0x80) return 1;
    if ((c & 0xE0) == 0xC0) return 2;
    if ((c & 0xF0) == 0xE0) return 3;
    if ((c & 0xF8) == 0xF0) return 4;
    return 1;
}

uint32_t tok_utf8_next(const char *s, size_t n, size_t *len) {
    const uint8_t *u = (const uint8_t *)s;
    size_t l = tok_utf8_len(u[0]);
    if (l == 1 || l > n) {
        *len = 1;
        return u[0] < 0x80 ? u[0] : 0xFFFD;
    }
    uint32_t cp = u[0] & (0x7F >> l);
    for (size_t i = 1; i < l; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *len = 1;
            return 0xFFFD;
        }
        cp = (cp << 6) | (u[i] & 0x3F);
    }
    *len = l;
    return cp;
}
