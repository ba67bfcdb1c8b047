#include "core/ir/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>

namespace collage {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::Int32:
    case DType::UInt32:
      return 4;
    case DType::Float64:
    case DType::Int64:
    case DType::UInt64:
      return 8;
    case DType::Int16:
    case DType::UInt16:
    case DType::Float16:
      return 2;
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      return 1;
    case DType::Undefined:
    case DType::String:
      return 0;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Undefined:
      return "undefined";
    case DType::Float32:
      return "float32";
    case DType::UInt8:
      return "uint8";
    case DType::Int8:
      return "int8";
    case DType::UInt16:
      return "uint16";
    case DType::Int16:
      return "int16";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::String:
      return "string";
    case DType::Bool:
      return "bool";
    case DType::Float16:
      return "float16";
    case DType::Float64:
      return "float64";
    case DType::UInt32:
      return "uint32";
    case DType::UInt64:
      return "uint64";
  }
  return "unknown";
}

DType dtype_from_onnx(int onnx_type) {
  if (onnx_type >= 1 && onnx_type <= 13 && onnx_type != 8) return static_cast<DType>(onnx_type);
  throw Error(ErrorKind::Unsupported, "tensor element type " + std::to_string(onnx_type) +
                                          " is not supported (supported: numeric types and bool)");
}

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  constexpr int64_t kLimit = int64_t{1} << 62;
  for (int64_t d : shape) {
    if (d < 0) throw Error(ErrorKind::InvalidModel, "negative dimension in shape " + shape_to_string(shape));
    if (d != 0 && n > kLimit / d)
      throw Error(ErrorKind::InvalidModel, "shape " + shape_to_string(shape) + " has too many elements");
    n *= d;
  }
  return n;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

Storage::Storage(size_t bytes) : capacity_(bytes) {
  // Round up to the alignment so aligned_alloc's contract holds; never 0 bytes.
  size_t padded = ((bytes + 63) / 64) * 64;
  if (padded == 0) padded = 64;
  data_ = static_cast<std::byte*>(std::aligned_alloc(64, padded));
  if (!data_)
    throw Error(ErrorKind::InvalidInput, "out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(data_, 0, padded);
}

Storage::Storage(std::byte* data, size_t bytes, std::shared_ptr<const void> owner)
    : data_(data), capacity_(bytes), owner_(std::move(owner)) {
  if (!owner_) throw Error(ErrorKind::Internal, "a storage view needs the memory's owner");
}

Storage::~Storage() {
  if (!owner_) std::free(data_);
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), size_(shape_size(shape_)) {
  constexpr int64_t kMaxBytes = int64_t{1} << 40;  // a TiB: no real model, only hostile ones
  if (dtype_size(dtype_) == 0 && dtype_ != DType::Undefined)
    throw Error(ErrorKind::Unsupported,
                std::string("cannot allocate a tensor of type ") + dtype_name(dtype_));
  if (size_ > kMaxBytes / 8)
    throw Error(ErrorKind::InvalidModel,
                "tensor of shape " + shape_to_string(shape_) + " is too large to allocate");
  storage_ = std::make_shared<Storage>(bytes());
}

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage)
    : dtype_(dtype), shape_(std::move(shape)), size_(shape_size(shape_)), storage_(std::move(storage)) {
  if (!storage_ || storage_->capacity() < bytes())
    throw Error(ErrorKind::Internal, "tensor storage smaller than its shape " + shape_to_string(shape_));
}

void Tensor::check_type(DType requested) const {
  if (requested != dtype_)
    throw Error(ErrorKind::Internal, std::string("tensor accessed as ") + dtype_name(requested) +
                                         " but holds " + dtype_name(dtype_));
}

namespace {
template <class Out>
std::vector<Out> convert_all(const Tensor& t) {
  std::vector<Out> out(static_cast<size_t>(t.size()));
  const void* p = t.raw();
  auto fill = [&](auto* typed) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<Out>(typed[i]);
  };
  switch (t.dtype()) {
    case DType::Float32:
      fill(static_cast<const float*>(p));
      break;
    case DType::Float64:
      fill(static_cast<const double*>(p));
      break;
    case DType::Int64:
      fill(static_cast<const int64_t*>(p));
      break;
    case DType::Int32:
      fill(static_cast<const int32_t*>(p));
      break;
    case DType::Int16:
      fill(static_cast<const int16_t*>(p));
      break;
    case DType::Int8:
      fill(static_cast<const int8_t*>(p));
      break;
    case DType::UInt8:
      fill(static_cast<const uint8_t*>(p));
      break;
    case DType::UInt16:
      fill(static_cast<const uint16_t*>(p));
      break;
    case DType::UInt32:
      fill(static_cast<const uint32_t*>(p));
      break;
    case DType::UInt64:
      fill(static_cast<const uint64_t*>(p));
      break;
    case DType::Bool:
      fill(static_cast<const bool*>(p));
      break;
    default:
      throw Error(ErrorKind::Unsupported,
                  std::string("cannot read values of a ") + dtype_name(t.dtype()) + " tensor");
  }
  return out;
}
}  // namespace

std::vector<int64_t> Tensor::to_int64_vector() const { return convert_all<int64_t>(*this); }
std::vector<double> Tensor::to_double_vector() const { return convert_all<double>(*this); }

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_size(shape) != size_)
    throw Error(ErrorKind::Internal, "reshape " + shape_to_string(shape_) + " -> " + shape_to_string(shape) +
                                         " changes the element count");
  return Tensor(dtype_, std::move(shape), storage_);
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (bytes()) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

}  // namespace collage
