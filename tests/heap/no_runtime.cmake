# Fails if a heap library (LIBRARIES, ';'-separated) holds libhotscope's runtime or trace
# collector: taken from libhotscope.a by a reference that pulls them in (a call to dlclose takes
# libhotscope's own, and the collector with it), they would start a second runtime in every
# program the library is loaded into, and the program's own records would go to it.
cmake_policy(SET CMP0007 NEW)
foreach(library ${LIBRARIES})
  execute_process(COMMAND ${NM} -C ${library} OUTPUT_VARIABLE listing COMMAND_ERROR_IS_FATAL ANY)
  string(REPLACE ";" "," listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  list(FILTER lines INCLUDE REGEX "hotscope::(runtime|trace)::")
  if(lines)
    list(GET lines 0 first)
    list(LENGTH lines count)
    message(FATAL_ERROR "${library} holds ${count} symbols of libhotscope's runtime or trace "
      "collector, such as: ${first}")
  endif()
  message(STATUS "${library}: no runtime, no collector")
endforeach()
