// Benchmark (not part of the suite): stream-gemm-int8's product on each path this CPU allows, over
// the transformer layers of the int8 peer tables (BERT-base and GPT-2 at 128 tokens, ViT-B/16 at
// 197), weights hot, the epilogue each layer takes there (bias; bias and erf GELU on the first
// feed-forward). Median of 61 runs after 5 untimed, at THREADS threads (argument, default 1).
// usage: build/tests/collage_int8_gemm_grid [THREADS]
// prints: path m k n epilogue median_ms min_ms G_multiply-adds/s
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backends/stream_gemm_int8/int8_gemm.h"

namespace {

using collage::stream_gemm::EpilogueStep;
namespace int8 = collage::stream_gemm_int8;

struct Layer {
  int64_t m, k, n;
  bool gelu;
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  if (!int8::supported()) {
    std::printf("stream-gemm-int8 cannot run here: %s\n", int8::unsupported_reason());
    return 0;
  }
  const Layer layers[] = {{128, 768, 768, false},  {128, 768, 2304, false}, {128, 768, 3072, true},
                          {128, 3072, 768, false}, {197, 768, 2304, false}, {197, 768, 768, false},
                          {197, 768, 3072, true},  {197, 3072, 768, false}};
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  std::printf("%-12s %5s %5s %5s %-9s %10s %10s %8s  (threads: %d)\n", "path", "m", "k", "n", "epilogue",
              "median_ms", "min_ms", "GMAC/s", threads);
  for (const Layer& l : layers) {
    std::vector<int8_t> q(static_cast<size_t>(l.k * l.n));
    for (int8_t& v : q) v = static_cast<int8_t>(static_cast<int>(rng() % 127) - 63);
    std::vector<float> scale(static_cast<size_t>(l.n), 0.01f), bias(static_cast<size_t>(l.n), 0.1f);
    const int8::PackedInt8Weights w = int8::pack_int8_weights(q.data(), scale.data(), l.k, l.n);
    std::vector<float> a(static_cast<size_t>(l.m * l.k)), c(static_cast<size_t>(l.m * l.n));
    for (float& v : a) v = normal(rng);
    std::vector<EpilogueStep> epilogue{{EpilogueStep::Kind::AddRow, bias.data(), 0}};
    if (l.gelu) epilogue.push_back({EpilogueStep::Kind::GeluErf, nullptr, 0});
    for (int8::Int8Path path : int8::usable_paths()) {
      std::vector<double> ms;
      for (int run = 0; run < 66; ++run) {
        const auto t0 = std::chrono::steady_clock::now();
        int8::gemm_on(path, a.data(), l.m, l.k, w, c.data(), l.n, epilogue, threads);
        if (run >= 5)
          ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      const double median = ms[ms.size() / 2];
      std::printf("%-12s %5ld %5ld %5ld %-9s %10.3f %10.3f %8.1f\n", int8::path_name(path),
                  static_cast<long>(l.m), static_cast<long>(l.k), static_cast<long>(l.n),
                  l.gelu ? "bias+gelu" : "bias", median, ms.front(),
                  static_cast<double>(l.m * l.k * l.n) / median / 1e6);
    }
  }
  return 0;
}
