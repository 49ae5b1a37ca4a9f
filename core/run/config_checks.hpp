#pragma once
// Checks of the resolved config that no single schema can make: settings that must
// agree with each other, the machine, or the numbers the training will compute with.
// Each error starts at the config line to change.
#include "config/resolve.hpp"
#include "distributed/mesh.hpp"

namespace plait {

// [train] device against the devices visible here; memory_limit_mb on the CPU only.
void check_devices(const ResolvedConfig& config);

// AdamW's numbers fit the parameters' type: beta below 1 (the bias correction divides
// by 1 - beta^t), and lr, lr * weight_decay, lr / (1 - beta1) and eps within float32's
// range unless the run is float64.
void check_optimizer_numbers(const ResolvedConfig& config);

// The mesh from [parallel] dp, pp, tp (-1: the rest of `known_world`, 0: not known).
MeshShape resolve_configured_mesh(const ResolvedConfig& config, const KnownWorld& known_world);

// A degree above 1 needs the plugin that splits along its axis.
void check_mesh_roles(const ResolvedConfig& config, const MeshShape& mesh);

// Settings that would be accepted and then do nothing: a file or llm.c's sequential order
// for synthetic data, a [debug] step past the run's last step or a rank past its last rank.
void check_settings_take_effect(const ResolvedConfig& config, const MeshShape& mesh);

}  // namespace plait
