#pragma once
// The device mesh: named axes pp, dp, tp whose sizes multiply to the world size.
// Ranks are laid out with tp varying fastest, then dp, then pp (Megatron's order), so
// tensor-parallel peers are neighbours (same node) and pipeline stages are far apart:
//   rank = (pp_index * dp + dp_index) * tp + tp_index
#include <array>
#include <string>
#include <vector>

namespace plait {

enum class Axis { pp = 0, dp = 1, tp = 2 };
const char* axis_name(Axis axis);

struct MeshShape {
  int pp = 1, dp = 1, tp = 1;
  int size(Axis axis) const;
  int world() const { return pp * dp * tp; }
};

// The number of processes the command line or the environment gives (0: not known, so
// the mesh degrees decide it), and what gave it, to name when the degrees disagree.
struct KnownWorld {
  int processes = 0;
  std::string from;  // "--nproc-per-node 3", "WORLD_SIZE=3"
  KnownWorld(int processes = 0, std::string from = {}) : processes(processes), from(std::move(from)) {}  // NOLINT: a bare count converts
};

// Degrees as configured ([parallel] dp/pp/tp, -1 at most once meaning "the rest").
// world_size 0 means "not known yet": then -1 is an error and the product is the world.
// world_from: what said the world size ("--nproc-per-node 3"), named when they disagree.
MeshShape resolve_mesh(int dp, int pp, int tp, int world_size, const std::string& world_from = "");

struct MeshCoords {
  int pp = 0, dp = 0, tp = 0;
  int index(Axis axis) const;
};

class Mesh {
 public:
  Mesh(MeshShape shape, int rank);

  const MeshShape& shape() const { return shape_; }
  int rank() const { return rank_; }
  const MeshCoords& coords() const { return coords_; }

  int rank_of(const MeshCoords& c) const;
  MeshCoords coords_of(int rank) const;

  // The global ranks of this rank's group along `axis`, in axis order, and a name for the
  // group that is the same on every member ("dp.3": the 4th dp group).
  std::vector<int> group(Axis axis) const;
  std::string group_name(Axis axis) const;

 private:
  MeshShape shape_;
  int rank_;
  MeshCoords coords_;
};

}  // namespace plait
