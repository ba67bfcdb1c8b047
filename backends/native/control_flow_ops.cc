// If, Loop, Scan and SequenceMap. A body is a graph of its own (Attribute::g); the native kernels run it
// node by node, shapes as the kernels give them, so a value may change shape from one
// iteration to the next. The node's last `captured` inputs are the outer values its bodies
// read; each body's inputs end with the same values (core/ir/graph.h).
// Invariants: outputs are fresh tensors of the caller's allocator (never aliases of an input
// or of a body's constant); a Loop without a trip count stops with InvalidInput after
// kMaxUnboundedTrips iterations instead of hanging.
#include <cstring>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"
#include "core/runtime/placed_bodies.h"

namespace collage::native {

namespace {

constexpr int64_t kMaxUnboundedTrips = int64_t{1} << 16;  // 65536: no decoder loop runs this long

// Runs `body` on `args` (its inputs in order) and returns its outputs: with the body's
// placement where it has one that fits these values (core/runtime/placed_bodies.h), else
// node by node with the native kernels.
std::vector<Tensor> run_body(const Node& node, const Graph& body, const std::vector<const Tensor*>& args) {
  if (args.size() != body.inputs.size())
    invalid(node, "its body takes " + std::to_string(body.inputs.size()) + " inputs, given " +
                      std::to_string(args.size()));
  if (const PlacedBodies* placed = current_placed_bodies())
    if (Executor* executor = placed->find(&body); executor && fits_placed_body(body, args)) {
      std::vector<Tensor> given;
      for (const Tensor* t : args) given.push_back(*t);
      return executor->run(given);
    }
  std::vector<Tensor> values(body.values.size());
  for (size_t v = 0; v < body.values.size(); ++v)
    if (body.values[v].constant) values[v] = *body.values[v].constant;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i]) continue;  // an omitted optional input: reading it is the body's error
    values[static_cast<size_t>(body.inputs[i])] = *args[i];
  }
  HeapAllocator alloc;
  std::vector<const Tensor*> in;
  for (const Node& n : body.nodes) {
    in.clear();
    for (ValueId v : n.inputs) {
      const Tensor* t = v == kNoValue ? nullptr : &values[static_cast<size_t>(v)];
      if (t && !t->defined())
        invalid(node, "its body reads '" + body.value(v).name + "', which was given no value");
      in.push_back(t);
    }
    std::vector<Tensor> outs = evaluate_node(n, in, alloc);
    for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
      if (n.outputs[k] != kNoValue) values[static_cast<size_t>(n.outputs[k])] = std::move(outs[k]);
  }
  std::vector<Tensor> out;
  for (ValueId v : body.outputs) {
    if (!values[static_cast<size_t>(v)].defined())
      invalid(node, "its body's output '" + body.value(v).name + "' was given no value");
    out.push_back(values[static_cast<size_t>(v)]);
  }
  return out;
}

Tensor fresh_copy(const Tensor& t, TensorAllocator& alloc) {
  if (!t.is_dense()) return t;  // a sequence's items are never run buffers (sequence_ops.cc)
  Tensor out = alloc.allocate(t.dtype(), t.shape());
  if (t.bytes()) std::memcpy(out.raw(), t.raw(), t.bytes());
  return out;
}

bool truth(const Node& node, const Tensor& t, const char* what) {
  if (t.size() != 1)
    invalid(node, std::string(what) + " must hold one value, it holds " + std::to_string(t.size()));
  return t.to_double_vector()[0] != 0;
}

size_t formal_inputs(const Node& node, KernelInputs inputs) {
  if (node.captured < 0 || static_cast<size_t>(node.captured) > inputs.size())
    invalid(node, "captures more values than it has inputs");
  return inputs.size() - static_cast<size_t>(node.captured);
}

std::vector<Tensor> if_op(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const size_t formal = formal_inputs(node, inputs);
  if (formal != 1) invalid(node, "takes one input (cond), given " + std::to_string(formal));
  const bool cond = truth(node, input(node, inputs, 0), "cond");
  const Graph& branch = node.body(cond ? "then_branch" : "else_branch");
  std::vector<const Tensor*> args(inputs.begin() + 1, inputs.end());
  std::vector<Tensor> outs = run_body(node, branch, args);
  if (outs.size() != node.outputs.size())
    invalid(node, std::string(cond ? "then_branch" : "else_branch") + " gives " +
                      std::to_string(outs.size()) + " outputs, the node has " +
                      std::to_string(node.outputs.size()));
  for (Tensor& t : outs) t = fresh_copy(t, alloc);
  return outs;
}

