#include "plan/plan_search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <set>

#include "config/config_loader.hpp"
#include "model/model_zoo.hpp"
#include "plan/data_cost.hpp"
#include "plan/frozen_products.hpp"
#include "plait/sdk/error.hpp"
#include "run/compatibility.hpp"
#include "run/config_checks.hpp"
#include "run/plugin_checks.hpp"
#include "run/prepare.hpp"
#include "run/tensor_shapes_check.hpp"

namespace plait {
namespace {

// One plugin's part of a candidate's assignments, for the caches' keys.
std::string role_key(const PlanCandidate& c, const std::string& plugin, int64_t degree, int64_t accum) {
  std::string key = concat(plugin, "/", degree, "/", accum);
  for (const std::string& s : c.sets) {
    if (s.rfind(plugin + ".", 0) == 0) key += "/" + s;
  }
  return key;
}

struct ShapeModel {
  StageModel whole;
  int64_t sequence_shards = 1;
  std::vector<AdapterSiteCost> adapters;
  FrozenProducts frozen;
};

// Builds what the candidates share once: the registry, the model spec and its meta
// build, each schedule's plan, each tensor layout's rank model.
class CandidateEvaluator {
 public:
  CandidateEvaluator(const std::string& path, const std::vector<std::string>& sets, const Hardware& hw)
      : hw_(hw) {
    PreparedRun base = prepare_for_machine(path, sets);  // a cuda base run is planned from any machine
    tree_ = std::move(base.loaded.tree);
    registry_ = std::move(base.registry);
    model_ = base.model;
    shapes_ = base.pipeline.shapes;
  }

  const PluginRegistry& registry() const { return *registry_; }
  const ModelSpec& model() const { return model_; }

  PlanOutcome evaluate(const PlanCandidate& c) {
    PlanOutcome out{c, std::nullopt, ""};
    try {
      const ResolvedConfig config = candidate_config(tree_, c, *registry_);
      check_compatibility(config, *registry_);
      const MeshShape mesh = resolve_configured_mesh(config, 0);
      check_mesh_roles(config, mesh);
      check_settings_take_effect(config, mesh);
      const PipelinePlan& pipeline = pipeline_for(config, mesh, c);
      check_plugins(config, *registry_, model_, mesh);
      const ShapeModel& shape = shape_for(config, mesh, c);
      PlanInputs in{&config,      registry_.get(),         model_,
                    mesh,         &pipeline,               &shape.whole,
                    shape.sequence_shards, &params_for(config, mesh, c, pipeline, shape.whole),
                    &shape.adapters,        &shape.frozen};
      in.ask_data_cost = [this, key = data_cost_key(config, mesh, c, pipeline)](const PlanInputs& inputs, int64_t pp_rank,
                                                                              int64_t dp_per_node) {
        return data_cost_for(inputs, concat(key, "|", pp_rank, "|", dp_per_node), pp_rank, dp_per_node);
      };
      out.prediction = predict_config(in, hw_);
      out.refused = out.prediction->why_not();
    } catch (const Error& e) {
      out.refused = e.what();
    }
    return out;
  }

 private:
  const PipelinePlan& pipeline_for(const ResolvedConfig& config, const MeshShape& mesh, const PlanCandidate& c) {
    const std::string& name = config.parallel().pipeline;
    const std::string key = role_key(c, name, mesh.pp, config.train().grad_accum);
    auto it = pipelines_.find(key);
    if (it == pipelines_.end()) {
      // A layout the stages cannot take is refused after its schedule was planned and
      // checked (the expensive part): the refusal is kept too, or every candidate of the
      // layout would plan it again (llama-7b on 64 GPUs: 2,628 interleaved schedules
      // planned where 64 are distinct).
      PipelineOrRefusal planned;
      try {
        planned.plan = plan_pipeline(config, *registry_, mesh, shapes_);
      } catch (const Error&) {
        planned.refusal = std::current_exception();
      }
      it = pipelines_.emplace(key, std::move(planned)).first;
    }
    if (it->second.refusal) std::rethrow_exception(it->second.refusal);
    return it->second.plan;
  }

  const ShapeModel& shape_for(const ResolvedConfig& config, const MeshShape& mesh, const PlanCandidate& c) {
    const std::string& name = config.parallel().tensor;
    const std::string key = role_key(c, name, mesh.tp, 1);
    auto it = shapes_by_layout_.find(key);
    if (it == shapes_by_layout_.end()) {
      ShapeModel built;
      built.whole = build_shape_model(config, *registry_, model_, mesh, &built.sequence_shards, &built.adapters);
      built.frozen = frozen_products(built.whole, model_.family, &built.adapters);
      it = shapes_by_layout_.emplace(key, std::move(built)).first;
    }
    return it->second;
  }

