// Static shapes everywhere: rewrites that need input shapes, constant folding,
// and shape discovery by evaluating a node on placeholder inputs where ONNX
// shape inference left a gap -- never through a shape-steering input computed at
// run time (value_dependence.h): that refuses the import, naming the inputs to bind.
#include "core/import/shape_completion.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/import/normalize.h"
#include "core/import/value_dependence.h"

namespace collage::import_detail {

namespace {

constexpr size_t kMaxPlaceholderBytes = size_t{4} << 30;

const std::set<std::string> kLegacyBroadcastOps = {"Add", "Sub", "Mul",   "Div",     "Pow", "And",
                                                   "Or",  "Xor", "Equal", "Greater", "Less"};

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g GiB", bytes / double(int64_t{1} << 30));
  return text;
}

// Evaluations at import allocate through this: a node whose output would exceed the
// budget (pads of 2^31, a ConstantOfShape of 10^12 elements) is refused, not allocated.
class BudgetAllocator : public TensorAllocator {
 public:
  BudgetAllocator(const Node& node, int64_t budget) : node_(node), budget_(budget) {}
  Tensor allocate(DType dtype, const Shape& shape) override {
    check_tensor_budget(shape, dtype, budget_, node_.describe() + ": an output");
    return Tensor(dtype, shape);
  }

 private:
  const Node& node_;
  int64_t budget_;
};

// A kernel that indexes past a malformed attribute or input throws a standard
// exception; at import that is the model's fault: say which node.
template <class F>
auto malformed_is_invalid_model(const std::string& where, F&& f) {
  try {
    return f();
  } catch (const std::out_of_range& e) {
    throw Error(ErrorKind::InvalidModel, where + ": malformed attributes or inputs (" + e.what() + ")");
  } catch (const std::length_error& e) {
    throw Error(ErrorKind::InvalidModel, where + ": malformed attributes or inputs (" + e.what() + ")");
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorKind::InvalidModel, where + ": malformed attributes or inputs (" + e.what() + ")");
  }
}

template <class F>
auto evaluating(const Node& n, F&& f) {
  return malformed_is_invalid_model(n.describe(), std::forward<F>(f));
}

// A node's inputs for a shape-only evaluation: constants as they are, every other
// input a zero placeholder of its shape (storage in `placeholders`). False if an
// input's shape is unknown; InvalidModel past the budget.
bool placeholder_inputs(const Graph& graph, const Node& n, int64_t budget, std::vector<Tensor>& placeholders,
                        std::vector<const Tensor*>& inputs) {
  placeholders.reserve(n.inputs.size());
  size_t bytes = 0;
  for (ValueId in : n.inputs) {
    if (in == kNoValue) {
      inputs.push_back(nullptr);
      continue;
    }
    const Value& v = graph.value(in);
    if (v.constant) {
      inputs.push_back(&*v.constant);
      continue;
    }
    if (!v.shape_known || v.dtype == DType::Undefined) return false;
    check_tensor_budget(v.shape, v.dtype, budget, "value '" + v.name + "'");
    bytes += static_cast<size_t>(shape_size(v.shape)) * dtype_size(v.dtype);
    if (bytes > kMaxPlaceholderBytes)
      throw Error(ErrorKind::InvalidModel, n.describe() + ": inputs need more than 4 GiB (absurd shape?)");
    placeholders.emplace_back(v.dtype, v.shape);
    inputs.push_back(&placeholders.back());
  }
  return true;
}

thread_local EvaluationBudget* current_budget = nullptr;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The evaluator on `inputs`, every allocation held to the budget, within the time budget.
std::vector<Tensor> evaluate(const Node& n, const NodeEvaluator& evaluator,
                             const std::vector<const Tensor*>& inputs, int64_t budget) {
  EvaluationBudget::check(n);
  BudgetAllocator alloc(n, budget);
  return evaluating(n, [&] { return evaluator(n, inputs, alloc); });
}

class ShapeCompleter {
 public:
  ShapeCompleter(Graph& graph, const NodeEvaluator& evaluator, int64_t budget, ImportReport& report,
                 bool dynamic)
      : graph_(graph), evaluator_(evaluator), budget_(budget), report_(report), dynamic_(dynamic) {}

