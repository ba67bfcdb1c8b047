// Recurrent layers RNN, GRU and LSTM (opsets 7 and 14): forward, reverse and
// bidirectional; layout 0 ([seq, batch, ...]) and 1 ([batch, seq, ...]);
// optional bias, sequence_lens, initial states and (LSTM) peepholes; activation
// lists with alpha/beta; clip; GRU linear_before_reset; LSTM input_forget.
// float32 only. Steps past a batch entry's sequence length leave zeros in Y and
// keep its last state in Y_h / Y_c, as ONNX specifies.
#include <algorithm>
#include <cmath>
#include <functional>

#include "backends/native/kernel_util.h"
#include "backends/native/native_ops.h"

namespace collage::native {

namespace {

enum class Cell { Rnn, Gru, Lstm };

using Activation = std::function<float(float)>;

// Builds activation `name`; consumes alpha/beta values in order for the functions
// that take them (defaults are those of the ONNX ops of the same name).
Activation make_activation(const Node& node, const std::string& name, const std::vector<float>& alphas,
                           const std::vector<float>& betas, size_t& ai, size_t& bi) {
  auto next = [](const std::vector<float>& v, size_t& i, float fallback) {
    return i < v.size() ? v[i++] : fallback;
  };
  if (name == "Tanh") return [](float x) { return std::tanh(x); };
  if (name == "Sigmoid") return [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
  if (name == "Relu") return [](float x) { return std::max(0.0f, x); };
  if (name == "Softsign") return [](float x) { return x / (1.0f + std::fabs(x)); };
  if (name == "Softplus") return [](float x) { return std::log1p(std::exp(x)); };
  if (name == "Affine") {
    float a = next(alphas, ai, 1.0f), b = next(betas, bi, 0.0f);
    return [a, b](float x) { return a * x + b; };
  }
  if (name == "LeakyRelu") {
    float a = next(alphas, ai, 0.01f);
    return [a](float x) { return x >= 0 ? x : a * x; };
  }
  if (name == "ThresholdedRelu") {
    float a = next(alphas, ai, 1.0f);
    return [a](float x) { return x > a ? x : 0.0f; };
  }
  if (name == "ScaledTanh") {
    float a = next(alphas, ai, 1.0f), b = next(betas, bi, 1.0f);
    return [a, b](float x) { return a * std::tanh(b * x); };
  }
  if (name == "HardSigmoid") {
    float a = next(alphas, ai, 0.2f), b = next(betas, bi, 0.5f);
    return [a, b](float x) { return std::clamp(a * x + b, 0.0f, 1.0f); };
  }
  if (name == "Elu") {
    float a = next(alphas, ai, 1.0f);
    return [a](float x) { return x >= 0 ? x : a * (std::exp(x) - 1.0f); };
  }
  unsupported(node, "activation '" + name + "' is not supported");
}

template <Cell kCell>
std::vector<Tensor> recurrent(const Node& node, KernelInputs inputs, TensorAllocator& alloc) {
  constexpr int64_t G = kCell == Cell::Rnn ? 1 : kCell == Cell::Gru ? 3 : 4;
  const Tensor& x = input(node, inputs, 0);
  const Tensor& w = input(node, inputs, 1);
  const Tensor& r = input(node, inputs, 2);
  const Tensor* b = optional_input(inputs, 3);
  const Tensor* lens = optional_input(inputs, 4);
  const Tensor* h0 = optional_input(inputs, 5);
  const Tensor* c0 = kCell == Cell::Lstm ? optional_input(inputs, 6) : nullptr;
  const Tensor* p = kCell == Cell::Lstm ? optional_input(inputs, 7) : nullptr;
  for (const Tensor* t : {&x, &w, &r, b, h0, c0, p})
    if (t) require_float(node, *t, "an input");
  std::string direction = node.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    invalid(node, "direction '" + direction + "' is not forward, reverse or bidirectional");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t layout = node.attr_int("layout", 0);
  if (layout != 0 && layout != 1) invalid(node, "layout must be 0 or 1");
  if (x.rank() != 3) invalid(node, "X must have rank 3, not " + std::to_string(x.rank()));
  int64_t seq = layout ? x.dim(1) : x.dim(0), batch = layout ? x.dim(0) : x.dim(1), in = x.dim(2);
  if (w.rank() != 3 || w.dim(0) != dirs || w.dim(2) != in || w.dim(1) % G != 0)
    invalid(node, "W has shape " + shape_to_string(w.shape()) + "; expected [" + std::to_string(dirs) + ", " +
                      std::to_string(G) + "*hidden_size, " + std::to_string(in) + "]");
  int64_t hidden = w.dim(1) / G;
  if (node.has_attr("hidden_size") && node.attr_int("hidden_size", 0) != hidden)
    invalid(node, "hidden_size " + std::to_string(node.attr_int("hidden_size", 0)) + " does not match W");
  auto check_shape = [&](const Tensor* t, const Shape& want, const char* role) {
    if (t && t->shape() != want)
      invalid(node, std::string(role) + " has shape " + shape_to_string(t->shape()) + "; expected " +
                        shape_to_string(want));
  };
  check_shape(&r, {dirs, G * hidden, hidden}, "R");
  check_shape(b, {dirs, 2 * G * hidden}, "B");
  Shape state_shape = layout ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  check_shape(h0, state_shape, "initial_h");
  check_shape(c0, state_shape, "initial_c");
  check_shape(p, {dirs, 3 * hidden}, "P");
  std::vector<int64_t> seq_len(static_cast<size_t>(batch), seq);
  if (lens) {
    if (lens->rank() != 1 || lens->dim(0) != batch) invalid(node, "sequence_lens must have shape [batch]");
    seq_len = lens->to_int64_vector();
    for (int64_t l : seq_len)
      if (l < 0 || l > seq)
        invalid(node, "sequence_lens holds " + std::to_string(l) + ", outside [0, seq_length]");
  }
  float clip = node.attr_float("clip", 0.0f);
  bool has_clip = node.has_attr("clip");
  if (has_clip && !(clip > 0)) invalid(node, "clip must be positive");
  bool lbr = kCell == Cell::Gru && node.attr_int("linear_before_reset", 0) != 0;
  bool input_forget = kCell == Cell::Lstm && node.attr_int("input_forget", 0) != 0;

  // Activations per direction: f (RNN); f, g (GRU); f, g, h (LSTM).
  const size_t per_dir = kCell == Cell::Rnn ? 1 : kCell == Cell::Gru ? 2 : 3;
  std::vector<std::string> names;
  for (const std::string& s :
       node.has_attr("activations") ? node.attrs.at("activations").strings : std::vector<std::string>{})
    names.push_back(s);
  if (names.empty()) {
    std::vector<std::string> defaults = kCell == Cell::Rnn ? std::vector<std::string>{"Tanh"}
                                        : kCell == Cell::Gru
                                            ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                            : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != per_dir * static_cast<size_t>(dirs))
    invalid(node, "activations lists " + std::to_string(names.size()) + " functions; expected " +
                      std::to_string(per_dir * static_cast<size_t>(dirs)));
  std::vector<float> alphas = node.attr_floats("activation_alpha"),
                     betas = node.attr_floats("activation_beta");
  std::vector<Activation> acts;
  size_t ai = 0, bi = 0;
  for (const auto& n : names) acts.push_back(make_activation(node, n, alphas, betas, ai, bi));

  Shape y_shape = layout ? Shape{batch, seq, dirs, hidden} : Shape{seq, dirs, batch, hidden};
  Tensor y = alloc.allocate(DType::Float32, y_shape);
  Tensor yh = alloc.allocate(DType::Float32, state_shape);
  Tensor yc = alloc.allocate(DType::Float32, state_shape);
  float* yp = y.data<float>();
  std::fill(yp, yp + y.size(), 0.0f);
  auto y_at = [&](int64_t t, int64_t d, int64_t bb) {
    return yp + (layout ? ((bb * seq + t) * dirs + d) * hidden : ((t * dirs + d) * batch + bb) * hidden);
  };
  auto state_off = [&](int64_t d, int64_t bb) { return (layout ? bb * dirs + d : d * batch + bb) * hidden; };
  const float* xp = x.data<float>();
  auto x_at = [&](int64_t t, int64_t bb) { return xp + (layout ? bb * seq + t : t * batch + bb) * in; };

  std::vector<float> xw(static_cast<size_t>(G * hidden)), hr(static_cast<size_t>(G * hidden));
  std::vector<float> reset(static_cast<size_t>(hidden)), h(static_cast<size_t>(hidden)),
      c(static_cast<size_t>(hidden)), hn(static_cast<size_t>(hidden));
  auto clipped = [&](float v) { return has_clip ? std::clamp(v, -clip, clip) : v; };
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const float* wd = w.data<float>() + d * G * hidden * in;
    const float* rd = r.data<float>() + d * G * hidden * hidden;
    const float* wb = b ? b->data<float>() + d * 2 * G * hidden : nullptr;
    const float* rb = wb ? wb + G * hidden : nullptr;
    const float* pd = p ? p->data<float>() + d * 3 * hidden : nullptr;
    const Activation& f = acts[static_cast<size_t>(d) * per_dir];
    const Activation& g = acts[static_cast<size_t>(d) * per_dir + (per_dir > 1 ? 1 : 0)];
    const Activation& hact = acts[static_cast<size_t>(d) * per_dir + (per_dir > 2 ? 2 : 0)];
    for (int64_t bb = 0; bb < batch; ++bb) {
      int64_t so = state_off(d, bb);
      for (int64_t j = 0; j < hidden; ++j) {
        h[static_cast<size_t>(j)] = h0 ? h0->data<float>()[so + j] : 0.0f;
        c[static_cast<size_t>(j)] = c0 ? c0->data<float>()[so + j] : 0.0f;
      }
      int64_t len = seq_len[static_cast<size_t>(bb)];
      for (int64_t s = 0; s < len; ++s) {
        int64_t t = reverse ? len - 1 - s : s;
        const float* xt = x_at(t, bb);
        for (int64_t gi = 0; gi < G * hidden; ++gi) {
          float a = wb ? wb[gi] : 0.0f, e = rb ? rb[gi] : 0.0f;
          for (int64_t i = 0; i < in; ++i) a += xt[i] * wd[gi * in + i];
          for (int64_t j = 0; j < hidden; ++j) e += h[static_cast<size_t>(j)] * rd[gi * hidden + j];
          xw[static_cast<size_t>(gi)] = a;
          hr[static_cast<size_t>(gi)] = e;
        }
        if constexpr (kCell == Cell::Gru)  // reset gate of every unit, needed by each candidate
          for (int64_t k = 0; k < hidden; ++k) {
            size_t q = static_cast<size_t>(hidden + k);
            reset[static_cast<size_t>(k)] = f(clipped(xw[q] + hr[q]));
          }
        for (int64_t j = 0; j < hidden; ++j) {
          auto gate = [&](int64_t k) {
            size_t q = static_cast<size_t>(k * hidden + j);
            return xw[q] + hr[q];
          };
          size_t uj = static_cast<size_t>(j);
          if constexpr (kCell == Cell::Rnn) {
            hn[uj] = f(clipped(gate(0)));
          } else if constexpr (kCell == Cell::Gru) {
            float z = f(clipped(gate(0))), rr = reset[uj];
            float cand;
            if (lbr) {
              size_t q = static_cast<size_t>(2 * hidden + j);
              cand = g(clipped(xw[q] + rr * hr[q]));
            } else {
              // (r ⊙ H) R_h^T + Rb_h: recompute the recurrent product with the reset state.
              float e = rb ? rb[2 * hidden + j] : 0.0f;
              for (int64_t k = 0; k < hidden; ++k)
                e += reset[static_cast<size_t>(k)] * h[static_cast<size_t>(k)] *
                     rd[(2 * hidden + j) * hidden + k];
              cand = g(clipped(xw[static_cast<size_t>(2 * hidden + j)] + e));
            }
            hn[uj] = (1.0f - z) * cand + z * h[uj];
          } else {
            float ci = c[uj];
            float ig = f(clipped(gate(0) + (pd ? pd[j] * ci : 0.0f)));
            float fg = input_forget ? 1.0f - ig : f(clipped(gate(2) + (pd ? pd[2 * hidden + j] * ci : 0.0f)));
            float cc = g(clipped(gate(3)));
            float cn = fg * ci + ig * cc;
            float og = f(clipped(gate(1) + (pd ? pd[hidden + j] * cn : 0.0f)));
            hn[uj] = og * hact(cn);
            c[uj] = cn;  // c[j] is read only for element j above
          }
        }
        h = hn;
        std::copy(h.begin(), h.end(), y_at(t, d, bb));
      }
      std::copy(h.begin(), h.end(), yh.data<float>() + so);
      std::copy(c.begin(), c.end(), yc.data<float>() + so);
    }
  }
  if constexpr (kCell == Cell::Lstm) return {y, yh, yc};
  return {y, yh};
}

}  // namespace

void register_rnn_ops(OpTable& table) {
  table["RNN"] = recurrent<Cell::Rnn>;
  table["GRU"] = recurrent<Cell::Gru>;
  table["LSTM"] = recurrent<Cell::Lstm>;
}

}  // namespace collage::native
