// A backend this CPU cannot run is unavailable with a reason: it offers no candidates, no
// default or "every backend" selection holds it, and naming it is refused with the reason.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend_test_models.h"
#include "backends/native/native_spec.h"
#include "backends/registry.h"
#include "core/tuning/candidates.h"

namespace collage {
namespace {

using namespace collage::testing;

bool holds(const std::vector<const BackendSpec*>& list, const BackendSpec* b) {
  return std::find(list.begin(), list.end(), b) != list.end();
}

TEST(BackendAvailability, AnUnavailableBackendOffersNoCandidates) {
  Graph g = dense_model(4, 64, 48);
  BackendSpec spec = native_backend();
  ASSERT_EQ(unavailable_reason(spec), "");
  EXPECT_FALSE(enumerate_candidates(g, {&spec}).empty());
  spec.unavailable = [] { return std::string("this CPU lacks an instruction the kernels need"); };
  EXPECT_EQ(unavailable_reason(spec), "this CPU lacks an instruction the kernels need");
  EXPECT_TRUE(enumerate_candidates(g, {&spec}).empty());
}

// Whatever this CPU is, and under ONEDNN_MAX_CPU_ISA=AVX2 (ctest: onednn_avx2_path), every
// backend compiled in is either available or refused by name with its reason.
TEST(BackendAvailability, SelectionsHoldExactlyTheBackendsThisCpuCanRun) {
  const std::vector<const BackendSpec*> available = available_backends(), defaults = default_backends();
  for (const BackendSpec* b : all_backends()) {
    const std::string why = unavailable_reason(*b);
    EXPECT_EQ(holds(available, b), why.empty()) << b->name << ": " << why;
    if (holds(defaults, b)) {
      EXPECT_TRUE(why.empty()) << b->name;
    }
    if (why.empty()) {
      EXPECT_EQ(select_backends(b->name), std::vector<const BackendSpec*>{b});
      continue;
    }
    try {
      select_backends(b->name);
      ADD_FAILURE() << b->name << " was selected although " << why;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(holds(available, find_backend("native")));  // the reference runs everywhere
}

}  // namespace
}  // namespace collage
