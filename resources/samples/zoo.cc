#include "resources/samples/zoo.h"

#include <array>
#include <cmath>
#include <functional>
#include <map>

namespace collage::samples {

namespace {

using B = OnnxBuilder;

struct Scope {
  Scope(B& b, const std::string& s) : b_(b) { b_.push_scope(s); }
  ~Scope() { b_.pop_scope(); }
  B& b_;
};

std::string head(B& b, const std::string& x, int64_t channels, int64_t classes) {
  std::string p = b.op("GlobalAveragePool", {x});
  std::string f = b.op("Flatten", {p}, {B::attr("axis", int64_t{1})});
  Scope s(b, "fc");
  return b.linear(f, channels, classes, true);
}

// ---- ResNet family -------------------------------------------------------------
std::string basic_block(B& b, const std::string& x, int64_t cin, int64_t cout, int64_t stride, bool bn,
                        int spatial) {
  std::string y;
  {
    Scope s(b, "conv1");
    y = b.conv(x, cin, cout, 3, stride, 1, 1, !bn, spatial);
  }
  if (bn) {
    Scope s(b, "bn1");
    y = b.batch_norm(y, cout);
  }
  y = b.relu(y);
  {
    Scope s(b, "conv2");
    y = b.conv(y, cout, cout, 3, 1, 1, 1, !bn, spatial);
  }
  if (bn) {
    Scope s(b, "bn2");
    y = b.batch_norm(y, cout);
  }
  std::string shortcut = x;
  if (stride != 1 || cin != cout) {
    Scope s(b, "downsample");
    shortcut = b.conv(x, cin, cout, 1, stride, 0, 1, !bn, spatial);
    if (bn) shortcut = b.batch_norm(shortcut, cout);
  }
  return b.relu(b.op("Add", {y, shortcut}));
}

std::string bottleneck(B& b, const std::string& x, int64_t cin, int64_t width, int64_t stride) {
  int64_t cout = width * 4;
  std::string y;
  {
    Scope s(b, "conv1");
    y = b.relu(b.conv(x, cin, width, 1, 1, 0));
  }
  {
    Scope s(b, "conv2");
    y = b.relu(b.conv(y, width, width, 3, stride, 1));
  }
  {
    Scope s(b, "conv3");
    y = b.conv(y, width, cout, 1, 1, 0);
  }
  std::string shortcut = x;
  if (stride != 1 || cin != cout) {
    Scope s(b, "downsample");
    shortcut = b.conv(x, cin, cout, 1, stride, 0);
  }
  return b.relu(b.op("Add", {y, shortcut}));
}

B resnet_small(uint64_t seed) {
  B b("resnet_small", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 64, 64});
  {
    Scope s(b, "conv1");
    x = b.conv(x, 3, 16, 3, 1, 1, 1, false);
  }
  {
    Scope s(b, "bn1");
    x = b.batch_norm(x, 16);
  }
  x = b.relu(x);
  int64_t cin = 16;
  const int64_t widths[] = {16, 32, 64};
  for (int layer = 0; layer < 3; ++layer)
    for (int block = 0; block < 2; ++block) {
      Scope s(b, "layer" + std::to_string(layer + 1) + "/layer" + std::to_string(layer + 1) + "." +
                     std::to_string(block));
      x = basic_block(b, x, cin, widths[layer], block == 0 && layer > 0 ? 2 : 1, true, 2);
      cin = widths[layer];
    }
  b.output(head(b, x, 64, 10), "logits", {std::string("batch"), 10});
  return b;
}

B resnet50(uint64_t seed) {
  B b("resnet50", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 224, 224});
  {
    Scope s(b, "conv1");
    x = b.relu(b.conv(x, 3, 64, 7, 2, 3));
  }
  x = b.op(
      "MaxPool", {x},
      {B::attr("ceil_mode", int64_t{0}), B::attr("kernel_shape", std::vector<int64_t>{3, 3}),
       B::attr("pads", std::vector<int64_t>{1, 1, 1, 1}), B::attr("strides", std::vector<int64_t>{2, 2})});
  int64_t cin = 64;
  const int blocks[] = {3, 4, 6, 3};
  for (int layer = 0; layer < 4; ++layer)
    for (int block = 0; block < blocks[layer]; ++block) {
      Scope s(b, "layer" + std::to_string(layer + 1) + "/layer" + std::to_string(layer + 1) + "." +
                     std::to_string(block));
      int64_t width = 64 << layer;
      x = bottleneck(b, x, cin, width, block == 0 && layer > 0 ? 2 : 1);
      cin = width * 4;
    }
  b.output(head(b, x, 2048, 1000), "output", {std::string("batch"), 1000});
  return b;
}

