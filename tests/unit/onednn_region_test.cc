#include "backends/onednn_region/onednn_region.h"

#include <gtest/gtest.h>

#include <tuple>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_spec.h"
#include "core/ir/tensor_compare.h"
#include "sample_graph.h"

namespace collage {
namespace {

using testing::sample_graph;

// The tuner's rule, the one comparison the project has.
void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  TensorComparison c = compare_tensors(got, want, kKernelTolerance);
  EXPECT_TRUE(c.ok()) << what << ": element " << c.first_mismatch << " = " << c.got_value << ", reference "
                      << c.want_value << (c.shape_mismatch ? " (shapes differ)" : "");
}

// Every node of each CNN sample in one region: one kernel from input to logits.
TEST(OnednnRegion, WholeSampleCnnsMatchTheNativeReference) {
  const BackendSpec& spec = onednn_region_backend();
  // squeezenet, googlenet: channel Concats written in place (channel counts are multiples of 16);
  // googlenet: Winograd 3x3 layers; dcgan_generator: deconvolutions.
  // The full-size ones are what peer_bench.sh ships as one region.
  for (const char* name :
       {"resnet_small", "mobilenet_small", "inception_small", "resnext_small", "dcgan_generator",
        "squeezenet", "googlenet", "mobilenet_v2", "resnet3d", "resnet50", "resnext50"}) {
    Graph g = sample_graph(name);
    IndexSet all(g.nodes.size());
    for (const Node& n : g.nodes) {
      ASSERT_TRUE(spec.supports_node(g, n)) << name << ": " << n.describe();
      all.add(static_cast<size_t>(&n - &g.nodes[0]));
    }
    auto values = testing::reference_values(g);
    SubGraph sub = make_subgraph(g, all);
    std::unique_ptr<Kernel> kernel = spec.compile(g, sub, CompileOptions{});
    std::vector<const Tensor*> args;
    for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
    HeapAllocator alloc;
    for (int run = 0; run < 2; ++run) {  // buffers are reused between runs
      std::vector<Tensor> outs = kernel->run(args, alloc);
      ASSERT_EQ(outs.size(), sub.outputs.size());
      for (size_t k = 0; k < outs.size(); ++k)
        expect_close(outs[k], values[static_cast<size_t>(sub.outputs[k])],
                     std::string(name) + " run " + std::to_string(run));
    }
  }
}

// Random convex windows of consecutive nodes: values enter and leave the region in
// plain layout wherever the cut falls (mid-block, between a Conv and its Relu, at a Concat).
TEST(OnednnRegion, RegionsCutAnywhereMatchTheNativeReference) {
  const BackendSpec& spec = onednn_region_backend();
  for (const char* name : {"resnet_small", "mobilenet_small", "inception_small"}) {
    Graph g = sample_graph(name);
    auto values = testing::reference_values(g);
    ConvexityChecker convex(g);
    uint64_t state = 11;
    int checked = 0;
    for (int trial = 0; trial < 40 && checked < 12; ++trial) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      size_t first = (state >> 33) % g.nodes.size(), len = 2 + (state >> 20) % 9;
      IndexSet nodes(g.nodes.size());
      for (size_t i = first; i < std::min(g.nodes.size(), first + len); ++i)
        if (spec.supports_node(g, g.nodes[i])) nodes.add(i);
      if (nodes.popcount() < 2 || !convex.is_convex(nodes)) continue;
      testing::CandidateCheck c = testing::check_candidate(g, spec, nodes, values, 1e-3, 1e-4);
      // Only a BatchNormalization cut off from its Conv may be declined.
      if (!c.supported) continue;
      EXPECT_TRUE(c.mismatch.empty()) << name << " nodes from " << first << ": " << c.mismatch;
      ++checked;
    }
    EXPECT_GE(checked, 8) << name;
  }
}

