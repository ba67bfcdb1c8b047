// The guards around libonnx 1.12's shape inference (inference_guards.h).
#include "core/import/inference_guards.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/ir/error.h"
#include "core/ir/tensor.h"
#include "onnx/defs/schema.h"

namespace collage::import_detail {

namespace {

// ONNX's inference functions assume the node matches its schema (a missing required
// attribute is a null dereference in libonnx 1.12, e.g. Scan without num_scan_inputs),
// so required attributes and input/output counts are checked first, in sub-graphs too.
// Default-domain ops added after opset 17, which libonnx 1.12 (this build's schemas)
// does not know: a model of a newer opset may use them. Their signatures, as the
// schemas' would give them: inputs required and at most, outputs at most.
struct Arity {
  int min_inputs, max_inputs, max_outputs;
};
const std::map<std::string, Arity> kOpsAfterOpset17 = {
    {"BitwiseAnd", {2, 2, 1}},
    {"BitwiseNot", {1, 1, 1}},
    {"BitwiseOr", {2, 2, 1}},
    {"BitwiseXor", {2, 2, 1}},
    {"CenterCropPad", {2, 2, 1}},
    {"Col2Im", {3, 3, 1}},
    {"GroupNormalization", {3, 3, 1}},
    {"Mish", {1, 1, 1}},
    {"DeformConv", {3, 5, 1}},
    {"AffineGrid", {2, 2, 1}},
    {"Gelu", {1, 1, 1}},
    {"ImageDecoder", {1, 1, 1}},
    {"RegexFullMatch", {1, 1, 1}},
    {"StringConcat", {2, 2, 1}},
    {"StringSplit", {1, 1, 2}},
    {"OptionalGetElement", {1, 1, 1}},
    {"OptionalHasElement", {0, 1, 1}},
};

// Input and output counts against the op's signature. Kernels index their inputs and
// return the outputs the op defines: a node asking for more is refused here, for every op.
void check_arity(const onnx::NodeProto& node, const std::string& what, const Arity& arity,
                 const onnx::OpSchema* schema) {
  if (node.input_size() < arity.min_inputs)
    throw Error(ErrorKind::InvalidModel, what + " has " + std::to_string(node.input_size()) +
                                             " inputs; the op needs at least " +
                                             std::to_string(arity.min_inputs));
  for (int i = 0; i < node.input_size(); ++i) {
    bool required = i < arity.min_inputs;
    std::string formal;
    if (schema && i < static_cast<int>(schema->inputs().size())) {
      const auto& f = schema->inputs()[static_cast<size_t>(i)];
      required = f.GetOption() == onnx::OpSchema::FormalParameterOption::Single;
      formal = " (" + f.GetName() + ")";
    }
    if (node.input(i).empty() && required)
      throw Error(ErrorKind::InvalidModel,
                  what + ": input " + std::to_string(i) + formal + " is required but left empty");
  }
  if (arity.max_inputs >= 0 && node.input_size() > arity.max_inputs)
    throw Error(ErrorKind::InvalidModel, what + " has " + std::to_string(node.input_size()) +
                                             " inputs; the op takes at most " +
                                             std::to_string(arity.max_inputs));
  if (node.output_size() > arity.max_outputs)
    throw Error(ErrorKind::InvalidModel, what + " has " + std::to_string(node.output_size()) +
                                             " outputs; the op has at most " +
                                             std::to_string(arity.max_outputs));
}

// The names with an element type after inference, in `g` and its bodies (names are unique across
// scopes in ONNX).
void typed_names(const onnx::GraphProto& g, std::set<std::string>& out) {
  auto typed = [](const onnx::ValueInfoProto& v) {
    return v.type().has_tensor_type() && v.type().tensor_type().elem_type() != 0;
  };
  for (const auto& v : g.input())
    if (typed(v)) out.insert(v.name());
  for (const auto& v : g.value_info())
    if (typed(v)) out.insert(v.name());
  for (const auto& v : g.output())
    if (typed(v)) out.insert(v.name());
  for (const auto& t : g.initializer()) out.insert(t.name());
  for (const auto& n : g.node())
    for (const auto& a : n.attribute())
      if (a.has_g()) typed_names(a.g(), out);
}

}  // namespace

// ONNX requires nodes in topological order and its inference reads each input's type
// from what came before (a node reading its own output was a SEGV in libonnx 1.12);
// exporters are not all strict, so the nodes are put in order (stably: a sorted graph
// keeps its order) and a cycle is refused naming a node on it.
void sort_nodes(onnx::GraphProto& g) {
  const int count = g.node_size();
  std::set<std::string> available;
  for (const auto& in : g.input()) available.insert(in.name());
  for (const auto& init : g.initializer()) available.insert(init.name());
  std::map<std::string, int> producer;
  for (int i = 0; i < count; ++i)
    for (const auto& out : g.node(i).output())
      if (!out.empty() && !available.count(out)) producer.emplace(out, i);
  std::vector<int> waiting(static_cast<size_t>(count), 0);
  std::vector<std::vector<int>> readers(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i)
    for (const auto& in : g.node(i).input()) {
      auto p = producer.find(in);
      if (p == producer.end()) continue;  // a graph input, an initialiser, or dangling (named later)
      ++waiting[static_cast<size_t>(i)];
      readers[static_cast<size_t>(p->second)].push_back(i);
    }
  std::set<int> ready;  // by original index: an already sorted graph comes out unchanged
  for (int i = 0; i < count; ++i)
    if (waiting[static_cast<size_t>(i)] == 0) ready.insert(i);
  std::vector<int> order;
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int r : readers[static_cast<size_t>(i)])
      if (--waiting[static_cast<size_t>(r)] == 0) ready.insert(r);
  }
  if (static_cast<int>(order.size()) != count) {
    for (int i = 0; i < count; ++i)
      if (waiting[static_cast<size_t>(i)] > 0) {
        const auto& n = g.node(i);
        std::string which = n.name().empty() ? "node #" + std::to_string(i) : "node '" + n.name() + "'";
        throw Error(ErrorKind::InvalidModel, "the graph has a cycle through " + which + " (" + n.op_type() +
                                                 "): its inputs depend on its own outputs");
      }
  }
  bool sorted = true;
  for (int k = 0; k < count; ++k) sorted = sorted && order[static_cast<size_t>(k)] == k;
  if (sorted) return;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i : order) *nodes.Add() = g.node(i);
  g.mutable_node()->Swap(&nodes);
}

