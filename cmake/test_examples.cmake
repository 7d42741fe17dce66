# ctest "examples_cpp": builds examples/ (the README's C++ example) against the installed prefix and
# runs it: the loss it prints every 100 steps must fall each time, to under 0.05. Inputs: downstream.cmake.
include(${CMAKE_CURRENT_LIST_DIR}/downstream.cmake)

build_downstream(examples examples)
step(run-train ${downstream_build}/train)
message(STATUS "${step_output}")

string(REGEX MATCHALL "step [0-9]+: loss [0-9.]+" lines "${step_output}")
list(LENGTH lines count)
if(count LESS 2)
  message(FATAL_ERROR "examples test: expected a loss line every 100 steps, got:\n${step_output}")
endif()
set(previous "")
foreach(line IN LISTS lines)
  string(REGEX REPLACE ".*loss " "" loss "${line}")
  if(NOT previous STREQUAL "" AND NOT loss LESS previous)  # if(LESS) compares as floating point
    message(FATAL_ERROR "examples test: the loss did not fall (${previous} then ${loss}):\n${step_output}")
  endif()
  set(previous ${loss})
endforeach()
if(NOT previous LESS 0.05)
  message(FATAL_ERROR "examples test: the final loss ${previous} is not under 0.05:\n${step_output}")
endif()
