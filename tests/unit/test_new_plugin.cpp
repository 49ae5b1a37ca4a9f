// plait new plugin: what it writes for each kind (the build and `plait verify` of each
// run in tests/sdk/new_plugins.sh, against an install), and what it refuses before
// writing anything.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "scaffold/plugin_template.hpp"
#include "support/test_support.hpp"

using namespace plait::test;
using Catch::Matchers::Contains;

TEST_CASE("plait new plugin writes a project of its kind that finds this plait", "[new]") {
  TempDir dir;
  const ProcessResult r = run_plait({"new", "plugin", "my-ddp", "--kind", "data", "--dir", (dir / "my-ddp").string()});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Contains("wrote " + (dir / "my-ddp").string() + ": a data plugin 'my-ddp'"));
  const fs::path p = dir / "my-ddp";
  CHECK_THAT(read_file(p / "CMakeLists.txt"), Contains("find_package(plait REQUIRED)") &&
                                                  Contains("plait_add_plugin(my-ddp SOURCES plugin.cpp SCHEMA schema.toml)") &&
                                                  Contains("-Dplait_DIR=" + std::string(PLAIT_BUILD_DIR) + "/sdk"));
  CHECK_THAT(read_file(p / "plugin.cpp"), Contains("class MyDdp final : public plait::DataParallel") &&
                                              Contains("PLAIT_PLUGIN(MyDdp, \"my-ddp\", \"0.1.0\"") && !Contains("@"));
  CHECK_THAT(read_file(p / "schema.toml"), Contains("[coalesce]") && Contains("doc = "));
  CHECK_THAT(read_file(p / "config.toml"), Contains("[parallel]\ndata = \"my-ddp\"\ndp = 2") && Contains("paths = [\"build\"]"));
  CHECK_THAT(read_file(p / "test.sh"), Contains(std::string(PLAIT_BUILD_DIR) + "/bin/plait") &&
                                           Contains("verify \"$here/build/libplait_plugin_my-ddp.so\" --quick"));
  CHECK((fs::status(p / "test.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK_FALSE(fs::exists(p / "plugin.cpp.in"));

  // The other kinds: their own source, and the components they need.
  REQUIRE(run_plait({"new", "plugin", "my-zero", "--kind", "data", "--from", "sharding", "--dir", (dir / "z").string()}).exit_code == 0);
  CHECK_THAT(read_file(dir / "z/CMakeLists.txt"), Contains("find_package(plait REQUIRED COMPONENTS sharding)") &&
                                                    Contains("target_link_libraries(plait_plugin_my-zero PRIVATE plait::sharding)"));
  CHECK_THAT(read_file(dir / "z/plugin.cpp"), Contains("class MyZero final : public plait::sharding::ShardedEngine"));
  REQUIRE(run_plait({"new", "plugin", "my-gloo", "--kind", "comm", "--dir", (dir / "c").string()}).exit_code == 0);
  CHECK_THAT(read_file(dir / "c/CMakeLists.txt"), Contains("COMPONENTS c10d") && Contains("USE_C10D_GLOO"));
  CHECK_THAT(read_file(dir / "c/config.toml"), Contains("comm = \"my-gloo\""));
  REQUIRE(run_plait({"new", "plugin", "my-sched", "--kind", "pipeline", "--dir", (dir / "s").string()}).exit_code == 0);
  CHECK_THAT(read_file(dir / "s/plugin.cpp"), Contains("public plait::PipelineSchedule, public plait::ScheduleModel"));
  REQUIRE(run_plait({"new", "plugin", "my-host", "--kind", "offload", "--dir", (dir / "o").string()}).exit_code == 0);
  CHECK_THAT(read_file(dir / "o/config.toml"), Contains("offload = \"my-host\"\n\n[zero]\nstage = 2"));
  REQUIRE(run_plait({"new", "plugin", "my-tp", "--kind", "tensor", "--dir", (dir / "t").string()}).exit_code == 0);
  CHECK_THAT(read_file(dir / "t/config.toml"), Contains("tensor = \"my-tp\"\ntp = 2"));
  CHECK_THAT(read_file(dir / "t/plugin.cpp"), Contains("class MyTp final : public plait::TensorParallel"));
  const ProcessResult adapter =
      run_plait({"new", "plugin", "my-adapter", "--kind", "adapter", "--dir", (dir / "a").string()});
  REQUIRE(adapter.exit_code == 0);
  CHECK_THAT(adapter.output, Contains(": an adapter plugin 'my-adapter'"));
  CHECK_THAT(read_file(dir / "a/config.toml"), Contains("data = \"ddp\"\ndp = 2\nadapter = \"my-adapter\""));
  CHECK_THAT(read_file(dir / "a/plugin.cpp"), Contains("class MyAdapter final : public plait::Adapter") && !Contains("@"));
}

TEST_CASE("plait new plugin refuses a bad name, a kind without a template, a wrong --from and a used folder, "
          "writing nothing", "[new]") {
  TempDir dir;
  auto refused = [&](const std::vector<std::string>& args, const std::string& says) {
    std::vector<std::string> all = {"new", "plugin"};
    all.insert(all.end(), args.begin(), args.end());
    const ProcessResult r = run_plait(all);
    INFO(r.output);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Contains(says));
  };
  refused({"My_Plugin", "--kind", "data", "--dir", (dir / "a").string()}, "error: plait new plugin: 'My_Plugin' is not a plugin name");
  refused({"none", "--kind", "data", "--dir", (dir / "a").string()}, "'none' is not a plugin name");
  refused({"x", "--kind", "pipeline", "--from", "sharding", "--dir", (dir / "a").string()},
          "--from sharding makes a data plugin, not a pipeline plugin");
  refused({"x", "--kind", "data", "--from", "nosuch", "--dir", (dir / "a").string()},
          "error: plait new plugin: --from nosuch: no such template (--from takes sharding)");
  refused({"x", "--kind", "gpu", "--dir", (dir / "a").string()},
          "error: plait new plugin: --kind gpu has no template\n  hint: --kind takes data, pipeline, tensor, offload, comm or adapter");
  CHECK_FALSE(fs::exists(dir / "a"));
  write_file(dir / "used/keep.txt", "mine");
  refused({"x", "--kind", "data", "--dir", (dir / "used").string()}, "exists and is not an empty folder");
  CHECK(read_file(dir / "used/keep.txt") == "mine");
  CHECK(fs::directory_iterator(dir / "used") != fs::directory_iterator());
  for (const auto& e : fs::directory_iterator(dir.path())) CHECK_THAT(e.path().filename().string(), !Contains("partial"));
}

TEST_CASE("a plugin's name becomes a C++ class name", "[new]") {
  CHECK(plait::scaffold::class_name("my-ddp") == "MyDdp");
  CHECK(plait::scaffold::class_name("zero-lite-2") == "ZeroLite2");
  CHECK(plait::scaffold::class_name("a") == "A");
}

TEST_CASE("plait new plugin refuses a folder it cannot write, with the system's reason, before writing anything",
          "[new]") {
  // Root writes through permission bits: a read-only bind mount in a mount namespace of its
  // own is a folder nobody can write, and it is gone when the command ends.
  if (std::system("unshare -m true 2>/dev/null") != 0) {
    WARN("unshare -m is not allowed here: only /sys stands for an unwritable folder (test_command_refusals.cpp)");
    return;
  }
  TempDir dir;
  fs::create_directories(dir / "ro");
  const std::string ro = (dir / "ro").string(), log = (dir / "out.txt").string();
  const std::string script = "mount --bind '" + ro + "' '" + ro + "' && mount -o remount,bind,ro '" + ro + "' '" + ro +
                             "' && '" + PLAIT_BIN + "' new plugin my-x --kind data --dir '" + ro + "/my-x'; echo exit=\\$?";
  const int status = std::system(("unshare -m sh -c \"" + script + "\" > '" + log + "' 2>&1").c_str());
  const std::string out = read_file(log);
  INFO(out);
  REQUIRE(status == 0);
  if (out.find("mount:") != std::string::npos) {
    WARN("a read-only bind mount is not allowed here");
    return;
  }
  CHECK_THAT(out, Contains("error: plait new plugin: cannot write the project into " + ro +
                           ": the folder is not writable (Read-only file system)") &&
                      Contains("hint: give --dir a folder you can write") && Contains("exit=1") && !Contains("plait bug"));
  CHECK(fs::is_empty(dir / "ro"));
}
