#include <catch2/catch.hpp>

#include "distributed/mesh.hpp"
#include "plait/sdk/error.hpp"

using namespace plait;
using Catch::Matchers::Contains;

TEST_CASE("mesh degrees resolve -1 from the world size and must multiply to it", "[dist]") {
  MeshShape s = resolve_mesh(-1, 2, 2, 8);
  CHECK(s.dp == 2);
  CHECK(s.world() == 8);
  CHECK(resolve_mesh(2, 1, 1, 0).world() == 2);  // world not known: the degrees decide
  CHECK_THROWS_WITH(resolve_mesh(2, 1, 1, 3), Contains("dp 2 x pp 1 x tp 1 = 2, but the job has 3 processes"));
  // What said the world size is named beside it: the config names only the degrees.
  CHECK_THROWS_WITH(resolve_mesh(2, 1, 1, 6, "--nnodes 2 x --nproc-per-node 3"),
                    Contains("but the job has 6 processes (--nnodes 2 x --nproc-per-node 3)"));
  CHECK_THROWS_WITH(resolve_mesh(-1, 1, 1, 0), Contains("a degree of -1 needs a known world size"));
  CHECK_THROWS_WITH(resolve_mesh(-1, 3, 1, 8), Contains("not a multiple of the other degrees' product 3"));
  CHECK_THROWS_WITH(resolve_mesh(-1, -1, 1, 8), Contains("at most one of dp, pp, tp may be -1"));
}

TEST_CASE("ranks lay out tp fastest, then dp, then pp, and groups are the ranks along one axis", "[dist]") {
  const MeshShape shape{2, 2, 2};  // pp, dp, tp
  Mesh m(shape, 5);                 // 5 = (pp 1 * dp 2 + dp 0) * tp 2 + tp 1
  CHECK(m.coords().pp == 1);
  CHECK(m.coords().dp == 0);
  CHECK(m.coords().tp == 1);
  CHECK(m.group(Axis::tp) == std::vector<int>{4, 5});
  CHECK(m.group(Axis::dp) == std::vector<int>{5, 7});
  CHECK(m.group(Axis::pp) == std::vector<int>{1, 5});
  // Every member of a group gives it the same name.
  CHECK(m.group_name(Axis::dp) == Mesh(shape, 7).group_name(Axis::dp));
  CHECK(m.group_name(Axis::dp) != Mesh(shape, 4).group_name(Axis::dp));
  for (int r = 0; r < 8; ++r) CHECK(m.rank_of(m.coords_of(r)) == r);
}
