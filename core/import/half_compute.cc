#include "core/import/half_compute.h"

#include <string>

namespace collage::import_detail {
namespace {

constexpr int64_t kOnnxFloat = static_cast<int64_t>(DType::Float32);

Tensor to_float32(const Tensor& t) {
  Tensor out(DType::Float32, t.shape());
  const auto* in = static_cast<const uint16_t*>(t.raw());
  float* o = out.data<float>();
  bool bf16 = t.dtype() == DType::BFloat16;
  for (int64_t i = 0; i < t.size(); ++i) o[i] = bf16 ? bfloat16_to_float(in[i]) : half_to_float(in[i]);
  return out;
}

bool names_half_output(const Node& n) {
  return n.has_attr("dtype") && is_half_dtype(static_cast<DType>(n.attr_int("dtype", 0)));
}

std::string unique_name(const Graph& g, const std::string& base) {
  std::string name = base;
  for (int k = 1; g.find_value(name) != kNoValue; ++k) name = base + "_" + std::to_string(k);
  return name;
}

NodeId add_cast(Graph& g, ValueId from, ValueId to, DType target, const std::string& name) {
  Node cast;
  cast.name = unique_name(g, name);
  cast.op_type = "Cast";
  cast.opset = g.opsets.count("") ? g.opsets.at("") : 13;
  cast.inputs = {from};
  cast.outputs = {to};
  cast.attrs["to"] = Attribute::of_int(static_cast<int64_t>(target));
  return g.add_node(std::move(cast));
}

ValueId add_float_value(Graph& g, const Value& like, const std::string& suffix) {
  Value v;
  v.name = unique_name(g, like.name + suffix);
  v.dtype = DType::Float32;
  v.shape = like.shape;
  v.shape_known = like.shape_known;
  return g.add_value(std::move(v));
}

}  // namespace

int compute_half_in_float32(Graph& g, ImportReport& report) {
  g.rebuild_links();
  // CastLike to a half type is a Cast with a fixed target once its second input is float32.
  for (Node& n : g.nodes) {
    if (n.domain.empty() && n.op_type == "CastLike" && n.inputs.size() == 2 &&
        is_half_dtype(g.value(n.outputs[0]).dtype)) {
      n.op_type = "Cast";
      n.attrs["to"] = Attribute::of_int(static_cast<int64_t>(g.value(n.outputs[0]).dtype));
      n.inputs.resize(1);
    }
  }
  g.rebuild_links();

  int lowered = 0;
  const size_t original_values = g.values.size();
  for (ValueId v = 0; v < static_cast<ValueId>(original_values); ++v) {
    if (!is_half_dtype(g.value(v).dtype)) continue;
    const Value& val = g.value(v);
    bool cast_output = val.producer != kNoNode && g.node(val.producer).domain.empty() &&
                       g.node(val.producer).op_type == "Cast";
    if (val.constant && !val.is_graph_output) {
      Value& mv = g.value(v);
      mv.constant = to_float32(*mv.constant);
      mv.dtype = DType::Float32;
      ++lowered;
      continue;
    }
    if (val.is_graph_input || cast_output || val.constant) {
      // Stays half; float32 consumers read a cast of it. Casts read it directly.
      std::vector<NodeId> consumers = val.consumers;
      ValueId f = kNoValue;
      for (NodeId c : consumers) {
        Node& cn = g.nodes[static_cast<size_t>(c)];
        if (cn.domain.empty() && cn.op_type == "Cast") continue;
        if (f == kNoValue) {
          f = add_float_value(g, g.value(v), "_f32");
          add_cast(g, v, f, DType::Float32, g.value(v).name + "_to_f32");
        }
        for (ValueId& in : g.nodes[static_cast<size_t>(c)].inputs)
          if (in == v) in = f;
      }
      ++lowered;
      continue;
    }
    DType half = val.dtype;
    if (val.is_graph_output) {
      // The producer writes float32; a final Cast restores the declared type.
      ValueId f = add_float_value(g, g.value(v), "_f32");
      for (ValueId& out : g.nodes[static_cast<size_t>(g.value(v).producer)].outputs)
        if (out == v) out = f;
      add_cast(g, f, v, half, g.value(v).name + "_to_half");
    } else {
      g.value(v).dtype = DType::Float32;
    }
    ++lowered;
  }
  if (!lowered) return 0;

  for (Node& n : g.nodes) {
    if (!n.domain.empty() || n.op_type == "Cast") continue;
    if (names_half_output(n)) n.attrs["dtype"] = Attribute::of_int(kOnnxFloat);
    auto it = n.attrs.find("value");
    if (n.op_type == "ConstantOfShape" && it != n.attrs.end() && is_half_dtype(it->second.t.dtype()))
      it->second.t = to_float32(it->second.t);
  }
  g.rebuild_links();
  g.sort_and_prune();
  g.validate();
  report.notes.push_back("float16/bfloat16 model: " + std::to_string(lowered) +
                         " values compute in float32; inputs, outputs and explicit Casts keep their type");
  return lowered;
}

}  // namespace collage::import_detail
