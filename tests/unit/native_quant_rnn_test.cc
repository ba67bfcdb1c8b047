// Native quantization kernels (quant_ops.cc) and recurrent layers (rnn_ops.cc):
// the edges ONNX's node tests do not cover (rounding ties, saturation, per-row /
// per-channel zero points, bidirectional and ragged sequences, GRU
// linear_before_reset, LSTM input_forget) and every bad-input refusal.
#include <cmath>

#include "tests/unit/native_data_helpers.h"

namespace collage {
namespace {

using namespace data_test;

Tensor i8(Shape shape, const std::vector<int8_t>& v) {
  return Tensor::from_vector<int8_t>(std::move(shape), v);
}
Tensor scalar_f(float v) { return Tensor::scalar<float>(v); }
Attribute strings(std::vector<std::string> v) {
  Attribute a;
  a.kind = AttrKind::Strings;
  a.strings = std::move(v);
  return a;
}

TEST(NativeQuant, QuantizeRoundsTiesToEvenAndSaturates) {
  Tensor x = f32({7}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.0f, -300.0f});
  Tensor y = run1(make_node("QuantizeLinear"), {x, scalar_f(1.0f), Tensor::scalar<uint8_t>(0)});
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{0, 2, 2, 0, 0, 255, 0}));
  Tensor z = run1(make_node("QuantizeLinear"), {x, scalar_f(1.0f), Tensor::scalar<int8_t>(0)});
  EXPECT_EQ(values<int8_t>(z), (std::vector<int8_t>{0, 2, 2, 0, -2, 127, -128}));
  // No zero point: uint8.
  EXPECT_EQ(run1(make_node("QuantizeLinear"), {x, scalar_f(2.0f)}).dtype(), DType::UInt8);
}

TEST(NativeQuant, QuantizePerAxisAndBlocked) {
  Tensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Node axis0 = make_node("QuantizeLinear", {{"axis", Attribute::of_int(0)}});
  Tensor y = run1(axis0, {x, f32({2}, {1, 2}), u8({2}, {0, 10})});
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{1, 2, 3, 4, 12, 13, 14, 14}));
  Node blocked =
      make_node("QuantizeLinear", {{"axis", Attribute::of_int(1)}, {"block_size", Attribute::of_int(3)}});
  Tensor b = run1(blocked, {x, f32({2, 2}, {1, 2, 1, 4}), u8({2, 2}, {0, 0, 0, 0})});
  EXPECT_EQ(values<uint8_t>(b), (std::vector<uint8_t>{1, 2, 3, 2, 5, 6, 7, 2}));
}

TEST(NativeQuant, QuantizeRejectsBadScales) {
  Tensor x = f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  Node axis1 = make_node("QuantizeLinear", {{"axis", Attribute::of_int(1)}});
  EXPECT_EQ(error_kind([&] { run1(axis1, {x, f32({3}, {1, 1, 1})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QuantizeLinear", {{"axis", Attribute::of_int(5)}}), {x, f32({2}, {1, 1})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QuantizeLinear"), {x, scalar_f(0.0f)});
            }),
            ErrorKind::InvalidModel);
  Node bad_block = make_node("QuantizeLinear", {{"block_size", Attribute::of_int(-1)}});
  EXPECT_EQ(error_kind([&] {
              run1(bad_block, {x, f32({2, 4}, std::vector<float>(8, 1))});
            }),
            ErrorKind::InvalidModel);
  Node blocked = make_node("QuantizeLinear", {{"block_size", Attribute::of_int(2)}});
  EXPECT_EQ(error_kind([&] {
              run1(blocked, {x, f32({2, 3}, std::vector<float>(6, 1))});
            }),
            ErrorKind::InvalidModel);
  // Zero point shape must match the scale's; output_dtype must agree with it.
  EXPECT_EQ(error_kind([&] {
              run1(axis1, {x, f32({4}, {1, 1, 1, 1}), u8({2}, {0, 0})});
            }),
            ErrorKind::InvalidModel);
  Node int8_out = make_node("QuantizeLinear", {{"output_dtype", Attribute::of_int(3)}});
  EXPECT_EQ(error_kind([&] {
              run1(int8_out, {x, scalar_f(1), Tensor::scalar<uint8_t>(0)});
            }),
            ErrorKind::InvalidModel);
  Node float8_out = make_node("QuantizeLinear", {{"output_dtype", Attribute::of_int(17)}});
  EXPECT_EQ(error_kind([&] { run1(float8_out, {x, scalar_f(1)}); }), ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QuantizeLinear"), {x, scalar_f(1), Tensor::scalar<int32_t>(0)});
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QuantizeLinear"), {iota_i64({2}), Tensor::scalar<int64_t>(1)});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeQuant, DequantizeTypesAndRefusals) {
  Tensor y = run1(make_node("DequantizeLinear"),
                  {i8({3}, {-128, 0, 127}), scalar_f(0.5f), Tensor::scalar<int8_t>(-1)});
  EXPECT_EQ(values<float>(y), (std::vector<float>{-63.5f, 0.5f, 64.0f}));
  Tensor q = run1(make_node("DequantizeLinear"), {i32({2}, {-7, 9}), scalar_f(2.0f)});
  EXPECT_EQ(values<float>(q), (std::vector<float>{-14.0f, 18.0f}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("DequantizeLinear"), {i32({1}, {1}), scalar_f(1), i32({}, {3})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("DequantizeLinear"), {u8({1}, {1}), scalar_f(1), Tensor::scalar<int8_t>(0)});
            }),
            ErrorKind::InvalidModel);
  // A float16 scale gives a float16 result (the native kernels compute halves in float32).
  EXPECT_EQ(run1(make_node("DequantizeLinear"), {u8({1}, {1}), Tensor(DType::Float16, {})}).dtype(),
            DType::Float16);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("DequantizeLinear"), {f32({1}, {1}), scalar_f(1)});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeQuant, DynamicQuantizeOfZerosHasZeroScale) {
  auto outs = run(make_node("DynamicQuantizeLinear", {}, 3), {f32({3}, {0, 0, 0})});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(values<uint8_t>(outs[0]), (std::vector<uint8_t>{0, 0, 0}));
  EXPECT_EQ(values<float>(outs[1])[0], 0.0f);
  EXPECT_EQ(values<uint8_t>(outs[2])[0], 0);
  EXPECT_EQ(error_kind([&] { run(make_node("DynamicQuantizeLinear", {}, 3), {f32({1}, {NAN})}); }),
            ErrorKind::InvalidModel);
}

