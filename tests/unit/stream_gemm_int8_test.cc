// stream-gemm-int8: the VNNI kernel against the integer product computed here from the documented
// quantization (activations per tensor, u8, round half to even; the shared 7-bit weights), over edge
// shapes (rows not a multiple of 6, k not of 4, columns not of 16 or 64), split over threads, with
// each epilogue order; then the backend's candidates against the native fp32 reference within an int8
// budget. Skipped, naming the reason, where the CPU lacks AVX512-VNNI.
#include "backends/stream_gemm_int8/stream_gemm_int8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/stream_gemm_int8/int8_gemm.h"
#include "core/backend_api/int8_weights.h"
#include "core/ir/accuracy.h"

namespace collage {
namespace {

using namespace collage::testing;
using stream_gemm::EpilogueStep;
using Kind = EpilogueStep::Kind;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  Tensor t = random_tensor_f32({static_cast<int64_t>(n)}, seed);
  return {t.data<float>(), t.data<float>() + n};
}

// The product the kernel must give, in double: A quantized as documented, times the 7-bit weights,
// exact integer sums, then the two scales.
std::vector<double> int8_product(const std::vector<float>& a, int64_t m, int64_t lda, int64_t k,
                                 const QuantizedWeights& w, int64_t n) {
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      lo = std::min(lo, a[static_cast<size_t>(i * lda + p)]);
      hi = std::max(hi, a[static_cast<size_t>(i * lda + p)]);
    }
  const float scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
  const long zp = std::lround(-lo / scale);
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const long q = std::clamp<long>(std::lrint(a[static_cast<size_t>(i * lda + p)] / scale) + zp, 0, 255);
        sum += (q - zp) * w.q[static_cast<size_t>(p * n + j)];
      }
      out[static_cast<size_t>(i * n + j)] =
          static_cast<double>(sum) * scale * static_cast<double>(w.scale[static_cast<size_t>(j)]);
    }
  return out;
}

stream_gemm_int8::PackedInt8Weights pack(const QuantizedWeights& w, int64_t k, int64_t n) {
  return stream_gemm_int8::pack_int8_weights(w.q.data(), w.scale.data(), k, n);
}

TEST(StreamGemmInt8, IsUnavailableWithAReasonExactlyWhereTheCpuLacksVnni) {
  EXPECT_EQ(stream_gemm_int8_backend().precision, Precision::Int8);
  const std::string why = unavailable_reason(stream_gemm_int8_backend());
  EXPECT_EQ(why.empty(), stream_gemm_int8::supported()) << why;
  if (!why.empty()) {
    EXPECT_NE(why.find("AVX512-VNNI"), std::string::npos) << why;
  }
}

TEST(StreamGemmInt8, ProductIsTheExactIntegerProductOverEdgeShapes) {
  if (!stream_gemm_int8::supported()) GTEST_SKIP() << stream_gemm_int8::unsupported_reason();
  struct Case {
    int64_t m, k, n;
  };
  std::vector<Case> cases;
  for (int64_t m : {1, 5, 6, 7, 13})
    for (int64_t k : {1, 3, 4, 5, 67})
      for (int64_t n : {1, 15, 16, 17, 64, 70, 130}) cases.push_back({m, k, n});
  // Large enough for a team of two threads (groups of 4 panels split between them).
  cases.push_back({37, 300, 130});
  cases.push_back({200, 1030, 70});
  for (const Case& cs : cases)
    for (int threads : {1, 2}) {
      const int64_t m = cs.m, k = cs.k, n = cs.n, lda = k + 3, ldc = n + 5;  // leading dims past the rows
      auto a = random_floats(static_cast<size_t>(m * lda), 1);
      for (float& x : a) x = x * 3.0f + 0.5f;  // an asymmetric range: a zero point away from the middle
      auto wf = random_floats(static_cast<size_t>(k * n), 2);
      const QuantizedWeights w = quantize_weights(wf.data(), k, n);
      std::vector<float> c(static_cast<size_t>(m * ldc), 7.0f);
      stream_gemm_int8::gemm(a.data(), m, lda, pack(w, k, n), c.data(), ldc, {}, threads);
      const std::vector<double> want = int8_product(a, m, lda, k, w, n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const float got = c[static_cast<size_t>(i * ldc + j)];
          if (j >= n) {  // past the columns: untouched
            ASSERT_EQ(got, 7.0f) << m << "x" << k << "x" << n;
            continue;
          }
          const double y = want[static_cast<size_t>(i * n + j)];
          ASSERT_NEAR(got, y, 1e-5 + 1e-5 * std::fabs(y))
              << m << "x" << k << "x" << n << " at " << i << "," << j << ", " << threads << " threads";
        }
    }
}