B resnet3d(uint64_t seed) {
  B b("resnet3d", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 8, 56, 56});
  {
    Scope s(b, "stem");
    x = b.relu(b.conv(x, 3, 32, 3, 2, 1, 1, true, 3));
  }
  int64_t cin = 32;
  const int64_t widths[] = {32, 64, 128, 256};
  for (int layer = 0; layer < 4; ++layer) {
    Scope s(b, "layer" + std::to_string(layer + 1) + "/layer" + std::to_string(layer + 1) + ".0");
    x = basic_block(b, x, cin, widths[layer], layer > 0 ? 2 : 1, false, 3);
    cin = widths[layer];
  }
  b.output(head(b, x, 256, 400), "output", {std::string("batch"), 400});
  return b;
}

// ResNeXt bottleneck: 1x1 -> grouped 3x3 (cardinality 8) -> 1x1, BN folded.
B resnext_small(uint64_t seed) {
  B b("resnext_small", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 64, 64});
  {
    Scope s(b, "conv1");
    x = b.relu(b.conv(x, 3, 64, 3, 2, 1));
  }
  int64_t cin = 64;
  const int64_t widths[] = {64, 128, 256};
  for (int layer = 0; layer < 3; ++layer)
    for (int block = 0; block < 2; ++block) {
      Scope s(b, "layer" + std::to_string(layer + 1) + "/layer" + std::to_string(layer + 1) + "." +
                     std::to_string(block));
      int64_t w = widths[layer], out = w * 2, stride = block == 0 && layer > 0 ? 2 : 1;
      std::string y;
      {
        Scope c(b, "conv1");
        y = b.relu(b.conv(x, cin, w, 1, 1, 0));
      }
      {
        Scope c(b, "conv2");
        y = b.relu(b.conv(y, w, w, 3, stride, 1, 8));
      }
      {
        Scope c(b, "conv3");
        y = b.conv(y, w, out, 1, 1, 0);
      }
      std::string shortcut = x;
      if (stride != 1 || cin != out) {
        Scope c(b, "downsample");
        shortcut = b.conv(x, cin, out, 1, stride, 0);
      }
      x = b.relu(b.op("Add", {y, shortcut}));
      cin = out;
    }
  b.output(head(b, x, cin, 10), "logits", {std::string("batch"), 10});
  return b;
}

// ---- MobileNetV2 -----------------------------------------------------------------
std::string inverted_residual(B& b, const std::string& x, int64_t cin, int64_t cout, int64_t stride,
                              int64_t t, bool bn) {
  int64_t hidden = cin * t;
  std::string y = x;
  auto conv_bn = [&](const std::string& in, int64_t ci, int64_t co, int64_t k, int64_t st, int64_t group,
                     bool act, const std::string& scope) {
    Scope s(b, scope);
    std::string r = b.conv(in, ci, co, k, st, k / 2, group, !bn);
    if (bn) r = b.batch_norm(r, co);
    return act ? b.relu6(r) : r;
  };
  if (t != 1) y = conv_bn(y, cin, hidden, 1, 1, 1, true, "conv.0");
  y = conv_bn(y, hidden, hidden, 3, stride, hidden, true, "conv.1");
  y = conv_bn(y, hidden, cout, 1, 1, 1, false, "conv.2");
  if (stride == 1 && cin == cout) y = b.op("Add", {x, y});
  return y;
}

B mobilenet(const std::string& name, uint64_t seed, int64_t res, bool bn, int64_t stem, int64_t last,
            int64_t classes, const std::vector<std::array<int64_t, 4>>& settings) {
  B b(name, 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, res, res});
  {
    Scope s(b, "features.0");
    x = b.conv(x, 3, stem, 3, 2, 1, 1, !bn);
    if (bn) x = b.batch_norm(x, stem);
    x = b.relu6(x);
  }
  int64_t cin = stem;
  int index = 1;
  for (const auto& [t, c, n, s] : settings)
    for (int64_t i = 0; i < n; ++i) {
      Scope sc(b, "features." + std::to_string(index++));
      x = inverted_residual(b, x, cin, c, i == 0 ? s : 1, t, bn);
      cin = c;
    }
  {
    Scope s(b, "features." + std::to_string(index));
    x = b.conv(x, cin, last, 1, 1, 0, 1, !bn);
    if (bn) x = b.batch_norm(x, last);
    x = b.relu6(x);
  }
  b.output(head(b, x, last, classes), "output", {std::string("batch"), classes});
  return b;
}

