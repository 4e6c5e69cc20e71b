# The wasm32-wasi source list (included by CMakeLists.txt when WASI): the
# x86 SIMD files are dropped -- wasm has no AVX -- and x86_absent.c defines
# the x86 entry points the dispatch code names, which never run there
# (core/cpu_features.c reports no AVX2 off x86, so the generic C path is
# chosen). When the per-arch CPU backend (issue #12, branch neon) stops
# naming x86 kernels outside x86 builds, x86_absent.c goes away.
list(FILTER MLLM_SOURCES EXCLUDE REGEX "_(avx2|avx512)\\.c$")
list(FILTER MLLM_SOURCES EXCLUDE REGEX "/src/backends/cpu/wasm/")
list(APPEND MLLM_SOURCES ${CMAKE_SOURCE_DIR}/src/backends/cpu/wasm/x86_absent.c)
