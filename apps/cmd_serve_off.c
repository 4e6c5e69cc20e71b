/* mllm serve in a build without the server (cmake -DMLLM_SERVER=OFF, and
   every wasm32-wasi build): src/server and libmicrohttpd are not linked, so
   the command only says so. CMake compiles this file instead of cmd_serve.c. */
#include <stdio.h>
#include "cli.h"

int cmd_serve(int argc, char **argv) {
    (void)argc;
    (void)argv;
#ifdef __wasi__
    fprintf(stderr, "mllm serve: this build of mllm has no HTTP server (a wasm32-wasi build never has one: "
                    "WASI preview 1 cannot listen on a socket); use a native build\n");
#else
    fprintf(stderr, "mllm serve: this build of mllm has no HTTP server (it was configured with "
                    "-DMLLM_SERVER=OFF); rebuild with -DMLLM_SERVER=ON (needs libmicrohttpd)\n");
#endif
    return 2;
}
