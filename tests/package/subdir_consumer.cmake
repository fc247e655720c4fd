# Builds and runs tests/package/consumer-subdir, which add_subdirectory()s the source tree REPO
# in a parent that builds shared libraries and chose no build type; then checks that hotscope
# left both choices to the parent but linked libhotscope statically, and that the parent's install
# holds only the parent's files.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(binary ${SCRATCH}/add-subdirectory)
# What the consumer needs of the subproject, not its tools: a parent builds what it links.
set(CONSUMER_BUILD_ARGS --target consumer)
build_and_run_consumer(${CMAKE_CURRENT_LIST_DIR}/consumer-subdir ${binary}
  -DHOTSCOPE_REPO=${REPO} -DHOTSCOPE_ENABLE=${EXPECT_ENABLED} -DBUILD_SHARED_LIBS=ON
  -DCMAKE_BUILD_TYPE=)

file(STRINGS ${binary}/CMakeCache.txt build_type REGEX "^CMAKE_BUILD_TYPE:")
if(NOT build_type MATCHES "^CMAKE_BUILD_TYPE:[A-Z]+=$")
  message(FATAL_ERROR "hotscope chose the parent's build type: ${build_type}")
endif()
execute_process(COMMAND ${READELF} -d ${binary}/consumer OUTPUT_VARIABLE dynamic
  COMMAND_ERROR_IS_FATAL ANY)
if(dynamic MATCHES "libhotscope")
  message(FATAL_ERROR "the consumer needs a shared libhotscope:\n${dynamic}")
endif()

set(prefix ${SCRATCH}/add-subdirectory-prefix)
file(REMOVE_RECURSE ${prefix})
run(${CMAKE_COMMAND} --install ${binary} --prefix ${prefix})
file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
if(NOT installed STREQUAL "bin/consumer")
  message(FATAL_ERROR "a subproject's install should be the parent's files only, got: ${installed}")
endif()
