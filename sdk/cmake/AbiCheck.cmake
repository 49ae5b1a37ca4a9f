# The compatibility promise, checked by every build: tools/sdk_abi.py compiles the SDK's
# headers with clang and compares the layouts plugins are compiled against (records,
# vtables, enums) with the frozen layout of each released minor version in sdk/abi/.
# A header change that would break a released plugin fails the build, naming the type.
option(PLAIT_ABI_CHECK "Check the plugin API's headers against its frozen layouts (sdk/abi; needs clang)" ON)
if(NOT PLAIT_ABI_CHECK)
  return()
endif()
find_program(PLAIT_ABI_CLANG NAMES clang++-16 clang++)
if(NOT PLAIT_ABI_CLANG)
  message(FATAL_ERROR "The plugin API's layout check needs clang (tools/setup installs clang-16); "
                      "configure with -DPLAIT_ABI_CHECK=OFF to build without it")
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter)
file(GLOB plait_sdk_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sdk/include/plait/sdk/*)
file(GLOB plait_abi_manifests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sdk/abi/*.abi)
# --cache: LibTorch's headers precompiled once (a clang PCH), reused by every later check.
set(plait_abi_includes --cache ${CMAKE_BINARY_DIR}/sdk/abi-cache)
foreach(dir ${TORCH_INCLUDE_DIRS})
  list(APPEND plait_abi_includes --include ${dir})
endforeach()
set(plait_abi_stamp ${CMAKE_BINARY_DIR}/sdk/abi-check.stamp)
add_custom_command(
  OUTPUT ${plait_abi_stamp}
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/sdk_abi.py check --clang ${PLAIT_ABI_CLANG}
          ${plait_abi_includes} --abi-dir ${PROJECT_SOURCE_DIR}/sdk/abi --stamp ${plait_abi_stamp}
  DEPENDS ${plait_sdk_headers} ${plait_abi_manifests} ${PROJECT_SOURCE_DIR}/tools/sdk_abi.py
  COMMENT "Checking the plugin API's layouts against sdk/abi (the compatibility promise)"
  VERBATIM)
add_custom_target(plait_sdk_abi_check ALL DEPENDS ${plait_abi_stamp})
