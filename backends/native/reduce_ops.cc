// Every Reduce* op (Mean, Sum, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp)
// with axes as an input (the importer moves older attribute forms there), keepdims
// and noop_with_empty_axes; float32/64 and int32/64 (bool for Max/Min), accumulated
// in double. Max/Min of an empty float set is -inf/+inf (the spec's identities), of
// an empty integer set refused; the others give 0, 1 or log 0 = -inf.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

enum class Reduce { Mean, Sum, Max, Min, Prod, SumSquare, L1, L2, LogSum, LogSumExp };

template <class T, Reduce kOp>
void reduce_typed(const Tensor& x, Tensor& y, const std::vector<bool>& reduced) {
  const Shape& s = x.shape();
  auto xs = strides_of(s);
  // Output index of each input element: drop (or zero) reduced dims.
  Shape kept;
  for (size_t d = 0; d < s.size(); ++d) kept.push_back(reduced[d] ? 1 : s[d]);
  auto ks = strides_of(kept);
  int64_t out_n = shape_size(kept);
  std::vector<double> acc(static_cast<size_t>(out_n));
  double init = kOp == Reduce::Max    ? -std::numeric_limits<double>::infinity()
                : kOp == Reduce::Min  ? std::numeric_limits<double>::infinity()
                : kOp == Reduce::Prod ? 1.0
                                      : 0.0;
  std::fill(acc.begin(), acc.end(), init);
  const T* xp = x.data<T>();
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t o = 0;
    for (size_t d = 0; d < s.size(); ++d)
      if (!reduced[d]) o += ((i / xs[d]) % s[d]) * ks[d];
    double v = static_cast<double>(xp[i]);
    double& a = acc[static_cast<size_t>(o)];
    if (kOp == Reduce::Max)
      a = std::max(a, v);
    else if (kOp == Reduce::Min)
      a = std::min(a, v);
    else if (kOp == Reduce::Prod)
      a *= v;
    else if (kOp == Reduce::SumSquare || kOp == Reduce::L2)
      a += v * v;
    else if (kOp == Reduce::L1)
      a += std::fabs(v);
    else if (kOp == Reduce::LogSumExp)
      a += std::exp(v);
    else
      a += v;
  }
  double count = out_n ? static_cast<double>(x.size()) / static_cast<double>(out_n) : 1.0;
  T* yp = y.data<T>();
  for (int64_t o = 0; o < out_n; ++o) {
    double a = acc[static_cast<size_t>(o)];
    if (kOp == Reduce::Mean) a /= count;
    if (kOp == Reduce::L2) a = std::sqrt(a);
    if (kOp == Reduce::LogSum || kOp == Reduce::LogSumExp) a = std::log(a);
    yp[o] = static_cast<T>(a);
  }
}

template <Reduce kOp>
std::vector<Tensor> reduce(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& x = input(node, inputs, 0);
  const Tensor* axes_t = optional_input(inputs, 1);
  if (node.has_attr("axes")) invalid(node, "axes must be an input (the importer normalises older forms)");
  std::vector<int64_t> axes;
  if (axes_t) axes = axes_t->to_int64_vector();
  bool keepdims = node.attr_int("keepdims", 1) != 0;
  if (axes.empty() && node.attr_int("noop_with_empty_axes", 0) != 0) return {x};
  std::vector<bool> reduced(static_cast<size_t>(x.rank()), axes.empty());
  for (int64_t a : axes) reduced[static_cast<size_t>(normalize_axis(node, a, x.rank()))] = true;
  Shape out_shape;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (!reduced[static_cast<size_t>(d)])
      out_shape.push_back(x.dim(d));
    else if (keepdims)
      out_shape.push_back(1);
  }
  bool is_float = x.dtype() == DType::Float32 || x.dtype() == DType::Float64;
  if (x.size() == 0 && (kOp == Reduce::Max || kOp == Reduce::Min) && !is_float)
    invalid(node, "cannot reduce an empty non-float tensor with max/min");
  Tensor y = alloc.allocate(x.dtype(), out_shape);
  if (x.dtype() == DType::Float32)
    reduce_typed<float, kOp>(x, y, reduced);
  else if (x.dtype() == DType::Int64)
    reduce_typed<int64_t, kOp>(x, y, reduced);
  else if (x.dtype() == DType::Int32)
    reduce_typed<int32_t, kOp>(x, y, reduced);
  else if (x.dtype() == DType::Float64)
    reduce_typed<double, kOp>(x, y, reduced);
  else if (x.dtype() == DType::Bool && (kOp == Reduce::Max || kOp == Reduce::Min))
    reduce_typed<bool, kOp>(x, y, reduced);
  else
    unsupported(node, std::string("input type ") + dtype_name(x.dtype()) + " is not supported");
  return {y};
}

}  // namespace

void register_reduce_ops(OpTable& table) {
  table["ReduceMean"] = reduce<Reduce::Mean>;
  table["ReduceSum"] = reduce<Reduce::Sum>;
  table["ReduceMax"] = reduce<Reduce::Max>;
  table["ReduceMin"] = reduce<Reduce::Min>;
  table["ReduceProd"] = reduce<Reduce::Prod>;
  table["ReduceSumSquare"] = reduce<Reduce::SumSquare>;
  table["ReduceL1"] = reduce<Reduce::L1>;
  table["ReduceL2"] = reduce<Reduce::L2>;
  table["ReduceLogSum"] = reduce<Reduce::LogSum>;
  table["ReduceLogSumExp"] = reduce<Reduce::LogSumExp>;
}

}  // namespace collage::native
