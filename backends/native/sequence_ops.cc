// ONNX's sequence and optional ops over the non-tensor forms of Tensor (core/ir/tensor.h):
// SequenceEmpty/Construct/Insert/At/Erase/Length, SplitToSequence, ConcatFromSequence,
// Optional, OptionalHasElement, OptionalGetElement. (SequenceMap runs a body: control_flow_ops.cc.)
// Invariants: a tensor entering a sequence is copied onto the heap, so no run buffer is ever
// an item; items are never written, so reading one out shares it.
#include <cstring>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

const Tensor& sequence_input(const Node& node, KernelInputs inputs, size_t i) {
  const Tensor& t = input(node, inputs, i);
  if (!t.is_sequence())
    invalid(node, "input " + std::to_string(i) + " must be a sequence, it is " + describe_value(t));
  return t;
}

const Tensor& tensor_input(const Node& node, KernelInputs inputs, size_t i) {
  const Tensor& t = input(node, inputs, i);
  if (!t.is_dense())
    invalid(node, "input " + std::to_string(i) + " must be a tensor, it is " + describe_value(t));
  return t;
}

// An item's copy, so the sequence shares no run buffer.
Tensor own(const Tensor& t) { return t.clone(); }

// A position input in [-n, n - 1] (or [-n, n] where `end_ok`), made non-negative.
size_t position(const Node& node, const Tensor& pos, size_t n, bool end_ok) {
  if (pos.size() != 1 || (pos.dtype() != DType::Int64 && pos.dtype() != DType::Int32))
    invalid(node, "position must be one int32 or int64 value");
  const int64_t count = static_cast<int64_t>(n);
  int64_t p = pos.to_int64_vector()[0];
  const int64_t hi = end_ok ? count : count - 1;
  if (p < -count || p > hi)
    throw Error(ErrorKind::InvalidInput, node.describe() + ": position " + std::to_string(p) +
                                             " is outside a sequence of " + std::to_string(n));
  return static_cast<size_t>(p < 0 ? p + count : p);
}

void require_elem(const Node& node, const Tensor& seq, const Tensor& t) {
  if (t.dtype() != seq.dtype())
    invalid(node, std::string("a sequence of ") + dtype_name(seq.dtype()) + " cannot take a " +
                      dtype_name(t.dtype()) + " tensor");
}

std::vector<Tensor> sequence_empty(const Node& node, KernelInputs, TensorAllocator&) {
  return {Tensor::sequence(dtype_from_onnx(static_cast<int>(node.attr_int("dtype", 1))), {})};
}

std::vector<Tensor> sequence_construct(const Node& node, KernelInputs inputs, TensorAllocator&) {
  if (inputs.empty()) invalid(node, "takes at least one tensor");
  std::vector<Tensor> items;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = tensor_input(node, inputs, i);
    if (t.dtype() != tensor_input(node, inputs, 0).dtype()) invalid(node, "its tensors differ in type");
    items.push_back(own(t));
  }
  const DType elem = items[0].dtype();
  return {Tensor::sequence(elem, std::move(items))};
}

std::vector<Tensor> sequence_insert(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& seq = sequence_input(node, inputs, 0);
  const Tensor& t = tensor_input(node, inputs, 1);
  require_elem(node, seq, t);
  std::vector<Tensor> items = seq.items();
  const Tensor* pos = optional_input(inputs, 2);
  const size_t at = pos ? position(node, *pos, items.size(), true) : items.size();
  items.insert(items.begin() + static_cast<std::ptrdiff_t>(at), own(t));
  return {Tensor::sequence(seq.dtype(), std::move(items))};
}

std::vector<Tensor> sequence_at(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& seq = sequence_input(node, inputs, 0);
  return {seq.items()[position(node, tensor_input(node, inputs, 1), seq.items().size(), false)]};
}

std::vector<Tensor> sequence_erase(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& seq = sequence_input(node, inputs, 0);
  std::vector<Tensor> items = seq.items();
  if (items.empty())
    throw Error(ErrorKind::InvalidInput, node.describe() + ": erases from an empty sequence");
  const Tensor* pos = optional_input(inputs, 1);
  const size_t at = pos ? position(node, *pos, items.size(), false) : items.size() - 1;
  items.erase(items.begin() + static_cast<std::ptrdiff_t>(at));
  return {Tensor::sequence(seq.dtype(), std::move(items))};
}

std::vector<Tensor> sequence_length(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  Tensor out = alloc.allocate(DType::Int64, {});
  *out.data<int64_t>() = static_cast<int64_t>(sequence_input(node, inputs, 0).items().size());
  return {out};
}

// Copies x's slab [begin, begin + len) along `axis` into a heap tensor of shape `shape`.
Tensor slab(const Tensor& x, int64_t axis, int64_t begin, int64_t len, Shape shape) {
  Tensor out(x.dtype(), std::move(shape));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const size_t elem = dtype_size(x.dtype());
  const size_t row = static_cast<size_t>(len * inner) * elem;
  const auto* src = static_cast<const std::byte*>(x.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o) * row,
                src + (static_cast<size_t>(o * x.dim(axis) + begin) * static_cast<size_t>(inner)) * elem,
                row);
  return out;
}

