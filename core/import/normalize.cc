// Attribute -> input migrations: every op ends up in its newest opset form so
// kernels and backends implement one signature per op.
#include "core/import/normalize.h"

#include <set>
#include <stdexcept>

#include "core/ir/conv_geometry.h"

namespace collage::import_detail {

ValueId add_constant(Graph& graph, const std::string& hint, Tensor tensor) {
  std::string name = hint;
  for (int i = 1; graph.find_value(name) != kNoValue; ++i) name = hint + "_" + std::to_string(i);
  Value v;
  v.name = name;
  v.dtype = tensor.dtype();
  v.shape = tensor.shape();
  v.shape_known = true;
  v.constant = std::move(tensor);
  return graph.add_value(std::move(v));
}

namespace {

Tensor int64_tensor(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

// Moves attribute `key` (ints) to input slot `slot`, padding skipped slots with kNoValue.
void ints_attr_to_input(Graph& graph, Node& node, const std::string& key, size_t slot) {
  if (!node.has_attr(key)) return;
  std::vector<int64_t> values = node.attr_ints(key);
  node.attrs.erase(key);
  ValueId id = add_constant(graph, node.name + "_" + key, int64_tensor(values));
  if (node.inputs.size() <= slot) node.inputs.resize(slot + 1, kNoValue);
  node.inputs[slot] = id;
}

void scalar_attr_to_input(Graph& graph, Node& node, const std::string& key, size_t slot) {
  if (!node.has_attr(key)) return;
  float value = node.attr_float(key, 0.0f);
  node.attrs.erase(key);
  ValueId id = add_constant(graph, node.name + "_" + key, Tensor::scalar<float>(value));
  if (node.inputs.size() <= slot) node.inputs.resize(slot + 1, kNoValue);
  node.inputs[slot] = id;
}

void trim_trailing_absent(Node& node) {
  while (!node.inputs.empty() && node.inputs.back() == kNoValue) node.inputs.pop_back();
}

// Upsample (7-9) and Resize-10 share "asymmetric + floor" semantics; express them as Resize-13.
void to_resize13(Graph& graph, Node& node) {
  ValueId x = node.inputs.at(0);
  ValueId scales = node.inputs.size() > 1 ? node.inputs[1] : kNoValue;
  if (node.has_attr("scales")) {
    std::vector<float> s = node.attr_floats("scales");
    node.attrs.erase("scales");
    scales = add_constant(graph, node.name + "_scales",
                          Tensor::from_vector<float>({static_cast<int64_t>(s.size())}, s));
  }
  if (scales == kNoValue) throw Error(ErrorKind::InvalidModel, node.describe() + ": no scales");
  std::string mode = node.attr_string("mode", "nearest");
  if (mode == "bilinear" || mode == "trilinear") mode = "linear";
  node.op_type = "Resize";
  node.attrs.clear();
  node.attrs["mode"] = Attribute::of_string(mode);
  node.attrs["coordinate_transformation_mode"] = Attribute::of_string("asymmetric");
  node.attrs["nearest_mode"] = Attribute::of_string("floor");
  node.inputs = {x, kNoValue, scales};
}

const std::set<std::string> kReduceOps = {"ReduceMean",      "ReduceSum",      "ReduceMax", "ReduceMin",
                                          "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                          "ReduceLogSumExp", "ReduceSumSquare"};

}  // namespace

void normalize_legacy_forms(Graph& graph) {
  // Iterate by index: add_constant grows graph.values, never graph.nodes.
  for (size_t i = 0; i < graph.nodes.size(); ++i) try {
      Node& node = graph.nodes[i];
      if (!node.domain.empty()) continue;
      const std::string& op = node.op_type;
      const int v = node.opset;
      if (op == "Pad" && v < 11) {
        ints_attr_to_input(graph, node, "pads", 1);
        scalar_attr_to_input(graph, node, "value", 2);
      } else if (op == "Slice" && v < 10) {
        ints_attr_to_input(graph, node, "starts", 1);
        ints_attr_to_input(graph, node, "ends", 2);
        ints_attr_to_input(graph, node, "axes", 3);
      } else if (op == "Reshape" && v < 5) {
        ints_attr_to_input(graph, node, "shape", 1);
      } else if (op == "Scatter") {  // deprecated (9-10): ScatterElements without reduction
        node.op_type = "ScatterElements";
      } else if (op == "Upsample" || (op == "Resize" && v == 10)) {
        to_resize13(graph, node);
      } else if (op == "Clip" && v < 11) {
        scalar_attr_to_input(graph, node, "min", 1);
        scalar_attr_to_input(graph, node, "max", 2);
      } else if ((op == "Squeeze" || op == "Unsqueeze") && v < 13) {
        ints_attr_to_input(graph, node, "axes", 1);
      } else if (kReduceOps.count(op) && (v < 18) && !(op == "ReduceSum" && v >= 13)) {
        ints_attr_to_input(graph, node, "axes", 1);
      } else if (op == "Split" && v < 13) {
        ints_attr_to_input(graph, node, "split", 1);
      } else if (op == "Dropout" && v < 12) {
        node.attrs.erase("ratio");
        node.attrs.erase("is_test");
      } else if (op == "BatchNormalization" && v < 9) {
        if (node.attr_int("spatial", 1) != 1)
          throw Error(ErrorKind::Unsupported, node.describe() + ": attribute spatial=0 is not supported");
        node.attrs.erase("spatial");
        node.attrs.erase("is_test");
        node.attrs.erase("momentum");
      } else if (op == "Gemm" && v < 7) {
        node.attrs.erase("broadcast");
      }
      trim_trailing_absent(node);
    } catch (const std::out_of_range& e) {  // e.g. an Upsample without its scales input
      throw Error(ErrorKind::InvalidModel,
                  graph.nodes[i].describe() + ": malformed attributes or inputs (" + e.what() + ")");
    }
}

void resolve_auto_pad(Graph& graph) {
  static const std::map<std::string, int> kWeightInput = {{"Conv", 1},         {"ConvInteger", 1},
                                                          {"QLinearConv", 3},  {"MaxPool", -1},
                                                          {"AveragePool", -1}, {"LpPool", -1}};
  for (Node& node : graph.nodes) {
    auto op = kWeightInput.find(node.op_type);
    if (op == kWeightInput.end() || node.domain != "" || node.inputs.empty() || node.inputs[0] == kNoValue)
      continue;
    std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
    if (auto_pad == "NOTSET") continue;
    bool same = is_same_auto_pad(auto_pad, node.name);
    const Value& x = graph.value(node.inputs[0]);
    if (!x.shape_known || x.shape.size() < 3) continue;  // left to the kernel's own refusal
    size_t s = x.shape.size() - 2;
    std::vector<int64_t> kernel;
    if (op->second >= 0) {
      size_t w = static_cast<size_t>(op->second);
      if (w >= node.inputs.size() || node.inputs[w] == kNoValue) continue;
      const Value& weight = graph.value(node.inputs[w]);
      if (!weight.shape_known || weight.shape.size() != x.shape.size()) continue;
      kernel.assign(weight.shape.begin() + 2, weight.shape.end());
    } else {
      kernel = node.attr_ints("kernel_shape");
    }
    auto strides = node.attr_ints("strides", std::vector<int64_t>(s, 1));
    auto dilations = node.attr_ints("dilations", std::vector<int64_t>(s, 1));
    if (kernel.size() != s || strides.size() != s || dilations.size() != s) continue;
    std::vector<int64_t> pads(2 * s, 0);
    if (same)
      for (size_t d = 0; d < s; ++d)
        std::tie(pads[d], pads[d + s]) = same_padding(auto_pad == "SAME_UPPER", x.shape[d + 2], strides[d],
                                                      window_span(kernel[d], dilations[d]));
    node.attrs["pads"] = Attribute::of_ints(pads);
    node.attrs.erase("auto_pad");
    if (same) node.attrs.erase("ceil_mode");
  }
}

}  // namespace collage::import_detail
