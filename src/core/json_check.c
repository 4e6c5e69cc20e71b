/* Scans JSON text for raw control bytes in strings and \u0000: see json_check.h. */
#include "core/json_check.h"
#include <stdio.h>

bool mllm_json_text_check(const char *json, size_t len, char *why, size_t cap) {
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)json[i];
        if (c == 0) {
            if (cap) snprintf(why, cap, "a raw NUL byte at byte %zu (not allowed in JSON)", i);
            return false;
        }
        if (!in_str) {
            in_str = c == '"';
            continue;
        }
        if (c < 0x20) {
            if (cap)
                snprintf(why, cap, "a raw control character 0x%02x inside a string at byte %zu (JSON requires it "
                                   "escaped, e.g. \\n or \\u%04x)", c, i, c);
            return false;
        }
        if (c == '"') {
            in_str = false;
        } else if (c == '\\' && i + 1 < len) {
            if (json[i + 1] == 'u' && i + 5 < len && json[i + 2] == '0' && json[i + 3] == '0' && json[i + 4] == '0' &&
                json[i + 5] == '0') {
                if (cap)
                    snprintf(why, cap, "\\u0000 at byte %zu: NUL characters are not supported in text (they would "
                                       "cut it short)", i);
                return false;
            }
            i++; /* the escaped character, whatever it is */
        }
    }
    return true;
}
