#include "core/tensor_io/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "onnx/onnx-data_pb.h"
#include "onnx/onnx_pb.h"

namespace collage {

namespace {

std::string read_external(const onnx::TensorProto& proto, const std::string& base_dir,
                          size_t expected_bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& entry : proto.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = std::stoll(entry.value());
    else if (entry.key() == "length")
      length = std::stoll(entry.value());
  }
  const std::string what = "external data of tensor '" + proto.name() + "'";
  if (location.empty()) throw Error(ErrorKind::InvalidModel, what + " has no location");
  namespace fs = std::filesystem;
  fs::path rel(location);
  if (rel.is_absolute() || location.find("..") != std::string::npos)
    throw Error(ErrorKind::InvalidModel, what + ": location '" + location + "' leaves the model's directory");
  fs::path path = fs::path(base_dir) / rel;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, what + ": cannot open '" + path.string() + "'");
  in.seekg(0, std::ios::end);
  int64_t file_size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = file_size - offset;
  if (offset < 0 || offset > file_size || length > file_size - offset)
    throw Error(ErrorKind::InvalidModel, what + ": offset/length lie outside '" + path.string() + "'");
  if (static_cast<size_t>(length) != expected_bytes)
    throw Error(ErrorKind::InvalidModel, what + " has " + std::to_string(length) +
                                             " bytes, its shape needs " + std::to_string(expected_bytes));
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) throw Error(ErrorKind::Io, what + ": short read from '" + path.string() + "'");
  return bytes;
}

template <class Field, class T>
void copy_field(const Field& field, Tensor& t, const std::string& name) {
  if (field.size() != t.size())
    throw Error(ErrorKind::InvalidModel, "tensor '" + name + "' has " + std::to_string(field.size()) +
                                             " values, its shape needs " + std::to_string(t.size()));
  T* out = static_cast<T*>(t.raw());
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<T>(field.Get(i));
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir) {
  DType dtype = dtype_from_onnx(proto.data_type());
  Shape shape(proto.dims().begin(), proto.dims().end());
  // The data's size is checked against the shape BEFORE allocating: a few bytes of
  // proto may declare dims of billions of elements.
  const int64_t elements = shape_size(shape);
  const size_t elem_bytes = dtype_size(dtype);
  if (elem_bytes && elements > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(elem_bytes))
    throw Error(ErrorKind::InvalidModel,
                "tensor '" + proto.name() + "' of shape " + shape_to_string(shape) + " is too large");
  const size_t bytes = static_cast<size_t>(elements) * elem_bytes;
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string data = read_external(proto, base_dir, bytes);
    Tensor t(dtype, shape);
    std::memcpy(t.raw(), data.data(), bytes);
    return t;
  }
  if (proto.has_raw_data()) {
    if (proto.raw_data().size() != bytes)
      throw Error(ErrorKind::InvalidModel, "tensor '" + proto.name() + "' has " +
                                               std::to_string(proto.raw_data().size()) +
                                               " bytes of data, its shape " + shape_to_string(shape) +
                                               " needs " + std::to_string(bytes));
    Tensor t(dtype, shape);
    if (bytes) std::memcpy(t.raw(), proto.raw_data().data(), bytes);
    return t;
  }
  const int64_t typed_values = int64_t{proto.float_data_size()} + proto.double_data_size() +
                               proto.int64_data_size() + proto.uint64_data_size() + proto.int32_data_size();
  if (elem_bytes && elements > typed_values)
    throw Error(ErrorKind::InvalidModel, "tensor '" + proto.name() + "' has " + std::to_string(typed_values) +
                                             " values, its shape " + shape_to_string(shape) + " needs " +
                                             std::to_string(elements));
  Tensor t(dtype, shape);
  switch (dtype) {
    case DType::Float32:
      copy_field<decltype(proto.float_data()), float>(proto.float_data(), t, proto.name());
      break;
    case DType::Float64:
      copy_field<decltype(proto.double_data()), double>(proto.double_data(), t, proto.name());
      break;
    case DType::Int64:
      copy_field<decltype(proto.int64_data()), int64_t>(proto.int64_data(), t, proto.name());
      break;
    case DType::UInt64:
      copy_field<decltype(proto.uint64_data()), uint64_t>(proto.uint64_data(), t, proto.name());
      break;
    case DType::UInt32:
      copy_field<decltype(proto.uint64_data()), uint32_t>(proto.uint64_data(), t, proto.name());
      break;
    case DType::Int32:
      copy_field<decltype(proto.int32_data()), int32_t>(proto.int32_data(), t, proto.name());
      break;
    case DType::Int16:
      copy_field<decltype(proto.int32_data()), int16_t>(proto.int32_data(), t, proto.name());
      break;
    case DType::UInt16:
      copy_field<decltype(proto.int32_data()), uint16_t>(proto.int32_data(), t, proto.name());
      break;
    case DType::Int8:
      copy_field<decltype(proto.int32_data()), int8_t>(proto.int32_data(), t, proto.name());
      break;
    case DType::UInt8:
      copy_field<decltype(proto.int32_data()), uint8_t>(proto.int32_data(), t, proto.name());
      break;
    case DType::Bool:
      copy_field<decltype(proto.int32_data()), bool>(proto.int32_data(), t, proto.name());
      break;
    case DType::Float16:  // int32_data holds the 16-bit patterns
    case DType::BFloat16:
      copy_field<decltype(proto.int32_data()), uint16_t>(proto.int32_data(), t, proto.name());
      break;
    default:
      throw Error(ErrorKind::Unsupported, "tensor '" + proto.name() + "' has an unsupported element type");
  }
  return t;
}

onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int>(tensor.dtype()));
  for (int64_t d : tensor.shape()) proto.add_dims(d);
  proto.set_raw_data(tensor.raw(), tensor.bytes());
  return proto;
}

Tensor read_tensor_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open tensor file '" + path + "'");
  onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in))
    throw Error(ErrorKind::InvalidInput, "'" + path + "' is not a serialised ONNX TensorProto");
  std::string dir = std::filesystem::path(path).parent_path().string();
  return tensor_from_proto(proto, dir.empty() ? "." : dir);
}

namespace {

Tensor sequence_from_proto(const onnx::SequenceProto& seq, DType elem, const std::string& path,
                           const std::string& dir) {
  if (seq.elem_type() != onnx::SequenceProto::TENSOR && seq.tensor_values_size() == 0 &&
      seq.elem_type() != onnx::SequenceProto::UNDEFINED)
    throw Error(ErrorKind::InvalidInput, "'" + path + "' holds a sequence of non-tensors");
  std::vector<Tensor> items;
  for (const auto& t : seq.tensor_values()) items.push_back(tensor_from_proto(t, dir));
  if (!items.empty()) elem = items[0].dtype();
  for (const Tensor& t : items)
    if (t.dtype() != elem) throw Error(ErrorKind::InvalidInput, "'" + path + "' mixes element types");
  return Tensor::sequence(elem, std::move(items));
}

}  // namespace

Tensor read_value_file(const std::string& path, ValueKind kind, DType elem) {
  if (kind == ValueKind::Tensor) return read_tensor_file(path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorKind::Io, "cannot open value file '" + path + "'");
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  if (kind == ValueKind::Sequence) {
    onnx::SequenceProto seq;
    if (!seq.ParseFromIstream(&in))
      throw Error(ErrorKind::InvalidInput, "'" + path + "' is not a serialised ONNX SequenceProto");
    return sequence_from_proto(seq, elem, path, dir);
  }
  onnx::OptionalProto opt;
  if (!opt.ParseFromIstream(&in))
    throw Error(ErrorKind::InvalidInput, "'" + path + "' is not a serialised ONNX OptionalProto");
  if (opt.has_tensor_value() && kind == ValueKind::OptionalTensor)
    return tensor_from_proto(opt.tensor_value(), dir);
  if (opt.has_sequence_value() && kind == ValueKind::OptionalSequence)
    return sequence_from_proto(opt.sequence_value(), elem, path, dir);
  if (opt.has_tensor_value() || opt.has_sequence_value() || opt.has_map_value() || opt.has_optional_value())
    throw Error(ErrorKind::InvalidInput,
                "'" + path + "' holds an optional of another kind; expected an " + value_kind_name(kind));
  return Tensor::none(elem);
}

void write_tensor_file(const Tensor& tensor, const std::string& name, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  bool written = false;
  if (tensor.is_sequence()) {
    onnx::SequenceProto seq;
    seq.set_name(name);
    seq.set_elem_type(onnx::SequenceProto::TENSOR);
    for (size_t i = 0; i < tensor.items().size(); ++i)
      *seq.add_tensor_values() = tensor_to_proto(tensor.items()[i], name + "_" + std::to_string(i));
    written = out && seq.SerializeToOstream(&out);
  } else if (tensor.is_none()) {
    onnx::OptionalProto opt;
    opt.set_name(name);
    written = out && opt.SerializeToOstream(&out);
  } else {
    written = out && tensor_to_proto(tensor, name).SerializeToOstream(&out);
  }
  if (!written) throw Error(ErrorKind::Io, "cannot write tensor file '" + path + "'");
}

std::string sanitize_file_name(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '.' || c == '-';
    if (!ok) c = '_';
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

void write_tensor_files(const std::string& dir, const std::vector<std::string>& names,
                        const std::vector<Tensor>& tensors) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorKind::Io, "cannot create output directory '" + dir + "': " + ec.message());
  for (size_t i = 0; i < tensors.size() && i < names.size(); ++i)
    write_tensor_file(tensors[i], names[i],
                      (std::filesystem::path(dir) / (sanitize_file_name(names[i]) + ".pb")).string());
}

}  // namespace collage
