#include "distributed/world.hpp"

#include <optional>
#include <utility>

#include <c10/core/DeviceGuard.h>

#include "distributed/counted_communicator.hpp"
#include "plait/sdk/error.hpp"

namespace plait {

std::unique_ptr<World> World::single() { return std::unique_ptr<World>(new World(Mesh(MeshShape{}, 0))); }

std::unique_ptr<World> World::join(const WorkerEnv& env, std::unique_ptr<JobStore> store, const MeshShape& shape,
                                   CommBackend& backend, const DistSettings& settings, const std::string& device,
                                   Logger& log) {
  PLAIT_CHECK(shape.world() == env.world_size,
              concat("[parallel] dp ", shape.dp, " x pp ", shape.pp, " x tp ", shape.tp, " = ", shape.world(),
                     " but WORLD_SIZE is ", env.world_size),
              "make the degrees multiply to the number of processes, or use -1 for one of them");
  std::unique_ptr<World> world(new World(Mesh(shape, env.rank), settings.flight_recorder_ops));
  world->backend_ = &backend;
  world->master_addr_ = env.master_addr;
  world->device_ = device;
  world->collective_timeout_ = settings.collective_timeout;
  world->store_ = std::move(store);
  world->connect_groups();
  world->watchdog_ = std::thread([w = world.get(), hang = settings.hang_warning, log = &log] { w->watch(hang, log); });
  return world;
}

std::unique_ptr<World> World::alone(const MeshShape& shape, int rank, CommBackend& backend, const std::string& device) {
  std::unique_ptr<World> world(new World(Mesh(shape, rank)));
  world->backend_ = &backend;
  world->device_ = device;
  if (shape.world() > 1) world->connect_groups();  // one process has none, as single()
  return world;
}

void World::connect_groups() {
  std::vector<int> everyone(static_cast<std::size_t>(size()));
  for (int r = 0; r < size(); ++r) everyone[static_cast<std::size_t>(r)] = r;
  all_ = connect("world", "world", everyone, "");
  for (Axis axis : {Axis::pp, Axis::dp, Axis::tp}) {
    if (mesh_.shape().size(axis) > 1) {
      groups_[static_cast<int>(axis)] = connect(axis_name(axis), mesh_.group_name(axis), mesh_.group(axis), "world");
    }
  }
}

std::shared_ptr<Communicator> World::connect(const std::string& axis, const std::string& name,
                                             const std::vector<int>& ranks, const std::string& split_from) {
  GroupSpec spec;
  spec.store_host = master_addr_;
  spec.store_port = store_ ? store_->port() : 0;
  spec.store_prefix = (store_ ? store_->prefix() : std::string()) + "group/" + name + "/";
  spec.name = name;
  spec.ranks = ranks;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] == rank()) spec.group_rank = static_cast<int>(i);
  }
  spec.timeout = collective_timeout_;
  spec.device = device_;
  spec.split_from = split_from;
  std::shared_ptr<Communicator> inner;
  try {
    inner = backend_->connect(spec);
  } catch (const std::exception& e) {
    throw Error(concat("rank ", rank(), " could not set up communicator group ", name, ": ", e.what()),
                "check that every rank started and can reach the others (firewall, interface)");
  }
  group_info_.push_back({name, axis, inner->backend(), ranks});
  if (auto* ending = extension<CommunicatorShutdown>(*inner)) endings_.emplace_back(inner, ending);
  return make_counted(std::move(inner), axis, name, ranks, stats_, flight_, spec.device, &faults_);
}

Communicator* World::subgroup(Axis axis, const std::string& name, const std::vector<int>& axis_members) {
  const std::vector<int>& axis_ranks = mesh_.group(axis);
  std::vector<int> ranks;
  bool mine = false;
  for (int m : axis_members) {
    PLAIT_CHECK(m >= 0 && m < static_cast<int>(axis_ranks.size()),
                concat("subgroup ", name, ": member ", m, " is not a rank of the ", axis_name(axis), " group (size ",
                       axis_ranks.size(), ")"),
                "members are ranks within the axis group, from 0");
    ranks.push_back(axis_ranks[static_cast<std::size_t>(m)]);
    mine = mine || ranks.back() == rank();
  }
  PLAIT_CHECK(mine, concat("rank ", rank(), " asked for subgroup ", name, " without being in it"),
              "every process builds only the subgroups it belongs to");
  // The axis group's index keeps names unique across the mesh's other axes.
  const std::string full_name = concat(mesh_.group_name(axis), ".", name);
  subgroups_.push_back(connect(axis_name(axis), full_name, ranks, mesh_.group_name(axis)));
  return subgroups_.back().get();
}

namespace {
class AxisGroupMaker final : public GroupMaker {
 public:
  AxisGroupMaker(World& world, Axis axis) : world_(world), axis_(axis) {}
  Communicator* subgroup(const std::string& name, const std::vector<int>& members) override {
    return world_.subgroup(axis_, name, members);
  }

 private:
  World& world_;
  Axis axis_;
};
}  // namespace

GroupMaker* World::group_maker(Axis axis) {
  if (group(axis) == nullptr) return nullptr;
  auto& maker = makers_[static_cast<int>(axis)];
  if (!maker) maker = std::make_unique<AxisGroupMaker>(*this, axis);
  return maker.get();
}

void World::end_communicators(bool clean) {
  if (std::exchange(ended_, true)) return;
  for (auto it = endings_.rbegin(); it != endings_.rend(); ++it) {
    try {
      clean ? it->second->shutdown() : it->second->abort();
    } catch (const std::exception&) {
      // Ending the rest matters more than this one: a failed rank's peers may be gone, and
      // after a clean end the run's results are written already.
    }
  }
}

void World::shut_down() { end_communicators(/*clean=*/true); }

World::~World() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  end_communicators(/*clean=*/false);
}

void World::watch(std::chrono::milliseconds hang_warning, Logger* log) {
  // Asking a GPU operation whether it is done (a CUDA event query) on a thread whose
  // current device is GPU 0 would make every rank of the node open a context there.
  std::optional<c10::DeviceGuard> on_rank_device;
  if (const c10::Device device(device_); !device.is_cpu() && !device.is_meta()) on_rank_device.emplace(device);
  bool published = false;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; })) {
    if (take_flight_signal()) write_process_flight_record("it got SIGUSR1 (plait debug, or a user)");
    stats_.settle();  // GPU operations waited for, now done on the device
    const auto overdue = stats_.newly_overdue(hang_warning);
    for (const auto& op : overdue) log->warn("rank ", rank(), " is still waiting: ", op);
    try {
      if (!overdue.empty()) {
        std::string all;
        for (const auto& op : stats_.in_flight()) all += (all.empty() ? "" : "; ") + op;
        store_->set(concat("pending/", rank()), all);
        published = true;
      } else if (published && stats_.in_flight().empty()) {
        store_->set(concat("pending/", rank()), "");
        published = false;
      }
    } catch (const std::exception&) {
      // The store may be gone with the launcher; the log line above is what matters.
    }
  }
}

}  // namespace plait
