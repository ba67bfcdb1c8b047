// Conversion between onnx::TensorProto and Tensor, and .pb tensor files.
#pragma once

#include <string>
#include <vector>

#include "core/ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace collage {

// `base_dir` resolves external data locations; they must stay inside it.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

Tensor read_tensor_file(const std::string& path);  // a serialised TensorProto (.pb)
void write_tensor_file(const Tensor& tensor, const std::string& name, const std::string& path);

// Value names become file names: characters outside [A-Za-z0-9_.-] become '_'.
std::string sanitize_file_name(const std::string& name);

// Writes tensors[i] as DIR/<sanitized names[i]>.pb, creating DIR; throws Io naming what failed.
void write_tensor_files(const std::string& dir, const std::vector<std::string>& names,
                        const std::vector<Tensor>& tensors);

}  // namespace collage
