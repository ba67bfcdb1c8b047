// stream-gemm: the packed micro-kernel (each instruction set the CPU runs) against a
// double-precision product over the edge shapes (rows not a multiple of 6, columns not of 16 or
// 32, k of 1), split over threads, with each epilogue
// step; then the backend's candidates on exporter-shaped blocks against the native reference.
#include "backends/stream_gemm/stream_gemm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/stream_gemm/packed_gemm.h"

namespace collage {
namespace {

using namespace collage::testing;
using stream_gemm::EpilogueStep;
using Kind = EpilogueStep::Kind;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  Tensor t = random_tensor_f32({static_cast<int64_t>(n)}, seed);
  return {t.data<float>(), t.data<float>() + n};
}

TEST(StreamGemm, PackedProductMatchesDoublePrecisionOverEdgeShapes) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  for (int64_t m : {1, 5, 6, 7, 16, 23})
    for (int64_t k : {1, 3, 64, 100})
      for (int64_t n : {1, 8, 15, 16, 17, 32, 40, 70})
        for (bool transposed : {false, true})
          for (stream_gemm::Isa isa : stream_gemm::isas())
            for (int threads : {1, 2}) {
              const int64_t lda = k + 3, ldc = n + 5;  // leading dims wider than the rows
              auto a = random_floats(static_cast<size_t>(m * lda), 1);
              auto w = random_floats(static_cast<size_t>(k * n), 2);
              std::vector<float> c(static_cast<size_t>(m * ldc), 7.0f);
              auto packed = stream_gemm::pack_weights(w.data(), k, n, transposed ? k : n, transposed);
              stream_gemm::gemm(a.data(), m, lda, packed, c.data(), ldc, {}, threads, false, isa);
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < ldc; ++j) {
                  const float got = c[static_cast<size_t>(i * ldc + j)];
                  if (j >= n) {  // past the columns: untouched
                    ASSERT_EQ(got, 7.0f) << m << "x" << k << "x" << n;
                    continue;
                  }
                  double want = 0;
                  for (int64_t p = 0; p < k; ++p)
                    want += static_cast<double>(a[static_cast<size_t>(i * lda + p)]) *
                            w[static_cast<size_t>(transposed ? j * k + p : p * n + j)];
                  ASSERT_NEAR(got, want, 1e-5 + 1e-5 * std::fabs(want))
                      << m << "x" << k << "x" << n << " at " << i << "," << j << (transposed ? " T" : "")
                      << " threads " << threads << " isa " << static_cast<int>(isa);
                }
            }
}

// Accumulating: C = C + A * W, also through the partial last panel, and with an epilogue after.
TEST(StreamGemm, AccumulatingAddsTheProductToWhatCHolds) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int64_t m = 7, k = 40, n = 37, ldc = n + 3;
  auto a = random_floats(static_cast<size_t>(m * k), 3);
  auto w = random_floats(static_cast<size_t>(k * n), 4);
  auto bias = random_floats(static_cast<size_t>(n), 5);
  auto packed = stream_gemm::pack_weights(w.data(), k, n, n, false);
  for (stream_gemm::Isa isa : stream_gemm::isas())
    for (int threads : {1, 2}) {
      std::vector<float> c = random_floats(static_cast<size_t>(m * ldc), 6), before = c;
      stream_gemm::gemm(a.data(), m, k, packed, c.data(), ldc, {{Kind::AddRow, bias.data(), 0}}, threads,
                        true, isa);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const size_t at = static_cast<size_t>(i * ldc + j);
          if (j >= n) {
            ASSERT_EQ(c[at], before[at]) << "past the columns: untouched";
            continue;
          }
          double want = before[at] + static_cast<double>(bias[static_cast<size_t>(j)]);
          for (int64_t p = 0; p < k; ++p)
            want +=
                static_cast<double>(a[static_cast<size_t>(i * k + p)]) * w[static_cast<size_t>(p * n + j)];
          ASSERT_NEAR(c[at], want, 1e-5 + 1e-5 * std::fabs(want))
              << i << "," << j << " threads " << threads << " isa " << static_cast<int>(isa);
        }
    }
}

