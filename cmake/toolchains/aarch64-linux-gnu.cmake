# Cross-build for 64-bit Arm Linux (phones' and Arm servers' ABI) on a
# Debian 12 x86-64 machine: gcc-aarch64-linux-gnu, the arm64 dev libraries
# from Debian multiarch (scripts/deps.sh --aarch64), and qemu-user to run the
# tests: ctest prefixes every test executable with the emulator below;
# QEMU_CPU (max, cortex-a57, ...) picks the CPU model it emulates.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
# Multiarch: the arm64 libraries and .pc files live in /usr/lib/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# No -L /usr/aarch64-linux-gnu: the arm64 -dev packages bring Debian's own
# arm64 libc (libc6:arm64, /lib/ld-linux-aarch64.so.1), and mixing it with
# the cross toolchain's copy under /usr/aarch64-linux-gnu makes every fork()
# hang under qemu-user 7.2 (tests that fork, e.g. test_kernels_ops).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
