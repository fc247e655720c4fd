# Builds and runs tests/package/consumer against the hotscope installed in PREFIX; with -DHEAP=1,
# tests/package/consumer-heap (hotscope::heap) instead, and checks its heap profile.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

if(HEAP)
  set(binary ${SCRATCH}/find-package-heap)
  build_consumer(${CMAKE_CURRENT_LIST_DIR}/consumer-heap ${binary} -DCMAKE_PREFIX_PATH=${PREFIX})
  run_heap_consumer(${binary}/consumer ${binary}/out)
else()
  build_and_run_consumer(${CMAKE_CURRENT_LIST_DIR}/consumer ${SCRATCH}/find-package
    -DCMAKE_PREFIX_PATH=${PREFIX})
endif()
