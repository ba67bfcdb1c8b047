// Helpers for the native data-kernel tests: node construction, running a
// kernel on an allocator that poisons memory (so unwritten outputs show up),
// and typed value extraction.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/native/native_ops.h"
#include "core/ir/graph.h"
#include "core/ir/tensor.h"

namespace collage::data_test {

// Hands out storage filled with 0xA5 bytes instead of zeros: a kernel that
// skips an element leaves a recognisable garbage value behind.
class PoisonAllocator : public TensorAllocator {
 public:
  Tensor allocate(DType dtype, const Shape& shape) override {
    Tensor t(dtype, shape);
    if (t.bytes()) std::memset(t.raw(), 0xA5, t.bytes());
    return t;
  }
};

inline Node make_node(const std::string& op, std::map<std::string, Attribute> attrs = {},
                      size_t outputs = 1) {
  Node n;
  n.name = "t";
  n.op_type = op;
  n.opset = 18;
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back(static_cast<ValueId>(i));
  return n;
}

// An undefined Tensor in `inputs` stands for an omitted optional input.
inline std::vector<Tensor> run(const Node& node, const std::vector<Tensor>& inputs) {
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(t.defined() ? &t : nullptr);
  PoisonAllocator alloc;
  return native::evaluate_node(node, ptrs, alloc);
}

inline Tensor run1(const Node& node, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outs = run(node, inputs);
  EXPECT_EQ(outs.size(), 1u);
  return outs.at(0);
}

template <class T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.size());
}

inline Tensor f32(Shape shape, const std::vector<float>& v) {
  return Tensor::from_vector<float>(std::move(shape), v);
}
inline Tensor i64(Shape shape, const std::vector<int64_t>& v) {
  return Tensor::from_vector<int64_t>(std::move(shape), v);
}
inline Tensor i32(Shape shape, const std::vector<int32_t>& v) {
  return Tensor::from_vector<int32_t>(std::move(shape), v);
}
inline Tensor u8(Shape shape, const std::vector<uint8_t>& v) {
  return Tensor::from_vector<uint8_t>(std::move(shape), v);
}
inline Tensor boolean(Shape shape, const std::vector<bool>& v) {
  return Tensor::from_vector<bool>(std::move(shape), v);
}
inline Tensor i64s(const std::vector<int64_t>& v) { return i64({static_cast<int64_t>(v.size())}, v); }

// 0, 1, 2, ... as float32 / int64.
inline Tensor iota_f32(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(shape, v);
}
inline Tensor iota_i64(const Shape& shape) {
  std::vector<int64_t> v(static_cast<size_t>(shape_size(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  return i64(shape, v);
}

// The ErrorKind thrown by f; fails the test when nothing (or a non-Error) is thrown.
inline ErrorKind error_kind(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << "no collage::Error thrown";
  return ErrorKind::Internal;
}

// Naive numpy broadcast written independently of the kernels: each output
// index is decomposed and mapped into each operand.
inline std::vector<int64_t> broadcast_source_indices(const Shape& in, const Shape& out) {
  std::vector<int64_t> result;
  const int64_t total = shape_size(out);
  for (int64_t flat = 0; flat < total; ++flat) {
    std::vector<int64_t> idx(out.size());
    int64_t rest = flat;
    for (size_t d = out.size(); d-- > 0;) {
      idx[d] = rest % out[d];
      rest /= out[d];
    }
    int64_t src = 0;
    const size_t lead = out.size() - in.size();
    for (size_t d = 0; d < in.size(); ++d) src = src * in[d] + (in[d] == 1 ? 0 : idx[lead + d]);
    result.push_back(src);
  }
  return result;
}

}  // namespace collage::data_test
