/* The registry of backends, and the host-memory buffer functions that the
   CPU's buffer type (and any other host-memory one) is made of. */
#include "backends/backend.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#ifdef MLLM_HAVE_OPENCL
#include "backends/opencl/ocl_backend.h"
#endif
#ifdef MLLM_HAVE_CUDA
#include "backends/cuda/cu_backend.h"
#endif

/* The device backends: registered when first asked for (opening one
   costs: OpenCL builds its kernels), so a missing device is an error only
   for whoever wants it. get is NULL where the build lacks the layer. */
static const struct {
    const char *name;
    mllm_backend *(*get)(void);
    const char *not_built;
} g_devices[] = {
#ifdef MLLM_HAVE_OPENCL
    {"opencl", mllm_backend_opencl, NULL},
#else
    {"opencl", NULL, "configure with -DMLLM_OPENCL=ON; it needs Debian's ocl-icd-opencl-dev and opencl-c-headers"},
#endif
#ifdef MLLM_HAVE_CUDA
    {"cuda", mllm_backend_cuda, NULL},
#else
    {"cuda", NULL, "CUDA support not built: configure with -DMLLM_CUDA=ON where nvcc and the CUDA toolkit are"},
#endif
};
#define N_DEVICES (int)(sizeof g_devices / sizeof g_devices[0])

static mllm_backend *g_backends[MLLM_MAX_BACKENDS];
static int g_n_backends;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

/* The CPU is always first; called under g_mu. */
static void ensure_cpu(void) {
    if (g_n_backends == 0) g_backends[g_n_backends++] = mllm_backend_cpu();
}

bool mllm_backend_register(mllm_backend *be) {
    bool ok = be && be->name && be->buffer_type && be->supports_op && be->graph_compute;
    pthread_mutex_lock(&g_mu);
    ensure_cpu();
    for (int i = 0; ok && i < g_n_backends; i++) ok = strcmp(g_backends[i]->name, be->name) != 0;
    ok = ok && g_n_backends < MLLM_MAX_BACKENDS;
    if (ok) g_backends[g_n_backends++] = be;
    pthread_mutex_unlock(&g_mu);
    return ok;
}

void mllm_backend_names(char *out, size_t n) {
    if (!n) return;
    out[0] = 0;
    pthread_mutex_lock(&g_mu);
    ensure_cpu();
    size_t at = 0;
    for (int i = 0; i < g_n_backends && at < n; i++) {
        int w = snprintf(out + at, n - at, "%s%s", i ? ", " : "", g_backends[i]->name);
        if (w < 0) break;
        at += (size_t)w;
    }
    /* built in, not registered until first asked for */
    for (int d = 0; d < N_DEVICES && at < n; d++) {
        bool have = !g_devices[d].get;
        for (int i = 0; i < g_n_backends && !have; i++) have = strcmp(g_backends[i]->name, g_devices[d].name) == 0;
        if (have) continue;
        int w = snprintf(out + at, n - at, ", %s", g_devices[d].name);
        if (w < 0) break;
        at += (size_t)w;
    }
    pthread_mutex_unlock(&g_mu);
}

mllm_backend *mllm_backend_by_name(const char *name) {
    mllm_backend *found = NULL;
    pthread_mutex_lock(&g_mu);
    ensure_cpu();
    for (int i = 0; name && i < g_n_backends && !found; i++)
        if (strcmp(g_backends[i]->name, name) == 0) found = g_backends[i];
    pthread_mutex_unlock(&g_mu);
    for (int d = 0; !found && name && d < N_DEVICES; d++) {
        if (strcmp(name, g_devices[d].name) != 0) continue;
        if (g_devices[d].get) return g_devices[d].get(); /* NULL: the error says why (no device, ...) */
        mllm_err(MLLM_ERR_UNSUPPORTED, "backend '%s' is not in this build (%s)", name, g_devices[d].not_built);
        return NULL;
    }
    if (!found) {
        char have[256];
        mllm_backend_names(have, sizeof have);
        mllm_err(MLLM_ERR_INVALID_ARG, "unknown backend '%s' (this build has: %s)", name ? name : "(null)", have);
    }
    return found;
}

bool mllm_backend_is_device(const char *name) {
    for (int d = 0; name && d < N_DEVICES; d++)
        if (strcmp(name, g_devices[d].name) == 0) return true;
    return false;
}

void mllm_backend_kv_release(const mllm_kv_layer *kv, int n) {
    mllm_backend *be[MLLM_MAX_BACKENDS];
    pthread_mutex_lock(&g_mu);
    const int nb = g_n_backends;
    memcpy(be, g_backends, (size_t)nb * sizeof *be);
    pthread_mutex_unlock(&g_mu);
    for (int b = 0; b < nb; b++)
        for (int l = 0; be[b]->kv_release && l < n; l++) be[b]->kv_release(be[b], &kv[l]);
}

/* ---- host memory ---- */

bool mllm_host_buffer_alloc(const mllm_buffer_type *bt, size_t size, mllm_buffer *b) {
    b->type = bt;
    b->size = size;
    b->data = mllm_malloc_aligned(size ? size : 64);
    return b->data != NULL;
}

void mllm_host_buffer_free(mllm_buffer *b) {
    mllm_free_aligned(b->data);
    b->data = NULL;
    b->size = 0;
}

void mllm_host_buffer_set(mllm_buffer *b, size_t offs, const void *src, size_t n) {
    if (n) memcpy((char *)b->data + offs, src, n);
}

void mllm_host_buffer_get(const mllm_buffer *b, size_t offs, void *dst, size_t n) {
    if (n) memcpy(dst, (const char *)b->data + offs, n);
}

bool mllm_host_buffer_is_host(const mllm_buffer_type *bt) { return true; }

mllm_status mllm_backends_parse(const char *list, const char *what, mllm_backend **out, int *n) {
    *n = 0;
    char name[64];
    for (const char *p = list; p && *p;) {
        const size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof name)
            return mllm_err(MLLM_ERR_INVALID_ARG, "%s: bad list '%s' (names separated by commas)", what, list);
        memcpy(name, p, len);
        name[len] = 0;
        mllm_backend *be = mllm_backend_by_name(name);
        if (!be) {
            char why[320]; /* mllm_err writes the buffer mllm_last_error reads */
            snprintf(why, sizeof why, "%s", mllm_last_error());
            /* a device backend this build lacks or cannot open (no device) is unsupported here */
            return mllm_err(mllm_backend_is_device(name) ? MLLM_ERR_UNSUPPORTED : MLLM_ERR_INVALID_ARG, "%s: %s",
                            what, why);
        }
        if (*n == MLLM_MAX_BACKENDS)
            return mllm_err(MLLM_ERR_INVALID_ARG, "%s: more than %d backends", what, MLLM_MAX_BACKENDS);
        out[(*n)++] = be;
        p += len + (p[len] == ',');
    }
    if (*n == 1 && out[0] == mllm_backend_cpu()) *n = 0; /* the CPU alone needs no schedule */
    return MLLM_OK;
}