// ---- Transformer encoder (BERT-style, post-LN) --------------------------------------
B encoder(const std::string& name, uint64_t seed, int64_t seq, int64_t d, int64_t heads, int64_t layers,
          int64_t vocab) {
  B b(name, 17, seed);
  int64_t dh = d / heads;
  std::string ids = b.input("input_ids", DType::Int64, {std::string("batch"), seq});
  std::string x;
  {
    Scope s(b, "embeddings");
    x = b.op("Gather", {b.random_normal("embeddings.word_embeddings.weight", {vocab, d}, 0.02f), ids});
    x = b.op("Add", {x, b.random_normal("embeddings.position_embeddings.weight", {seq, d}, 0.02f)});
    x = b.layer_norm(x, d);
  }
  for (int64_t l = 0; l < layers; ++l) {
    Scope s(b, "encoder/layer." + std::to_string(l));
    std::string attn;
    {
      Scope a(b, "attention");
      auto heads_of = [&](const std::string& scope, bool key) {
        Scope q(b, scope);
        std::string p = b.linear(x, d, d, false);
        std::string r = b.dynamic_reshape(p, {seq, heads, dh});
        return b.op(
            "Transpose", {r},
            {B::attr("perm", key ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 2, 1, 3})});
      };
      std::string q = heads_of("query", false), k = heads_of("key", true), v = heads_of("value", false);
      std::string scores = b.op("MatMul", {q, k});
      scores = b.op("Div", {scores, b.scalar("encoder.layer." + std::to_string(l) + ".attention.scale",
                                             std::sqrt(static_cast<float>(dh)))});
      std::string probs = b.op("Softmax", {scores}, {B::attr("axis", int64_t{-1})});
      std::string ctx = b.op("MatMul", {probs, v});
      ctx = b.op("Transpose", {ctx}, {B::attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
      ctx = b.dynamic_reshape(ctx, {seq, d});
      Scope o(b, "output");
      attn = b.layer_norm(b.op("Add", {b.linear(ctx, d, d, false), x}), d);
    }
    Scope f(b, "ffn");
    std::string h;
    {
      Scope i(b, "intermediate");
      h = b.gelu(b.linear(attn, d, 4 * d, false));
    }
    Scope o(b, "output");
    x = b.layer_norm(b.op("Add", {b.linear(h, 4 * d, d, false), attn}), d);
  }
  b.output(x, "last_hidden_state", {std::string("batch"), seq, d});
  return b;
}

// ---- Inception -------------------------------------------------------------------
std::string conv_relu(B& b, const std::string& x, int64_t cin, int64_t cout, int64_t k,
                      const std::string& scope) {
  Scope s(b, scope);
  return b.relu(b.conv(x, cin, cout, k, 1, k / 2));
}

B inception_small(uint64_t seed) {
  B b("inception_small", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 64, 64});
  {
    Scope s(b, "stem");
    x = b.relu(b.conv(x, 3, 32, 3, 2, 1));
  }
  int64_t cin = 32;
  for (int blk = 0; blk < 2; ++blk) {
    Scope s(b, "mixed_" + std::to_string(blk));
    std::string b1 = conv_relu(b, x, cin, 16, 1, "branch1x1");
    std::string b3 = conv_relu(b, conv_relu(b, x, cin, 16, 1, "branch3x3_1"), 16, 24, 3, "branch3x3_2");
    std::string b5 =
        conv_relu(b, conv_relu(b, conv_relu(b, x, cin, 8, 1, "branch5x5_1"), 8, 12, 3, "branch5x5_2"), 12, 12,
                  3, "branch5x5_3");
    std::string pool = b.op(
        "MaxPool", {x},
        {B::attr("kernel_shape", std::vector<int64_t>{3, 3}),
         B::attr("pads", std::vector<int64_t>{1, 1, 1, 1}), B::attr("strides", std::vector<int64_t>{1, 1})});
    std::string bp = conv_relu(b, pool, cin, 12, 1, "branch_pool");
    x = b.op("Concat", {b1, b3, b5, bp}, {B::attr("axis", int64_t{1})});
    cin = 16 + 24 + 12 + 12;
  }
  b.output(head(b, x, cin, 10), "logits", {std::string("batch"), 10});
  return b;
}

