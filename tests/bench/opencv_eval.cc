// Evaluation of OpenCV DNN as a candidate graph-level backend: runs a
// whole model through cv::dnn::readNetFromONNX at one thread and reports its
// median latency and its largest difference from the native reference. A whole
// model is the largest region such a backend could be given (no boundary
// conversions at all), so if it loses there it cannot pay off on sub-regions.
// Not part of the suite; built only when libopencv-dnn-dev is installed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <string>
#include <vector>

#include "backends/native/native_kernel.h"
#include "backends/native/native_ops.h"
#include "core/import/onnx_import.h"
#include "core/ir/random_inputs.h"

using namespace collage;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: opencv_eval MODEL.onnx [REPEAT]\n");
    return 2;
  }
  int repeat = argc > 2 ? std::atoi(argv[2]) : 30;
  ImportOptions options;
  options.evaluator = native::evaluate_node;
  Graph graph = import_onnx_file(argv[1], options);
  std::vector<Tensor> inputs = random_inputs(graph, 7);
  Executor reference(graph, native::native_steps(graph));
  std::vector<Tensor> expected = reference.run(inputs);

  cv::setNumThreads(1);
  cv::dnn::Net net;
  try {
    net = cv::dnn::readNetFromONNX(argv[1]);
  } catch (const cv::Exception& e) {
    std::printf("opencv: cannot load: %s\n", e.what());
    return 0;
  }
  net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  net.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = graph.value(graph.inputs[i]);
    if (v.dtype != DType::Float32) {
      std::printf("opencv: input '%s' is %s, only float inputs are compared\n", v.name.c_str(),
                  dtype_name(v.dtype));
      return 0;
    }
    std::vector<int> dims(v.shape.begin(), v.shape.end());
    cv::Mat blob(static_cast<int>(dims.size()), dims.data(), CV_32F, inputs[i].raw());
    net.setInput(blob.clone(), v.name);
  }
  std::vector<std::string> names;
  for (ValueId out : graph.outputs) names.push_back(graph.value(out).name);
  std::vector<cv::Mat> outs;
  try {
    net.forward(outs, names);
  } catch (const cv::Exception& e) {
    std::printf("opencv: cannot run: %s\n", e.what());
    return 0;
  }
  double max_err = 0;
  for (size_t o = 0; o < outs.size() && o < expected.size(); ++o) {
    if (expected[o].dtype() != DType::Float32 || static_cast<int64_t>(outs[o].total()) != expected[o].size())
      continue;
    const float* want = expected[o].data<float>();
    const float* got = outs[o].ptr<float>();
    for (int64_t k = 0; k < expected[o].size(); ++k)
      max_err = std::max(max_err, double(std::fabs(want[k] - got[k])));
  }
  std::vector<double> ms;
  for (int r = 0; r < repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    net.forward(outs, names);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("opencv median %.3f ms max_abs_err %.3g\n", ms[ms.size() / 2], max_err);
  return 0;
}
