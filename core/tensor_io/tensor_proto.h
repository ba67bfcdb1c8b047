// Conversion between onnx::TensorProto and Tensor, and .pb tensor files.
#pragma once

#include <string>
#include <vector>

#include "core/ir/graph.h"
#include "core/ir/tensor.h"

namespace onnx {
class TensorProto;
}

namespace collage {

// `base_dir` resolves external data locations; they must stay inside it.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);
onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

Tensor read_tensor_file(const std::string& path);  // a serialised TensorProto (.pb)
// A .pb holding a value of `kind` (graph.h): a TensorProto, a SequenceProto of tensors or an
// OptionalProto, read into the Tensor form of that value (tensor.h). `elem` is the element
// type an empty sequence or optional takes. Throws InvalidInput naming the file.
Tensor read_value_file(const std::string& path, ValueKind kind, DType elem);
// A dense tensor as a TensorProto, a sequence as a SequenceProto, an empty optional as an
// empty OptionalProto (what read_value_file reads back).
void write_tensor_file(const Tensor& tensor, const std::string& name, const std::string& path);

// Value names become file names: characters outside [A-Za-z0-9_.-] become '_'.
std::string sanitize_file_name(const std::string& name);

// Writes tensors[i] as DIR/<sanitized names[i]>.pb, creating DIR; throws Io naming what failed.
void write_tensor_files(const std::string& dir, const std::vector<std::string>& names,
                        const std::vector<Tensor>& tensors);

}  // namespace collage
