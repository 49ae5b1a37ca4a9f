#include "distributed/mesh.hpp"

#include "plait/sdk/error.hpp"

namespace plait {

const char* axis_name(Axis axis) {
  switch (axis) {
    case Axis::pp: return "pp";
    case Axis::dp: return "dp";
    case Axis::tp: return "tp";
  }
  return "?";
}

int MeshShape::size(Axis axis) const {
  switch (axis) {
    case Axis::pp: return pp;
    case Axis::dp: return dp;
    case Axis::tp: return tp;
  }
  return 1;
}

MeshShape resolve_mesh(int dp, int pp, int tp, int world_size, const std::string& world_from) {
  std::array<int*, 3> degrees = {&pp, &dp, &tp};
  int unknown = 0, known = 1;
  for (int* d : degrees) {
    PLAIT_CHECK(*d == -1 || *d >= 1, concat("[parallel] degrees must be positive or -1, got ", *d),
                "-1 means \"the rest of the world size\"");
    if (*d == -1) ++unknown;
    else known *= *d;
  }
  PLAIT_CHECK(unknown <= 1, "[parallel] at most one of dp, pp, tp may be -1", "give the other degrees");
  if (unknown == 1) {
    PLAIT_CHECK(world_size > 0, "[parallel] a degree of -1 needs a known world size",
                "pass --nproc-per-node (and --nnodes), or give every degree");
    PLAIT_CHECK(world_size % known == 0,
                concat("[parallel] the world size ", world_size, " is not a multiple of the other degrees' product ",
                       known),
                "choose degrees that divide the number of processes");
    for (int* d : degrees) {
      if (*d == -1) *d = world_size / known;
    }
  }
  MeshShape shape{pp, dp, tp};
  PLAIT_CHECK(world_size == 0 || shape.world() == world_size,
              concat("[parallel] dp ", dp, " x pp ", pp, " x tp ", tp, " = ", shape.world(),
                     ", but the job has ", world_size, world_size == 1 ? " process" : " processes",
                     world_from.empty() ? "" : concat(" (", world_from, ")")),
              concat("make dp x pp x tp = ", world_size, ", or use -1 for one of them"));
  return shape;
}

int MeshCoords::index(Axis axis) const {
  switch (axis) {
    case Axis::pp: return pp;
    case Axis::dp: return dp;
    case Axis::tp: return tp;
  }
  return 0;
}

Mesh::Mesh(MeshShape shape, int rank) : shape_(shape), rank_(rank), coords_(coords_of(rank)) {
  PLAIT_CHECK(rank >= 0 && rank < shape.world(), concat("rank ", rank, " is outside a world of ", shape.world()),
              "check RANK and WORLD_SIZE");
}

int Mesh::rank_of(const MeshCoords& c) const { return (c.pp * shape_.dp + c.dp) * shape_.tp + c.tp; }

MeshCoords Mesh::coords_of(int rank) const {
  MeshCoords c;
  c.tp = rank % shape_.tp;
  c.dp = (rank / shape_.tp) % shape_.dp;
  c.pp = rank / (shape_.tp * shape_.dp);
  return c;
}

std::vector<int> Mesh::group(Axis axis) const {
  std::vector<int> ranks;
  for (int i = 0; i < shape_.size(axis); ++i) {
    MeshCoords c = coords_;
    if (axis == Axis::pp) c.pp = i;
    if (axis == Axis::dp) c.dp = i;
    if (axis == Axis::tp) c.tp = i;
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::string Mesh::group_name(Axis axis) const {
  // Number the groups of an axis by their first member's coordinates on the other axes.
  MeshCoords first = coords_;
  if (axis == Axis::pp) first.pp = 0;
  if (axis == Axis::dp) first.dp = 0;
  if (axis == Axis::tp) first.tp = 0;
  return concat(axis_name(axis), ".", rank_of(first));
}

}  // namespace plait
