# hotscope_instrument(<target> [EXCLUDE_FILES <path>...] [EXCLUDE_FUNCTIONS <name>...]
#                     [MODE finstrument])
# Records every function of <target> (docs/instrument.md): compiles it with
# -finstrument-functions, whose hooks libhotscope defines. GCC leaves out the functions of the
# compiler's system headers (the standard library), of hotscope's headers and of EXCLUDE_FILES (a path, or part of
# one) and EXCLUDE_FUNCTIONS (a name, or part of one); clang, which has no such lists, instruments
# after inlining (-finstrument-functions-after-inlining), so what is inlined is not recorded.
# An executable links hotscope::hotscope and exports the hooks to the shared libraries it loads; a
# shared library only gets the flags (its hooks are the executable's, which must link hotscope).
# With hotscope compiled out (HOTSCOPE_ENABLE=OFF) the target is left as it is.
function(hotscope_instrument target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MODE" "EXCLUDE_FILES;EXCLUDE_FUNCTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "hotscope_instrument: unknown arguments: ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT ARG_MODE)
    set(ARG_MODE finstrument)
  endif()
  if(NOT ARG_MODE STREQUAL "finstrument")
    message(FATAL_ERROR "hotscope_instrument(${target}): MODE ${ARG_MODE}: this hotscope has the "
      "mode finstrument only (docs/instrument.md)")
  endif()
  get_target_property(hotscope_type hotscope::hotscope TYPE)
  get_target_property(type ${target} TYPE)
  if(hotscope_type STREQUAL "INTERFACE_LIBRARY") # compiled out: no hooks to call
    if(type STREQUAL "EXECUTABLE")
      target_link_libraries(${target} PRIVATE hotscope::hotscope)
    endif()
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