  void run() {
    const size_t original = graph_.nodes.size();
    // A malformed node (too few inputs for a rewrite, ...) is the model's fault: name it.
    for (size_t i = 0; i < original; ++i)  // (process may add nodes: describe before)
      malformed_is_invalid_model(node(static_cast<NodeId>(i)).describe(),
                                 [&] { process(static_cast<NodeId>(i)); });
    if (!refusals_.empty()) throw_value_dependent();
    std::vector<Node> kept;
    for (size_t i = 0; i < graph_.nodes.size(); ++i)
      if (!dead_.count(static_cast<NodeId>(i))) kept.push_back(std::move(graph_.nodes[i]));
    graph_.nodes = std::move(kept);
  }

 private:
  Node& node(NodeId id) { return graph_.nodes[static_cast<size_t>(id)]; }

  void process(NodeId id) {
    if (node(id).domain.empty() && node(id).opset < 13 &&
        (node(id).op_type == "Softmax" || node(id).op_type == "LogSoftmax" ||
         node(id).op_type == "Hardmax")) {
      rewrite_legacy_softmax(id);
      return;
    }
    if (node(id).domain.empty() && node(id).opset < 7 && kLegacyBroadcastOps.count(node(id).op_type))
      rewrite_legacy_broadcast(id);
    if (node(id).domain.empty() && node(id).opset < 7 && node(id).op_type == "PRelu")
      rewrite_legacy_prelu(id);
    if (try_fold(id)) return;
    complete_outputs(id);
  }

  const Shape& known_shape(NodeId id, ValueId v) {
    const Value& value = graph_.value(v);
    if (!value.shape_known && !refusals_.empty()) throw_value_dependent();
    if (!value.shape_known)
      throw Error(ErrorKind::Unsupported, node(id).describe() + ": the shape of input '" + value.name +
                                              "' could not be determined statically");
    return value.shape;
  }

  ValueId new_value(const std::string& hint, DType dtype, Shape shape) {
    std::string name = hint;
    for (int i = 1; graph_.find_value(name) != kNoValue; ++i) name = hint + "_" + std::to_string(i);
    Value v;
    v.name = name;
    v.dtype = dtype;
    v.shape = std::move(shape);
    v.shape_known = true;
    return graph_.add_value(std::move(v));
  }

  NodeId add_reshape(const Node& like, const std::string& suffix, ValueId in, ValueId out,
                     const Shape& shape) {
    Node r;
    r.name = like.name + suffix;
    r.op_type = "Reshape";
    r.opset = like.opset;
    r.inputs = {in, add_constant(graph_, r.name + "_shape",
                                 Tensor::from_vector<int64_t>({static_cast<int64_t>(shape.size())}, shape))};
    r.outputs = {out};
    return graph_.add_node(std::move(r));
  }

