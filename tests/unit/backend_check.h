// Checks a backend's kernels against the native reference: every value of the
// graph is computed once with the native kernels, then each candidate is
// compiled, fed the reference values of its inputs, and its outputs compared.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "backends/native/native_ops.h"
#include "core/backend_api/backend.h"
#include "core/ir/random_inputs.h"
#include "core/tuning/candidates.h"

namespace collage::testing {

// values[v] for every value id (constants included); inputs random unless given.
inline std::vector<Tensor> reference_values(const Graph& g, std::vector<Tensor> inputs = {},
                                            uint64_t seed = 3) {
  if (inputs.empty()) inputs = random_inputs(g, seed);
  std::vector<Tensor> values(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].constant) values[v] = *g.values[v].constant;
  for (size_t i = 0; i < g.inputs.size(); ++i) values[static_cast<size_t>(g.inputs[i])] = inputs[i];
  HeapAllocator alloc;
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> args;
    for (ValueId in : n.inputs) args.push_back(in == kNoValue ? nullptr : &values[static_cast<size_t>(in)]);
    auto outs = native::evaluate_node(n, args, alloc);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (n.outputs[k] != kNoValue) values[static_cast<size_t>(n.outputs[k])] = outs[k];
  }
  return values;
}

struct CandidateCheck {
  bool supported = true;  // false: the backend refused to compile (Unsupported)
  std::string mismatch;   // empty when outputs agree
  double max_abs_error = 0.0;
};

// |got - want| <= atol + rtol * |want| element-wise.
inline CandidateCheck check_candidate(const Graph& g, const BackendSpec& spec, const IndexSet& nodes,
                                      const std::vector<Tensor>& values, double rtol = 1e-4,
                                      double atol = 1e-5, int threads = 1) {
  CandidateCheck result;
  SubGraph sub = make_subgraph(g, nodes);
  std::unique_ptr<Kernel> kernel;
  try {
    CompileOptions options;
    options.threads = threads;
    kernel = spec.compile(g, sub, options);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::Unsupported) throw;
    result.supported = false;
    result.mismatch = e.what();
    return result;
  }
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  std::vector<Tensor> outs = kernel->run(args, alloc);
  if (outs.size() != sub.outputs.size()) {
    result.mismatch = "returned " + std::to_string(outs.size()) + " outputs, expected " +
                      std::to_string(sub.outputs.size());
    return result;
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    const Tensor& want = values[static_cast<size_t>(sub.outputs[k])];
    const std::string& name = g.value(sub.outputs[k]).name;
    if (outs[k].shape() != want.shape() || outs[k].dtype() != want.dtype()) {
      result.mismatch =
          name + ": got " + shape_to_string(outs[k].shape()) + ", want " + shape_to_string(want.shape());
      return result;
    }
    std::vector<double> a = outs[k].to_double_vector(), b = want.to_double_vector();
    for (size_t i = 0; i < a.size(); ++i) {
      double err = std::fabs(a[i] - b[i]);
      result.max_abs_error = std::max(result.max_abs_error, err);
      if (!(err <= atol + rtol * std::fabs(b[i])) && result.mismatch.empty())
        result.mismatch = name + "[" + std::to_string(i) + "] = " + std::to_string(a[i]) + ", reference " +
                          std::to_string(b[i]);
    }
  }
  return result;
}

}  // namespace collage::testing
