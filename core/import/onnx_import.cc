#include "core/import/onnx_import.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <set>
#include <sstream>

#include "core/import/attribute_checks.h"
#include "core/import/declared_types.h"
#include "core/import/half_compute.h"
#include "core/import/inference_guards.h"
#include "core/import/mapped_file.h"
#include "core/import/normalize.h"
#include "core/import/shape_completion.h"
#include "core/tensor_io/tensor_proto.h"
#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

namespace collage {

void parse_onnx_model(std::string_view bytes, onnx::ModelProto& model) {
  if (bytes.empty()) throw Error(ErrorKind::InvalidModel, "the model file is empty (0 bytes)");
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);  // the 64 MiB default rejects ResNet-50-sized models
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw Error(ErrorKind::InvalidModel,
                "not a valid ONNX model: the protobuf could not be parsed (truncated or not ONNX)");
  if (!model.has_graph()) throw Error(ErrorKind::InvalidModel, "not a valid ONNX model: it has no graph");
}

namespace {

std::map<std::string, int> read_opsets(const onnx::ModelProto& model) {
  std::map<std::string, int> opsets;
  for (const auto& o : model.opset_import()) {
    std::string domain = o.domain() == "ai.onnx" ? "" : o.domain();
    opsets[domain] = static_cast<int>(o.version());
  }
  if (!opsets.count("")) {
    if (model.opset_import_size() == 0) opsets[""] = 1;  // IR v1-2 default
  }
  auto it = opsets.find("");
  if (it != opsets.end() && it->second < kMinOpset && it->second >= 1) {
    // Opsets 1-5 carry legacy forms (consumed_inputs, is_test, shape attributes) the
    // normaliser does not rewrite; a model using only ops whose definition is the same at
    // opset 6 means the same thing there.
    static const std::set<std::string> kSameSinceOpset1 = {
        "GlobalAveragePool", "GlobalMaxPool", "Not",       "Softplus", "Softsign",
        "Identity",          "Transpose",     "Shape",     "Size",     "LRN",
        "Hardmax",           "Softmax",       "LogSoftmax"};
    for (const auto& node : model.graph().node())
      if ((node.domain().empty() || node.domain() == "ai.onnx") && !kSameSinceOpset1.count(node.op_type()))
        throw Error(ErrorKind::Unsupported,
                    "the model imports opset " + std::to_string(it->second) +
                        " of the default ONNX domain and uses " + node.op_type() + ", whose opset-" +
                        std::to_string(it->second) + " form is not supported; supported are opsets " +
                        std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
    it->second = kMinOpset;
  } else if (it != opsets.end() && (it->second < kMinOpset || it->second > kMaxOpset)) {
    throw Error(ErrorKind::Unsupported, "the model imports opset " + std::to_string(it->second) +
                                            " of the default ONNX domain; supported are opsets " +
                                            std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
  }
  return opsets;
}

// Turns the bound graph inputs into initialisers (before ONNX inference, which then
// propagates their values too). Returns the symbolic dims the bound tensors fix.
std::map<std::string, int64_t> bind_inputs(onnx::GraphProto& g,
                                           const std::set<std::string>& initializer_names,
                                           const ImportOptions& options, ImportReport& report) {
  std::map<std::string, int64_t> implied;
  for (const auto& [name, tensor] : options.bound_inputs) {
    // clang 14 cannot capture a structured binding in a lambda.
    const std::string& input_name = name;
    auto it = std::find_if(g.input().begin(), g.input().end(), [&](const onnx::ValueInfoProto& in) {
      return in.name() == input_name && !initializer_names.count(input_name);
    });
    std::string what = "--bind " + name;
    if (it == g.input().end())
      throw Error(ErrorKind::InvalidInput, what + ": the model has no graph input '" + name + "'");
    if (it->type().value_case() != onnx::TypeProto::VALUE_NOT_SET && !it->type().has_tensor_type())
      throw Error(ErrorKind::InvalidInput,
                  what + ": the input is not a tensor; only tensor inputs can be bound");
    if (it->type().has_tensor_type()) {
      const auto& tt = it->type().tensor_type();
      if (tt.elem_type() != 0 && tt.elem_type() != onnx::TensorProto::STRING &&
          dtype_from_onnx(tt.elem_type()) != tensor.dtype())
        throw Error(ErrorKind::InvalidInput, what + ": the value is " + dtype_name(tensor.dtype()) +
                                                 ", the input is declared " +
                                                 dtype_name(dtype_from_onnx(tt.elem_type())));
      if (tt.has_shape()) {
        const auto& dims = tt.shape().dim();
        bool same_rank = dims.size() == static_cast<int>(tensor.rank());
        for (int d = 0; same_rank && d < dims.size(); ++d) {
          int64_t given = tensor.dim(d);
          if (dims[d].has_dim_value() && dims[d].dim_value() >= 0) {
            same_rank = dims[d].dim_value() == given;
          } else if (dims[d].has_dim_param() && !dims[d].dim_param().empty()) {
            const std::string& param = dims[d].dim_param();
            auto user = options.dims.find(param);
            auto prior = implied.find(param);
            if ((user != options.dims.end() && user->second != given) ||
                (prior != implied.end() && prior->second != given))
              throw Error(ErrorKind::InvalidInput,
                          what + ": dim " + std::to_string(d) + " is " + std::to_string(given) + ", but '" +
                              param + "' is " +
                              std::to_string(user != options.dims.end() ? user->second : prior->second) +
                              " elsewhere");
            implied[param] = given;
          }
        }
        if (!same_rank) {
          std::string declared = "[";
          for (int d = 0; d < dims.size(); ++d)
            declared += (d ? "," : "") + (dims[d].has_dim_value()       ? std::to_string(dims[d].dim_value())
                                          : dims[d].dim_param().empty() ? std::string("?")
                                                                        : dims[d].dim_param());
          throw Error(ErrorKind::InvalidInput, what + ": the value has shape " +
                                                   shape_to_string(tensor.shape()) +
                                                   ", the input is declared " + declared + "]");
        }
      }
    }
    g.mutable_input()->erase(it);
    *g.add_initializer() = tensor_to_proto(tensor, name);
    report.notes.push_back("input '" + name + "' bound to the given " + dtype_name(tensor.dtype()) + " " +
                           shape_to_string(tensor.shape()) + " value (a constant now)");
  }
  return implied;
}

// Replaces symbolic or missing input dims by user values (default 1).
// `implied`: dims fixed by bound inputs, used where the user gave no value.
void fix_input_dims(onnx::GraphProto& g, const std::set<std::string>& initializer_names,
                    const ImportOptions& options, const std::map<std::string, int64_t>& implied,
                    ImportReport& report) {
  std::set<std::string> used;
  for (auto& input : *g.mutable_input()) {
    if (initializer_names.count(input.name())) continue;
    if (!input.type().has_tensor_type()) {
      ValueKind kind;
      if (!import_detail::element_type(input.type(), kind))
        throw Error(ErrorKind::Unsupported,
                    "graph input '" + input.name() +
                        "' is a map, a sparse tensor or a nested sequence; inputs are tensors, sequences of "
                        "tensors or optionals of those");
      continue;  // a sequence's or optional's tensors come with their own shapes
    }
    auto* tt = input.mutable_type()->mutable_tensor_type();
    if (!tt->has_shape())
      throw Error(ErrorKind::InvalidModel,
                  "graph input '" + input.name() + "' has no shape; static shapes are required");
    for (int d = 0; d < tt->shape().dim_size(); ++d) {
      auto* dim = tt->mutable_shape()->mutable_dim(d);
      if (dim->has_dim_value() && dim->dim_value() >= 0) continue;
      std::string param = dim->has_dim_param() ? dim->dim_param() : "";
      int64_t v = 1;
      auto it = options.dims.find(param);
      auto bound = implied.find(param);
      if (!param.empty() && it != options.dims.end()) {
        v = it->second;
        used.insert(param);
      } else if (!param.empty() && bound != implied.end()) {
        v = bound->second;
      }
      dim->set_dim_value(v);
      report.notes.push_back("input '" + input.name() + "' dim " + std::to_string(d) +
                             (param.empty() ? "" : " ('" + param + "')") + " set to " + std::to_string(v));
    }
  }
  for (const auto& [param, v] : options.dims) {
    if (v <= 0)
      throw Error(ErrorKind::InvalidInput, "--dim " + param + "=" + std::to_string(v) + ": must be positive");
    if (!used.count(param) && !implied.count(param))
      throw Error(ErrorKind::InvalidInput,
                  "--dim " + param + ": no graph input has a symbolic dim named '" + param + "'");
  }
}

void set_value_type(Value& v, const onnx::TypeProto& type) {
  if (type.value_case() == onnx::TypeProto::VALUE_NOT_SET) return;
  ValueKind kind;
  const onnx::TypeProto_Tensor* elem = import_detail::element_type(type, kind);
  if (!elem)
    throw Error(ErrorKind::Unsupported, "value '" + v.name +
                                            "' is a map, a sparse tensor or a nested sequence; values are "
                                            "tensors, sequences of tensors or optionals of those");
  if (kind != ValueKind::Tensor) {
    if (v.kind != ValueKind::Tensor && v.kind != kind)
      throw Error(ErrorKind::InvalidModel, "value '" + v.name + "' is stated both a " +
                                               value_kind_name(v.kind) + " and a " + value_kind_name(kind));
    v.kind = kind;
    v.shape_known = false;
    v.shape.clear();
    if (elem->elem_type() != 0 && v.dtype == DType::Undefined) {
      if (elem->elem_type() == onnx::TensorProto::STRING)
        throw Error(ErrorKind::Unsupported,
                    "value '" + v.name + "' holds string tensors; string ops are not supported");
      v.dtype = dtype_from_onnx(elem->elem_type());
    }
    return;
  }
  if (v.kind != ValueKind::Tensor) return;  // a tensor type stated for an optional: its element
  const auto& tt = *elem;
  if (tt.elem_type() != 0 && v.dtype == DType::Undefined) {
    if (tt.elem_type() == onnx::TensorProto::STRING)
      throw Error(ErrorKind::Unsupported,
                  "value '" + v.name + "' is a string tensor; string ops are not supported");
    v.dtype = dtype_from_onnx(tt.elem_type());
  }
  if (!tt.has_shape() || v.shape_known) return;
  Shape shape;
  for (const auto& dim : tt.shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0) return;  // symbolic: leave unknown
    shape.push_back(dim.dim_value());
  }
  v.shape = std::move(shape);
  v.shape_known = true;
}

Attribute convert_attribute(const onnx::AttributeProto& a, const Node& node, const std::string& base_dir) {
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      return Attribute::of_int(a.i());
    case onnx::AttributeProto::FLOAT:
      return Attribute::of_float(a.f());
    case onnx::AttributeProto::STRING:
      return Attribute::of_string(a.s());
    case onnx::AttributeProto::INTS:
      return Attribute::of_ints({a.ints().begin(), a.ints().end()});
    case onnx::AttributeProto::FLOATS:
      return Attribute::of_floats({a.floats().begin(), a.floats().end()});
    case onnx::AttributeProto::STRINGS: {
      Attribute out;
      out.kind = AttrKind::Strings;
      out.strings.assign(a.strings().begin(), a.strings().end());
      return out;
    }
    case onnx::AttributeProto::TENSOR: {
      Attribute out;
      out.kind = AttrKind::Tensor;
      out.t = tensor_from_proto(a.t(), base_dir);
      return out;
    }
    case onnx::AttributeProto::TYPE_PROTO: {  // Optional's `type`: kept as its element's dtype code
      ValueKind kind;
      const onnx::TypeProto_Tensor* elem = import_detail::element_type(a.tp(), kind);
      if (!elem || elem->elem_type() == 0 || elem->elem_type() == onnx::TensorProto::STRING)
        throw Error(ErrorKind::Unsupported, node.describe() + ": attribute '" + a.name() +
                                                "' names a type whose elements are not numeric tensors");
      dtype_from_onnx(elem->elem_type());  // refuses the types the IR cannot hold
      return Attribute::of_int(elem->elem_type());
    }
    case onnx::AttributeProto::GRAPHS:
      throw Error(ErrorKind::Unsupported, node.describe() + ": attribute '" + a.name() +
                                              "' holds a list of sub-graphs, which no supported op takes");
    default:
      throw Error(ErrorKind::Unsupported, node.describe() + ": attribute '" + a.name() +
                                              "' has unsupported type " +
                                              std::to_string(static_cast<int>(a.type())));
  }
}

// The ops whose GRAPH attributes are bodies the native kernels run (control_flow_ops.cc).
bool control_flow_op(const Node& node) {
  return node.domain.empty() && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan" ||
                                 node.op_type == "SequenceMap");
}

