/* The table of plugin ops and the plugin loader. Ops are only ever added
   (a plugin is never unloaded: graphs may hold its functions), under a
   lock; lookups read entries that are complete before the count that
   publishes them grows. */
#include "backends/plugin.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(__wasi__)
#include <dlfcn.h>
#endif

#include "core/error.h"

static mllm_custom_op g_ops[MLLM_MAX_CUSTOM_OPS];
static int g_n_ops; /* atomic: published after the entry is written */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static bool good_name(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9') ||
              s[n] == '_' || s[n] == '.'))
            return false;
    return n > 0 && n < MLLM_CUSTOM_OP_NAME;
}

static const mllm_custom_op *find(const char *name) {
    const int n = __atomic_load_n(&g_n_ops, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (strcmp(g_ops[i].name, name) == 0) return &g_ops[i];
    return NULL;
}

const mllm_custom_op *mllm_custom_op_find(const char *name) {
    const mllm_custom_op *op = name ? find(name) : NULL;
    if (!op) mllm_err(MLLM_ERR_INVALID_ARG, "no op '%s' is registered (load its plugin first)", name ? name : "(null)");
    return op;
}

MLLM_API mllm_status mllm_op_register(const mllm_op_def *def) {
    if (!def) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_op_register: def is NULL");
    /* Version first: the rest of the struct may not even be ours. */
    if (def->struct_size < offsetof(mllm_op_def, abi_version) + sizeof def->abi_version ||
        def->abi_version != MLLM_PLUGIN_ABI_VERSION)
        return mllm_err(MLLM_ERR_UNSUPPORTED,
                        "plugin op ABI mismatch: the op was built for plugin ABI %u, this library has ABI %u",
                        def->struct_size >= 8 ? def->abi_version : 0u, (unsigned)MLLM_PLUGIN_ABI_VERSION);
    /* ABI 1's first mllm_op_def ended at user; the fields after it are
       read only where the plugin's struct has them. */
    const size_t base = offsetof(mllm_op_def, user) + sizeof def->user;
    if (def->struct_size < base)
        return mllm_err(MLLM_ERR_UNSUPPORTED, "plugin op ABI mismatch: mllm_op_def of %u bytes, this library's has %zu",
                        def->struct_size, sizeof(mllm_op_def));
    mllm_op_def d = {0};
    memcpy(&d, def, def->struct_size < sizeof d ? def->struct_size : sizeof d);
    d.struct_size = sizeof d;
    def = &d;
    if (!def->opencl_source != !def->opencl_kernel)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_op_register: op '%s' has %s but no %s",
                        def->name && good_name(def->name) ? def->name : "?",
                        def->opencl_source ? "opencl_source" : "opencl_kernel",
                        def->opencl_source ? "opencl_kernel" : "opencl_source");
    if (!def->name || !good_name(def->name))
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_op_register: bad op name (letters, digits, '_', '.'; under %d bytes)",
                        MLLM_CUSTOM_OP_NAME);
    if (def->n_inputs < 1 || def->n_inputs > 4 || !def->shape || !def->cpu_kernel)
        return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_op_register: op '%s' needs 1 to 4 inputs, a shape rule and a CPU kernel",
                        def->name);
    mllm_status st = MLLM_OK;
    pthread_mutex_lock(&g_mu);
    if (find(def->name)) {
        st = mllm_err(MLLM_ERR_INVALID_ARG, "mllm_op_register: op '%s' is already registered", def->name);
    } else if (g_n_ops == MLLM_MAX_CUSTOM_OPS) {
        st = mllm_err(MLLM_ERR_NOMEM, "mllm_op_register: the table of %d plugin ops is full", MLLM_MAX_CUSTOM_OPS);
    } else {
        mllm_custom_op *op = &g_ops[g_n_ops];
        snprintf(op->name, sizeof op->name, "%s", def->name);
        op->def = *def;
        op->def.name = op->name;
        __atomic_store_n(&g_n_ops, g_n_ops + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_mu);
    return st;
}

MLLM_API mllm_status mllm_plugin_load(const char *path) {
    if (!path) return mllm_err(MLLM_ERR_INVALID_ARG, "mllm_plugin_load: path is NULL");
#if defined(__wasi__)
    return mllm_err(MLLM_ERR_UNSUPPORTED, "%s: plugins need dlopen, which wasm32-wasi builds do not have", path);
#else
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return mllm_err(MLLM_ERR_IO, "plugin %s: %s", path, dlerror());
    mllm_plugin_init_fn init;
    void *sym = dlsym(h, "mllm_plugin_init");
    memcpy(&init, &sym, sizeof init); /* object to function pointer, as POSIX allows */
    if (!sym) {
        dlclose(h);
        return mllm_err(MLLM_ERR_FORMAT, "plugin %s: no mllm_plugin_init (not an mllm plugin)", path);
    }
    const mllm_plugin_host host = {sizeof host, MLLM_PLUGIN_ABI_VERSION, mllm_op_register};
    mllm_err_clear();
    mllm_status st = init(&host);
    if (st != MLLM_OK) {
        char why[400];
        snprintf(why, sizeof why, "%s", mllm_last_error()[0] ? mllm_last_error() : mllm_status_str(st));
        return mllm_err(st, "plugin %s: %s", path, why); /* not unloaded: it may have registered ops */
    }
    return MLLM_OK; /* kept loaded for the life of the process */
#endif
}

MLLM_API mllm_status mllm_plugins_load_env(void) {
    const char *list = getenv("MLLM_PLUGINS");
    if (!list || !*list) return MLLM_OK;
    char path[4096];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ":");
        if (n >= sizeof path) return mllm_err(MLLM_ERR_INVALID_ARG, "MLLM_PLUGINS: a path of %zu bytes", n);
        if (n > 0) {
            memcpy(path, p, n);
            path[n] = 0;
            mllm_status st = mllm_plugin_load(path);
            if (st != MLLM_OK) return st;
        }
        p += n + (p[n] == ':');
    }
    return MLLM_OK;
}