std::vector<Tensor> split_to_sequence(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& x = tensor_input(node, inputs, 0);
  if (x.rank() == 0) invalid(node, "cannot split a scalar");
  const int64_t axis = normalize_axis(node, node.attr_int("axis", 0), x.rank());
  const int64_t dim = x.dim(axis);
  const Tensor* split = optional_input(inputs, 1);
  std::vector<int64_t> lengths;
  bool keep = true;
  if (!split) {
    lengths.assign(static_cast<size_t>(dim), 1);
    keep = node.attr_int("keepdims", 1) != 0;
  } else if (split->rank() == 0) {
    const int64_t chunk = split->to_int64_vector().at(0);
    if (chunk <= 0)
      throw Error(ErrorKind::InvalidInput,
                  node.describe() + ": split must be positive, it is " + std::to_string(chunk));
    for (int64_t at = 0; at < dim; at += chunk) lengths.push_back(std::min(chunk, dim - at));
  } else {
    lengths = split->to_int64_vector();
    int64_t sum = 0;
    for (int64_t l : lengths) {
      if (l < 0)
        throw Error(ErrorKind::InvalidInput, node.describe() + ": split lengths must not be negative");
      sum += l;
    }
    if (sum != dim)
      throw Error(ErrorKind::InvalidInput, node.describe() + ": split lengths sum to " + std::to_string(sum) +
                                               ", the axis has " + std::to_string(dim));
  }
  std::vector<Tensor> items;
  int64_t at = 0;
  for (int64_t len : lengths) {
    Shape shape = x.shape();
    shape[static_cast<size_t>(axis)] = len;
    if (!keep) shape.erase(shape.begin() + axis);
    items.push_back(slab(x, axis, at, len, shape));
    at += len;
  }
  return {Tensor::sequence(x.dtype(), std::move(items))};
}

std::vector<Tensor> concat_from_sequence(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor& seq = sequence_input(node, inputs, 0);
  const std::vector<Tensor>& items = seq.items();
  if (items.empty()) invalid(node, "cannot concatenate an empty sequence");
  const bool new_axis = node.attr_int("new_axis", 0) != 0;
  const Shape& first = items[0].shape();
  const int64_t rank = static_cast<int64_t>(first.size()) + (new_axis ? 1 : 0);
  const int64_t axis = normalize_axis(node, node.attr_int("axis", 0), rank);
  // Each item as the slab it becomes: its shape with the axis inserted (new_axis) or kept.
  Shape out_shape = first;
  if (new_axis) out_shape.insert(out_shape.begin() + axis, 0);
  out_shape[static_cast<size_t>(axis)] = 0;
  for (const Tensor& t : items) {
    Shape s = t.shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    Shape rest = s, want = out_shape;
    if (static_cast<int64_t>(s.size()) != rank) invalid(node, "its tensors differ in rank");
    rest[static_cast<size_t>(axis)] = want[static_cast<size_t>(axis)] = 0;
    if (rest != want)
      throw Error(ErrorKind::InvalidInput, node.describe() + ": tensors " + shape_to_string(first) + " and " +
                                               shape_to_string(t.shape()) + " cannot be joined on axis " +
                                               std::to_string(axis));
    out_shape[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  Tensor out = alloc.allocate(seq.dtype(), out_shape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& t : items) {
      const size_t part = t.bytes() / static_cast<size_t>(std::max<int64_t>(outer, 1));
      std::memcpy(dst, static_cast<const std::byte*>(t.raw()) + static_cast<size_t>(o) * part, part);
      dst += part;
    }
  return {out};
}

std::vector<Tensor> optional_op(const Node& node, KernelInputs inputs, TensorAllocator&) {
  if (const Tensor* t = optional_input(inputs, 0)) return {*t};
  if (!node.has_attr("type")) invalid(node, "without an input it needs the 'type' attribute");
  return {Tensor::none(dtype_from_onnx(static_cast<int>(node.attr_int("type", 1))))};
}

std::vector<Tensor> optional_has_element(const Node&, KernelInputs inputs, TensorAllocator& alloc) {
  const Tensor* t = optional_input(inputs, 0);
  Tensor out = alloc.allocate(DType::Bool, {});
  *out.data<bool>() = t && !t->is_none();
  return {out};
}

std::vector<Tensor> optional_get_element(const Node& node, KernelInputs inputs, TensorAllocator&) {
  const Tensor& t = input(node, inputs, 0);
  if (t.is_none()) throw Error(ErrorKind::InvalidInput, node.describe() + ": the optional holds no value");
  return {t};
}

}  // namespace

bool takes_non_tensor_values(const Node& node) {
  static const char* const kOps[] = {"SequenceEmpty",
                                     "SequenceConstruct",
                                     "SequenceInsert",
                                     "SequenceAt",
                                     "SequenceErase",
                                     "SequenceLength",
                                     "SplitToSequence",
                                     "ConcatFromSequence",
                                     "SequenceMap",
                                     "Optional",
                                     "OptionalHasElement",
                                     "OptionalGetElement",
                                     "Identity",
                                     "If",
                                     "Loop",
                                     "Scan"};
  if (!node.domain.empty()) return false;
  for (const char* op : kOps)
    if (node.op_type == op) return true;
  return false;
}

void register_sequence_ops(OpTable& table) {
  table["SequenceEmpty"] = sequence_empty;
  table["SequenceConstruct"] = sequence_construct;
  table["SequenceInsert"] = sequence_insert;
  table["SequenceAt"] = sequence_at;
  table["SequenceErase"] = sequence_erase;
  table["SequenceLength"] = sequence_length;
  table["SplitToSequence"] = split_to_sequence;
  table["ConcatFromSequence"] = concat_from_sequence;
  table["Optional"] = optional_op;
  table["OptionalHasElement"] = optional_has_element;
  table["OptionalGetElement"] = optional_get_element;
}

}  // namespace collage::native