// ---- DCGAN generator -----------------------------------------------------------------
B dcgan_generator(uint64_t seed) {
  B b("dcgan_generator", 17, seed);
  std::string x = b.input("z", DType::Float32, {std::string("batch"), 100, 1, 1});
  const int64_t ch[] = {100, 512, 256, 128, 64, 3};
  for (int i = 0; i < 5; ++i) {
    Scope s(b, "main." + std::to_string(3 * i));
    std::string w =
        b.random_normal("main." + std::to_string(3 * i) + ".weight", {ch[i], ch[i + 1], 4, 4}, 0.02f);
    int64_t stride = i == 0 ? 1 : 2, pad = i == 0 ? 0 : 1;
    x = b.op("ConvTranspose", {x, w},
             {B::attr("dilations", std::vector<int64_t>{1, 1}), B::attr("group", int64_t{1}),
              B::attr("kernel_shape", std::vector<int64_t>{4, 4}),
              B::attr("pads", std::vector<int64_t>{pad, pad, pad, pad}),
              B::attr("strides", std::vector<int64_t>{stride, stride})});
    if (i < 4) x = b.relu(b.batch_norm(x, ch[i + 1]));
  }
  b.output(b.op("Tanh", {x}), "output", {std::string("batch"), 3, 64, 64});
  return b;
}

using Factory = std::function<B(uint64_t)>;
const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> f = {
      {"resnet_small", resnet_small},
      {"mobilenet_small",
       [](uint64_t s) {
         return mobilenet("mobilenet_small", s, 96, true, 16, 128, 10,
                          {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 2, 2}, {6, 64, 2, 2}});
       }},
      {"transformer_small", [](uint64_t s) { return encoder("transformer_small", s, 32, 64, 4, 2, 100); }},
      {"inception_small", inception_small},
      {"resnet50", resnet50},
      {"mobilenet_v2",
       [](uint64_t s) {
         return mobilenet("mobilenet_v2", s, 224, false, 32, 1280, 1000,
                          {{1, 16, 1, 1},
                           {6, 24, 2, 2},
                           {6, 32, 3, 2},
                           {6, 64, 4, 2},
                           {6, 96, 3, 1},
                           {6, 160, 3, 2},
                           {6, 320, 1, 1}});
       }},
      {"bert_encoder", [](uint64_t s) { return encoder("bert_encoder", s, 128, 256, 4, 4, 1000); }},
      {"resnet3d", resnet3d},
      {"dcgan_generator", dcgan_generator},
      {"deep_encoder", [](uint64_t s) { return encoder("deep_encoder", s, 32, 64, 4, 32, 100); }},
      {"resnext_small", resnext_small},
      {"encoder_10k", [](uint64_t s) { return encoder("encoder_10k", s, 8, 16, 2, 310, 50); }},
      {"encoder_5k", [](uint64_t s) { return encoder("encoder_5k", s, 8, 16, 2, 155, 50); }},
  };
  return f;
}

}  // namespace

const std::vector<SampleInfo>& sample_list() {
  static const std::vector<SampleInfo> list = {
      {"resnet_small", "ResNet-style residual net, 3x64x64, unfolded BatchNorm", true},
      {"mobilenet_small", "MobileNetV2-style inverted residuals, depthwise convs, ReLU6, 3x96x96", true},
      {"transformer_small", "BERT-style encoder, 2 layers, d=64, 4 heads, seq 32, erf-GELU", true},
      {"inception_small", "Inception-style multi-branch blocks joined by Concat, 3x64x64", true},
      {"resnet50", "torchvision ResNet-50 layout, 224x224, BN folded (~25.6M params, ~100 MB)", false},
      {"mobilenet_v2", "torchvision MobileNetV2 layout, 224x224, BN folded", false},
      {"bert_encoder", "BERT-style encoder, 4 layers, hidden 256, seq 128", false},
      {"resnet3d", "R3D-style 3-D ResNet, 3x8x56x56", false},
      {"dcgan_generator", "DCGAN generator, z 100 -> 3x64x64 via ConvTranspose", false},
      {"deep_encoder", "32-layer encoder, d=64, seq 32: a ~1000-node graph for search timing", false},
      {"resnext_small", "ResNeXt-style grouped bottlenecks (cardinality 8), 3x64x64", false},
      {"encoder_10k", "310-layer tiny encoder: a ~10,000-node graph for explorer scaling", false},
      {"encoder_5k", "155-layer tiny encoder: a ~5,000-node graph for explorer tests", false},
  };
  return list;
}

OnnxBuilder build_sample(const std::string& name, uint64_t seed) {
  auto it = factories().find(name);
  if (it == factories().end()) {
    std::string known;
    for (const auto& s : sample_list()) known += (known.empty() ? "" : ", ") + s.name;
    throw Error(ErrorKind::InvalidInput, "unknown sample '" + name + "' (known: " + known + ")");
  }
  return it->second(seed);
}

}  // namespace collage::samples
