#include "core/ir/random_inputs.h"

namespace collage {

namespace {
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed) {
  Tensor t(dtype, shape);  // zero-filled: the integer and bool case
  uint64_t state = seed;
  if (dtype == DType::Float32) {
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.size(); ++i)
      p[i] = static_cast<float>(static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
  } else if (dtype == DType::Float64) {
    double* p = t.data<double>();
    for (int64_t i = 0; i < t.size(); ++i)
      p[i] = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53 * 2.0 - 1.0;
  } else if (is_half_dtype(dtype)) {  // the float32 values, rounded to the half type
    uint16_t* p = static_cast<uint16_t*>(t.raw());
    for (int64_t i = 0; i < t.size(); ++i) {
      float f = static_cast<float>(static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53 * 2.0 - 1.0);
      p[i] = dtype == DType::Float16 ? float_to_half(f) : float_to_bfloat16(f);
    }
  }
  return t;
}

std::vector<Tensor> random_inputs(const Graph& graph, uint64_t seed) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const Value& v = graph.value(graph.inputs[i]);
    if (v.kind == ValueKind::Sequence || v.kind == ValueKind::OptionalSequence)
      inputs.push_back(Tensor::sequence(v.dtype, {}));
    else if (v.kind == ValueKind::OptionalTensor)
      inputs.push_back(Tensor::none(v.dtype));
    else
      inputs.push_back(random_tensor(v.dtype, v.shape, seed + 7919 * i));
  }
  return inputs;
}

}  // namespace collage
