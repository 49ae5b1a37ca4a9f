#include "timing/trace_recorder.hpp"

#include <functional>

namespace plait {
namespace {

std::atomic<TraceRecorder*> g_recorder{nullptr};

}  // namespace

TraceRecorder::TraceRecorder(int rank) : rank_(rank) { g_recorder = this; }

TraceRecorder::~TraceRecorder() {
  TraceRecorder* self = this;
  g_recorder.compare_exchange_strong(self, nullptr);
}

TraceRecorder* TraceRecorder::recording() {
  TraceRecorder* r = g_recorder.load(std::memory_order_relaxed);
  return r != nullptr && r->on_.load(std::memory_order_relaxed) ? r : nullptr;
}

double TraceRecorder::micros(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

void TraceRecorder::start(int64_t step) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_ = step;
  events_ = nlohmann::json::array();
  open_.clear();
  seen_.clear();
  on_ = true;
}

nlohmann::json TraceRecorder::stop() {
  on_ = false;
  std::lock_guard<std::mutex> lock(mutex_);
  // A collective still in flight at the step's end (a GPU's, an async save's) ends here.
  const double now = micros(Clock::now());
  for (const auto& [id, name] : open_) {
    events_.push_back({{"name", name}, {"cat", "collective"}, {"ph", "e"}, {"id", id}, {"pid", rank_}, {"tid", 0}, {"ts", now}});
  }
  open_.clear();
  nlohmann::json out = std::move(events_);
  events_ = nlohmann::json::array();
  return out;
}

void TraceRecorder::span(TraceTrack track, const std::string& name, const std::string& category,
                         Clock::time_point start, Clock::time_point end, nlohmann::json args) {
  args["step"] = step_;
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back({{"name", name},
                     {"cat", category},
                     {"ph", "X"},
                     {"pid", rank_},
                     {"tid", static_cast<int>(track)},
                     {"ts", micros(start)},
                     {"dur", std::chrono::duration<double, std::micro>(end - start).count()},
                     {"args", std::move(args)}});
}

uint64_t TraceRecorder::collective(const std::string& name, nlohmann::json args, Clock::time_point issued) {
  args["step"] = step_;
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = (static_cast<uint64_t>(rank_) << 40) + next_id_++;
  open_[id] = name;
  events_.push_back({{"name", name}, {"cat", "collective"}, {"ph", "b"}, {"id", id}, {"pid", rank_}, {"tid", 0},
                     {"ts", micros(issued)}, {"args", std::move(args)}});
  return id;
}

void TraceRecorder::collective_done(uint64_t id, Clock::time_point done) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = open_.find(id);
  if (it == open_.end()) return;
  events_.push_back({{"name", it->second}, {"cat", "collective"}, {"ph", "e"}, {"id", id}, {"pid", rank_}, {"tid", 0},
                     {"ts", micros(done)}});
  open_.erase(it);
}

void TraceRecorder::transfer(bool is_send, int from, int to, int tag, const std::string& name, nlohmann::json args,
                             Clock::time_point issued, Clock::time_point done) {
  args["step"] = step_;
  args["from_rank"] = from;
  args["to_rank"] = to;
  std::lock_guard<std::mutex> lock(mutex_);
  // The n-th message of a tag between two ranks is the same message on both sides.
  const int64_t n = seen_[{is_send, from, to, tag}]++;
  const uint64_t flow = std::hash<std::string>{}(
      std::to_string(step_) + "/" + std::to_string(from) + ">" + std::to_string(to) + "#" + std::to_string(tag) + "." +
      std::to_string(n)) >> 1;
  const int tid = static_cast<int>(TraceTrack::transfers);
  const double start = micros(issued), end = micros(done);
  events_.push_back({{"name", name}, {"cat", is_send ? "send" : "recv"}, {"ph", "X"}, {"pid", rank_}, {"tid", tid},
                     {"ts", start}, {"dur", end - start}, {"args", std::move(args)}});
  // The arrow leaves the send's slice where it starts and enters the receive's where it ends.
  nlohmann::json f = {{"name", "message"}, {"cat", "p2p"}, {"ph", is_send ? "s" : "f"}, {"id", flow},
                      {"pid", rank_}, {"tid", tid}, {"ts", is_send ? start : end}};
  if (!is_send) f["bp"] = "e";
  events_.push_back(std::move(f));
}

TraceSpan::TraceSpan(const char* category, std::string name) : category_(category) {
  recorder_ = TraceRecorder::recording();
  if (recorder_ == nullptr) return;
  name_ = std::move(name);
  start_ = TraceRecorder::Clock::now();
}

TraceSpan::~TraceSpan() {
  if (recorder_ != nullptr) recorder_->span(TraceTrack::compute, name_, category_, start_, TraceRecorder::Clock::now());
}

}  // namespace plait
