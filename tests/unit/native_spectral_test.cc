// Window generators, DFT and STFT: edges the ONNX node tests do not reach and
// every bad-input refusal.
#include <cmath>
#include <numbers>

#include "tests/unit/native_data_helpers.h"

namespace collage::data_test {
namespace {

TEST(NativeSpectral, WindowEdges) {
  Node hann = make_node("HannWindow", {{"periodic", Attribute::of_int(0)}});
  EXPECT_EQ(values<float>(run1(hann, {i64({}, {1})})), (std::vector<float>{1.0f}));  // not 0/0
  EXPECT_EQ(run1(hann, {i64({}, {0})}).size(), 0);
  Tensor w = run1(make_node("HammingWindow", {{"output_datatype", Attribute::of_int(11)}}), {i32({}, {4})});
  ASSERT_EQ(w.dtype(), DType::Float64);
  EXPECT_NEAR(w.data<double>()[0], 25.0 / 46.0 - 21.0 / 46.0, 1e-12);
  EXPECT_NEAR(w.data<double>()[2], 25.0 / 46.0 + 21.0 / 46.0, 1e-12);
  EXPECT_EQ(error_kind([&] { run1(hann, {i64({}, {-3})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(hann, {i64({2}, {3, 4})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(hann, {f32({}, {3})}); }), ErrorKind::Unsupported);
  EXPECT_EQ(error_kind([&] {
              run1(make_node("BlackmanWindow", {{"output_datatype", Attribute::of_int(8)}}), {i64({}, {3})});
            }),
            ErrorKind::Unsupported);
}

TEST(NativeSpectral, DftRoundTripAndRefusals) {
  // [1, 4, 1] real signal; forward then inverse gives it back (imaginary 0).
  Tensor x = f32({1, 4, 1}, {1, 2, 3, 4});
  Node fwd = make_node("DFT");
  fwd.opset = 20;
  Tensor spec = run1(fwd, {x});
  EXPECT_EQ(spec.shape(), (Shape{1, 4, 2}));
  EXPECT_NEAR(spec.data<float>()[0], 10.0f, 1e-5f);  // DC term
  Node inv = make_node("DFT", {{"inverse", Attribute::of_int(1)}});
  inv.opset = 20;
  std::vector<float> back = values<float>(run1(inv, {spec}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(back[static_cast<size_t>(2 * i)], static_cast<float>(i + 1), 1e-5f);
    EXPECT_NEAR(back[static_cast<size_t>(2 * i + 1)], 0.0f, 1e-5f);
  }
  // dft_length pads with zeros; onesided keeps length / 2 + 1 bins.
  Node one = make_node("DFT", {{"onesided", Attribute::of_int(1)}});
  one.opset = 20;
  EXPECT_EQ(run1(one, {x, i64({}, {8})}).shape(), (Shape{1, 5, 2}));
  EXPECT_EQ(error_kind([&] { run1(fwd, {x, i64({}, {0})}); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(fwd, {x, Tensor(), i64({}, {2})});
            }),
            ErrorKind::InvalidModel);  // complex dim
  EXPECT_EQ(error_kind([&] {
              run1(fwd, {f32({4, 3}, std::vector<float>(12, 0.0f))});
            }),
            ErrorKind::InvalidModel);  // last dim must be 1 or 2
  EXPECT_EQ(error_kind([&] { run1(fwd, {i64({1, 4, 1}, {1, 2, 3, 4})}); }), ErrorKind::Unsupported);
}

TEST(NativeSpectral, StftShapesAndRefusals) {
  Tensor signal = iota_f32({1, 16, 1});
  Node stft = make_node("STFT");
  stft.opset = 17;
  // No window: frame_length decides; onesided (default) keeps 8 / 2 + 1 bins.
  EXPECT_EQ(run1(stft, {signal, i64({}, {4}), Tensor(), i64({}, {8})}).shape(), (Shape{1, 3, 5, 2}));
  EXPECT_EQ(error_kind([&] {
              run1(stft, {signal, i64({}, {0}), Tensor(), i64({}, {8})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(stft, {signal, i64({}, {4}), Tensor(), i64({}, {32})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] {
              run1(stft, {signal, i64({}, {4}), iota_f32({5}), i64({}, {8})});
            }),
            ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run1(stft, {signal, i64({}, {4})}); }), ErrorKind::InvalidModel);
}

TEST(NativeSpectral, MelWeightMatrixRefusals) {
  Node mel = make_node("MelWeightMatrix");
  auto run_mel = [&](int64_t bins, int64_t dft, int64_t rate, float lo, float hi) {
    return run1(mel, {i64({}, {bins}), i64({}, {dft}), i64({}, {rate}), f32({}, {lo}), f32({}, {hi})});
  };
  EXPECT_EQ(run_mel(8, 16, 8192, 0, 4096).shape(), (Shape{9, 8}));
  EXPECT_EQ(error_kind([&] { run_mel(0, 16, 8192, 0, 4096); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run_mel(8, -1, 8192, 0, 4096); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run_mel(8, 16, 0, 0, 4096); }), ErrorKind::InvalidModel);
  EXPECT_EQ(error_kind([&] { run_mel(8, 16, 8192, 100, 50); }), ErrorKind::InvalidModel);
}

}  // namespace
}  // namespace collage::data_test
