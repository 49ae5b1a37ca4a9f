# The NCCL headers the nccl plugin compiles against: the ones LibTorch was built with.
#
# c10d::ProcessGroupNCCL (and its Options) change layout with the NCCL version (NCCLUtils.hpp
# turns NCCL_HAS_* features on from NCCL_VERSION_CODE), so a plugin compiled against another
# nccl.h than LibTorch's disagrees with libtorch_cuda.so about those structs and corrupts
# memory. The CUDA torch wheel does not ship nccl.h itself: it depends on the pip package
# nvidia-nccl-cu<N> (pinned in torch's METADATA, e.g.
#   Requires-Dist: nvidia-nccl-cu13==2.28.9; platform_system == "Linux"
# ), which installs <site-packages>/nvidia/nccl/include/nccl.h and nvidia/nccl/lib/libnccl.so.2,
# the library libtorch_cuda.so loads (its RPATH holds $ORIGIN/../../nvidia/nccl/lib). The
# wheel's TorchConfig.cmake sets TORCH_INSTALL_PREFIX to <site-packages>/torch.
#
# Functions (usable from a configure and from `cmake -P`, see tests/check_header_version.cmake):
#   plait_wheel_nccl_include_dir(<out> <torch_prefix>)
#   plait_torch_nccl_version(<out_version> <out_source> <out_package> <torch_prefix> [<torch_version>])
#     (also sets <out_source>_FILE: the file it was read from)
#   plait_nccl_header_version(<out> <nccl.h>)
#   plait_check_nccl_header(<nccl.h> <expected_version> [SOURCE <where expected came from>] [PACKAGE <pip name>])
#   plait_select_nccl_headers(<out> TORCH_PREFIX <dir> [TORCH_VERSION <v>] [OVERRIDE <include dir>] [UNCHECKED <bool>])
include_guard(GLOBAL)

# <site-packages> of a wheel's LibTorch: the folder that holds <torch_prefix> (…/site-packages/torch;
# not symlinks resolved: a torch folder linked into an environment is beside that environment's
# nvidia/ and dist-info).
function(_plait_wheel_site_packages out torch_prefix)
  get_filename_component(prefix "${torch_prefix}" ABSOLUTE)
  get_filename_component(site "${prefix}" DIRECTORY)
  set(${out} "${site}" PARENT_SCOPE)
endfunction()

# The wheel's NCCL include folder beside LibTorch (<site-packages>/nvidia/nccl/include), or ""
# when it holds no nccl.h.
function(plait_wheel_nccl_include_dir out torch_prefix)
  _plait_wheel_site_packages(site "${torch_prefix}")
  set(dir "${site}/nvidia/nccl/include")
  if(EXISTS "${dir}/nccl.h")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# "X.Y.Z" of the NCCL that LibTorch was built with, and where that was read:
