# Checks that the installed libhotscope in PREFIX depends on none of the C++ libraries a service
# may bring itself, at another version (docs/architecture.md): `nm -C --undefined-only` of the
# library names no symbol of their namespaces, and `pkg-config --print-requires
# --print-requires-private hotscope` lists none of their packages.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
cmake_policy(VERSION 3.20) # IN_LIST; empty list elements kept (one per nm line)

# One entry per forbidden library: "<namespace prefix of its demangled symbols>=<pkg-config name>".
set(FORBIDDEN
  "google::protobuf::=protobuf"
  "google::protobuf::=protobuf-lite"
  "prometheus::=prometheus-cpp-core"
  "prometheus::=prometheus-cpp-pull"
  "prometheus::=prometheus-cpp-push")

if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (Debian: apt-get install pkgconf)")
endif()
if(EXISTS ${PREFIX}/${LIBDIR}/libhotscope.a)
  set(library ${PREFIX}/${LIBDIR}/libhotscope.a)
  set(table "")
elseif(EXISTS ${PREFIX}/${LIBDIR}/libhotscope.so)
  set(library ${PREFIX}/${LIBDIR}/libhotscope.so)
  set(table -D)
else()
  message(FATAL_ERROR "libhotscope not installed in ${PREFIX}/${LIBDIR}")
endif()
execute_process(COMMAND ${NM} -C --undefined-only ${table} ${library}
  OUTPUT_VARIABLE undefined COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE ";" "," undefined "${undefined}")
string(REPLACE "\n" ";" undefined "${undefined}")
list(LENGTH undefined undefined_count)
if(undefined_count LESS 10)
  message(FATAL_ERROR "nm -C --undefined-only ${library}: only ${undefined_count} lines, "
    "is it the library? ${undefined}")
endif()

set(ENV{PKG_CONFIG_PATH} ${PREFIX}/${LIBDIR}/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --print-requires --print-requires-private hotscope
  OUTPUT_VARIABLE requires COMMAND_ERROR_IS_FATAL ANY)
# One package name per list element ("fmt >= 9" keeps its name first).
string(REGEX REPLACE "[ \t]*[<>=!]+[ \t]*[^ \t\n]+" "" requires "${requires}")
string(REGEX REPLACE "[ \t\n,]+" ";" requires "${requires}")
list(FILTER requires EXCLUDE REGEX "^$")

set(problems "")
foreach(entry IN LISTS FORBIDDEN)
  string(REPLACE "=" ";" entry "${entry}")
  list(GET entry 0 namespace)
  list(GET entry 1 package)
  # The namespace at the start of a name, or inside one ("typeinfo for ...", template arguments).
  set(found ${undefined})
  list(FILTER found INCLUDE REGEX "[ (<,*&]${namespace}")
  if(found)
    list(GET found 0 first)
    string(STRIP "${first}" first)
    list(LENGTH found count)
    list(APPEND problems "${library} needs ${count} symbols of ${namespace}, such as: ${first}")
  endif()
  if(package IN_LIST requires)
    list(APPEND problems "hotscope.pc requires ${package}")
  endif()
endforeach()
if(problems)
  list(REMOVE_DUPLICATES problems)
  list(JOIN problems "\n  " problems)
  message(FATAL_ERROR "libhotscope depends on a forbidden C++ library:\n  ${problems}")
endif()
list(JOIN requires " " requires)
message(STATUS "${library}: ${undefined_count} undefined symbols, none forbidden; "
  "hotscope.pc requires: ${requires}")
