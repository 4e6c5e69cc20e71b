/* The server's functions in a library built without it (cmake
   -DMLLM_SERVER=OFF, every wasm32-wasi build; CMake compiles this file
   instead of src/server): the API stays the same, starting says why not. */
#include <mllm/mllm.h>
#include "core/error.h"

mllm_status mllm_server_start(mllm_model *model, const mllm_server_config *c, mllm_server **out) {
    (void)model, (void)c;
    if (out) *out = NULL;
    return mllm_err(MLLM_ERR_UNSUPPORTED, "mllm_server_start: this build of libmllm has no HTTP server (it was "
                                          "configured with -DMLLM_SERVER=OFF, or for wasm32-wasi)");
}

/* No server can exist: these are only reached with NULL. */
int mllm_server_port(const mllm_server *s) { return (void)s, 0; }
void mllm_server_drain(mllm_server *s) { (void)s; }
int mllm_server_busy(mllm_server *s) { return (void)s, 0; }
void mllm_server_stop(mllm_server *s) { (void)s; }
