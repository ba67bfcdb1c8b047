#include "backends/xnnpack_graph/xnnpack_graph.h"

#include <xnnpack.h>

#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>

#include "backends/xnnpack/omp_pthreadpool.h"
#include "backends/xnnpack/xnnpack_kernels.h"
#include "core/backend_api/conv_folding.h"
#include "core/ir/conv_geometry.h"

namespace collage {

namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorKind::Unsupported, "xnnpack-graph: " + why);
}
void check(xnn_status s, const char* what) {
  if (s != xnn_status_success) refuse(std::string(what) + " failed (status " + std::to_string(s) + ")");
}

bool const_in(const Graph& g, const Node& n, size_t i) {
  return i < n.inputs.size() && n.inputs[i] != kNoValue && g.value(n.inputs[i]).constant.has_value();
}

// What a region may contain: float tensors; 4-D ones are NCHW outside and NHWC
// inside, so an op may not mix a 4-D tensor with a lower-rank one (its broadcast
// would align the wrong axes). Weights and biases must be constants.
bool supported(const Graph& g, const Node& n) {
  auto rank = [&](ValueId v) { return g.value(v).shape.size(); };
  for (ValueId v : n.inputs)
    if (v != kNoValue && g.value(v).dtype != DType::Float32) return false;
  if (n.inputs.empty() || n.inputs[0] == kNoValue || n.outputs.empty()) return false;
  const std::string& op = n.op_type;
  if (op == "Conv") return rank(n.inputs[0]) == 4 && const_in(g, n, 1) && input_absent_or_constant(g, n, 2);
  if (op == "Relu" || op == "Sigmoid") return rank(n.inputs[0]) >= 1 && rank(n.inputs[0]) <= 4;
  if (op == "Clip")
    return rank(n.inputs[0]) >= 1 && rank(n.inputs[0]) <= 4 && input_absent_or_constant(g, n, 1) &&
           input_absent_or_constant(g, n, 2);
  if (op == "Add" || op == "Mul" || op == "Sub" || op == "Div") {
    if (n.inputs.size() != 2 || n.inputs[1] == kNoValue) return false;
    size_t ra = rank(n.inputs[0]), rb = rank(n.inputs[1]);
    bool ca = g.value(n.inputs[0]).constant.has_value(), cb = g.value(n.inputs[1]).constant.has_value();
    if (ca && cb) return false;
    if (ra == 4 || rb == 4) return ra == 4 && rb == 4 && !ca && !cb;
    return ra >= 1 && rb >= 1 && ra <= 3 && rb <= 3;
  }
  // Fully connected: activations [.., K] times constant [K, N] (MatMul) or Gemm without transA/scaling.
  if (op == "MatMul")
    return (rank(n.inputs[0]) == 2 || rank(n.inputs[0]) == 3) && const_in(g, n, 1) && rank(n.inputs[1]) == 2;
  if (op == "Gemm") {
    if (rank(n.inputs[0]) != 2 || !const_in(g, n, 1) || n.attr_int("transA", 0) != 0 ||
        n.attr_float("alpha", 1) != 1.0f || n.attr_float("beta", 1) != 1.0f ||
        !input_absent_or_constant(g, n, 2))
      return false;
    int64_t out_n = g.value(n.outputs[0]).shape.back();
    return n.inputs.size() < 3 || n.inputs[2] == kNoValue || g.value(n.inputs[2]).constant->size() == out_n;
  }
  if (op == "Softmax") {
    size_t r = rank(n.inputs[0]);
    int64_t axis = n.attr_int("axis", n.opset >= 13 ? -1 : 1);
    return r >= 1 && r <= 3 && (axis == -1 || axis == static_cast<int64_t>(r) - 1) &&
           (n.opset >= 13 || r == 2);
  }
  if (op == "MaxPool")
    return rank(n.inputs[0]) == 4 && n.outputs.size() == 1 && n.attr_string("auto_pad", "NOTSET") == "NOTSET";
  if (op == "GlobalAveragePool") return rank(n.inputs[0]) == 4;
  // Folded into the producing Conv when both sit in the region (checked at compile time).
  if (op == "BatchNormalization")
    return rank(n.inputs[0]) == 4 && foldable_batch_norm(g, n) && const_in(g, n, 1) && const_in(g, n, 2) &&
           const_in(g, n, 3) && const_in(g, n, 4);
  return false;
}

