# Run with hotscope compiled out (HOTSCOPE_ENABLE=OFF, the `disabled` preset): PROGRAM, built with
# hotscope_instrument(MODE <MODE>), must be a plain build (docs/instrument.md): no call of the
# -finstrument-functions hooks, no XRay sled or runtime, no symbol of hotscope; and it runs
# (HOTSCOPE_OUT set, HOTSCOPE_XRAY=on) writing nothing.

cmake_policy(SET CMP0007 NEW) # keep empty list elements: one per nm line

execute_process(COMMAND ${NM} -C ${PROGRAM} OUTPUT_VARIABLE symbols RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${NM} -C ${PROGRAM} failed")
endif()
string(REPLACE "\n" ";" lines "${symbols}")
list(FILTER lines INCLUDE REGEX "__cyg_profile_func|__xray|hotscope")
if(lines)
  list(JOIN lines "\n  " lines)
  message(FATAL_ERROR "MODE ${MODE}, HOTSCOPE_ENABLE=OFF, yet ${PROGRAM} has:\n  ${lines}")
endif()

execute_process(COMMAND ${READELF} -S -W ${PROGRAM} OUTPUT_VARIABLE sections RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${READELF} -S ${PROGRAM} failed")
endif()
if(sections MATCHES "xray_instr_map|xray_fn_idx")
  message(FATAL_ERROR "MODE ${MODE}, HOTSCOPE_ENABLE=OFF, yet ${PROGRAM} has XRay sleds")
endif()

file(REMOVE_RECURSE ${SCRATCH}/compiled_out_${MODE})
file(MAKE_DIRECTORY ${SCRATCH}/compiled_out_${MODE})
execute_process(COMMAND ${CMAKE_COMMAND} -E env HOTSCOPE_OUT=${SCRATCH}/compiled_out_${MODE}/out
    HOTSCOPE_XRAY=on ${PROGRAM}
  WORKING_DIRECTORY ${SCRATCH}/compiled_out_${MODE} RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} failed: ${status}")
endif()
file(GLOB written ${SCRATCH}/compiled_out_${MODE}/*)
if(written)
  message(FATAL_ERROR "MODE ${MODE}, HOTSCOPE_ENABLE=OFF, yet ${PROGRAM} wrote: ${written}")
endif()
message(STATUS "${PROGRAM} (MODE ${MODE}) is a plain build and runs")
