// Which input slots of an op steer its output SHAPE by their values (Reshape's
// shape, Range's bounds, NonZero's data...). Shape completion never evaluates such
// a node on placeholders: a zero placeholder there yields a wrong static shape.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"

namespace collage::import_detail {

// True when the value of input slot `slot` of `node` can change its output shapes.
bool steers_shape(const Node& node, size_t slot);

// The graph inputs whose values flow into `v` (through any chain of non-constant
// values), in graph input order.
std::vector<std::string> graph_inputs_feeding(const Graph& graph, ValueId v);

}  // namespace collage::import_detail
