#include "plan/search_space.hpp"

#include <array>

#include "config/resolve.hpp"
#include "config/schema.hpp"
#include "plait/sdk/error.hpp"

namespace plait {
namespace {

std::string label_of(const ConfigValue& v) { return v.type == ConfigValue::Type::string ? v.string : v.to_toml(); }

// Every combination of the plan values of `schema`'s options, as assignments into `table`.
std::vector<RoleVariant> combinations(const TableSchema& schema, const std::string& table, const std::string& plugin) {
  std::vector<RoleVariant> out = {{plugin, {}, plugin}};
  for (const OptionSpec& option : schema.options) {
    if (option.plan.empty()) continue;
    std::vector<RoleVariant> grown;
    for (const RoleVariant& v : out) {
      for (const ConfigValue& value : option.plan) {
        RoleVariant next = v;
        next.sets.push_back(concat(table, ".", option.key, "=", value.to_toml()));
        next.label += concat(next.label.empty() ? "" : " ", option.key, "=", label_of(value));
        grown.push_back(std::move(next));
      }
    }
    out = std::move(grown);
  }
  return out;
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// The degrees the model allows: tp within a node, dividing the heads and key/value heads;
// pp dividing the blocks.
std::vector<std::array<int64_t, 3>> meshes(const ModelSpec& model, const SearchLimits& limits) {
  std::vector<std::array<int64_t, 3>> out;
  for (int64_t tp : divisors(limits.gpus)) {
    if (tp > limits.gpus_per_node || model.n_head % tp != 0 || model.n_kv_head % tp != 0) continue;
    for (int64_t pp : divisors(limits.gpus / tp)) {
      if (model.n_layer % pp != 0) continue;
      out.push_back({limits.gpus / (tp * pp), pp, tp});
    }
  }
  return out;
}

// The roles of [parallel] as the mesh needs them: a pipeline schedule only with pp > 1, a
// tensor plugin only with tp > 1.
struct Roles {
  std::vector<RoleVariant> data, pipeline, tensor, offload, core;
};

std::vector<RoleVariant> in_role(const std::vector<RoleVariant>& variants, bool used) {
  if (!used) return {{"none", {}, ""}};
  return variants;
}

}  // namespace

std::vector<RoleVariant> role_variants(const PluginRegistry& registry, const std::string& kind) {
  std::vector<RoleVariant> out;
  for (const PluginRecord& record : registry.plugins()) {
    if (record.kind != kind || !record.available) continue;
    for (RoleVariant& v : combinations(plugin_schema(record), record.name, record.name)) out.push_back(std::move(v));
  }
  return out;
}

std::vector<PlanCandidate> enumerate_candidates(const PluginRegistry& registry, const ModelSpec& model,
                                                const SearchLimits& limits) {
  Roles roles;
  roles.data = role_variants(registry, "data");
  roles.pipeline = role_variants(registry, "pipeline");
  roles.tensor = role_variants(registry, "tensor");
  roles.offload = {{"none", {}, ""}};
  if (limits.offload) {
    for (RoleVariant& v : role_variants(registry, "offload")) roles.offload.push_back(std::move(v));
  }
  roles.core = combinations(core_schema("train"), "train", "");
  std::vector<PlanCandidate> out;
  for (const auto& [dp, pp, tp] : meshes(model, limits)) {
    for (int64_t mb : limits.micro_batches) {
      if (limits.global_batch % (dp * mb) != 0) continue;
      const int64_t accum = limits.global_batch / (dp * mb);
      for (const RoleVariant& data : roles.data)
        for (const RoleVariant& pipeline : in_role(roles.pipeline, pp > 1))
          for (const RoleVariant& tensor : in_role(roles.tensor, tp > 1))
            for (const RoleVariant& offload : roles.offload)
              for (const RoleVariant& core : roles.core) {
                PlanCandidate c{dp, pp, tp, mb, accum, {}, ""};
                c.sets = {concat("parallel.dp=", dp),           concat("parallel.pp=", pp),
                          concat("parallel.tp=", tp),           "parallel.data=" + data.plugin,
                          "parallel.pipeline=" + pipeline.plugin, "parallel.tensor=" + tensor.plugin,
                          "parallel.offload=" + offload.plugin, concat("data.micro_batch_size=", mb),
                          concat("train.grad_accum=", accum)};
                std::string label;
                for (const RoleVariant* v : {&data, &pipeline, &tensor, &offload, &core}) {
                  c.sets.insert(c.sets.end(), v->sets.begin(), v->sets.end());
                  if (!v->label.empty()) label += (label.empty() ? "" : " | ") + v->label;
                }
                c.plugins = label;
                out.push_back(std::move(c));
              }
    }
  }
  return out;
}

}  // namespace plait
