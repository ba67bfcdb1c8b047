// Builds onnx::ModelProto graphs from C++ in the shape torch.onnx.export writes
// them at opset 17: module-path node names ("/layer1/layer1.0/conv1/Conv"),
// Constant nodes for small operands, the Shape->Gather->Unsqueeze->Concat->Reshape
// chains of x.view(x.size(0), ...), erf-GELU, Clip-based ReLU6. Weights come from a
// deterministic generator so the same seed gives byte-identical files everywhere.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "onnx/onnx_pb.h"

namespace collage {

class ModelBuilder {
 public:
  // A graph input/output dimension: a size, a symbolic name ("batch") or unknown.
  struct Dim {
    Dim(int64_t v) : value(v) {}
    Dim(int v) : value(v) {}
    Dim(const char* p) : param(p) {}
    Dim(std::string p) : param(std::move(p)) {}
    static Dim unknown() { return Dim(int64_t{-1}); }
    int64_t value = -1;  // used when param is empty and value >= 0
    std::string param;
  };

  // Convolution options, named like torch.nn.Conv*d arguments. Scalars apply to
  // every spatial axis.
  struct ConvOptions {
    int64_t stride = 1;
    int64_t padding = 0;
    int64_t dilation = 1;
    int64_t groups = 1;
    bool bias = true;
    // Eval-mode export with BatchNorm folded in: the bias always exists and both
    // parameters get PyTorch's anonymous "onnx::Conv_<n>" names.
    bool folded_bn = false;
    int64_t output_padding = 0;  // ConvTranspose only
    // Multiplies the weight stddev; < 1 keeps un-normalised residual branches
    // from growing the activations block after block (as a folded BN gamma would).
    float weight_gain = 1.0f;
  };

  explicit ModelBuilder(std::string graph_name, int opset = 17, uint64_t seed = 1);

  // ---- graph inputs / outputs ----
  std::string input(const std::string& name, DType dtype, const std::vector<Dim>& dims);
  // Declares graph output `name` (a value some node produces; see rename()).
  void output(const std::string& name, DType dtype, const std::vector<Dim>& dims);
  // Renames a node output and every use of it (PyTorch names graph outputs "output",
  // "logits", ...). Returns new_name. Throws InvalidInput if `value` is no node output.
  std::string rename(const std::string& value, const std::string& new_name);

  // ---- initialisers ----
  std::string initializer(const std::string& name, const Tensor& t);  // stored as raw_data
  std::string random_normal(const std::string& name, const Shape& shape, float stddev, float mean = 0.0f);
  std::string random_uniform(const std::string& name, const Shape& shape, float low, float high);
  // PyTorch's names for parameters it created or transformed while exporting.
  std::string anonymous_name(const std::string& op_type);  // "onnx::Conv_<n>"

  // ---- Constant nodes (PyTorch emits these for literals and shape operands) ----
  std::string constant(const Tensor& t);
  std::string constant_ints(const std::vector<int64_t>& values);  // 1-D int64
  std::string constant_int(int64_t value);                        // 0-D int64
  std::string constant_float(float value);                        // 0-D float

  // ---- nodes ----
  // Node name "<scope>/<op>" (suffixed _1, _2, ... on repeats); generated outputs
  // "<node name>_output_<i>". Returns the output names.
  std::vector<std::string> node(const std::string& op_type, const std::vector<std::string>& inputs, int num_outputs,
                                std::vector<onnx::AttributeProto> attrs = {});
  std::vector<std::string> node(const std::string& op_type, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs, std::vector<onnx::AttributeProto> attrs = {});
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                 std::vector<onnx::AttributeProto> attrs = {}) {
    return node(op_type, inputs, 1, std::move(attrs))[0];
  }