void initialize() {
  static std::once_flag once;
  static xnn_status status;
  std::call_once(once, [] { status = xnn_initialize(nullptr); });
  check(status, "xnn_initialize");
}

void to_nhwc(const float* in, float* out, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) out[(b * hw + p) * c + ch] = in[(b * c + ch) * hw + p];
}
void to_nchw(const float* in, float* out, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) out[(b * c + ch) * hw + p] = in[(b * hw + p) * c + ch];
}

// NHWC dims of an NCHW shape (other ranks unchanged).
std::vector<size_t> xnn_dims(const Shape& s) {
  if (s.size() == 4) return {size_t(s[0]), size_t(s[2]), size_t(s[3]), size_t(s[1])};
  return std::vector<size_t>(s.begin(), s.end());
}

class RegionKernel : public Kernel {
 public:
  RegionKernel(const Graph& g, const SubGraph& sub) : sub_(sub) {
    initialize();
    uint32_t external = static_cast<uint32_t>(sub.inputs.size() + sub.outputs.size());
    xnn_subgraph_t raw = nullptr;
    check(xnn_create_subgraph(external, 0, &raw), "create subgraph");
    std::unique_ptr<xnn_subgraph, decltype(&xnn_delete_subgraph)> subgraph(raw, &xnn_delete_subgraph);
    std::map<ValueId, uint32_t> ids;
    auto define = [&](ValueId v, uint32_t external_id, uint32_t flags) {
      std::vector<size_t> dims = xnn_dims(g.value(v).shape);
      uint32_t id = 0;
      check(xnn_define_tensor_value(subgraph.get(), xnn_datatype_fp32, dims.size(), dims.data(), nullptr,
                                    external_id, flags, &id),
            "define tensor");
      ids[v] = id;
      return id;
    };
    for (size_t i = 0; i < sub.inputs.size(); ++i)
      define(sub.inputs[i], static_cast<uint32_t>(i), XNN_VALUE_FLAG_EXTERNAL_INPUT);
    for (size_t i = 0; i < sub.outputs.size(); ++i)
      define(sub.outputs[i], static_cast<uint32_t>(sub.inputs.size() + i), XNN_VALUE_FLAG_EXTERNAL_OUTPUT);
    auto value_id = [&](ValueId v) {
      auto it = ids.find(v);
      if (it != ids.end()) return it->second;
      if (const auto& c = g.value(v).constant)
        return ids[v] = static_tensor(subgraph.get(), *c, xnn_dims(c->shape()));
      return define(v, XNN_INVALID_VALUE_ID, 0);
    };
    for (NodeId id : sub.node_list) add_node(g, g.node(id), sub, subgraph.get(), value_id);
    xnn_runtime_t runtime = nullptr;
    check(xnn_create_runtime_v2(subgraph.get(), xnnpack::shared_thread_pool(), 0, &runtime),
          "create runtime");
    runtime_.reset(runtime);
    for (ValueId v : sub.inputs) in_shapes_.push_back(g.value(v).shape);
    for (ValueId v : sub.outputs) out_shapes_.push_back(g.value(v).shape);
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::lock_guard<std::mutex> lock(mutex_);  // a runtime owns its intermediate buffers
    std::vector<xnn_external_value> externals;
    staging_.resize(in_shapes_.size() + out_shapes_.size());
    for (size_t i = 0; i < in_shapes_.size(); ++i) {
      const Shape& s = in_shapes_[i];
      const float* src = inputs[i]->data<float>();
      if (s.size() == 4) {  // NCHW -> NHWC at the region boundary
        staging_[i].resize(static_cast<size_t>(shape_size(s)));
        to_nhwc(src, staging_[i].data(), s[0], s[1], s[2] * s[3]);
        src = staging_[i].data();
      }
      externals.push_back({static_cast<uint32_t>(i), const_cast<float*>(src)});
    }
    std::vector<Tensor> outs;
    for (size_t o = 0; o < out_shapes_.size(); ++o) {
      outs.push_back(alloc.allocate(DType::Float32, out_shapes_[o]));
      float* dst = outs.back().data<float>();
      if (out_shapes_[o].size() == 4) {
        staging_[in_shapes_.size() + o].resize(static_cast<size_t>(shape_size(out_shapes_[o])));
        dst = staging_[in_shapes_.size() + o].data();
      }
      externals.push_back({static_cast<uint32_t>(in_shapes_.size() + o), dst});
    }
    check(xnn_setup_runtime(runtime_.get(), externals.size(), externals.data()), "setup runtime");
    check(xnn_invoke_runtime(runtime_.get()), "invoke runtime");
    for (size_t o = 0; o < out_shapes_.size(); ++o) {
      const Shape& s = out_shapes_[o];
      if (s.size() == 4)
        to_nchw(staging_[in_shapes_.size() + o].data(), outs[o].data<float>(), s[0], s[1], s[2] * s[3]);
    }
    return outs;
  }

