// The refine progress `collage tune` prints: a generation without a measured genome has
// no best or mean to print, and says so instead of printing a made-up number.
#include <gtest/gtest.h>

#include "app/cli_commands.h"
#include "core/tuning/progress.h"

namespace collage {
namespace {

ProgressEvent generation(size_t done, size_t evaluations, double elapsed_ms) {
  ProgressEvent e;
  e.stage = ProgressEvent::Stage::Refine;
  e.done = done;
  e.evaluations = evaluations;
  e.elapsed_ms = elapsed_ms;
  return e;
}

TEST(CliProgress, AGenerationWithoutAFitnessPrintsNoNumber) {
  ProgressEvent e = generation(3, 10, 1500);
  EXPECT_EQ(cli::refine_generation_line(e), "refining: generation 3, best -, mean -, 10 evaluations, 1.5 s");
  e.best_ms = 0.5;  // a best so far, but no genome of this generation measured
  EXPECT_EQ(cli::refine_generation_line(e),
            "refining: generation 3, best 0.500 ms, mean -, 10 evaluations, 1.5 s");
  e.mean_ms = 0.75;
  EXPECT_EQ(cli::refine_generation_line(e),
            "refining: generation 3, best 0.500 ms, mean 0.750 ms, 10 evaluations, 1.5 s");
}

TEST(CliProgress, MillisecondsOrNone) {
  EXPECT_EQ(cli::ms_or_none(std::nullopt), "-");
  EXPECT_EQ(cli::ms_or_none(0.0), "0.000 ms");  // a measured 0 is a number, not "none"
  EXPECT_EQ(cli::ms_or_none(12.3456), "12.346 ms");
}

}  // namespace
}  // namespace collage
