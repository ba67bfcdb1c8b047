// TensorProto (.pb input files): parse, then convert to a Tensor.
#include "core/tensor_io/tensor_proto.h"
#include "onnx/onnx_pb.h"
#include "tests/fuzz/fuzz_harness.h"

namespace collage::fuzz {

int fuzz_tensor_proto(const uint8_t* data, size_t size) {
  return guarded("tensor_proto", [&] {
    onnx::TensorProto proto;
    // read_tensor_file's refusal for unparsable bytes; only the conversion is of interest.
    if (!proto.ParseFromArray(data, static_cast<int>(size))) return;
    tensor_from_proto(proto, "/nonexistent-collage-fuzz");
  });
}

}  // namespace collage::fuzz

COLLAGE_FUZZ_TARGET(fuzz_tensor_proto)
