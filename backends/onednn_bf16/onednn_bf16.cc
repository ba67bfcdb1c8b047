#include "backends/onednn_bf16/onednn_bf16.h"

#include <algorithm>
#include <mutex>
#include <string>
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
bool cpu_has_bf16() {
  const auto isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  return (isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16;
}

// Why oneDNN may not: the CPU's own flags tell a cap from a CPU without them.
std::string no_bf16_reason() {
  const bool cpu_has_them = __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
  return std::string(cpu_has_them ? "ONEDNN_MAX_CPU_ISA caps oneDNN below this CPU's bf16 dot products"
                                  : "this CPU has no bf16 dot products") +
         " (bf16 needs AVX512_BF16 or AMX)";
}

class Bf16MatmulKernel : public Kernel {
 public:
  Bf16MatmulKernel(const Graph& g, const SubGraph& sub) : chain_(onednn::fc_chain(g, sub, "onednn-bf16")) {
    if (!cpu_has_bf16()) refuse(no_bf16_reason());
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

// A product of two activations (attention's Q K^T and P V), optionally scaled by a constant scalar
// Mul or Div after it. Both operands are rounded to bf16 per run (one reorder each); the batch dims
// broadcast as ONNX's MatMul does. With AMX, ViT-B/16's 12 x 197 x 64 x 197 products take 0.22
// instead of 0.34 ms at 1 thread, the two reorders included.
bool activation_product(const Graph& g, const Node& n) {
  return !input_is_constant(g, n, 0) && !input_is_constant(g, n, 1) &&
         g.value(n.inputs[0]).shape.size() >= 2 && g.value(n.inputs[1]).shape.size() >= 2;
}

std::vector<PatternPtr> activation_product_patterns() {
  PatternPtr head = op("MatMul")->where(all_float32())->where(activation_product);
  return {head, op_any({"Mul", "Div"}, {head, constant()})->where(all_float32())};
}

class Bf16ProductKernel : public Kernel {
 public:
  Bf16ProductKernel(const Graph& g, const SubGraph& sub) {
    if (!cpu_has_bf16()) refuse(no_bf16_reason());
    const Node& mm = g.node(sub.node_list.at(0));
    if (mm.op_type != "MatMul" || !activation_product(g, mm))
      refuse("the head must be a product of two activations");
    float scale = 1.0f;
    if (sub.node_list.size() == 2) {
      const Node& s = g.node(sub.node_list[1]);
      const bool first = s.inputs.at(0) == mm.outputs.at(0);
      const Value& c = g.value(s.inputs.at(first ? 1 : 0));
      if (!c.constant || c.constant->size() != 1) refuse(s.op_type + " by a constant scalar only");
      if (s.op_type == "Div" && !first) refuse("Div with the product as its divisor");
      const float v = static_cast<float>(c.constant->to_double_vector().at(0));
      scale = s.op_type == "Div" ? 1.0f / v : v;
    } else if (sub.node_list.size() != 1) {
      refuse("a product and at most one scale");
    }
    Shape as = g.value(mm.inputs[0]).shape, bs = g.value(mm.inputs[1]).shape;
    out_shape_ = g.value(sub.outputs.at(0)).shape;
    const size_t rank = std::max(as.size(), bs.size());
    as.insert(as.begin(), rank - as.size(), 1);
    bs.insert(bs.begin(), rank - bs.size(), 1);
    Shape ys = out_shape_;
    ys.insert(ys.begin(), rank - std::min(rank, ys.size()), 1);
    if (ys.size() != rank) refuse("the product's output rank");
    for (size_t i = 0; i < 2; ++i) {
      auto it = std::find(sub.inputs.begin(), sub.inputs.end(), mm.inputs[i]);
      if (it == sub.inputs.end()) refuse("the product's operands must be the group's inputs");
      a_in_[i] = static_cast<int>(it - sub.inputs.begin());
    }
    const memory::desc a_f32 = onednn::plain(as), b_f32 = onednn::plain(bs);
    auto row_major_bf16 = [](const Shape& shape) {
      memory::dims strides(shape.size(), 1);
      for (size_t i = shape.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * shape[i + 1];
      return memory::desc(onednn::dims_of(shape), dt::bf16, strides);
    };
    const memory::desc a_bf16 = row_major_bf16(as), b_bf16 = row_major_bf16(bs);
    dnnl::primitive_attr attr;
    if (scale != 1.0f) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, scale, 0.0f);
      attr.set_post_ops(ops);
    }
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_bf16, b_bf16, onednn::plain(ys)), attr,
                                    onednn::cpu());
    if (const std::string impl = pd.impl_info_str(); impl.rfind("ref", 0) == 0)
      refuse("oneDNN has only its reference bf16 kernel for this product (" + impl + ")");
    prim_ = dnnl::matmul(pd);
    const memory::desc f32[2] = {a_f32, b_f32}, bf16[2] = {a_bf16, b_bf16};
    for (int i = 0; i < 2; ++i) {
      to_bf16_[i] =
          dnnl::reorder(dnnl::reorder::primitive_desc(onednn::cpu(), f32[i], onednn::cpu(), bf16[i]));
      f32_[i] = memory(f32[i], onednn::cpu(), DNNL_MEMORY_NONE);
    }
    args_ = {{DNNL_ARG_SRC, memory(a_bf16, onednn::cpu())},
             {DNNL_ARG_WEIGHTS, memory(b_bf16, onednn::cpu())},
             {DNNL_ARG_DST, memory(onednn::plain(ys), onednn::cpu(), DNNL_MEMORY_NONE)}};
    if (pd.scratchpad_desc().get_size() > 0)
      args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), onednn::cpu());
  }

  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    Tensor y = alloc.allocate(DType::Float32, out_shape_);
    std::lock_guard<std::mutex> lock(mutex_);  // the bf16 operand buffers belong to this kernel
    args_[DNNL_ARG_DST].set_data_handle(y.raw());
    try {
      dnnl::stream stream(onednn::cpu());
      const int bf16_arg[2] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS};
      for (int i = 0; i < 2; ++i) {
        f32_[i].set_data_handle(const_cast<void*>(inputs[static_cast<size_t>(a_in_[i])]->raw()));
        to_bf16_[i].execute(stream, f32_[i], args_[bf16_arg[i]]);
      }
      prim_.execute(stream, args_);
      stream.wait();
    } catch (const dnnl::error& e) {
      throw Error(ErrorKind::Internal, std::string("onednn-bf16: the product failed to run: ") + e.what());
    }
    return {y};
  }

 private:
  Shape out_shape_;
  int a_in_[2] = {0, 0};  // the operands' indices among the kernel's inputs
  dnnl::primitive prim_;
  dnnl::reorder to_bf16_[2];
  memory f32_[2];
  std::unordered_map<int, memory> args_;
  std::mutex mutex_;
};

}  // namespace

const BackendSpec& onednn_bf16_backend() {
  static const BackendSpec spec = [] {
    BackendSpec s;
    s.name = "onednn-bf16";
    s.version = onednn::backend_version() + "+bf16r2";
    s.precision = Precision::BFloat16;
    s.patterns = onednn::fully_connected_patterns();
    for (PatternPtr p : activation_product_patterns()) s.patterns.push_back(std::move(p));
    s.limits.max_nodes = 3;
    s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
      try {
        const Node& head = g.node(sub.node_list.at(0));
        if (head.op_type == "MatMul" && activation_product(g, head))
          return std::make_unique<Bf16ProductKernel>(g, sub);
        return std::make_unique<Bf16MatmulKernel>(g, sub);
      } catch (const dnnl::error& e) {
        refuse(std::string("primitive creation failed: ") + e.what());
      }
    };
    s.set_threads = &onednn::set_threads;
    s.unavailable = [] { return cpu_has_bf16() ? std::string() : no_bf16_reason(); };
    return s;
  }();
  return spec;
}

}  // namespace collage
