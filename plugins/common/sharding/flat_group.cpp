#include "sharding/flat_group.hpp"

#include <algorithm>

#include <c10/core/DeviceGuard.h>

namespace plait::sharding {

void allocate_storage(const at::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  const auto nbytes = static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
  if (storage->nbytes() == nbytes) return;
  // The CUDA caching allocator allocates on the current device: make it the tensor's.
  const c10::DeviceGuard on_its_device(tensor.device());
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

void free_storage(const at::Tensor& tensor) {
  c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, tensor.device()));
  storage->set_nbytes(0);
}

std::vector<Segment> segments_of(const std::vector<int64_t>& offsets, const std::vector<int64_t>& numels,
                                 const std::vector<bool>& decay, const std::vector<TensorSplit>& splits, int index,
                                 int64_t shard) {
  std::vector<Segment> out;
  const int64_t begin = static_cast<int64_t>(index) * shard, end = begin + shard;
  for (std::size_t k = 0; k < offsets.size(); ++k) {
    const int64_t a = std::max(begin, offsets[k]), b = std::min(end, offsets[k] + numels[k]);
    if (a < b) out.push_back({a - begin, b - a, decay[k], splits[k], k, a - offsets[k]});
  }
  return out;
}

}  // namespace plait::sharding
