// `collage compare A.pb B.pb`: element-wise agreement of two TensorProto files
// (used to check placements against ONNX Runtime in the benchmark).
#include <cstdio>

#include "app/args/args.h"
#include "app/cli_commands.h"
#include "core/ir/tensor_compare.h"
#include "core/tensor_io/tensor_proto.h"

namespace collage::cli {

int command_compare(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, {"--rtol", "--atol"}, {});
  if (args.positional.size() != 2)
    throw Error(ErrorKind::InvalidInput, "usage: collage compare A.pb B.pb [--rtol R] [--atol A]");
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
