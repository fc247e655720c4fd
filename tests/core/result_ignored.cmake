# Compiles SOURCE, which drops a hotscope::Result, in both builds with -Werror: it must fail and
# the compiler must say the value is discarded.
foreach(enabled 0 1)
  execute_process(
    COMMAND ${CXX} -std=c++20 -Werror -fsyntax-only -I${INCLUDE} -DHOTSCOPE_ENABLED=${enabled} ${SOURCE}
    RESULT_VARIABLE status ERROR_VARIABLE output OUTPUT_QUIET)
  if(status EQUAL 0)
    message(FATAL_ERROR "HOTSCOPE_ENABLED=${enabled}: dropping a hotscope::Result compiled")
  endif()
  if(NOT output MATCHES "nodiscard|unused-result|ignoring return value")
    message(FATAL_ERROR "HOTSCOPE_ENABLED=${enabled}: failed for another reason:\n${output}")
  endif()
endforeach()