TEST(NativeQuant, MatMulIntegerPerRowAndPerColumnZeroPoints) {
  Tensor a = u8({2, 2}, {1, 2, 3, 4}), b = u8({2, 2}, {5, 6, 7, 8});
  Tensor y = run1(make_node("MatMulInteger"), {a, b, u8({2}, {1, 3}), u8({2}, {5, 0})});
  // (a - [1;3]) = [[0,1],[0,1]]; (b - [5,0]) = [[0,6],[2,8]].
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{2, 8, 2, 8}));
  // 1-D A (numpy: a row vector whose dim is dropped) against batched B.
  Tensor v = run1(make_node("MatMulInteger"), {u8({2}, {1, 1}), u8({3, 2, 1}, {1, 2, 3, 4, 5, 6})});
  EXPECT_EQ(v.shape(), (Shape{3, 1}));
  EXPECT_EQ(values<int32_t>(v), (std::vector<int32_t>{3, 7, 11}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("MatMulInteger"), {a, u8({3, 1}, {1, 2, 3})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("MatMulInteger"), {a, b, u8({3}, {1, 2, 3})});
            }),
            ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("MatMulInteger"), {a, b, Tensor::scalar<int8_t>(0)});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("MatMulInteger"), {f32({1, 1}, {1}), b});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeQuant, QLinearMatMulSaturatesPerSpec) {
  // 100 * 100 / 0.2 = 50000 saturates to 255 (ONNX 1.16's reference wrapped: onnx/onnx#7835).
  Tensor one = scalar_f(1.0f), zero = Tensor::scalar<uint8_t>(0);
  Tensor y = run1(make_node("QLinearMatMul"),
                  {u8({1, 1}, {100}), one, zero, u8({1, 1}, {100}), one, zero, scalar_f(0.2f), zero});
  EXPECT_EQ(values<uint8_t>(y), (std::vector<uint8_t>{255}));
  Tensor i8zero = Tensor::scalar<int8_t>(0);
  Tensor z = run1(make_node("QLinearMatMul"),
                  {i8({1, 1}, {-100}), one, i8zero, i8({1, 1}, {100}), one, i8zero, scalar_f(0.5f), i8zero});
  EXPECT_EQ(values<int8_t>(z), (std::vector<int8_t>{-128}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QLinearMatMul"),
                   {u8({1, 1}, {1}), one, zero, u8({1, 1}, {1}), one, zero, scalar_f(0.0f), zero});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QLinearMatMul"), {u8({1, 1}, {1}), one, zero, u8({1, 1}, {1}), one, zero,
                                                f32({2}, {1, 1}), u8({2}, {0, 0})});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeQuant, ConvIntegerPerChannelZeroPointAndRefusals) {
  Tensor x = u8({1, 1, 2, 2}, {1, 2, 3, 4});
  Tensor w = u8({2, 1, 1, 1}, {2, 3});
  Tensor y = run1(make_node("ConvInteger"), {x, w, Tensor::scalar<uint8_t>(1), u8({2}, {1, 0})});
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{0, 1, 2, 3, 0, 3, 6, 9}));
  EXPECT_EQ(error_kind([&] {
              run1(make_node("ConvInteger", {{"group", Attribute::of_int(2)}}), {x, w});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("ConvInteger"), {x, w, Tensor(), u8({3}, {0, 0, 0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("ConvInteger", {{"strides", Attribute::of_ints({0, 1})}}), {x, w});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("ConvInteger"), {u8({2, 2}, {1, 2, 3, 4}), w});
            }),
            ErrorKind::Unsupported);
  Tensor one = scalar_f(1.0f), zero = Tensor::scalar<uint8_t>(0);
  // QLinearConv: bias must be int32 [M]; per-channel w_scale must have M values.
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QLinearConv"), {x, one, zero, w, one, zero, one, zero, i32({1}, {0})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("QLinearConv"), {x, one, zero, w, f32({3}, {1, 1, 1}), zero, one, zero});
            }),
            ErrorKind::InvalidModel);
  Tensor q = run1(make_node("QLinearConv"),
                  {x, one, zero, w, f32({2}, {1, 100}), zero, one, zero, i32({2}, {1, 0})});
  EXPECT_EQ(values<uint8_t>(q), (std::vector<uint8_t>{3, 5, 7, 9, 255, 255, 255, 255}));
}