  // Before opset 13, Softmax flattened the input to 2-D at `axis` (default 1).
  // Express that with Reshapes around the opset-13 form (axis = last).
  void rewrite_legacy_softmax(NodeId id) {
    ValueId x = node(id).inputs.at(0);
    Shape shape = known_shape(id, x);
    int64_t rank = static_cast<int64_t>(shape.size());
    int64_t axis = node(id).attr_int("axis", 1);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis > rank)
      throw Error(ErrorKind::InvalidModel,
                  node(id).describe() + ": axis out of range for rank " + std::to_string(rank));
    node(id).attrs["axis"] = Attribute::of_int(-1);
    if (axis >= rank - 1) {
      if (!try_fold(id)) complete_outputs(id);
      return;
    }
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? rows : cols) *= shape[static_cast<size_t>(d)];
    DType dtype = graph_.value(x).dtype;
    ValueId flat_in = new_value(node(id).name + "_2d_in", dtype, {rows, cols});
    ValueId flat_out = new_value(node(id).name + "_2d_out", dtype, {rows, cols});
    ValueId out = node(id).outputs.at(0);
    Node copy = node(id);
    NodeId before = add_reshape(copy, "_to_2d", x, flat_in, {rows, cols});
    node(id).inputs[0] = flat_in;
    node(id).outputs[0] = flat_out;
    NodeId after = add_reshape(copy, "_from_2d", flat_out, out, shape);
    for (NodeId n : {before, id, after})
      if (!try_fold(n)) complete_outputs(n);
  }

  // Before opset 7, `broadcast=1, axis=a` aligned B's dims with A's starting at a;
  // numpy broadcasting aligns from the right, so append 1-dims to B.
  void rewrite_legacy_broadcast(NodeId id) {
    Node& n = node(id);
    bool broadcast = n.attr_int("broadcast", 0) != 0;
    bool has_axis = n.has_attr("axis");
    int64_t axis = n.attr_int("axis", 0);
    n.attrs.erase("broadcast");
    n.attrs.erase("axis");
    if (!broadcast || !has_axis || n.inputs.size() < 2) return;
    int64_t rank_a = static_cast<int64_t>(known_shape(id, n.inputs[0]).size());
    Shape b_shape = known_shape(id, n.inputs[1]);
    if (axis < 0) axis += rank_a;
    int64_t trailing = rank_a - axis - static_cast<int64_t>(b_shape.size());
    if (trailing <= 0) return;
    Shape aligned = b_shape;
    aligned.insert(aligned.end(), static_cast<size_t>(trailing), 1);
    ValueId b = n.inputs[1];
    ValueId b_aligned = new_value(graph_.value(b).name + "_aligned", graph_.value(b).dtype, aligned);
    Node copy = node(id);
    NodeId r = add_reshape(copy, "_align_b", b, b_aligned, aligned);
    node(id).inputs[1] = b_aligned;
    if (!try_fold(r)) complete_outputs(r);
  }

  // Before opset 7 a 1-D PRelu slope of size C applied per channel (axis 1).
  void rewrite_legacy_prelu(NodeId id) {
    if (node(id).inputs.size() < 2) return;
    const Shape& x = known_shape(id, node(id).inputs[0]);
    Shape slope = known_shape(id, node(id).inputs[1]);
    if (slope.size() != 1 || x.size() < 3 || slope[0] != x[1] || slope[0] == 1) return;
    Shape aligned(x.size() - 1, 1);
    aligned[0] = slope[0];
    ValueId s = node(id).inputs[1];
    ValueId s_aligned = new_value(graph_.value(s).name + "_per_channel", graph_.value(s).dtype, aligned);
    Node copy = node(id);
    NodeId r = add_reshape(copy, "_align_slope", s, s_aligned, aligned);
    node(id).inputs[1] = s_aligned;
    if (!try_fold(r)) complete_outputs(r);
  }

  bool try_fold(NodeId id) {
    const Node& n = node(id);
    if (!n.domain.empty() || n.outputs.empty()) return false;
    // Random ops draw anew on every run: folding would freeze one draw into the model.
    static const std::set<std::string> kRandom = {"RandomUniform",    "RandomNormal", "RandomUniformLike",
                                                  "RandomNormalLike", "Bernoulli",    "Multinomial",
                                                  "Dropout"};
    if (kRandom.count(n.op_type)) return false;
    // A sequence or optional is never a constant: constants are tensors (artifact weights, ...).
    for (ValueId out : n.outputs)
      if (out != kNoValue && graph_.value(out).kind != ValueKind::Tensor) return false;
    if ((n.op_type == "Shape" || n.op_type == "Size") && !n.inputs.empty() &&
        graph_.value(n.inputs[0]).shape_known)
      return fold_shape_op(id);
    for (ValueId in : n.inputs)
      if (in != kNoValue && !graph_.value(in).constant) return false;
    std::vector<const Tensor*> inputs;
    for (ValueId in : n.inputs) inputs.push_back(in == kNoValue ? nullptr : &*graph_.value(in).constant);
    std::vector<Tensor> outputs;
    try {
      check_declared_outputs(n);
      outputs = evaluate(n, evaluator_, inputs, budget_);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Unsupported) return false;  // reported when the node is run
      throw;
    }
    for (const Tensor& t : outputs)
      if (!t.is_dense()) return false;  // a sequence ONNX inference did not type: left to the run
    set_constant_outputs(id, std::move(outputs));
    return true;
  }

  bool fold_shape_op(NodeId id) {
    const Node& n = node(id);
    const Shape& shape = graph_.value(n.inputs[0]).shape;
    Tensor result;
    if (n.op_type == "Size") {
      result = Tensor::scalar<int64_t>(shape_size(shape));
    } else {
      int64_t rank = static_cast<int64_t>(shape.size());
      auto clamp = [&](int64_t v) { return std::max<int64_t>(0, std::min(rank, v < 0 ? v + rank : v)); };
      int64_t start = clamp(n.attr_int("start", 0)), end = clamp(n.attr_int("end", rank));
      std::vector<int64_t> dims;
      for (int64_t d = start; d < end; ++d) dims.push_back(shape[static_cast<size_t>(d)]);
      result = Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
    }
    std::vector<Tensor> outputs;
    outputs.push_back(std::move(result));
    set_constant_outputs(id, std::move(outputs));
    return true;
  }

  void set_constant_outputs(NodeId id, std::vector<Tensor> outputs) {
    const Node& n = node(id);
    check_output_count(n, outputs.size());
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k] == kNoValue || k >= outputs.size()) continue;
      Value& v = graph_.value(n.outputs[k]);
      v.dtype = outputs[k].dtype();
      v.shape = outputs[k].shape();
      v.shape_known = true;
      v.constant = std::move(outputs[k]);
    }
    dead_.insert(id);
    ++report_.folded_nodes;
  }

  // A node whose shape-steering input (value_dependence.h) is computed at run time has
  // no static output shape: a placeholder there would silently give a wrong one, and a
  // declared shape only holds for the values its author had in mind.
  bool refuse_value_dependent(NodeId id) {
    const Node& n = node(id);
    std::vector<ValueId> steering;
    for (size_t slot = 0; slot < n.inputs.size(); ++slot) {
      ValueId in = n.inputs[slot];
      if (in == kNoValue || graph_.value(in).constant || !steers_shape(n, slot)) continue;
      const Value& v = graph_.value(in);
      if (v.shape_known && shape_size(v.shape) == 0) continue;  // an empty tensor has one value
      steering.push_back(in);
    }
    if (dynamic_ && (!steering.empty() || body_decides_shapes(n))) {
      // Shapes decided at run time: left unknown, and so is everything they steer.
      for (ValueId out : n.outputs)
        if (out != kNoValue && !graph_.value(out).constant) graph_.value(out).shape_known = false;
      return true;
    }
    if (steering.empty()) return false;
    Refusal r;
    r.node = n.name;
    r.op = n.op_type;
    r.opset = n.opset;
    for (ValueId out : n.outputs)
      if (out != kNoValue) {
        if (r.value.empty()) r.value = graph_.value(out).name;
        graph_.value(out).shape_known = false;
      }
    for (ValueId in : steering)
      for (const std::string& name : graph_inputs_feeding(graph_, in))
        if (std::find(r.inputs.begin(), r.inputs.end(), name) == r.inputs.end()) r.inputs.push_back(name);
    refusals_.push_back(std::move(r));
    return true;
  }

  // Control flow whose output shapes are the bodies' decision at run time: a Loop (its carried
  // values may grow, its condition may end it early; exports declare what tracing saw) and an If
  // whose condition is computed (its branches may give different shapes).
  bool body_decides_shapes(const Node& n) const {
    if (!n.domain.empty()) return false;
    if (n.op_type == "Loop") return true;
    return n.op_type == "If" && !n.inputs.empty() && n.inputs[0] != kNoValue &&
           !graph_.value(n.inputs[0]).constant;
  }

  [[noreturn]] void throw_value_dependent() const {
    const Refusal& first = refusals_.front();
    std::vector<std::string> inputs;  // over all refusals, in graph input order
    for (ValueId in : graph_.inputs)
      for (const Refusal& r : refusals_)
        if (std::find(r.inputs.begin(), r.inputs.end(), graph_.value(in).name) != r.inputs.end()) {
          inputs.push_back(graph_.value(in).name);
          break;
        }
    std::string msg = "value '" + first.value + "' (node '" + first.node + "', " + first.op + " opset " +
                      std::to_string(first.opset) + ")";
    if (refusals_.size() > 1) msg += " and " + std::to_string(refusals_.size() - 1) + " more";
    msg += refusals_.size() > 1 ? " have shapes that depend" : " has a shape that depends";
    if (inputs.empty()) {
      msg +=
          " on values computed at run time that no graph input feeds (random ops, or ops that could not "
          "be folded at import); Collage needs static shapes";
    } else {
      std::string names, binds;
      for (const std::string& name : inputs) {
        names += (names.empty() ? "'" : ", '") + name + "'";
        binds += (binds.empty() ? "--bind " : " --bind ") + name + "=FILE.pb";
      }
      msg += " on the values of input(s) " + names + "; Collage needs static shapes: bind them with " + binds;
    }
    msg += " (or decide them as the model runs: --shapes dynamic)";
    throw ValueDependentShapeError(msg, inputs);
  }

  // Fills output shapes/dtypes ONNX inference missed by running the node on
  // zero placeholders (constants keep their real values: they steer shapes).
  void complete_outputs(NodeId id) {
    if (refuse_value_dependent(id)) return;
    const Node& n = node(id);
    bool complete = true;
    for (ValueId out : n.outputs)
      if (out != kNoValue && (!graph_.value(out).shape_known || graph_.value(out).dtype == DType::Undefined))
        complete = false;
    if (complete) return;
    bool all_non_tensor = true;
    for (ValueId out : n.outputs)
      if (out != kNoValue && graph_.value(out).kind == ValueKind::Tensor) all_non_tensor = false;
    if (all_non_tensor) return;  // nothing static to learn: a sequence's tensors are the run's
    std::vector<Tensor> placeholders;
    std::vector<const Tensor*> inputs;
    if (!placeholder_inputs(graph_, n, budget_, placeholders, inputs)) return;  // reported by the final check
    std::vector<Tensor> outputs;
    try {
      check_declared_outputs(n);
      outputs = evaluate(n, evaluator_, inputs, budget_);
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::Unsupported) return;
      throw;
    }
    check_output_count(n, outputs.size());
    for (size_t k = 0; k < n.outputs.size() && k < outputs.size(); ++k) {
      if (n.outputs[k] == kNoValue) continue;
      Value& v = graph_.value(n.outputs[k]);
      if (!outputs[k].is_dense() || v.kind != ValueKind::Tensor) {  // no static shape: the run decides
        if (v.kind == ValueKind::Tensor)
          v.kind = outputs[k].is_sequence() ? ValueKind::Sequence : ValueKind::OptionalTensor;
        if (v.dtype == DType::Undefined) v.dtype = outputs[k].dtype();
        v.shape_known = false;
        continue;
      }
      v.dtype = outputs[k].dtype();
      v.shape = outputs[k].shape();
      v.shape_known = true;
    }
  }

  struct Refusal {
    std::string value, node, op;
    int opset = 0;
    std::vector<std::string> inputs;  // the graph inputs feeding its steering inputs
  };

  // Shapes ONNX inference already gave the outputs are held to the budget before the
  // node runs (its kernel would allocate them).
  void check_declared_outputs(const Node& n) {
    for (ValueId out : n.outputs)
      if (out != kNoValue && graph_.value(out).shape_known && graph_.value(out).dtype != DType::Undefined)
        check_tensor_budget(graph_.value(out).shape, graph_.value(out).dtype, budget_,
                            n.describe() + ": output '" + graph_.value(out).name + "'");
  }

  // A model may name more outputs than the op has (libonnx checks only the opsets it knows);
  // trailing omitted ("") outputs are fine.
  static void check_output_count(const Node& n, size_t produced) {
    for (size_t k = produced; k < n.outputs.size(); ++k)
      if (n.outputs[k] != kNoValue)
        throw Error(ErrorKind::InvalidModel, n.describe() + " declares " + std::to_string(n.outputs.size()) +
                                                 " outputs; the op computes " + std::to_string(produced));
  }

  Graph& graph_;
  const NodeEvaluator& evaluator_;
  int64_t budget_;
  ImportReport& report_;
  const bool dynamic_;
  std::set<NodeId> dead_;
  std::vector<Refusal> refusals_;
};

}  // namespace