 private:
  template <class IdOf>
  void add_node(const Graph& g, const Node& n, const SubGraph& region, xnn_subgraph_t sg, IdOf&& value_id) {
    const std::string& op = n.op_type;
    if (op == "BatchNormalization") {
      NodeId producer = g.value(n.inputs[0]).producer;
      if (producer == kNoNode || !region.nodes.contains(static_cast<size_t>(producer)) ||
          g.node(producer).op_type != "Conv" || batch_norm_after(g, g.node(producer), region.nodes) != &n)
        refuse(n.describe() + ": a BatchNormalization must follow a Conv in the same region");
      return;  // folded into that Conv
    }
    const Node* bn = op == "Conv" ? batch_norm_after(g, n, region.nodes) : nullptr;
    uint32_t out = value_id(bn ? bn->outputs[0] : n.outputs[0]);
    if (op == "Conv") {
      const Shape& x = g.value(n.inputs[0]).shape;
      const Shape& y = g.value(n.outputs[0]).shape;
      IndexSet nodes(g.nodes.size());
      nodes.add(static_cast<size_t>(&n - &g.nodes[0]));
      if (bn) nodes.add(static_cast<size_t>(bn - &g.nodes[0]));
      FoldedConv f = fold_conv(g, make_subgraph(g, nodes));  // folds the BN when present
      const Tensor& w = f.weight;
      int64_t group = n.attr_int("group", 1), m = w.dim(0), cg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
      auto st = n.attr_ints("strides", {1, 1}), dl = n.attr_ints("dilations", {1, 1}),
           pads = n.attr_ints("pads", {0, 0, 0, 0});
      std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
      int64_t begin[2] = {pads[0], pads[1]}, end[2];
      bool same = is_same_auto_pad(auto_pad, n.name);
      for (int d = 0; d < 2; ++d) {
        int64_t span = window_span(d ? kw : kh, dl[static_cast<size_t>(d)]);
        if (auto_pad == "VALID") begin[d] = 0;
        if (same)
          begin[d] = same_padding(auto_pad == "SAME_UPPER", x[static_cast<size_t>(d) + 2],
                                  st[static_cast<size_t>(d)], span)
                         .first;
        end[d] = std::max<int64_t>(0, (y[static_cast<size_t>(d) + 2] - 1) * st[static_cast<size_t>(d)] +
                                          span - x[static_cast<size_t>(d) + 2] - begin[d]);
      }
      // Weights OIHW -> [g][M/g][kh][kw][C/g]; buffers live as long as the kernel.
      weights_.emplace_back(static_cast<size_t>(w.size()));
      std::vector<float>& packed = weights_.back();
      for (int64_t o = 0; o < m; ++o)
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t i = 0; i < kh * kw; ++i)
            packed[static_cast<size_t>((o * kh * kw + i) * cg + c)] =
                w.data<float>()[(o * cg + c) * kh * kw + i];
      weights_.emplace_back(static_cast<size_t>(m), 0.0f);
      if (f.bias) std::memcpy(weights_.back().data(), f.bias->raw(), f.bias->bytes());
      std::vector<size_t> wd = {size_t(m), size_t(kh), size_t(kw), size_t(cg)}, bd = {size_t(m)};
      uint32_t wid = 0, bid = 0;
      check(xnn_define_tensor_value(sg, xnn_datatype_fp32, 4, wd.data(), packed.data(), XNN_INVALID_VALUE_ID,
                                    0, &wid),
            "weights");
      check(xnn_define_tensor_value(sg, xnn_datatype_fp32, 1, bd.data(), weights_.back().data(),
                                    XNN_INVALID_VALUE_ID, 0, &bid),
            "bias");
      check(xnn_define_convolution_2d(sg, uint32_t(begin[0]), uint32_t(end[1]), uint32_t(end[0]),
                                      uint32_t(begin[1]), uint32_t(kh), uint32_t(kw), uint32_t(st[0]),
                                      uint32_t(st[1]), uint32_t(dl[0]), uint32_t(dl[1]), uint32_t(group),
                                      size_t(cg), size_t(m / group), -INFINITY, INFINITY,
                                      value_id(n.inputs[0]), wid, bid, out, 0),
            "define convolution");
    } else if (op == "Relu" || op == "Clip") {
      float lo = op == "Relu" ? 0.0f : -INFINITY, hi = INFINITY;
      if (op == "Clip" && n.inputs.size() > 1 && n.inputs[1] != kNoValue)
        lo = float(g.value(n.inputs[1]).constant->to_double_vector()[0]);
      if (op == "Clip" && n.inputs.size() > 2 && n.inputs[2] != kNoValue)
        hi = float(g.value(n.inputs[2]).constant->to_double_vector()[0]);
      check(xnn_define_clamp(sg, lo, hi, value_id(n.inputs[0]), out, 0), "define clamp");
    } else if (op == "Add" || op == "Mul") {
      auto define = op == "Add" ? xnn_define_add2 : xnn_define_multiply2;
      check(define(sg, -INFINITY, INFINITY, value_id(n.inputs[0]), value_id(n.inputs[1]), out, 0),
            "define binary");
    } else if (op == "MaxPool") {
      const Shape& x = g.value(n.inputs[0]).shape;
      const Shape& y = g.value(n.outputs[0]).shape;
      auto ks = n.attr_ints("kernel_shape"), st = n.attr_ints("strides", {1, 1}),
           dl = n.attr_ints("dilations", {1, 1});
      auto pads = n.attr_ints("pads", {0, 0, 0, 0});
      int64_t end[2];
      for (size_t d = 0; d < 2; ++d)
        end[d] = std::max<int64_t>(0, (y[d + 2] - 1) * st[d] + (ks[d] - 1) * dl[d] + 1 - x[d + 2] - pads[d]);
      check(xnn_define_max_pooling_2d(sg, uint32_t(pads[0]), uint32_t(end[1]), uint32_t(end[0]),
                                      uint32_t(pads[1]), uint32_t(ks[0]), uint32_t(ks[1]), uint32_t(st[0]),
                                      uint32_t(st[1]), uint32_t(dl[0]), uint32_t(dl[1]), -INFINITY, INFINITY,
                                      value_id(n.inputs[0]), out, 0),
            "define max pooling");
    } else if (op == "Sub" || op == "Div") {
      auto define = op == "Sub" ? xnn_define_subtract : xnn_define_divide;
      check(define(sg, -INFINITY, INFINITY, value_id(n.inputs[0]), value_id(n.inputs[1]), out, 0),
            "define binary");
    } else if (op == "Sigmoid") {
      check(xnn_define_sigmoid(sg, value_id(n.inputs[0]), out, 0), "define sigmoid");
    } else if (op == "Softmax") {
      check(xnn_define_softmax(sg, value_id(n.inputs[0]), out, 0), "define softmax");
    } else if (op == "MatMul" || op == "Gemm") {
      const Tensor& w = *g.value(n.inputs[1]).constant;
      bool k_major = op == "MatMul" || n.attr_int("transB", 0) == 0;  // [K, N] rather than [N, K]
      uint32_t wid = static_tensor(sg, w, {size_t(w.dim(0)), size_t(w.dim(1))});
      uint32_t bid = XNN_INVALID_VALUE_ID;
      if (op == "Gemm" && n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
        const Tensor& b = *g.value(n.inputs[2]).constant;
        bid = static_tensor(sg, b, {size_t(b.size())});
      }
      check(xnn_define_fully_connected(sg, -INFINITY, INFINITY, value_id(n.inputs[0]), wid, bid, out,
                                       k_major ? XNN_FLAG_TRANSPOSE_WEIGHTS : 0),
            "define fully connected");
    } else if (op == "GlobalAveragePool") {
      check(xnn_define_global_average_pooling_2d(sg, -INFINITY, INFINITY, value_id(n.inputs[0]), out, 0),
            "define global pool");
    } else {
      refuse("no subgraph definition for " + op);
    }
  }

  // A constant the runtime reads (weights, biases, binary operands); the copy lives with the kernel.
  uint32_t static_tensor(xnn_subgraph_t sg, const Tensor& t, const std::vector<size_t>& dims) {
    weights_.emplace_back(static_cast<size_t>(t.size()));
    const std::vector<double> values = t.to_double_vector();
    std::vector<float>& data = weights_.back();
    if (t.rank() == 4) {  // NCHW constant -> NHWC, matching the region's layout
      to_nhwc(t.data<float>(), data.data(), t.dim(0), t.dim(1), t.dim(2) * t.dim(3));
    } else {
      for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(values[i]);
    }
    uint32_t id = 0;
    check(xnn_define_tensor_value(sg, xnn_datatype_fp32, dims.size(), dims.data(), data.data(),
                                  XNN_INVALID_VALUE_ID, 0, &id),
          "define constant");
    return id;
  }

  struct RuntimeDeleter {
    void operator()(xnn_runtime* r) const { xnn_delete_runtime(r); }
  };
  SubGraph sub_;
  std::unique_ptr<xnn_runtime, RuntimeDeleter> runtime_;
  std::vector<Shape> in_shapes_, out_shapes_;
  std::deque<std::vector<float>> weights_;  // deque: references stay valid as it grows
  std::vector<std::vector<float>> staging_;
  std::mutex mutex_;
};

}  // namespace

const BackendSpec& xnnpack_graph_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "xnnpack-graph";
    s.version = "0.0~git20220216";
    s.kind = BackendKind::GraphLevel;
    s.supports_node = &supported;
    s.set_threads = &xnnpack::set_threads;
    // Its single-op candidates also feed the op-level search, as in Collage.
    s.patterns.push_back(op_any({"Conv", "Relu", "Clip", "Sigmoid", "Add", "Mul", "Sub", "Div", "MatMul",
                                 "Gemm", "Softmax", "MaxPool", "GlobalAveragePool"})
                             ->where(supported));
    s.patterns.push_back(op("BatchNormalization", {op("Conv")->where(supported)})->where(supported));
    s.limits.max_nodes = 64;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
      for (NodeId n : sub.node_list)
        if (!supported(g, g.node(n))) refuse(g.node(n).describe() + " is outside what a region may hold");
      return std::make_unique<RegionKernel>(g, sub);
    };
    return s;
  }();
  return spec;
}

}  // namespace collage