#   1. torch's dist-info METADATA beside it: `Requires-Dist: nvidia-nccl-cu<N>==X.Y.Z; …`
#      (out_package is then nvidia-nccl-cu<N>);
#   2. else an nccl.h that defines NCCL_MAJOR inside LibTorch's own include tree (a LibTorch
#      that links NCCL statically and ships its headers).
# All are "" when neither says; <out_source>_FILE is the file read.
function(plait_torch_nccl_version out_version out_source out_package torch_prefix)
  set(torch_version "${ARGV4}")
  set(version "")
  set(source "")
  set(package "")
  set(file "")
  _plait_wheel_site_packages(site "${torch_prefix}")
  file(GLOB dist_infos LIST_DIRECTORIES true "${site}/torch-*.dist-info")
  # Several torch dist-infos (a stale one left beside): the one of this LibTorch's version
  # (its folder is torch-<version>[+<local>].dist-info).
  list(LENGTH dist_infos n)
  if(n GREATER 1 AND torch_version)
    string(REGEX REPLACE "([][+.*?^$()|\\\\])" "\\\\\\1" escaped "${torch_version}")
    set(matching)
    foreach(d IN LISTS dist_infos)
      get_filename_component(name "${d}" NAME)
      if(name MATCHES "^torch-${escaped}(\\+[^/]*)?\\.dist-info$")
        list(APPEND matching "${d}")
      endif()
    endforeach()
    set(dist_infos ${matching})
    list(LENGTH dist_infos n)
  endif()
  if(n EQUAL 1 AND EXISTS "${dist_infos}/METADATA")
    set(metadata "${dist_infos}/METADATA")
    file(STRINGS "${metadata}" pins REGEX "^Requires-Dist:[ \t]*nvidia[-_.]nccl[-_.]cu[0-9]+")
    foreach(pin IN LISTS pins)
      if(pin MATCHES "^Requires-Dist:[ \t]*(nvidia[-_.]nccl[-_.]cu[0-9]+)[ \t]*(\\[[^]]*\\])?[ \t]*\\(?[ \t]*===?[ \t]*([0-9]+\\.[0-9]+\\.[0-9]+)")
        set(version "${CMAKE_MATCH_3}")  # before string(REGEX), which resets CMAKE_MATCH_<n>
        string(REGEX REPLACE "[_.]" "-" package "${CMAKE_MATCH_1}")
        set(source "${metadata}: Requires-Dist: ${package}==${version}")
        set(file "${metadata}")
        break()
      endif()
    endforeach()
  endif()
  if(NOT version AND IS_DIRECTORY "${torch_prefix}/include")
    file(GLOB_RECURSE headers "${torch_prefix}/include/*nccl.h")
    foreach(h IN LISTS headers)
      get_filename_component(name "${h}" NAME)
      if(name STREQUAL "nccl.h")
        _plait_nccl_header_version(v "${h}")
        if(v)
          set(version "${v}")
          set(source "${h}")
          set(file "${h}")
          break()
        endif()
      endif()
    endforeach()
  endif()
  set(${out_version} "${version}" PARENT_SCOPE)
  set(${out_source} "${source}" PARENT_SCOPE)
  set(${out_package} "${package}" PARENT_SCOPE)
  set(${out_source}_FILE "${file}" PARENT_SCOPE)
endfunction()

# "X.Y.Z" from an nccl.h's NCCL_MAJOR, NCCL_MINOR and NCCL_PATCH, or "" without all three.
function(_plait_nccl_header_version out header)
  set(v "")
  if(EXISTS "${header}")
    file(STRINGS "${header}" defines REGEX "^[ \t]*#[ \t]*define[ \t]+NCCL_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+")
    foreach(part MAJOR MINOR PATCH)
      set(${part} "")
      foreach(line IN LISTS defines)
        if(line MATCHES "define[ \t]+NCCL_${part}[ \t]+([0-9]+)")
          set(${part} "${CMAKE_MATCH_1}")
        endif()
      endforeach()
    endforeach()
    if(NOT MAJOR STREQUAL "" AND NOT MINOR STREQUAL "" AND NOT PATCH STREQUAL "")
      set(v "${MAJOR}.${MINOR}.${PATCH}")
    endif()
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

function(plait_nccl_header_version out header)
  _plait_nccl_header_version(v "${header}")
  if(NOT v)
    message(FATAL_ERROR "plait: cannot read NCCL's version from ${header} (no #define NCCL_MAJOR, NCCL_MINOR "
                        "and NCCL_PATCH): it is not an NCCL 2 nccl.h")
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

# Refuses (FATAL_ERROR) an nccl.h whose version is not <expected> (X.Y.Z; anything after a third
# number, such as a .post1, is not compared).
function(plait_check_nccl_header header expected)
  cmake_parse_arguments(ARG "" "SOURCE;PACKAGE" "" ${ARGN})
  plait_nccl_header_version(found "${header}")
  if(NOT expected MATCHES "^([0-9]+\\.[0-9]+\\.[0-9]+)")
    message(FATAL_ERROR "plait: '${expected}' is not an NCCL version (X.Y.Z)")
  endif()
  set(want "${CMAKE_MATCH_1}")
  if(NOT found VERSION_EQUAL want)
    if(NOT ARG_SOURCE)
      set(ARG_SOURCE "the version given")
    endif()
    if(ARG_PACKAGE)
      set(pip "`pip install ${ARG_PACKAGE}==${want}` into the Python environment of this torch, or ")
    else()
      set(pip "")
    endif()
    message(FATAL_ERROR
      "plait: the nccl plugin refuses ${header}: it is NCCL ${found}, but LibTorch was built with "
      "NCCL ${want} (${ARG_SOURCE}). c10d::ProcessGroupNCCL's structs change layout with the NCCL "
      "version, so a plugin compiled against NCCL ${found}'s header would corrupt memory in LibTorch. "
      "Fix: ${pip}set -DPLAIT_NCCL_INCLUDE_DIR=<the include folder of NCCL ${want}>.")
  endif()
