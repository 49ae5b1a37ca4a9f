# plait_add_plugin(<name> SOURCES <src>... SCHEMA <schema.toml> [OUTPUT_DIR <dir>] [SDK <target>])
#
# Builds lib<plait_plugin_<name>>.so, a module the plait loader finds by that prefix.
# The schema file is embedded as the string `plait_schema_toml` in the generated header
# "plait_schema.hpp", so the schema travels inside the library it describes. Its typed
# options are generated into "plait_options.hpp" (plait_typed_settings below): struct
# plait_options::Options, one field per key, read with
# `plait_options::Options::from(ctx.options)`. SDK names the headers to build against
# (plait::sdk; plait's tests build plugins against frozen copies of older API versions).
#
# plait_typed_settings(<target> SCHEMA <toml> TABLE <table> STRUCT <name> NAMESPACE <ns> HEADER <file>)
#
# Generates <file> (in <target>'s generated folder, on its include path) from the schema:
# a struct whose fields are the table's keys, typed (a string with choices an enum, an
# optional key a std::optional), with the schema's defaults and a `from(const
# plait::Options&)`. Run by plait-schema-gen, again whenever the schema changes.
include_guard(GLOBAL)

function(plait_typed_settings target)
  cmake_parse_arguments(ARG "" "SCHEMA;TABLE;STRUCT;NAMESPACE;HEADER" "" ${ARGN})
  foreach(arg SCHEMA TABLE STRUCT NAMESPACE HEADER)
    if(NOT ARG_${arg})
      message(FATAL_ERROR "plait_typed_settings(${target}): ${arg} is required")
    endif()
  endforeach()
  if(TARGET plait-schema-gen)
    set(gen $<TARGET_FILE:plait-schema-gen>)
    set(gen_dependency plait-schema-gen)
  elseif(PLAIT_SCHEMA_GEN)
    set(gen ${PLAIT_SCHEMA_GEN})
    set(gen_dependency ${PLAIT_SCHEMA_GEN})
  else()
    message(FATAL_ERROR "plait_typed_settings(${target}): no plait-schema-gen (find_package(plait) sets PLAIT_SCHEMA_GEN)")
  endif()
  get_filename_component(schema_path "${ARG_SCHEMA}" ABSOLUTE)
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_generated)
  set(out ${gen_dir}/${ARG_HEADER})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}
    COMMAND ${gen} ${schema_path} ${ARG_TABLE} ${ARG_STRUCT} ${ARG_NAMESPACE} ${out}
    DEPENDS ${schema_path} ${gen_dependency}
    COMMENT "typed settings of [${ARG_TABLE}] from ${ARG_SCHEMA}"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
  target_include_directories(${target} PRIVATE ${gen_dir})
endfunction()

function(plait_embed_text out_header symbol text_file)
  file(READ "${text_file}" _text)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${text_file}")
  file(CONFIGURE OUTPUT "${out_header}"
       CONTENT "// generated from ${text_file}\n#pragma once\ninline constexpr const char ${symbol}[] = R\"plait_text(@_text@)plait_text\";\n"
       @ONLY)
endfunction()

function(plait_add_plugin name)
  cmake_parse_arguments(ARG "" "SCHEMA;OUTPUT_DIR;SDK" "SOURCES" ${ARGN})
  if(NOT ARG_SDK)
    set(ARG_SDK plait::sdk)
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "plait_add_plugin(${name}): SOURCES is required")
  endif()
  if(NOT ARG_SCHEMA)
    message(FATAL_ERROR "plait_add_plugin(${name}): SCHEMA <file.toml> is required (it may be empty)")
  endif()
  set(target plait_plugin_${name})
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/${target}_generated)
  get_filename_component(schema_path "${ARG_SCHEMA}" ABSOLUTE)
  plait_embed_text(${gen_dir}/plait_schema.hpp plait_schema_toml "${schema_path}")

  add_library(${target} MODULE ${ARG_SOURCES})
  set_property(GLOBAL APPEND PROPERTY PLAIT_PLUGIN_TARGETS ${target})
  target_include_directories(${target} PRIVATE ${gen_dir})
  plait_typed_settings(${target} SCHEMA ${schema_path} TABLE ${name} STRUCT Options NAMESPACE plait_options
                       HEADER plait_options.hpp)
  target_link_libraries(${target} PRIVATE ${ARG_SDK})
  # Only the entry point needs to be visible; everything else stays private to the plugin.
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN OFF
    PREFIX "lib"
    OUTPUT_NAME ${target})
  if(ARG_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR})
  elseif(DEFINED PLAIT_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${PLAIT_PLUGIN_OUTPUT_DIR})
  endif()
endfunction()