// More rows than one L2-sized chunk (k = 3000: chunks of 54 rows, so 130 rows are 54 + 54 + 22):
// every chunk's rows get their own residual rows and bias, at 1 and 2 threads.
TEST(StreamGemm, RowsBeyondOneChunkKeepTheirOwnEpilogueOperands) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int64_t m = 130, k = 3000, n = 37;
  auto a = random_floats(static_cast<size_t>(m * k), 11);
  auto w = random_floats(static_cast<size_t>(k * n), 12);
  auto bias = random_floats(static_cast<size_t>(n), 13);
  auto residual = random_floats(static_cast<size_t>(m * n), 14);
  auto packed = stream_gemm::pack_weights(w.data(), k, n, n, false);
  for (stream_gemm::Isa isa : stream_gemm::isas())
    for (int threads : {1, 2}) {
      std::vector<float> c(static_cast<size_t>(m * n));
      stream_gemm::gemm(a.data(), m, k, packed, c.data(), n,
                        {{Kind::AddRow, bias.data(), 0}, {Kind::AddFull, residual.data(), n}}, threads, false,
                        isa);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want =
              static_cast<double>(bias[static_cast<size_t>(j)]) + residual[static_cast<size_t>(i * n + j)];
          double magnitude = 1;  // fp32 sums of 3000 terms: the error scales with the terms' size
          for (int64_t p = 0; p < k; ++p) {
            const double term =
                static_cast<double>(a[static_cast<size_t>(i * k + p)]) * w[static_cast<size_t>(p * n + j)];
            want += term;
            magnitude += std::fabs(term);
          }
          ASSERT_NEAR(c[static_cast<size_t>(i * n + j)], want, 1e-5 * magnitude)
              << "row " << i << " column " << j << ", threads " << threads << " isa "
              << static_cast<int>(isa);
        }
    }
}

TEST(StreamGemm, EpilogueStepsMatchTheirDefinitions) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int64_t m = 7, k = 5, n = 21;  // 21 columns: one full panel, a partial one, an 8-lane tail
  auto a = random_floats(static_cast<size_t>(m * k), 3);
  auto w = random_floats(static_cast<size_t>(k * n), 4);
  auto bias = random_floats(static_cast<size_t>(n), 5);
  auto residual = random_floats(static_cast<size_t>(m * n), 6);
  for (float& x : a) x *= 6.0f;  // spread the GELU inputs over [-3, 3] and beyond
  auto packed = stream_gemm::pack_weights(w.data(), k, n, n, false);
  for (Kind act : {Kind::Relu, Kind::GeluErf, Kind::GeluTanh}) {
    std::vector<EpilogueStep> steps = {
        {Kind::AddRow, bias.data(), 0}, {act}, {Kind::AddFull, residual.data(), n}};
    std::vector<float> c(static_cast<size_t>(m * n));
    stream_gemm::gemm(a.data(), m, k, packed, c.data(), n, steps, 1);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double h = bias[static_cast<size_t>(j)];
        for (int64_t p = 0; p < k; ++p)
          h += static_cast<double>(a[static_cast<size_t>(i * k + p)]) * w[static_cast<size_t>(p * n + j)];
        double y = act == Kind::Relu ? std::max(h, 0.0)
                   : act == Kind::GeluErf
                       ? 0.5 * h * (1 + std::erf(h / std::sqrt(2.0)))
                       : 0.5 * h * (1 + std::tanh(std::sqrt(2 / M_PI) * (h + 0.044715 * h * h * h)));
        y += residual[static_cast<size_t>(i * n + j)];
        ASSERT_NEAR(c[static_cast<size_t>(i * n + j)], y, 1e-4 + 1e-4 * std::fabs(y))
            << "activation " << static_cast<int>(act) << " at " << i << "," << j;
      }
  }
}

