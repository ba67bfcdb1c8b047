// A fully connected group as the parts of one oneDNN matmul, whatever precision the backend
// computes the product in (onednn-int8 and onednn-bf16 share it): the head, a MatMul of
// [.., M, K] activations and constant [K, N] weights or a Gemm with constant B and C and no
// transA, then the post-op units after it (a bias, an activation, a residual Add).
//
// Invariant: every refusal is Error(Unsupported) prefixed with the caller's backend name;
// a chain that is returned computes exactly the group's one output, of the head's shape.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/backend_api/pattern.h"
#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage::onednn {

// The MatMul / Gemm nodes a fully connected backend takes (its pattern predicate).
bool fully_connected(const Graph& g, const Node& n);
// The groups it claims: such a head, optionally its bias Add, then optionally a Relu or a
// residual Add (at most 3 nodes).
std::vector<PatternPtr> fully_connected_patterns();

struct FcChain {
  int64_t m = 0, k = 0, n = 0;
  int a_input = 0;  // the activations' index among the kernel's inputs
  Shape out_shape;
  Tensor weights;                                       // [K, N] row-major f32, Gemm's alpha folded in
  dnnl::post_ops ops;                                   // the factor, Gemm's C, then the chain
  std::vector<std::pair<int, dnnl::memory>> constants;  // per-column operands, bound once
  struct Runtime {
    int arg;
    int input;  // among the kernel's inputs
    dnnl::memory mem;
  };
  std::vector<Runtime> runtime;  // operands of the output's shape, bound per run
  // With a leading factor: a [1, 1] f32 the product is multiplied by before anything else (bound
  // once among `constants`; its value is the caller's to write before each run).
  dnnl::memory factor;

  dnnl::memory::desc out_desc() const;  // [M, N] f32 row-major
  // Points the runtime operands at this run's inputs, in `args`.
  void bind(KernelInputs inputs, std::unordered_map<int, dnnl::memory>& args);
};

// `who` names the backend in refusals ("onednn-bf16: Gemm with transA"). `leading_factor`: the
// post-ops start with a runtime scalar product (onednn-int8's activation scale, known per run).
FcChain fc_chain(const Graph& g, const SubGraph& sub, const std::string& who, bool leading_factor = false);

}  // namespace collage::onednn
