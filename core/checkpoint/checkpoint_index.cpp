#include "checkpoint/checkpoint_index.hpp"

#include <algorithm>
#include <functional>
#include <numeric>

#include "io/safetensors_header.hpp"
#include "model/hf_format.hpp"
#include "plait/sdk/error.hpp"
#include "util/abbreviate.hpp"
#include "util/json_problem.hpp"

namespace plait::checkpoint {
namespace {

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<>());
}

nlohmann::ordered_json part_json(const TensorPart& p) {
  nlohmann::ordered_json j = {{"file", p.file}, {"key", p.key}};
  if (p.flat) {
    j["flat"] = {p.start, p.length};
  } else {
    j["offsets"] = p.offsets;
    j["lengths"] = p.lengths;
  }
  return j;
}

TensorPart part_from(const nlohmann::json& j) {
  TensorPart p;
  p.file = j.at("file").get<std::string>();
  p.key = j.at("key").get<std::string>();
  p.flat = j.contains("flat");
  if (p.flat) {
    const auto range = j.at("flat").get<std::vector<int64_t>>();
    PLAIT_CHECK(range.size() == 2, "a flat part has [start, length]", "");
    p.start = range[0];
    p.length = range[1];
  } else {
    p.offsets = j.at("offsets").get<std::vector<int64_t>>();
    p.lengths = j.at("lengths").get<std::vector<int64_t>>();
  }
  return p;
}

// What resume, export and the launcher read of the saved state, read here once: a
// checkpoint that `plait checkpoint verify` passes is one they can read.
void check_state(const CheckpointIndex& index, const std::string& where) {
  const nlohmann::json& trainer = index.state.at("trainer");
  for (const char* key : {"updates", "skipped", "samples", "tokens"}) trainer.at(key).get<int64_t>();
  PLAIT_CHECK(trainer.at("step").get<int64_t>() == index.step,
              concat(where, ": its step is ", index.step, " but its trainer state's is ", trainer.at("step").get<int64_t>()),
              "the checkpoint is damaged");
  index.state.at("data").at("order").get<std::string>();
  index.state.at("data").at("seed").get<uint64_t>();
  for (const char* key : {"dp", "micro_batch_size", "grad_accum"}) index.state.at("global_batch").at(key).get<int64_t>();
  model_from_json(index.state.at("model"));
}

}  // namespace

int64_t TensorPart::numel() const { return flat ? length : product(lengths); }
int64_t TensorEntry::numel() const { return product(shape); }

nlohmann::ordered_json tensor_to_json(const TensorEntry& t) {
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  for (const auto& p : t.parts) parts.push_back(part_json(p));
  return {{"dtype", t.dtype}, {"shape", t.shape}, {"parts", parts}};
}

TensorEntry tensor_from_json(const nlohmann::json& t) {
  TensorEntry e{t.at("dtype").get<std::string>(), t.at("shape").get<std::vector<int64_t>>(), {}};
  for (const auto& p : t.at("parts")) e.parts.push_back(part_from(p));
  return e;
}

nlohmann::ordered_json to_json(const CheckpointIndex& index) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::object();
  for (const auto& [name, t] : index.tensors) tensors[name] = tensor_to_json(t);
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  for (const auto& [name, f] : index.files) files[name] = {{"bytes", f.bytes}, {"xxh3", f.xxh3}, {"block_bytes", f.block_bytes}, {"blocks", f.blocks}};
  return {{"format", "plait-checkpoint"},
          {"format_version", index.format_version},
          {"plait_version", index.plait_version},
          {"libtorch_version", index.libtorch_version},
          {"step", index.step},
          {"tokens", index.tokens},
          {"samples", index.samples},
          {"mesh", index.mesh},
          {"plugins", index.plugins},
          {"state", index.state},
          {"files", files},
          {"tensors", tensors}};
}

namespace {

// What a well-formed index can still get wrong: counts no run can have, block checksums
// that do not fit their file, shapes and dtypes no tensor has, parts in unlisted files or
// not covering their tensor.
void check_index_holds_together(const CheckpointIndex& index, const std::string& where) {
  // A step, token or sample count no run can have would carry on as the learning rate's and the data's position.
  PLAIT_CHECK(index.step >= 1 && index.tokens >= 0 && index.samples >= 0,
              concat(where, ": the checkpoint index says step ", index.step, ", ", index.tokens, " tokens, ", index.samples,
                     " samples, which no run can have saved"),
              "the checkpoint is damaged; resume from another");
  for (const auto& [name, f] : index.files) {
    PLAIT_CHECK(f.bytes >= 0 && f.block_bytes > 0 &&
                    static_cast<int64_t>(f.blocks.size()) == 16 * ((f.bytes + f.block_bytes - 1) / f.block_bytes),
                concat(where, ": the block checksums of ", name, " do not fit its ", f.bytes, " bytes"),
                "the checkpoint is damaged");
  }
  for (const auto& [name, t] : index.tensors) {
    // Past 2^50 elements (a petabyte of parameters) a shape is damage, and its product would overflow.
    constexpr int64_t kMostElements = int64_t{1} << 50;
    int64_t elements = 1;
    for (const int64_t d : t.shape) {
      PLAIT_CHECK(d >= 0 && (d == 0 || elements <= kMostElements / d),
                  concat(where, ": tensor ", name, " has a shape no tensor can have (a size of ", d, ")"),
                  "the checkpoint is damaged");
      elements *= d;
    }
    PLAIT_CHECK(safetensors_dtype_bytes(t.dtype) > 0, concat(where, ": tensor ", name, " has dtype '", t.dtype,
                                                             "', which no safetensors file holds"),
                "the checkpoint is damaged");
    for (const auto& p : t.parts) {
      PLAIT_CHECK(index.files.count(p.file) == 1,
                  concat(where, ": tensor ", name, " has a part in ", p.file, ", which the index does not list"),
                  "the checkpoint is damaged");
    }
    check_parts_cover(name, t, where);
  }
}

}  // namespace

