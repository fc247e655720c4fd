# One CMake target per component folder under src/ (docs/architecture.md, "Floors").
#
# hotscope_component(<folder> [OBJECT|STATIC|HEADERS] [DEPENDS <component>...]
#                    [LINK <target>...] [PRIVATE_LINK <target>...])
# defines hotscope_<name> (<name>: <folder> with '/' as '_'). Its include path holds its own
# folder's headers and those of the components it DEPENDS on, and nothing else: the headers are
# staged as links under <build>/components/<name>/<folder>/, so `#include "clock/clock.hpp"`
# reads as before, and a component that includes a header of one it does not depend on (one
# above it) does not compile.
# OBJECT: the component is part of libhotscope (src/CMakeLists.txt gathers the objects); with
# APART, objects linked into other libraries instead (the heap libraries' interposer).
# STATIC: a library of its own (the heap profiler's core); HEADERS: header-only.
# LINK: what its headers and objects need (external libraries), handed on to its users;
# PRIVATE_LINK: what only its objects need.
#
# hotscope_use_components(<target> <PUBLIC|PRIVATE|INTERFACE> <component>...) gives any target
# (a tool, a test, a heap library) the include path of those components and what they LINK; code
# of OBJECT components comes from libhotscope, which the caller links itself.

function(hotscope_component folder)
  cmake_parse_arguments(COMPONENT "OBJECT;APART;STATIC;HEADERS" "" "DEPENDS;LINK;PRIVATE_LINK" ${ARGN})
  if(NOT COMPONENT_STATIC AND NOT COMPONENT_HEADERS)
    set(COMPONENT_OBJECT TRUE)
  endif()
  string(REPLACE "/" "_" name ${folder})
  set(target hotscope_${name})
  set(stage ${PROJECT_BINARY_DIR}/components/${name})
  file(GLOB headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${folder}/*.hpp
    ${PROJECT_SOURCE_DIR}/src/${folder}/*.h)
  file(REMOVE_RECURSE ${stage})
  file(MAKE_DIRECTORY ${stage}/${folder})
  foreach(header ${headers})
    get_filename_component(file_name ${header} NAME)
    file(CREATE_LINK ${header} ${stage}/${folder}/${file_name} SYMBOLIC)
  endforeach()

  # The include path of this component and of everything below it, for its users.
  set(includes ${stage})
  set(links ${COMPONENT_LINK})
  foreach(dependency ${COMPONENT_DEPENDS})
    string(REPLACE "/" "_" dependency ${dependency})
    get_property(dependency_includes GLOBAL PROPERTY HOTSCOPE_INCLUDES_${dependency})
    get_property(dependency_links GLOBAL PROPERTY HOTSCOPE_LINKS_${dependency})
    get_property(dependency_type GLOBAL PROPERTY HOTSCOPE_TYPE_${dependency})
    if(NOT dependency_type)
      message(FATAL_ERROR "hotscope: component ${folder} depends on ${dependency}, which is not "
        "defined before it (src/CMakeLists.txt adds the folders bottom floor first)")
    endif()
    list(APPEND includes ${dependency_includes})
    list(APPEND links ${dependency_links})
    if(dependency_type STREQUAL "STATIC")
      list(APPEND links hotscope_${dependency})
    elseif(dependency_type STREQUAL "OBJECT" AND (COMPONENT_APART OR NOT COMPONENT_OBJECT))
      list(APPEND links hotscope) # a library of its own takes libhotscope's code from libhotscope
    endif()
  endforeach()
  list(REMOVE_DUPLICATES includes)
  list(REMOVE_DUPLICATES links)

  if(COMPONENT_HEADERS)
    set(type HEADERS)
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${includes})
    target_link_libraries(${target} INTERFACE ${links})
  else()
    file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${folder}/*.cpp)
    if(COMPONENT_STATIC)
      set(type STATIC)
      add_library(${target} STATIC ${sources})
    else()
      set(type OBJECT)
      add_library(${target} OBJECT ${sources})
    endif()
    target_include_directories(${target} PUBLIC ${includes})
    target_link_libraries(${target} PUBLIC ${links} PRIVATE ${COMPONENT_PRIVATE_LINK})
    target_compile_options(${target} PRIVATE -fno-omit-frame-pointer)
  endif()
  set_property(GLOBAL PROPERTY HOTSCOPE_INCLUDES_${name} ${includes})
  set_property(GLOBAL PROPERTY HOTSCOPE_LINKS_${name} ${links})
  set_property(GLOBAL PROPERTY HOTSCOPE_TYPE_${name} ${type})
  if(type STREQUAL "OBJECT" AND NOT COMPONENT_APART)
    set_property(GLOBAL APPEND PROPERTY HOTSCOPE_LIBRARY_COMPONENTS ${target})
  endif()
  set_property(GLOBAL APPEND PROPERTY HOTSCOPE_ALL_COMPONENTS ${name})
endfunction()

function(hotscope_use_components target scope)
  foreach(component ${ARGN})
    string(REPLACE "/" "_" component ${component})
    get_property(type GLOBAL PROPERTY HOTSCOPE_TYPE_${component})
    if(NOT type)
      message(FATAL_ERROR "hotscope: ${target} uses the component ${component}, which is not built")
    endif()
    get_property(includes GLOBAL PROPERTY HOTSCOPE_INCLUDES_${component})
    get_property(links GLOBAL PROPERTY HOTSCOPE_LINKS_${component})
    target_include_directories(${target} ${scope} ${includes})
    target_link_libraries(${target} ${scope} ${links})
    if(type STREQUAL "STATIC")
      target_link_libraries(${target} ${scope} hotscope_${component})
    endif()
  endforeach()
endfunction()