endfunction()

# The include folder the nccl plugin compiles against, checked: OVERRIDE (-DPLAIT_NCCL_INCLUDE_DIR)
# if given, else the wheel's beside TORCH_PREFIX. Sets <out> to it and <out>_HEADER (its nccl.h),
# <out>_VERSION (the checked X.Y.Z, "" when UNCHECKED let an unknown one through) and
# <out>_DEPENDS (the files read, for CMAKE_CONFIGURE_DEPENDS); or <out> to "" and <out>_WHY to a
# sentence saying why the plugin cannot be built and what to do. FATAL_ERROR: a header of another
# version than LibTorch's, an OVERRIDE without nccl.h, or a LibTorch whose NCCL version cannot
# be found (unless UNCHECKED).
function(plait_select_nccl_headers out)
  cmake_parse_arguments(ARG "" "TORCH_PREFIX;TORCH_VERSION;OVERRIDE;UNCHECKED" "" ${ARGN})
  plait_torch_nccl_version(expected source package "${ARG_TORCH_PREFIX}" "${ARG_TORCH_VERSION}")
  _plait_wheel_site_packages(site "${ARG_TORCH_PREFIX}")
  set(${out} "" PARENT_SCOPE)
  set(${out}_HEADER "" PARENT_SCOPE)
  set(${out}_VERSION "" PARENT_SCOPE)
  set(${out}_DEPENDS "" PARENT_SCOPE)
  set(${out}_WHY "" PARENT_SCOPE)
  if(ARG_OVERRIDE)
    get_filename_component(dir "${ARG_OVERRIDE}" ABSOLUTE)
    if(NOT EXISTS "${dir}/nccl.h")
      message(FATAL_ERROR "plait: PLAIT_NCCL_INCLUDE_DIR is ${ARG_OVERRIDE}, which holds no nccl.h")
    endif()
  else()
    plait_wheel_nccl_include_dir(dir "${ARG_TORCH_PREFIX}")
    if(NOT dir)
      if(package)
        set(fix "`pip install ${package}==${expected}` into the Python environment of this torch (${site})")
      elseif(expected)
        set(fix "install the headers of NCCL ${expected} (${source})")
      else()
        set(fix "install the headers of the NCCL this LibTorch was built with")
      endif()
      string(CONCAT why
             "this LibTorch (${ARG_TORCH_PREFIX}) is CUDA-enabled but ${site}/nvidia/nccl/include/nccl.h, "
             "the NCCL headers of the torch wheel, is not there. Fix: ${fix}, or set "
             "-DPLAIT_NCCL_INCLUDE_DIR=<their include folder>. Other nccl.h files (/usr/local/cuda, "
             "system paths) are not used: their version need not be LibTorch's.")
      set(${out}_WHY "${why}" PARENT_SCOPE)
      return()
    endif()
  endif()
  set(header "${dir}/nccl.h")
  set(depends "${header}")
  if(expected)
    plait_check_nccl_header("${header}" "${expected}" SOURCE "${source}" PACKAGE "${package}")
    list(APPEND depends "${source_FILE}")
  elseif(ARG_UNCHECKED)
    plait_nccl_header_version(found "${header}")
    message(WARNING "plait: the nccl plugin is built against ${header} (NCCL ${found}) unchecked "
                    "(PLAIT_NCCL_UNCHECKED): the NCCL version LibTorch (${ARG_TORCH_PREFIX}) was built "
                    "with could not be found, and if it differs the plugin corrupts memory")
  else()
    plait_nccl_header_version(found "${header}")
    message(FATAL_ERROR
      "plait: the nccl plugin cannot check ${header} (NCCL ${found}) against LibTorch "
      "(${ARG_TORCH_PREFIX}): no torch-*.dist-info/METADATA beside it pins nvidia-nccl-cu<N>, and "
      "no nccl.h in its include folder says which NCCL it was built with. A header of another "
      "version than LibTorch's corrupts memory. Fix: build against a torch wheel, or, knowing this "
      "header is LibTorch's NCCL, set -DPLAIT_NCCL_UNCHECKED=ON.")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
  set(${out}_HEADER "${header}" PARENT_SCOPE)
  set(${out}_VERSION "${expected}" PARENT_SCOPE)
  set(${out}_DEPENDS "${depends}" PARENT_SCOPE)
endfunction()
