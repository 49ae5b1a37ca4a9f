#pragma once
// Shape functions on the meta device for the operators a training step runs whose meta
// kernels PyTorch registers only from Python (torch/_meta_registrations.py): in LibTorch
// alone, an embedding, a layer norm's backward or CPU flash attention on the meta device
// throw "no fake impl or Meta kernel registered". Each gives its outputs' shapes and
// dtypes as the CPU kernel would (the bytes are what the planner counts); an in-place
// update does nothing.
namespace plait {

// Idempotent: registers them with the dispatcher the first time.
void register_meta_kernels();

}  // namespace plait