  // What the data plugin's cost query is made of (plan_data_cost): the data and offload
  // plugins with their options, dp and the backward passes a step, the rank's parameters
  // (tensor layout, stage partition), the parameters' dtype.
  static std::string data_cost_key(const ResolvedConfig& config, const MeshShape& mesh, const PlanCandidate& c,
                                   const PipelinePlan& pipeline) {
    const ParallelSettings& p = config.parallel();
    return concat(role_key(c, p.data, mesh.dp, config.train().grad_accum), "|", role_key(c, p.offload, 1, 1), "|",
                  role_key(c, p.tensor, mesh.tp, 1), "|",
                  role_key(c, p.pipeline, mesh.pp, pipeline.schedule.spec.stages_per_rank), "|",
                  pipeline.partition.stages(), "|", config.train().dtype);
  }

  // The answers are kept with their refusals (a cost model's groups that do not fit).
  std::shared_ptr<const RankDataCost> data_cost_for(const PlanInputs& in, const std::string& key, int64_t pp_rank,
                                                    int64_t dp_per_node) {
    auto it = data_costs_.find(key);
    if (it == data_costs_.end()) {
      DataCostOrRefusal asked;
      try {
        asked.cost = std::make_shared<const RankDataCost>(plan_data_cost(in, pp_rank, dp_per_node));
      } catch (const Error&) {
        asked.refusal = std::current_exception();
      }
      it = data_costs_.emplace(key, std::move(asked)).first;
    }
    if (it->second.refusal) std::rethrow_exception(it->second.refusal);
    return it->second.cost;
  }

  // Each pipeline rank's parameters, by tensor layout and stage partition.
  const std::vector<RankParameters>& params_for(const ResolvedConfig& config, const MeshShape& mesh,
                                                const PlanCandidate& c, const PipelinePlan& pipeline,
                                                const StageModel& whole) {
    const std::string key = role_key(c, config.parallel().tensor, mesh.tp, 1) + "|" +
                            role_key(c, config.parallel().pipeline, mesh.pp, pipeline.partition.stages());
    auto it = params_.find(key);
    if (it == params_.end()) {
      std::vector<RankParameters> ranks;
      for (int64_t r = 0; r < mesh.pp; ++r) ranks.push_back(rank_parameters(whole, pipeline.partition, mesh.pp, r));
      it = params_.emplace(key, std::move(ranks)).first;
    }
    return it->second;
  }

  ConfigTree tree_;  // the base run's, read once
  const Hardware& hw_;
  std::unique_ptr<PluginRegistry> registry_;
  ModelSpec model_;
  StageModel shapes_;
  struct PipelineOrRefusal {
    PipelinePlan plan;
    std::exception_ptr refusal;
  };
  std::map<std::string, PipelineOrRefusal> pipelines_;
  std::map<std::string, ShapeModel> shapes_by_layout_;
  std::map<std::string, std::vector<RankParameters>> params_;
  struct DataCostOrRefusal {
    std::shared_ptr<const RankDataCost> cost;
    std::exception_ptr refusal;
  };
  std::map<std::string, DataCostOrRefusal> data_costs_;
};

// A --set of a key the plans set for themselves would be overwritten in each of them, silently.
void refuse_searched_sets(const std::vector<std::string>& sets, const std::vector<PlanCandidate>& candidates) {
  std::set<std::string> searched;
  for (const PlanCandidate& c : candidates) {
    for (const std::string& s : c.sets) searched.insert(assignment_key(s));
  }
  for (const std::string& set : sets) {
    PLAIT_CHECK(searched.count(assignment_key(set)) == 0,
                concat("--set ", set, ": the search chooses ", assignment_key(set), " for each plan it tries, so this "
                       "value would be ignored"),
                "drop it to let the search choose, or predict that one configuration: plait plan --explain CONFIG --set ...");
  }
}

}  // namespace

ResolvedConfig candidate_config(const ConfigTree& base, const PlanCandidate& candidate, const PluginRegistry& registry) {
  ConfigTree tree = base;
  for (const std::string& assignment : candidate.sets) apply_override(tree, assignment);
  return resolve_config(tree, registry);
}

PlanSearchResult search_plans(const std::string& config_path, const std::vector<std::string>& sets,
                              const Hardware& hw, const SearchLimits& limits) {
  const auto start = std::chrono::steady_clock::now();
  CandidateEvaluator evaluator(config_path, sets, hw);
  PlanSearchResult result;
  result.model = evaluator.model();
  const std::vector<PlanCandidate> candidates = enumerate_candidates(evaluator.registry(), evaluator.model(), limits);
  refuse_searched_sets(sets, candidates);
  for (const PlanCandidate& c : candidates) {
    ++result.candidates;
    PlanOutcome outcome = evaluator.evaluate(c);
    (outcome.refused.empty() ? result.fitting : result.refused).push_back(std::move(outcome));
  }
  // The fastest first; of plans alike in speed, the one that leaves more memory free.
  std::stable_sort(result.fitting.begin(), result.fitting.end(), [](const PlanOutcome& a, const PlanOutcome& b) {
    const double x = a.prediction->tokens_per_s_per_gpu, y = b.prediction->tokens_per_s_per_gpu;
    if (std::abs(x - y) > 1e-9 * std::max(x, y)) return x > y;
    return a.prediction->ranks[a.prediction->busiest].device() < b.prediction->ranks[b.prediction->busiest].device();
  });
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace plait
