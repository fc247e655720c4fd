# Builds and runs tests/package/consumer (and its copy built with hotscope_instrument) against the
# hotscope installed in PREFIX, with nlohmann_json out of its reach. With
# -DHEAP=linked, tests/package/consumer-heap (hotscope::heap) instead, and checks its heap profile;
# with -DHEAP=missing (a package without the heap library), checks that consumer-heap's
# find_package(... COMPONENTS heap) fails and says why.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(heap_consumer ${CMAKE_CURRENT_LIST_DIR}/consumer-heap)
if(HEAP STREQUAL "linked")
  set(binary ${SCRATCH}/find-package-heap)
  build_consumer(${heap_consumer} ${binary} -DCMAKE_PREFIX_PATH=${PREFIX})
  run_heap_consumer(${binary}/consumer ${binary}/out)
elseif(HEAP STREQUAL "missing")
  set(binary ${SCRATCH}/find-package-heap-missing)
  file(REMOVE_RECURSE ${binary})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${heap_consumer} -B ${binary} -G Ninja
      -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX}
      -DCMAKE_PREFIX_PATH=${PREFIX}
    RESULT_VARIABLE result OUTPUT_QUIET ERROR_VARIABLE error)
  if(result EQUAL 0 OR NOT error MATCHES "has[ \n]+no[ \n]+component[ \n]+heap")
    message(FATAL_ERROR "find_package(hotscope CONFIG REQUIRED COMPONENTS heap) in a package "
      "without hotscope::heap: expected a failure naming the component, got ${result}: ${error}")
  endif()
  message(STATUS "find_package(hotscope ... COMPONENTS heap) failed as expected")
else()
  # nlohmann_json is private to the library (header-only, used inside it): a consumer that
  # cannot find it must still find hotscope.
  build_and_run_consumer(${CMAKE_CURRENT_LIST_DIR}/consumer ${SCRATCH}/find-package
    -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=TRUE)
  run(${SCRATCH}/find-package/consumer_instrumented)
endif()