// ---- recurrent layers ----

float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }

TEST(NativeRnn, BidirectionalIsForwardPlusReverse) {
  // seq 3, batch 2, input 2, hidden 2.
  Tensor x = f32({3, 2, 2}, {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f, 0.9f, 0.2f, -0.1f, 0.3f});
  std::vector<float> wf = {0.1f, 0.2f, -0.3f, 0.4f}, wr = {-0.2f, 0.5f, 0.3f, 0.1f};
  std::vector<float> rf = {0.3f, -0.1f, 0.2f, 0.2f}, rr = {0.1f, 0.1f, -0.4f, 0.3f};
  auto cat = [](std::vector<float> a, const std::vector<float>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  Node bi = make_node("RNN", {{"direction", Attribute::of_string("bidirectional")}}, 2);
  auto both = run(bi, {x, f32({2, 2, 2}, cat(wf, wr)), f32({2, 2, 2}, cat(rf, rr))});
  Node fwd = make_node("RNN", {}, 2);
  Node rev = make_node("RNN", {{"direction", Attribute::of_string("reverse")}}, 2);
  auto f = run(fwd, {x, f32({1, 2, 2}, wf), f32({1, 2, 2}, rf)});
  auto r = run(rev, {x, f32({1, 2, 2}, wr), f32({1, 2, 2}, rr)});
  ASSERT_EQ(both[0].shape(), (Shape{3, 2, 2, 2}));
  auto yb = values<float>(both[0]), yf = values<float>(f[0]), yr = values<float>(r[0]);
  for (int t = 0; t < 3; ++t)
    for (int i = 0; i < 4; ++i) {
      EXPECT_FLOAT_EQ(yb[static_cast<size_t>(t * 8 + i)], yf[static_cast<size_t>(t * 4 + i)]);
      EXPECT_FLOAT_EQ(yb[static_cast<size_t>(t * 8 + 4 + i)], yr[static_cast<size_t>(t * 4 + i)]);
    }
  // Reverse direction: its final state is the output at t = 0.
  auto hr = values<float>(r[1]);
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(hr[static_cast<size_t>(i)], yr[static_cast<size_t>(i)]);
}

TEST(NativeRnn, SequenceLensZeroPadAndKeepLastState) {
  // seq 3, batch 2, input 1, hidden 1; batch 1 has length 1. W = R = 1: h = tanh(x + h).
  Tensor x = f32({3, 2, 1}, {1, 2, 3, 4, 5, 6});
  for (const char* dir : {"forward", "reverse"}) {
    Node n = make_node("RNN", {{"direction", Attribute::of_string(dir)}}, 2);
    auto outs = run(n, {x, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1}), Tensor(), i32({2}, {3, 1})});
    auto y = values<float>(outs[0]), h = values<float>(outs[1]);
    EXPECT_FLOAT_EQ(y[1], std::tanh(2.0f)) << dir;  // batch 1, t 0: its only step
    EXPECT_EQ(y[3], 0.0f) << dir;
    EXPECT_EQ(y[5], 0.0f) << dir;
    EXPECT_FLOAT_EQ(h[1], std::tanh(2.0f)) << dir;
  }
  Node n = make_node("RNN", {}, 2);
  EXPECT_EQ(error_kind([&] {
              run(n, {x, f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1}), Tensor(), i32({2}, {4, 1})});
            }),
            ErrorKind::InvalidModel);
}

