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

}  // namespace

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
