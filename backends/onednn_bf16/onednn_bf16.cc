#include "backends/onednn_bf16/onednn_bf16.h"

#include <mutex>
#include <unordered_map>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn/onednn_fc_chain.h"
#include "backends/onednn/onednn_kernels.h"

namespace collage {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

[[noreturn]] void refuse(const std::string& why) {
  throw Error(ErrorKind::Unsupported, "onednn-bf16: " + why);
}

// Whether oneDNN may use bf16 dot products here (its view of the CPU: AVX512_BF16 or AMX,
// and not capped by ONEDNN_MAX_CPU_ISA). Without them oneDNN 2.6 has no bf16 matmul on AVX2
// at all, and only emulation on plain AVX-512.
constexpr const char* kNoBf16 = "this CPU has no bf16 dot products (bf16 needs AVX512_BF16 or AMX)";

bool cpu_has_bf16() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

class Bf16MatmulKernel : public Kernel {
 public:
  Bf16MatmulKernel(const Graph& g, const SubGraph& sub) : chain_(onednn::fc_chain(g, sub, "onednn-bf16")) {
    if (!cpu_has_bf16()) refuse(kNoBf16);
    const int64_t m = chain_.m, k = chain_.k, n = chain_.n;
    const memory::desc a_f32({m, k}, dt::f32, tag::ab), a_bf16({m, k}, dt::bf16, tag::ab);
    dnnl::primitive_attr attr;
    attr.set_post_ops(chain_.ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(a_bf16, memory::desc({k, n}, dt::bf16, tag::any), chain_.out_desc()), attr,
        onednn::cpu());
    if (const std::string impl = pd.impl_info_str(); impl.rfind("ref", 0) == 0)
      refuse("oneDNN has only its reference bf16 kernel for this product (" + impl + ")");
    prim_ = dnnl::matmul(pd);
    to_bf16_ = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::cpu(), a_f32, onednn::cpu(), a_bf16));
    a_f32_ = memory(a_f32, onednn::cpu(), DNNL_MEMORY_NONE);
    args_ = {{DNNL_ARG_SRC, memory(a_bf16, onednn::cpu())},
             {DNNL_ARG_DST, memory(chain_.out_desc(), onednn::cpu(), DNNL_MEMORY_NONE)}};
    // Rounded to nearest even by the reorder; shared by the buckets of one artifact.
    args_[DNNL_ARG_WEIGHTS] =
        onednn::constant_memory(chain_.weights, onednn::plain({k, n}), pd.weights_desc());
    chain_.weights = Tensor();  // the bf16 copy is what the kernel keeps
    for (auto& [arg, mem] : chain_.constants) args_[arg] = mem;
    if (pd.scratchpad_desc().get_size() > 0)
      args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), onednn::cpu());
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, chain_.out_shape);
    std::lock_guard<std::mutex> lock(mutex_);  // the bf16 activation buffer belongs to this kernel
    a_f32_.set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(chain_.a_input)]->raw()));
    args_[DNNL_ARG_DST].set_data_handle(y.raw());
    chain_.bind(inputs, args_);
    try {
      dnnl::stream stream(onednn::cpu());
      to_bf16_.execute(stream, a_f32_, args_[DNNL_ARG_SRC]);
      prim_.execute(stream, args_);
      stream.wait();
    } catch (const dnnl::error& e) {
      throw Error(ErrorKind::Internal, std::string("onednn-bf16: the matmul failed to run: ") + e.what());
    }
    return {y};
  }

 private:
  onednn::FcChain chain_;
  dnnl::primitive prim_;
  dnnl::reorder to_bf16_;
  memory a_f32_;
  std::unordered_map<int, memory> args_;
  std::mutex mutex_;
};

}  // namespace

const BackendSpec& onednn_bf16_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn-bf16";
    s.version = onednn::backend_version() + "+bf16r1";
    s.precision = Precision::BFloat16;
    s.patterns = onednn::fully_connected_patterns();
    s.limits.max_nodes = 3;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
      try {
        return std::make_unique<Bf16MatmulKernel>(g, sub);
      } catch (const dnnl::error& e) {
        refuse(std::string("primitive creation failed: ") + e.what());
      }
    };
    s.set_threads = &onednn::set_threads;
    s.unavailable = [] { return cpu_has_bf16() ? std::string() : std::string(kNoBf16); };
    return s;
  }();
  return spec;
}

}  // namespace collage
