#include "backends/onnxruntime/ort_kernel.h"

#include <omp.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backends/onnxruntime/ort_model.h"
#include "backends/onnxruntime/ort_runtime.h"
#include "core/ir/error.h"

namespace collage::ort {

namespace {

// float16 too: the executor stores half tensors as half, and ORT runs a half model as ORT alone
// does (casting to fp32 around the ops its CPU provider has no half kernel for).
bool ort_dtype(DType t) {
  switch (t) {
    case DType::Float32:
    case DType::Float16:
    case DType::Int64:
    case DType::Int32:
    case DType::Int8:
    case DType::UInt8:
    case DType::Bool:
      return true;
    default:
      return false;
  }
}

// Owns what it was given by ORT and releases it.
template <typename T, size_t kRelease>
struct Owned {
  const Runtime* r = nullptr;
  T* p = nullptr;
  Owned() = default;
  Owned(const Runtime* runtime, T* ptr) : r(runtime), p(ptr) {}
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  Owned(Owned&& o) noexcept : r(o.r), p(o.p) { o.p = nullptr; }
  Owned& operator=(Owned&& o) noexcept {
    std::swap(r, o.r);
    std::swap(p, o.p);
    return *this;
  }
  ~Owned() {
    if (p) r->fn<void (*)(T*)>(kRelease)(p);
  }
};
using Session = Owned<OrtSession, kReleaseSession>;
using Options = Owned<OrtSessionOptions, kReleaseSessionOptions>;
using ValueHandle = Owned<OrtValue, kReleaseValue>;

class OrtKernel : public Kernel {
 public:
  OrtKernel(const Runtime& r, const Graph& g, const SubGraph& sub, int threads, Pool pool, Int8 int8)
      : r_(r) {
    if (pool == Pool::RowBlocks && (threads <= 1 || !row_splittable(g, sub))) pool = Pool::Blocking;
    blocks_ = pool == Pool::RowBlocks ? threads : 0;
    const bool spin = pool == Pool::Spinning || pool == Pool::SpinningBetweenRuns;
    pause_openmp_ = spin && threads > 1;
    for (ValueId v : sub.inputs) inputs_.push_back(g.value(v).name);
    for (ValueId v : sub.outputs) {
      outputs_.push_back(g.value(v).name);
      out_types_.push_back({g.value(v).dtype, g.value(v).shape});
    }
    for (const std::string& n : inputs_) input_names_.push_back(n.c_str());
    for (const std::string& n : outputs_) output_names_.push_back(n.c_str());
    const std::string model = region_model(g, sub, int8, blocks_ > 0);
    OrtSessionOptions* raw = nullptr;
    r.check(r.fn<CreateSessionOptionsFn>(kCreateSessionOptions)(&raw), "session options");
    Options options(&r, raw);
    r.check(r.fn<SetSessionGraphOptimizationLevelFn>(kSetSessionGraphOptimizationLevel)(
                raw, GraphOptimizationLevel::kAll),
            "optimization level");
    // Row blocks: each Run stays on its caller's thread (1 = no pool); Run is thread-safe.
    r.check(r.fn<SetIntraOpNumThreadsFn>(kSetIntraOpNumThreads)(raw, blocks_ > 0 ? 1 : threads), "threads");
    r.check(r.fn<SetInterOpNumThreadsFn>(kSetInterOpNumThreads)(raw, 1), "threads");
    r.check(r.fn<SetSessionExecutionModeFn>(kSetSessionExecutionMode)(raw, ExecutionMode::kSequential),
            "mode");
    r.check(r.fn<AddSessionConfigEntryFn>(kAddSessionConfigEntry)(raw, kConfigIntraOpAllowSpinning,
                                                                  spin ? "1" : "0"),
            "spinning");
    // A spinning region stops spinning as it returns: the kernels after it run on OpenMP's
    // workers, on the same cores.
    if (pool == Pool::Spinning)
      r.check(r.fn<AddSessionConfigEntryFn>(kAddSessionConfigEntry)(raw, kConfigForceSpinningStop, "1"),
              "spinning");
    if (r.env_allocator)
      r.check(r.fn<AddSessionConfigEntryFn>(kAddSessionConfigEntry)(raw, kConfigUseEnvAllocators, "1"),
              "shared allocator");
    r.check(r.fn<SetSessionLogSeverityLevelFn>(kSetSessionLogSeverityLevel)(raw, 3), "logging");
    OrtSession* session = nullptr;
    r.check(r.fn<CreateSessionFromArrayFn>(kCreateSessionFromArray)(r.env, model.data(), model.size(), raw,
                                                                    &session),
            "the region was refused");
    session_ = Session(&r, session);
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::vector<Tensor*> in;
    for (const Tensor* t : inputs) in.push_back(const_cast<Tensor*>(t));  // ORT only reads them
    std::vector<Tensor> results;
    for (const auto& [dtype, shape] : out_types_) results.push_back(alloc.allocate(dtype, shape));
    std::vector<Tensor*> out;
    for (Tensor& t : results) out.push_back(&t);
    if (blocks_ == 0) {
      // OpenMP's workers, idle since the last OpenMP kernel, spin for milliseconds on the cores
      // this region's pool is about to wake on (libgomp's default spin count): stopped first.
      // EfficientNet-B0 at 2 threads, its first 43 nodes on oneDNN's graph and the rest in one
      // region: the region ran 6.3-7.6 ms so, 10.1-15.1 ms after spinning workers (6.3 ms after
      // another region). The next OpenMP kernel starts the workers again.
      if (pause_openmp_) omp_pause_resource_all(omp_pause_soft);
      if (std::string error = run_rows(in, out, 0, -1); !error.empty()) fail(error);
      return results;
    }
    const int64_t rows = rows_of(out_types_.front().second);
    const int parts = static_cast<int>(std::min<int64_t>(blocks_, rows));
    std::vector<std::string> errors(parts);
#pragma omp parallel for num_threads(parts) schedule(static, 1)
    for (int p = 0; p < parts; ++p) errors[p] = run_rows(in, out, rows * p / parts, rows * (p + 1) / parts);
    for (const std::string& error : errors)
      if (!error.empty()) fail(error);
    return results;
  }

