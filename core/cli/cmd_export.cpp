#include <cstdio>
#include <filesystem>

#include <ATen/ATen.h>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "checkpoint/state_parts.hpp"
#include "cli/commands.hpp"
#include "io/hf_weights.hpp"
#include "model/hf_format.hpp"
#include "model/model_zoo.hpp"
#include "run/resume_check.hpp"
#include "run/run_folder.hpp"
#include "util/human_bytes.hpp"

namespace plait::cli {
namespace fs = std::filesystem;

// The checkpoint's parameters, whole, in the asked dtype, written beside the target and
// renamed into place: a failure leaves no half-written model folder.
int export_hf(const ExportArgs& args) {
  check_new_folder(args.hf, "the export folder", "--hf", "plait never writes over an earlier model folder");
  const fs::path folder = checkpoint::resolve_checkpoint(args.path);
  checkpoint::CheckpointReader reader(folder);
  const auto& state = reader.index().state;
  PLAIT_CHECK(state.contains("model"), concat("checkpoint ", folder.string(), " does not record its model's dimensions"),
              "it was written by an older plait; resume it once with this one and export the new checkpoint");
  const ModelSpec spec = model_from_json(state.at("model"));
  // Every tensor the model has: one left out would be initialised at random by whoever loads the export.
  check_checkpoint_holds_model(folder, reader.index(), build_meta_model(spec),
                               "its index does not match the model it records: the checkpoint is damaged; export another");
  const at::ScalarType dtype = args.dtype == "bfloat16" ? at::kBFloat16 : args.dtype == "float16" ? at::kHalf : at::kFloat;
  const std::string prefix = concat(state_kind::param, "/");
  NamedTensorList weights;
  for (const auto& [name, entry] : reader.index().tensors) {
    if (name.rfind(prefix, 0) != 0) continue;
    weights.emplace_back(name.substr(prefix.size()), reader.read(name, checkpoint::Region::whole(entry)).to(dtype));
  }
  const fs::path staging = fs::path(args.hf).string() + ".partial";
  fs::remove_all(staging);
  try {
    write_hf_folder(staging, spec.family, hf_config(spec, args.dtype).dump(2), weights,
                    static_cast<int64_t>(args.shard_mb * 1e6));
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove_all(staging, ec);  // nothing half-written is left behind
    throw Error(concat("exporting to ", args.hf, " failed, and nothing was left there: ", e.what()),
                "check free space and permissions where --hf points");
  }
  fs::remove_all(args.hf);  // empty, as check_new_folder made sure
  fs::rename(staging, args.hf);
  int64_t bytes = 0;
  for (const auto& [name, t] : weights) bytes += static_cast<int64_t>(t.nbytes());
  std::printf("exported %s (%s %s, step %lld): %zu tensors, %s of %s, to %s\n", folder.c_str(), spec.family.c_str(),
              spec.size.c_str(), static_cast<long long>(reader.index().step), weights.size(), human_bytes(bytes).c_str(),
              args.dtype.c_str(), args.hf.c_str());
  return 0;
}

}  // namespace plait::cli
