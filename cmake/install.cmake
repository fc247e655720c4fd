# Install rules for libhotscope: headers, the library, a CMake package exporting
# hotscope::hotscope, and a pkg-config file. Included from src/CMakeLists.txt after libhotscope;
# the heap block there adds libhotscope-heap.so to the package (hotscope::heap, hotscope-heap.pc).
#
# Off by default when hotscope is a subproject (add_subdirectory), so a parent project's
# `cmake --install` installs only what the parent asks for.
if(NOT HOTSCOPE_INSTALL)
  return()
endif()

include(CMakePackageConfigHelpers)

set(HOTSCOPE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/hotscope)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/hotscope
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
if(TARGET hotscope_locks_interposer)
  set(HOTSCOPE_LOCKS_INTERPOSER hotscope_locks_interposer)
endif()
install(TARGETS hotscope hotscope_asio ${HOTSCOPE_LOCKS_INTERPOSER} EXPORT hotscopeTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT hotscopeTargets NAMESPACE hotscope:: DESTINATION ${HOTSCOPE_INSTALL_CMAKEDIR})

# libhotscope is a static archive whatever BUILD_SHARED_LIBS says (src/CMakeLists.txt), so it
# hands its private link dependencies to every consumer: the package config must find them before
# importing hotscope::hotscope. Compiled out, hotscope::hotscope is the headers only.
set(HOTSCOPE_CONFIG_LINK_DEPENDENCIES ${HOTSCOPE_ENABLE})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hotscopeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hotscopeConfig.cmake
  INSTALL_DESTINATION ${HOTSCOPE_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hotscopeConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hotscopeConfig.cmake ${PROJECT_BINARY_DIR}/hotscopeConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/hotscopeInstrument.cmake DESTINATION ${HOTSCOPE_INSTALL_CMAKEDIR})

# pkg-config: paths relative to the .pc file, so `cmake --install --prefix` anywhere works.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(HOTSCOPE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(HOTSCOPE_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH HOTSCOPE_PC_UP ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
  string(REGEX REPLACE "/$" "" HOTSCOPE_PC_UP "${HOTSCOPE_PC_UP}")
  set(HOTSCOPE_PC_PREFIX "\${pcfiledir}/${HOTSCOPE_PC_UP}")
  set(HOTSCOPE_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(HOTSCOPE_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(HOTSCOPE_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(HOTSCOPE_PC_CFLAGS "")
set(HOTSCOPE_PC_LIBS "")
set(HOTSCOPE_PC_REQUIRES "")
if(HOTSCOPE_ENABLE)
  set(HOTSCOPE_PC_CFLAGS " -DHOTSCOPE_ENABLED=1")
  # Only a static archive is installed, so plain `pkg-config --libs` must already list what it
  # needs; the .private fields would only be read with --static.
  set(HOTSCOPE_PC_LIBS "-L\${libdir} -Wl,--undefined=hotscope_runtime_anchor \
-Wl,--export-dynamic-symbol=hotscope_runtime_anchor -Wl,--export-dynamic-symbol=dlclose -lhotscope -pthread")
  set(HOTSCOPE_PC_REQUIRES "libdeflate libunwind")
  if(TARGET hotscope_locks_interposer) # the pthread lock functions (docs/locks.md)
    string(APPEND HOTSCOPE_PC_LIBS " -lhotscope-locks -Wl,--undefined=pthread_mutex_lock \
-Wl,--export-dynamic-symbol=pthread_mutex_*,--export-dynamic-symbol=pthread_rwlock_*,\
--export-dynamic-symbol=pthread_cond_*")
  endif()
endif()
# hotscope_install_pkg_config(<name>): cmake/<name>.pc.in, with the variables above, installed as
# <name>.pc. hotscope-heap.pc is added by src/CMakeLists.txt when libhotscope-heap.so is built.
function(hotscope_install_pkg_config name)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${name}.pc.in ${PROJECT_BINARY_DIR}/${name}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
hotscope_install_pkg_config(hotscope)
