# ctest "install_prefix" (setup of the fixture "fucina_installed"): a fresh `cmake --install` of the
# build tree into a private prefix, which the downstream tests then build against.
include(${CMAKE_CURRENT_LIST_DIR}/downstream.cmake)

file(REMOVE_RECURSE ${work})  # no stale prefix or downstream build may hide a failure
file(MAKE_DIRECTORY ${work})
step(install ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --config ${BUILD_TYPE})
