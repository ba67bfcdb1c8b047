// Benchmark (not part of the suite): where oneDNN's Winograd beats its direct convolution on
// this machine, for the rule in backends/onednn (winograd_pays). Every 3x3, stride-1, pad-1
// layer over a grid of sizes (hw 7-112, 16-512 channels in and out, up to 2.5 GFLOP), both
// algorithms in the layouts oneDNN picks, median of 11 runs, at OMP_NUM_THREADS threads.
// usage: OMP_NUM_THREADS=1 build/tests/collage_winograd_grid
// prints: hw in out direct_ms winograd_ms ratio direct_impl winograd_impl
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

namespace {

using dnnl::memory;

double median_ms(int in, int out, int hw, dnnl::algorithm alg, std::string& impl) {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  auto any = [](memory::dims d) { return memory::desc(d, memory::data_type::f32, memory::format_tag::any); };
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, alg, any({1, in, hw, hw}),
                                    any({out, in, 3, 3}), any({1, out, hw, hw}), {1, 1}, {1, 1}, {1, 1});
  dnnl::convolution_forward::primitive_desc pd(d, engine);
  impl = pd.impl_info_str();
  memory src(pd.src_desc(), engine), weights(pd.weights_desc(), engine), dst(pd.dst_desc(), engine);
  dnnl::convolution_forward conv(pd);
  std::vector<double> ms;
  for (int i = 0; i < 11; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    conv.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
    stream.wait();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main() {
  std::printf("hw in out direct_ms winograd_ms ratio direct_impl winograd_impl\n");
  for (int hw : {7, 14, 28, 56, 112})
    for (int in : {16, 32, 64, 128, 256, 512})
      for (int out : {16, 32, 64, 128, 256, 512}) {
        if (2.0 * hw * hw * in * out * 9 > 2.5e9) continue;
        std::string direct_impl, wino_impl = "none";
        double direct = median_ms(in, out, hw, dnnl::algorithm::convolution_direct, direct_impl);
        double wino = -1;
        try {
          wino = median_ms(in, out, hw, dnnl::algorithm::convolution_winograd, wino_impl);
        } catch (const dnnl::error&) {
        }
        std::printf("%d %d %d %.4f %.4f %.2f %s %s\n", hw, in, out, direct, wino,
                    wino > 0 ? direct / wino : 0, direct_impl.c_str(), wino_impl.c_str());
        std::fflush(stdout);
      }
}
