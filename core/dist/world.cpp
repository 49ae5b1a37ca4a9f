#include "dist/world.hpp"

#include "dist/counted_communicator.hpp"
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
  std::unique_ptr<World> world(new World(Mesh(shape, env.rank)));
  auto connect = [&](const std::string& axis, const std::string& name, const std::vector<int>& ranks) {
    GroupSpec spec;
    spec.store_host = env.master_addr;
    spec.store_port = store->port();
    spec.store_prefix = store->prefix() + "group/" + name + "/";
    spec.name = name;
    spec.ranks = ranks;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i] == env.rank) spec.group_rank = static_cast<int>(i);
    }
    spec.timeout = settings.collective_timeout;
    spec.device = device;
    std::shared_ptr<Communicator> inner;
    try {
      inner = backend.connect(spec);
    } catch (const std::exception& e) {
      throw Error(concat("rank ", env.rank, " could not set up communicator group ", name, ": ", e.what()),
                  "check that every rank started and can reach the others (firewall, interface)");
    }
    return make_counted(std::move(inner), axis, name, world->stats_);
  };
  std::vector<int> everyone(static_cast<std::size_t>(env.world_size));
  for (int r = 0; r < env.world_size; ++r) everyone[static_cast<std::size_t>(r)] = r;
  world->all_ = connect("world", "world", everyone);
  for (Axis axis : {Axis::pp, Axis::dp, Axis::tp}) {
    if (shape.size(axis) > 1) {
      world->groups_[static_cast<int>(axis)] =
          connect(axis_name(axis), world->mesh_.group_name(axis), world->mesh_.group(axis));
    }
  }
  world->store_ = std::move(store);
  world->watchdog_ = std::thread([w = world.get(), hang = settings.hang_warning, log = &log] { w->watch(hang, log); });
  return world;
}

World::~World() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void World::watch(std::chrono::milliseconds hang_warning, Logger* log) {
  bool published = false;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
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