// EfficientNet's MBConv with SE as PyTorch exports it: SiLU is Sigmoid + Mul, so the
// convolution's output has two readers. The region runs each SiLU as one swish (a post-op
// of the convolution, or one eltwise pass where it follows a Concat); a SiLU whose input
// is also read elsewhere (the residual Add here) is left as its two nodes. Every node's
// value must still agree with the native reference under the tuner's rule.
TEST(OnednnRegion, SiluBlocksMatchTheNativeReference) {
  using M = testing::OnnxTestModel;
  using testing::random_tensor_f32;
  M m(17);
  m.input("x", {1, 16, 12, 12});
  m.input("r", {1, 16, 12, 12});
  auto silu = [&](const std::string& in, const std::string& out) {
    m.node("Sigmoid", {in}, {out + "_sig"});
    m.node("Mul", {in, out + "_sig"}, {out});
  };
  m.initializer("w1", random_tensor_f32({32, 16, 1, 1}, 1, 0.3f));
  m.node("Conv", {"x", "w1"}, {"e"});
  silu("e", "e_act");  // 1x1 expand + SiLU: a swish post-op
  m.initializer("wd", random_tensor_f32({32, 1, 3, 3}, 2, 0.3f));
  auto& dw = m.node("Conv", {"e_act", "wd"}, {"d"});
  M::attr_int(dw, "group", 32);
  M::attr_ints(dw, "pads", {1, 1, 1, 1});
  silu("d", "d_act");  // depthwise + SiLU
  m.node("GlobalAveragePool", {"d_act"}, {"p"});
  m.initializer("ws1", random_tensor_f32({8, 32, 1, 1}, 3, 0.3f));
  m.node("Conv", {"p", "ws1"}, {"s1"});
  silu("s1", "s1_act");
  m.initializer("ws2", random_tensor_f32({32, 8, 1, 1}, 4, 0.3f));
  m.node("Conv", {"s1_act", "ws2"}, {"s2"});
  m.node("Sigmoid", {"s2"}, {"scale"});
  m.node("Mul", {"d_act", "scale"}, {"se"});
  m.initializer("wp", random_tensor_f32({16, 32, 1, 1}, 5, 0.3f));
  m.node("Conv", {"se", "wp"}, {"proj"});
  silu("proj", "proj_act");  // proj is also read by the Add below: not a closed block
  m.node("Add", {"proj", "proj_act"}, {"sum"});
  auto& cat = m.node("Concat", {"sum", "r"}, {"cat"});
  M::attr_int(cat, "axis", 1);
  silu("cat", "y");  // after a Concat: one standalone swish
  m.output("y");
  Graph g = testing::import_model(m);
  const BackendSpec& spec = onednn_region_backend();
  IndexSet all(g.nodes.size());
  for (const Node& n : g.nodes) {
    ASSERT_TRUE(spec.supports_node(g, n)) << n.describe();
    all.add(static_cast<size_t>(&n - &g.nodes[0]));
  }
  auto values = testing::reference_values(g);
  SubGraph sub = make_subgraph(g, all);
  std::unique_ptr<Kernel> kernel = spec.compile(g, sub, CompileOptions{});
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  std::vector<Tensor> outs = kernel->run(args, alloc);
  ASSERT_EQ(outs.size(), 1u);
  expect_close(outs[0], values[static_cast<size_t>(sub.outputs[0])], "MBConv region");
  // Cut after each SiLU's Sigmoid: the block is incomplete there and runs as plain nodes.
  for (size_t cut = 1; cut < g.nodes.size(); ++cut) {
    if (g.nodes[cut - 1].op_type != "Sigmoid") continue;
    IndexSet head(g.nodes.size());
    for (size_t i = 0; i < cut; ++i) head.add(i);
    testing::CandidateCheck c = testing::check_candidate(g, spec, head, values, kKernelTolerance.rtol, 1e-4);
    EXPECT_TRUE(c.supported && c.mismatch.empty()) << "cut at " << cut << ": " << c.mismatch;
  }
}

