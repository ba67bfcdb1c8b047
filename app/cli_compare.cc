// `collage compare A.pb B.pb [--rtol R --atol A | --accuracy SPEC]`: agreement of two
// TensorProto files (used to check placements against ONNX Runtime in the benchmark):
// element-wise, or (--accuracy, for reduced precision) A against B as the reference under
// an accuracy budget (core/ir/accuracy.h).
#include <cstdio>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "core/ir/accuracy.h"
#include "core/ir/tensor_compare.h"
#include "core/tensor_io/tensor_proto.h"

namespace collage::cli {

int command_compare(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, {"--rtol", "--atol", "--accuracy"}, {});
  if (args.positional.size() != 2)
    throw Error(
        ErrorKind::InvalidInput,
        "usage: collage compare A.pb B.pb [--rtol R] [--atol A] [--accuracy top1,max-rel=R,cosine=C]");
  if (args.has("--accuracy")) {
    AccuracyBudget budget = parse_accuracy(args.get("--accuracy", ""));
    Tensor a = read_tensor_file(args.positional[0]), b = read_tensor_file(args.positional[1]);
    if (a.shape() != b.shape())
      throw Error(ErrorKind::InvalidInput,
                  "shapes differ: " + shape_to_string(a.shape()) + " vs " + shape_to_string(b.shape()));
    AccuracyMeasure m = measure_accuracy(a, b, budget, args.positional[0], true);
    std::printf("%lld elements, max-rel %.3g, cosine %.6f, top-1 %s; budget %s: %s\n",
                static_cast<long long>(a.size()), m.max_rel, m.cosine, m.top1 ? "agrees" : "differs",
                budget.to_string().c_str(), m.ok() ? "holds" : m.failure.c_str());
    return m.ok() ? 0 : 1;
  }
  double rtol = args.get_double("--rtol", 1e-3, 0.0, 1e6), atol = args.get_double("--atol", 1e-4, 0.0, 1e6);
  Tensor a = read_tensor_file(args.positional[0]), b = read_tensor_file(args.positional[1]);
  // The tuner's comparison with the given tolerances and no peak term; dtypes may differ.
  TensorComparison c = compare_tensors(a, b, Tolerance{atol, rtol, 0});
  if (c.shape_mismatch)
    throw Error(ErrorKind::InvalidInput,
                "shapes differ: " + shape_to_string(a.shape()) + " vs " + shape_to_string(b.shape()));
  size_t bad = c.mismatches;
  std::printf("%zu elements, max abs error %.3g, %zu outside rtol %.g atol %.g\n", c.elements,
              c.max_abs_error, bad, rtol, atol);
  return bad ? 1 : 0;
}

}  // namespace collage::cli
