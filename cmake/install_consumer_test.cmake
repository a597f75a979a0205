# The install test, run by ctest as `cmake -P` (registered in
# tests/CMakeLists.txt). Proves that another project can use rotor:
#   1. cmake --install the current build into WORK_DIR/prefix,
#   2. configure and build tests/install_consumer against that prefix
#      (find_package(rotor), link rotor::rotor),
#   3. run the consumer, which checks tensors, autograd and a kernel.
# Any failing step fails the test with the step's output.
#
# Inputs (-D): ROTOR_BUILD_DIR, CONSUMER_SOURCE_DIR, WORK_DIR, GENERATOR,
# CXX_COMPILER; optional CXX_FLAGS for the consumer (a sanitizer build passes
# its -fsanitize flags: its libraries need the sanitizer runtimes).
cmake_minimum_required(VERSION 3.18)

foreach(input ROTOR_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR GENERATOR
        CXX_COMPILER)
  if(NOT DEFINED ${input})
    message(FATAL_ERROR "install test: -D${input}=... is required")
  endif()
endforeach()

# Runs one step; stops the test with its output when it fails.
function(run_step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result
                  OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "install test: ${name} failed (${result}):\n${output}")
  endif()
  message(STATUS "install test: ${name}: ok")
  set(step_output "${output}" PARENT_SCOPE)
endfunction()

# Start clean so the consumer sees only what this install put there.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer)

run_step("cmake --install" ${CMAKE_COMMAND} --install ${ROTOR_BUILD_DIR}
         --prefix ${prefix})
run_step("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR}
         -B ${consumer_build} -G ${GENERATOR}
         -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_BUILD_TYPE=Release
         "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
         -DCMAKE_PREFIX_PATH=${prefix})
run_step("build the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
run_step("run the consumer" ${consumer_build}/rotor_consumer)
message("${step_output}")
