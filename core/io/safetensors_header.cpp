#include "io/safetensors_header.hpp"

#include <limits>

#include <nlohmann/json.hpp>

#include "plait/sdk/error.hpp"
#include "util/json_problem.hpp"

namespace plait {

int64_t safetensors_dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, int64_t> sizes = {{"F64", 8}, {"F32", 4}, {"BF16", 2}, {"F16", 2},
                                                       {"I64", 8}, {"I32", 4}, {"I16", 2},  {"I8", 1},
                                                       {"U8", 1},  {"U16", 2}, {"U32", 4},  {"BOOL", 1}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

std::map<std::string, SafetensorsEntry> parse_safetensors_entries(const std::string& text, int64_t file_size,
                                                                  const std::string& path) {
  const int64_t data_start = 8 + static_cast<int64_t>(text.size());
  const int64_t data_bytes = file_size - data_start;
  std::map<std::string, SafetensorsEntry> out;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(concat(path, ": safetensors header is not valid JSON: ", json_problem(e)), "the file is damaged");
  }
  PLAIT_CHECK(header.is_object(), concat(path, ": safetensors header is not a JSON object"), "the file is damaged");
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string bad = concat(path, ": tensor ", it.key(), " in the safetensors header ");
    SafetensorsEntry e;
    std::vector<int64_t> offsets;
    try {
      e.dtype = it.value().at("dtype").get<std::string>();
      e.shape = it.value().at("shape").get<std::vector<int64_t>>();
      offsets = it.value().at("data_offsets").get<std::vector<int64_t>>();
    } catch (const nlohmann::json::exception& ex) {
      throw Error(concat(bad, "is malformed: ", json_problem(ex)), "the file is damaged");
    }
    const int64_t element = safetensors_dtype_bytes(e.dtype);
    PLAIT_CHECK(element > 0, concat(path, ": unsupported safetensors dtype ", e.dtype),
                "plait reads F64 F32 BF16 F16 I64 I32 I16 I8 U8 U16 U32 BOOL");
    PLAIT_CHECK(offsets.size() == 2 && 0 <= offsets[0] && offsets[0] <= offsets[1] && offsets[1] <= data_bytes,
                concat(bad, "has data_offsets outside the file's ", data_bytes, " bytes of data"),
                "the file is truncated or damaged");
    int64_t bytes = element;
    for (const int64_t d : e.shape) {
      PLAIT_CHECK(d >= 0 && (d == 0 || bytes <= std::numeric_limits<int64_t>::max() / d),
                  concat(bad, "has a shape no tensor can have"), "the file is damaged");
      bytes *= d;
    }
    PLAIT_CHECK(bytes == offsets[1] - offsets[0],
                concat(bad, "says ", bytes, " bytes by its shape and dtype but its offsets hold ", offsets[1] - offsets[0]),
                "the file is damaged");
    e.begin = data_start + offsets[0];
    e.end = data_start + offsets[1];
    out.emplace(it.key(), std::move(e));
  }
  return out;
}

}  // namespace plait
