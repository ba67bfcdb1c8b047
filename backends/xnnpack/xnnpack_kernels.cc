#include "backends/xnnpack/xnnpack_kernels.h"

#include <omp.h>
#include <xnnpack.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <mutex>

#include "backends/xnnpack/omp_pthreadpool.h"
#include "core/backend_api/conv_folding.h"
#include "core/ir/conv_geometry.h"

namespace collage::xnnpack {

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "xnnpack: " + why); }

void check(xnn_status status, const char* what) {
  if (status != xnn_status_success)
    refuse(std::string(what) + " failed (status " + std::to_string(status) + ")");
}

void initialize() {
  static std::once_flag once;
  static xnn_status status = xnn_status_success;
  std::call_once(once, [] { status = xnn_initialize(nullptr); });
  check(status, "xnn_initialize");
}

// XNNPACK runs on the OpenMP workers oneDNN and OpenBLAS use (omp_pthreadpool.h).
pthreadpool_t thread_pool() { return shared_thread_pool(); }

const Tensor& constant_of(const Graph& g, ValueId v) {
  if (v == kNoValue || !g.value(v).constant) refuse("expected a constant input");
  return *g.value(v).constant;
}

int input_index(const Graph& g, const SubGraph& sub, ValueId v) {
  auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
  if (it == sub.inputs.end()) refuse("'" + g.value(v).name + "' must be a runtime input");
  return static_cast<int>(it - sub.inputs.begin());
}

// Output clamp of the group's trailing Relu / Clip (constant bounds).
void trailing_clamp(const Graph& g, const SubGraph& sub, size_t from, float& lo, float& hi) {
  lo = -INFINITY;
  hi = INFINITY;
  if (sub.node_list.size() == from) return;
  if (sub.node_list.size() != from + 1) refuse("at most one activation after the head");
  const Node& n = g.node(sub.node_list[from]);
  if (n.op_type == "Relu") {
    lo = 0.0f;
  } else if (n.op_type == "Clip") {
    if (n.inputs.size() > 1 && n.inputs[1] != kNoValue)
      lo = static_cast<float>(constant_of(g, n.inputs[1]).to_double_vector().at(0));
    if (n.inputs.size() > 2 && n.inputs[2] != kNoValue)
      hi = static_cast<float>(constant_of(g, n.inputs[2]).to_double_vector().at(0));
  } else {
    refuse(n.op_type + " cannot be fused as an output clamp");
  }
}

void nchw_to_nhwc(const float* in, float* out, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* src = in + (b * c + ch) * hw;
      float* dst = out + b * hw * c + ch;
      for (int64_t p = 0; p < hw; ++p) dst[p * c] = src[p];
    }
}

void nhwc_to_nchw(const float* in, float* out, int64_t n, int64_t c, int64_t hw) {
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* src = in + b * hw * c + ch;
      float* dst = out + (b * c + ch) * hw;
      for (int64_t p = 0; p < hw; ++p) dst[p] = src[p * c];
    }
}

struct OperatorDeleter {
  void operator()(xnn_operator* op) const { xnn_delete_operator(op); }
};
using Operator = std::unique_ptr<xnn_operator, OperatorDeleter>;

class XnnKernel : public Kernel {
 public:
  enum class Kind { Conv, FullyConnected, MaxPool, AvgPool, GlobalAvgPool, Binary, Clamp };

