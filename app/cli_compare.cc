// `collage compare A.pb B.pb`: element-wise agreement of two TensorProto files
// (used to check placements against ONNX Runtime in the benchmark).
#include <cmath>
#include <cstdio>

#include "app/cli_args.h"
#include "app/cli_commands.h"
#include "core/tensor_proto.h"

namespace collage::cli {

int command_compare(const std::vector<std::string>& argv) {
  Args args = parse_args(argv, {"--rtol", "--atol"}, {});
  if (args.positional.size() != 2)
    throw Error(ErrorKind::InvalidInput, "usage: collage compare A.pb B.pb [--rtol R] [--atol A]");
  double rtol = std::stod(args.get("--rtol", "1e-3")), atol = std::stod(args.get("--atol", "1e-4"));
  Tensor a = read_tensor_file(args.positional[0]), b = read_tensor_file(args.positional[1]);
  if (a.shape() != b.shape())
    throw Error(ErrorKind::InvalidInput,
                "shapes differ: " + shape_to_string(a.shape()) + " vs " + shape_to_string(b.shape()));
  std::vector<double> x = a.to_double_vector(), y = b.to_double_vector();
  double max_abs = 0;
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double err = std::fabs(x[i] - y[i]);
    max_abs = std::max(max_abs, err);
    if (!(err <= atol + rtol * std::fabs(y[i]))) ++bad;
  }
  std::printf("%zu elements, max abs error %.3g, %zu outside rtol %.g atol %.g\n", x.size(), max_abs, bad,
              rtol, atol);
  return bad ? 1 : 0;
}

}  // namespace collage::cli