// MobileNetV2's and EfficientNet's expand -> depthwise pair: a 1x1 convolution (its BN and
// ReLU6 fused) whose output only a 3x3 depthwise convolution (stride 1 or 2, its own BN and
// ReLU6) reads runs as one primitive with oneDNN's depthwise post-op where oneDNN has a
// kernel for it; every variant matches the native reference, including a depthwise the
// expanded tensor is also read by (not fusable) and a 5x5 one (not a post-op shape).
TEST(OnednnRegion, PointwiseThenDepthwiseBlocksMatchTheNativeReference) {
  using M = testing::OnnxTestModel;
  using testing::random_tensor_f32;
  struct Variant {
    int64_t c, e, stride, kernel, hw;
    bool second_reader;
  };
  // EfficientNet-B0's two fusable pairs (oneDNN's jit_1x1 kernel takes them on AVX2; on
  // AVX-512 the 112-px one must not run channels-last: oneDNN 2.6 computes garbage), smaller
  // ones it runs as its reference fusion (not taken: no faster), and the ones that never fuse.
  for (const Variant& v : {Variant{16, 96, 2, 3, 112, false}, Variant{24, 144, 1, 3, 56, false},
                           Variant{16, 96, 1, 3, 28, false}, Variant{16, 96, 2, 3, 28, true},
                           Variant{16, 96, 1, 5, 14, false}, Variant{16, 96, 1, 3, 7, false}}) {
    M m(17);
    const int64_t c = v.c, e = v.e;
    m.input("x", {1, c, v.hw, v.hw});
    auto batch_norm = [&](const std::string& in, const std::string& out, int64_t ch, uint32_t seed) {
      Tensor var(DType::Float32, {ch});
      for (int64_t i = 0; i < ch; ++i) var.data<float>()[i] = 0.5f + 0.01f * static_cast<float>(i % 7);
      m.initializer(out + "_s", random_tensor_f32({ch}, seed, 0.5f));
      m.initializer(out + "_b", random_tensor_f32({ch}, seed + 1, 0.2f));
      m.initializer(out + "_m", random_tensor_f32({ch}, seed + 2, 0.2f));
      m.initializer(out + "_v", var);
      m.node("BatchNormalization", {in, out + "_s", out + "_b", out + "_m", out + "_v"}, {out});
    };
    m.initializer("lo", Tensor::scalar<float>(0.0f));
    m.initializer("hi", Tensor::scalar<float>(6.0f));
    m.initializer("w_expand", random_tensor_f32({e, c, 1, 1}, 1, 0.4f));
    m.node("Conv", {"x", "w_expand"}, {"ex"});
    batch_norm("ex", "ex_bn", e, 10);
    m.node("Clip", {"ex_bn", "lo", "hi"}, {"ex_act"});
    m.initializer("w_dw", random_tensor_f32({e, 1, v.kernel, v.kernel}, 2, 0.4f));
    auto& dw = m.node("Conv", {"ex_act", "w_dw"}, {"d"});
    M::attr_int(dw, "group", e);
    const int64_t pad = v.kernel / 2;
    M::attr_ints(dw, "pads", {pad, pad, pad, pad});
    M::attr_ints(dw, "strides", {v.stride, v.stride});
    batch_norm("d", "d_bn", e, 20);
    m.node("Clip", {"d_bn", "lo", "hi"}, {"d_act"});
    m.initializer("w_proj", random_tensor_f32({c, e, 1, 1}, 3, 0.3f));
    m.node("Conv", {"d_act", "w_proj"}, {"y"});
    m.output("y");
    if (v.second_reader) {
      m.node("GlobalAveragePool", {"ex_act"}, {"pooled"});
      m.output("pooled");
    }
    Graph g = testing::import_model(m);
    const BackendSpec& spec = onednn_region_backend();
    IndexSet all(g.nodes.size());
    for (const Node& n : g.nodes) all.add(static_cast<size_t>(&n - &g.nodes[0]));
    auto values = testing::reference_values(g);
    testing::CandidateCheck check =
        testing::check_candidate(g, spec, all, values, kKernelTolerance.rtol, 1e-4);
    EXPECT_TRUE(check.supported && check.mismatch.empty())
        << v.c << " -> " << v.e << ", stride " << v.stride << ", " << v.kernel << "x" << v.kernel << ", "
        << v.hw << " px" << (v.second_reader ? ", expanded tensor read twice" : "") << ": " << check.mismatch;
  }
}

