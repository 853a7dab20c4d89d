# cmake -DOUT=<file.cpp> -DSOURCES="a.md;b.md" -P EmbedFiles.cmake
# Writes a C++ file that holds each rules/<name>.md as a byte array, so the
# binaries need no file at run time.
set(body "// Generated from rules/*.md by cmake/EmbedFiles.cmake; do not edit.\n#include <string_view>\n#include \"catalogue_sources.h\"\nnamespace gpudiag::detail {\nnamespace {\n")
set(entries "")
set(index 0)
foreach(src IN LISTS SOURCES)
  file(READ "${src}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  get_filename_component(name "${src}" NAME_WE)
  string(APPEND body "constexpr char md${index}[] = {${bytes}'\\0'};\n")
  string(APPEND entries "  {\"${name}\", std::string_view(md${index}, sizeof(md${index}) - 1)},\n")
  math(EXPR index "${index} + 1")
endforeach()
string(APPEND body "}  // namespace\nconst CatalogueSource kCatalogueSources[] = {\n${entries}};\nconst std::size_t kCatalogueSourceCount = ${index};\n}  // namespace gpudiag::detail\n")
file(WRITE "${OUT}.tmp" "${body}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
