// The user's accuracy budget for reduced-precision kernels (`tune --accuracy SPEC`) and the
// one measure of a reduced-precision result against its fp32 native reference. Without a
// budget no reduced-precision backend takes part, so placements are exactly the fp32 ones.
//
// SPEC is a comma list of
//   max-rel=R   per output: max |got - want| <= R * max |want| (error relative to the
//               output's peak: element-wise relative error is meaningless near zero)
//   cosine=C    per output: cosine similarity of got and want >= C
//   top1        per output: the argmax over its last axis agrees in every row (classifier
//               logits; applied end to end only, a kernel has no classes)
// e.g. "top1,max-rel=5e-2". Each reduced-precision kernel must itself fit max-rel and cosine
// (its own error, recorded with its cost); the whole placement must fit all of them.
#pragma once

#include <string>
#include <vector>

#include "core/ir/tensor.h"

namespace collage {

struct AccuracyBudget {
  double max_rel = -1;  // < 0: not bounded
  double cosine = -1;   // < 0: not bounded
  bool top1 = false;
  bool enabled() const { return max_rel >= 0 || cosine >= 0 || top1; }
  std::string to_string() const;  // the SPEC it parses from ("" when not enabled)
};

// `budget` with each bound's allowed error scaled by `margin` (0 < margin <= 1): max-rel R -> R *
// margin, cosine C -> 1 - (1 - C) * margin; top1 as it is.
AccuracyBudget with_margin(const AccuracyBudget& budget, double margin);

// InvalidInput naming the bad item ("--accuracy: 'cosin=0.9' is not max-rel=R, cosine=C or top1").
AccuracyBudget parse_accuracy(const std::string& spec);

struct AccuracyMeasure {
  double max_rel = 0;  // max |got - want| / max |want| (infinite when a value is non-finite on one side only)
  double cosine = 1;   // of got and want as vectors (1 when both are zero)
  bool top1 = true;    // argmax over the last axis agrees in every row
  std::string failure;  // empty when the budget holds: which bound failed and by how much
  bool ok() const { return failure.empty(); }
};

// `got` against `want` (same shape; a shape mismatch fails) under `budget`; `name` labels
// the failure. `end_to_end`: the top1 bound applies (it does not to one kernel's output).
AccuracyMeasure measure_accuracy(const Tensor& got, const Tensor& want, const AccuracyBudget& budget,
                                 const std::string& name, bool end_to_end);

}  // namespace collage
