# Checks that the installed libhotscope in PREFIX holds and needs none of the C++ libraries a
# service may bring itself, at another version (docs/architecture.md): `nm -C` of the library
# (defined symbols too: a header-only library leaves its code in ours) names no symbol of their
# namespaces, and `pkg-config --print-requires --print-requires-private hotscope` lists none of
# their packages.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
cmake_policy(VERSION 3.20) # IN_LIST; empty list elements kept (one per nm line)

# One entry per forbidden library: "<namespace prefix of its demangled symbols>=<pkg-config name>".
set(FORBIDDEN
  "fmt::=fmt"
  "nlohmann::=nlohmann_json"
  "google::protobuf::=protobuf"
  "google::protobuf::=protobuf-lite"
  "prometheus::=prometheus-cpp-core"
  "prometheus::=prometheus-cpp-pull"
  "prometheus::=prometheus-cpp-push")

if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found (Debian: apt-get install pkgconf)")
endif()
set(library ${PREFIX}/${LIBDIR}/libhotscope.a)
if(NOT EXISTS ${library})
  message(FATAL_ERROR "libhotscope.a not installed in ${PREFIX}/${LIBDIR}")
endif()
execute_process(COMMAND ${NM} -C ${library}
  OUTPUT_VARIABLE symbols COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE ";" "," symbols "${symbols}")
string(REPLACE "\n" ";" symbols "${symbols}")
list(LENGTH symbols symbol_count)
if(symbol_count LESS 10)
  message(FATAL_ERROR "nm -C ${library}: only ${symbol_count} lines, is it the library? ${symbols}")
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
  set(found ${symbols})
  list(FILTER found INCLUDE REGEX "[ (<,*&]${namespace}")
  if(found)
    list(GET found 0 first)
    string(STRIP "${first}" first)
    list(LENGTH found count)
    list(APPEND problems "${library} holds or needs ${count} symbols of ${namespace}, such as: ${first}")
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
message(STATUS "${library}: ${symbol_count} symbols, none forbidden; "
  "hotscope.pc requires: ${requires}")