Graph convert_graph(const onnx::GraphProto& g, const std::map<std::string, int>& opsets,
                    const std::string& base_dir, std::vector<std::string>* captured);

// A control node's bodies. Each body's own outer reads become its last inputs; the node
// captures their union, and every body is given all of it (the ones it does not read as
// unused inputs), so the node's captured inputs line up with each body's.
std::vector<std::string> convert_bodies(const onnx::NodeProto& np, Node& node,
                                        const std::map<std::string, int>& opsets,
                                        const std::string& base_dir) {
  std::vector<std::pair<std::string, Graph>> bodies;
  std::vector<size_t> formal;
  std::vector<std::string> captured;
  for (const auto& a : np.attribute()) {
    if (a.type() != onnx::AttributeProto::GRAPH) continue;
    if (!control_flow_op(node))
      throw Error(ErrorKind::Unsupported,
                  node.describe() + ": attribute '" + a.name() +
                      "' holds a sub-graph; only If, Loop, Scan and SequenceMap take bodies");
    std::vector<std::string> reads;
    Graph body = convert_graph(a.g(), opsets, base_dir, &reads);
    formal.push_back(body.inputs.size() - reads.size());
    for (const std::string& name : reads)
      if (std::find(captured.begin(), captured.end(), name) == captured.end()) captured.push_back(name);
    bodies.emplace_back(a.name(), std::move(body));
  }
  for (size_t b = 0; b < bodies.size(); ++b) {
    Graph& body = bodies[b].second;
    body.inputs.resize(formal[b]);
    for (const std::string& name : captured) {
      ValueId id = body.find_value(name);
      if (id == kNoValue) {
        Value v;
        v.name = name;
        id = body.add_value(std::move(v));
      }
      body.inputs.push_back(id);
    }
    body.rebuild_links();
    import_detail::normalize_legacy_forms(body);
    body.sort_and_prune();
    body.validate();
    node.attrs[bodies[b].first] = Attribute::of_graph(std::move(body));
  }
  node.captured = static_cast<int>(captured.size());
  return captured;
}

