# The wasm32-wasi source list (included by CMakeLists.txt when WASI): the
# x86 SIMD files are dropped -- wasm has no AVX -- and x86_absent.c defines
# the x86 entry points the dispatch code names, which never run there
# (core/cpu_features.c reports no AVX2 off x86, so the path is "generic").
# When the per-arch CPU backend (issue #12, branch neon) stops naming x86
# kernels outside x86 builds, x86_absent.c goes away.
# MLLM_WASM_SIMD (default ON): the SIMD128 kernels (*_simd128.c, compiled
# with -msimd128; type_kernels.c uses them). OFF gives a module without
# SIMD instructions, for runtimes that lack them.
option(MLLM_WASM_SIMD "wasm SIMD128 kernels (src/backends/cpu/wasm/*_simd128.c)" ON)
list(FILTER MLLM_SOURCES EXCLUDE REGEX "_(avx2|avx512)\\.c$")
list(FILTER MLLM_SOURCES EXCLUDE REGEX "/src/backends/cpu/wasm/")
list(APPEND MLLM_SOURCES ${CMAKE_SOURCE_DIR}/src/backends/cpu/wasm/x86_absent.c)
if(MLLM_WASM_SIMD)
  file(GLOB MLLM_SIMD128_SOURCES ${CMAKE_SOURCE_DIR}/src/backends/cpu/wasm/*_simd128.c)
  set_source_files_properties(${MLLM_SIMD128_SOURCES} PROPERTIES COMPILE_OPTIONS "-msimd128")
  list(APPEND MLLM_SOURCES ${MLLM_SIMD128_SOURCES})
  add_compile_definitions(MLLM_HAVE_WASM_SIMD128=1)
endif()
