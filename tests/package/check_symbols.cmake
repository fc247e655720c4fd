# Fails if the uninstrumented binary DISABLED has any symbol (static or dynamic) mentioning
# hotscope. To show the check can fail, the instrumented binary INSTRUMENTED must have some when
# EXPECT_ENABLED is 1, and none otherwise (its library is then headers only).

cmake_policy(SET CMP0007 NEW) # keep empty list elements: one per nm line

function(hotscope_symbols binary out)
  set(symbols "")
  foreach(table "" -D)
    execute_process(COMMAND ${NM} -C ${table} ${binary}
      OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE status)
    # nm fails on a binary without a dynamic symbol table; that table then has nothing to find.
    if(NOT status EQUAL 0 AND NOT errors MATCHES "no symbols")
      message(FATAL_ERROR "${NM} -C ${table} ${binary} failed: ${errors}")
    endif()
    # One list element per line, then a filter: a regex over the whole listing backtracks
    # quadratically and takes minutes on a large debug binary.
    string(TOLOWER "${listing}" listing)
    string(REPLACE ";" "," listing "${listing}")
    string(REPLACE "\n" ";" lines "${listing}")
    list(FILTER lines INCLUDE REGEX "hotscope")
    list(APPEND symbols ${lines})
  endforeach()
  set(${out} "${symbols}" PARENT_SCOPE)
endfunction()

hotscope_symbols(${DISABLED} disabled)
if(disabled)
  list(JOIN disabled "\n  " disabled)
  message(FATAL_ERROR "${DISABLED} contains hotscope symbols:\n  ${disabled}")
endif()

hotscope_symbols(${INSTRUMENTED} instrumented)
list(LENGTH instrumented count)
if(EXPECT_ENABLED AND count EQUAL 0)
  message(FATAL_ERROR "${INSTRUMENTED} has no hotscope symbols: is it really instrumented?")
elseif(NOT EXPECT_ENABLED AND count GREATER 0)
  list(JOIN instrumented "\n  " instrumented)
  message(FATAL_ERROR "HOTSCOPE_ENABLE=OFF, yet ${INSTRUMENTED} has:\n  ${instrumented}")
endif()
message(STATUS "no hotscope symbols in ${DISABLED}; ${count} in ${INSTRUMENTED}")