// MobileNetV3's classifier: Flatten, Gemm (transB, bias) + HardSwish, Gemm, each one row by weights
// of 1 MiB or more, which the region streams with stream-gemm's panels (where the CPU has AVX2 and
// FMA); a MatMul of the same kind without bias, and one of small weights oneDNN keeps.
TEST(OnednnRegion, RowProductsOfLargeWeightsMatchTheNativeReference) {
  using M = testing::OnnxTestModel;
  using testing::random_tensor_f32;
  M m(17);
  m.input("x", {1, 960, 1, 1});
  m.node("Flatten", {"x"}, {"f"});
  m.initializer("w1", random_tensor_f32({1280, 960}, 1, 0.05f));
  m.initializer("b1", random_tensor_f32({1280}, 2, 0.2f));
  auto& g1 = m.node("Gemm", {"f", "w1", "b1"}, {"h"});
  M::attr_int(g1, "transB", 1);
  m.node("HardSwish", {"h"}, {"h_act"});
  m.initializer("w2", random_tensor_f32({1000, 1280}, 3, 0.05f));
  m.initializer("b2", random_tensor_f32({1000}, 4, 0.2f));
  auto& g2 = m.node("Gemm", {"h_act", "w2", "b2"}, {"logits"});
  M::attr_int(g2, "transB", 1);
  m.initializer("w3", random_tensor_f32({1000, 300}, 5, 0.05f));
  m.node("MatMul", {"logits", "w3"}, {"y"});
  m.initializer("w4", random_tensor_f32({300, 16}, 6, 0.05f));
  m.node("MatMul", {"y", "w4"}, {"small"});
  m.output("small");
  m.output("logits");
  Graph g = testing::import_model(m);
  const BackendSpec& spec = onednn_region_backend();
  IndexSet all(g.nodes.size());
  for (const Node& n : g.nodes) all.add(static_cast<size_t>(&n - &g.nodes[0]));
  auto values = testing::reference_values(g);
  testing::CandidateCheck check = testing::check_candidate(g, spec, all, values, kKernelTolerance.rtol, 1e-4);
  EXPECT_TRUE(check.supported && check.mismatch.empty()) << check.mismatch;
}

// Matmul weights whose rows lie a multiple of 1 KiB apart are stored with padded rows (the
// AVX2 gemm reads them in place, and at those strides every row fell into the same cache
// sets): the desc is padded only for such plain weights, and products through it match the
// native reference in both oneDNN backends, with bias and GELU fused, 2-D and batched.
TEST(OnednnRegion, MatmulsWithPaddedWeightRowsMatchTheNativeReference) {
  using dnnl::memory;
  const memory::desc wide({768, 3072}, memory::data_type::f32, memory::format_tag::ab);
  std::optional<memory::desc> padded = onednn::padded_weights(wide);
  ASSERT_TRUE(padded.has_value());
  EXPECT_EQ(padded->dims(), wide.dims());
  EXPECT_EQ(padded->data.format_desc.blocking.strides[0], 3072 + 16);
  EXPECT_FALSE(
      onednn::padded_weights(memory::desc({768, 1000}, memory::data_type::f32, memory::format_tag::ab)));
  EXPECT_FALSE(
      onednn::padded_weights(memory::desc({768, 3072}, memory::data_type::f32, memory::format_tag::ba)));
  using M = testing::OnnxTestModel;
  using testing::random_tensor_f32;
  for (int64_t n : {256, 1024, 1000}) {
    for (bool batched : {false, true}) {
      M m(17);
      const int64_t rows = 24, k = 64;
      if (batched)
        m.input("x", {1, rows, k});
      else
        m.input("x", {rows, k});
      m.initializer("w", random_tensor_f32({k, n}, 7, 0.2f));
      m.initializer("b", random_tensor_f32({n}, 8, 0.2f));
      m.node("MatMul", {"x", "w"}, {"mm"});
      m.node("Add", {"mm", "b"}, {"h"});
      m.node("Relu", {"h"}, {"y"});
      m.output("y");
      Graph g = testing::import_model(m);
      IndexSet all(g.nodes.size());
      for (const Node& node : g.nodes) all.add(static_cast<size_t>(&node - &g.nodes[0]));
      auto values = testing::reference_values(g);
      for (const BackendSpec* spec : {&onednn_region_backend(), &onednn_backend()}) {
        testing::CandidateCheck c =
            testing::check_candidate(g, *spec, all, values, kKernelTolerance.rtol, 1e-4);
        EXPECT_TRUE(c.supported && c.mismatch.empty())
            << spec->name << ", N " << n << (batched ? ", batched" : "") << ": " << c.mismatch;
      }
    }
  }
}

