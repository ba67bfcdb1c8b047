// A group as stream-gemm's kernels take it (stream-gemm in fp32, stream-gemm-int8 in int8): one
// product of runtime activations and constant 2-D weights (MatMul, or Gemm without transA with
// constant B and C), then an epilogue run while the output is hot: a bias row, a Relu, a GELU
// with its bias, residual Adds. The patterns, the reading of a matched group into epilogue
// steps and the weights in one place, so both kernels claim and compute the same groups.
//
// Invariants: every refusal is Error(Unsupported) prefixed with the caller's backend name;
// a ProductGroup holds no pointer into the graph (it may outlive it), and `epilogue` returns
// steps whose operands point into the group itself or into that run's inputs.
#pragma once

#include <string>
#include <vector>

#include "backends/stream_gemm/packed_gemm.h"
#include "core/backend_api/pattern.h"
#include "core/ir/kernel.h"
#include "core/ir/subgraph.h"

namespace collage::stream_gemm {

// MatMul(A, W): W a constant fp32 [k, n], A of rank >= 2 whose rows flatten to m x k.
bool matmul_product(const Graph& g, const Node& n);
// Gemm(A, W, C): A 2-D and not transposed, W constant fp32 2-D, C absent or constant.
bool gemm_product(const Graph& g, const Node& n);

using ProductPredicate = bool (*)(const Graph&, const Node&);
// The groups: a head (MatMul taken by `matmul_ok`, Gemm by `gemm_ok`), optionally its bias Add,
// then optionally a Relu or a residual Add; or MatMul + bias Add + GELU (erf or tanh).
std::vector<PatternPtr> product_patterns(ProductPredicate matmul_ok, ProductPredicate gemm_ok);

class ProductGroup {
 public:
  // `who` names the backend in refusals.
  ProductGroup(const Graph& g, const SubGraph& sub, const std::string& who);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t m() const { return n_ ? shape_size(out_shape_) / n_ : 0; }
  const Shape& out_shape() const { return out_shape_; }
  int a_input() const { return a_input_; }  // the activations' index among the kernel's inputs

  // The weights as the model stores them (k x n, or n x k when transposed), and Gemm's alpha.
  const Tensor& weights() const { return weights_; }
  bool transposed() const { return transposed_; }
  float alpha() const { return alpha_; }
  NodeId head() const { return head_; }  // the MatMul or Gemm

  // The steps after the product, in order, with this run's operands bound.
  std::vector<EpilogueStep> epilogue(KernelInputs inputs) const;

 private:
  struct Step {
    EpilogueStep::Kind kind;
    int row = -1;       // AddRow: index into rows_
    int constant = -1;  // AddFull of a constant: index into constants_
    int input = -1;     // AddFull of a runtime value: index among the kernel's inputs
  };
  int input_index(const Graph& g, const SubGraph& sub, ValueId v) const;
  void add_row(const Tensor& t, float scale);
  void add_operand(const Graph& g, const SubGraph& sub, ValueId v);

  std::string who_;
  NodeId head_ = kNoNode;
  int64_t k_ = 0, n_ = 0;
  Shape out_shape_;
  int a_input_ = 0;
  Tensor weights_;
  bool transposed_ = false;
  float alpha_ = 1.0f;
  std::vector<Step> steps_;
  std::vector<std::vector<float>> rows_;
  std::vector<Tensor> constants_;
};

}  // namespace collage::stream_gemm