// The model's main graph (`captured` null: every name must resolve here) or a body, whose
// reads of enclosing graphs' values are appended to `captured` and to its inputs.
Graph convert_graph(const onnx::GraphProto& g, const std::map<std::string, int>& opsets,
                    const std::string& base_dir, std::vector<std::string>* captured) {
  Graph graph;
  graph.name = g.name();
  graph.opsets = opsets;
  auto get_or_add = [&](const std::string& name) {
    ValueId id = graph.find_value(name);
    if (id == kNoValue) {
      Value v;
      v.name = name;
      id = graph.add_value(std::move(v));
    }
    return id;
  };
  for (const auto& init : g.initializer()) {
    if (graph.find_value(init.name()) != kNoValue)
      throw Error(ErrorKind::InvalidModel, "initialiser '" + init.name() + "' is defined twice");
    Value v;
    v.name = init.name();
    v.constant = tensor_from_proto(init, base_dir);
    v.dtype = v.constant->dtype();
    v.shape = v.constant->shape();
    v.shape_known = true;
    graph.add_value(std::move(v));
  }
  if (g.sparse_initializer_size() > 0)
    throw Error(ErrorKind::Unsupported, "sparse initialisers are not supported");
  for (const auto& in : g.input()) {
    ValueId existing = graph.find_value(in.name());
    if (existing != kNoValue && graph.value(existing).constant)
      continue;  // IR<4: initialisers listed as inputs
    if (existing != kNoValue)
      throw Error(ErrorKind::InvalidModel, "graph input '" + in.name() + "' is listed twice");
    ValueId id = get_or_add(in.name());
    set_value_type(graph.value(id), in.type());
    graph.inputs.push_back(id);
  }
  // A name this graph does not define: an outer value a body reads (captured), else an error.
  auto outer = [&](const std::string& name, const std::string& what) {
    if (!captured) throw Error(ErrorKind::InvalidModel, what);
    ValueId id = graph.find_value(name);
    if (id == kNoValue) {
      Value v;
      v.name = name;
      id = graph.add_value(std::move(v));
      graph.inputs.push_back(id);
      captured->push_back(name);
    }
    return id;
  };
  // Values first so that node inputs referring to later nodes' outputs resolve.
  std::set<std::string> node_names;
  std::vector<std::vector<std::string>> node_captures;
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& np = g.node(i);
    Node node;
    node.op_type = np.op_type();
    node.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    node.name = np.name().empty() ? node.op_type + "_" + std::to_string(i) : np.name();
    while (!node_names.insert(node.name).second) node.name.append("_").append(std::to_string(i));
    auto op_it = opsets.find(node.domain);
    if (op_it == opsets.end())
      throw Error(ErrorKind::InvalidModel,
                  node.describe() + ": its domain '" + node.domain + "' is not imported by the model");
    node.opset = op_it->second;
    for (const auto& out : np.output()) {
      if (out.empty()) {
        node.outputs.push_back(kNoValue);
        continue;
      }
      ValueId id = graph.find_value(out);
      if (id != kNoValue && (graph.value(id).constant || graph.value(id).is_graph_input))
        throw Error(ErrorKind::InvalidModel,
                    node.describe() + ": output '" + out + "' overwrites an initialiser or graph input");
      node.outputs.push_back(get_or_add(out));
    }
    for (const auto& a : np.attribute())
      if (a.type() != onnx::AttributeProto::GRAPH)
        node.attrs[a.name()] = convert_attribute(a, node, base_dir);
    node_captures.push_back(convert_bodies(np, node, opsets, base_dir));
    graph.add_node(std::move(node));
  }
  for (int i = 0; i < g.node_size(); ++i) {
    Node& node = graph.nodes[static_cast<size_t>(i)];
    for (const auto& in : g.node(i).input()) {
      if (in.empty()) {
        node.inputs.push_back(kNoValue);
        continue;
      }
      ValueId id = graph.find_value(in);
      if (id == kNoValue)
        id = outer(in, node.describe() + ": input '" + in +
                           "' is not produced by any node, nor an initialiser or graph input");
      node.inputs.push_back(id);
    }
    for (const std::string& name : node_captures[static_cast<size_t>(i)]) {
      ValueId id = graph.find_value(name);
      if (id == kNoValue)
        id = outer(name, node.describe() + ": its body reads '" + name +
                             "', which no node, initialiser or input of the enclosing graphs defines");
      node.inputs.push_back(id);
    }
  }
  for (const auto& out : g.output()) {
    ValueId id = graph.find_value(out.name());
    if (id == kNoValue)
      id = outer(out.name(), "graph output '" + out.name() + "' is not produced by any node");
    graph.outputs.push_back(id);
  }
  if (graph.outputs.empty()) throw Error(ErrorKind::InvalidModel, "the graph has no outputs");
  for (const auto& vi : g.value_info()) {
    ValueId id = graph.find_value(vi.name());
    if (id != kNoValue) set_value_type(graph.value(id), vi.type());
  }
  for (const auto& out : g.output()) set_value_type(graph.value(graph.find_value(out.name())), out.type());
  return graph;
}

