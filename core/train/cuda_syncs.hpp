#pragma once
// A GPU's own word on the host's waits (debug.count_host_syncs on CUDA). LibTorch's
// sync-debug mode raises a warning at every stream, event or device synchronise and at
// every copy it waits out; while watched, plait counts each instead of printing it. The
// RecordFunction observer (host_syncs.cpp) sees operators only; these waits are not all
// operators (an event's synchronize, a copy inside a kernel's launch), so on a GPU they
// are counted here. Builds whose LibTorch has no CUDA watch nothing.
namespace plait {

// Sets sync-debug to warn and counts each of its warnings with `on_sync`, called on the
// thread that waited; false where this build has no CUDA.
bool watch_cuda_syncs(void (*on_sync)());
void stop_watching_cuda_syncs();
// c10's warning handler is set per thread: each thread that may wait (the caller's, and
// autograd's device threads) takes the counting one before its first operator.
void count_cuda_syncs_on_this_thread();

}  // namespace plait
