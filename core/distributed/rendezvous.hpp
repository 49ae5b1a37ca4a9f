#pragma once
// The job's TCP store (c10d's TCPStore) and the join of every rank. The launcher on
// node 0 hosts the store when plait launched the job; when torchrun or Slurm did, rank
// 0 (or torchrun's agent) hosts it. Every key of a job lives under "plait/<job id>/"
// and, when the job has a token (distributed/job_token.hpp), a name derived from it: jobs
// that share a port by accident do not see each other's keys, and a process without the
// token sees none. The store's two public keys are the job id and the token's check.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <c10/util/intrusive_ptr.h>

#include "distributed/launch_env.hpp"
#include "distributed/supervisor.hpp"
#include "plait/sdk/error.hpp"

namespace c10d {
class Store;
}

namespace plait {

class NodeHeartbeat;

// 127.x.x.x, ::1 or localhost.
bool is_loopback(const std::string& addr);

class JobStore {
 public:
  // Listens on `port` (0: a free port), and publishes the job id and the check of `token`
  // (empty: the job has none). `loopback_only`: on 127.0.0.1 alone, for a job of one node,
  // which no other machine needs to reach; else on every interface.
  static std::unique_ptr<JobStore> host(int port, const std::string& job_id, std::chrono::milliseconds timeout,
                                        const std::string& token, bool loopback_only = false);
  // Connects to a store, failing after `timeout` with the address and `who` in the message.
  // An empty job id adopts the one the host published. `token` must pass the store's check
  // (refused in one sentence otherwise); `publish_check`: this process publishes it (rank
  // 0 of a job whose store torchrun's agent hosts).
  // `reply_timeout` (0: no limit, c10d's own): how long one request may wait for the store's
  // reply once connected (a wait for a key gets its own timeout on top). A launcher of another
  // node keeps it short: a store that stops answering is a lost node 0 or a cut link, and
  // from then on every request fails at once, naming the store, instead of each hanging.
  static std::unique_ptr<JobStore> connect(const std::string& addr, int port, const std::string& job_id,
                                           std::chrono::milliseconds timeout, const std::string& who,
                                           const std::string& token, bool publish_check = false,
                                           std::chrono::milliseconds reply_timeout = std::chrono::milliseconds(0));
  ~JobStore();
  // The same store (one connection, or the hosted server kept alive) under another job
  // id's keys: each start of a restarted job has its own, so none meets an earlier's.
  std::unique_ptr<JobStore> view(const std::string& job_id) const;

  int port() const { return port_; }
  const std::string& job_id() const { return job_id_; }
  const std::string& prefix() const { return prefix_; }  // "plait/<job>/[<token's key space>/]"
  c10d::Store& raw() { return *store_; }
  // The store stopped answering (a request's reply did not come within its timeout), and
  // the sentence that says so, which every request made since has thrown.
  bool lost() const;
  std::optional<std::string> lost_reason() const;

  void set(const std::string& key, const std::string& value);
  std::optional<std::string> try_get(const std::string& key);
  // Waits for a key; on timeout says what was awaited.
  std::string wait_get(const std::string& key, std::chrono::milliseconds timeout, const std::string& waiting_for);
  int64_t add(const std::string& key, int64_t amount);

 private:
  JobStore() = default;
  c10::intrusive_ptr<c10d::Store> store_;
  void set_job(const std::string& job_id, const std::string& key_space);
  // Runs a request (`wait`: how long it may wait for a key, beyond the reply); a request
  // that fails on the network or gets no reply marks the store lost for every view of it.
  template <class Fn>
  auto guarded(Fn fn, std::chrono::milliseconds wait = std::chrono::milliseconds(0)) -> decltype(fn());
  Error lost_error() const;
  struct Link;
  std::shared_ptr<Link> link_;

  std::string prefix_;
  std::string job_id_, key_space_;
  int port_ = 0;
};

// Every rank checks in; returns when all `world_size` have, or fails after `timeout`
// saying how many arrived.
void join_all_ranks(JobStore& store, int rank, int world_size, std::chrono::milliseconds timeout);

// Node 0's launcher hosts the store, so it must close it last: a launcher still polling a
// closed store fails even though its ranks succeeded. Every other launcher reports its end
// (success or failure); node 0's waits for those reports, at most `timeout`, and returns
// the nodes that never reported.
void report_launcher_end(JobStore& store, int node_rank);
std::vector<int> await_launcher_ends(JobStore& store, int nnodes, std::chrono::milliseconds timeout);

// A rank that fails with one of plait's errors reports it, so that its launcher says the
// rank's sentence instead of the tail of its log.
void report_rank_failure(JobStore& store, const RankFailure& failure);

// The abort channel of a job, over its store: a failure posted by any launcher stops the
// launchers of every node; ranks publish what they wait for under "pending/<rank>".
// With the launcher's heartbeat (node_heartbeat.hpp), a lost node or store is named
// (lost()); once the store is lost, nothing here waits for it again.
class StoreAbortChannel final : public AbortChannel {
 public:
  StoreAbortChannel(JobStore& store, int world_size, const NodeHeartbeat* heartbeat = nullptr);
  void post(const std::string& reason) override;
  void post_stop(const std::string& reason, int signal) override;
  std::optional<std::string> poll() override;
  int stop_signal() override;
  std::vector<std::string> pending_operations() override;
  std::optional<RankFailure> rank_failure(int rank) override;
  std::optional<RankFailure> first_own_failure() override;
  std::optional<std::string> lost(std::chrono::milliseconds quiet) override;

 private:
  template <class T, class Fn>
  T unless_lost(T otherwise, Fn&& fn);

  JobStore& store_;
  int world_size_;
  const NodeHeartbeat* heartbeat_;
};

}  // namespace plait
