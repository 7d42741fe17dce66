# Shared by the ctests that use an installed fucina the way a downstream project would
# (install_prefix.cmake, test_install.cmake, test_demo_native.cmake, test_examples.cmake; the ctest
# fixture "fucina_installed" installs once into ${prefix}, the others build against it).
# Included by `cmake -P` scripts; inputs:
#   SOURCE_DIR BUILD_DIR GENERATOR MAKE_PROGRAM BUILD_TYPE CXX_COMPILER EXTRA_FLAGS (space-separated, may be empty)
foreach(var SOURCE_DIR BUILD_DIR GENERATOR BUILD_TYPE CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE}: -D${var}=... is required")
  endif()
endforeach()

set(work ${BUILD_DIR}/install-test)
set(prefix ${work}/prefix)
separate_arguments(extra_list UNIX_COMMAND "${EXTRA_FLAGS}")

# Runs one step; on failure stops with the step's combined output, else sets step_output.
function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: step '${name}' failed (${rc}):\n${ARGN}\n${out}")
  endif()
  message(STATUS "install test: ${name}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# Configures and builds the standalone project ${SOURCE_DIR}/<dir> against ${prefix} with this
# build's generator, compiler and flags, in ${work}/<name>-build (returned as downstream_build).
function(build_downstream name dir)
  if(NOT EXISTS ${prefix})
    message(FATAL_ERROR "install test: ${prefix} is missing (the install_prefix test installs it)")
  endif()
  set(build ${work}/${name}-build)
  file(REMOVE_RECURSE ${build})
  set(opt_args)
  if(MAKE_PROGRAM)
    list(APPEND opt_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
  endif()
  if(EXTRA_FLAGS)
    list(APPEND opt_args "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
  endif()
  step(configure-${name} ${CMAKE_COMMAND} -S ${SOURCE_DIR}/${dir} -B ${build} -G ${GENERATOR} ${opt_args}
       -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix})
  step(build-${name} ${CMAKE_COMMAND} --build ${build} --config ${BUILD_TYPE})
  set(downstream_build ${build} PARENT_SCOPE)
endfunction()