// Linear layers as exporters write them, MatMul then Add of a constant row, the row read as the
// product's bias; one ends in an erf GELU (the region runs it as a pass of its own, split between
// threads on an output this large), one in a full-shaped constant Add that must stay an Add, one
// in a row of rank 3. Every prefix of each chain, on both oneDNN backends, at 1 and 2 threads.
TEST(OnednnRegion, LinearBiasRowsAndGeluTailsMatchTheNativeReference) {
  using M = testing::OnnxTestModel;
  using testing::random_tensor_f32;
  const int64_t rows = 80, k = 48, n = 1024;  // 81920 outputs: the GELU pass is shared by 2 threads
  M m(17);
  m.input("x", {1, rows, k});
  m.initializer("w1", random_tensor_f32({k, n}, 21, 0.3f));
  m.initializer("b1", random_tensor_f32({n}, 22, 0.5f));
  m.node("MatMul", {"x", "w1"}, {"h0"});
  m.node("Add", {"b1", "h0"}, {"h"});  // the row first, as some exporters order it
  m.initializer("sqrt2", Tensor::scalar<float>(1.41421356f));
  m.initializer("one", Tensor::scalar<float>(1.0f));
  m.initializer("half", Tensor::scalar<float>(0.5f));
  m.node("Div", {"h", "sqrt2"}, {"g0"});
  m.node("Erf", {"g0"}, {"g1"});
  m.node("Add", {"g1", "one"}, {"g2"});
  m.node("Mul", {"h", "g2"}, {"g3"});
  m.node("Mul", {"g3", "half"}, {"g"});
  m.initializer("w2", random_tensor_f32({n, k}, 23, 0.1f));
  m.initializer("full", random_tensor_f32({1, rows, k}, 24, 0.5f));
  m.node("MatMul", {"g", "w2"}, {"o0"});
  m.node("Add", {"o0", "full"}, {"o"});  // not a row: stays a post-op
  m.initializer("w3", random_tensor_f32({k, k}, 25, 0.3f));
  m.initializer("b3", random_tensor_f32({1, 1, k}, 26, 0.5f));
  m.node("MatMul", {"o", "w3"}, {"p0"});
  m.node("Add", {"p0", "b3"}, {"p1"});
  m.node("Relu", {"p1"}, {"y"});
  m.output("y");
  Graph g = testing::import_model(m);
  auto values = testing::reference_values(g);
  auto chain = [&](size_t from, size_t to) {
    IndexSet nodes(g.nodes.size());
    for (size_t i = from; i < to; ++i) nodes.add(i);
    return nodes;
  };
  // Each chain alone (both backends), and the three products as one region.
  std::vector<std::pair<size_t, size_t>> groups = {{0, 2}, {0, 7}, {7, 9}, {9, 11}, {9, 12}};
  for (const BackendSpec* spec : {&onednn_backend(), &onednn_region_backend()}) {
    if (spec == &onednn_region_backend()) groups.push_back({0, 12});
    for (const auto& [from, to] : groups)
      for (int threads : {1, 2}) {
        testing::CandidateCheck c =
            testing::check_candidate(g, *spec, chain(from, to), values, kKernelTolerance.rtol, 1e-4, threads);
        EXPECT_TRUE(c.supported && c.mismatch.empty()) << spec->name << ", nodes " << from << ".." << to
                                                       << ", " << threads << " thread(s): " << c.mismatch;
      }
  }
}

