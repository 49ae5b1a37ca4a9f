#include "distributed/tensor_gather.hpp"

#include <ATen/ATen.h>

namespace plait {

NamedTensors gather_tensor_parallel(const NamedTensors& local, const std::map<std::string, TensorSplit>& splits,
                                    Communicator* tp, const at::Device& device) {
  if (tp == nullptr) return local;
  const int64_t ways = tp->size();
  NamedTensors out;
  for (const auto& [name, slice] : local) {
    auto it = splits.find(name);
    if (it == splits.end() || it->second.dim < 0) {
      out.emplace_back(name, slice);
      continue;
    }
    const TensorSplit split = it->second;
    // On the rank's device (an offloaded slice lives on the host), flat as gloo gathers.
    at::Tensor mine = slice.to(device).contiguous().reshape({-1});
    at::Tensor all = at::empty({ways * mine.numel()}, mine.options());
    CommOptions o;
    o.tag = {"core", "tp-gather", name, -1};
    tp->all_gather(all, mine, o)->wait();
    std::vector<int64_t> shape = {ways};
    for (int64_t d : slice.sizes()) shape.push_back(d);
    at::Tensor by_rank = all.view(shape);
    // Rank r holds part p's r-th slice at [p*n, (p+1)*n) along dim: reassemble part by part.
    std::vector<at::Tensor> parts;
    for (int64_t p = 0; p < split.parts; ++p) {
      std::vector<at::Tensor> slices;
      for (int64_t r = 0; r < ways; ++r) {
        at::Tensor rank_slice = by_rank[r];
        const int64_t n = rank_slice.size(split.dim) / split.parts;
        slices.push_back(rank_slice.narrow(split.dim, p * n, n));
      }
      parts.push_back(at::cat(slices, split.dim));
    }
    out.emplace_back(name, at::cat(parts, split.dim));
  }
  return out;
}

namespace {

constexpr int kStageGatherTag = 1 << 29;  // above the pipeline's activation and tied tags

PointToPointOptions stage_gather_options(int peer, int seq, const std::string& what) {
  PointToPointOptions o;
  o.peer = peer;
  o.tag_id = kStageGatherTag + seq;
  o.tag = {"core", "stage-gather", what, -1};
  return o;
}

}  // namespace

NamedTensors gather_pipeline_stages(NamedTensors local, Communicator* pp, const at::Device& device) {
  if (pp == nullptr) return local;
  // Everything sent or received on the rank's device, whatever its tensors' (a stage
  // with no tensor of its own, or one offloaded to the host, still talks to a GPU peer).
  const auto on = at::TensorOptions().device(device);
  const auto longs = at::TensorOptions().dtype(at::kLong).device(device);
  if (pp->rank() != 0) {
    // Header per tensor: name length, dtype, rank, sizes; then the name's bytes and the data.
    int seq = 0;
    at::Tensor count = at::full({1}, static_cast<int64_t>(local.size()), longs);
    pp->send(count, stage_gather_options(0, seq++, "count"))->wait();
    for (const auto& [name, tensor] : local) {
      std::vector<int64_t> header = {static_cast<int64_t>(name.size()), static_cast<int64_t>(tensor.scalar_type()),
                                     tensor.dim()};
      for (int64_t d : tensor.sizes()) header.push_back(d);
      header.resize(16, 0);
      at::Tensor head = at::tensor(header, longs.device(at::kCPU)).to(on.device());
      pp->send(head, stage_gather_options(0, seq++, name))->wait();
      at::Tensor bytes = at::empty({static_cast<int64_t>(name.size())}, at::TensorOptions().dtype(at::kByte));
      std::copy(name.begin(), name.end(), bytes.data_ptr<uint8_t>());
      bytes = bytes.to(on.device());
      pp->send(bytes, stage_gather_options(0, seq++, name))->wait();
      at::Tensor data = tensor.detach().to(device).contiguous();
      pp->send(data, stage_gather_options(0, seq++, name))->wait();
    }
    return local;
  }
  for (int peer = 1; peer < pp->size(); ++peer) {
    int seq = 0;
    at::Tensor count = at::empty({1}, longs);
    pp->recv(count, stage_gather_options(peer, seq++, "count"))->wait();
    const int64_t n = count.cpu().item<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      at::Tensor head = at::empty({16}, longs);
      pp->recv(head, stage_gather_options(peer, seq++, "header"))->wait();
      head = head.cpu();
      const int64_t* h = head.data_ptr<int64_t>();
      at::Tensor bytes = at::empty({h[0]}, at::TensorOptions().dtype(at::kByte).device(on.device()));
      pp->recv(bytes, stage_gather_options(peer, seq++, "name"))->wait();
      bytes = bytes.cpu();
      std::string name(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()), static_cast<std::size_t>(h[0]));
      std::vector<int64_t> sizes(h + 3, h + 3 + h[2]);
      at::Tensor data = at::empty(sizes, at::TensorOptions().dtype(static_cast<at::ScalarType>(h[1])).device(on.device()));
      pp->recv(data, stage_gather_options(peer, seq++, name))->wait();
      local.emplace_back(std::move(name), std::move(data));
    }
  }
  return local;
}

}  // namespace plait
