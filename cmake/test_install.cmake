# ctest "install_and_find_package": install the build tree into a private prefix, then use it the
# way a downstream project would (find_package and pkg-config). Run with cmake -P; inputs:
#   SOURCE_DIR BUILD_DIR GENERATOR MAKE_PROGRAM BUILD_TYPE CXX_COMPILER EXTRA_FLAGS (space-separated, may be empty)
foreach(var SOURCE_DIR BUILD_DIR GENERATOR BUILD_TYPE CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "test_install.cmake: -D${var}=... is required")
  endif()
endforeach()

set(work ${BUILD_DIR}/install-test)
set(prefix ${work}/prefix)
file(REMOVE_RECURSE ${work})  # no stale prefix or example build may hide a failure
file(MAKE_DIRECTORY ${work})

# Runs one step; on failure stops with the step's combined output.
function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: step '${name}' failed (${rc}):\n${ARGN}\n${out}")
  endif()
  message(STATUS "install test: ${name}: ok")
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

# (a) install
step(install ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${BUILD_TYPE})

# (b)-(d) configure, build and run native/example against the prefix
separate_arguments(extra_list UNIX_COMMAND "${EXTRA_FLAGS}")
set(example_build ${work}/example-build)
set(opt_args)
if(MAKE_PROGRAM)
  list(APPEND opt_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
if(EXTRA_FLAGS)
  list(APPEND opt_args "-DCMAKE_CXX_FLAGS=${EXTRA_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${EXTRA_FLAGS}")
endif()
step(configure-example ${CMAKE_COMMAND} -S ${SOURCE_DIR}/native/example -B ${example_build}
     -G ${GENERATOR} ${opt_args} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
     -DCMAKE_PREFIX_PATH=${prefix})
step(build-example ${CMAKE_COMMAND} --build ${example_build} --config ${BUILD_TYPE})
step(run-example ${example_build}/example)
message(STATUS "${step_output}")

# (e) pkg-config: compile + link a one-liner with nothing but `pkg-config --cflags --libs fucina`
find_program(PKG_CONFIG_EXECUTABLE pkg-config)
if(NOT PKG_CONFIG_EXECUTABLE)
  message(STATUS "install test: pkg-config not found, skipping the pkg-config check")
  return()
endif()
file(GLOB_RECURSE pc_file ${prefix}/*/fucina.pc)
if(NOT pc_file)
  message(FATAL_ERROR "install test: fucina.pc was not installed under ${prefix}")
endif()
get_filename_component(pc_dir ${pc_file} DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
step(pkg-config ${PKG_CONFIG_EXECUTABLE} --cflags --libs fucina)
separate_arguments(pc_flags UNIX_COMMAND "${step_output}")
step(pkg-config-libdir ${PKG_CONFIG_EXECUTABLE} --variable=libdir fucina)
string(STRIP "${step_output}" libdir)

file(WRITE ${work}/pc_main.cpp
  "#include <fucina/fucina.h>\nint main() { return fucina::isGradEnabled() ? 0 : 1; }\n")
step(pkg-config-compile ${CXX_COMPILER} -std=c++20 ${extra_list} ${work}/pc_main.cpp ${pc_flags}
     -o ${work}/pc_main)
step(pkg-config-run ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${work}/pc_main)