// The kernel takes a leading AddFull (as its initial accumulators) and the AddRow after it (as it
// stores) itself; every other step runs after it. Each order, accumulating or not, at 1 and 2
// threads, against the steps applied one by one in double precision.
TEST(StreamGemm, EpilogueStepsRunInTheirOrderWhereverTheKernelTakesThem) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int64_t m = 13, k = 9, n = 37;  // two full panels and a partial one; two row blocks and a rest
  auto a = random_floats(static_cast<size_t>(m * k), 21);
  auto w = random_floats(static_cast<size_t>(k * n), 22);
  auto bias = random_floats(static_cast<size_t>(n), 23);
  auto residual = random_floats(static_cast<size_t>(m * n), 24);
  auto start = random_floats(static_cast<size_t>(m * n), 25);
  auto packed = stream_gemm::pack_weights(w.data(), k, n, n, false);
  const EpilogueStep full{Kind::AddFull, residual.data(), n}, row{Kind::AddRow, bias.data(), 0},
      relu{Kind::Relu}, gelu{Kind::GeluErf};
  const std::vector<std::vector<EpilogueStep>> orders = {
      {full}, {full, row}, {full, row, gelu}, {row, full}, {relu, row}, {full, relu, row}, {row, row}};
  for (size_t o = 0; o < orders.size(); ++o)
    for (bool accumulate : {false, true})
      for (stream_gemm::Isa isa : stream_gemm::isas())
        for (int threads : {1, 2}) {
          std::vector<float> c = start;
          stream_gemm::gemm(a.data(), m, k, packed, c.data(), n, orders[o], threads, accumulate, isa);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              const size_t at = static_cast<size_t>(i * n + j);
              double y = accumulate ? start[at] : 0.0;
              for (int64_t p = 0; p < k; ++p)
                y += static_cast<double>(a[static_cast<size_t>(i * k + p)]) *
                     w[static_cast<size_t>(p * n + j)];
              for (const EpilogueStep& s : orders[o])
                y = s.kind == Kind::AddFull  ? y + residual[at]
                    : s.kind == Kind::AddRow ? y + bias[static_cast<size_t>(j)]
                    : s.kind == Kind::Relu   ? std::max(y, 0.0)
                                             : 0.5 * y * (1 + std::erf(y / std::sqrt(2.0)));
              ASSERT_NEAR(c[at], y, 1e-4 + 1e-4 * std::fabs(y))
                  << "order " << o << (accumulate ? " accumulating" : "") << ", " << threads
                  << " threads, isa " << static_cast<int>(isa) << ", at " << i << "," << j;
            }
        }
}

// Every candidate compiles and agrees with the native reference; returns the labels.
std::set<std::string> check_stream(const Graph& g, const std::string& what) {
  auto values = reference_values(g);
  std::set<std::string> labels;
  for (const Candidate& c : enumerate_candidates(g, {&stream_gemm_backend()})) {
    for (int threads : {1, 2}) {
      CandidateCheck r = check_candidate(g, stream_gemm_backend(), c.nodes, values, 1e-4, 1e-4, threads);
      EXPECT_TRUE(r.supported) << what << " " << c.label << ": " << r.mismatch;
      EXPECT_TRUE(r.mismatch.empty())
          << what << " " << c.label << " (" << threads << " threads): " << r.mismatch;
    }
    labels.insert(c.label);
  }
  return labels;
}

// A BERT feed-forward block as torch.onnx.export writes it: MatMul, bias Add, erf GELU,
// MatMul, bias Add, residual Add.
TEST(StreamGemm, TransformerFeedForwardBlockAgreesWithTheReference) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  OnnxTestModel m(17);
  feed_forward_block(m, 13, 24, 40);
  m.output("y");
  auto labels = check_stream(import_model(m), "feed-forward");
  for (const char* want : {"MatMul", "MatMul+Add", "MatMul+Add+Div+Erf+Add+Mul+Mul", "MatMul+Add+Add"})
    EXPECT_TRUE(labels.count(want)) << want;
}

// Gemm with transB, alpha and beta (folded at pack time), then Relu; a MatMul whose operand has
// too many rows for one L2-sized chunk (512 x 1024 floats) is offered and agrees too.
TEST(StreamGemm, GemmAttributesFoldAndLargeProductsRunInChunks) {
  if (!stream_gemm::supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  OnnxTestModel m(17);
  m.input("x", {9, 20});
  m.initializer("w", random_tensor_f32({33, 20}, 31));
  m.initializer("c", random_tensor_f32({33}, 32));
  auto& gemm = m.node("Gemm", {"x", "w", "c"}, {"g"});
  OnnxTestModel::attr_int(gemm, "transB", 1);
  OnnxTestModel::attr_float(gemm, "alpha", 0.5f);
  OnnxTestModel::attr_float(gemm, "beta", 2.0f);
  m.node("Relu", {"g"}, {"y"});
  m.input("big", {1, 512, 1024});  // 512 rows x 1024: three chunks of 156 rows and one of 44
  m.initializer("wb", random_tensor_f32({1024, 8}, 33));
  m.node("MatMul", {"big", "wb"}, {"z"});
  m.output("y");
  m.output("z");
  Graph g = import_model(m);
  auto labels = check_stream(g, "gemm");
  EXPECT_TRUE(labels.count("Gemm+Relu"));
  EXPECT_TRUE(labels.count("MatMul")) << "the 512 x 1024 operand was not offered";
}

}  // namespace
}  // namespace collage
