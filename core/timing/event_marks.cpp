#include "timing/event_marks.hpp"

#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace plait {
namespace {

class EventMark final : public StreamMark {
 public:
  explicit EventMark(const c10::Device& device) : event_(device.type(), c10::EventFlag::BACKEND_DEFAULT) {
    event_.record(c10::impl::VirtualGuardImpl(device.type()).getStream(device));  // timing on: BACKEND_DEFAULT
  }
  bool passed() const override { return event_.query(); }
  double seconds_since(const StreamMark& earlier) const override {
    return static_cast<const EventMark&>(earlier).event_.elapsedTime(event_) / 1e3;  // c10 gives milliseconds
  }

 private:
  c10::Event event_;
};

}  // namespace

StreamMarker event_marker_for(const c10::Device& device) {
  if (!device.is_cuda()) return {};
  return [device] { return std::make_unique<EventMark>(device); };
}

}  // namespace plait