CheckpointIndex index_from_json(const nlohmann::json& j, const std::string& where) {
  // The library's words for a value of the wrong type name neither the file nor the key:
  // each top-level field is read naming its key.
  const std::string fix = "the checkpoint is damaged: resume or export from another one";
  auto field = [&](const char* key) -> const nlohmann::json& {
    PLAIT_CHECK(j.contains(key), concat(where, ": the checkpoint index is damaged: it lacks the key \"", key, "\""), fix);
    return j.at(key);
  };
  PLAIT_CHECK(j.is_object() && j.contains("format") && j.at("format") == "plait-checkpoint",
              concat(where, " is not a plait checkpoint index"), "point at a checkpoint folder (step-<N>) or a run folder");
  PLAIT_CHECK(!j.contains("format_version") || j.at("format_version").is_number_integer(),
              concat(where, ": the checkpoint index is damaged: its \"format_version\" is not a whole number"), fix);
  const int version = j.value("format_version", 0);
  PLAIT_CHECK(version == kFormatVersion,
              concat(where, ": checkpoint format version ", version, ", but this plait reads version ", kFormatVersion),
              "load it with the plait that wrote it, or export its weights there");
  CheckpointIndex index;
  const char* key = "";
  // The library converts 1e300 or 2^64-1 to an int64_t without a word: a count is whole
  // and fits, or the index is damaged.
  auto whole = [&](const nlohmann::json& v) -> int64_t {
    const bool fits = v.is_number_integer() &&
                      (!v.is_number_unsigned() || v.get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX));
    PLAIT_CHECK(fits, concat(where, ": the checkpoint index is damaged: its \"", key, "\" holds ",
                             abbreviate(v.dump(), 30), " where a whole number belongs"), fix);
    return v.get<int64_t>();
  };
  try {
    index.plait_version = field(key = "plait_version").get<std::string>();
    index.libtorch_version = field(key = "libtorch_version").get<std::string>();
    index.step = whole(field(key = "step"));
    index.tokens = whole(field(key = "tokens"));
    index.samples = whole(field(key = "samples"));
    PLAIT_CHECK(field(key = "mesh").is_object(),
                concat(where, ": the checkpoint index is damaged: its \"mesh\": ", field("mesh").is_array() ? "an array" : "a value",
                       " stands where an object belongs"),
                fix);
    for (const auto& [axis, degree] : field(key = "mesh").items()) {
      index.mesh[axis] = whole(degree);
      PLAIT_CHECK(index.mesh[axis] >= 1, concat(where, ": the checkpoint index is damaged: its mesh says ", axis, " ",
                                                index.mesh[axis], ", and a degree is 1 or more"), fix);
    }
    index.plugins = field(key = "plugins").get<std::map<std::string, std::string>>();
    index.state = field(key = "state");
    for (const auto& [name, f] : field(key = "files").items()) {
      index.files[name] = {f.at("bytes").get<int64_t>(), f.at("xxh3").get<std::string>(),
                           f.at("block_bytes").get<int64_t>(), f.at("blocks").get<std::string>()};
    }
    for (const auto& [name, t] : field(key = "tensors").items()) index.tensors[name] = tensor_from_json(t);
    key = "state";
    check_state(index, where);
  } catch (const nlohmann::json::exception& e) {
    throw Error(concat(where, ": the checkpoint index is damaged: its \"", key, "\": ", json_fault(e.what())), fix);
  }
  check_index_holds_together(index, where);
  return index;
}

void check_parts_cover(const std::string& name, const TensorEntry& entry, const std::string& where) {
  const int64_t numel = entry.numel();
  std::vector<std::pair<int64_t, int64_t>> flat;
  int64_t covered = 0;
  for (const auto& p : entry.parts) {
    if (p.flat) {
      PLAIT_CHECK(p.start >= 0 && p.length > 0 && p.start + p.length <= numel,
                  concat(where, ": tensor ", name, " has a flat part [", p.start, ", ", p.start + p.length,
                         ") outside its ", numel, " elements"),
                  "the checkpoint is damaged");
      flat.emplace_back(p.start, p.start + p.length);
    } else {
      PLAIT_CHECK(p.offsets.size() == entry.shape.size() && p.lengths.size() == entry.shape.size(),
                  concat(where, ": tensor ", name, " has a slice of ", p.offsets.size(), " dimensions for a shape of ",
                         entry.shape.size()),
                  "the checkpoint is damaged");
      for (std::size_t d = 0; d < entry.shape.size(); ++d) {
        PLAIT_CHECK(p.offsets[d] >= 0 && p.lengths[d] > 0 && p.offsets[d] + p.lengths[d] <= entry.shape[d],
                    concat(where, ": tensor ", name, " has a slice past its dimension ", d, " of ", entry.shape[d]),
                    "the checkpoint is damaged");
      }
    }
    covered += p.numel();
  }
  std::sort(flat.begin(), flat.end());
  for (std::size_t k = 1; k < flat.size(); ++k) {
    PLAIT_CHECK(flat[k].first >= flat[k - 1].second,
                concat(where, ": tensor ", name, " has overlapping parts at element ", flat[k].first),
                "the checkpoint is damaged");
  }
  // Slices of one tensor are disjoint by construction (a mesh's tiles); counting their
  // elements with the flat ranges' catches a missing part.
  PLAIT_CHECK(covered == numel,
              concat(where, ": tensor ", name, "'s parts hold ", covered, " of its ", numel, " elements"),
              "the checkpoint is incomplete: a rank's part is missing");
}

}  // namespace plait::checkpoint
