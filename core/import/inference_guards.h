// What libonnx 1.12's shape inference needs checked before it runs: fuzzing found it
// dereferencing what a malformed model leaves out (a dangling or untyped name, a node unlike its
// schema, an initialiser short of its dims, a Shape of a value it could not type). Each check
// throws Error naming the node or value; run in this order before onnx::shape_inference.
#pragma once

#include <map>
#include <set>
#include <string>

#include "onnx/onnx_pb.h"

namespace collage::import_detail {

// Puts the nodes in topological order (stably: a sorted graph keeps its order); a cycle is
// refused naming a node on it.
void sort_nodes(onnx::GraphProto& g);
// Names defined once, graph inputs typed, every read name defined before its reader; bodies
// recursively (`outer`: their enclosing graphs' names defined before the node; a body's inputs
// may be untyped: inference takes them from the node).
void check_references(const onnx::GraphProto& g, const std::set<std::string>& outer = {}, bool body = false);
// Every initialiser's bytes or values fill its dims (bodies' too).
void check_initializer_sizes(const onnx::GraphProto& g);
// Required attributes, input and output counts against each op's schema at the model's opset.
void check_against_schemas(const onnx::GraphProto& g, const std::map<std::string, int>& opsets);
// After a first inference without data propagation: "node 'X' (Shape) reads 'v', which inference
// could not type", or "" when data propagation is safe to run.
std::string untyped_shape_input(const onnx::GraphProto& main);

}  // namespace collage::import_detail