void complete_shapes_and_fold(Graph& graph, const NodeEvaluator& evaluator, int64_t budget_bytes,
                              ImportReport& report, bool dynamic_shapes) {
  ShapeCompleter(graph, evaluator, budget_bytes, report, dynamic_shapes).run();
}

std::optional<std::vector<Tensor>> evaluate_on_placeholders(const Graph& graph, const Node& n,
                                                            const NodeEvaluator& evaluator,
                                                            int64_t budget_bytes) {
  std::vector<Tensor> placeholders;
  std::vector<const Tensor*> inputs;
  try {
    if (!placeholder_inputs(graph, n, budget_bytes, placeholders, inputs)) return std::nullopt;
  } catch (const Error&) {
    return std::nullopt;
  }
  // Zeros first (safe as indices); a kernel that refuses a zero (a quantisation scale, a
  // divisor) gets its floating-point inputs as ones.
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      return evaluate(n, evaluator, inputs, budget_bytes);
    } catch (const Error&) {
    }
    for (Tensor& t : placeholders) {
      if (t.dtype() == DType::Float32) std::fill_n(t.data<float>(), t.size(), 1.0f);
      if (t.dtype() == DType::Float64) std::fill_n(t.data<double>(), t.size(), 1.0);
      if (is_half_dtype(t.dtype()))
        std::fill_n(static_cast<uint16_t*>(t.raw()), t.size(),
                    t.dtype() == DType::Float16 ? float_to_half(1.0f) : float_to_bfloat16(1.0f));
    }
  }
  return std::nullopt;  // the executor checks at run time
}

