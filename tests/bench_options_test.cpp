// The GPU benchmark's command-line flags (bench/options.h), which nvfp4_bench and
// `nvfp4-verify bench` share: parsed here without a GPU.
#include <gtest/gtest.h>

#include "bench/options.h"

namespace nvfp4::bench {
namespace {

BenchOptions parse(std::vector<std::string> args) {
  CLI::App app;
  BenchOptions o;
  add_bench_options(app, o);
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
  app.parse(args);
  return o;
}

TEST(BenchOptions, WithoutFlagsTimesEveryShapeWithL2Flushed) {
  const BenchOptions o = parse({});
  EXPECT_EQ(o.repetitions, 50);
  EXPECT_TRUE(o.large);
  EXPECT_TRUE(o.json_path.empty());
  EXPECT_EQ(o.campaign_seconds, 10.0);
  EXPECT_TRUE(o.cold_l2);
}

TEST(BenchOptions, EachFlagSetsItsOption) {
  const BenchOptions o = parse({"--repetitions", "7", "--small", "--json", "out.json", "--campaign-seconds", "0", "--warm-l2"});
  EXPECT_EQ(o.repetitions, 7);
  EXPECT_FALSE(o.large);
  EXPECT_EQ(o.json_path, "out.json");
  EXPECT_EQ(o.campaign_seconds, 0.0);
  EXPECT_FALSE(o.cold_l2);
}

TEST(BenchOptions, RejectsAValueThatIsNotANumber) { EXPECT_THROW(parse({"--repetitions", "many"}), CLI::ParseError); }

}  // namespace
}  // namespace nvfp4::bench
