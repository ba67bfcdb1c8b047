// Test models for the graph-level search (refine_test, workflow_test): a stand-in
// graph-level backend and a chain with two runs of ops it can take.
#pragma once

#include "backends/native/native_kernel.h"
#include "core/backend_api/backend.h"
#include "core/search/placement.h"
#include "onnx_test_model.h"

namespace collage::testing {

// A graph-level stand-in that takes Relu, Neg and Add and runs regions with the native kernels.
inline BackendSpec graphy() {
  BackendSpec s;
  s.name = "graphy";
  s.version = "test";
  s.kind = BackendKind::GraphLevel;
  s.supports_node = [](const Graph&, const Node& n) {
    return n.op_type == "Relu" || n.op_type == "Neg" || n.op_type == "Add";
  };
  s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) {
    return native::make_fused_kernel(g, sub);
  };
  return s;
}

// Each node its own native kernel of op-level cost 1 ms.
inline Placement one_kernel_per_node(const Graph& g) {
  Placement p;
  p.model_fingerprint = model_fingerprint(g);
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    p.kernels.push_back({{{n}, "native", g.node(n).op_type}, Cost::of_ms(1.0)});
  p.predicted_ms = static_cast<double>(g.num_nodes());
  return p;
}

// Relu, Neg, Exp, Relu, Neg, Sigmoid, Relu, Neg, plus a skip edge: two runs of offloadable ops.
inline Graph mixed_chain() {
  OnnxTestModel m(17);
  m.input("x", {2, 8});
  const char* ops[] = {"Relu", "Neg", "Exp", "Relu", "Neg", "Sigmoid", "Relu", "Neg"};
  std::string prev = "x";
  for (int i = 0; i < 8; ++i) {
    std::string out = "v" + std::to_string(i);
    m.node(ops[i], {prev}, {out});
    prev = out;
  }
  m.node("Add", {"v1", prev}, {"y"});
  m.output("y");
  return import_model(m);
}

}  // namespace collage::testing
