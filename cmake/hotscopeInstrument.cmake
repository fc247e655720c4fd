# hotscope_instrument(<target> [EXCLUDE_FILES <path>...] [EXCLUDE_FUNCTIONS <name>...]
#                     [MODE finstrument|xray] [XRAY_THRESHOLD <instructions>])
# Records every function of <target> (docs/instrument.md): compiles it with
# -finstrument-functions, whose hooks libhotscope defines. GCC leaves out the functions of the
# compiler's system headers (the standard library), of hotscope's headers and of EXCLUDE_FILES (a path, or part of
# one) and EXCLUDE_FUNCTIONS (a name, or part of one); clang, which has no such lists, instruments
# after inlining (-finstrument-functions-after-inlining), so what is inlined is not recorded.
# An executable links hotscope::hotscope and exports the hooks to the shared libraries it loads; a
# shared library only gets the flags (its hooks are the executable's, which must link hotscope).
# MODE xray (clang, executables only): XRay's patchable sleds (hotscope_xray_flags) and
# compiler-rt's XRay runtime, whose handler libhotscope installs at start.
# With hotscope compiled out (HOTSCOPE_ENABLE=OFF) the target is left as it is.
function(hotscope_instrument target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MODE;XRAY_THRESHOLD" "EXCLUDE_FILES;EXCLUDE_FUNCTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "hotscope_instrument: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_MODE)
    set(ARG_MODE finstrument)
  endif()
  if(NOT ARG_MODE MATCHES "^(finstrument|xray)$")
    message(FATAL_ERROR "hotscope_instrument(${target}): MODE ${ARG_MODE}: the modes are "
      "finstrument and xray (docs/instrument.md)")
  endif()
  get_target_property(hotscope_type hotscope::hotscope TYPE)
  get_target_property(type ${target} TYPE)
  if(hotscope_type STREQUAL "INTERFACE_LIBRARY") # compiled out: no hooks to call
    if(type STREQUAL "EXECUTABLE")
      target_link_libraries(${target} PRIVATE hotscope::hotscope)
    endif()
    return()
  endif()
  if(ARG_MODE STREQUAL "xray")
    if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang" OR NOT type STREQUAL "EXECUTABLE"
        OR ARG_EXCLUDE_FILES OR ARG_EXCLUDE_FUNCTIONS)
      message(FATAL_ERROR "hotscope_instrument(${target}): MODE xray needs clang and an "
        "executable (clang 14's XRay instruments no shared library), without exclusion lists "
        "(XRAY_THRESHOLD leaves small functions out; docs/instrument.md)")
    endif()
    hotscope_xray_flags(flags "${ARG_XRAY_THRESHOLD}")
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C,CXX>:${flags}>")
    target_link_options(${target} PRIVATE ${flags})
    target_link_libraries(${target} PRIVATE hotscope::hotscope)
    return()
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # hotscope's own headers too: their record writers must not record (docs/instrument.md).
    set(files ${CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES} include/hotscope/ ${ARG_EXCLUDE_FILES})
    list(REMOVE_DUPLICATES files)
    list(TRANSFORM files REPLACE "," "\\\\,")
    list(JOIN files "," files)
    set(flags -finstrument-functions "-finstrument-functions-exclude-file-list=${files}")
    if(ARG_EXCLUDE_FUNCTIONS)
      list(JOIN ARG_EXCLUDE_FUNCTIONS "," functions)
      list(APPEND flags "-finstrument-functions-exclude-function-list=${functions}")
    endif()
  elseif(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    if(ARG_EXCLUDE_FILES OR ARG_EXCLUDE_FUNCTIONS)
      message(FATAL_ERROR "hotscope_instrument(${target}): clang has no exclusion lists for "
        "-finstrument-functions; build the files to leave out in a target of their own")
    endif()
    set(flags -finstrument-functions-after-inlining)
  else()
    message(FATAL_ERROR "hotscope_instrument(${target}): GCC or clang is needed "
      "(${CMAKE_CXX_COMPILER_ID})")
  endif()
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C,CXX>:${flags}>")
  if(type STREQUAL "EXECUTABLE")
    target_link_libraries(${target} PRIVATE hotscope::hotscope)
    target_link_options(${target} PRIVATE "LINKER:--undefined=__cyg_profile_func_enter"
      "LINKER:--export-dynamic-symbol=__cyg_profile_func_enter"
      "LINKER:--export-dynamic-symbol=__cyg_profile_func_exit")
  endif()
endfunction()

# The XRay flags, for compiling and for linking (clang's driver then links the runtime): sleds in
# every function of at least <threshold> instructions (default 200, clang's) and no logging mode
# of XRay's own, which would write xray-log.* files when XRAY_OPTIONS names one.
function(hotscope_xray_flags out threshold)
  if(NOT threshold)
    set(threshold 200)
  endif()
  set(${out} -fxray-instrument -fxray-instruction-threshold=${threshold} -fxray-modes=none
    PARENT_SCOPE)
endfunction()
