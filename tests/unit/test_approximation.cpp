// verify's verdict on an approximate plugin, from two runs' records: the final loss is
// the mean of the last tenth of the steps, the gap is judged against the allowed one,
// a run that did not learn fails whatever the gap, and the bytes are put side by side.
#include <catch2/catch.hpp>

#include "verify/approximation.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using plait::verify::loss_gap_verdict;

namespace {

// `steps` records whose loss falls linearly from `first` to `last` and stays there for
// the last tenth, sending `bytes` a step.
std::vector<nlohmann::json> run(double first, double last, double bytes, int steps = 20) {
  std::vector<nlohmann::json> out;
  const int falling = steps - steps / 10;
  for (int i = 0; i < steps; ++i) {
    const double loss = i >= falling - 1 ? last : first + (last - first) * i / (falling - 1);
    out.push_back({{"step", i + 1}, {"loss", loss}, {"comm_bytes", bytes}});
  }
  return out;
}

}  // namespace

TEST_CASE("the final loss is the mean of the last tenth of the steps", "[verify]") {
  auto records = run(5.0, 2.0, 0.0, 20);
  records[18]["loss"] = 3.0, records[19]["loss"] = 1.0;
  CHECK(plait::verify::final_loss(records) == Approx(2.0));
  CHECK(plait::verify::final_loss(run(5.0, 2.0, 0.0, 5)) == Approx(2.0));  // fewer than 10: the last one
  CHECK(plait::verify::bytes_per_step(run(5.0, 2.0, 1000.0)) == Approx(1000.0));
}

TEST_CASE("an approximate run passes within the allowed gap above ddp's loss, and fails beyond it, with both losses and "
          "both byte rates", "[verify]") {
  const auto ddp = run(5.5, 2.0, 1 << 20);
  const auto close = loss_gap_verdict(run(5.5, 2.08, 1 << 17), ddp, 0.05);
  CHECK(close.passed);
  CHECK_THAT(close.detail, StartsWith("final loss 2.08") && Contains("against ddp's 2 (+4.0%; at most +5.0% passes)") &&
                               Contains("sends 128.0 KiB a step against ddp's 1.0 MiB (0.125 of it)"));
  const auto far = loss_gap_verdict(run(5.5, 2.2, 1 << 17), ddp, 0.05);
  CHECK_FALSE(far.passed);
  CHECK_THAT(far.detail, Contains("(+10.0%; at most +5.0% passes)"));
  // Below ddp's loss is no fault.
  CHECK(loss_gap_verdict(run(5.5, 1.5, 1 << 17), ddp, 0.05).passed);
}

TEST_CASE("an approximate run that did not learn fails even inside the gap", "[verify]") {
  const auto flat = loss_gap_verdict(run(2.0, 2.0, 0), run(5.5, 2.0, 1 << 20), 0.05);
  CHECK_FALSE(flat.passed);
  CHECK_THAT(flat.detail, StartsWith("it did not learn: loss 2 at step 1, 2 at the end; final loss 2"));
  auto diverged = run(5.5, 2.0, 0);
  diverged.back()["loss"] = std::nan("");
  CHECK_FALSE(loss_gap_verdict(diverged, run(5.5, 2.0, 1 << 20), 0.05).passed);
}
