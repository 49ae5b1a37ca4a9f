#include <catch2/catch.hpp>

#include <torch/headeronly/version.h>

#include "model/dense_layers.hpp"
#include "model/model_zoo.hpp"
#include "plait/sdk/data_parallel.hpp"
#include "plait/sdk/error.hpp"
#include "plait/sdk/offload.hpp"
#include "loader/plugin_instance.hpp"
#include "loader/plugin_registry.hpp"
#include "loader/host_abi.hpp"
#include "loader/capability_versions.hpp"
#include "support/test_support.hpp"

using namespace plait;
using namespace plait::test;
using Catch::Matchers::Contains;

namespace {

std::string fixture(const std::string& name) { return std::string(PLAIT_FIXTURE_DIR) + "/" + name; }

PluginRegistry discover(const std::vector<std::string>& dirs) {
  std::vector<SearchDir> search;
  for (const auto& d : dirs) search.push_back({d, "test"});
  return PluginRegistry::discover(search, host_abi());
}

std::string only_refusal(const PluginRegistry& r) {
  REQUIRE(r.refusals().size() == 1);
  return r.refusals()[0].reason;
}

}  // namespace

TEST_CASE("the built-in folder holds the single-process strategy", "[plugins]") {
  PluginRegistry r = discover({builtin_plugin_dir()});
  const PluginRecord* single = r.find("single");
  REQUIRE(single != nullptr);
  CHECK(single->kind == "data");
  CHECK(single->has_capability("grad_accum"));
  CHECK(single->torch_version == TORCH_VERSION);
  CHECK(single->api_major == PLAIT_API_MAJOR);
  CHECK(single->api_minor == PLAIT_API_MINOR);
  CHECK(r.refusals().empty());
}

TEST_CASE("a library built for another API major is refused in one sentence naming both versions", "[plugins]") {
  const std::string ours = PLAIT_API_VERSION_STRING;
  CHECK(only_refusal(discover({fixture("next_major")})) ==
        concat("plugin library ", fixture("next_major"), "/libplait_plugin_fixture_next_major.so was built for plugin API ",
               PLAIT_API_MAJOR + 1, ".", PLAIT_API_MINOR, " but this plait has API ", ours,
               ", another major version; run it with a plait of its major version"));
  // API 11 and before had one number, where the major is now.
  CHECK(only_refusal(discover({fixture("api_11")})) ==
        concat("plugin library ", fixture("api_11"), "/libplait_plugin_fixture_api_11.so was built for plugin API 11 but "
               "this plait has API ", ours, ", another major version; rebuild the plugin against this plait's SDK"));
}

TEST_CASE("a library built for a newer minor of this major is refused, saying what to do", "[plugins]") {
  CHECK_THAT(only_refusal(discover({fixture("newer_minor")})),
             Contains(concat("was built for plugin API ", PLAIT_API_MAJOR, ".", PLAIT_API_MINOR + 1, " but this plait has API ",
                             PLAIT_API_VERSION_STRING, ", which lacks what ")) &&
                 Contains("upgrade plait"));
}

TEST_CASE("a capability listed by a plugin built before the API that gave it meaning is not counted on, and says so",
          "[plugins]") {
  const PluginRegistry r = discover({fixture("frozen_before_12_6")});
  REQUIRE(r.refusals().empty());
  const PluginRecord& p = r.plugins().at(0);
  CHECK(p.capabilities == std::vector<std::string>{"grad_accum", "float64", "multi_rank"});
  CHECK(p.predated_capabilities == std::vector<std::string>{"frozen (API 12.6)"});
  CHECK_FALSE(p.has_capability("frozen"));
  CHECK(p.lacking("frozen") ==
        "it lists 'frozen', but it was built for plugin API 12.5, before API 12.6 gave the word its meaning (rebuild it "
        "against this plait's SDK)");
  CHECK(p.lacking("offload") == "it lacks the capability 'offload'");
  // An adapter's `tensor` means AdapterSite's split (12.8); a data plugin's is as old as 12.0.
  CHECK(trusted_capabilities("adapter", 12, 7, {"tensor"}).predated == std::vector<std::string>{"tensor (API 12.8)"});
  CHECK(trusted_capabilities("adapter", 12, 8, {"tensor"}).trusted == std::vector<std::string>{"tensor"});
  CHECK(trusted_capabilities("data", 12, 0, {"tensor"}).trusted == std::vector<std::string>{"tensor"});
  CHECK(trusted_capabilities("tensor", 12, 7, {"adapters", "mine"}).trusted == std::vector<std::string>{"mine"});
}

TEST_CASE("a library built against another LibTorch or C++ ABI is refused", "[plugins]") {
  CHECK_THAT(only_refusal(discover({fixture("wrong_torch")})),
             Contains("built against LibTorch 1.0.0") && Contains(concat("runs LibTorch ", TORCH_VERSION)));
  CHECK_THAT(only_refusal(discover({fixture("wrong_abi")})), Contains("_GLIBCXX_USE_CXX11_ABI=0"));
}

TEST_CASE("a library without the entry point is refused", "[plugins]") {
  CHECK_THAT(only_refusal(discover({fixture("no_entry")})),
             Contains("libplait_plugin_no_entry.so") && Contains("has no entry point plait_plugin_info()"));
}

