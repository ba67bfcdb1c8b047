// Deterministic random tensors for running models without user inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"

namespace collage {

// float: uniform [-1, 1); integers: 0 (safe as indices/ids); bool: false.
Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed);
// One tensor per graph input, in graph.inputs order; a sequence input gets an empty sequence,
// an optional tensor input an empty optional (they have no shape to draw from).
std::vector<Tensor> random_inputs(const Graph& graph, uint64_t seed);

}  // namespace collage
