#include "core/meta.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/alloc.h"
#include "core/error.h"

static void entry_clear(mllm_meta_entry *e) {
    mllm_free(e->s);
    mllm_free(e->num);
    for (size_t i = 0; e->str && i < e->len; i++) mllm_free(e->str[i]);
    mllm_free(e->str);
    char *key = e->key;
    memset(e, 0, sizeof *e);
    e->key = key;
}

void mllm_meta_free(mllm_meta *m) {
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        entry_clear(&m->e[i]);
        mllm_free(m->e[i].key);
    }
    mllm_free(m->e);
    memset(m, 0, sizeof *m);
}

const mllm_meta_entry *mllm_meta_find(const mllm_meta *m, const char *key) {
    if (!m || !key) return NULL;
    for (size_t i = 0; i < m->n; i++)
        if (!strcmp(m->e[i].key, key)) return &m->e[i];
    return NULL;
}

const mllm_meta_entry *mllm_meta_findf(const mllm_meta *m, const char *fmt, ...) {
    char key[MLLM_META_MAX_KEY + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(key, sizeof key, fmt, ap);
    va_end(ap);
    return n < 0 || n >= (int)sizeof key ? NULL : mllm_meta_find(m, key);
}

/* The entry for key, emptied (new or replaced); NULL on failure. */
static mllm_meta_entry *slot(mllm_meta *m, const char *key, mllm_meta_type type) {
    size_t kl = strlen(key);
    if (kl > MLLM_META_MAX_KEY) {
        mllm_err(MLLM_ERR_FORMAT, "metadata key of %zu bytes is too long (limit %d)", kl, MLLM_META_MAX_KEY);
        return NULL;
    }
    mllm_meta_entry *e = (mllm_meta_entry *)mllm_meta_find(m, key);
    if (e) {
        entry_clear(e);
    } else {
        if (m->n == m->cap) {
            size_t cap = m->cap ? 2 * m->cap : 32;
            mllm_meta_entry *ne = mllm_realloc(m->e, cap * sizeof *ne);
            if (!ne) {
                mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
                return NULL;
            }
            m->e = ne;
            m->cap = cap;
        }
        e = &m->e[m->n];
        memset(e, 0, sizeof *e);
        e->key = mllm_strndup(key, kl);
        if (!e->key) {
            mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
            return NULL;
        }
        m->n++;
    }
    e->type = type;
    return e;
}

mllm_status mllm_meta_set_int(mllm_meta *m, const char *key, int64_t v) {
    mllm_meta_entry *e = slot(m, key, MLLM_META_INT);
    if (!e) return MLLM_ERR_NOMEM;
    e->i = v;
    return MLLM_OK;
}

mllm_status mllm_meta_set_float(mllm_meta *m, const char *key, double v) {
    mllm_meta_entry *e = slot(m, key, MLLM_META_FLOAT);
    if (!e) return MLLM_ERR_NOMEM;
    e->f = v;
    return MLLM_OK;
}

mllm_status mllm_meta_set_bool(mllm_meta *m, const char *key, bool v) {
    mllm_meta_entry *e = slot(m, key, MLLM_META_BOOL);
    if (!e) return MLLM_ERR_NOMEM;
    e->i = v;
    return MLLM_OK;
}

mllm_status mllm_meta_set_str(mllm_meta *m, const char *key, const char *s, size_t len) {
    mllm_meta_entry *e = slot(m, key, MLLM_META_STR);
    if (!e) return MLLM_ERR_NOMEM;
    e->s = mllm_strndup(s ? s : "", s ? len : 0);
    e->len = s ? len : 0;
    return e->s ? MLLM_OK : mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
}

mllm_status mllm_meta_set_arr_num(mllm_meta *m, const char *key, const double *v, size_t n) {
    mllm_meta_entry *e = slot(m, key, MLLM_META_ARR_NUM);
    if (!e) return MLLM_ERR_NOMEM;
    e->num = mllm_malloc((n ? n : 1) * sizeof *e->num);
    if (!e->num) return mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
    if (n) memcpy(e->num, v, n * sizeof *v);
    e->len = n;
    return MLLM_OK;
}

mllm_status mllm_meta_set_arr_str(mllm_meta *m, const char *key, const char *const *s, const size_t *lens, size_t n) {
    mllm_meta_entry *e = slot(m, key, MLLM_META_ARR_STR);
    if (!e) return MLLM_ERR_NOMEM;
    e->str = mllm_calloc(n ? n : 1, sizeof *e->str);
    if (!e->str) return mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
    e->len = n;
    for (size_t i = 0; i < n; i++) {
        e->str[i] = mllm_strndup(s[i], lens[i]);
        if (!e->str[i]) return mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
    }
    return MLLM_OK;
}

mllm_status mllm_meta_set_arr_len(mllm_meta *m, const char *key, size_t n) {
    mllm_meta_entry *e = slot(m, key, MLLM_META_ARR_LEN);
    if (!e) return MLLM_ERR_NOMEM;
    e->len = n;
    return MLLM_OK;
}

mllm_status mllm_meta_copy(mllm_meta *dst, const mllm_meta *src, const char *prefix, const char *dst_prefix) {
    if (dst == src) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_meta_copy: source and destination are the same");
    size_t pl = prefix ? strlen(prefix) : 0;
    char key[2 * MLLM_META_MAX_KEY + 2];
    for (size_t i = 0; i < src->n; i++) {
        const mllm_meta_entry *e = &src->e[i];
        if (pl && strncmp(e->key, prefix, pl) != 0) continue;
        int kn = snprintf(key, sizeof key, "%s%s", dst_prefix ? dst_prefix : "", e->key + pl);
        if (kn < 0 || kn >= (int)sizeof key) return mllm_err(MLLM_ERR_FORMAT, "metadata key too long");
        mllm_status st;
        switch (e->type) {
        case MLLM_META_INT: st = mllm_meta_set_int(dst, key, e->i); break;
        case MLLM_META_FLOAT: st = mllm_meta_set_float(dst, key, e->f); break;
        case MLLM_META_BOOL: st = mllm_meta_set_bool(dst, key, e->i != 0); break;
        case MLLM_META_STR: st = mllm_meta_set_str(dst, key, e->s, e->len); break;
        case MLLM_META_ARR_NUM: st = mllm_meta_set_arr_num(dst, key, e->num, e->len); break;
        case MLLM_META_ARR_LEN: st = mllm_meta_set_arr_len(dst, key, e->len); break;
        case MLLM_META_ARR_STR: {
            size_t *lens = mllm_malloc((e->len ? e->len : 1) * sizeof *lens);
            if (!lens) return mllm_err(MLLM_ERR_NOMEM, "out of memory (metadata)");
            for (size_t j = 0; j < e->len; j++) lens[j] = strlen(e->str[j]);
            st = mllm_meta_set_arr_str(dst, key, (const char *const *)e->str, lens, e->len);
            mllm_free(lens);
            break;
        }
        default: st = MLLM_OK;
        }
        if (st) return st;
    }
    return MLLM_OK;
}

bool mllm_meta_get_int(const mllm_meta *m, const char *key, int64_t *out) {
    const mllm_meta_entry *e = mllm_meta_find(m, key);
    if (!e) return false;
    if (e->type == MLLM_META_INT) {
        *out = e->i;
        return true;
    }
    /* Range first: casting a huge double to int64 is undefined. */
    if (e->type == MLLM_META_FLOAT && e->f > -9e18 && e->f < 9e18 && e->f == floor(e->f)) {
        *out = (int64_t)e->f;
        return true;
    }
    return false;
}

bool mllm_meta_get_float(const mllm_meta *m, const char *key, double *out) {
    const mllm_meta_entry *e = mllm_meta_find(m, key);
    if (!e || (e->type != MLLM_META_FLOAT && e->type != MLLM_META_INT)) return false;
    *out = e->type == MLLM_META_FLOAT ? e->f : (double)e->i;
    return true;
}

bool mllm_meta_get_bool(const mllm_meta *m, const char *key, bool *out) {
    const mllm_meta_entry *e = mllm_meta_find(m, key);
    if (!e || e->type != MLLM_META_BOOL) return false;
    *out = e->i != 0;
    return true;
}

const char *mllm_meta_get_str(const mllm_meta *m, const char *key) {
    const mllm_meta_entry *e = mllm_meta_find(m, key);
    return e && e->type == MLLM_META_STR ? e->s : NULL;
}

int64_t mllm_meta_arr_len(const mllm_meta *m, const char *key) {
    const mllm_meta_entry *e = mllm_meta_find(m, key);
    if (!e || (e->type != MLLM_META_ARR_NUM && e->type != MLLM_META_ARR_STR && e->type != MLLM_META_ARR_LEN))
        return -1;
    return (int64_t)e->len;
}

const char *mllm_meta_type_name(mllm_meta_type t) {
    switch (t) {
    case MLLM_META_INT: return "integer";
    case MLLM_META_FLOAT: return "number";
    case MLLM_META_BOOL: return "boolean";
    case MLLM_META_STR: return "string";
    case MLLM_META_ARR_NUM: return "array of numbers";
    case MLLM_META_ARR_STR: return "array of strings";
    case MLLM_META_ARR_LEN: return "array";
    }
    return "?";
}
