# cmake -DIN=<binary> -DOUT=<file.c> -DNAME=<symbol> -P embed.cmake
# Writes `const unsigned char NAME[]` (8-byte aligned, as cuModuleLoadData wants) holding IN.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" body "${body}")
math(EXPR bytes "${n} / 2")
file(WRITE "${OUT}" "/* generated from ${IN} by embed.cmake; do not edit */\n"
  "__attribute__((aligned(8), visibility(\"hidden\"))) const unsigned char ${NAME}[${bytes}] = {\n${body}};\n"
  "__attribute__((visibility(\"hidden\"))) const unsigned long long ${NAME}_size = ${bytes};\n")
