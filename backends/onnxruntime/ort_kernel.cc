#include "backends/onnxruntime/ort_kernel.h"

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
  OrtKernel(const Runtime& r, const Graph& g, const SubGraph& sub, int threads, bool spin, Int8 int8)
      : r_(r) {
    for (ValueId v : sub.inputs) inputs_.push_back(g.value(v).name);
    for (ValueId v : sub.outputs) {
      outputs_.push_back(g.value(v).name);
      out_types_.push_back({g.value(v).dtype, g.value(v).shape});
    }
    for (const std::string& n : inputs_) input_names_.push_back(n.c_str());
    for (const std::string& n : outputs_) output_names_.push_back(n.c_str());
    const std::string model = region_model(g, sub, int8);
    OrtSessionOptions* raw = nullptr;
    r.check(r.fn<CreateSessionOptionsFn>(kCreateSessionOptions)(&raw), "session options");
    Options options(&r, raw);
    r.check(r.fn<SetSessionGraphOptimizationLevelFn>(kSetSessionGraphOptimizationLevel)(
                raw, GraphOptimizationLevel::kAll),
            "optimization level");
    r.check(r.fn<SetIntraOpNumThreadsFn>(kSetIntraOpNumThreads)(raw, threads), "threads");
    r.check(r.fn<SetInterOpNumThreadsFn>(kSetInterOpNumThreads)(raw, 1), "threads");
    r.check(r.fn<SetSessionExecutionModeFn>(kSetSessionExecutionMode)(raw, ExecutionMode::kSequential),
            "mode");
    r.check(r.fn<AddSessionConfigEntryFn>(kAddSessionConfigEntry)(raw, kConfigIntraOpAllowSpinning,
                                                                  spin ? "1" : "0"),
            "spinning");
    // A spinning region stops spinning as it returns: the kernels after it run on OpenMP's
    // workers, on the same cores.
    if (spin)
      r.check(r.fn<AddSessionConfigEntryFn>(kAddSessionConfigEntry)(raw, kConfigForceSpinningStop, "1"),
              "spinning");
    r.check(r.fn<SetSessionLogSeverityLevelFn>(kSetSessionLogSeverityLevel)(raw, 3), "logging");
    OrtSession* session = nullptr;
    r.check(r.fn<CreateSessionFromArrayFn>(kCreateSessionFromArray)(r.env, model.data(), model.size(), raw,
                                                                    &session),
            "the region was refused");
    session_ = Session(&r, session);
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    std::vector<ValueHandle> in, out;
    std::vector<const OrtValue*> in_ptrs;
    std::vector<OrtValue*> out_ptrs;
    for (const Tensor* t : inputs) {
      in.push_back(wrap(const_cast<Tensor&>(*t)));
      in_ptrs.push_back(in.back().p);
    }
    std::vector<Tensor> results;
    for (const auto& [dtype, shape] : out_types_) {
      results.push_back(alloc.allocate(dtype, shape));
      out.push_back(wrap(results.back()));
      out_ptrs.push_back(out.back().p);
    }
    if (OrtStatus* s =
            r_.fn<RunFn>(kRun)(session_.p, nullptr, input_names_.data(), in_ptrs.data(), in_ptrs.size(),
                               output_names_.data(), output_names_.size(), out_ptrs.data())) {
      std::string message = r_.fn<GetErrorMessageFn>(kGetErrorMessage)(s);
      r_.fn<ReleaseStatusFn>(kReleaseStatus)(s);
      throw Error(ErrorKind::Internal, "onnxruntime: the region failed to run: " + message);
    }
    return results;
  }

 private:
  ValueHandle wrap(Tensor& t) {
    static const int64_t kScalar = 0;
    OrtValue* v = nullptr;
    const Shape& shape = t.shape();
    r_.check(r_.fn<CreateTensorWithDataAsOrtValueFn>(kCreateTensorWithDataAsOrtValue)(
                 r_.cpu, t.raw(), t.bytes(), shape.empty() ? &kScalar : shape.data(), shape.size(),
                 static_cast<ONNXTensorElementDataType>(t.dtype()), &v),
             "tensor");
    return ValueHandle(&r_, v);
  }

  const Runtime& r_;
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

std::unique_ptr<Kernel> compile_region(const Graph& graph, const SubGraph& sub, int threads, bool spin,
                                       Int8 int8) {
  const Runtime* r = runtime();
  if (!r) throw Error(ErrorKind::Unsupported, "onnxruntime: " + unavailable_reason());
  for (NodeId id : sub.node_list)
    if (!offered(graph, graph.node(id)))
      throw Error(ErrorKind::Unsupported, "onnxruntime: " + graph.node(id).describe() + " is not offered");
  return std::make_unique<OrtKernel>(*r, graph, sub, threads, spin, int8);
}

}  // namespace collage::ort
