// The launcher's supervisor, with the job's abort channel played by the test: a rank that
// ends after another launcher posted a stop it was told to make is that stop's echo, so this
// node stops as asked (with that signal), not as failed; without such a stop it fails naming
// the rank.
#include <catch2/catch.hpp>

#include <csignal>

#include "distributed/supervisor.hpp"
#include "log/logging.hpp"
#include "support/test_support.hpp"

using namespace plait;
using plait::test::TempDir;
using Catch::Matchers::Contains;

namespace {

class PostedChannel : public AbortChannel {
 public:
  PostedChannel(std::optional<std::string> reason, int signal) : reason_(std::move(reason)), signal_(signal) {}
  void post(const std::string& reason) override { posted.push_back(reason); }
  std::optional<std::string> poll() override { return reason_; }
  int stop_signal() override { return signal_; }
  std::vector<std::string> posted;

 private:
  std::optional<std::string> reason_;
  int signal_;
};

// One rank that ends at once with status 3, under `channel`.
JobStopped supervise_failing_rank(const TempDir& dir, AbortChannel& channel) {
  SupervisorSpec spec;
  spec.executable = "/bin/sh";
  spec.args = {"-c", "exit 3"};
  spec.ranks = {RankLaunch{}};
  spec.run_dir = dir.path().string();
  spec.console_rank = -1;
  spec.node = "node 1 of 2";
  spec.abort = &channel;
  spec.grace = std::chrono::milliseconds(200);
  try {
    supervise(spec, core_log());
  } catch (const JobStopped& stopped) {
    return stopped;
  }
  FAIL("the rank's end was not reported");
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("a rank that ends after another launcher was told to stop stops this node as asked", "[restart]") {
  TempDir dir;
  PostedChannel asked("the launcher on node 0 of 2 got signal 2", SIGINT);
  const JobStopped stopped = supervise_failing_rank(dir, asked);
  CHECK(stopped.signal == SIGINT);
  CHECK_FALSE(stopped.interrupted);
  CHECK(std::string(stopped.what()) == "stopped because the launcher on node 0 of 2 got signal 2");
  CHECK(asked.posted.empty());  // nothing posted as this node's failure

  PostedChannel quiet(std::nullopt, 0);
  const JobStopped failed = supervise_failing_rank(dir, quiet);
  CHECK(failed.signal == 0);
  CHECK(failed.rank == 0);
  CHECK_THAT(failed.what(), Contains("rank 0"));
  REQUIRE(quiet.posted.size() == 1);
  CHECK_THAT(quiet.posted[0], Contains("rank 0 on node 1 of 2"));
}
