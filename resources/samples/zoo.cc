#include "resources/samples/zoo.h"

#include <array>
#include <cmath>
#include <functional>
#include <map>

#include "resources/samples/zoo_modern.h"

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

// torchvision's Bottleneck (BN folded): 1x1 -> 3x3 (stride, `groups`) -> 1x1, projection shortcut
// when the shape changes. ResNet-50: width = planes, ResNeXt: width = planes * width_per_group / 64 * groups.
std::string bottleneck(B& b, const std::string& x, int64_t cin, int64_t width, int64_t cout, int64_t stride,
                       int64_t groups) {
  std::string y;
  {
    Scope s(b, "conv1");
    y = b.relu(b.conv(x, cin, width, 1, 1, 0));
  }
  {
    Scope s(b, "conv2");
    y = b.relu(b.conv(y, width, width, 3, stride, 1, groups));
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

// MaxPool as torch.onnx.export writes nn.MaxPool2d (square kernel, symmetric padding).
std::string max_pool(B& b, const std::string& x, int64_t k, int64_t stride, int64_t pad, bool ceil_mode) {
  return b.op(
      "MaxPool", {x},
      {B::attr("ceil_mode", int64_t{ceil_mode ? 1 : 0}), B::attr("kernel_shape", std::vector<int64_t>{k, k}),
       B::attr("pads", std::vector<int64_t>{pad, pad, pad, pad}),
       B::attr("strides", std::vector<int64_t>{stride, stride})});
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

// torchvision ResNet-50 / ResNeXt-50 (layers 3, 4, 6, 3; expansion 4; BN folded) at 3x224x224.
B bottleneck_resnet(const std::string& name, uint64_t seed, int64_t groups, int64_t width_per_group) {
  B b(name, 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 224, 224});
  {
    Scope s(b, "conv1");
    x = b.relu(b.conv(x, 3, 64, 7, 2, 3));
  }
  x = max_pool(b, x, 3, 2, 1, false);
  int64_t cin = 64;
  const int blocks[] = {3, 4, 6, 3};
  for (int layer = 0; layer < 4; ++layer)
    for (int block = 0; block < blocks[layer]; ++block) {
      Scope s(b, "layer" + std::to_string(layer + 1) + "/layer" + std::to_string(layer + 1) + "." +
                     std::to_string(block));
      int64_t planes = 64 << layer, width = planes * width_per_group / 64 * groups;
      x = bottleneck(b, x, cin, width, planes * 4, block == 0 && layer > 0 ? 2 : 1, groups);
      cin = planes * 4;
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
      x = bottleneck(b, x, cin, w, out, stride, 8);
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

// torchvision GoogLeNet (aux_logits off, transform_input=False, eval: Dropout gone) at 3x224x224.
// BasicConv2d = Conv (BatchNorm folded into it) + Relu.
std::string basic_conv(B& b, const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                       int64_t pad, const std::string& scope) {
  Scope s(b, scope);
  std::string y;
  {
    Scope c(b, "conv");
    y = b.conv(x, cin, cout, k, stride, pad);
  }
  return b.relu(y);
}

// Inception(in, ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj); torchvision's "5x5" branch is a 3x3.
std::string inception_module(B& b, const std::string& x, const std::array<int64_t, 7>& c) {
  auto [in, c1, c3r, c3, c5r, c5, pp] = c;
  std::string b1 = basic_conv(b, x, in, c1, 1, 1, 0, "branch1"), b2, b3, b4;
  {
    Scope s(b, "branch2");
    b2 = basic_conv(b, basic_conv(b, x, in, c3r, 1, 1, 0, "branch2.0"), c3r, c3, 3, 1, 1, "branch2.1");
  }
  {
    Scope s(b, "branch3");
    b3 = basic_conv(b, basic_conv(b, x, in, c5r, 1, 1, 0, "branch3.0"), c5r, c5, 3, 1, 1, "branch3.1");
  }
  {
    Scope s(b, "branch4");
    std::string pool;
    {
      Scope p(b, "branch4.0");
      pool = max_pool(b, x, 3, 1, 1, true);
    }
    b4 = basic_conv(b, pool, in, pp, 1, 1, 0, "branch4.1");
  }
  return b.op("Concat", {b1, b2, b3, b4}, {B::attr("axis", int64_t{1})});
}

B googlenet(uint64_t seed) {
  B b("googlenet", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 224, 224});
  auto pool = [&](const std::string& scope, int64_t k) {
    Scope s(b, scope);
    x = max_pool(b, x, k, 2, 0, true);
  };
  x = basic_conv(b, x, 3, 64, 7, 2, 3, "conv1");
  pool("maxpool1", 3);
  x = basic_conv(b, x, 64, 64, 1, 1, 0, "conv2");
  x = basic_conv(b, x, 64, 192, 3, 1, 1, "conv3");
  pool("maxpool2", 3);
  const std::pair<const char*, std::array<int64_t, 7>> blocks[] = {
      {"inception3a", {192, 64, 96, 128, 16, 32, 32}},
      {"inception3b", {256, 128, 128, 192, 32, 96, 64}},
      {"inception4a", {480, 192, 96, 208, 16, 48, 64}},
      {"inception4b", {512, 160, 112, 224, 24, 64, 64}},
      {"inception4c", {512, 128, 128, 256, 24, 64, 64}},
      {"inception4d", {512, 112, 144, 288, 32, 64, 64}},
      {"inception4e", {528, 256, 160, 320, 32, 128, 128}},
      {"inception5a", {832, 256, 160, 320, 32, 128, 128}},
      {"inception5b", {832, 384, 192, 384, 48, 128, 128}}};
  for (const auto& [name, channels] : blocks) {
    {
      Scope s(b, name);
      x = inception_module(b, x, channels);
    }
    if (std::string(name) == "inception3b") pool("maxpool3", 3);
    if (std::string(name) == "inception4e") pool("maxpool4", 2);
  }
  b.output(head(b, x, 1024, 1000), "output", {std::string("batch"), 1000});
  return b;
}

// ---- SqueezeNet 1.1 ------------------------------------------------------------------
// torchvision Fire: squeeze 1x1 + Relu, then expand1x1 (1x1 + Relu) and expand3x3 (3x3 pad 1 + Relu), Concat.
std::string fire(B& b, const std::string& x, int64_t in, int64_t squeeze, int64_t e1, int64_t e3) {
  auto conv_act = [&](const std::string& v, int64_t cin, int64_t cout, int64_t k, const std::string& name) {
    std::string y;
    {
      Scope s(b, name);
      y = b.conv(v, cin, cout, k, 1, k / 2);
    }
    Scope s(b, name + "_activation");
    return b.relu(y);
  };
  std::string s = conv_act(x, in, squeeze, 1, "squeeze");
  std::string a = conv_act(s, squeeze, e1, 1, "expand1x1"), c = conv_act(s, squeeze, e3, 3, "expand3x3");
  return b.op("Concat", {a, c}, {B::attr("axis", int64_t{1})});
}

B squeezenet(uint64_t seed) {
  B b("squeezenet", 17, seed);
  std::string x = b.input("input", DType::Float32, {std::string("batch"), 3, 224, 224});
  {
    Scope f(b, "features");
    auto layer = [&](int i) { return "features." + std::to_string(i); };
    {
      Scope s(b, layer(0));
      x = b.conv(x, 3, 64, 3, 2, 0);
    }
    {
      Scope s(b, layer(1));
      x = b.relu(x);
    }
    const std::array<int64_t, 4> fires[] = {{64, 16, 64, 64},    {128, 16, 64, 64},   {128, 32, 128, 128},
                                            {256, 32, 128, 128}, {256, 48, 192, 192}, {384, 48, 192, 192},
                                            {384, 64, 256, 256}, {512, 64, 256, 256}};
    int index = 2;
    for (size_t i = 0; i < 8; ++i) {
      if (i == 0 || i == 2 || i == 4) {
        Scope s(b, layer(index++));
        x = max_pool(b, x, 3, 2, 0, true);
      }
      Scope s(b, layer(index++));
      x = fire(b, x, fires[i][0], fires[i][1], fires[i][2], fires[i][3]);
    }
  }
  {
    Scope c(b, "classifier");
    {
      Scope s(b, "classifier.1");  // classifier.0 is the Dropout, gone in eval mode
      x = b.conv(x, 512, 1000, 1, 1, 0);
    }
    {
      Scope s(b, "classifier.2");
      x = b.relu(x);
    }
    Scope s(b, "classifier.3");  // AdaptiveAvgPool2d((1, 1))
    x = b.op("GlobalAveragePool", {x});
  }
  x = b.op("Flatten", {x}, {B::attr("axis", int64_t{1})});
  b.output(x, "output", {std::string("batch"), 1000});
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
      {"resnet50", [](uint64_t s) { return bottleneck_resnet("resnet50", s, 1, 64); }},
      {"resnext50", [](uint64_t s) { return bottleneck_resnet("resnext50", s, 32, 4); }},
      {"googlenet", googlenet},
      {"squeezenet", squeezenet},
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
      {"vit_small", vit_small},
      {"gpt_block", gpt_block},
      {"gpt_block_inf_mask", gpt_block_inf_mask},
      {"gpt2_small", gpt2_small},
      {"llama_decoder_8k", llama_decoder_8k},
      {"lstm_classifier", lstm_classifier},
      {"segmentation_head", segmentation_head},
      {"resnet_small_opset18",
       [](uint64_t s) {
         B b = resnet_small(s);
         b.set_opset(18);
         return b;
       }},
      {"resnet_small_fp16",
       [](uint64_t s) {
         B b = resnet_small(s);
         b.convert_to_float16();
         return b;
       }},
      {"bert_encoder_fp16",
       [](uint64_t s) {
         B b = encoder("bert_encoder", s, 128, 256, 4, 4, 1000);
         b.convert_to_float16();
         return b;
       }},
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
      {"resnext50", "torchvision ResNeXt-50 32x4d layout, 224x224, grouped 3x3 (32 groups), BN folded",
       false},
      {"googlenet", "torchvision GoogLeNet layout, 224x224, Inception blocks, ceil-mode MaxPools, BN folded",
       false},
      {"squeezenet", "torchvision SqueezeNet 1.1 layout, 224x224, Fire modules, ceil-mode MaxPools", false},
      {"resnet3d", "R3D-style 3-D ResNet, 3x8x56x56", false},
      {"dcgan_generator", "DCGAN generator, z 100 -> 3x64x64 via ConvTranspose", false},
      {"deep_encoder", "32-layer encoder, d=64, seq 32: a ~1000-node graph for search timing", false},
      {"resnext_small", "ResNeXt-style grouped bottlenecks (cardinality 8), 3x64x64", false},
      {"encoder_10k", "310-layer tiny encoder: a ~10,000-node graph for explorer scaling", false},
      {"encoder_5k", "155-layer tiny encoder: a ~5,000-node graph for explorer tests", false},
      {"vit_small",
       "ViT-style encoder: 8x8 patch Conv, class token Concat, position Add, 2 pre-LN blocks, 3x64x64",
       false},
      {"gpt_block", "GPT-style decoder, 2 pre-LN blocks, causal mask via Trilu + Where, tanh-GELU, seq 32",
       false},
      {"gpt_block_inf_mask",
       "gpt_block with the causal mask as masked_fill(float('-inf')) exports it: -inf scores, exact zeros "
       "after "
       "Softmax",
       false},
      {"gpt2_small",
       "gpt_block_inf_mask at GPT-2-small size: 12 layers, d 768, 12 heads, seq 128, vocab 50257 (~660 MB)",
       false},
      {"llama_decoder_8k",
       "12-layer Llama-style decoder written out head by head (RMSNorm, rotary, SwiGLU): ~8,000 nodes",
       false},
      {"lstm_classifier", "LSTM text classifier: embedding, 1-layer LSTM (hidden 48), last hidden -> Gemm",
       false},
      {"segmentation_head", "segmentation head: strided convs, 1x1 classifier, bilinear x4 Resize, ArgMax",
       false},
      {"resnet_small_opset18", "resnet_small as an opset-18 exporter writes it", false},
      {"resnet_small_fp16", "resnet_small after model.half(): float16 weights, input and output", false},
      {"bert_encoder_fp16", "bert_encoder after model.half(): float16 weights and activations", false},
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