// Stacks equal-shaped parts along a new axis.
Tensor stack(const Node& node, const std::vector<Tensor>& parts, int64_t axis, bool reverse,
             TensorAllocator& alloc, const Value& declared) {
  if (parts.empty()) {  // no iteration: [0, ...declared element shape] where the body states it
    Shape shape = {0};
    if (declared.shape_known) shape.insert(shape.end(), declared.shape.begin(), declared.shape.end());
    return alloc.allocate(declared.dtype == DType::Undefined ? DType::Float32 : declared.dtype, shape);
  }
  const Shape& part = parts[0].shape();
  for (const Tensor& p : parts)
    if (p.shape() != part || p.dtype() != parts[0].dtype())
      invalid(node, "a scan output changes shape or type between iterations (" + shape_to_string(part) +
                        " then " + shape_to_string(p.shape()) + ")");
  const int64_t rank = static_cast<int64_t>(part.size()) + 1;
  axis = normalize_axis(node, axis, rank);
  Shape shape = part;
  shape.insert(shape.begin() + axis, static_cast<int64_t>(parts.size()));
  Tensor out = alloc.allocate(parts[0].dtype(), shape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= part[static_cast<size_t>(d)];
  const size_t inner_bytes = parts[0].bytes() / static_cast<size_t>(std::max<int64_t>(outer, 1));
  const size_t n = parts.size();
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < n; ++i) {
      const Tensor& p = parts[reverse ? n - 1 - i : i];
      std::memcpy(dst + (static_cast<size_t>(o) * n + i) * inner_bytes,
                  static_cast<const std::byte*>(p.raw()) + static_cast<size_t>(o) * inner_bytes, inner_bytes);
    }
  return out;
}

// x's slice at `index` along `axis`, that axis removed.
Tensor slice_at(const Tensor& x, int64_t axis, int64_t index) {
  Shape shape = x.shape();
  const int64_t len = shape[static_cast<size_t>(axis)];
  shape.erase(shape.begin() + axis);
  HeapAllocator heap;
  Tensor out = heap.allocate(x.dtype(), shape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  const size_t inner_bytes = out.bytes() / static_cast<size_t>(std::max<int64_t>(outer, 1));
  const auto* src = static_cast<const std::byte*>(x.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<std::byte*>(out.raw()) + static_cast<size_t>(o) * inner_bytes,
                src + (static_cast<size_t>(o * len + index)) * inner_bytes, inner_bytes);
  return out;
}

std::vector<Tensor> loop_op(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const size_t formal = formal_inputs(node, inputs);
  if (formal < 2) invalid(node, "takes M, cond and the loop-carried values");
  const Graph& body = node.body("body");
  const size_t carried = formal - 2;
  if (body.outputs.size() < 1 + carried)
    invalid(node, "its body gives " + std::to_string(body.outputs.size()) +
                      " outputs; it needs cond and the " + std::to_string(carried) + " loop-carried values");
  const size_t scans = body.outputs.size() - 1 - carried;
  if (node.outputs.size() > carried + scans)
    invalid(node, "has " + std::to_string(node.outputs.size()) + " outputs; its body gives " +
                      std::to_string(carried + scans));
  const Tensor* m = optional_input(inputs, 0);
  const Tensor* c = optional_input(inputs, 1);
  int64_t trips = -1;
  if (m) {
    if (m->size() != 1) invalid(node, "M must hold one value");
    trips = m->to_int64_vector()[0];
  }
  bool cond = c ? truth(node, *c, "cond") : true;
  std::vector<Tensor> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(input(node, inputs, 2 + i));
  std::vector<std::vector<Tensor>> scanned(scans);
  Tensor cond_t = Tensor::scalar<bool>(cond);
  for (int64_t i = 0; (trips < 0 || i < trips) && cond; ++i) {
    if (trips < 0 && i >= kMaxUnboundedTrips)
      throw Error(ErrorKind::InvalidInput,
                  node.describe() + ": ran " + std::to_string(kMaxUnboundedTrips) +
                      " iterations without a trip count (M) and its condition is still true");
    Tensor iter = Tensor::scalar<int64_t>(i);
    std::vector<const Tensor*> args = {&iter, &cond_t};
    for (const Tensor& t : state) args.push_back(&t);
    for (size_t k = formal; k < inputs.size(); ++k) args.push_back(inputs[k]);
    std::vector<Tensor> outs = run_body(node, body, args);
    cond = truth(node, outs[0], "the body's cond output");
    cond_t = Tensor::scalar<bool>(cond);
    for (size_t k = 0; k < carried; ++k) state[k] = std::move(outs[1 + k]);
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(outs[1 + carried + k]));
  }
  std::vector<Tensor> result;
  for (const Tensor& t : state) result.push_back(fresh_copy(t, alloc));
  for (size_t k = 0; k < scans; ++k)
    result.push_back(stack(node, scanned[k], 0, false, alloc, body.value(body.outputs[1 + carried + k])));
  result.resize(node.outputs.size());
  return result;
}

