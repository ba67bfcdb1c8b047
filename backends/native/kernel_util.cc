#include "backends/native/kernel_util.h"

namespace collage::native {

const Tensor& input(const Node& node, KernelInputs inputs, size_t i) {
  if (i >= inputs.size() || inputs[i] == nullptr)
    invalid(node, "required input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

const Tensor* optional_input(KernelInputs inputs, size_t i) {
  return i < inputs.size() ? inputs[i] : nullptr;
}

int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    invalid(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

Shape broadcast_shapes(const Node& node, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      invalid(node, "shapes " + shape_to_string(a) + " and " + shape_to_string(b) + " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> strides_of(const Shape& shape) { return row_major_strides(shape); }

std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> own = strides_of(shape);
  std::vector<int64_t> s(out.size(), 0);
  size_t offset = out.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i) s[offset + i] = shape[i] == 1 ? 0 : own[i];
  return s;
}

void unsupported(const Node& node, const std::string& what) {
  throw Error(ErrorKind::Unsupported, node.describe() + ": " + what);
}

void invalid(const Node& node, const std::string& what) {
  throw Error(ErrorKind::InvalidModel, node.describe() + ": " + what);
}

void require_float(const Node& node, const Tensor& t, const char* role) {
  if (t.dtype() != DType::Float32)
    unsupported(node,
                std::string(role) + " has type " + dtype_name(t.dtype()) + "; only float32 is supported");
}

}  // namespace collage::native
