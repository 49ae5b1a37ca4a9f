#include <chrono>
#include <filesystem>

#include "plait/sdk/capabilities.hpp"
#include "plait/sdk/error.hpp"
#include "verify/combinations.hpp"

namespace plait::verify {
namespace fs = std::filesystem;

namespace {

std::string joined(const Overrides& o, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < o.size(); ++i) out += (out.empty() ? "" : ", ") + o[i];
  return out;
}

std::string joined_sets(const Overrides& fixed) {
  std::string out;
  for (const auto& s : fixed) out += " --set " + s;
  return out;
}

// Runs of one combination go to combo-<n>/, their shrinking tries to combo-<n>-<try>/.
struct Runner {
  const Workspace& ws;
  const PluginRecord& plugin;
  const Overrides& fixed;
  fs::path folder;
  int tries = 0;

  Overrides with_fixed(Overrides o) const {
    o.insert(o.end(), fixed.begin(), fixed.end());
    return o;
  }
  bool accepted(const Overrides& drawn, const std::string& name) {
    return config_accepts(ws, with_fixed(drawn), (folder / (name + "-validate.log")).string());
  }
  Outcome check(const Overrides& drawn, const std::string& name) {
    const Overrides o = with_fixed(drawn);
    Workspace here = ws;
    here.folder = (folder / name).string();
    // An approximate plugin is held to ddp's loss on the same combination instead.
    if (plugin.has_capability(capability::approximate)) {
      return run_case({"combinations", joined(o, 1), CaseKind::loss_gap, o, with_ddp(o, plugin.name), ""}, here, 0);
    }
    return run_case({"combinations", joined(o, 1), CaseKind::equivalence, o, {}, ""}, here, 0);
  }
};

}  // namespace

std::vector<Outcome> check_combinations(const PluginRecord& plugin, const Workspace& ws, int64_t count, uint64_t seed,
                                        const Overrides& fixed, const std::function<void(const Outcome&)>& show) {
  CombinationSampler sampler(plugin, seed);
  Runner runner{ws, plugin, fixed, fs::path(ws.folder) / "combinations"};
  fs::create_directories(runner.folder);
  const auto start = std::chrono::steady_clock::now();
  std::vector<Outcome> rows;
  int64_t passed = 0, redrawn = 0;
  for (int64_t n = 1; n <= count; ++n) {
    const std::string name = concat("combo-", n);
    Overrides drawn = sampler.next();
    for (int attempt = 0; !runner.accepted(drawn, name) && attempt < 50; ++attempt, ++redrawn) drawn = sampler.next();
    Outcome result = runner.check(drawn, name);
    if (result.status == "pass") {
      ++passed;
      continue;
    }
    // shrink keeps a list only when it still fails, so the last failing outcome is the smallest's.
    Outcome failure = result;
    const Overrides smallest = shrink(drawn, [&](const Overrides& o) {
      const std::string attempt = concat(name, "-try-", ++runner.tries);
      if (!runner.accepted(o, attempt)) return false;
      Outcome tried = runner.check(o, attempt);
      if (tried.status != "fail") return false;
      failure = std::move(tried);
      return true;
    });
    failure.title = concat("combination ", n, ", shrunk from ", drawn.size(), " overrides to ", smallest.size(), ": ",
                           joined(smallest, 1));
    failure.status = "fail";
    show(failure);
    rows.push_back(std::move(failure));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Outcome summary{"combinations", concat(count, " random combinations (seed ", seed, ")"), passed == count ? "pass" : "fail",
                  concat(passed, plugin.has_capability(capability::approximate) ? " end within the loss gap of ddp's, "
                                                                                : " equal the single process, ",
                         count - passed, " do not; ", redrawn,
                         " drawn again as combinations the config checks refuse"),
                  concat("plait verify ", plugin.name, " --combos ", count, " --seed ", seed, joined_sets(fixed)), seconds};
  show(summary);
  rows.push_back(std::move(summary));
  return rows;
}

}  // namespace plait::verify
