# Fails if the static library LIBRARY names a symbol, defined or undefined, of one of the
# namespaces in FORBIDDEN (such as fmt::): libhotscope links no C++ library but the standard one,
# and holds no copy of one either (docs/architecture.md, "Text"). To show the check can fail, the
# library must name some hotscope:: symbols.

cmake_policy(SET CMP0007 NEW) # keep empty list elements: one per nm line

# -A: each line starts with the archive member the symbol is in.
execute_process(COMMAND ${NM} -C -A ${LIBRARY} OUTPUT_VARIABLE listing RESULT_VARIABLE status
  ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} -C -A ${LIBRARY} failed: ${errors}")
endif()
# One list element per line, then filters: a regex over the whole listing backtracks badly.
string(REPLACE ";" "," listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(own ${lines})
list(FILTER own INCLUDE REGEX "hotscope::")
list(LENGTH own own_count)
if(own_count EQUAL 0)
  message(FATAL_ERROR "${LIBRARY} has no hotscope:: symbols: is it libhotscope?")
endif()
set(found "")
foreach(namespace IN LISTS FORBIDDEN)
  set(matches ${lines})
  list(FILTER matches INCLUDE REGEX "(^|[^A-Za-z0-9_])${namespace}")
  list(APPEND found ${matches})
endforeach()
if(found)
  list(REMOVE_DUPLICATES found)
  list(LENGTH found count)
  list(SUBLIST found 0 10 shown)
  list(JOIN shown "\n  " shown)
  message(FATAL_ERROR "${LIBRARY} names ${count} symbols of ${FORBIDDEN}, such as:\n  ${shown}")
endif()
message(STATUS "${LIBRARY}: no symbol of ${FORBIDDEN} (${own_count} hotscope:: lines)")