// ConvNeXt's block as torchvision exports it: depthwise 7x7, Permute to channels-last,
// LayerNorm, Linear, erf GELU (5 nodes), Linear, Permute back, layer scale, residual. In one
// region the Permutes are views and the GELU one eltwise; a Permute of a region input and
// one whose result leaves the region (the second output) must hold too.
TEST(OnednnRegion, ConvNextBlockWithPermutesMatchesTheNativeReference) {
  using M = testing::OnnxTestModel;
  using testing::random_tensor_f32;
  const int64_t c = 16, hw = 9;
  M m(17);
  m.input("x", {1, c, hw, hw});
  m.initializer("wd", random_tensor_f32({c, 1, 7, 7}, 11, 0.2f));
  m.initializer("bd", random_tensor_f32({c}, 12, 0.2f));
  auto& dw = m.node("Conv", {"x", "wd", "bd"}, {"d"});
  M::attr_int(dw, "group", c);
  M::attr_ints(dw, "pads", {3, 3, 3, 3});
  M::attr_ints(m.node("Transpose", {"d"}, {"t"}), "perm", {0, 2, 3, 1});
  m.initializer("ln_s", random_tensor_f32({c}, 13, 1.0f));
  m.initializer("ln_b", random_tensor_f32({c}, 14, 0.2f));
  M::attr_float(m.node("LayerNormalization", {"t", "ln_s", "ln_b"}, {"n"}), "epsilon", 1e-6f);
  m.initializer("w1", random_tensor_f32({c, 4 * c}, 15, 0.3f));
  m.initializer("b1", random_tensor_f32({4 * c}, 16, 0.2f));
  m.node("MatMul", {"n", "w1"}, {"h0"});
  m.node("Add", {"h0", "b1"}, {"h"});
  m.initializer("sqrt2", Tensor::scalar<float>(1.41421356f));
  m.initializer("one", Tensor::scalar<float>(1.0f));
  m.initializer("half", Tensor::scalar<float>(0.5f));
  m.node("Div", {"h", "sqrt2"}, {"g0"});
  m.node("Erf", {"g0"}, {"g1"});
  m.node("Add", {"g1", "one"}, {"g2"});
  m.node("Mul", {"h", "g2"}, {"g3"});
  m.node("Mul", {"g3", "half"}, {"g"});
  m.initializer("w2", random_tensor_f32({4 * c, c}, 17, 0.3f));
  m.initializer("b2", random_tensor_f32({c}, 18, 0.2f));
  m.node("MatMul", {"g", "w2"}, {"o0"});
  m.node("Add", {"o0", "b2"}, {"o"});
  M::attr_ints(m.node("Transpose", {"o"}, {"back"}), "perm", {0, 3, 1, 2});
  m.initializer("gamma", random_tensor_f32({c, 1, 1}, 19, 0.5f));
  m.node("Mul", {"gamma", "back"}, {"scaled"});
  m.node("Add", {"scaled", "x"}, {"y"});
  M::attr_ints(m.node("Transpose", {"x"}, {"x_t"}), "perm", {0, 2, 1, 3});  // of a region input
  m.output("y");
  m.output("x_t");
  Graph g = testing::import_model(m);
  const BackendSpec& spec = onednn_region_backend();
  IndexSet all(g.nodes.size());
  for (const Node& n : g.nodes) {
    ASSERT_TRUE(spec.supports_node(g, n)) << n.describe();
    all.add(static_cast<size_t>(&n - &g.nodes[0]));
  }
  auto values = testing::reference_values(g);
  SubGraph sub = make_subgraph(g, all);
  std::unique_ptr<Kernel> kernel = spec.compile(g, sub, CompileOptions{});
  std::vector<const Tensor*> args;
  for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
  HeapAllocator alloc;
  for (int run = 0; run < 2; ++run) {
    std::vector<Tensor> outs = kernel->run(args, alloc);
    ASSERT_EQ(outs.size(), sub.outputs.size());
    for (size_t k = 0; k < outs.size(); ++k)
      expect_close(outs[k], values[static_cast<size_t>(sub.outputs[k])],
                   g.value(sub.outputs[k]).name + " run " + std::to_string(run));
  }
  // Every prefix of the block as its own region: a Permute, or the GELU cut in the middle, at the
  // boundary (an Erf without the rest of its GELU is declined, nothing else may be).
  for (size_t cut = 1; cut < g.nodes.size(); ++cut) {
    IndexSet head(g.nodes.size());
    for (size_t i = 0; i < cut; ++i) head.add(i);
    testing::CandidateCheck r = testing::check_candidate(g, spec, head, values, kKernelTolerance.rtol, 1e-4);
    bool has_erf = false, has_gelu_root = false;
    for (size_t i = 0; i < cut; ++i) {
      has_erf = has_erf || g.nodes[i].op_type == "Erf";
      has_gelu_root = has_gelu_root || g.value(g.nodes[i].outputs[0]).name == "g";
    }
    bool partial_gelu = has_erf && !has_gelu_root;
    if (!partial_gelu) {
      EXPECT_TRUE(r.supported) << "cut at " << cut << ": " << r.mismatch;
    }
    if (r.supported) {
      EXPECT_TRUE(r.mismatch.empty()) << "cut at " << cut << ": " << r.mismatch;
    }
  }
}

