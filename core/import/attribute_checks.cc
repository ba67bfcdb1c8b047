#include "core/import/attribute_checks.h"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/import/shape_completion.h"
#include "core/ir/error.h"
#include "onnx/defs/schema.h"
#include "onnx/defs/shape_inference.h"

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

// Integer attributes ONNX defines as 0 or 1, whatever the op. Kernels test `!= 0` and
// ONNX's inference `== 1`: any other value would be two different ops.
const std::set<std::string> kFlags = {
    "keepdims",
    "noop_with_empty_axes",
    "select_last_index",
    "transA",
    "transB",
    "ceil_mode",
    "count_include_pad",
    "exclusive",
    "reverse",
    "detect_negative",
    "detect_positive",
    "upper",
    "largest",
    "sorted",
    "center_point_box",
    "layout",
    "saturate",
    "fmod",
    "exclude_outside",
    "onesided",
    "inverse",
    "periodic",
    "storage_order",
    "input_forget",
    "linear_before_reset",
    "align_corners",
    "training_mode",
    "spatial",
    "antialias",
    "broadcast",
};

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

namespace {

// The rank rules of one node: "" when its known ranks fit, else what is wrong. `rank_of(slot)`
// is -1 when unknown; `attr(name)` is null when the node does not set it.
std::string rank_problem(const std::string& op, const std::function<int(int)>& rank_of,
                         const std::function<const onnx::AttributeProto*(const std::string&)>& attr) {
  if (op == "LayerNormalization" && rank_of(0) >= 0) {  // its inference indexes by axis unchecked
    const int r = rank_of(0);
    const onnx::AttributeProto* a = attr("axis");
    int64_t axis = a ? a->i() : -1;  // -1: the default
    if (axis < -r || axis >= r)
      return "axis " + std::to_string(axis) + " is outside [-" + std::to_string(r) + ", " +
             std::to_string(r - 1) + "] for the rank-" + std::to_string(r) + " input X";
  }
  if (op == "Gemm")  // A and B are matrices; opset 6's inference reads dim 1 unchecked
    for (int slot : {0, 1})
      if (rank_of(slot) >= 0 && rank_of(slot) != 2)
        return std::string("input ") + (slot == 0 ? "A" : "B") + " has rank " +
               std::to_string(rank_of(slot)) + "; Gemm multiplies matrices (rank 2)";
  if (op == "STFT" && rank_of(0) >= 0 && rank_of(0) != 3)  // its inference reads dims 0-2 unchecked
    return "input signal has rank " + std::to_string(rank_of(0)) +
           "; STFT takes [batch, length, 1 or 2] (rank 3)";
  if (op == "MaxUnpool" && rank_of(0) >= 0 && rank_of(1) >= 0 && rank_of(0) != rank_of(1))
    return "indices I have rank " + std::to_string(rank_of(1)) + " but X rank " + std::to_string(rank_of(0)) +
           "; I indexes X's elements";
  auto window = window_ops().find(op);
  if (window == window_ops().end()) return "";
  const int x = rank_of(0), w = window->second >= 0 ? rank_of(window->second) : -1;
  if (x >= 0 && x < 3) return "input X has rank " + std::to_string(x) + "; it needs N, C and a spatial dim";
  if (w >= 0 && w < 3) return "weight W has rank " + std::to_string(w) + "; it needs M, C and a spatial dim";
  if (x >= 0 && w >= 0 && x != w)
    return "input X has rank " + std::to_string(x) + " but weight W rank " + std::to_string(w);
  int spatial = x >= 0 ? x - 2 : w >= 0 ? w - 2 : -1;
  if (spatial < 0 && attr("kernel_shape")) spatial = attr("kernel_shape")->ints_size();
  if (spatial < 0) return "";
  for (const char* name :
       {"kernel_shape", "strides", "dilations", "pads", "output_padding", "output_shape"}) {
    const onnx::AttributeProto* a = attr(name);
    if (!a) continue;
    const std::string n = name;
    int want = n == "pads" ? 2 * spatial : spatial;
    // output_shape may also list N and C (ONNX Runtime accepts both).
    if (a->ints_size() == want || (n == "output_shape" && a->ints_size() == spatial + 2)) continue;
    return "attribute " + n + " has " + std::to_string(a->ints_size()) + " values; the node has " +
           std::to_string(spatial) + " spatial dims, so it needs " + std::to_string(want);
  }
  return "";
}

}  // namespace

