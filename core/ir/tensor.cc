#include "core/ir/tensor.h"

#include <sys/mman.h>

#include <algorithm>
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
    case DType::BFloat16:
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
    case DType::BFloat16:
      return "bfloat16";
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
  if ((onnx_type >= 1 && onnx_type <= 13 && onnx_type != 8) || onnx_type == 16)
    return static_cast<DType>(onnx_type);
  throw Error(ErrorKind::Unsupported, "tensor element type " + std::to_string(onnx_type) +
                                          " is not supported (supported: numeric types and bool)");
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exp = (bits >> 10) & 0x1Fu;
  uint32_t mant = bits & 0x3FFu;
  uint32_t out;
  if (exp == 0x1F) {
    out = sign | 0x7F800000u | (mant << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    out = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    out = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    out = sign | (e << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

uint16_t float_to_half(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)  // inf or NaN (NaN keeps a quiet payload bit)
    return static_cast<uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u | ((abs >> 13) & 0x3FFu) : 0u));
  if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): value = abs_float / 2^-24, rounded to nearest even.
    if (abs < 0x33000000u) return sign;  // below half the smallest subnormal: +-0
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - exp;  // 14 + (112 - (exp - 127)) ... bits to drop
    uint32_t half_mant = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  uint32_t h = ((abs >> 13) - (112u << 10));
  const uint32_t rest = abs & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

float bfloat16_to_float(uint16_t bits) {
  const uint32_t x = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t float_to_bfloat16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7FFFu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
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

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

std::string shape_to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

void* allocate_aligned(size_t bytes) {
  const size_t align = bytes >= kHugePageBytes ? kHugePageBytes : 64;
  void* p = nullptr;
  if (posix_memalign(&p, align, std::max<size_t>(bytes, 1)) != 0) return nullptr;
  if (align == kHugePageBytes) madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
  return p;
}

Storage::Storage(size_t bytes, Fill fill) : capacity_(bytes) {
  data_ = static_cast<std::byte*>(allocate_aligned(bytes));
  if (!data_)
    throw Error(ErrorKind::InvalidInput, "out of memory allocating " + std::to_string(bytes) + " bytes");
  if (fill == Fill::Zero) std::memset(data_, 0, bytes);
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

Tensor Tensor::sequence(DType elem, std::vector<Tensor> items) {
  for (const Tensor& t : items)
    if (!t.is_dense() || t.dtype() != elem)
      throw Error(ErrorKind::Internal, std::string("a sequence of ") + dtype_name(elem) +
                                           " given an item that is not a " + dtype_name(elem) + " tensor");
  Tensor t;
  t.form_ = Form::Sequence;
  t.dtype_ = elem;
  t.items_ = std::make_shared<const std::vector<Tensor>>(std::move(items));
  return t;
}

Tensor Tensor::none(DType elem) {
  Tensor t;
  t.form_ = Form::None;
  t.dtype_ = elem;
  return t;
}

const std::vector<Tensor>& Tensor::items() const {
  if (form_ != Form::Sequence) throw Error(ErrorKind::Internal, "items() of a value that is not a sequence");
  return *items_;
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
    case DType::Float16:
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<Out>(half_to_float(static_cast<const uint16_t*>(p)[i]));
      break;
    case DType::BFloat16:
      for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<Out>(bfloat16_to_float(static_cast<const uint16_t*>(p)[i]));
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
  if (form_ != Form::Dense) return *this;  // items are never written in place: sharing is a copy
  Tensor t(dtype_, shape_);
  if (bytes()) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

}  // namespace collage
