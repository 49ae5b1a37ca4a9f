#include "distributed/core_binding.hpp"

#include <sched.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "plait/sdk/error.hpp"

namespace plait {

std::vector<int> usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  PLAIT_CHECK(::sched_getaffinity(0, sizeof(set), &set) == 0,
              concat("cannot read this process's CPU affinity: ", std::strerror(errno)), "");
  std::vector<int> out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
  return out;
}

std::vector<int> core_slice(const std::vector<int>& cores, int local_ranks, int local_rank) {
  const int n = static_cast<int>(cores.size());
  PLAIT_CHECK(local_ranks > 0 && local_rank >= 0 && local_rank < local_ranks,
              concat("local rank ", local_rank, " is not one of ", local_ranks, " local ranks"), "");
  PLAIT_CHECK(n >= local_ranks,
              concat("[distributed] bind_cores: this node's ranks may use ", n, " cores (", format_core_list(cores),
                     "), fewer than its ", local_ranks, " ranks"),
              "set distributed.bind_cores = false, or start fewer ranks per node (--nproc-per-node)");
  // The first n % local_ranks ranks take one core more.
  const int base = n / local_ranks, extra = n % local_ranks;
  const int begin = local_rank * base + std::min(local_rank, extra);
  const int size = base + (local_rank < extra ? 1 : 0);
  return {cores.begin() + begin, cores.begin() + begin + size};
}

std::string format_core_list(const std::vector<int>& cores) {
  std::string out;
  for (std::size_t i = 0; i < cores.size();) {
    std::size_t j = i;
    while (j + 1 < cores.size() && cores[j + 1] == cores[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j == i ? std::to_string(cores[i]) : concat(cores[i], "-", cores[j]);
    i = j + 1;
  }
  return out;
}

void bind_process_to(const std::vector<int>& cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) CPU_SET(c, &set);
  // sched_setaffinity binds one thread; threads already running (a library's pool) are
  // bound one by one, and later ones inherit from the thread that starts them.
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const auto tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    PLAIT_CHECK(::sched_setaffinity(tid, sizeof(set), &set) == 0 || errno == ESRCH,
                concat("[distributed] bind_cores: cannot bind to cores ", format_core_list(cores), ": ",
                       std::strerror(errno)),
                "the cores may be outside this container's cpuset; set distributed.bind_cores = false");
  }
}

}  // namespace plait
