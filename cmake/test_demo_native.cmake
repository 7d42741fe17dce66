# ctest "demo_native_installed": builds demos/native as its own project against the installed prefix,
# trains the CNN for a few steps with --save, then --load's the file into a fresh model and only
# evaluates it (--epochs 0): both runs must report the same test accuracy, and the file's header must
# be the safetensors that demos/native/README.md describes. Inputs: downstream.cmake.
include(${CMAKE_CURRENT_LIST_DIR}/downstream.cmake)

build_downstream(demo demos/native)
set(demo ${downstream_build}/fashion_mnist)
set(weights ${work}/demo-cnn.safetensors)

function(accuracy_of out var)
  if(NOT out MATCHES "test accuracy ([0-9.]+)%")
    message(FATAL_ERROR "demo test: no test accuracy in:\n${out}")
  endif()
  set(${var} ${CMAKE_MATCH_1} PARENT_SCOPE)
endfunction()

step(train-and-save ${demo} --model cnn --epochs 1 --steps 3 --threads 2 --save ${weights})
message(STATUS "${step_output}")
accuracy_of("${step_output}" trained)
step(load-and-evaluate ${demo} --model cnn --epochs 0 --threads 2 --load ${weights})
message(STATUS "${step_output}")
accuracy_of("${step_output}" loaded)
if(NOT trained STREQUAL loaded)
  message(FATAL_ERROR "demo test: the trained model scores ${trained}%, the reloaded one ${loaded}%")
endif()

# The header as any safetensors reader sees it: a little-endian u64 byte count, then that much JSON.
file(READ ${weights} size_hex LIMIT 8 HEX)
string(REGEX REPLACE "^(..)(..)(..)(..)(..)(..)(..)(..)$" "\\8\\7\\6\\5\\4\\3\\2\\1" size_hex "${size_hex}")
math(EXPR size "0x${size_hex}")
file(READ ${weights} header OFFSET 8 LIMIT ${size})
string(JSON entries LENGTH "${header}")
string(JSON dtype GET "${header}" param.0 dtype)
string(JSON axes GET "${header}" __metadata__ axes.param.0)
string(JSON model GET "${header}" __metadata__ model)
if(NOT (entries EQUAL 9 AND dtype STREQUAL "F32" AND axes STREQUAL "c1,c,kh,kw" AND model STREQUAL "cnn"))
  message(FATAL_ERROR "demo test: unexpected safetensors header (want param.0..7, F32, axes and model "
                      "in __metadata__):\n${header}")
endif()
