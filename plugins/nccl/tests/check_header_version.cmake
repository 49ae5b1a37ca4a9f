# The nccl plugin's header check (../cmake/wheel_nccl.cmake) on any machine, no GPU, CUDA or
# compiler: fake torch wheels (site-packages/torch, torch-<v>.dist-info/METADATA pinning
# nvidia-nccl-cu<N>, nvidia/nccl/include/nccl.h) whose NCCL headers match LibTorch's pin or not.
# A skewed header must be refused at configure time naming both versions and both files; the
# matching one accepted; no wheel header means "not built" with a reason, not an error.
#
#   cmake [-DWORK_DIR=<dir>] -P plugins/nccl/tests/check_header_version.cmake
#
# Each refusal runs in a child `cmake -P` of this script (PLAIT_NCCL_CHILD set), so that its
# FATAL_ERROR is observed through the exit status and output.
cmake_minimum_required(VERSION 3.25)
get_filename_component(module "${CMAKE_CURRENT_LIST_DIR}/../cmake/wheel_nccl.cmake" ABSOLUTE)
include("${module}")

if(DEFINED PLAIT_NCCL_CHILD)
  if(PLAIT_NCCL_CHILD STREQUAL "check")
    plait_check_nccl_header("${HEADER}" "${EXPECTED}" SOURCE "${SOURCE}" PACKAGE "${PACKAGE}")
    message(STATUS "accepted ${HEADER}")
  elseif(PLAIT_NCCL_CHILD STREQUAL "select")
    plait_select_nccl_headers(sel TORCH_PREFIX "${TORCH_PREFIX}" TORCH_VERSION "${TORCH_VERSION}"
                              OVERRIDE "${OVERRIDE}" UNCHECKED "${UNCHECKED}")
    message(STATUS "selected=[${sel}] version=[${sel_VERSION}] why=[${sel_WHY}]")
  else()
    message(FATAL_ERROR "unknown PLAIT_NCCL_CHILD '${PLAIT_NCCL_CHILD}'")
  endif()
  return()
endif()

if(NOT WORK_DIR)
  set(WORK_DIR "${CMAKE_CURRENT_BINARY_DIR}/nccl_header_version_work")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(failures "")