  static onnx::AttributeProto attr_int(const std::string& name, int64_t v);
  static onnx::AttributeProto attr_float(const std::string& name, float v);
  static onnx::AttributeProto attr_string(const std::string& name, const std::string& v);
  static onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& v);
  static onnx::AttributeProto attr_floats(const std::string& name, const std::vector<float>& v);
  static onnx::AttributeProto attr_tensor(const std::string& name, const Tensor& t);

  // ---- module scopes ----
  // push_module("layer1.0") enters a submodule given by its dotted path relative
  // to the current module. Node scopes follow PyTorch: module "features.1.conv.0"
  // gives "/features/features.1/conv/conv.0". An empty name is a no-op.
  void push_module(const std::string& dotted);
  void pop_module();
  class Module {  // RAII push/pop
   public:
    Module(ModelBuilder& b, const std::string& dotted) : b_(b), dotted_(dotted) { b_.push_module(dotted_); }
    ~Module() { b_.pop_module(); }
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

   private:
    ModelBuilder& b_;
    std::string dotted_;
  };
  std::string module_path() const;  // "layer1.0.conv1" (parameter name prefix)

  // ---- layers as torch.onnx.export (opset 17) writes them ----
  // `module` is the submodule name ("conv1"); weights are "<path>.weight" etc.
  // Weights use Kaiming-style stddev sqrt(2 / fan_in).
  std::string conv2d(const std::string& module, const std::string& x, int64_t cin, int64_t cout, int64_t kernel,
                     ConvOptions o = {});
  std::string conv3d(const std::string& module, const std::string& x, int64_t cin, int64_t cout, int64_t kernel,
                     ConvOptions o = {});
  // Any rank, per-axis sizes (e.g. r3d's (3,7,7) stem); `pads` holds begins then ends.
  std::string conv(const std::string& module, const std::string& x, int64_t cin, int64_t cout, const Shape& kernel,
                   const Shape& strides, const Shape& pads, ConvOptions o = {});
  std::string conv_transpose2d(const std::string& module, const std::string& x, int64_t cin, int64_t cout,
                               int64_t kernel, ConvOptions o = {});
  std::string batchnorm(const std::string& module, const std::string& x, int64_t channels, float eps = 1e-5f);
  std::string relu(const std::string& x, const std::string& module = "");
  std::string relu6(const std::string& x, const std::string& module = "");  // Clip(x, Constant 0, Constant 6)
  std::string tanh(const std::string& x, const std::string& module = "");
  // Gemm(transB=1) when input_rank == 2, else MatMul(x, W^T) + Add(bias) as for 3-D inputs.
  std::string linear(const std::string& module, const std::string& x, int64_t in, int64_t out, int input_rank = 2,
                     bool bias = true);
  std::string layer_norm(const std::string& module, const std::string& x, int64_t d, float eps = 1e-5f);
  std::string gelu(const std::string& x, const std::string& module = "");  // x*0.5*(1+erf(x/sqrt2)) as PyTorch emits
  std::string max_pool2d(const std::string& x, int64_t kernel, int64_t stride, int64_t padding,
                         const std::string& module = "", bool ceil_mode = false);
  std::string avg_pool2d(const std::string& x, int64_t kernel, int64_t stride, int64_t padding,
                         const std::string& module = "", bool count_include_pad = true);
  // nn.AdaptiveAvgPool(1) + torch.flatten(x, 1): GlobalAveragePool, Flatten(axis=1).
  std::string global_avg_pool_flatten(const std::string& x, const std::string& pool_module = "avgpool");
  // x.view(<x.size(i) for i in kept>, *constants) as PyTorch traces it:
  // Shape -> Gather(Constant i) -> Unsqueeze(Constant [0]) per kept dim, Constant [c]
  // per constant, Concat(axis 0), Reshape.
  std::string dynamic_reshape(const std::string& x, const std::vector<int64_t>& kept_dims,
                              const std::vector<int64_t>& constants);

  // ---- output ----
  const onnx::ModelProto& model() const { return model_; }
  onnx::ModelProto build() const { return model_; }
  void save(const std::string& path) const;
  // Initialisers whose data exceeds `external_data_threshold_bytes` go to
  // "<model file name>.data" beside the model (ONNX external_data: location/offset/length).
  void save(const std::string& path, int64_t external_data_threshold_bytes) const;
  int64_t parameter_count() const;  // float elements over all initialisers
  int node_count() const { return model_.graph().node_size(); }

 private:
  std::string scope_prefix() const;  // "/layer1/layer1.0"
  std::string unique_node_name(const std::string& op_type);
  std::string param_name(const std::string& leaf) const;
  float next_normal();
  double next_uniform();  // [0, 1)
  std::string conv_nd(const std::string& op_type, const std::string& module, const std::string& x, int64_t cin,
                      int64_t cout, const Shape& kernel, const Shape& strides, const Shape& pads, const ConvOptions& o);
  std::string conv_square(const std::string& op_type, const std::string& module, const std::string& x, int64_t cin,
                          int64_t cout, int64_t kernel, int spatial, const ConvOptions& o);

  onnx::ModelProto model_;
  std::vector<std::vector<std::string>> modules_;  // atoms of each pushed dotted path
  std::map<std::string, int> name_counts_;
  int anonymous_counter_ = 0;
  uint64_t rng_state_;
};

}  // namespace collage