// ONNX's own shape inference dereferences the type of a dangling input (SEGV in
// libonnx 1.12), so references are checked first; convert_graph repeats it per node.
// An initialiser whose data does not fill its dims (raw bytes or typed values) is refused before
// libonnx's inference, which types its readers from the dims: a Conv weight stated [2, 120, 1, 1]
// over [24, 120, 1, 1]'s bytes left a later Shape untyped and libonnx 1.12 dereferenced it. Bodies'
// initialisers too.
void check_initializer_sizes(const onnx::GraphProto& g) {
  for (const onnx::TensorProto& t : g.initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL) continue;  // checked as it is read
    int64_t elements = 1;
    for (int64_t d : t.dims()) {
      if (d < 0 || (d > 0 && elements > (int64_t{1} << 62) / d))
        throw Error(ErrorKind::InvalidModel, "initialiser '" + t.name() + "' has impossible dims");
      elements *= d;
    }
    const std::string what = "initialiser '" + t.name() + "'";
    if (t.has_raw_data()) {
      const size_t size = t.data_type() == onnx::TensorProto::STRING || t.data_type() == 0
                              ? 0
                              : dtype_size(dtype_from_onnx(t.data_type()));
      if (size && t.raw_data().size() != static_cast<size_t>(elements) * size)
        throw Error(ErrorKind::InvalidModel, what + " holds " + std::to_string(t.raw_data().size()) +
                                                 " bytes, its dims need " +
                                                 std::to_string(static_cast<size_t>(elements) * size));
      continue;
    }
    for (int count : {t.float_data_size(), t.int32_data_size(), t.int64_data_size(), t.double_data_size(),
                      t.uint64_data_size()})
      if (count && count != elements)
        throw Error(ErrorKind::InvalidModel, what + " holds " + std::to_string(count) +
                                                 " values, its dims need " + std::to_string(elements));
  }
  for (const auto& node : g.node())
    for (const auto& a : node.attribute())
      if (a.has_g()) check_initializer_sizes(a.g());
}

// A body (`outer`: the names of its enclosing graphs defined before its node) may read those.
void check_references(const onnx::GraphProto& g, const std::set<std::string>& outer, bool body) {
  std::set<std::string> known, produced, initializers;
  for (const auto& init : g.initializer()) initializers.insert(init.name());
  // One definition per name (libonnx 1.12 merges two declared shapes of one name into a
  // crash), and a type for every true input (its inference dereferences a missing one).
  for (const auto& in : g.input()) {
    if (!known.insert(in.name()).second)
      throw Error(ErrorKind::InvalidModel, "graph input '" + in.name() + "' is declared twice");
    bool typed = in.has_type() && (!in.type().has_tensor_type() || in.type().tensor_type().elem_type() != 0);
    // A body's inputs may leave their types to ONNX's inference, which takes them from the node.
    if (!typed && !initializers.count(in.name()) && !body)
      throw Error(ErrorKind::InvalidModel, "graph input '" + in.name() + "' declares no type");
  }
  for (const auto& node : g.node())
    for (const auto& out : node.output())
      if (!out.empty() && (known.count(out) || !produced.insert(out).second))
        throw Error(ErrorKind::InvalidModel, "value '" + out + "' is defined twice (node '" + node.name() +
                                                 "' (" + node.op_type() + ") produces it again)");
  produced.clear();
  for (const auto& init : g.initializer()) known.insert(init.name());
  if (known.count("")) throw Error(ErrorKind::InvalidModel, "a graph input or initialiser has an empty name");
  for (const auto& node : g.node()) produced.insert(node.output().begin(), node.output().end());
  // ONNX requires nodes in topological order, and its inference reads each input's type
  // from what came before (a node reading its own output was a SEGV in libonnx 1.12).
  for (const auto& node : g.node()) {
    for (const auto& attribute : node.attribute())
      if (attribute.has_g()) {
        std::set<std::string> visible = outer;
        visible.insert(known.begin(), known.end());
        try {
          check_references(attribute.g(), visible, true);
        } catch (const Error& e) {
          throw Error(e.kind(), "node '" + node.name() + "' (" + node.op_type() + "), body '" +
                                    attribute.name() + "': " + e.what());
        }
      }
    for (const auto& in : node.input()) {
      if (in.empty() || known.count(in) || outer.count(in)) continue;
      throw Error(
          ErrorKind::InvalidModel,
          "node '" + node.name() + "' (" + node.op_type() + "): input '" + in + "' " +
              (produced.count(in) ? "is produced by this node or a later one (the nodes must be in "
                                    "topological order)"
                                  : "is not produced by any node, nor an initialiser or graph input"));
    }
    known.insert(node.output().begin(), node.output().end());
  }
  for (const auto& out : g.output())
    if (!known.count(out.name()) && !outer.count(out.name()))
      throw Error(ErrorKind::InvalidModel, "graph output '" + out.name() + "' is not produced by any node");
}

