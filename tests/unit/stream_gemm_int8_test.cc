// stream-gemm-int8: each code path this CPU runs (AVX512-VNNI, AVX2) against the integer product
// computed here from the documented quantization (activations per tensor in u8 or per row in 7 bits,
// round half to even; the shared 7-bit weights), over edge shapes (rows not a multiple of 4 or 6, k not of 4,
// columns not of 8, 16 or 64), the largest pair sums, split over threads, with each epilogue order; then the
// backend's candidates against the native fp32 reference within an int8 budget. Skipped, naming the
// reason, where the CPU lacks AVX2.
#include "backends/stream_gemm_int8/stream_gemm_int8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/stream_gemm_int8/int8_gemm.h"
#include "core/backend_api/cpu_isa.h"
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

// The product the kernel must give, in double: A quantized as documented (the range of all of A over
// 255 levels on the VNNI path, each row's own over 127 on AVX2), times the 7-bit weights, exact
// integer sums, then the two scales.
std::vector<double> int8_product(const std::vector<float>& a, int64_t m, int64_t lda, int64_t k,
                                 const QuantizedWeights& w, int64_t n,
                                 stream_gemm_int8::ActivationScheme scheme) {
  auto range = [&](int64_t r0, int64_t r1) {
    float lo = 0, hi = 0;
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t p = 0; p < k; ++p) {
        lo = std::min(lo, a[static_cast<size_t>(i * lda + p)]);
        hi = std::max(hi, a[static_cast<size_t>(i * lda + p)]);
      }
    return std::pair{lo, hi};
  };
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    const auto [lo, hi] = scheme.per_row ? range(i, i + 1) : range(0, m);
    const float scale = hi > lo ? (hi - lo) / static_cast<float>(scheme.levels) : 1.0f;
    const long zp = std::lround(-lo / scale);
    for (int64_t j = 0; j < n; ++j) {
      int64_t sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        const long q =
            std::clamp<long>(std::lrint(a[static_cast<size_t>(i * lda + p)] / scale) + zp, 0, scheme.levels);
        sum += (q - zp) * w.q[static_cast<size_t>(p * n + j)];
      }
      out[static_cast<size_t>(i * n + j)] =
          static_cast<double>(sum) * scale * static_cast<double>(w.scale[static_cast<size_t>(j)]);
    }
  }
  return out;
}

stream_gemm_int8::PackedInt8Weights pack(const QuantizedWeights& w, int64_t k, int64_t n) {
  return stream_gemm_int8::pack_int8_weights(w.q.data(), w.scale.data(), k, n);
}

TEST(StreamGemmInt8, IsUnavailableWithAReasonExactlyWhereTheCpuLacksAvx2) {
  EXPECT_EQ(stream_gemm_int8_backend().precision, Precision::Int8);
  const std::string why = unavailable_reason(stream_gemm_int8_backend());
  EXPECT_EQ(why.empty(), stream_gemm_int8::supported()) << why;
  if (!why.empty()) {
    EXPECT_NE(why.find("AVX2"), std::string::npos) << why;
  }
  // The VNNI path first wherever it may run; AVX2 wherever the kernel does.
  const std::vector<stream_gemm_int8::Int8Path> paths = stream_gemm_int8::usable_paths();
  EXPECT_EQ(!paths.empty() && paths.front() == stream_gemm_int8::Int8Path::Avx512Vnni,
            cpu_isa_allows(IsaLevel::Avx512Vnni));
  EXPECT_EQ(std::count(paths.begin(), paths.end(), stream_gemm_int8::Int8Path::Avx2) == 1,
            stream_gemm_int8::supported());
}

TEST(StreamGemmInt8, WeightsOutsideSevenBitsAreRefused) {
  const int8_t q[2] = {63, -64};
  const float scale[2] = {1.0f, 1.0f};
  try {
    stream_gemm_int8::pack_int8_weights(q, scale, 1, 2);
    ADD_FAILURE() << "a weight of -64 was packed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("-64"), std::string::npos) << e.what();
  }
}

// The largest sums the quantization allows: every activation at its top level or 0 against weights
// of +-63, so AVX2's 16-bit sums of two pairs reach 4 * 127 * 63, 763 short of saturating.
TEST(StreamGemmInt8, LargestPairSumsAreExactOnEveryPath) {
  if (!stream_gemm_int8::supported()) GTEST_SKIP() << stream_gemm_int8::unsupported_reason();
  const int64_t m = 5, k = 37, n = 19;
  std::vector<float> a(static_cast<size_t>(m * k));
  for (size_t i = 0; i < a.size(); ++i) a[i] = i % 7 == 3 ? 0.0f : 2.0f;  // zero point 0, q 0 or the top
  std::vector<float> wf(static_cast<size_t>(k * n));
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) wf[static_cast<size_t>(p * n + j)] = j % 2 ? -0.5f : 0.5f;  // +-63
  const QuantizedWeights w = quantize_weights(wf.data(), k, n);
  ASSERT_EQ(std::abs(w.q[0]), kWeightLevels);
  for (stream_gemm_int8::Int8Path path : stream_gemm_int8::usable_paths()) {
    const std::vector<double> want =
        int8_product(a, m, k, k, w, n, stream_gemm_int8::activation_scheme(path));
    std::vector<float> c(static_cast<size_t>(m * n));
    stream_gemm_int8::gemm_on(path, a.data(), m, k, pack(w, k, n), c.data(), n, {}, 1);
    for (size_t i = 0; i < c.size(); ++i)
      ASSERT_NEAR(c[i], want[i], 1e-5 * std::fabs(want[i]))
          << stream_gemm_int8::path_name(path) << " at " << i;
  }
}

