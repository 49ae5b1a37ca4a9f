#include <catch2/catch.hpp>

#include "util/did_you_mean.hpp"

using namespace plait;

TEST_CASE("edit distance counts insertions, deletions, substitutions and swaps", "[util]") {
  CHECK(edit_distance("lr", "lr") == 0);
  CHECK(edit_distance("lerning_rate", "learning_rate") == 1);
  CHECK(edit_distance("setps", "steps") == 1);  // neighbours swapped
  CHECK(edit_distance("", "abc") == 3);
  CHECK(edit_distance("Steps", "steps") == 0);  // case does not count
}

TEST_CASE("closest match suggests plausible typos only", "[util]") {
  const std::vector<std::string> keys = {"steps", "lr", "warmup_steps", "grad_clip"};
  CHECK(closest_match("setps", keys) == "steps");
  CHECK(closest_match("grad_clp", keys) == "grad_clip");
  CHECK(closest_match("completely_different", keys).empty());
  CHECK(did_you_mean("stepz", keys) == " (did you mean 'steps'?)");
  CHECK(did_you_mean("zzzzzzzz", keys).empty());
}