// A body's captured inputs take the types of the outer values they are (a body's own
// declarations only type its formal inputs), then its nested bodies theirs, so every body
// input is typed like any graph input.
void type_captured_values(Graph& graph) {
  for (Node& n : graph.nodes) {
    if (!n.has_bodies()) continue;
    for (auto& [key, a] : n.attrs) {
      if (a.kind != AttrKind::Graph) continue;
      Graph body = *a.g;
      const size_t captured = static_cast<size_t>(n.captured);
      if (captured > body.inputs.size() || captured > n.inputs.size()) continue;  // validate() refuses it
      for (size_t k = 0; k < captured; ++k) {
        const Value& outer = graph.value(n.inputs[n.inputs.size() - captured + k]);
        Value& inner = body.value(body.inputs[body.inputs.size() - captured + k]);
        inner.kind = outer.kind;
        inner.dtype = outer.dtype;
        inner.shape = outer.shape;
        inner.shape_known = outer.shape_known;
      }
      type_captured_values(body);
      a = Attribute::of_graph(std::move(body));
    }
  }
}

void run_onnx_shape_inference(onnx::ModelProto& model, const std::map<std::string, int>& opsets,
                              ImportReport& report) {
  import_detail::sort_nodes(*model.mutable_graph());
  import_detail::check_references(model.graph());
  import_detail::check_initializer_sizes(model.graph());
  import_detail::check_against_schemas(model.graph(), opsets);
  import_detail::guard_onnx_rank_inference();
  // Types first, without data propagation: libonnx 1.12's propagation through a Shape (or Size)
  // whose input it could not type dereferences the missing type. Propagation then runs only when
  // every such input has one.
  for (bool data_prop : {false, true}) {
    if (data_prop) {
      std::string untyped = import_detail::untyped_shape_input(model.graph());
      if (!untyped.empty()) {
        report.notes.push_back("ONNX data propagation skipped: " + untyped);
        break;
      }
    }
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/false, /*error_mode=*/0, data_prop);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      // Not fatal: shape completion below evaluates what inference could not.
      report.notes.push_back(std::string("ONNX shape inference stopped early: ") + e.what());
      break;
    }
  }
  const int opset = opsets.count("") ? opsets.at("") : kMinOpset;
  import_detail::check_window_ranks(model.graph(), opset);  // on the ranks inference found
}

}  // namespace

