// The model the isolation tests tune: x [1,64] -> per fault a branch Reshape
// [d, 64/d] -> Relu -> Reshape [1,64], the branches summed; the faulty backend
// (faulty_backend.h) fails by the Relu's first dim.
#pragma once

#include <map>
#include <string>

#include "tests/unit/onnx_test_model.h"

namespace collage::testing {

#if defined(__SANITIZE_ADDRESS__)
// No address-space limit under ASan: the hoarder would take the machine.
constexpr bool kFaultyModelHasHoarder = false;
// ASan catches the SIGSEGV itself, prints its report and exits with code 1.
inline constexpr const char* kSegvReason = "the measurement worker exited with code 1";
#else
constexpr bool kFaultyModelHasHoarder = true;
inline constexpr const char* kSegvReason = "crashed: SIGSEGV";
#endif

// First dim of the Relu -> the invalid reason its faulty candidate gets ("" = none),
// at a 2 s time limit.
inline const std::map<int64_t, std::string> kFaultOfDim = {
    {1, ""}, {2, kSegvReason}, {4, "crashed: SIGABRT"}, {8, "timed out after 2 s"}, {16, "out of memory"}};

inline OnnxTestModel faulty_model(bool with_hoarder = kFaultyModelHasHoarder) {
  OnnxTestModel m(17);
  m.input("x", {1, 64});
  m.initializer("flat", Tensor::from_vector<int64_t>({2}, {1, 64}));
  std::string sum;
  for (const auto& [d, reason] : kFaultOfDim) {
    if (!with_hoarder && d == 16) continue;
    std::string k = std::to_string(d);
    m.initializer("shape" + k, Tensor::from_vector<int64_t>({2}, {d, 64 / d}));
    m.node("Reshape", {"x", "shape" + k}, {"r" + k});
    m.node("Relu", {"r" + k}, {"relu" + k});
    m.node("Reshape", {"relu" + k, "flat"}, {"b" + k});
    if (sum.empty()) {
      sum = "b" + k;
    } else {
      m.node("Add", {sum, "b" + k}, {"s" + k});
      sum = "s" + k;
    }
  }
  m.node("Neg", {sum}, {"y"});
  m.output("y");
  return m;
}

}  // namespace collage::testing