void check_against_schemas(const onnx::GraphProto& g, const std::map<std::string, int>& opsets) {
  for (const auto& node : g.node()) {
    for (const auto& a : node.attribute()) {
      if (a.has_g()) check_against_schemas(a.g(), opsets);
      for (const auto& sub : a.graphs()) check_against_schemas(sub, opsets);
    }
    std::string domain = node.domain() == "ai.onnx" ? "" : node.domain();
    auto opset = opsets.find(domain);
    if (opset == opsets.end()) continue;  // convert_graph names the unknown domain
    std::string what =
        "node '" + node.name() + "' (" + node.op_type() + ", opset " + std::to_string(opset->second) + ")";
    const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
    auto range = known.find(domain);
    if (range == known.end())
      continue;  // other domains' ops: ONNX inference skips them, the evaluator decides
    auto newer = domain.empty() ? kOpsAfterOpset17.find(node.op_type()) : kOpsAfterOpset17.end();
    if (newer != kOpsAfterOpset17.end()) {  // ours to evaluate at any opset (Gelu at 17 in test models)
      check_arity(node, what, newer->second, nullptr);
      continue;
    }
    // Opsets newer than libonnx knows resolve to its newest schema (Pad's 4th input is opset 18+).
    const bool beyond = opset->second > range->second.second;
    const auto* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), beyond ? range->second.second : opset->second, domain);
    // An unknown op of the default domain leaves its outputs untyped, and libonnx 1.12's
    // inference of a later node dereferences such a missing type: refused here.
    if (!schema && domain.empty())
      throw Error(ErrorKind::Unsupported, "node '" + node.name() + "' (" + node.op_type() +
                                              "): " + node.op_type() + " is not an ONNX operator at opset " +
                                              std::to_string(opset->second));
    if (!schema) continue;
    if (beyond) {
      // Later opsets added inputs (Pad's axes, Reduce*'s axes, DFT's axis) and attributes,
      // never outputs or required inputs: only those are checked against the older schema.
      check_arity(node, what, {schema->min_input(), -1, schema->max_output()}, schema);
      continue;
    }
    for (const auto& [name, attr] : schema->attributes()) {
      if (!attr.required) continue;
      bool present =
          std::any_of(node.attribute().begin(), node.attribute().end(),
                      [&, attr_name = name](const onnx::AttributeProto& a) { return a.name() == attr_name; });
      if (!present)
        throw Error(ErrorKind::InvalidModel, what + ": required attribute '" + name + "' is missing");
    }
    // An attribute the op does not have (as ONNX Runtime refuses it): a misspelt name would
    // otherwise be ignored silently, and it stops ONNX's inference for the whole graph, whose
    // shapes would then have to be learnt by evaluating every node (a large pool: minutes).
    for (const onnx::AttributeProto& a : node.attribute())
      if (!schema->attributes().count(a.name()))
        throw Error(ErrorKind::InvalidModel,
                    what + ": " + node.op_type() + " has no attribute '" + a.name() + "'");
    // ONNX's inference reads the required inputs' types unchecked.
    check_arity(node, what, {schema->min_input(), schema->max_input(), schema->max_output()}, schema);
  }
}

// "node 'X' (Shape) reads 'v', which inference could not type", or "" when every Shape and Size
// (bodies' too) reads a typed value.
std::string untyped_shape_input(const onnx::GraphProto& main) {
  std::set<std::string> typed;
  typed_names(main, typed);
  std::vector<const onnx::GraphProto*> graphs = {&main};
  for (size_t i = 0; i < graphs.size(); ++i)
    for (const auto& n : graphs[i]->node()) {
      for (const auto& a : n.attribute())
        if (a.has_g()) graphs.push_back(&a.g());
      if ((n.op_type() == "Shape" || n.op_type() == "Size") && n.input_size() > 0 && !typed.count(n.input(0)))
        return "node '" + n.name() + "' (" + n.op_type() + ") reads '" + n.input(0) +
               "', which inference could not type";
    }
  return "";
}

}  // namespace collage::import_detail
