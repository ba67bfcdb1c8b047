#include "backends/onednn/onednn_resize.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

#include "backends/onednn/onednn_common.h"

namespace collage::onednn {

using dnnl::memory;

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "onednn: " + why); }

bool present(const Node& n, size_t i) { return i < n.inputs.size() && n.inputs[i] != kNoValue; }

class ResampleKernel : public Kernel {
 public:
  ResampleKernel(const Shape& xs, const Shape& ys, dnnl::algorithm alg, int input)
      : out_shape_(ys), input_(input) {
    dnnl::resampling_forward::desc d(dnnl::prop_kind::forward_inference, alg, plain(xs), plain(ys));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::resampling_forward::primitive_desc pd(d, attr, cpu());
    prim_ = dnnl::resampling_forward(pd);
    src_ = memory(plain(xs), cpu(), DNNL_MEMORY_NONE);
    dst_ = memory(plain(ys), cpu(), DNNL_MEMORY_NONE);
    if (pd.scratchpad_desc().get_size() > 0) scratchpad_ = memory(pd.scratchpad_desc(), cpu());
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    std::lock_guard<std::mutex> lock(mutex_);  // the memory handles belong to this kernel
    dnnl::stream stream(cpu());
    src_.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(input_)]->raw()));
    dst_.set_data_handle(y.raw());
    std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
    if (scratchpad_) args[DNNL_ARG_SCRATCHPAD] = *scratchpad_;
    prim_.execute(stream, args);
    stream.wait();
    return {y};
  }

 private:
  dnnl::resampling_forward prim_;
  Shape out_shape_;
  int input_;
  memory src_, dst_;
  std::optional<memory> scratchpad_;
  std::mutex mutex_;
};

}  // namespace

bool resize_supported(const Graph& g, const Node& n) {
  if (n.op_type != "Resize" || !present(n, 0) || n.outputs.empty() || n.outputs[0] == kNoValue) return false;
  const Value& x = g.value(n.inputs[0]);
  const Value& y = g.value(n.outputs[0]);
  if (x.dtype != DType::Float32 || y.dtype != DType::Float32) return false;
  const Shape& xs = x.shape;
  const Shape& ys = y.shape;
  if (xs.size() < 3 || xs.size() > 5 || ys.size() != xs.size() || xs[0] != ys[0] || xs[1] != ys[1])
    return false;
  if (shape_size(xs) == 0 || shape_size(ys) == 0) return false;
  if (n.attr_int("antialias", 0) != 0 || n.attr_int("exclude_outside", 0) != 0 || n.has_attr("axes"))
    return false;
  // The coordinates must use output / input as the scale: given scales must equal it.
  if (present(n, 2) && !present(n, 3)) {
    const Value& sv = g.value(n.inputs[2]);
    if (!sv.constant || sv.constant->dtype() != DType::Float32) return false;
    const Tensor& s = *sv.constant;
    if (s.size() != static_cast<int64_t>(xs.size())) return false;
    for (size_t d = 2; d < xs.size(); ++d) {
      float ratio = static_cast<float>(ys[d]) / static_cast<float>(xs[d]);
      if (std::fabs(s.data<float>()[d] - ratio) > 1e-6f * ratio) return false;
    }
  }
  std::string mode = n.attr_string("mode", "nearest");
  std::string ctm = n.attr_string("coordinate_transformation_mode", "half_pixel");
  bool half_pixel = ctm == "half_pixel" || ctm == "pytorch_half_pixel";
  if (mode == "linear") {
    if (!half_pixel) return false;
    if (ctm == "pytorch_half_pixel")
      for (size_t d = 2; d < ys.size(); ++d)
        if (ys[d] == 1) return false;  // pytorch_half_pixel maps a length-1 output to 0
    return true;
  }
  if (mode != "nearest") return false;
  for (size_t d = 2; d < xs.size(); ++d)
    if (ys[d] % xs[d] != 0) return false;  // integer upsampling factors only
  std::string nearest = n.attr_string("nearest_mode", "round_prefer_floor");
  if (ctm == "asymmetric") return nearest == "floor";
  return half_pixel && (nearest == "round_prefer_floor" || nearest == "round_prefer_ceil");
}

std::unique_ptr<Kernel> compile_resize(const Graph& g, const SubGraph& sub, const Node& n) {
  if (sub.node_list.size() != 1 || !resize_supported(g, n)) refuse("Resize outside what oneDNN computes");
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), n.inputs[0]);
  if (it == sub.inputs.end()) refuse("Resize's X must be a runtime input");
  auto alg = n.attr_string("mode", "nearest") == "linear" ? dnnl::algorithm::resampling_linear
                                                          : dnnl::algorithm::resampling_nearest;
  return std::make_unique<ResampleKernel>(g.value(n.inputs[0]).shape, g.value(n.outputs[0]).shape, alg,
                                          static_cast<int>(it - sub.inputs.begin()));
}

}  // namespace collage::onednn
