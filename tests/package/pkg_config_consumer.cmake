# Compiles tests/package/consumer/main.cpp with g++ and `pkg-config --cflags --libs hotscope`
# from the hotscope installed in PREFIX, then runs it.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (Debian: apt-get install pkgconf)")
endif()
set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs hotscope
  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
message(STATUS "pkg-config --cflags --libs hotscope: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(extra UNIX_COMMAND "${CXX_FLAGS}")

set(binary ${SCRATCH}/pkg-config)
file(REMOVE_RECURSE ${binary})
file(MAKE_DIRECTORY ${binary})
run(${CXX} -std=c++17 ${extra} -DCONSUMER_EXPECT_ENABLED=${EXPECT_ENABLED}
  ${CMAKE_CURRENT_LIST_DIR}/consumer/main.cpp ${flags} -o ${binary}/consumer)
# Only a shared libhotscope is looked up at run time; this prefix is not on the loader's path.
set(ENV{LD_LIBRARY_PATH} ${PREFIX}/${LIBDIR})
run(${binary}/consumer)