  XnnKernel(Kind kind, Operator op, Shape in_shape, Shape out_shape, std::vector<int> inputs,
            Shape in2_shape = {})
      : kind_(kind),
        op_(std::move(op)),
        in_(std::move(in_shape)),
        out_(std::move(out_shape)),
        inputs_(std::move(inputs)),
        in2_(std::move(in2_shape)) {}

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_);
    const float* x = inputs[static_cast<size_t>(inputs_[0])]->data<float>();
    std::lock_guard<std::mutex> lock(mutex_);  // an operator holds per-setup state
    pthreadpool_t tp = thread_pool();
    switch (kind_) {
      case Kind::Conv:
      case Kind::MaxPool:
      case Kind::AvgPool:
      case Kind::GlobalAvgPool:
        run_spatial(x, y.data<float>(), tp);
        break;
      case Kind::FullyConnected: {
        size_t batch = static_cast<size_t>(shape_size(in_) / in_.back());
        check(xnn_setup_fully_connected_nc_f32(op_.get(), batch, x, y.data<float>(), tp),
              "setup fully connected");
        check(xnn_run_operator(op_.get(), tp), "run fully connected");
        break;
      }
      case Kind::Binary: {
        std::vector<size_t> a(in_.begin(), in_.end()), b(in2_.begin(), in2_.end());
        const float* x2 = inputs[static_cast<size_t>(inputs_[1])]->data<float>();
        xnn_status s = binary_is_mul_ ? xnn_setup_multiply_nd_f32(op_.get(), a.size(), a.data(), b.size(),
                                                                  b.data(), x, x2, y.data<float>(), tp)
                                      : xnn_setup_add_nd_f32(op_.get(), a.size(), a.data(), b.size(),
                                                             b.data(), x, x2, y.data<float>(), tp);
        check(s, "setup binary");
        check(xnn_run_operator(op_.get(), tp), "run binary");
        break;
      }
      case Kind::Clamp:
        check(xnn_setup_clamp_nc_f32(op_.get(), static_cast<size_t>(shape_size(in_)), x, y.data<float>(), tp),
              "setup clamp");
        check(xnn_run_operator(op_.get(), tp), "run clamp");
        break;
    }
    return {y};
  }

  bool binary_is_mul_ = false;

 private:
  void run_spatial(const float* x, float* y, pthreadpool_t tp) {
    int64_t n = in_[0], c = in_[1], h = in_[2], w = in_[3];
    int64_t oc = out_[1], oh = out_.size() > 2 ? out_[2] : 1, ow = out_.size() > 3 ? out_[3] : 1;
    nhwc_in_.resize(static_cast<size_t>(n * c * h * w));
    nhwc_out_.resize(static_cast<size_t>(n * oc * oh * ow));
    nchw_to_nhwc(x, nhwc_in_.data(), n, c, h * w);
    xnn_status s;
    if (kind_ == Kind::Conv)
      s = xnn_setup_convolution2d_nhwc_f32(op_.get(), static_cast<size_t>(n), static_cast<size_t>(h),
                                           static_cast<size_t>(w), nhwc_in_.data(), nhwc_out_.data(), tp);
    else if (kind_ == Kind::MaxPool)
      s = xnn_setup_max_pooling2d_nhwc_f32(op_.get(), static_cast<size_t>(n), static_cast<size_t>(h),
                                           static_cast<size_t>(w), nhwc_in_.data(), nhwc_out_.data(), tp);
    else if (kind_ == Kind::AvgPool)
      s = xnn_setup_average_pooling2d_nhwc_f32(op_.get(), static_cast<size_t>(n), static_cast<size_t>(h),
                                               static_cast<size_t>(w), nhwc_in_.data(), nhwc_out_.data(), tp);
    else
      s = xnn_setup_global_average_pooling_nwc_f32(op_.get(), static_cast<size_t>(n),
                                                   static_cast<size_t>(h * w), nhwc_in_.data(),
                                                   nhwc_out_.data(), tp);
    check(s, "setup");
    check(xnn_run_operator(op_.get(), tp), "run");
    nhwc_to_nchw(nhwc_out_.data(), y, n, oc, oh * ow);
  }

  Kind kind_;
  Operator op_;
  Shape in_, out_;
  std::vector<int> inputs_;
  Shape in2_;
  std::vector<float> nhwc_in_, nhwc_out_;  // per-kernel scratch, guarded by mutex_
  std::mutex mutex_;
};

