# Helpers for the package test scripts (run with cmake -P).

# run(<command>...): runs a command, echoing it; any failure ends the test.
function(run)
  list(JOIN ARGN " " line)
  message(STATUS "$ ${line}")
  execute_process(COMMAND ${ARGN} COMMAND_ERROR_IS_FATAL ANY)
endfunction()

# Configures, builds and runs a consumer project from SOURCE in the fresh directory BINARY,
# with the outer build's compiler, build type and sanitizer flags. Extra -D options follow.
function(build_and_run_consumer source binary)
  file(REMOVE_RECURSE ${binary})
  run(${CMAKE_COMMAND} -S ${source} -B ${binary} -G Ninja
    -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}
    -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS}"
    -DEXPECT_ENABLED=${EXPECT_ENABLED}
    ${ARGN})
  run(${CMAKE_COMMAND} --build ${binary})
  run(${binary}/consumer)
endfunction()
