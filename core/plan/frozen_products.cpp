#include "plan/frozen_products.hpp"

#include <set>

namespace plait {
namespace {

// The product (block_forward_gemms' name) a block linear's module is computed in: GPT-2's
// by its last two components, Llama's q/k/v and gate/up fused as megatron fuses them.
std::string product_of(const std::string& module, const std::string& family) {
  const std::string last = module.substr(module.rfind('.') + 1);
  if (family == "llama") {
    if (last == "q_proj" || last == "k_proj" || last == "v_proj") return "qkv";
    if (last == "gate_proj" || last == "up_proj") return "gate_up";
    if (last == "down_proj") return "down";
    return last;  // o_proj
  }
  return last == "c_proj" ? module.substr(module.rfind('.', module.size() - last.size() - 2) + 1) : last;
}

struct Linear {
  bool frozen = true, adapted = false;
};

// The adapters' sums per block; the linears whose adapter keeps a copy of its own.
std::set<std::string> add_adapter_costs(FrozenProducts& out, const std::vector<AdapterSiteCost>& adapters, double blocks) {
  std::set<std::string> own_copy;
  for (const AdapterSiteCost& site : adapters) {
    if (!site.cost) continue;
    if (!site.cost->keeps_input) own_copy.insert(site.linear);
    out.adapter_kept_bytes += static_cast<double>(site.cost->kept_bytes) / blocks;
    out.adapter_flops += site.cost->flops / blocks;
    if (site.cost->keeps_input && site.split == Split::column && site.shards > 1) {
      out.adapter_column_inputs += static_cast<double>(site.in_features) / blocks;
    }
  }
  return own_copy;
}

}  // namespace

FrozenProducts frozen_products(const StageModel& whole, const std::string& family,
                               const std::vector<AdapterSiteCost>* adapters) {
  FrozenProducts out;
  double blocks = 0;
  for (const UnitSlot& slot : whole.units) blocks += slot.kind == UnitKind::block ? 1 : 0;
  const std::set<std::string> own_copy =
      adapters != nullptr && blocks > 0 ? add_adapter_costs(out, *adapters, blocks) : std::set<std::string>{};
  std::map<std::string, double> blocks_with;  // blocks holding the product
  std::map<std::string, double> frozen, unread;
  double norms = 0, norms_frozen = 0;
  for (const UnitSlot& slot : whole.units) {
    const std::vector<ParamRef> params = StageModel{{slot}}.all_parameters();
    if (slot.kind == UnitKind::embedding) {
      out.embedding = true;
      for (const ParamRef& p : params) out.embedding = out.embedding && !p.tensor.requires_grad();
    }
    if (slot.kind == UnitKind::head || (slot.kind == UnitKind::embedding && family == "gpt2")) {
      for (const ParamRef& p : params) {
        if (p.name == "lm_head.weight" || p.name == "transformer.wte.weight") out.head = !p.tensor.requires_grad();
      }
    }
    if (slot.kind != UnitKind::block) continue;
    // Modules holding a matrix "weight": a linear's, or an adapter's part of one (a module
    // inside a linear's, as LoRA's "<linear>.lora_A").
    std::map<std::string, const ParamRef*> matrices;
    for (const ParamRef& p : params) {
      const std::string& n = p.name;
      if (n.ends_with("norm.weight") || n.ends_with("ln_1.weight") || n.ends_with("ln_2.weight")) {
        norms += 1;
        norms_frozen += p.tensor.requires_grad() ? 0 : 1;
      } else if (n.ends_with(".weight") && p.tensor.dim() == 2) {
        matrices[n.substr(0, n.size() - 7)] = &p;
      }
    }
    std::map<std::string, Linear> linears;  // by product, in this block
    for (const auto& [module, p] : matrices) {
      const std::size_t dot = module.rfind('.');
      if (dot != std::string::npos && matrices.count(module.substr(0, dot)) != 0) {
        const std::string linear = module.substr(0, dot);
        if (p->tensor.requires_grad() && own_copy.count(linear) == 0) linears[product_of(linear, family)].adapted = true;
        continue;
      }
      Linear& l = linears[product_of(module, family)];
      l.frozen = l.frozen && !p->tensor.requires_grad();
    }
    for (const auto& [product, l] : linears) {
      blocks_with[product] += 1;
      frozen[product] += l.frozen ? 1 : 0;
      unread[product] += l.frozen && !l.adapted ? 1 : 0;
    }
  }
  for (const auto& [product, n] : blocks_with) {
    out.frozen[product] = frozen[product] / n;
    out.unread[product] = unread[product] / n;
  }
  out.norms = norms > 0 ? norms_frozen / norms : 0;
  return out;
}

}  // namespace plait
