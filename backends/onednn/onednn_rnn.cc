#include "backends/onednn/onednn_rnn.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>

#include "backends/onednn/onednn_common.h"
#include "core/backend_api/pattern.h"

namespace collage::onednn {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error(ErrorKind::Unsupported, "onednn: " + why); }

bool absent(const Node& n, size_t i) { return i >= n.inputs.size() || n.inputs[i] == kNoValue; }

// ONNX orders an LSTM's gates i, o, f, c; oneDNN i, f, c, o: ONNX's gate for oneDNN's k.
constexpr int64_t kOnnxGate[4] = {0, 2, 3, 1};

dnnl::rnn_direction direction_of(const Node& n) {
  std::string d = n.attr_string("direction", "forward");
  if (d == "forward") return dnnl::rnn_direction::unidirectional_left2right;
  if (d == "reverse") return dnnl::rnn_direction::unidirectional_right2left;
  if (d == "bidirectional") return dnnl::rnn_direction::bidirectional_concat;
  refuse("LSTM direction '" + d + "'");
}

// W [D, 4H, C] or R [D, 4H, H] as oneDNN's ldigo [1, D, C, 4, H], gates reordered.
Tensor ldigo(const Tensor& w, int64_t dirs, int64_t in, int64_t hidden) {
  Tensor out(DType::Float32, {1, dirs, in, 4, hidden});
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t c = 0; c < in; ++c)
      for (int64_t k = 0; k < 4; ++k)
        for (int64_t h = 0; h < hidden; ++h)
          dst[((d * in + c) * 4 + k) * hidden + h] =
              src[(d * 4 * hidden + kOnnxGate[k] * hidden + h) * in + c];
  return out;
}

// B [D, 8H] (Wb then Rb) as oneDNN's ldgo [1, D, 4, H]: the two biases summed.
Tensor ldgo(const Tensor* b, int64_t dirs, int64_t hidden) {
  Tensor out(DType::Float32, {1, dirs, 4, hidden});
  float* dst = out.data<float>();
  std::fill(dst, dst + out.size(), 0.0f);
  if (!b) return out;
  const float* src = b->data<float>();
  for (int64_t d = 0; d < dirs; ++d)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t h = 0; h < hidden; ++h) {
        int64_t g = kOnnxGate[k] * hidden + h;
        dst[(d * 4 + k) * hidden + h] = src[d * 8 * hidden + g] + src[d * 8 * hidden + 4 * hidden + g];
      }
  return out;
}

