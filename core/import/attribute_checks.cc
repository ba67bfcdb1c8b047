#include "core/import/attribute_checks.h"

#include <map>
#include <string>
#include <vector>

#include "core/ir/error.h"

namespace collage::import_detail {
namespace {

enum class Rule { Positive, NonNegative };

struct IntsRule {
  const char* attr;
  Rule rule;
};

// Windowed ops: every listed integer attribute must satisfy its rule elementwise.
const std::map<std::string, std::vector<IntsRule>>& rules() {
  static const std::vector<IntsRule> kWindow = {{"strides", Rule::Positive},
                                                {"dilations", Rule::Positive},
                                                {"kernel_shape", Rule::Positive},
                                                {"pads", Rule::NonNegative}};
  static const std::map<std::string, std::vector<IntsRule>> table = {
      {"Conv", kWindow},
      {"ConvInteger", kWindow},
      {"QLinearConv", kWindow},
      {"DeformConv", kWindow},
      {"ConvTranspose",
       {{"strides", Rule::Positive},
        {"dilations", Rule::Positive},
        {"kernel_shape", Rule::Positive},
        {"output_padding", Rule::NonNegative}}},
      {"MaxPool", kWindow},
      {"AveragePool", kWindow},
      {"LpPool", kWindow},
      {"MaxUnpool", kWindow},
      {"Col2Im", {{"strides", Rule::Positive}, {"dilations", Rule::Positive}, {"pads", Rule::NonNegative}}},
      {"MaxRoiPool", {{"pooled_shape", Rule::Positive}}},
      {"DepthToSpace", {{"blocksize", Rule::Positive}}},
      {"SpaceToDepth", {{"blocksize", Rule::Positive}}},
      {"LRN", {{"size", Rule::Positive}}},
      {"Split", {{"num_outputs", Rule::Positive}}},
      {"RoiAlign", {{"output_height", Rule::Positive}, {"output_width", Rule::Positive}}},
  };
  return table;
}

// `group` divides channels in every convolution form.
const char* const kGrouped[] = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv", "DeformConv"};

// Convolution and pooling: the input slot of the weight (-1: none).
const std::map<std::string, int>& window_ops() {
  static const std::map<std::string, int> table = {
      {"Conv", 1},     {"ConvTranspose", 1}, {"ConvInteger", 1}, {"QLinearConv", 3}, {"DeformConv", 1},
      {"MaxPool", -1}, {"AveragePool", -1},  {"LpPool", -1},     {"MaxUnpool", -1},
  };
  return table;
}

}  // namespace

void check_window_ranks(const onnx::GraphProto& graph, int default_opset) {
  std::map<std::string, int> rank;  // values whose shape the proto itself states
  for (const auto& in : graph.input())
    if (in.type().tensor_type().has_shape()) rank[in.name()] = in.type().tensor_type().shape().dim_size();
  for (const auto& init : graph.initializer()) rank[init.name()] = init.dims_size();
  for (const onnx::NodeProto& n : graph.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    auto fail = [&](const std::string& what) {
      throw Error(ErrorKind::InvalidModel, "node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" +
                                               n.op_type() + ", opset " + std::to_string(default_opset) +
                                               "): " + what);
    };
    auto rank_of = [&](int slot) {
      if (slot < 0 || slot >= n.input_size()) return -1;
      auto it = rank.find(n.input(slot));
      return it == rank.end() ? -1 : it->second;
    };
    if (n.op_type() == "LayerNormalization" && rank_of(0) >= 0) {  // its inference indexes by axis unchecked
      const int r = rank_of(0);
      int64_t axis = -1;  // the default
      for (const onnx::AttributeProto& a : n.attribute())
        if (a.name() == "axis") axis = a.i();
      if (axis < -r || axis >= r)
        fail("axis " + std::to_string(axis) + " is outside [-" + std::to_string(r) + ", " +
             std::to_string(r - 1) + "] for the rank-" + std::to_string(r) + " input X");
    }
    if (n.op_type() == "Gemm")  // A and B are matrices; opset 6's inference reads dim 1 unchecked
      for (int slot : {0, 1})
        if (rank_of(slot) >= 0 && rank_of(slot) != 2)
          fail(std::string("input ") + (slot == 0 ? "A" : "B") + " has rank " +
               std::to_string(rank_of(slot)) + "; Gemm multiplies matrices (rank 2)");
    if (n.op_type() == "MaxUnpool" && rank_of(0) >= 0 && rank_of(1) >= 0 && rank_of(0) != rank_of(1))
      fail("indices I have rank " + std::to_string(rank_of(1)) + " but X rank " + std::to_string(rank_of(0)) +
           "; I indexes X's elements");
    auto op = window_ops().find(n.op_type());
    if (op == window_ops().end()) continue;
    const int x = rank_of(0), w = rank_of(op->second);
    if (x >= 0 && x < 3) fail("input X has rank " + std::to_string(x) + "; it needs N, C and a spatial dim");
    if (w >= 0 && w < 3) fail("weight W has rank " + std::to_string(w) + "; it needs M, C and a spatial dim");
    if (x >= 0 && w >= 0 && x != w)
      fail("input X has rank " + std::to_string(x) + " but weight W rank " + std::to_string(w));
    int spatial = x >= 0 ? x - 2 : w >= 0 ? w - 2 : -1;
    for (const onnx::AttributeProto& a : n.attribute())
      if (spatial < 0 && a.name() == "kernel_shape") spatial = a.ints_size();
    if (spatial < 0) continue;
    for (const onnx::AttributeProto& a : n.attribute()) {
      int want = a.name() == "pads" ? 2 * spatial : spatial;
      bool listed = a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations" ||
                    a.name() == "pads" || a.name() == "output_padding" || a.name() == "output_shape";
      // output_shape may also list N and C (ONNX Runtime accepts both).
      bool ok = a.ints_size() == want || (a.name() == "output_shape" && a.ints_size() == spatial + 2);
      if (listed && !ok)
        fail("attribute " + a.name() + " has " + std::to_string(a.ints_size()) + " values; the node has " +
             std::to_string(spatial) + " spatial dims, so it needs " + std::to_string(want));
    }
  }
}

void check_attributes(const onnx::GraphProto& graph, int default_opset) {
  for (const onnx::NodeProto& n : graph.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    auto describe = [&] {
      return "node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + ", opset " +
             std::to_string(default_opset) + ")";
    };
    auto it = rules().find(n.op_type());
    bool grouped = false;
    for (const char* op : kGrouped) grouped = grouped || n.op_type() == op;
    for (const onnx::AttributeProto& a : n.attribute()) {
      if (a.has_g()) check_attributes(a.g(), default_opset);  // sub-graphs go through ONNX inference too
      for (const auto& sub : a.graphs()) check_attributes(sub, default_opset);
      std::vector<int64_t> values(a.ints().begin(), a.ints().end());
      if (a.type() == onnx::AttributeProto::INT) values = {a.i()};
      if (grouped && a.name() == "group" && a.i() < 1)
        throw Error(ErrorKind::InvalidModel,
                    describe() + ": attribute group has " + std::to_string(a.i()) + "; it must be positive");
      if (it == rules().end()) continue;
      for (const IntsRule& r : it->second) {
        if (a.name() != r.attr) continue;
        for (int64_t v : values)
          if (r.rule == Rule::Positive ? v <= 0 : v < 0)
            throw Error(
                ErrorKind::InvalidModel,
                describe() + ": attribute " + r.attr + " has " + std::to_string(v) +
                    (r.rule == Rule::Positive ? "; it must be positive" : "; it must not be negative"));
      }
    }
  }
}

}  // namespace collage::import_detail
