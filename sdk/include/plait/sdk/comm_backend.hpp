#pragma once
// A comm plugin: makes the Communicators of the job's groups (communicator.hpp). Its
// options arrive through Plugin::configure; its probe says whether it can run here.
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "plait/sdk/communicator.hpp"
#include "plait/sdk/plugin.hpp"

namespace plait {

// What a comm plugin needs to build one group. Rendezvous goes through the job's TCP
// store (c10d's TCPStore protocol) under a key prefix of the group's own.
struct PLAIT_ABI_GROWS GroupSpec {
  std::string store_host;
  int store_port = 0;
  std::string store_prefix;   // unique to this group, e.g. "plait/<job>/group/dp.1/"
  std::string name;           // for messages: "dp.1" (axis and group index), "world"
  std::vector<int> ranks;     // global ranks in the group, in group-rank order
  int group_rank = 0;         // this process's index in `ranks`
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // default for every operation
  std::string device = "cpu";  // "cpu" or "cuda:N": where the tensors live
  // API 12.10: the group this one is a part of ("world" for an axis's group, the axis's
  // group for a subgroup; empty for the world itself). Every member of that group joins
  // one part of the same partition at the same time, in the same order, so a backend may
  // split that group's communicator (ncclCommSplit) instead of connecting anew.
  std::string split_from;
};

// A comm plugin: makes Communicators. Probe (see plugin.hpp) says whether it can run here.
class PLAIT_SDK_VISIBLE CommBackend : public Plugin {
 public:
  using Interface = CommBackend;
  static constexpr const char* kKind = "comm";
  // Joins one group; every member calls it with the same spec (but its own group_rank).
  virtual std::shared_ptr<Communicator> connect(const GroupSpec& spec) = 0;
};

}  // namespace plait
