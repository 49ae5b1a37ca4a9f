// How reports print durations and rates: two (durations) or four (rates) significant
// digits, never in exponent form, so a tiny model's figures read as figures.
#include <catch2/catch.hpp>

#include "util/short_number.hpp"

using namespace plait;

TEST_CASE("durations keep two significant digits and never turn to exponents", "[util]") {
  CHECK(seconds_text(0.46) == "0.46 s");
  CHECK(seconds_text(2.8) == "2.8 s");
  CHECK(seconds_text(95.4) == "95 s");
  CHECK(seconds_text(0.000399) == "0.0004 s");
  CHECK(seconds_text(3.8e-6) == "0.0000038 s");
  CHECK(seconds_text(0.0) == "0 s");
}

TEST_CASE("rates keep four significant digits with k M G", "[util]") {
  CHECK(rate_text(950.24) == "950.2");
  CHECK(rate_text(268843.0) == "268.8k");
  CHECK(rate_text(16590399.8) == "16.59M");
  CHECK(rate_text(2.5e9) == "2.5G");
}
