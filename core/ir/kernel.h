// A compiled kernel: runs one node or one fused sub-graph on contiguous buffers.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/tensor.h"

namespace collage {

// Inputs in the order the kernel declared; nullptr marks an omitted optional input.
using KernelInputs = std::span<const Tensor* const>;

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Returns the outputs in declared order, allocated from `alloc`.
  virtual std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) = 0;
};

// Evaluates one node on concrete inputs. The importer uses it to fold constant
// sub-graphs and to fill in shapes ONNX inference missed; core/ has no kernels
// of its own, so the caller passes the native backend's.
using NodeEvaluator = std::function<std::vector<Tensor>(const Node&, KernelInputs, TensorAllocator&)>;

}  // namespace collage
