# Builds and runs tests/package/consumer-subdir, which add_subdirectory()s the source tree REPO,
# then checks that the parent's install holds only the parent's files.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(binary ${SCRATCH}/add-subdirectory)
build_and_run_consumer(${CMAKE_CURRENT_LIST_DIR}/consumer-subdir ${binary}
  -DHOTSCOPE_REPO=${REPO} -DHOTSCOPE_ENABLE=${EXPECT_ENABLED})

set(prefix ${SCRATCH}/add-subdirectory-prefix)
file(REMOVE_RECURSE ${prefix})
run(${CMAKE_COMMAND} --install ${binary} --prefix ${prefix})
file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
if(NOT installed STREQUAL "bin/consumer")
  message(FATAL_ERROR "a subproject's install should be the parent's files only, got: ${installed}")
endif()