TEST_CASE("two plugins with the same name are refused naming both files", "[plugins]") {
  PluginRegistry r = discover({builtin_plugin_dir(), fixture("duplicate")});
  CHECK_THAT(only_refusal(r), Contains("libplait_plugin_fixture_duplicate.so") && Contains("declares the name 'single'") &&
                                  Contains("libplait_plugin_single.so"));
  REQUIRE_THROWS_WITH(r.throw_if_refused(), Contains("two plugins cannot share a name"));
}

TEST_CASE("no plugin may be named 'none', which means no plugin in every role", "[plugins]") {
  CHECK_THAT(only_refusal(discover({fixture("named_none")})),
             Contains("libplait_plugin_fixture_named_none.so declares no usable name (\"none\" means no plugin, in every role)"));
}

TEST_CASE("a plugin whose file or folder others can write is not loaded, saying why, as ssh refuses a key file",
          "[plugins]") {
  TempDir dir;
  const fs::path folder = dir / "plugins";
  fs::create_directories(folder);
  const fs::path library = folder / "libplait_plugin_fixture_good.so";
  fs::copy_file(fixture("good") + "/libplait_plugin_fixture_good.so", library);
  fs::permissions(folder, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(library, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  PluginRegistry sound = discover({folder.string()});
  CHECK(sound.refusals().empty());
  CHECK(sound.find("fixture-good") != nullptr);

  fs::permissions(folder, fs::perms::all);  // 777: anyone could drop a library there
  CHECK(only_refusal(discover({folder.string()})) ==
        concat("plugin library ", library.string(), " is not loaded: its folder ", folder.string(),
               " can be written by others (mode 777), so anyone could put code in this job; chmod go-w ", folder.string()));
  fs::permissions(folder, fs::perms::others_write | fs::perms::group_write, fs::perm_options::remove);
  fs::permissions(library, fs::perms::group_write, fs::perm_options::add);  // 664
  CHECK_THAT(only_refusal(discover({folder.string()})),
             Contains("is not loaded: the file can be written by others (mode 664)"));
}

TEST_CASE("the same folder twice on the path is not a duplicate", "[plugins]") {
  const std::size_t once = discover({builtin_plugin_dir()}).plugins().size();
  PluginRegistry r = discover({builtin_plugin_dir(), builtin_plugin_dir()});
  CHECK(r.refusals().empty());
  CHECK(r.plugins().size() == once);
}

TEST_CASE("a plugin whose probe says 'not here' is listed but cannot be chosen", "[plugins]") {
  PluginRegistry r = discover({fixture("unavailable")});
  REQUIRE(r.refusals().empty());
  const PluginRecord* p = r.find("fixture-unavailable");
  REQUIRE(p != nullptr);
  CHECK_FALSE(p->available);
  CHECK_THAT(p->unavailable_reason, Contains("no accelerator"));
  REQUIRE_THROWS_WITH(r.require("fixture-unavailable", "data", "here"), Contains("cannot run here"));
}

TEST_CASE("require() names the wrong kind and lists what was found", "[plugins]") {
  PluginRegistry r = discover({builtin_plugin_dir(), fixture("good")});
  REQUIRE_THROWS_WITH(r.require("single", "comm", "cfg:1:1"), Contains("'single' is a data plugin, not a comm plugin"));
  REQUIRE_THROWS_WITH(r.require("fixture-goo", "data", "cfg:1:1"),
                      Contains("cfg:1:1: unknown data plugin 'fixture-goo'") && Contains("did you mean 'fixture-good'") &&
                          Contains("data plugins found: ddp, fsdp, single, zero, fixture-good"));
}

TEST_CASE("a plugin object keeps its library loaded after the registry is gone", "[plugins]") {
  PluginInstance<DataParallel> instance;
  const Options options{"fixture-good", {}};
  {
    PluginRegistry r = discover({fixture("good")});
    instance = make_plugin<DataParallel>(r, options, "fixture-good", {});
  }
  std::shared_ptr<DataParallel>& dp = instance.plugin;
  // The registry (and its handle on the library) is gone; calling into the plugin must still work.
  ModelSpec spec{"gpt2", "tiny", 1, 2, 2, 16, 64, 32, 8, 10000.0, 1e-5};
  auto factory = make_dense_layer_factory();
  StageModel model = build_model(spec, *factory, {1, at::TensorOptions().dtype(at::kFloat)});
  DataParallelSetup setup;
  setup.model = &model;
  dp->setup(setup);
  at::Tensor ids = at::randint(0, 32, {2, 8}, at::TensorOptions().dtype(at::kLong));
  model.forward(ids).sum().backward();
  CHECK(dp->step({.step = 1, .lr = 1e-3, .grad_clip = 0.0, .loss_figures = {}, .reader = nullptr}).grad_norm > 0.0);
  dp.reset();  // destroy runs inside the library, which unloads after it
}

TEST_CASE("the cpu offload plugin offers to issue work behind its copies (12.10): on the host it runs it at once",
          "[plugins][offload]") {
  PluginRegistry r = discover({builtin_plugin_dir()});
  const PluginRecord* cpu = r.find("cpu");
  REQUIRE(cpu != nullptr);
  const std::shared_ptr<Offload> offload = r.make<Offload>(*cpu);
  auto* on_copies = extension<CopyStreamIssue>(*offload);
  REQUIRE(on_copies != nullptr);
  int ran = 0;
  on_copies->on_copy_stream(c10::Device(c10::kCPU), [&] { ++ran; });
  on_copies->on_copy_stream(c10::Device(c10::kMeta), [&] { ++ran; });
  CHECK(ran == 2);
}
