// Small helpers shared by the native kernel files.
#pragma once

#include <string>
#include <vector>

#include "core/ir/kernel.h"

namespace collage::native {

// The i-th input; throws InvalidModel naming the node when it is missing.
const Tensor& input(const Node& node, KernelInputs inputs, size_t i);
// The i-th input or nullptr when omitted / beyond the list.
const Tensor* optional_input(KernelInputs inputs, size_t i);

// Maps a possibly negative axis into [0, rank); throws InvalidModel if out of range.
int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank);

// Numpy-style broadcast of two shapes; throws InvalidModel naming the node.
Shape broadcast_shapes(const Node& node, const Shape& a, const Shape& b);

// Row-major element strides of `shape`.
std::vector<int64_t> strides_of(const Shape& shape);

// Strides for reading a tensor of `shape` as if broadcast to `out` (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out);

// Throws Unsupported: "<node>: <what>".
[[noreturn]] void unsupported(const Node& node, const std::string& what);
// Throws InvalidModel: "<node>: <what>".
[[noreturn]] void invalid(const Node& node, const std::string& what);

// Requires the tensor's dtype to be float32 (the compute ops' only float type).
void require_float(const Node& node, const Tensor& t, const char* role);

}  // namespace collage::native