// A DenseNet block as torchvision exports it: layer k concatenates x0..x(k-1) (one value
// feeds every later Concat), pre-activation BatchNorm+ReLU, 1x1 then 3x3 conv; the block
// ends in a Concat of all, then the transition (BN+ReLU, 1x1 conv, a Pad that pads nothing,
// AvgPool). In one region all the block's Concats share one destination; a Concat of the
// same values outside the family (`other`) must still get its own copy.
TEST(OnednnRegion, DenseBlockConcatFamilyMatchesTheNativeReference) {
  using M = testing::OnnxTestModel;
  using testing::random_tensor_f32;
  // Small: plain layouts; DenseNet's own widths: channel-blocked layouts and Winograd.
  for (auto [c0, growth, hw] : {std::tuple<int64_t, int64_t, int64_t>{32, 16, 8}, {64, 32, 28}}) {
    M m(17);
    m.input("x0", {1, c0, hw, hw});
    uint32_t seed = 40;
    auto bn_relu = [&](const std::string& in, int64_t c, const std::string& out) {
      std::string p = out + "_bn";
      m.initializer(p + "_s", random_tensor_f32({c}, seed++, 1.0f));
      m.initializer(p + "_b", random_tensor_f32({c}, seed++, 0.2f));
      m.initializer(p + "_m", random_tensor_f32({c}, seed++, 0.2f));
      Tensor var = random_tensor_f32({c}, seed++, 0.4f);
      for (int64_t i = 0; i < c; ++i) var.data<float>()[i] += 0.6f;
      m.initializer(p + "_v", var);
      m.node("BatchNormalization", {in, p + "_s", p + "_b", p + "_m", p + "_v"}, {p});
      m.node("Relu", {p}, {out});
    };
    auto conv = [&](const std::string& in, int64_t cin, int64_t cout, int64_t k, const std::string& out) {
      m.initializer(out + "_w", random_tensor_f32({cout, cin, k, k}, seed++, 0.2f));
      auto& c = m.node("Conv", {in, out + "_w"}, {out});
      if (k == 3) M::attr_ints(c, "pads", {1, 1, 1, 1});
    };
    std::vector<std::string> features = {"x0"};
    int64_t channels = c0;
    for (int layer = 1; layer <= 3; ++layer) {
      std::string l = "l" + std::to_string(layer);
      auto& cat = m.node("Concat", features, {l + "_cat"});
      M::attr_int(cat, "axis", 1);
      bn_relu(l + "_cat", channels, l + "_a");
      conv(l + "_a", channels, 4 * growth, 1, l + "_c1");
      bn_relu(l + "_c1", 4 * growth, l + "_b");
      conv(l + "_b", 4 * growth, growth, 3, l + "_x");
      features.push_back(l + "_x");
      channels += growth;
    }
    M::attr_int(m.node("Concat", features, {"block"}), "axis", 1);
    M::attr_int(m.node("Concat", {"l2_x", "l1_x"}, {"other"}), "axis", 1);  // not a prefix: its own copy
    bn_relu("block", channels, "t_a");
    conv("t_a", channels, c0, 1, "t_c");
    Tensor zeros(DType::Int64, {8});
    for (int64_t i = 0; i < 8; ++i) zeros.data<int64_t>()[i] = 0;
    m.initializer("no_pads", zeros);
    m.node("Pad", {"t_c", "no_pads"}, {"t_p"});
    auto& pool = m.node("AveragePool", {"t_p"}, {"y"});
    M::attr_ints(pool, "kernel_shape", {2, 2});
    M::attr_ints(pool, "strides", {2, 2});
    m.output("y");
    m.output("other");
    m.output("l2_cat");  // a member's result leaving the region
    Graph g = testing::import_model(m);
    const BackendSpec& spec = onednn_region_backend();
    IndexSet all(g.nodes.size());
    for (const Node& n : g.nodes) {
      ASSERT_TRUE(spec.supports_node(g, n)) << n.describe();
      all.add(static_cast<size_t>(&n - &g.nodes[0]));
    }
    auto values = testing::reference_values(g);
    SubGraph sub = make_subgraph(g, all);
    std::unique_ptr<Kernel> kernel = spec.compile(g, sub, CompileOptions{});
    std::vector<const Tensor*> args;
    for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
    HeapAllocator alloc;
    for (int run = 0; run < 2; ++run) {
      std::vector<Tensor> outs = kernel->run(args, alloc);
      ASSERT_EQ(outs.size(), sub.outputs.size());
      for (size_t k = 0; k < outs.size(); ++k)
        expect_close(
            outs[k], values[static_cast<size_t>(sub.outputs[k])],
            g.value(sub.outputs[k]).name + " run " + std::to_string(run) + " width " + std::to_string(c0));
    }
  }
}

}  // namespace
}  // namespace collage