std::unique_ptr<Kernel> compile_conv(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  FoldedConv folded = fold_conv(g, sub);  // a following BatchNormalization folds into W and b
  const Tensor& w = folded.weight;
  if (xs.size() != 4) refuse("only 2-D convolutions");
  int64_t group = n.attr_int("group", 1), m = w.dim(0), cg = w.dim(1), kh = w.dim(2), kw = w.dim(3),
          mg = m / group;
  auto strides = n.attr_ints("strides", {1, 1}), dils = n.attr_ints("dilations", {1, 1});
  auto pads = n.attr_ints("pads", {0, 0, 0, 0});
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  int64_t pt = pads[0], pl = pads[1];
  if (auto_pad == "VALID") pt = pl = 0;
  std::array<int64_t, 2> in_hw = {xs[2], xs[3]}, out_hw = {ys[2], ys[3]}, k = {kh, kw};
  std::array<int64_t, 2> begin = {pt, pl}, end{};
  bool same = is_same_auto_pad(auto_pad, n.name);
  for (size_t d = 0; d < 2; ++d) {
    int64_t span = window_span(k[d], dils[d]);
    if (same) begin[d] = same_padding(auto_pad == "SAME_UPPER", in_hw[d], strides[d], span).first;
    end[d] = (out_hw[d] - 1) * strides[d] + span - in_hw[d] - begin[d];
    if (end[d] < 0) end[d] = 0;  // trailing rows that no window reaches
  }
  // ONNX [M, C/g, kh, kw] -> XNNPACK [g][M/g][kh][kw][C/g].
  std::vector<float> packed(static_cast<size_t>(w.size()));
  for (int64_t o = 0; o < m; ++o)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t x = 0; x < kw; ++x)
          packed[static_cast<size_t>(((o * kh + y) * kw + x) * cg + c)] =
              w.data<float>()[((o * cg + c) * kh + y) * kw + x];
  std::vector<float> bias(static_cast<size_t>(m), 0.0f);
  if (folded.bias) std::memcpy(bias.data(), folded.bias->raw(), folded.bias->bytes());
  float lo, hi;
  trailing_clamp(g, sub, folded.nodes_used, lo, hi);
  xnn_operator_t op = nullptr;
  check(xnn_create_convolution2d_nhwc_f32(
            static_cast<uint32_t>(begin[0]), static_cast<uint32_t>(end[1]), static_cast<uint32_t>(end[0]),
            static_cast<uint32_t>(begin[1]), static_cast<uint32_t>(kh), static_cast<uint32_t>(kw),
            static_cast<uint32_t>(strides[0]), static_cast<uint32_t>(strides[1]),
            static_cast<uint32_t>(dils[0]), static_cast<uint32_t>(dils[1]), static_cast<uint32_t>(group),
            static_cast<size_t>(cg), static_cast<size_t>(mg), static_cast<size_t>(group * cg),
            static_cast<size_t>(m), packed.data(), bias.data(), lo, hi, 0, &op),
        "create convolution");
  return std::make_unique<XnnKernel>(XnnKernel::Kind::Conv, Operator(op), xs,
                                     g.value(sub.outputs.at(0)).shape,
                                     std::vector<int>{input_index(g, sub, n.inputs[0])});
}

std::unique_ptr<Kernel> compile_dense(const Graph& g, const SubGraph& sub, const Node& n) {
  bool gemm = n.op_type == "Gemm";
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Tensor& w = constant_of(g, n.inputs[1]);
  if (w.rank() != 2) refuse("weights must be 2-D");
  bool trans_b = gemm && n.attr_int("transB", 0) != 0;
  int64_t in = trans_b ? w.dim(1) : w.dim(0), out = trans_b ? w.dim(0) : w.dim(1);
  std::vector<float> bias(static_cast<size_t>(out), 0.0f);
  size_t next = 1;
  auto take_bias = [&](const Tensor& b) {
    if (b.size() == out)
      std::memcpy(bias.data(), b.raw(), b.bytes());
    else if (b.size() == 1)
      std::fill(bias.begin(), bias.end(), b.data<float>()[0]);
    else
      refuse("bias must be per output channel");
  };
  if (gemm && n.inputs.size() > 2 && n.inputs[2] != kNoValue) take_bias(constant_of(g, n.inputs[2]));
  if (!gemm && sub.node_list.size() > 1 && g.node(sub.node_list[1]).op_type == "Add") {
    const Node& add = g.node(sub.node_list[1]);
    take_bias(constant_of(g, add.inputs[0] == n.outputs[0] ? add.inputs[1] : add.inputs[0]));
    next = 2;
  }
  float lo, hi;
  trailing_clamp(g, sub, next, lo, hi);
  xnn_operator_t op = nullptr;
  check(xnn_create_fully_connected_nc_f32(static_cast<size_t>(in), static_cast<size_t>(out),
                                          static_cast<size_t>(in), static_cast<size_t>(out), w.data<float>(),
                                          bias.data(), lo, hi, trans_b ? 0 : XNN_FLAG_TRANSPOSE_WEIGHTS, &op),
        "create fully connected");
  return std::make_unique<XnnKernel>(XnnKernel::Kind::FullyConnected, Operator(op), xs,
                                     g.value(sub.outputs.at(0)).shape,
                                     std::vector<int>{input_index(g, sub, n.inputs[0])});
}

