# The readers of files and answers: `hotscope diff` (diff/), `hotscope report` and `flame`
# (report/), and what they and the console read (profiles/), and the locks as text
# (locks_text.cpp). Included by
# tools/hotscope/CMakeLists.txt, and by tests/cli for the fuzz targets (tests/cli/fuzz_*.cpp) in
# the fuzz build (HOTSCOPE_FUZZ), which builds no command: there the readers are instrumented.
find_package(CLI11 CONFIG REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
set(HOTSCOPE_CLI_DIR ${PROJECT_SOURCE_DIR}/tools/hotscope)
file(GLOB HOTSCOPE_COMPARE_SOURCES CONFIGURE_DEPENDS ${HOTSCOPE_CLI_DIR}/profiles/*.cpp
  ${HOTSCOPE_CLI_DIR}/diff/*.cpp ${HOTSCOPE_CLI_DIR}/report/*.cpp)
# The locks' lines and cells: the CLI's, the console's and report.html's.
list(APPEND HOTSCOPE_COMPARE_SOURCES ${HOTSCOPE_CLI_DIR}/locks_text.cpp)
list(REMOVE_ITEM HOTSCOPE_COMPARE_SOURCES ${HOTSCOPE_CLI_DIR}/diff/diff_command.cpp
  ${HOTSCOPE_CLI_DIR}/report/report_command.cpp)
# The report's scripts and styles (report/assets/) are compiled in as strings.
set(HOTSCOPE_REPORT_ASSETS kFlameJs=flame.js kFlameCss=flame.css kReportJs=report.js
  kReportCss=report.css)
set(HOTSCOPE_REPORT_ASSET_ARGS "")
set(HOTSCOPE_REPORT_ASSET_FILES "")
foreach(asset IN LISTS HOTSCOPE_REPORT_ASSETS)
  string(REPLACE "=" ";" parts ${asset})
  list(GET parts 0 asset_name)
  list(GET parts 1 asset_file)
  set(asset_path ${HOTSCOPE_CLI_DIR}/report/assets/${asset_file})
  list(APPEND HOTSCOPE_REPORT_ASSET_ARGS "${asset_name}=${asset_path}")
  list(APPEND HOTSCOPE_REPORT_ASSET_FILES ${asset_path})
endforeach()
list(JOIN HOTSCOPE_REPORT_ASSET_ARGS "|" HOTSCOPE_REPORT_ASSET_ARGS)
add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/report_assets.cpp
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/report_assets.cpp
    "-DASSETS=${HOTSCOPE_REPORT_ASSET_ARGS}" -P ${HOTSCOPE_CLI_DIR}/report/embed.cmake
  DEPENDS ${HOTSCOPE_REPORT_ASSET_FILES} ${HOTSCOPE_CLI_DIR}/report/embed.cmake
  COMMENT "Embedding the report's scripts and styles" VERBATIM)
# The components the CLI calls, from the objects libhotscope is made of (not libhotscope, whose
# runtime would start in the CLI): text, the file writer, the configuration reader, and of export
# only its labels, units and deadlock lines (export/common.hpp). The other exporters' objects stay
# out: those built on header-only {fmt} define its functions, which would be taken for the CLI's
# own. The names component (demangling) comes the same way.
add_library(hotscope_cli_components STATIC $<TARGET_OBJECTS:hotscope_text>
  $<FILTER:$<TARGET_OBJECTS:hotscope_export>,INCLUDE,/common\\.cpp\\.o$>
  $<TARGET_OBJECTS:hotscope_atomic_file> $<TARGET_OBJECTS:hotscope_config>
  $<TARGET_OBJECTS:hotscope_names>)
hotscope_use_components(hotscope_cli_components PUBLIC export atomic_file config names)
# The readers and writers: a library of their own, which the CLI and the fuzz targets both link.
add_library(hotscope_readers STATIC ${HOTSCOPE_COMPARE_SOURCES}
  ${CMAKE_CURRENT_BINARY_DIR}/report_assets.cpp)
target_include_directories(hotscope_readers PUBLIC ${HOTSCOPE_CLI_DIR})
# In batches, in the fuzz build too, where the readers compiled one by one took 150 s of CPU.
set_target_properties(hotscope_readers PROPERTIES UNITY_BUILD ${HOTSCOPE_UNITY})
target_link_libraries(hotscope_readers PUBLIC hotscope_cli_components CLI11::CLI11 fmt::fmt
  nlohmann_json::nlohmann_json)
if(HOTSCOPE_FUZZ AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_compile_options(hotscope_readers PRIVATE -fsanitize=fuzzer-no-link,address,undefined
    -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(hotscope_readers INTERFACE -fsanitize=address,undefined)
endif()