 private:
  [[noreturn]] static void fail(const std::string& message) {
    throw Error(ErrorKind::Internal, "onnxruntime: the region failed to run: " + message);
  }

  // One Run over rows [begin, end) of every input and output (end < 0: whole tensors, as
  // shaped). Returns ORT's message, or "" — never throws, for it runs on OpenMP's threads.
  std::string run_rows(const std::vector<Tensor*>& in, const std::vector<Tensor*>& out, int64_t begin,
                       int64_t end) {
    try {
      std::vector<ValueHandle> values;
      std::vector<const OrtValue*> in_ptrs;
      std::vector<OrtValue*> out_ptrs;
      for (Tensor* t : in) {
        values.push_back(wrap(*t, begin, end));
        in_ptrs.push_back(values.back().p);
      }
      for (Tensor* t : out) {
        values.push_back(wrap(*t, begin, end));
        out_ptrs.push_back(values.back().p);
      }
      if (OrtStatus* s =
              r_.fn<RunFn>(kRun)(session_.p, nullptr, input_names_.data(), in_ptrs.data(), in_ptrs.size(),
                                 output_names_.data(), output_names_.size(), out_ptrs.data())) {
        std::string message = r_.fn<GetErrorMessageFn>(kGetErrorMessage)(s);
        r_.fn<ReleaseStatusFn>(kReleaseStatus)(s);
        return message.empty() ? "(no message)" : message;
      }
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  }

  // The tensor as ORT sees it: whole (end < 0), or rows [begin, end) as [end - begin, last].
  ValueHandle wrap(Tensor& t, int64_t begin, int64_t end) {
    static const int64_t kScalar = 0;
    OrtValue* v = nullptr;
    const Shape& shape = t.shape();
    const int64_t* dims = shape.empty() ? &kScalar : shape.data();
    size_t rank = shape.size();
    char* data = static_cast<char*>(t.raw());
    size_t bytes = t.bytes();
    int64_t block[2];
    if (end >= 0) {
      const size_t row_bytes = bytes / static_cast<size_t>(rows_of(shape));
      block[0] = end - begin;
      block[1] = shape.back();
      dims = block;
      rank = 2;
      data += static_cast<size_t>(begin) * row_bytes;
      bytes = static_cast<size_t>(end - begin) * row_bytes;
    }
    r_.check(r_.fn<CreateTensorWithDataAsOrtValueFn>(kCreateTensorWithDataAsOrtValue)(
                 r_.cpu, data, bytes, dims, rank, static_cast<ONNXTensorElementDataType>(t.dtype()), &v),
             "tensor");
    return ValueHandle(&r_, v);
  }

  const Runtime& r_;
  int blocks_ = 0;             // > 0: RowBlocks, this many blocks of rows
  bool pause_openmp_ = false;  // a pool of its own that spins: OpenMP's idle workers are stopped first
  Session session_;
  std::vector<std::string> inputs_, outputs_;
  std::vector<const char*> input_names_, output_names_;
  std::vector<std::pair<DType, Shape>> out_types_;
};

}  // namespace

bool offered(const Graph& graph, const Node& node) {
  if (!node.domain.empty() && node.domain != "ai.onnx") return false;
  if (node.has_bodies()) return false;  // bodies run on the native kernels (and their own placement)
  for (const std::vector<ValueId>* list : {&node.inputs, &node.outputs})  // not copies of both
    for (ValueId v : *list) {
      if (v == kNoValue) continue;
      const Value& value = graph.value(v);
      if (!ort_dtype(value.dtype) || !value.shape_known) return false;
      for (int64_t d : value.shape)
        if (d == 0) return false;  // empty tensors: nothing to gain, and no buffer to hand over
    }
  return true;
}

std::unique_ptr<Kernel> compile_region(const Graph& graph, const SubGraph& sub, int threads, Pool pool,
                                       Int8 int8) {
  const Runtime* r = runtime();
  if (!r) throw Error(ErrorKind::Unsupported, "onnxruntime: " + unavailable_reason());
  for (NodeId id : sub.node_list)
    if (!offered(graph, graph.node(id)))
      throw Error(ErrorKind::Unsupported, "onnxruntime: " + graph.node(id).describe() + " is not offered");
  return std::make_unique<OrtKernel>(*r, graph, sub, threads, pool, int8);
}

}  // namespace collage::ort