Graph import_onnx_bytes(std::string_view bytes, const std::string& base_dir, const ImportOptions& options,
                        ImportReport* report_out) {
  if (!options.evaluator) throw Error(ErrorKind::Internal, "import needs a node evaluator");
  ImportReport local;
  ImportReport& report = report_out ? *report_out : local;
  onnx::ModelProto model;
  parse_onnx_model(bytes, model);
  auto opsets = read_opsets(model);
  std::set<std::string> initializer_names;
  for (const auto& init : model.graph().initializer()) initializer_names.insert(init.name());
  auto implied = bind_inputs(*model.mutable_graph(), initializer_names, options, report);
  for (const auto& [name, tensor] : options.bound_inputs) initializer_names.insert(name);
  fix_input_dims(*model.mutable_graph(), initializer_names, options, implied, report);
  import_detail::check_attributes(model.graph(), opsets.count("") ? opsets.at("") : kMinOpset);
  const int64_t budget = tensor_memory_budget(options);
  import_detail::EvaluationBudget evaluation_budget(options.evaluation_budget_s);
  import_detail::check_stated_sizes(model.graph(), opsets.count("") ? opsets.at("") : kMinOpset, budget);
  const std::vector<import_detail::DeclaredType> declared =
      import_detail::take_declarations(*model.mutable_graph());
  import_detail::check_window_ranks(model.graph(), opsets.count("") ? opsets.at("") : kMinOpset);
  run_onnx_shape_inference(model, opsets, report);
  Graph graph = convert_graph(model.graph(), opsets, base_dir, nullptr);
  model.Clear();                       // free the proto's copy of the weights early
  for (const Value& v : graph.values)  // declared inputs and every shape inference implied
    if (v.shape_known && v.dtype != DType::Undefined)
      import_detail::check_tensor_budget(v.shape, v.dtype, budget, "value '" + v.name + "'");
  import_detail::normalize_legacy_forms(graph);
  graph.sort_and_prune();
  graph.validate();
  import_detail::complete_shapes_and_fold(graph, options.evaluator, budget, report, options.dynamic_shapes);
  import_detail::resolve_auto_pad(graph);
  graph.sort_and_prune();
  graph.validate();
  type_captured_values(graph);
  if (options.dynamic_shapes) import_detail::adopt_declared_types(graph, declared);
  for (const Value& v : graph.values) {
    if (options.dynamic_shapes && !v.shape_known && v.dtype != DType::Undefined) continue;
    if (v.kind != ValueKind::Tensor)
      throw ValueDependentShapeError("value '" + v.name + "' is a " + value_kind_name(v.kind) +
                                         ", whose tensors' shapes are decided as the model runs: import with "
                                         "--shapes dynamic",
                                     {});
    if (!v.shape_known || v.dtype == DType::Undefined) {
      std::string where =
          v.producer != kNoNode ? " (output of " + graph.node(v.producer).describe() + ")" : "";
      throw Error(ErrorKind::Unsupported,
                  "could not determine a static shape and type for value '" + v.name + "'" + where);
    }
  }
  import_detail::check_graph_output_shapes(graph, options.evaluator, budget);
  import_detail::check_declarations(graph, declared, options.evaluator, budget);
  if (options.half_in_float32) import_detail::compute_half_in_float32(graph, report);
  return graph;
}

