#pragma once
// Stream marks (timing/stream_mark.hpp) as timing events on a device's current stream.
#include <c10/core/Device.h>

#include "timing/stream_mark.hpp"

namespace plait {

// Timing events (c10::Event) on `device`'s current stream; an empty marker for the CPU,
// whose work is the host's and is timed by host clocks.
StreamMarker event_marker_for(const c10::Device& device);

}  // namespace plait
