// A LibTorch without CUDA: no GPU waits to watch (train/cuda_syncs.hpp).
#include "train/cuda_syncs.hpp"

namespace plait {

bool watch_cuda_syncs(void (*)()) { return false; }
void stop_watching_cuda_syncs() {}
void count_cuda_syncs_on_this_thread() {}

}  // namespace plait
