#pragma once
// Typed settings generated from a table's schema (config/schema.hpp): one struct whose
// fields are the table's keys, typed as the schema says (a string with choices becomes an
// enum, an optional key a std::optional), their defaults the schema's, and one `from`
// that reads a validated table. The core's tables and every plugin's schema go through it
// (plait-schema-gen, called by CMake), so code reads `train.lr_schedule` or
// `options.ratio` instead of looking a string key up with a type at each use.
#include <string>

#include "config/schema.hpp"

namespace plait {

struct TypedNames {
  std::string struct_name;        // "TrainSettings"
  std::string name_space;         // "plait" or "my_plugin"
  std::string schema_file;        // named in the header's first line
};

// The header's text. Throws plait::Error naming the schema's table when a key or a
// choice cannot become a C++ name (two choices that differ only in punctuation).
std::string typed_header(const TableSchema& schema, const TypedNames& names);

// What plait-schema-gen writes for a schema's text: typed_header's, or when plait would
// refuse the schema, a header that is an #error with the reason (also put in `refused`):
// a plugin that includes it fails to compile saying why; one that does not (a fixture
// whose schema is wrong on purpose) still builds, and plait refuses it when it loads.
std::string generated_header(const std::string& schema_text, const std::string& table, const TypedNames& names,
                             std::string& refused);

// "lr_schedule" -> "LrSchedule"; "1f1b" -> "_1f1b"; "interleaved-1f1b" -> "interleaved_1f1b";
// a C++ keyword gets a trailing '_'.
std::string type_name_of(const std::string& key);
std::string identifier_of(const std::string& text);

}  // namespace plait
