#pragma once
// This process's place in the job: its mesh coordinates and one counted communicator
// per mesh axis (and one over all ranks), built by the chosen comm plugin, each keeping
// its operations in the rank's flight recorder. A watchdog logs operations that stay in
// flight too long and publishes them to the job's store, so a launcher's failure report
// can say where each rank was waiting, and writes the flight record on SIGUSR1.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/comm_stats.hpp"
#include "distributed/flight_recorder.hpp"
#include "distributed/mesh.hpp"
#include "distributed/rendezvous.hpp"
#include "plait/sdk/comm_backend.hpp"
#include "plait/sdk/context.hpp"

namespace plait {

class FaultInjector;

struct DistSettings {
  std::chrono::milliseconds rendezvous_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds collective_timeout{std::chrono::seconds(300)};
  std::chrono::milliseconds hang_warning{std::chrono::seconds(60)};
  std::size_t flight_recorder_ops = 4096;  // the last operations each rank keeps
};

class World {
 public:
  // One process: no store, no communicators.
  static std::unique_ptr<World> single();
  // Builds the groups of every axis this rank belongs to, through `backend`.
  static std::unique_ptr<World> join(const WorkerEnv& env, std::unique_ptr<JobStore> store, const MeshShape& shape,
                                     CommBackend& backend, const DistSettings& settings, const std::string& device,
                                     Logger& log);
  // One rank of a job of `shape` built alone: no store, no watchdog; its groups are
  // `backend`'s (the planner's instant one: see instant_backend.hpp).
  static std::unique_ptr<World> alone(const MeshShape& shape, int rank, CommBackend& backend, const std::string& device);
  ~World();

  int rank() const { return mesh_.rank(); }
  int size() const { return mesh_.shape().world(); }
  const Mesh& mesh() const { return mesh_; }
  // The group along an axis, or null when the axis has a single member.
  Communicator* group(Axis axis) const { return groups_[static_cast<int>(axis)].get(); }
  // Every rank, or null in a one-process world.
  Communicator* all() const { return all_.get(); }
  CommStats& stats() { return stats_; }
  FlightRecorder& flight() { return flight_; }
  // This rank's injected faults (debug/fault_injector.hpp), acted on before each
  // collective of every group; null: none. Set once, before training.
  void inject(FaultInjector* faults) { faults_.store(faults, std::memory_order_release); }
  FaultInjector* faults() const { return faults_.load(std::memory_order_acquire); }
  // A smaller group of an axis's members (collective over the axis group, see GroupMaker).
  Communicator* subgroup(Axis axis, const std::string& name, const std::vector<int>& axis_members);
  // The same, as the SDK's GroupMaker for one axis; null when the axis has one member.
  GroupMaker* group_maker(Axis axis);
  JobStore* store() { return store_.get(); }
  // Every group this rank belongs to, as it was connected (for traces' distributedInfo).
  struct GroupInfo {
    std::string name, axis, backend;
    std::vector<int> ranks;  // global
  };
  const std::vector<GroupInfo>& groups() const { return group_info_; }
  // After a clean end (every operation completed): shuts down each communicator that can
  // (CommunicatorShutdown), the last made first, so a subgroup goes before the group it
  // was split from and the world goes last. A world destroyed without it aborts them in
  // that order instead (the rank failed).
  void shut_down();

 private:
  World(Mesh mesh, std::size_t flight_ops = 1) : mesh_(std::move(mesh)), flight_(flight_ops) {}
  void connect_groups();  // the world's and each axis's with more than one member
  std::shared_ptr<Communicator> connect(const std::string& axis, const std::string& name, const std::vector<int>& ranks,
                                        const std::string& split_from);
  void end_communicators(bool clean);
  void watch(std::chrono::milliseconds hang_warning, Logger* log);

  Mesh mesh_;
  std::unique_ptr<JobStore> store_;
  CommStats stats_;
  FlightRecorder flight_;
  std::atomic<FaultInjector*> faults_{nullptr};  // every counted communicator reads it
  std::shared_ptr<Communicator> groups_[3];
  std::shared_ptr<Communicator> all_;
  std::vector<std::shared_ptr<Communicator>> subgroups_;
  std::vector<GroupInfo> group_info_;
  // The plugins' own communicators that say how they end, in the order they were made.
  std::vector<std::pair<std::shared_ptr<Communicator>, CommunicatorShutdown*>> endings_;
  bool ended_ = false;
  std::unique_ptr<GroupMaker> makers_[3];
  // What connect() needs after join().
  CommBackend* backend_ = nullptr;
  std::string master_addr_, device_;
  std::chrono::milliseconds collective_timeout_{0};
  std::thread watchdog_;
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
};

}  // namespace plait
