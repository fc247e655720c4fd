# The literal queue macros given a name that is not a literal (a std::string, a const char*
# variable, c_str()) do not compile, in the instrumented and the compiled-out build alike, and the
# error says to use hotscope::Queue. The literal cases compile, so the check can fail.
# Run with -DCXX= -DINCLUDE= -DSOURCE=.
foreach(enabled 1 0)
  foreach(case 0 1 2 3)
    execute_process(
      COMMAND ${CXX} -std=c++17 -fsyntax-only -Wall -Wextra -Werror -I${INCLUDE}
        -DHOTSCOPE_ENABLED=${enabled} -DCASE=${case} ${SOURCE}
      RESULT_VARIABLE status ERROR_VARIABLE errors OUTPUT_QUIET)
    set(label "HOTSCOPE_ENABLED=${enabled} CASE=${case}")
    if(case EQUAL 0)
      if(NOT status EQUAL 0)
        message(FATAL_ERROR "${label}: literal names must compile:\n${errors}")
      endif()
    elseif(status EQUAL 0)
      message(FATAL_ERROR "${label}: a name that is not a literal compiled")
    elseif(NOT errors MATCHES "take a string literal as the queue's name; for a name known only at run time, use hotscope::Queue")
      message(FATAL_ERROR "${label}: the error does not point at hotscope::Queue:\n${errors}")
    else()
      message(STATUS "${label}: refused, pointing at hotscope::Queue")
    endif()
  endforeach()
endforeach()
