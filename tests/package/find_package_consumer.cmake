# Builds and runs tests/package/consumer against the hotscope installed in PREFIX.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

build_and_run_consumer(${CMAKE_CURRENT_LIST_DIR}/consumer ${SCRATCH}/find-package
  -DCMAKE_PREFIX_PATH=${PREFIX})
