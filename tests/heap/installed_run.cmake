# Installs BUILD's command-line tools (install component hotscope_tools: bin/hotscope, the
# preload library and its pprof module, libhotscope-run.so) into SCRATCH/prefix, wiped first, and
# runs the installed `hotscope run --heap` without HOTSCOPE_PRELOAD: the program must get the
# installed preload library and runtime (not the build tree's) and write heap.json, and heap.pb.gz
# through the installed module.
# usage: cmake -DBUILD=<build dir> -DSCRATCH=<dir> -DLIBDIR=<lib dir, relative> -P installed_run.cmake
set(prefix ${SCRATCH}/prefix)
file(REMOVE_RECURSE ${SCRATCH})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix}
  --component hotscope_tools COMMAND_ERROR_IS_FATAL ANY)

set(preload ${prefix}/${LIBDIR}/libhotscope-preload.so)
set(runtime ${prefix}/${LIBDIR}/libhotscope-run.so)
foreach(file ${prefix}/bin/hotscope ${preload} ${runtime} ${prefix}/${LIBDIR}/libhotscope-pprof.so)
  if(NOT EXISTS ${file})
    message(FATAL_ERROR "not installed: ${file}")
  endif()
endforeach()

# env prints the environment the program got, and exits normally, so the profile is written.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=HOTSCOPE_PRELOAD --unset=LD_PRELOAD
    ${prefix}/bin/hotscope run --heap --no-summary --out ${SCRATCH}/out -- env
  OUTPUT_VARIABLE environment COMMAND_ERROR_IS_FATAL ANY)
string(FIND "${environment}" "\nLD_PRELOAD=${preload}:${runtime}\n" at)
if(at EQUAL -1)
  string(REGEX MATCH "LD_PRELOAD=[^\n]*" got "${environment}")
  message(FATAL_ERROR
    "the installed hotscope preloaded '${got}', expected LD_PRELOAD=${preload}:${runtime}")
endif()
foreach(file heap.json heap.pb.gz)
  if(NOT EXISTS ${SCRATCH}/out/${file})
    message(FATAL_ERROR "the installed `hotscope run --heap` wrote no ${SCRATCH}/out/${file}")
  endif()
endforeach()
message(STATUS "${prefix}/bin/hotscope run --heap preloaded ${preload} and wrote heap.json and heap.pb.gz in ${SCRATCH}/out")
