#include "resources/samples/zoo_modern.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace collage::samples {

namespace {

using B = OnnxBuilder;

struct Scope {
  Scope(B& b, const std::string& s) : b_(b) { b_.push_scope(s); }
  ~Scope() { b_.pop_scope(); }
  B& b_;
};

// gelu(approximate='tanh') as opset 17 writes it: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
std::string gelu_tanh(B& b, const std::string& x) {
  std::string cube = b.op("Pow", {x, b.float_constant(3.0f)});
  std::string inner = b.op("Add", {x, b.op("Mul", {cube, b.float_constant(0.044715f)})});
  std::string t = b.op("Tanh", {b.op("Mul", {inner, b.float_constant(std::sqrt(2.0f / 3.14159265f))})});
  std::string one_plus = b.op("Add", {t, b.float_constant(1.0f)});
  return b.op("Mul", {b.op("Mul", {x, b.float_constant(0.5f)}), one_plus});
}

// Pre-LN transformer block (ViT, GPT-2): x + attn(ln_1(x)), then + mlp(ln_2(x)). `masked`
// (bool [seq, seq], true = hidden) is applied as masked_fill exports it: Where(mask, fill, s).
std::string pre_ln_block(B& b, const std::string& x, int64_t seq, int64_t d, int64_t heads,
                         const std::string& masked, bool tanh_gelu,
                         float fill = std::numeric_limits<float>::lowest()) {
  const int64_t dh = d / heads;
  std::string attended;
  {
    Scope a(b, "attn");
    std::string h;
    {
      Scope n(b, "ln_1");
      h = b.layer_norm(x, d);
    }
    auto heads_of = [&](const std::string& scope, bool key) {
      Scope q(b, scope);
      std::string r = b.dynamic_reshape(b.linear(h, d, d, false), {seq, heads, dh});
      return b.op(
          "Transpose", {r},
          {B::attr("perm", key ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3})});
    };
    std::string q = heads_of("q_proj", false), k = heads_of("k_proj", true), v = heads_of("v_proj", false);
    std::string scores =
        b.op("Div", {b.op("MatMul", {q, k}), b.float_constant(std::sqrt(static_cast<float>(dh)))});
    if (!masked.empty()) scores = b.op("Where", {masked, b.float_constant(fill), scores});
    std::string ctx = b.op("MatMul", {b.op("Softmax", {scores}, {B::attr("axis", int64_t{-1})}), v});
    ctx = b.op("Transpose", {ctx}, {B::attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
    ctx = b.dynamic_reshape(ctx, {seq, d});
    Scope o(b, "out_proj");
    attended = b.op("Add", {x, b.linear(ctx, d, d, false)});
  }
  Scope m(b, "mlp");
  std::string h;
  {
    Scope n(b, "ln_2");
    h = b.layer_norm(attended, d);
  }
  {
    Scope f(b, "fc1");
    h = b.linear(h, d, 4 * d, false);
  }
  h = tanh_gelu ? gelu_tanh(b, h) : b.gelu(h);
  Scope f(b, "fc2");
  return b.op("Add", {attended, b.linear(h, 4 * d, d, false)});
}

}  // namespace

OnnxBuilder vit_small(uint64_t seed) {
  const int64_t d = 64, heads = 4, patch = 8, image = 64, grid = image / patch, seq = grid * grid + 1;
  B b("vit_small", 17, seed);
  std::string img = b.input("pixel_values", DType::Float32, {std::string("batch"), 3, image, image});
  std::string x;
  {
    Scope s(b, "patch_embed");
    std::string p = b.conv(img, 3, d, patch, patch, 0);                            // [b, d, 8, 8]
    p = b.dynamic_reshape(p, {d, grid * grid});                                    // flatten(2)
    x = b.op("Transpose", {p}, {B::attr("perm", std::vector<int64_t>{0, 2, 1})});  // [b, 64, d]
  }
  {
    // cls_token.expand(B, -1, -1), then cat along the sequence, then + pos_embed.
    std::string batch = b.op("Gather", {b.op("Shape", {img}), b.constant_node({0}, true)});
    std::string target =
        b.op("Concat", {b.op("Unsqueeze", {batch, b.constant_node({0})}), b.constant_node({1, d})},
             {B::attr("axis", int64_t{0})});
    std::string cls = b.op("Expand", {b.random_normal("cls_token", {1, 1, d}, 0.02f), target});
    x = b.op("Concat", {cls, x}, {B::attr("axis", int64_t{1})});
    x = b.op("Add", {x, b.random_normal("pos_embed", {1, seq, d}, 0.02f)});
  }
  for (int l = 0; l < 2; ++l) {
    Scope s(b, "blocks." + std::to_string(l));
    x = pre_ln_block(b, x, seq, d, heads, "", false);
  }
  {
    Scope n(b, "norm");
    x = b.layer_norm(x, d);
  }
  std::string cls_out = b.op("Gather", {x, b.constant_node({0}, true)}, {B::attr("axis", int64_t{1})});
  Scope h(b, "head");
  b.output(b.linear(cls_out, d, 10, true), "logits", {std::string("batch"), 10});
  return b;
}

namespace {

struct DecoderShape {
  int64_t layers = 2, d = 64, heads = 4, seq = 32, vocab = 100;
};

OnnxBuilder gpt_decoder(const std::string& name, uint64_t seed, float mask_fill, DecoderShape shape = {}) {
  const int64_t d = shape.d, heads = shape.heads, seq = shape.seq, vocab = shape.vocab;
  B b(name, 17, seed);
  std::string ids = b.input("input_ids", DType::Int64, {std::string("batch"), seq});
  std::string x = b.op("Gather", {b.random_normal("wte.weight", {vocab, d}, 0.02f), ids});
  x = b.op("Add", {x, b.random_normal("wpe.weight", {seq, d}, 0.01f)});
  std::string masked;
  {
    // torch.tril(torch.ones(seq, seq)) == 0: true above the diagonal (future tokens).
    Scope s(b, "causal_mask");
    Tensor ones(DType::Float32, {seq, seq});
    for (int64_t i = 0; i < seq * seq; ++i) ones.data<float>()[i] = 1.0f;
    std::string tril =
        b.op("Trilu", {b.initializer("causal_mask.ones", ones)}, {B::attr("upper", int64_t{0})});
    masked = b.op("Equal", {tril, b.float_constant(0.0f)});
  }
  for (int64_t l = 0; l < shape.layers; ++l) {
    Scope s(b, "h." + std::to_string(l));
    x = pre_ln_block(b, x, seq, d, heads, masked, true, mask_fill);
  }
  {
    Scope n(b, "ln_f");
    x = b.layer_norm(x, d);
  }
  Scope h(b, "lm_head");
  b.output(b.op("MatMul", {x, b.random_normal("lm_head.weight_t", {d, vocab}, 0.05f)}), "logits",
           {std::string("batch"), seq, vocab});
  return b;
}

}  // namespace

OnnxBuilder gpt_block(uint64_t seed) {
  return gpt_decoder("gpt_block", seed, std::numeric_limits<float>::lowest());
}

OnnxBuilder gpt_block_inf_mask(uint64_t seed) {
  return gpt_decoder("gpt_block_inf_mask", seed, -std::numeric_limits<float>::infinity());
}

OnnxBuilder gpt2_small(uint64_t seed) {
  return gpt_decoder("gpt2_small", seed, -std::numeric_limits<float>::infinity(), {12, 768, 12, 128, 50257});
}

namespace {

// RMSNorm as LlamaRMSNorm exports it: x * rsqrt(mean(x²) + eps) * weight.
std::string rms_norm(B& b, const std::string& x, const std::string& weight_name, int64_t d) {
  std::string ms = b.op("ReduceMean", {b.op("Pow", {x, b.float_constant(2.0f)})},
                        {B::attr("axes", std::vector<int64_t>{-1}), B::attr("keepdims", int64_t{1})});
  std::string inv = b.op("Reciprocal", {b.op("Sqrt", {b.op("Add", {ms, b.float_constant(1e-6f)})})});
  Tensor w(DType::Float32, {d});
  for (int64_t i = 0; i < d; ++i) w.data<float>()[i] = 1.0f;
  return b.op("Mul", {b.initializer(weight_name, w), b.op("Mul", {x, inv})});
}

// x[..., lo:hi] along the last axis, as tensor slicing exports it.
std::string slice_last(B& b, const std::string& x, int64_t lo, int64_t hi) {
  return b.op("Slice", {x, b.constant_node({lo}), b.constant_node({hi}), b.constant_node({-1})});
}

// q·cos + rotate_half(q)·sin, rotate_half(q) = cat(-q[..., h/2:], q[..., :h/2]).
std::string rotary(B& b, const std::string& x, const std::string& cos, const std::string& sin, int64_t dh) {
  std::string rotated =
      b.op("Concat", {b.op("Neg", {slice_last(b, x, dh / 2, dh)}), slice_last(b, x, 0, dh / 2)},
           {B::attr("axis", int64_t{-1})});
  return b.op("Add", {b.op("Mul", {x, cos}), b.op("Mul", {rotated, sin})});
}

}  // namespace

OnnxBuilder llama_decoder_8k(uint64_t seed) {
  const int64_t layers = 12, heads = 28, dh = 8, d = heads * dh, ffn = 608, seq = 64, vocab = 320;
  B b("llama_decoder_8k", 17, seed);
  std::string ids = b.input("input_ids", DType::Int64, {std::string("batch"), seq});
  std::string x = b.op("Gather", {b.random_normal("model.embed_tokens.weight", {vocab, d}, 0.02f), ids});
  // Rotary tables [seq, dh] and the additive causal mask [seq, seq] (finfo.min above the diagonal).
  Tensor cos_t(DType::Float32, {seq, dh}), sin_t(DType::Float32, {seq, dh}),
      mask_t(DType::Float32, {seq, seq});
  for (int64_t p = 0; p < seq; ++p) {
    for (int64_t i = 0; i < dh; ++i) {
      const double angle =
          static_cast<double>(p) / std::pow(10000.0, static_cast<double>(2 * (i % (dh / 2))) / dh);
      cos_t.data<float>()[p * dh + i] = static_cast<float>(std::cos(angle));
      sin_t.data<float>()[p * dh + i] = static_cast<float>(std::sin(angle));
    }
    for (int64_t q = 0; q < seq; ++q)
      mask_t.data<float>()[p * seq + q] = q > p ? std::numeric_limits<float>::lowest() : 0.0f;
  }
  const std::string cos = b.initializer("model.rotary_emb.cos", cos_t),
                    sin = b.initializer("model.rotary_emb.sin", sin_t),
                    mask = b.initializer("model.causal_mask", mask_t);
  const float wsd = 1.0f / std::sqrt(static_cast<float>(d));
  for (int64_t l = 0; l < layers; ++l) {
    const std::string layer = "model.layers." + std::to_string(l);
    Scope s(b, "model/layers." + std::to_string(l));
    std::string attended;
    {
      Scope a(b, "self_attn");
      std::string h;
      {
        Scope n(b, "input_layernorm");
        h = rms_norm(b, x, layer + ".input_layernorm.weight", d);
      }
      auto proj = [&](const std::string& which) {
        Scope p(b, which);
        return b.op("MatMul", {h, b.random_normal(layer + ".self_attn." + which + ".weight_t", {d, d}, wsd)});
      };
      std::string q = proj("q_proj"), k = proj("k_proj"), v = proj("v_proj");
      // Every head written out: its slices, rotary, scores, causal mask, softmax, context.
      std::vector<std::string> contexts;
      for (int64_t hd = 0; hd < heads; ++hd) {
        Scope head(b, "head." + std::to_string(hd));
        std::string qh = rotary(b, slice_last(b, q, hd * dh, (hd + 1) * dh), cos, sin, dh);
        std::string kh = rotary(b, slice_last(b, k, hd * dh, (hd + 1) * dh), cos, sin, dh);
        std::string vh = slice_last(b, v, hd * dh, (hd + 1) * dh);
        std::string kt = b.op("Transpose", {kh}, {B::attr("perm", std::vector<int64_t>{0, 2, 1})});
        std::string scores =
            b.op("Div", {b.op("MatMul", {qh, kt}), b.float_constant(std::sqrt(static_cast<float>(dh)))});
        std::string probs = b.op("Softmax", {b.op("Add", {scores, mask})}, {B::attr("axis", int64_t{-1})});
        contexts.push_back(b.op("MatMul", {probs, vh}));
      }
      std::string ctx = b.op("Concat", contexts, {B::attr("axis", int64_t{-1})});
      Scope o(b, "o_proj");
      attended = b.op(
          "Add",
          {x, b.op("MatMul", {ctx, b.random_normal(layer + ".self_attn.o_proj.weight_t", {d, d}, wsd)})});
    }
    Scope m(b, "mlp");
    std::string h;
    {
      Scope n(b, "post_attention_layernorm");
      h = rms_norm(b, attended, layer + ".post_attention_layernorm.weight", d);
    }
    std::string gate = b.op("MatMul", {h, b.random_normal(layer + ".mlp.gate_proj.weight_t", {d, ffn}, wsd)});
    std::string up = b.op("MatMul", {h, b.random_normal(layer + ".mlp.up_proj.weight_t", {d, ffn}, wsd)});
    std::string act = b.op("Mul", {b.op("Mul", {gate, b.op("Sigmoid", {gate})}), up});  // SiLU(gate) * up
    Scope dn(b, "down_proj");
    x = b.op("Add",
             {attended, b.op("MatMul", {act, b.random_normal(layer + ".mlp.down_proj.weight_t", {ffn, d},
                                                             1.0f / std::sqrt(static_cast<float>(ffn)))})});
  }
  {
    Scope n(b, "model/norm");
    x = rms_norm(b, x, "model.norm.weight", d);
  }
  Scope h(b, "lm_head");
  b.output(b.op("MatMul", {x, b.random_normal("lm_head.weight_t", {d, vocab}, wsd)}), "logits",
           {std::string("batch"), seq, vocab});
  return b;
}

OnnxBuilder lstm_classifier(uint64_t seed) {
  const int64_t seq = 24, emb = 32, hidden = 48, vocab = 200, classes = 4;
  B b("lstm_classifier", 17, seed);
  std::string ids = b.input("input_ids", DType::Int64, {std::string("batch"), seq});
  std::string x = b.op("Gather", {b.random_normal("embedding.weight", {vocab, emb}, 0.1f), ids});
  // nn.LSTM(batch_first=True) exports as a Transpose to [seq, batch, emb] and an ONNX LSTM
  // with gates in i, o, f, c order.
  x = b.op("Transpose", {x}, {B::attr("perm", std::vector<int64_t>{1, 0, 2})});
  std::vector<std::string> lstm;
  {
    Scope s(b, "lstm");
    float sd = 1.0f / std::sqrt(static_cast<float>(hidden));
    lstm = b.node("LSTM",
                  {x, b.random_normal("lstm.W", {1, 4 * hidden, emb}, sd),
                   b.random_normal("lstm.R", {1, 4 * hidden, hidden}, sd),
                   b.random_normal("lstm.B", {1, 8 * hidden}, sd)},
                  {B::attr("hidden_size", hidden)}, 3);
  }
  std::string last = b.op("Squeeze", {lstm[1], b.constant_node({0})});  // Y_h [1, batch, hidden]
  Scope f(b, "fc");
  b.output(b.linear(last, hidden, classes, true), "logits", {std::string("batch"), classes});
  return b;
}

OnnxBuilder segmentation_head(uint64_t seed) {
  const int64_t classes = 5, image = 64;
  B b("segmentation_head", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, image, image});
  const int64_t widths[] = {16, 32, 64};
  int64_t cin = 3;
  for (int i = 0; i < 3; ++i) {
    Scope s(b, "backbone/conv" + std::to_string(i + 1));
    x = b.relu(b.conv(x, cin, widths[i], 3, i == 0 ? 1 : 2, 1));
    cin = widths[i];
  }
  {
    Scope s(b, "classifier");
    x = b.conv(x, cin, classes, 1, 1, 0);
  }
  // F.interpolate(scale_factor=4, mode='bilinear', align_corners=False), then argmax(dim=1).
  Tensor scales(DType::Float32, {4});
  const float s4[] = {1, 1, 4, 4};
  for (int i = 0; i < 4; ++i) scales.data<float>()[i] = s4[i];
  x = b.op("Resize", {x, "", b.initializer("upsample.scales", scales)},
           {B::attr("mode", std::string("linear")),
            B::attr("coordinate_transformation_mode", std::string("pytorch_half_pixel"))});
  b.output(b.op("ArgMax", {x}, {B::attr("axis", int64_t{1}), B::attr("keepdims", int64_t{0})}), "labels",
           {std::string("batch"), image, image}, DType::Int64);
  return b;
}

}  // namespace collage::samples
