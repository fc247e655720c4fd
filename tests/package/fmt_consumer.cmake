# Builds tests/package/consumer-fmt (a program with its own {fmt}, another major version,
# header-only) against the hotscope installed in PREFIX, with the system's {fmt} out of reach of
# find_package. Checks that the program needs no libfmt, runs it with HOTSCOPE_OUT, and reads
# the stats.json hotscope wrote in it (docs/architecture.md, "Text").
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)

set(binary ${SCRATCH}/fmt-consumer)
build_consumer(${CMAKE_CURRENT_LIST_DIR}/consumer-fmt ${binary} -DCMAKE_PREFIX_PATH=${PREFIX}
  -DCMAKE_DISABLE_FIND_PACKAGE_fmt=TRUE)
execute_process(COMMAND ${READELF} -d ${binary}/consumer OUTPUT_VARIABLE dynamic
  COMMAND_ERROR_IS_FATAL ANY)
if(dynamic MATCHES "NEEDED[^\n]*libfmt")
  message(FATAL_ERROR "${binary}/consumer needs a libfmt:\n${dynamic}")
endif()

set(out ${binary}/out)
file(REMOVE_RECURSE ${out})
set(ENV{HOTSCOPE_OUT} ${out})
run(${binary}/consumer)
if(NOT EXISTS ${out}/stats.json)
  message(FATAL_ERROR "HOTSCOPE_OUT=${out}: no stats.json")
endif()
file(READ ${out}/stats.json stats)
string(JSON functions GET "${stats}" functions)
if(NOT functions MATCHES "\"iteration\"")
  message(FATAL_ERROR "${out}/stats.json has no function \"iteration\": ${functions}")
endif()
message(STATUS "consumer-fmt ran with its own fmt; no libfmt needed, stats.json written")