void check_graph_output_shapes(Graph& graph, const NodeEvaluator& evaluator, int64_t budget_bytes) {
  for (ValueId out : graph.outputs) {
    const Value& v = graph.value(out);
    if (v.producer == kNoNode || v.constant || !v.shape_known) continue;  // dynamic: checked as it runs
    const Node& n = graph.node(v.producer);
    std::optional<std::vector<Tensor>> outputs = evaluate_on_placeholders(graph, n, evaluator, budget_bytes);
    if (!outputs) continue;
    for (size_t k = 0; k < n.outputs.size() && k < outputs->size(); ++k) {
      if (n.outputs[k] == kNoValue) continue;
      Value& ov = graph.value(n.outputs[k]);
      ov.shape = (*outputs)[k].shape();
      ov.dtype = (*outputs)[k].dtype();
    }
  }
}

void check_tensor_budget(const Shape& shape, DType dtype, int64_t budget_bytes, const std::string& what) {
  double bytes = static_cast<double>(std::max<size_t>(dtype_size(dtype), 1));
  for (int64_t d : shape) {
    if (d < 0)
      throw Error(ErrorKind::InvalidModel, what + " has a negative dimension " + shape_to_string(shape));
    bytes *= static_cast<double>(d);
  }
  if (bytes > static_cast<double>(budget_bytes))
    throw Error(ErrorKind::InvalidModel, what + " of shape " + shape_to_string(shape) + " needs " +
                                             gib(bytes) + ", beyond the memory budget of " +
                                             gib(double(budget_bytes)) + " per tensor (--memory-budget)");
}

EvaluationBudget::EvaluationBudget(double seconds)
    : seconds_(seconds), started_(now_s()), outer_(current_budget) {
  current_budget = this;
}

EvaluationBudget::~EvaluationBudget() { current_budget = outer_; }

void EvaluationBudget::check(const Node& n) {
  const EvaluationBudget* b = current_budget;
  if (!b || now_s() - b->started_ < b->seconds_) return;
  char spent[64];
  std::snprintf(spent, sizeof spent, "%g", b->seconds_);
  throw Error(ErrorKind::InvalidModel, std::string("import spent its ") + spent +
                                           " s budget evaluating nodes to fold constants and learn shapes; "
                                           "stopped before " +
                                           n.describe() + " (absurd sizes?)");
}

}  // namespace collage::import_detail