int64_t tensor_memory_budget(const ImportOptions& options) {
  if (options.memory_budget_bytes > 0) return options.memory_budget_bytes;
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  int64_t physical = pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{16} << 30;
  return physical / 4;
}

Graph import_onnx_file(const std::string& path, const ImportOptions& options, ImportReport* report) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error(ErrorKind::Io, "cannot open model '" + path + "': no such file");
  auto size = fs::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, "cannot read model '" + path + "': " + ec.message());
  if (size >= static_cast<uintmax_t>(INT_MAX))
    throw Error(ErrorKind::Unsupported,
                "model '" + path + "' is over 2 GiB; store its weights as external data");
  // Mapped, not read: a copy of a 650 MB file cost as much as parsing it.
  MappedFile file(path, static_cast<size_t>(size));
  std::string dir = fs::path(path).parent_path().string();
  try {
    return import_onnx_bytes(file.bytes(), dir.empty() ? "." : dir, options, report);
  } catch (const ValueDependentShapeError& e) {
    throw ValueDependentShapeError(path + ": " + e.what(), e.inputs());
  } catch (const Error& e) {
    throw Error(e.kind(), path + ": " + e.what());
  }
}

std::vector<std::string> value_dependent_inputs(const std::string& path, const ImportOptions& options) {
  try {
    import_onnx_file(path, options);
  } catch (const ValueDependentShapeError& e) {
    return e.inputs();
  }
  return {};
}

}  // namespace collage