TEST(StreamGemmInt8, ProductIsTheExactIntegerProductOverEdgeShapes) {
  if (!stream_gemm_int8::supported()) GTEST_SKIP() << stream_gemm_int8::unsupported_reason();
  struct Case {
    int64_t m, k, n;
  };
  std::vector<Case> cases;
  for (int64_t m : {1, 3, 4, 5, 6, 7, 13})
    for (int64_t k : {1, 3, 4, 5, 67})
      for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 64, 70, 130}) cases.push_back({m, k, n});
  // Large enough for a team of two threads (groups of 4 panels split between them).
  cases.push_back({37, 300, 130});
  cases.push_back({200, 1030, 70});
  for (stream_gemm_int8::Int8Path path : stream_gemm_int8::usable_paths())
    for (const Case& cs : cases)
      for (int threads : {1, 2}) {
        const int64_t m = cs.m, k = cs.k, n = cs.n, lda = k + 3, ldc = n + 5;  // leading dims past the rows
        auto a = random_floats(static_cast<size_t>(m * lda), 1);
        // An asymmetric range (a zero point away from the middle), and rows of different ranges.
        for (size_t i = 0; i < a.size(); ++i)
          a[i] = (a[i] * 3.0f + 0.5f) * static_cast<float>(1 + i / lda % 4);
        auto wf = random_floats(static_cast<size_t>(k * n), 2);
        const QuantizedWeights w = quantize_weights(wf.data(), k, n);
        std::vector<float> c(static_cast<size_t>(m * ldc), 7.0f);
        stream_gemm_int8::gemm_on(path, a.data(), m, lda, pack(w, k, n), c.data(), ldc, {}, threads);
        const std::vector<double> want =
            int8_product(a, m, lda, k, w, n, stream_gemm_int8::activation_scheme(path));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < ldc; ++j) {
            const float got = c[static_cast<size_t>(i * ldc + j)];
            if (j >= n) {  // past the columns: untouched
              ASSERT_EQ(got, 7.0f) << stream_gemm_int8::path_name(path) << " " << m << "x" << k << "x" << n;
              continue;
            }
            const double y = want[static_cast<size_t>(i * n + j)];
            ASSERT_NEAR(got, y, 1e-5 + 1e-5 * std::fabs(y))
                << stream_gemm_int8::path_name(path) << " " << m << "x" << k << "x" << n << " at " << i << ","
                << j << ", " << threads << " threads";
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
  for (stream_gemm_int8::Int8Path path : stream_gemm_int8::usable_paths()) {
    const std::vector<double> product =
        int8_product(a, m, k, k, w, n, stream_gemm_int8::activation_scheme(path));
    for (size_t o = 0; o < orders.size(); ++o)
      for (int threads : {1, 2}) {
        std::vector<float> c(static_cast<size_t>(m * n));
        stream_gemm_int8::gemm_on(path, a.data(), m, k, packed, c.data(), n, orders[o], threads);
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
                << stream_gemm_int8::path_name(path) << ", order " << o << ", " << threads << " threads, at "
                << i << "," << j;
          }
      }
  }
}

TEST(StreamGemmInt8, NonFiniteActivationsAreAnErrorNamingThem) {
  if (!stream_gemm_int8::supported()) GTEST_SKIP() << stream_gemm_int8::unsupported_reason();
  const int64_t m = 40, k = 200, n = 140;
  auto wf = random_floats(static_cast<size_t>(k * n), 31);
  const QuantizedWeights w = quantize_weights(wf.data(), k, n);
  const auto packed = pack(w, k, n);
  for (stream_gemm_int8::Int8Path path : stream_gemm_int8::usable_paths())
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
      for (int threads : {1, 2}) {
        auto a = random_floats(static_cast<size_t>(m * k), 32);
        a[static_cast<size_t>((m - 1) * k + 7)] = bad;  // in the second thread's rows
        std::vector<float> c(static_cast<size_t>(m * n));
        try {
          stream_gemm_int8::gemm_on(path, a.data(), m, k, packed, c.data(), n, {}, threads);
          ADD_FAILURE() << stream_gemm_int8::path_name(path) << ": no error for " << bad;
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
