# Writes INPUT as a C++ raw string literal named SYMBOL into OUTPUT (a header).
# Usage: cmake -DINPUT=file -DOUTPUT=header -DSYMBOL=name [-DNAMESPACE=ns] -P embed_text.cmake
if(NOT DEFINED NAMESPACE)
  set(NAMESPACE agent)
endif()
file(READ "${INPUT}" content)
set(delimiter "__EMBED__")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )${delimiter}\"")
endif()
get_filename_component(name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${name} by embed_text.cmake; edit the source file, not this one.\n"
  "#pragma once\n\n#include <string_view>\n\nnamespace ${NAMESPACE} {\n\n"
  "inline constexpr std::string_view ${SYMBOL} = R\"${delimiter}(${content})${delimiter}\";\n\n"
  "}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
