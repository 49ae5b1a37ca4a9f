#pragma once
// How bytes move. Shaped like c10d's Backend/Work: one options struct per operation,
// every operation asynchronous with a Work handle. Every operation carries a tag that
// says who asked for it, so a hang report can name "rank 3 never joined the all-gather
// of fsdp unit h.7, microbatch 2". Every operation below is required of a comm plugin;
// an operation a later minor version adds arrives as an extension (find_extension), and
// a communicator built before it answers null: whoever needs it then says
// "<backend> does not support <op>".
// Plugins of every kind receive Communicators; comm plugins make them (comm_backend.hpp).
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/core/Tensor.h>

#include "plait/sdk/version.hpp"

namespace plait {

enum class ReduceOp { sum, avg, max, min };

struct OpTag {
  std::string plugin;   // who asked: "ddp", "zero", "core"
  std::string phase;    // "grad-sync", "param-gather", "broadcast-init", ...
  std::string unit;     // bucket or unit, e.g. "bucket 3", "h.7"
  int64_t microbatch = -1;
};

// "ddp grad-sync bucket 3 (microbatch 2)": who asked, as hang reports and errors name it.
inline std::string describe_tag(const OpTag& tag) {
  std::string who = tag.plugin.empty() ? std::string("unknown caller") : tag.plugin;
  if (!tag.phase.empty()) who += " " + tag.phase;
  if (!tag.unit.empty()) who += " " + tag.unit;
  if (tag.microbatch >= 0) who += " (microbatch " + std::to_string(tag.microbatch) + ")";
  return who;
}

struct CommOptions {
  std::chrono::milliseconds timeout{0};  // 0: the communicator's default
  OpTag tag;
};
struct AllReduceOptions : CommOptions {
  ReduceOp op = ReduceOp::sum;
};
struct ReduceScatterOptions : CommOptions {
  ReduceOp op = ReduceOp::sum;
};
struct BroadcastOptions : CommOptions {
  int root = 0;  // rank within the group
};
struct PointToPointOptions : CommOptions {
  int peer = 0;  // rank within the group
  // Tells this pair's messages apart on backends that match by tag (gloo). NCCL ignores
  // it: there, messages between two ranks match in the order they are posted.
  int tag_id = 0;
};

// One operation of a batch_p2p group.
struct PointToPoint {
  enum class Kind { send, recv };
  Kind kind = Kind::send;
  at::Tensor tensor;  // read by a send, written by a recv
  PointToPointOptions options;
};

class PLAIT_SDK_VISIBLE Work {
 public:
  virtual ~Work() = default;
  virtual bool is_completed() = 0;
  // Makes what follows on this thread see the operation's result. What it holds back
  // depends on where the operation runs:
  //  - on the host (gloo): the calling thread, until the operation is done; it throws the
  //    operation's failure, or a timeout naming the tag after `timeout` (0: the group's);
  //  - on a GPU (NCCL): only the thread's current CUDA stream, ordered after the operation;
  //    the host goes on at once, `timeout` is not used (the backend's watchdog keeps the
  //    group's timeout and the one the operation was issued with, and a failure surfaces
  //    there or at a later wait), and the operation may still be running when it returns.
  // A plugin that needs the value on the host reads it through the core's HostReader.
  virtual void wait(std::chrono::milliseconds timeout = std::chrono::milliseconds{0}) = 0;
  // The failure of a completed operation, or null.
  virtual std::exception_ptr exception() = 0;
  // The operation's own time on its device once it completed, where the backend measures
  // it (NCCL with timing on: CUDA events around its kernel); nullopt otherwise, and the
  // core times it on the host from issue to completion. On a GPU, wait() may return
  // before completion (it only orders the current stream after the operation), so the
  // core keeps asking is_completed() and this after wait() has returned.
  virtual std::optional<double> device_seconds() { return std::nullopt; }
  // Interfaces a later minor version adds to operations (plugin.hpp, extension()).
  virtual void* find_extension(std::string_view id) { return nullptr; }
};

// One process group along one mesh axis.
class PLAIT_SDK_VISIBLE Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;

  virtual std::shared_ptr<Work> all_reduce(at::Tensor& tensor, const AllReduceOptions& o) = 0;
  // output = this rank's 1/size slice of the reduction of input (input.numel() = size * output.numel()).
  virtual std::shared_ptr<Work> reduce_scatter(at::Tensor& output, const at::Tensor& input,
                                               const ReduceScatterOptions& o) = 0;
  // output = concatenation of every rank's input (output.numel() = size * input.numel()).
  virtual std::shared_ptr<Work> all_gather(at::Tensor& output, const at::Tensor& input,
                                           const CommOptions& o) = 0;
  virtual std::shared_ptr<Work> broadcast(at::Tensor& tensor, const BroadcastOptions& o) = 0;
  virtual std::shared_ptr<Work> send(const at::Tensor& tensor, const PointToPointOptions& o) = 0;
  virtual std::shared_ptr<Work> recv(at::Tensor& tensor, const PointToPointOptions& o) = 0;
  // Posts the operations as one group, as NCCL's ncclGroupStart/End (c10d's
  // batch_isend_irecv) does: they progress together, so two ranks may each send to the
  // other before either receives. Under NCCL a lone send may wait until its receive is
  // posted, and a rank's point-to-point operations run in the order they were posted;
  // a pair's opposite messages must therefore share a group. One Work per operation, in
  // order. A backend whose sends never wait (gloo) may post them one by one.
  virtual std::vector<std::shared_ptr<Work>> batch_p2p(std::vector<PointToPoint>& ops) = 0;
  virtual std::shared_ptr<Work> barrier(const CommOptions& o) = 0;
  // Interfaces a later minor version adds to communicators (plugin.hpp, extension()).
  virtual void* find_extension(std::string_view id) { return nullptr; }
};

// API 12.10: how a communicator ends. The core ends its groups in order when the rank
// ends (a subgroup before the group it was split from, the world last): shutdown() after a
// clean end, when every operation has completed; abort() when the rank fails, ending what
// is in flight. A communicator without it is left to its destructor (NCCL's warns there,
// and tearing a parent down before its splits is undefined).
class PLAIT_SDK_VISIBLE CommunicatorShutdown {
 public:
  static constexpr const char* kExtension = "plait.communicator.shutdown/1";
  virtual ~CommunicatorShutdown() = default;
  virtual void shutdown() = 0;
  virtual void abort() = 0;
};

// Splits a mesh axis's group into smaller ones (hybrid sharding: shard within groups,
// replicate across them). Collective: every member of the axis group calls it with the
// same name and the same partition, in the same order.
class PLAIT_SDK_VISIBLE GroupMaker {
 public:
  virtual ~GroupMaker() = default;
  // `members`: ranks within the axis group, in the new group's rank order; this
  // process must be one of them. The group lives as long as the job.
  virtual Communicator* subgroup(const std::string& name, const std::vector<int>& members) = 0;
};

}  // namespace plait