class LstmKernel : public Kernel {
 public:
  LstmKernel(const Graph& g, const SubGraph& sub, const Node& n) {
    const Shape& xs = g.value(n.inputs[0]).shape;
    const Tensor& w = *g.value(n.inputs[1]).constant;
    const Tensor& r = *g.value(n.inputs[2]).constant;
    seq_ = xs[0], batch_ = xs[1];
    int64_t in = xs[2];
    dirs_ = w.dim(0), hidden_ = w.dim(1) / 4;
    x_input_ = input_index(g, sub, n.inputs[0]);

    memory::desc x_md({seq_, batch_, in}, dt::f32, tag::tnc);
    memory::desc state_md({1, dirs_, batch_, hidden_}, dt::f32, tag::ldnc);
    memory::desc y_md({seq_, batch_, dirs_ * hidden_}, dt::f32, tag::tnc);
    // An absent initial state is a zero memory descriptor: oneDNN starts from zeros.
    memory::desc h0_md = absent(n, 5) ? memory::desc() : state_md;
    memory::desc c0_md = absent(n, 6) ? memory::desc() : state_md;
    memory::desc wl_any({1, dirs_, in, 4, hidden_}, dt::f32, tag::any);
    memory::desc wi_any({1, dirs_, hidden_, 4, hidden_}, dt::f32, tag::any);
    memory::desc bias_md({1, dirs_, 4, hidden_}, dt::f32, tag::ldgo);
    dnnl::lstm_forward::desc d(dnnl::prop_kind::forward_inference, direction_of(n), x_md, h0_md, c0_md,
                               wl_any, wi_any, bias_md, y_md, state_md, state_md);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::lstm_forward::primitive_desc pd(d, attr, cpu());
    prim_ = dnnl::lstm_forward(pd);

    Tensor wl = ldigo(w, dirs_, in, hidden_), wi = ldigo(r, dirs_, hidden_, hidden_);
    args_[DNNL_ARG_WEIGHTS_LAYER] =
        constant_memory(wl, memory::desc(dims_of(wl.shape()), dt::f32, tag::ldigo), pd.weights_layer_desc());
    args_[DNNL_ARG_WEIGHTS_ITER] =
        constant_memory(wi, memory::desc(dims_of(wi.shape()), dt::f32, tag::ldigo), pd.weights_iter_desc());
    const Tensor* b = absent(n, 3) ? nullptr : &*g.value(n.inputs[3]).constant;
    args_[DNNL_ARG_BIAS] = constant_memory(ldgo(b, dirs_, hidden_), bias_md);
    x_ = memory(x_md, cpu(), DNNL_MEMORY_NONE);
    bind_state(g, sub, n, 5, DNNL_ARG_SRC_ITER, state_md);
    bind_state(g, sub, n, 6, DNNL_ARG_SRC_ITER_C, state_md);
    args_[DNNL_ARG_DST_LAYER] = memory(y_md, cpu());
    args_[DNNL_ARG_DST_ITER] = memory(state_md, cpu());
    args_[DNNL_ARG_DST_ITER_C] = memory(state_md, cpu());
    if (pd.scratchpad_desc().get_size() > 0) args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), cpu());

    for (ValueId v : sub.outputs) {
      auto it = std::find(n.outputs.begin(), n.outputs.end(), v);
      if (it == n.outputs.end()) refuse("LSTM kernel outputs must be the node's outputs");
      outputs_.push_back({static_cast<int>(it - n.outputs.begin()), g.value(v).shape});
    }
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::lock_guard<std::mutex> lock(mutex_);  // the destination buffers belong to this kernel
    dnnl::stream stream(cpu());
    std::unordered_map<int, memory> args = args_;
    x_.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(x_input_)]->raw()));
    args[DNNL_ARG_SRC_LAYER] = x_;
    for (auto& [arg, input] : runtime_states_) {
      input.second.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(input.first)]->raw()));
      args[arg] = input.second;
    }
    prim_.execute(stream, args);
    stream.wait();
    std::vector<Tensor> out;
    for (const auto& [slot, shape] : outputs_) {
      Tensor t = alloc.allocate(DType::Float32, shape);
      if (slot == 0)
        copy_y(static_cast<const float*>(args_.at(DNNL_ARG_DST_LAYER).get_data_handle()), t.data<float>());
      else
        std::memcpy(t.raw(), args_.at(slot == 1 ? DNNL_ARG_DST_ITER : DNNL_ARG_DST_ITER_C).get_data_handle(),
                    t.bytes());
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  static int input_index(const Graph& g, const SubGraph& sub, ValueId v) {
    auto it = std::find(sub.inputs.begin(), sub.inputs.end(), v);
    if (it == sub.inputs.end()) refuse("input '" + g.value(v).name + "' must be a runtime input");
    return static_cast<int>(it - sub.inputs.begin());
  }

  // Initial state `slot` (5: initial_h, 6: initial_c): a constant, a runtime input, or absent.
  void bind_state(const Graph& g, const SubGraph& sub, const Node& n, size_t slot, int arg,
                  const memory::desc& md) {
    if (absent(n, slot)) return;
    const Value& v = g.value(n.inputs[slot]);
    if (v.constant)
      args_[arg] = constant_memory(*v.constant, md);
    else
      runtime_states_[arg] = {input_index(g, sub, n.inputs[slot]), memory(md, cpu(), DNNL_MEMORY_NONE)};
  }

  // oneDNN's [T, N, D*H] as ONNX's Y [T, D, N, H] (the same bytes when D == 1).
  void copy_y(const float* src, float* dst) const {
    for (int64_t t = 0; t < seq_; ++t)
      for (int64_t d = 0; d < dirs_; ++d)
        for (int64_t b = 0; b < batch_; ++b)
          std::memcpy(dst + ((t * dirs_ + d) * batch_ + b) * hidden_,
                      src + (t * batch_ + b) * dirs_ * hidden_ + d * hidden_,
                      static_cast<size_t>(hidden_) * sizeof(float));
  }

  dnnl::lstm_forward prim_;
  int64_t seq_ = 0, batch_ = 0, dirs_ = 1, hidden_ = 0;
  int x_input_ = 0;
  memory x_;
  std::unordered_map<int, memory> args_;  // constants and the kernel's own destinations
  std::unordered_map<int, std::pair<int, memory>> runtime_states_;  // arg -> (kernel input, handle)
  std::vector<std::pair<int, Shape>> outputs_;                      // node output slot, shape
  std::mutex mutex_;
};

}  // namespace

bool lstm_supported(const Graph& g, const Node& n) {
  if (n.op_type != "LSTM" || absent(n, 0) || absent(n, 1) || absent(n, 2)) return false;
  if (!input_is_constant(g, n, 1) || !input_is_constant(g, n, 2) || !input_absent_or_constant(g, n, 3))
    return false;
  if (!absent(n, 4) || !absent(n, 7)) return false;  // sequence_lens, peepholes
  if (n.attr_int("layout", 0) != 0 || n.has_attr("clip") || n.attr_int("input_forget", 0) != 0) return false;
  std::string d = n.attr_string("direction", "forward");
  if (d != "forward" && d != "reverse" && d != "bidirectional") return false;
  int64_t dirs = d == "bidirectional" ? 2 : 1;
  if (n.has_attr("activations")) {
    const std::vector<std::string>& acts = n.attrs.at("activations").strings;
    if (acts.size() != 3 * static_cast<size_t>(dirs)) return false;
    for (size_t i = 0; i < acts.size(); ++i)
      if (acts[i] != (i % 3 == 0 ? "Sigmoid" : "Tanh")) return false;
  }
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& w = g.value(n.inputs[1]).shape;
  const Shape& r = g.value(n.inputs[2]).shape;
  if (x.size() != 3 || w.size() != 3 || r.size() != 3 || w[0] != dirs || w[1] % 4 != 0 || w[2] != x[2])
    return false;
  int64_t hidden = w[1] / 4;
  if (r != Shape{dirs, 4 * hidden, hidden} || shape_size(x) == 0 || hidden == 0) return false;
  if (!absent(n, 3) && g.value(n.inputs[3]).shape != Shape{dirs, 8 * hidden}) return false;
  for (size_t slot : {5, 6})
    if (!absent(n, slot) && g.value(n.inputs[slot]).shape != Shape{dirs, x[1], hidden}) return false;
  return true;
}

std::unique_ptr<Kernel> compile_lstm(const Graph& graph, const SubGraph& sub, const Node& node) {
  if (sub.node_list.size() != 1 || !lstm_supported(graph, node)) refuse("LSTM outside what oneDNN computes");
  return std::make_unique<LstmKernel>(graph, sub, node);
}

}  // namespace collage::onednn