std::unique_ptr<Kernel> compile_pool(const Graph& g, const SubGraph& sub, const Node& n) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  if (xs.size() != 4) refuse("only 2-D pooling");
  float lo, hi;
  trailing_clamp(g, sub, 1, lo, hi);
  xnn_operator_t op = nullptr;
  XnnKernel::Kind kind;
  size_t c = static_cast<size_t>(xs[1]);
  if (n.op_type == "GlobalAveragePool") {
    kind = XnnKernel::Kind::GlobalAvgPool;
    check(xnn_create_global_average_pooling_nwc_f32(c, c, c, lo, hi, 0, &op),
          "create global average pooling");
  } else {
    auto ks = n.attr_ints("kernel_shape"), st = n.attr_ints("strides", {1, 1}),
         dl = n.attr_ints("dilations", {1, 1});
    auto pads = n.attr_ints("pads", {0, 0, 0, 0});
    std::array<int64_t, 2> end{};
    for (size_t d = 0; d < 2; ++d)
      end[d] = (ys[d + 2] - 1) * st[d] + (ks[d] - 1) * dl[d] + 1 - xs[d + 2] - pads[d];
    if (n.op_type == "MaxPool") {
      kind = XnnKernel::Kind::MaxPool;
      check(xnn_create_max_pooling2d_nhwc_f32(
                static_cast<uint32_t>(pads[0]), static_cast<uint32_t>(std::max<int64_t>(0, end[1])),
                static_cast<uint32_t>(std::max<int64_t>(0, end[0])), static_cast<uint32_t>(pads[1]),
                static_cast<uint32_t>(ks[0]), static_cast<uint32_t>(ks[1]), static_cast<uint32_t>(st[0]),
                static_cast<uint32_t>(st[1]), static_cast<uint32_t>(dl[0]), static_cast<uint32_t>(dl[1]), c,
                c, c, lo, hi, 0, &op),
            "create max pooling");
    } else {
      kind = XnnKernel::Kind::AvgPool;
      check(xnn_create_average_pooling2d_nhwc_f32(0, 0, 0, 0, static_cast<uint32_t>(ks[0]),
                                                  static_cast<uint32_t>(ks[1]), static_cast<uint32_t>(st[0]),
                                                  static_cast<uint32_t>(st[1]), c, c, c, lo, hi, 0, &op),
            "create average pooling");
    }
  }
  return std::make_unique<XnnKernel>(kind, Operator(op), xs, g.value(sub.outputs.at(0)).shape,
                                     std::vector<int>{input_index(g, sub, n.inputs[0])});
}

std::unique_ptr<Kernel> compile_binary(const Graph& g, const SubGraph& sub, const Node& n) {
  float lo, hi;
  trailing_clamp(g, sub, 1, lo, hi);
  for (ValueId v : n.inputs)
    if (g.value(v).constant) refuse("constant operands (the spec claims runtime operands only)");
  xnn_operator_t op = nullptr;
  bool mul = n.op_type == "Mul";
  check(mul ? xnn_create_multiply_nd_f32(lo, hi, 0, &op) : xnn_create_add_nd_f32(lo, hi, 0, &op),
        "create binary");
  auto k = std::make_unique<XnnKernel>(
      XnnKernel::Kind::Binary, Operator(op), g.value(n.inputs[0]).shape, g.value(sub.outputs.at(0)).shape,
      std::vector<int>{input_index(g, sub, n.inputs[0]), input_index(g, sub, n.inputs[1])},
      g.value(n.inputs[1]).shape);
  k->binary_is_mul_ = mul;
  return k;
}

std::unique_ptr<Kernel> compile_clamp(const Graph& g, const SubGraph& sub, const Node& n) {
  float lo, hi;
  trailing_clamp(g, sub, 0, lo, hi);
  xnn_operator_t op = nullptr;
  check(xnn_create_clamp_nc_f32(1, 1, 1, lo, hi, 0, &op), "create clamp");
  return std::make_unique<XnnKernel>(XnnKernel::Kind::Clamp, Operator(op), g.value(n.inputs[0]).shape,
                                     g.value(sub.outputs.at(0)).shape,
                                     std::vector<int>{input_index(g, sub, n.inputs[0])});
}

}  // namespace

std::unique_ptr<Kernel> compile(const Graph& graph, const SubGraph& sub, const CompileOptions&) {
  initialize();
  if (sub.outputs.size() != 1) refuse("one output expected");
  const Node& head = graph.node(sub.node_list.at(0));
  const std::string& op = head.op_type;
  if (op == "Conv") return compile_conv(graph, sub, head);
  if (op == "Gemm" || op == "MatMul") return compile_dense(graph, sub, head);
  if (op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool")
    return compile_pool(graph, sub, head);
  if (op == "Add" || op == "Mul") return compile_binary(graph, sub, head);
  if (op == "Relu" || op == "Clip") return compile_clamp(graph, sub, head);
  refuse("no operator for " + op);
}

// OpenMP's thread count is per calling thread: callers set it on the thread that runs kernels.
void set_threads(int threads) { omp_set_num_threads(threads); }

}  // namespace collage::xnnpack