TEST(NativeRnn, GruLinearBeforeReset) {
  // input 1, hidden 1, one step; gates z, r, h. W = [wz, wr, wh], R = [rz, rr, rh], B = [Wb; Rb].
  float x = 0.5f, h0 = 0.3f, wz = 0.2f, wr = -0.4f, wh = 0.7f, rz = 0.1f, rr = 0.6f, rh = -0.5f;
  float bz = 0.05f, br = -0.1f, bh = 0.2f, rbz = 0.3f, rbr = 0.1f, rbh = -0.25f;
  float z = sigmoid(x * wz + h0 * rz + bz + rbz), r = sigmoid(x * wr + h0 * rr + br + rbr);
  float cand0 = std::tanh(x * wh + (r * h0) * rh + rbh + bh);
  float cand1 = std::tanh(x * wh + r * (h0 * rh + rbh) + bh);
  for (int lbr : {0, 1}) {
    Node n = make_node("GRU", {{"linear_before_reset", Attribute::of_int(lbr)}}, 2);
    auto outs = run(n, {f32({1, 1, 1}, {x}), f32({1, 3, 1}, {wz, wr, wh}), f32({1, 3, 1}, {rz, rr, rh}),
                        f32({1, 6}, {bz, br, bh, rbz, rbr, rbh}), Tensor(), f32({1, 1, 1}, {h0})});
    float cand = lbr ? cand1 : cand0;
    EXPECT_NEAR(values<float>(outs[1])[0], (1 - z) * cand + z * h0, 1e-6) << "linear_before_reset=" << lbr;
  }
}

TEST(NativeRnn, LstmInputForgetClipAndActivations) {
  // input 1, hidden 1, one step, gates i, o, f, c; input_forget couples f = 1 - i; clip 0.5.
  float x = 2.0f, wi = 1.0f, wo = 0.5f, wf = 3.0f, wc = -1.0f, c0 = 0.4f;
  Node n =
      make_node("LSTM", {{"input_forget", Attribute::of_int(1)}, {"clip", Attribute::of_float(0.5f)}}, 3);
  auto outs = run(n, {f32({1, 1, 1}, {x}), f32({1, 4, 1}, {wi, wo, wf, wc}), f32({1, 4, 1}, {0, 0, 0, 0}),
                      Tensor(), Tensor(), Tensor(), f32({1, 1, 1}, {c0})});
  float i = sigmoid(0.5f), o = sigmoid(0.5f), c = std::tanh(-0.5f);
  float cn = (1 - i) * c0 + i * c;
  EXPECT_NEAR(values<float>(outs[2])[0], cn, 1e-6);
  EXPECT_NEAR(values<float>(outs[1])[0], o * std::tanh(cn), 1e-6);
  // Affine/LeakyRelu consume activation_alpha in order.
  Node a = make_node("RNN",
                     {{"activations", strings({"Affine"})},
                      {"activation_alpha", Attribute::of_floats({3.0f})},
                      {"activation_beta", Attribute::of_floats({1.0f})}},
                     2);
  auto ya = run(a, {f32({1, 1, 1}, {2}), f32({1, 1, 1}, {1}), f32({1, 1, 1}, {1})});
  EXPECT_FLOAT_EQ(values<float>(ya[1])[0], 7.0f);
}

TEST(NativeRnn, RefusesBadAttributesAndShapes) {
  Tensor x = f32({1, 1, 1}, {1}), w = f32({1, 1, 1}, {1}), r = f32({1, 1, 1}, {1});
  auto kind = [&](Node n, std::vector<Tensor> in) { return error_kind([&] { run(n, in); }); };
  EXPECT_EQ(kind(make_node("RNN", {{"direction", Attribute::of_string("sideways")}}, 2), {x, w, r}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {{"layout", Attribute::of_int(2)}}, 2), {x, w, r}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {}, 2), {x, f32({1, 1, 2}, {1, 1}), r}), ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {}, 2), {x, w, f32({1, 1, 2}, {1, 1})}), ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("GRU", {}, 2), {x, w, r}), ErrorKind::InvalidModel);  // W not 3*hidden rows
  EXPECT_EQ(kind(make_node("RNN", {{"hidden_size", Attribute::of_int(4)}}, 2), {x, w, r}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {{"activations", strings({"Gelu"})}}, 2), {x, w, r}),
            ErrorKind::Unsupported);
  EXPECT_EQ(kind(make_node("RNN", {{"activations", strings({"Tanh", "Tanh"})}}, 2), {x, w, r}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {{"clip", Attribute::of_float(-1.0f)}}, 2), {x, w, r}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {}, 2), {x, w, r, Tensor(), Tensor(), f32({1, 2, 1}, {0, 0})}),
            ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {}, 2), {f32({1, 1}, {1}), w, r}), ErrorKind::InvalidModel);
  EXPECT_EQ(kind(make_node("RNN", {}, 2), {iota_i64({1, 1, 1}), w, r}), ErrorKind::Unsupported);
}

}  // namespace
}  // namespace collage
