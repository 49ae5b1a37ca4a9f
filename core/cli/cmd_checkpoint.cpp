#include <cstdio>

#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_reader.hpp"
#include "cli/commands.hpp"
#include "util/human_bytes.hpp"

namespace plait::cli {
namespace {

std::string joined(const std::vector<int64_t>& v) {
  std::string s;
  for (std::size_t k = 0; k < v.size(); ++k) s += (k ? " x " : "") + std::to_string(v[k]);
  return s;
}

}  // namespace

int checkpoint_inspect(const CheckpointArgs& args) {
  const auto folder = checkpoint::resolve_checkpoint(args.path);
  const checkpoint::CheckpointIndex index = checkpoint::read_index(folder);
  std::printf("checkpoint %s\n", folder.c_str());
  std::printf("step %lld, %lld tokens, %lld samples; written by plait %s (LibTorch %s), format %d\n",
              static_cast<long long>(index.step), static_cast<long long>(index.tokens),
              static_cast<long long>(index.samples), index.plait_version.c_str(), index.libtorch_version.c_str(),
              index.format_version);
  std::string mesh, plugins;
  for (const auto& [axis, n] : index.mesh) mesh += (mesh.empty() ? "" : " x ") + axis + " " + std::to_string(n);
  for (const auto& [role, name] : index.plugins) plugins += (plugins.empty() ? "" : ", ") + role + " " + name;
  std::printf("saved under %s; %s\n", mesh.c_str(), plugins.c_str());
  int64_t bytes = 0;
  for (const auto& [name, f] : index.files) bytes += f.bytes;
  std::printf("%zu tensors in %zu files, %s\n", index.tensors.size(), index.files.size(), human_bytes(bytes).c_str());
  for (const auto& [name, t] : index.tensors) {
    std::printf("  %-48s %-5s %-18s %zu part%s\n", name.c_str(), t.dtype.c_str(), joined(t.shape).c_str(),
                t.parts.size(), t.parts.size() == 1 ? "" : "s");
  }
  return 0;
}

int checkpoint_verify(const CheckpointArgs& args) {
  const checkpoint::CheckpointReader reader(checkpoint::resolve_checkpoint(args.path));
  reader.verify();
  std::printf("checkpoint %s: %zu files, every size and checksum as its index says\n", reader.folder().c_str(),
              reader.index().files.size());
  return 0;
}

int checkpoint_diff(const CheckpointDiffArgs& args) {
  const auto a = checkpoint::resolve_checkpoint(args.a), b = checkpoint::resolve_checkpoint(args.b);
  const std::string difference = checkpoint::first_difference(a, b);
  if (difference.empty()) {
    std::printf("%s and %s hold the same state\n", a.c_str(), b.c_str());
    return 0;
  }
  std::printf("%s and %s differ: %s\n", a.c_str(), b.c_str(), difference.c_str());
  return 3;
}

}  // namespace plait::cli
