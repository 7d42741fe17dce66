# ctest "install_and_find_package": use the installed prefix the way a downstream project would,
# with find_package (native/example) and with pkg-config. Helpers and inputs: downstream.cmake.
include(${CMAKE_CURRENT_LIST_DIR}/downstream.cmake)

# configure, build and run native/example against the prefix
build_downstream(example native/example)
step(run-example ${downstream_build}/example)
message(STATUS "${step_output}")

# pkg-config: compile + link a one-liner with nothing but `pkg-config --cflags --libs fucina`
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

set(pc_work ${work}/pkg-config)
file(REMOVE_RECURSE ${pc_work})
file(WRITE ${pc_work}/pc_main.cpp
  "#include <fucina/fucina.h>\nint main() { return fucina::isGradEnabled() ? 0 : 1; }\n")
step(pkg-config-compile ${CXX_COMPILER} -std=c++20 ${extra_list} ${pc_work}/pc_main.cpp ${pc_flags}
     -o ${pc_work}/pc_main)
step(pkg-config-run ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${pc_work}/pc_main)
