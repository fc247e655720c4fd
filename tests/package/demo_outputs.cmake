# Runs the instrumented demo DEMO briefly with HOTSCOPE_OUT set and checks it left every file
# that scripts/demo.sh tells the reader to open.
set(out ${SCRATCH}/demo-out)
file(REMOVE_RECURSE ${out})
set(ENV{HOTSCOPE_OUT} ${out})
execute_process(COMMAND ${DEMO} --seconds 1 --threads 2 COMMAND_ERROR_IS_FATAL ANY)
foreach(file report.txt trace.json trace.folded trace.txt stats.json)
  file(SIZE ${out}/${file} size)
  if(NOT EXISTS ${out}/${file} OR size EQUAL 0)
    message(FATAL_ERROR "HOTSCOPE_OUT=${out}: ${file} missing or empty")
  endif()
endforeach()
