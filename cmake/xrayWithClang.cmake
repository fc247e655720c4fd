# XRay objects in a build whose compiler is GCC (tests/instrument, bench/): clang compiles them
# with hotscope_xray_flags, and the executable links compiler-rt's XRay runtime by hand, as
# clang's driver would (hotscope_instrument(MODE xray) does this in a clang build).

# HOTSCOPE_XRAY_CLANG and HOTSCOPE_XRAY_RUNTIME, or HOTSCOPE_XRAY_MISSING: why there is none.
find_program(HOTSCOPE_XRAY_CLANG NAMES clang++-14 clang++)
set(HOTSCOPE_XRAY_MISSING "")
if(NOT HOTSCOPE_XRAY_CLANG)
  set(HOTSCOPE_XRAY_MISSING "clang++ not found (scripts/packages.txt installs clang-14)")
else()
  execute_process(COMMAND ${HOTSCOPE_XRAY_CLANG} --print-runtime-dir
    OUTPUT_VARIABLE xray_runtime_dir OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(HOTSCOPE_XRAY_RUNTIME ${xray_runtime_dir}/libclang_rt.xray-x86_64.a)
  if(NOT EXISTS ${HOTSCOPE_XRAY_RUNTIME})
    set(HOTSCOPE_XRAY_MISSING
      "${HOTSCOPE_XRAY_RUNTIME} not found (scripts/packages.txt installs libclang-rt-14-dev)")
  endif()
endif()

# <out>: the object clang compiles of <source> (in the current source directory), with XRay's
# sleds in every function when XRAY is given, with -O2 -g and the definitions <define>... .
function(hotscope_clang_object out source)
  cmake_parse_arguments(PARSE_ARGV 2 ARG "XRAY" "" "DEFINES")
  set(flags)
  set(suffix "")
  if(ARG_XRAY)
    hotscope_xray_flags(flags 1)
    set(suffix .xray)
  endif()
  list(TRANSFORM ARG_DEFINES PREPEND -D)
  get_filename_component(name ${source} NAME_WE)
  set(object ${CMAKE_CURRENT_BINARY_DIR}/${name}${suffix}.o)
  add_custom_command(OUTPUT ${object}
    COMMAND ${HOTSCOPE_XRAY_CLANG} -std=c++17 -O2 -g -fPIE ${flags} ${ARG_DEFINES}
      -I${PROJECT_SOURCE_DIR}/include -c ${CMAKE_CURRENT_SOURCE_DIR}/${source} -o ${object}
    DEPENDS ${source} VERBATIM)
  set(${out} ${object} PARENT_SCOPE)
endfunction()

# Links compiler-rt's XRay runtime, whole, into <target>.
function(hotscope_link_xray_runtime target)
  target_link_libraries(${target} PRIVATE
    "-Wl,--whole-archive ${HOTSCOPE_XRAY_RUNTIME} -Wl,--no-whole-archive" Threads::Threads rt m dl)
endfunction()