# An nccl.h's version lines as NCCL 2.28's writes them.
function(fake_header path major minor patch)
  if(minor GREATER 8 OR major GREATER 2)
    math(EXPR code "${major} * 10000 + ${minor} * 100 + ${patch}")
  else()
    math(EXPR code "${major} * 1000 + ${minor} * 100 + ${patch}")
  endif()
  file(WRITE "${path}"
"/* fake nccl.h for plait's header check */
#ifndef NCCL_H_
#define NCCL_H_

#define NCCL_MAJOR ${major}
#define NCCL_MINOR ${minor}
#define NCCL_PATCH ${patch}
#define NCCL_SUFFIX \"\"

#define NCCL_VERSION_CODE ${code}
#define NCCL_VERSION(X,Y,Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#endif
")
endfunction()

# A wheel's site-packages: torch/ (with the nccl.h-named wrapper torch ships, which defines no
# version), torch-<dist>.dist-info/METADATA holding <requires> (a list of Requires-Dist values)
# and, when <header_version> is not "none", nvidia/nccl/include/nccl.h of that version.
function(fake_wheel root dist requires header_version)
  set(site "${root}/site-packages")
  file(MAKE_DIRECTORY "${site}/torch/share/cmake/Torch")
  file(WRITE "${site}/torch/include/torch/csrc/cuda/nccl.h" "#pragma once\n#include <nccl.h>\n")
  set(metadata "Metadata-Version: 2.4\nName: torch\nVersion: ${dist}\n")
  foreach(r IN LISTS requires)
    string(APPEND metadata "Requires-Dist: ${r}\n")
  endforeach()
  file(WRITE "${site}/torch-${dist}.dist-info/METADATA" "${metadata}")
  if(NOT header_version STREQUAL "none")
    string(REPLACE "." ";" v "${header_version}")
    fake_header("${site}/nvidia/nccl/include/nccl.h" ${v})
  endif()
endfunction()

# Runs this script as a child with the given -D definitions; <rc> and <text> (stdout and stderr,
# CMake's message wrapping undone: every run of white space made one space).
function(run_child rc text)
  set(defs)
  foreach(d IN LISTS ARGN)
    list(APPEND defs "-D${d}")
  endforeach()
  execute_process(COMMAND "${CMAKE_COMMAND}" ${defs} -P "${CMAKE_CURRENT_LIST_FILE}"
                  RESULT_VARIABLE r OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REGEX REPLACE "[ \t\r\n]+" " " out "${out}")
  set(${rc} "${r}" PARENT_SCOPE)
  set(${text} "${out}" PARENT_SCOPE)
endfunction()

# expect(<case> <rc> <text> REFUSED|ACCEPTED [CONTAINS <string>...])
function(expect name rc text outcome)
  cmake_parse_arguments(ARG "" "" "CONTAINS" ${ARGN})
  set(bad "")
  if(outcome STREQUAL "REFUSED" AND rc EQUAL 0)
    set(bad "was not refused")
  elseif(outcome STREQUAL "ACCEPTED" AND NOT rc EQUAL 0)
    set(bad "was refused (exit ${rc})")
  endif()
  foreach(s IN LISTS ARG_CONTAINS)
    string(FIND "${text}" "${s}" at)
    if(at EQUAL -1)
      string(APPEND bad " [output lacks '${s}']")
    endif()
  endforeach()
  if(bad)
    message(STATUS "FAIL: ${name}: ${bad}\n    output: ${text}")
    set(failures "${failures};${name}" PARENT_SCOPE)
  else()
    message(STATUS "ok: ${name}")
  endif()
endfunction()

set(cu13_pin [[nvidia-nccl-cu13==2.28.9; platform_system == "Linux"]])  # torch 2.11.0's METADATA line
set(cu12_pin [[nvidia-nccl-cu12==2.21.5; platform_system == "Linux" and platform_machine == "x86_64"]])
set(other_pins [[filelock]] [[nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"]])

# --- reading the two versions -------------------------------------------------------------
set(w "${WORK_DIR}/good")
fake_wheel("${w}" 2.11.0 "${other_pins};${cu13_pin}" 2.28.9)
set(good_prefix "${w}/site-packages/torch")
set(good_header "${w}/site-packages/nvidia/nccl/include/nccl.h")
set(good_metadata "${w}/site-packages/torch-2.11.0.dist-info/METADATA")

plait_nccl_header_version(v "${good_header}")
plait_wheel_nccl_include_dir(dir "${good_prefix}")
plait_torch_nccl_version(pin src pkg "${good_prefix}" 2.11.0)
if(v STREQUAL "2.28.9" AND dir STREQUAL "${w}/site-packages/nvidia/nccl/include" AND pin STREQUAL "2.28.9"
   AND pkg STREQUAL "nvidia-nccl-cu13" AND src_FILE STREQUAL "${good_metadata}")
  message(STATUS "ok: the header says 2.28.9, torch's METADATA pins nvidia-nccl-cu13==2.28.9, the wheel's include folder is found")
else()
  message(STATUS "FAIL: reading: header '${v}', include folder '${dir}', pin '${pin}' of '${pkg}' from '${src_FILE}'")
  list(APPEND failures reading)
endif()

set(w12 "${WORK_DIR}/cu12")
fake_wheel("${w12}" 2.5.1+cu121 "${cu12_pin}" 2.21.5)
plait_torch_nccl_version(pin src pkg "${w12}/site-packages/torch" 2.5.1)
if(pin STREQUAL "2.21.5" AND pkg STREQUAL "nvidia-nccl-cu12")
  message(STATUS "ok: a cu12 wheel's pin (markers with 'and', a +local dist-info) reads 2.21.5 of nvidia-nccl-cu12")
else()
  message(STATUS "FAIL: cu12 pin read as '${pin}' of '${pkg}'")
  list(APPEND failures cu12-pin)
endif()

# --- plait_check_nccl_header ----------------------------------------------------------------
fake_header("${WORK_DIR}/skewed-minor/nccl.h" 2 27 3)
fake_header("${WORK_DIR}/skewed-patch/nccl.h" 2 28 8)
fake_header("${WORK_DIR}/matching/nccl.h" 2 28 9)
set(src "${good_metadata}: Requires-Dist: nvidia-nccl-cu13==2.28.9")

run_child(rc out PLAIT_NCCL_CHILD=check "HEADER=${WORK_DIR}/matching/nccl.h" EXPECTED=2.28.9 "SOURCE=${src}" PACKAGE=nvidia-nccl-cu13)
expect("a header of LibTorch's version (2.28.9) is accepted" "${rc}" "${out}" ACCEPTED)
run_child(rc out PLAIT_NCCL_CHILD=check "HEADER=${WORK_DIR}/skewed-minor/nccl.h" EXPECTED=2.28.9 "SOURCE=${src}" PACKAGE=nvidia-nccl-cu13)
expect("a 2.27.3 header against LibTorch's 2.28.9 is refused, naming both versions, both files and the fix"
       "${rc}" "${out}" REFUSED CONTAINS "NCCL 2.27.3" "NCCL 2.28.9" "${WORK_DIR}/skewed-minor/nccl.h"
       "${good_metadata}" "pip install nvidia-nccl-cu13==2.28.9" "-DPLAIT_NCCL_INCLUDE_DIR=")
run_child(rc out PLAIT_NCCL_CHILD=check "HEADER=${WORK_DIR}/skewed-patch/nccl.h" EXPECTED=2.28.9 "SOURCE=${src}" PACKAGE=nvidia-nccl-cu13)
expect("a header one patch release off (2.28.8) is refused" "${rc}" "${out}" REFUSED CONTAINS "NCCL 2.28.8" "NCCL 2.28.9")
file(WRITE "${WORK_DIR}/no-version/nccl.h" "#pragma once\n#include <nccl.h>\n")
run_child(rc out PLAIT_NCCL_CHILD=check "HEADER=${WORK_DIR}/no-version/nccl.h" EXPECTED=2.28.9)
expect("an nccl.h without version macros is refused" "${rc}" "${out}" REFUSED CONTAINS "cannot read NCCL's version")

# --- plait_select_nccl_headers: what the plugin's CMakeLists does -------------------------------
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${good_prefix}" TORCH_VERSION=2.11.0)
expect("configure: the wheel's own matching nvidia/nccl/include is chosen" "${rc}" "${out}" ACCEPTED
       CONTAINS "selected=[${w}/site-packages/nvidia/nccl/include] version=[2.28.9]")

set(ws "${WORK_DIR}/skewed-wheel")
fake_wheel("${ws}" 2.11.0 "${cu13_pin}" 2.27.3)
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${ws}/site-packages/torch" TORCH_VERSION=2.11.0)
expect("configure: a wheel whose nvidia-nccl was reinstalled at 2.27.3 is refused" "${rc}" "${out}" REFUSED
       CONTAINS "NCCL 2.27.3" "NCCL 2.28.9" "${ws}/site-packages/nvidia/nccl/include/nccl.h"
       "${ws}/site-packages/torch-2.11.0.dist-info/METADATA")

run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${good_prefix}" TORCH_VERSION=2.11.0 "OVERRIDE=${WORK_DIR}/skewed-minor")
expect("configure: -DPLAIT_NCCL_INCLUDE_DIR at a 2.27.3 header is refused" "${rc}" "${out}" REFUSED
       CONTAINS "NCCL 2.27.3" "NCCL 2.28.9" "${WORK_DIR}/skewed-minor/nccl.h")
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${good_prefix}" TORCH_VERSION=2.11.0 "OVERRIDE=${WORK_DIR}/matching")
expect("configure: -DPLAIT_NCCL_INCLUDE_DIR at a matching header is chosen" "${rc}" "${out}" ACCEPTED
       CONTAINS "selected=[${WORK_DIR}/matching]")

set(wn "${WORK_DIR}/no-header")
fake_wheel("${wn}" 2.11.0 "${cu13_pin}" none)
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${wn}/site-packages/torch" TORCH_VERSION=2.11.0)
expect("configure: no wheel header: not built, saying why and how (no error)" "${rc}" "${out}" ACCEPTED
       CONTAINS "selected=[]" "nvidia/nccl/include/nccl.h, the NCCL headers of the torch wheel, is not there"
                "pip install nvidia-nccl-cu13==2.28.9" "or set -DPLAIT_NCCL_INCLUDE_DIR=")

set(wu "${WORK_DIR}/unpinned")
fake_wheel("${wu}" 2.11.0 "filelock" 2.28.9)
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${wu}/site-packages/torch" TORCH_VERSION=2.11.0)
expect("configure: a LibTorch whose NCCL version cannot be found is refused" "${rc}" "${out}" REFUSED
       CONTAINS "cannot check" "PLAIT_NCCL_UNCHECKED=ON")
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${wu}/site-packages/torch" TORCH_VERSION=2.11.0 UNCHECKED=ON)
expect("configure: ... and built, with a warning, under PLAIT_NCCL_UNCHECKED=ON" "${rc}" "${out}" ACCEPTED
       CONTAINS "unchecked" "selected=[${wu}/site-packages/nvidia/nccl/include]")

# A LibTorch with NCCL linked in and its nccl.h in its own include tree: that version is expected.
fake_header("${wu}/site-packages/torch/include/nccl_bundled/nccl.h" 2 28 9)
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${wu}/site-packages/torch" TORCH_VERSION=2.11.0 "OVERRIDE=${WORK_DIR}/skewed-minor")
expect("configure: no pin, but LibTorch's include tree has NCCL 2.28.9's nccl.h: a 2.27.3 header is refused"
       "${rc}" "${out}" REFUSED CONTAINS "NCCL 2.27.3" "NCCL 2.28.9" "${wu}/site-packages/torch/include/nccl_bundled/nccl.h")

# A stale torch dist-info beside the current one: the one of LibTorch's version is read.
set(wd "${WORK_DIR}/two-dist-infos")
fake_wheel("${wd}" 2.10.0 "nvidia-nccl-cu12==2.27.5" 2.28.9)
fake_wheel("${wd}" 2.11.0+cu130 "${cu13_pin}" 2.28.9)
run_child(rc out PLAIT_NCCL_CHILD=select "TORCH_PREFIX=${wd}/site-packages/torch" TORCH_VERSION=2.11.0)
expect("configure: of two torch dist-infos, LibTorch's version's (2.11.0+cu130) is read" "${rc}" "${out}" ACCEPTED
       CONTAINS "version=[2.28.9]")

if(failures)
  list(REMOVE_ITEM failures "")
  list(JOIN failures "\n  " failed)
  message(FATAL_ERROR "the nccl header check failed:\n  ${failed}")
endif()
message(STATUS "the nccl header check: all cases pass")
