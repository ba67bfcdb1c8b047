// The sample model zoo, built with OnnxBuilder in the shape torch.onnx.export
// writes them (opset 17, PyTorch node names, symbolic "batch" dims).
#pragma once

#include <string>
#include <vector>

#include "resources/samples/onnx_builder.h"

namespace collage::samples {

struct SampleInfo {
  std::string name;
  std::string description;
  bool small;  // bundled / fast enough for unit tests
};

const std::vector<SampleInfo>& sample_list();
// Throws InvalidInput for unknown names.
OnnxBuilder build_sample(const std::string& name, uint64_t seed = 1);

}  // namespace collage::samples