std::vector<Tensor> scan9(const Node& node, KernelInputs inputs, TensorAllocator& alloc);

// Opset 8: (sequence_lens, states..., scan inputs...) with a batch axis 0 on every one and time
// on axis 1: each batch item is an opset-9 scan of its own, outputs stacked on axis 0 again.
std::vector<Tensor> scan8(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const size_t formal = formal_inputs(node, inputs);
  if (formal < 2) invalid(node, "takes sequence_lens, the states and the scan inputs");
  const int64_t batch = input(node, inputs, 1).rank() > 0 ? input(node, inputs, 1).dim(0) : -1;
  if (batch < 1) invalid(node, "its inputs need a batch axis");
  for (size_t i = 1; i < formal; ++i)
    if (input(node, inputs, i).rank() < 1 || input(node, inputs, i).dim(0) != batch)
      invalid(node, "its inputs differ in batch size");
  if (const Tensor* lens = optional_input(inputs, 0)) {
    const Tensor& first_scan =
        input(node, inputs, formal - static_cast<size_t>(node.attr_int("num_scan_inputs", 1)));
    const int64_t full = first_scan.rank() > 1 ? first_scan.dim(1) : 0;
    for (int64_t len : lens->to_int64_vector())
      if (len != full) unsupported(node, "sequence_lens shorter than the sequences is not supported");
  }
  Node item = node;  // the opset-9 form of one batch item: scan axis 0, directions as given
  item.opset = 9;
  if (node.has_attr("directions")) {
    item.attrs["scan_input_directions"] = node.attrs.at("directions");
    item.attrs.erase("directions");
  }
  std::vector<std::vector<Tensor>> per_item;
  HeapAllocator heap;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> slices;
    for (size_t i = 1; i < inputs.size(); ++i)
      slices.push_back(i < formal ? slice_at(*inputs[i], 0, b) : *inputs[i]);  // captured: as they are
    std::vector<const Tensor*> args;
    for (const Tensor& t : slices) args.push_back(&t);
    per_item.push_back(scan9(item, args, heap));
  }
  std::vector<Tensor> result;
  for (size_t k = 0; k < per_item[0].size(); ++k) {
    std::vector<Tensor> parts;
    for (auto& outs : per_item) parts.push_back(outs[k]);
    result.push_back(stack(node, parts, 0, false, alloc, Value{}));
  }
  return result;
}

std::vector<Tensor> scan_op(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  return node.opset < 9 ? scan8(node, inputs, alloc) : scan9(node, inputs, alloc);
}

