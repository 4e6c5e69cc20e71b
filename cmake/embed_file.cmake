# cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_file.cmake
# Writes OUT defining `const char NAME[]` with IN's bytes and a final NUL:
# sources such as OpenCL C kernels travel inside the library, so a program
# never looks for them on disk.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n" body "${body}")
file(WRITE "${OUT}.tmp" "/* generated from ${IN} by cmake/embed_file.cmake: do not edit */\nconst char ${NAME}[] = {\n${body}0x00};\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
