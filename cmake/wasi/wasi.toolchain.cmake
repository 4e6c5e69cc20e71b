# wasm32-wasi with Debian 12's clang 14, lld (wasm-ld) and wasi-libc
# (scripts/deps.sh installs them; scripts/wasi-deps.sh builds the libraries
# mllm links into MLLM_WASI_PREFIX). Used by the `wasi` preset and by
# scripts/wasi-deps.sh for the dependencies themselves.
set(CMAKE_SYSTEM_NAME WASI)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_LIST_DIR})
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
find_program(CMAKE_AR NAMES llvm-ar-14 llvm-ar REQUIRED)
find_program(CMAKE_RANLIB NAMES llvm-ranlib-14 llvm-ranlib REQUIRED)

# wasi-libc hides POSIX calls it can only emulate behind these macros:
# mmap of a file reads it into memory (MAP_PRIVATE only), signal() and
# clock() work inside the one process. pthread.h is our single-threaded
# stand-in (cmake/wasi/include/pthread.h): this wasi-libc has no threads.
set(MLLM_WASI_EMULATED "-D_WASI_EMULATED_MMAN -D_WASI_EMULATED_SIGNAL -D_WASI_EMULATED_PROCESS_CLOCKS -D_WASI_EMULATED_GETPID")
set(CMAKE_C_FLAGS_INIT "${MLLM_WASI_EMULATED} -isystem ${CMAKE_CURRENT_LIST_DIR}/include")
# The default wasm stack is 64 KiB; the engine (and PCRE2) use more.
# Memory grows on demand up to wasm32's 4 GiB.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-z,stack-size=8388608 -Wl,--max-memory=4294967296 -lwasi-emulated-mman -lwasi-emulated-signal -lwasi-emulated-process-clocks -lwasi-emulated-getpid")

# The wasm builds of cJSON, PCRE2, utf8proc and zlib (scripts/wasi-deps.sh).
if(NOT MLLM_WASI_PREFIX)
  set(MLLM_WASI_PREFIX "$ENV{MLLM_WASI_PREFIX}")
endif()
if(MLLM_WASI_PREFIX)
  set(ENV{PKG_CONFIG_LIBDIR} "${MLLM_WASI_PREFIX}/lib/pkgconfig:${MLLM_WASI_PREFIX}/share/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "")
  set(CMAKE_FIND_ROOT_PATH ${MLLM_WASI_PREFIX})
endif()
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