std::vector<Tensor> scan9(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const size_t formal = formal_inputs(node, inputs);
  const int64_t num_scan = node.attr_int("num_scan_inputs", -1);
  if (num_scan < 1 || static_cast<size_t>(num_scan) > formal)
    invalid(node, "num_scan_inputs must be between 1 and the number of inputs");
  const size_t scan_in = static_cast<size_t>(num_scan), states = formal - scan_in;
  const Graph& body = node.body("body");
  if (body.outputs.size() < states) invalid(node, "its body gives fewer outputs than there are states");
  const size_t scan_out = body.outputs.size() - states;
  auto per = [&](const char* key, size_t count) {
    std::vector<int64_t> v = node.attr_ints(key, std::vector<int64_t>(count, 0));
    if (v.size() != count)
      invalid(node, std::string(key) + " must have " + std::to_string(count) + " entries");
    return v;
  };
  const std::vector<int64_t> in_axes = per("scan_input_axes", scan_in),
                             in_dirs = per("scan_input_directions", scan_in),
                             out_axes = per("scan_output_axes", scan_out),
                             out_dirs = per("scan_output_directions", scan_out);
  int64_t length = -1;
  std::vector<int64_t> axes(scan_in);
  for (size_t j = 0; j < scan_in; ++j) {
    const Tensor& x = input(node, inputs, states + j);
    axes[j] = normalize_axis(node, in_axes[j], x.rank());
    const int64_t len = x.shape()[static_cast<size_t>(axes[j])];
    if (length >= 0 && len != length) invalid(node, "its scan inputs differ in length along their scan axes");
    length = len;
  }
  std::vector<Tensor> state;
  for (size_t i = 0; i < states; ++i) state.push_back(input(node, inputs, i));
  std::vector<std::vector<Tensor>> scanned(scan_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> slices;
    for (size_t j = 0; j < scan_in; ++j)
      slices.push_back(slice_at(input(node, inputs, states + j), axes[j], in_dirs[j] ? length - 1 - t : t));
    std::vector<const Tensor*> args;
    for (const Tensor& s : state) args.push_back(&s);
    for (const Tensor& s : slices) args.push_back(&s);
    for (size_t k = formal; k < inputs.size(); ++k) args.push_back(inputs[k]);
    std::vector<Tensor> outs = run_body(node, body, args);
    for (size_t k = 0; k < states; ++k) state[k] = std::move(outs[k]);
    for (size_t k = 0; k < scan_out; ++k) scanned[k].push_back(std::move(outs[states + k]));
  }
  std::vector<Tensor> result;
  for (const Tensor& s : state) result.push_back(fresh_copy(s, alloc));
  for (size_t k = 0; k < scan_out; ++k)
    result.push_back(
        stack(node, scanned[k], out_axes[k], out_dirs[k] != 0, alloc, body.value(body.outputs[states + k])));
  if (result.size() < node.outputs.size()) invalid(node, "has more outputs than its body gives");
  result.resize(node.outputs.size());
  return result;
}

// The body on each item of the input sequence; an additional input that is a sequence gives
// its item of the same position, a tensor is given whole. Each body output gathers into a
// sequence.
std::vector<Tensor> sequence_map(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const size_t formal = formal_inputs(node, inputs);
  if (formal < 1) invalid(node, "takes a sequence");
  const Tensor& seq = input(node, inputs, 0);
  if (!seq.is_sequence()) invalid(node, "input 0 must be a sequence, it is " + describe_value(seq));
  const size_t n = seq.items().size();
  for (size_t k = 1; k < formal; ++k)
    if (input(node, inputs, k).is_sequence() && input(node, inputs, k).items().size() != n)
      throw Error(ErrorKind::InvalidInput, node.describe() + ": its sequences differ in length (" +
                                               std::to_string(n) + " and " +
                                               std::to_string(input(node, inputs, k).items().size()) + ")");
  const Graph& body = node.body("body");
  std::vector<std::vector<Tensor>> gathered(body.outputs.size());
  for (size_t i = 0; i < n; ++i) {
    std::vector<const Tensor*> args = {&seq.items()[i]};
    for (size_t k = 1; k < formal; ++k)
      args.push_back(inputs[k]->is_sequence() ? &inputs[k]->items()[i] : inputs[k]);
    for (size_t k = formal; k < inputs.size(); ++k) args.push_back(inputs[k]);
    std::vector<Tensor> outs = run_body(node, body, args);
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].is_dense()) invalid(node, "its body must give tensors");
      gathered[k].push_back(outs[k].clone());
    }
  }
  std::vector<Tensor> result;
  for (size_t k = 0; k < gathered.size(); ++k) {
    const DType elem = gathered[k].empty() ? body.value(body.outputs[k]).dtype : gathered[k][0].dtype();
    for (const Tensor& t : gathered[k])
      if (t.dtype() != elem) invalid(node, "its body's output " + std::to_string(k) + " changes type");
    result.push_back(Tensor::sequence(elem, std::move(gathered[k])));
  }
  if (result.size() < node.outputs.size()) invalid(node, "has more outputs than its body gives");
  result.resize(node.outputs.size());
  return result;
}

}  // namespace

void register_control_flow_ops(OpTable& table) {
  table["If"] = if_op;
  table["Loop"] = loop_op;
  table["Scan"] = scan_op;
  table["SequenceMap"] = sequence_map;
}

}  // namespace collage::native