void check_window_ranks(const onnx::GraphProto& graph, int default_opset) {
  std::map<std::string, int> rank;  // values whose shape the proto states (or inference gave)
  auto add = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().tensor_type().has_shape()) rank[vi.name()] = vi.type().tensor_type().shape().dim_size();
  };
  for (const auto& in : graph.input()) add(in);
  for (const auto& vi : graph.value_info()) add(vi);
  for (const auto& out : graph.output()) add(out);
  for (const auto& init : graph.initializer()) rank[init.name()] = init.dims_size();
  for (const onnx::NodeProto& n : graph.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    auto rank_of = [&](int slot) {
      if (slot < 0 || slot >= n.input_size()) return -1;
      auto it = rank.find(n.input(slot));
      return it == rank.end() ? -1 : it->second;
    };
    auto attr = [&](const std::string& name) -> const onnx::AttributeProto* {
      for (const onnx::AttributeProto& a : n.attribute())
        if (a.name() == name) return &a;
      return nullptr;
    };
    std::string problem = rank_problem(n.op_type(), rank_of, attr);
    if (!problem.empty())
      throw Error(ErrorKind::InvalidModel, "node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" +
                                               n.op_type() + ", opset " + std::to_string(default_opset) +
                                               "): " + problem);
  }
}

void guard_onnx_rank_inference() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::vector<std::string> ops = {"LayerNormalization", "Gemm", "STFT"};
    for (const auto& [op, weight] : window_ops()) ops.push_back(op);
    std::set<const onnx::OpSchema*> wrapped;
    const int newest = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at("").second;
    for (const std::string& op : ops)
      for (int version = 1; version <= newest; ++version) {
        const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(op, version, "");
        if (!schema || !wrapped.insert(schema).second) continue;
        onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
        // The registry hands out const schemas of objects it owns and never shares across
        // threads before this runs (call_once, ahead of every inference).
        const_cast<onnx::OpSchema*>(schema)->TypeAndShapeInferenceFunction(
            [op, original](onnx::InferenceContext& ctx) {
              auto rank_of = [&](int slot) {
                if (slot < 0 || static_cast<size_t>(slot) >= ctx.getNumInputs()) return -1;
                const onnx::TypeProto* t = ctx.getInputType(static_cast<size_t>(slot));
                if (!t || !t->has_tensor_type() || !t->tensor_type().has_shape()) return -1;
                return t->tensor_type().shape().dim_size();
              };
              auto attr = [&](const std::string& name) { return ctx.getAttribute(name); };
              std::string problem = rank_problem(op, rank_of, attr);
              if (!problem.empty()) fail_shape_inference(problem);  // this node only; import names it later
              if (original) original(ctx);
            });
      }
  });
}

void check_stated_sizes(const onnx::GraphProto& graph, int default_opset, int64_t budget_bytes) {
  std::map<std::string, Shape> stated;  // a dim the proto leaves open counts as 0 here
  auto elem = [](int elem_type) {
    try {
      return dtype_from_onnx(elem_type);
    } catch (const Error&) {
      return DType::UInt8;  // refused later by type; its size is at least a byte
    }
  };
  for (const auto& init : graph.initializer()) {
    Shape shape(init.dims().begin(), init.dims().end());
    check_tensor_budget(shape, elem(init.data_type()), budget_bytes, "initialiser '" + init.name() + "'");
    stated[init.name()] = std::move(shape);
  }
  for (const auto& in : graph.input()) {
    const auto& tt = in.type().tensor_type();
    if (!tt.has_shape() || stated.count(in.name())) continue;
    Shape shape;
    for (const auto& d : tt.shape().dim())
      shape.push_back(d.has_dim_value() ? std::max<int64_t>(d.dim_value(), 0) : 0);
    check_tensor_budget(shape, elem(tt.elem_type()), budget_bytes, "graph input '" + in.name() + "'");
    stated[in.name()] = std::move(shape);
  }
  for (const onnx::NodeProto& n : graph.node()) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
    int slot = n.op_type() == "Expand" || n.op_type() == "Reshape" ? 1
               : n.op_type() == "ConstantOfShape"                  ? 0
                                                                   : -1;
    if (slot < 0 || slot >= n.input_size()) continue;
    auto it = stated.find(n.input(slot));
    if (it == stated.end() || it->second.size() != 1 || it->second[0] <= kMaxRank) continue;
    throw Error(ErrorKind::InvalidModel,
                "node '" + (n.name().empty() ? n.op_type() : n.name()) + "' (" + n.op_type() + ", opset " +
                    std::to_string(default_opset) + "): shape input '" + n.input(slot) + "' has " +
                    std::to_string(it->second[0]) + " values, an output of rank " +
                    std::to_string(it->second[0]) + "; the limit is " + std::to_string(kMaxRank));
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
      if (a.type() == onnx::AttributeProto::INT && kFlags.count(a.name()) && a.i() != 0 && a.i() != 1)
        throw Error(ErrorKind::InvalidModel, describe() + ": attribute " + a.name() + " is " +
                                                 std::to_string(a.i()) + "; it is a flag (0 or 1)");
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
