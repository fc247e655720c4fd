# Installs the build tree BUILD's default install component COMPONENT (the library package; the tools are
# component hotscope_tools, tests/heap/installed_run.cmake) into PREFIX (wiped first) and checks
# the package files are there: with -DEXPECT_HEAP=1 also libhotscope-heap.so, the pprof module it
# loads and hotscope-heap.pc, the library with the SONAME libhotscope-heap.so.MAJOR.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

file(REMOVE_RECURSE ${PREFIX})
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX} --component ${COMPONENT})
foreach(file include/hotscope/hotscope.hpp include/hotscope/record.h
    ${LIBDIR}/cmake/hotscope/hotscopeConfig.cmake
    ${LIBDIR}/cmake/hotscope/hotscopeConfigVersion.cmake
    ${LIBDIR}/cmake/hotscope/hotscopeTargets.cmake
    ${LIBDIR}/pkgconfig/hotscope.pc)
  if(NOT EXISTS ${PREFIX}/${file})
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()
# libhotscope is a static archive whatever BUILD_SHARED_LIBS said.
if(EXPECT_ENABLED AND NOT EXISTS ${PREFIX}/${LIBDIR}/libhotscope.a)
  message(FATAL_ERROR "libhotscope.a not installed in ${PREFIX}/${LIBDIR}")
endif()
if(EXISTS ${PREFIX}/${LIBDIR}/libhotscope.so)
  message(FATAL_ERROR "a shared libhotscope was installed: its start-up code would run in every "
    "program hotscope run --heap starts")
endif()
if(EXPECT_HEAP)
  foreach(file libhotscope-heap.so libhotscope-pprof.so pkgconfig/hotscope-heap.pc)
    if(NOT EXISTS ${PREFIX}/${LIBDIR}/${file})
      message(FATAL_ERROR "not installed: ${LIBDIR}/${file}")
    endif()
  endforeach()
  # A versioned SONAME, and the file it names installed beside the link-time name.
  execute_process(COMMAND ${READELF} -d ${PREFIX}/${LIBDIR}/libhotscope-heap.so
    OUTPUT_VARIABLE dynamic COMMAND_ERROR_IS_FATAL ANY)
  if(NOT dynamic MATCHES "\\(SONAME\\)[^\n]*\\[(libhotscope-heap\\.so\\.${MAJOR})\\]")
    message(FATAL_ERROR "libhotscope-heap.so has no SONAME libhotscope-heap.so.${MAJOR}:\n${dynamic}")
  endif()
  if(NOT EXISTS ${PREFIX}/${LIBDIR}/${CMAKE_MATCH_1})
    message(FATAL_ERROR "not installed: ${LIBDIR}/${CMAKE_MATCH_1}, the SONAME")
  endif()
  message(STATUS "libhotscope-heap.so: SONAME ${CMAKE_MATCH_1}")
endif()
