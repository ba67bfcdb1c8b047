// Tensors: a dtype, a static shape and shared, 64-byte aligned storage.
// Copying a Tensor shares its storage (like a numpy view); clone() deep-copies.
// A Tensor may instead hold one of ONNX's non-tensor values: a sequence of tensors or an
// empty optional (an optional that holds a value is that value). Their dtype is the
// element type; they have no storage and shape []. Only the sequence/optional ops and
// control flow take them (every other native kernel is refused them in run_op).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/error.h"

namespace collage {

// Values match onnx::TensorProto::DataType so conversion is a cast.
enum class DType : int {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

// Storage-only 16-bit float types: the bits of an IEEE binary16 / bfloat16
// value. Kernels compute them in float32; conversions round to nearest even.
struct Float16Bits {
  uint16_t bits;
};
struct BFloat16Bits {
  uint16_t bits;
};
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);  // round to nearest even; NaN stays NaN, overflow -> inf
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);  // round to nearest even; NaN stays NaN
// True for Float16 and BFloat16.
inline bool is_half_dtype(DType dtype) { return dtype == DType::Float16 || dtype == DType::BFloat16; }

using Shape = std::vector<int64_t>;

size_t dtype_size(DType dtype);  // bytes per element; 0 for Undefined/String
const char* dtype_name(DType dtype);
DType dtype_from_onnx(int onnx_type);  // throws Unsupported for types we cannot hold

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::Float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::Float64;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::Int64;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::Int32;
}
template <>
constexpr DType dtype_of<int16_t>() {
  return DType::Int16;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::Int8;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::UInt8;
}
template <>
constexpr DType dtype_of<uint16_t>() {
  return DType::UInt16;
}
template <>
constexpr DType dtype_of<uint32_t>() {
  return DType::UInt32;
}
template <>
constexpr DType dtype_of<uint64_t>() {
  return DType::UInt64;
}
template <>
constexpr DType dtype_of<Float16Bits>() {
  return DType::Float16;
}
template <>
constexpr DType dtype_of<BFloat16Bits>() {
  return DType::BFloat16;
}
template <>
constexpr DType dtype_of<bool>() {
  return DType::Bool;
}

// Element count; throws InvalidModel on negative dims or overflow past 2^62.
int64_t shape_size(const Shape& shape);
// Element strides of a dense row-major tensor of `shape` (the last dim contiguous).
std::vector<int64_t> row_major_strides(const Shape& shape);
std::string shape_to_string(const Shape& shape);  // "[1,3,224,224]"

// Raw aligned bytes. Capacity may exceed what a tensor uses (buffer reuse).
// Owned storage is 64-byte aligned; from 2 MiB up it starts on a 2 MiB boundary with
// transparent huge pages advised for its whole 2 MiB extents (where the kernel grants
// them): a 4 KiB page fault per page made filling large buffers slow, and one TLB miss
// per page stalls a streamed read. The allocation is never rounded up to whole extents.
// The size of a transparent huge page, and memory for `bytes` bytes freed with std::free: 64-byte
// aligned and, from kHugePageBytes up, aligned to and advised onto huge pages (its whole 2 MiB extents;
// a partial last one keeps 4 KiB pages; advice only, ignored where THP is off). nullptr when out of memory.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
void* allocate_aligned(size_t bytes);

class Storage {
 public:
  enum class Fill { Zero, None };  // None: the caller writes every byte before reading any
  explicit Storage(size_t bytes, Fill fill = Fill::Zero);
  // A view of `bytes` bytes at `data` inside memory kept alive by `owner`
  // (a loaded artifact's weights, an executor's arena); not zeroed, not freed.
  Storage(std::byte* data, size_t bytes, std::shared_ptr<const void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  std::shared_ptr<const void> owner_;  // set for views: they free nothing
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates fresh zero-filled storage.
  Tensor(DType dtype, Shape shape);
  // Uses the given storage, which must hold at least the tensor's bytes.
  Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage);

  template <class T>
  static Tensor from_vector(Shape shape, const std::vector<T>& values);
  template <class T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, {value});
  }

  // A sequence of `items` (each a dense tensor of `elem`), and an optional holding nothing.
  // A sequence's items are its own: no run buffer aliases them (kernels copy in and out).
  static Tensor sequence(DType elem, std::vector<Tensor> items);
  static Tensor none(DType elem);
  bool is_sequence() const { return form_ == Form::Sequence; }
  bool is_none() const { return form_ == Form::None; }
  bool is_dense() const { return form_ == Form::Dense; }
  const std::vector<Tensor>& items() const;  // Internal error unless is_sequence()

  bool defined() const { return storage_ != nullptr || form_ != Form::Dense; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t i) const { return shape_.at(static_cast<size_t>(i)); }
  int64_t size() const { return size_; }  // element count
  size_t bytes() const { return static_cast<size_t>(size_) * dtype_size(dtype_); }

  void* raw() { return storage_ ? storage_->data() : nullptr; }
  const void* raw() const { return storage_ ? storage_->data() : nullptr; }
  template <class T>
  T* data() {
    check_type(dtype_of<T>());
    return reinterpret_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>());
    return reinterpret_cast<const T*>(raw());
  }
  // Element values converted to double / int64, whatever the dtype (for shape logic).
  std::vector<int64_t> to_int64_vector() const;
  std::vector<double> to_double_vector() const;

  Tensor reshaped(Shape shape) const;  // same storage, element count must match
  Tensor clone() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  void check_type(DType requested) const;

  enum class Form : uint8_t { Dense, Sequence, None };
  Form form_ = Form::Dense;
  std::shared_ptr<const std::vector<Tensor>> items_;  // Form::Sequence
  DType dtype_ = DType::Undefined;
  Shape shape_;
  int64_t size_ = 0;
  std::shared_ptr<Storage> storage_;
};

template <class T>
Tensor Tensor::from_vector(Shape shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>(), std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.size())
    throw Error(ErrorKind::Internal, "Tensor::from_vector: value count does not match shape");
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

// Where kernels get their output tensors. The executor's implementation reuses
// buffers whose last consumer has run, so memory handed out is NOT zeroed:
// a kernel must write every output element.
class TensorAllocator {
 public:
  virtual ~TensorAllocator() = default;
  virtual Tensor allocate(DType dtype, const Shape& shape) = 0;
};

// Fresh (zeroed) storage every time.
class HeapAllocator : public TensorAllocator {
 public:
  Tensor allocate(DType dtype, const Shape& shape) override { return Tensor(dtype, shape); }
};

}  // namespace collage
