#pragma once
// A comm backend whose operations complete at once and move nothing: one rank of a job
// of any size built alone (`plait plan --explain --measure`), its tensors on the meta
// device. The core's counted wrapper around it still records each operation's kind,
// axis, bytes and tag (CommStats, the flight recorder), which is what is measured.
#include <memory>

#include "plait/sdk/comm_backend.hpp"

namespace plait {

std::unique_ptr<CommBackend> make_instant_backend();

}  // namespace plait
