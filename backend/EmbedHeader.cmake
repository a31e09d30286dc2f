# Writes the text of the header IN as a C++ raw string literal to OUT (for
# tdslc --self-contained, which pastes the installed headers into the .cu).
# Run as: cmake -DIN=... -DOUT=... -P EmbedHeader.cmake
file(READ ${IN} text)
string(FIND "${text}" ")TDSL_HEADER\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw string's delimiter")
endif()
file(WRITE ${OUT} "R\"TDSL_HEADER(${text})TDSL_HEADER\"\n")
