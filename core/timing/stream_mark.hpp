#pragma once
// Marks on the stream that does a rank's work, for timing it on the device. On a GPU the
// host returns from a launch (and, with stream-ordered waits, from a collective's wait)
// long before the kernels run, so host clocks time the launches; two marks on the
// current stream time what the stream did between them. Marks are read when the device
// has passed them, never waited for.
// (No LibTorch here: the phase clock that reads marks is in plait_base; the marks on a
// GPU's stream are timing/event_marks.)
#include <functional>
#include <memory>

namespace plait {

class StreamMark {
 public:
  virtual ~StreamMark() = default;
  // Whether the stream has passed this mark (a query, no wait).
  virtual bool passed() const = 0;
  // Seconds from `earlier` to this mark; both passed.
  virtual double seconds_since(const StreamMark& earlier) const = 0;
};

// Puts a mark on the current stream and returns it.
using StreamMarker = std::function<std::unique_ptr<StreamMark>()>;

}  // namespace plait
