#include "core/ir/op_label.h"

#include <algorithm>
#include <vector>

namespace collage {

namespace {

// {3, 3} -> "3×3"; {} -> "".
std::string dims(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "×" : "") + std::to_string(v[i]);
  return s;
}

// "" when every stride is 1, "2" when all equal, else "1×2".
std::string stride_text(const std::vector<int64_t>& strides) {
  if (std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 1; })) return "";
  if (std::all_of(strides.begin(), strides.end(), [&](int64_t s) { return s == strides[0]; }))
    return std::to_string(strides[0]);
  return dims(strides);
}

const Shape* known_shape(const Graph& g, ValueId v) {
  if (v == kNoValue) return nullptr;
  const Value& value = g.value(v);
  return value.shape_known || !value.shape.empty() ? &value.shape : nullptr;
}

}  // namespace

std::string op_label(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  const std::string& op = n.op_type;
  const Shape* out = n.outputs.empty() ? nullptr : known_shape(g, n.outputs[0]);
  const bool conv = op == "Conv" || op == "ConvTranspose";
  const bool pool = op == "MaxPool" || op == "AveragePool" || op == "LpPool";
  if (conv || pool) {
    std::vector<int64_t> kernel = n.attr_ints("kernel_shape");
    const Shape* weight = conv && n.inputs.size() > 1 ? known_shape(g, n.inputs[1]) : nullptr;
    if (kernel.empty() && weight && weight->size() > 2) kernel.assign(weight->begin() + 2, weight->end());
    std::string label = op;
    if (!kernel.empty()) label += " " + dims(kernel);
    std::string stride = stride_text(n.attr_ints("strides"));
    if (!stride.empty()) label += (op == "ConvTranspose" ? " ↑" : " /") + stride;
    if (conv) {
      if (out && out->size() > 1 && (*out)[1] > 0)
        label += " · " + std::to_string((*out)[1]);
      else if (op == "Conv" && weight && !weight->empty())
        label += " · " + std::to_string((*weight)[0]);
      int64_t group = n.attr_int("group", 1);
      if (group > 1) label += " g" + std::to_string(group);
    }
    return label;
  }
  if ((op == "Gemm" || op == "MatMul") && out && !out->empty() && out->back() > 0)
    return op + " · " + std::to_string(out->back());
  return op;
}

}  // namespace collage
