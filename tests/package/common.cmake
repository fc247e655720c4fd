# Helpers for the package test scripts (run with cmake -P).

# run(<command>...): runs a command, echoing it; any failure ends the test.
function(run)
  list(JOIN ARGN " " line)
  message(STATUS "$ ${line}")
  execute_process(COMMAND ${ARGN} COMMAND_ERROR_IS_FATAL ANY)
endfunction()

# Configures and builds a consumer project from SOURCE in the fresh directory BINARY, with the
# outer build's compiler, build type and sanitizer flags. Extra -D options follow. The caller's
# CONSUMER_BUILD_ARGS, when set, go to the build (--target consumer: not the whole subproject).
function(build_consumer source binary)
  file(REMOVE_RECURSE ${binary})
  run(${CMAKE_COMMAND} -S ${source} -B ${binary} -G Ninja
    -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}
    -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_BUILD_TYPE=${BUILD_TYPE}
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CXX_FLAGS}"
    -DEXPECT_ENABLED=${EXPECT_ENABLED}
    ${ARGN})
  run(${CMAKE_COMMAND} --build ${binary} ${CONSUMER_BUILD_ARGS})
endfunction()

# build_consumer, then runs BINARY/consumer.
function(build_and_run_consumer source binary)
  build_consumer(${source} ${binary} ${ARGN})
  run(${binary}/consumer)
endfunction()

# Runs PROGRAM, built from consumer-heap/main.cpp against an installed hotscope::heap, with
# HOTSCOPE_HEAP_MODE=full and HOTSCOPE_OUT=OUT (wiped first), then checks what it wrote at exit:
# heap.json holds consumer_heap_site's two blocks (new char[100003], malloc(20011)) in its Total
# and At t-end, and heap.pb.gz is there (the installed libhotscope-heap.so found the pprof
# module next to it).
function(run_heap_consumer program out)
  file(REMOVE_RECURSE ${out})
  set(ENV{HOTSCOPE_HEAP_MODE} full)
  set(ENV{HOTSCOPE_OUT} ${out})
  run(${program})
  if(NOT EXISTS ${out}/heap.json OR NOT EXISTS ${out}/heap.pb.gz)
    message(FATAL_ERROR "HOTSCOPE_OUT=${out}: heap.json or heap.pb.gz missing")
  endif()
  file(READ ${out}/heap.json profile)
  # The frames naming the site, then the sites with one of them in their stack.
  string(JSON frames GET "${profile}" ftbl)
  string(JSON frame_count LENGTH "${frames}")
  set(site_frames "")
  math(EXPR last "${frame_count} - 1")
  foreach(index RANGE 1 ${last})
    string(JSON frame GET "${frames}" ${index})
    if(frame MATCHES "consumer_heap_site")
      list(APPEND site_frames ${index})
    endif()
  endforeach()
  string(JSON sites GET "${profile}" pps)
  string(JSON site_count LENGTH "${sites}")
  set(counts "")
  math(EXPR last "${site_count} - 1")
  foreach(index RANGE ${last})
    string(JSON site GET "${sites}" ${index})
    string(JSON stack GET "${site}" fs)
    string(REGEX MATCHALL "[0-9]+" stack "${stack}")
    foreach(frame IN LISTS site_frames)
      list(FIND stack ${frame} at)
      if(at GREATER -1)
        foreach(key tb tbk eb ebk)
          string(JSON value GET "${site}" ${key})
          list(APPEND counts "${key}=${value}")
        endforeach()
        break()
      endif()
    endforeach()
  endforeach()
  list(SORT counts)
  set(expected "eb=100003;eb=20011;ebk=1;ebk=1;tb=100003;tb=20011;tbk=1;tbk=1")
  if(NOT counts STREQUAL expected)
    message(FATAL_ERROR "${out}/heap.json: consumer_heap_site's sites (frames ${site_frames}) "
      "have '${counts}', expected '${expected}'")
  endif()
  message(STATUS "${out}/heap.json: consumer_heap_site's two blocks, 100003 and 20011 bytes")
endfunction()
