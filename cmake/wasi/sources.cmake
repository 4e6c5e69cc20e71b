# The wasm32-wasi source list (included by CMakeLists.txt when WASI): the
# x86 SIMD files (src/backends/cpu/x86/) are dropped -- wasm has no AVX -- and the dispatch code names
# no x86 kernel outside x86 builds (MLLM_HAVE_X86_KERNELS), so the path is
# "generic" plus the SIMD128 kernels below.
# MLLM_WASM_SIMD (default ON): the SIMD128 kernels (*_simd128.c, compiled
# with -msimd128; type_kernels.c uses them). OFF gives a module without
# SIMD instructions, for runtimes that lack them.
option(MLLM_WASM_SIMD "wasm SIMD128 kernels (src/backends/cpu/wasm/*_simd128.c)" ON)
list(FILTER MLLM_SOURCES EXCLUDE REGEX "/src/backends/cpu/x86/")
list(FILTER MLLM_SOURCES EXCLUDE REGEX "/src/backends/cpu/wasm/")
if(MLLM_WASM_SIMD)
  file(GLOB MLLM_SIMD128_SOURCES ${CMAKE_SOURCE_DIR}/src/backends/cpu/wasm/*_simd128.c)
  set_source_files_properties(${MLLM_SIMD128_SOURCES} PROPERTIES COMPILE_OPTIONS "-msimd128")
  list(APPEND MLLM_SOURCES ${MLLM_SIMD128_SOURCES})
  add_compile_definitions(MLLM_HAVE_WASM_SIMD128=1)
endif()