// The kernel takes the leading bias rows and one residual, an activation after them and a residual
// after that as it stores; every other step runs after it. Each order, at 1 and 2 threads, against the steps
// applied one by one in double precision.
TEST(StreamGemmInt8, EpilogueStepsRunInTheirOrder) {
  if (!stream_gemm_int8::supported()) GTEST_SKIP() << stream_gemm_int8::unsupported_reason();
  const int64_t m = 31, k = 301, n = 150;  // 3 groups of panels, the last partial; a team of two
  auto a = random_floats(static_cast<size_t>(m * k), 21);
  auto wf = random_floats(static_cast<size_t>(k * n), 22);
  auto bias = random_floats(static_cast<size_t>(n), 23);
  auto bias2 = random_floats(static_cast<size_t>(n), 24);
  auto residual = random_floats(static_cast<size_t>(m * n), 25);
  const QuantizedWeights w = quantize_weights(wf.data(), k, n);
  const auto packed = pack(w, k, n);
  const std::vector<double> product = int8_product(a, m, k, k, w, n);
  const EpilogueStep full{Kind::AddFull, residual.data(), n}, row{Kind::AddRow, bias.data(), 0},
      row2{Kind::AddRow, bias2.data(), 0}, relu{Kind::Relu}, erf{Kind::GeluErf}, tanh{Kind::GeluTanh};
  const std::vector<std::vector<EpilogueStep>> orders = {{full},
                                                         {row, full},
                                                         {full, row},
                                                         {row, erf},
                                                         {row, tanh, full},
                                                         {relu, row},
                                                         {row, row2, relu},
                                                         {full, full},
                                                         {full, erf, full, relu},
                                                         {erf, row, tanh}};
  for (size_t o = 0; o < orders.size(); ++o)
    for (int threads : {1, 2}) {
      std::vector<float> c(static_cast<size_t>(m * n));
      stream_gemm_int8::gemm(a.data(), m, k, packed, c.data(), n, orders[o], threads);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const size_t at = static_cast<size_t>(i * n + j);
          double y = product[at];
          for (const EpilogueStep& s : orders[o])
            y = s.kind == Kind::AddFull  ? y + residual[at]
                : s.kind == Kind::AddRow ? y + s.operand[j]
                : s.kind == Kind::Relu   ? std::max(y, 0.0)
                : s.kind == Kind::GeluErf
                    ? 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)))
                    : 0.5 * y * (1 + std::tanh(std::sqrt(2 / M_PI) * (y + 0.044715 * y * y * y)));
          ASSERT_NEAR(c[at], y, 1e-4 + 1e-4 * std::fabs(y))
              << "order " << o << ", " << threads << " threads, at " << i << "," << j;
        }
    }
}

TEST(StreamGemmInt8, NonFiniteActivationsAreAnErrorNamingThem) {
  if (!stream_gemm_int8::supported()) GTEST_SKIP() << stream_gemm_int8::unsupported_reason();
  const int64_t m = 40, k = 200, n = 140;
  auto wf = random_floats(static_cast<size_t>(k * n), 31);
  const QuantizedWeights w = quantize_weights(wf.data(), k, n);
  const auto packed = pack(w, k, n);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    for (int threads : {1, 2}) {
      auto a = random_floats(static_cast<size_t>(m * k), 32);
      a[static_cast<size_t>((m - 1) * k + 7)] = bad;  // in the second thread's rows
      std::vector<float> c(static_cast<size_t>(m * n));
      try {
        stream_gemm_int8::gemm(a.data(), m, k, packed, c.data(), n, {}, threads);
        ADD_FAILURE() << "no error for " << bad;
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(e.what()).find("non-finite"), std::string::npos) << e.what();
      }
    }
}

// A BERT feed-forward block as torch.onnx.export writes it, and a Gemm with transB, alpha and beta:
// every candidate within an int8 budget of the native fp32 reference, at 1 and 2 threads.
TEST(StreamGemmInt8, CandidatesAgreeWithTheReferenceWithinAnInt8Budget) {
  if (!stream_gemm_int8::supported()) GTEST_SKIP() << stream_gemm_int8::unsupported_reason();
  OnnxTestModel m(17);
  feed_forward_block(m, 13, 64, 96);
  m.input("z", {9, 40});
  m.initializer("wt", random_tensor_f32({33, 40}, 31));
  m.initializer("c", random_tensor_f32({33}, 32));
  auto& gemm = m.node("Gemm", {"z", "wt", "c"}, {"gz"});
  OnnxTestModel::attr_int(gemm, "transB", 1);
  OnnxTestModel::attr_float(gemm, "alpha", 0.5f);
  OnnxTestModel::attr_float(gemm, "beta", 2.0f);
  m.node("Relu", {"gz"}, {"y2"});
  m.output("y");
  m.output("y2");
  Graph g = import_model(m);
  std::vector<Tensor> values = reference_values(g);
  const AccuracyBudget budget = parse_accuracy("max-rel=3e-2,cosine=0.999");
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&stream_gemm_int8_backend()})) {
    SubGraph sub = make_subgraph(g, c.nodes);
    for (int threads : {1, 2}) {
      CompileOptions options;
      options.threads = threads;
      std::unique_ptr<Kernel> kernel = stream_gemm_int8_backend().compile(g, sub, options);
      std::vector<const Tensor*> args;
      for (ValueId v : sub.inputs) args.push_back(&values[static_cast<size_t>(v)]);
      HeapAllocator alloc;
      std::vector<Tensor> got = kernel->run(args, alloc);
      ASSERT_EQ(got.size(), 1u);
      AccuracyMeasure acc =
          measure_accuracy(got[0], values[static_cast<size_t>(sub.outputs[0])], budget, c.label, false);
      EXPECT_TRUE(acc.ok()) << c.label << ": " << acc.failure;
      EXPECT_GT(acc.max_rel, 0) << c.label << ": int8 and fp32 should not agree exactly on random data";
    }
    labels.insert(c.label);
  }
  for (const char* want :
       {"MatMul", "MatMul+Add", "MatMul+Add+Div+Erf+Add+Mul+Mul", "MatMul+Add+Add", "Gemm+Relu"})
    EXPECT_TRUE(labels.count(want)) << want;
}

}  // namespace
}  // namespace collage
