# Compiles tests/package/consumer/main.cpp with g++ and `pkg-config --cflags --libs hotscope`
# from the hotscope installed in PREFIX, then runs it. With -DHEAP=linked: consumer-heap/main.cpp
# with `pkg-config --cflags --libs hotscope hotscope-heap`, and checks its heap profile.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (Debian: apt-get install pkgconf)")
endif()
if(HEAP)
  set(packages hotscope hotscope-heap)
  set(source ${CMAKE_CURRENT_LIST_DIR}/consumer-heap/main.cpp)
  set(binary ${SCRATCH}/pkg-config-heap)
else()
  set(packages hotscope)
  set(source ${CMAKE_CURRENT_LIST_DIR}/consumer/main.cpp)
  set(binary ${SCRATCH}/pkg-config)
endif()
set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ${packages}
  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
message(STATUS "pkg-config --cflags --libs ${packages}: ${flags}")
# The agent's HTTP server is hotscope's own: no libmicrohttpd (and its TLS stack) for consumers.
if(flags MATCHES "microhttpd")
  message(FATAL_ERROR "pkg-config --cflags --libs ${packages} names libmicrohttpd: ${flags}")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(extra UNIX_COMMAND "${CXX_FLAGS}")

file(REMOVE_RECURSE ${binary})
file(MAKE_DIRECTORY ${binary})
run(${CXX} -std=c++17 ${extra} -DCONSUMER_EXPECT_ENABLED=${EXPECT_ENABLED}
  ${source} ${flags} -o ${binary}/consumer)
# Shared libraries are looked up at run time; this prefix is not on the loader's path.
set(ENV{LD_LIBRARY_PATH} ${PREFIX}/${LIBDIR})
execute_process(COMMAND ldd ${binary}/consumer OUTPUT_VARIABLE libraries)
if(libraries MATCHES "libmicrohttpd|libgnutls")
  message(FATAL_ERROR "the consumer loads libmicrohttpd or GnuTLS:\n${libraries}")
endif()
if(HEAP)
  run_heap_consumer(${binary}/consumer ${binary}/out)
else()
  run(${binary}/consumer)
endif()
