#include "core/model_builder.h"

#include <cmath>
#include <filesystem>
#include <fstream>

namespace collage {

namespace {

void set_dims(onnx::TypeProto* type, DType dtype, const std::vector<ModelBuilder::Dim>& dims) {
  auto* tt = type->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(dtype));
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (!d.param.empty()) dim->set_dim_param(d.param);
    else if (d.value >= 0) dim->set_dim_value(d.value);
    // else: left empty, i.e. unknown
  }
}

onnx::TensorProto to_proto(const Tensor& t, const std::string& name) {
  if (!t.defined()) throw Error(ErrorKind::InvalidInput, "ModelBuilder: tensor '" + name + "' is undefined");
  if (t.dtype() == DType::String || t.dtype() == DType::Undefined)
    throw Error(ErrorKind::Unsupported, "ModelBuilder: tensor '" + name + "' has dtype " + dtype_name(t.dtype()));
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(static_cast<int>(t.dtype()));
  for (int64_t d : t.shape()) p.add_dims(d);
  // raw_data is little-endian, as is every platform we build on.
  if (t.bytes() > 0) p.set_raw_data(static_cast<const char*>(t.raw()), t.bytes());
  else p.set_raw_data(std::string());
  return p;
}

std::vector<std::string> split_dotted(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    if (dot == std::string::npos) dot = s.size();
    std::string atom = s.substr(start, dot - start);
    if (atom.empty()) throw Error(ErrorKind::InvalidInput, "ModelBuilder: bad module name '" + s + "'");
    out.push_back(std::move(atom));
    start = dot + 1;
  }
  return out;
}

bool is_index(const std::string& atom) {
  if (atom.empty()) return false;
  for (char c : atom)
    if (c < '0' || c > '9') return false;
  return true;
}

}  // namespace

ModelBuilder::ModelBuilder(std::string graph_name, int opset, uint64_t seed) : rng_state_(seed) {
  model_.set_ir_version(8);
  model_.set_producer_name("collage-model-builder");
  model_.set_producer_version("0.1");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name(std::move(graph_name));
}

// ---- random numbers: splitmix64 + Box-Muller, identical on every standard library ----

double ModelBuilder::next_uniform() {
  uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

float ModelBuilder::next_normal() {
  double u1 = 1.0 - next_uniform();  // (0, 1]: log stays finite
  double u2 = next_uniform();
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

// ---- graph inputs / outputs ----

std::string ModelBuilder::input(const std::string& name, DType dtype, const std::vector<Dim>& dims) {
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  set_dims(vi->mutable_type(), dtype, dims);
  return name;
}

void ModelBuilder::output(const std::string& name, DType dtype, const std::vector<Dim>& dims) {
  auto* vi = model_.mutable_graph()->add_output();
  vi->set_name(name);
  set_dims(vi->mutable_type(), dtype, dims);
}

std::string ModelBuilder::rename(const std::string& value, const std::string& new_name) {
  bool produced = false;
  for (auto& n : *model_.mutable_graph()->mutable_node()) {
    for (auto& o : *n.mutable_output())
      if (o == value) {
        o = new_name;
        produced = true;
      }
    for (auto& i : *n.mutable_input())
      if (i == value) i = new_name;
  }
  if (!produced) throw Error(ErrorKind::InvalidInput, "ModelBuilder::rename: no node produces '" + value + "'");
  return new_name;
}

// ---- initialisers ----

std::string ModelBuilder::initializer(const std::string& name, const Tensor& t) {
  *model_.mutable_graph()->add_initializer() = to_proto(t, name);
  return name;
}

std::string ModelBuilder::random_normal(const std::string& name, const Shape& shape, float stddev, float mean) {
  Tensor t(DType::Float32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.size(); ++i) p[i] = mean + stddev * next_normal();
  return initializer(name, t);
}

std::string ModelBuilder::random_uniform(const std::string& name, const Shape& shape, float low, float high) {
  Tensor t(DType::Float32, shape);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.size(); ++i) p[i] = low + (high - low) * static_cast<float>(next_uniform());
  return initializer(name, t);
}

std::string ModelBuilder::anonymous_name(const std::string& op_type) {
  return "onnx::" + op_type + "_" + std::to_string(anonymous_counter_++);
}

// ---- Constant nodes ----

std::string ModelBuilder::constant(const Tensor& t) { return op("Constant", {}, {attr_tensor("value", t)}); }

std::string ModelBuilder::constant_ints(const std::vector<int64_t>& values) {
  return constant(Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values));
}

std::string ModelBuilder::constant_int(int64_t value) { return constant(Tensor::scalar<int64_t>(value)); }

std::string ModelBuilder::constant_float(float value) { return constant(Tensor::scalar<float>(value)); }

// ---- nodes ----

std::string ModelBuilder::unique_node_name(const std::string& op_type) {
  std::string base = scope_prefix() + "/" + op_type;
  int n = name_counts_[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

std::vector<std::string> ModelBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                            int num_outputs, std::vector<onnx::AttributeProto> attrs) {
  if (num_outputs < 1) throw Error(ErrorKind::InvalidInput, "ModelBuilder::node: " + op_type + " needs an output");
  std::string name = unique_node_name(op_type);
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) outs.push_back(name + "_output_" + std::to_string(i));
  auto* n = model_.mutable_graph()->add_node();
  n->set_name(name);
  n->set_op_type(op_type);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  for (auto& a : attrs) *n->add_attribute() = std::move(a);
  return outs;
}

std::vector<std::string> ModelBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                            const std::vector<std::string>& outputs,
                                            std::vector<onnx::AttributeProto> attrs) {
  if (outputs.empty()) throw Error(ErrorKind::InvalidInput, "ModelBuilder::node: " + op_type + " needs an output");
  auto* n = model_.mutable_graph()->add_node();
  n->set_name(unique_node_name(op_type));
  n->set_op_type(op_type);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (auto& a : attrs) *n->add_attribute() = std::move(a);
  return outputs;
}

onnx::AttributeProto ModelBuilder::attr_int(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto ModelBuilder::attr_float(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

onnx::AttributeProto ModelBuilder::attr_string(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

onnx::AttributeProto ModelBuilder::attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto ModelBuilder::attr_floats(const std::string& name, const std::vector<float>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOATS);
  for (float x : v) a.add_floats(x);
  return a;
}

onnx::AttributeProto ModelBuilder::attr_tensor(const std::string& name, const Tensor& t) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = to_proto(t, "");
  return a;
}

// ---- module scopes ----

void ModelBuilder::push_module(const std::string& dotted) {
  modules_.push_back(dotted.empty() ? std::vector<std::string>{} : split_dotted(dotted));
}

void ModelBuilder::pop_module() {
  if (modules_.empty()) throw Error(ErrorKind::Internal, "ModelBuilder::pop_module without push_module");
  modules_.pop_back();
}

std::string ModelBuilder::module_path() const {
  std::string path;
  for (const auto& m : modules_)
    for (const auto& atom : m) path += (path.empty() ? "" : ".") + atom;
  return path;
}

std::string ModelBuilder::scope_prefix() const {
  // Each segment is the path from the last named (non-index) atom: features.1.conv.0
  // -> features / features.1 / conv / conv.0, as torch.onnx scopes nodes.
  std::string prefix, segment;
  for (const auto& m : modules_)
    for (const auto& atom : m) {
      segment = is_index(atom) && !segment.empty() ? segment + "." + atom : atom;
      prefix += "/" + segment;
    }
  return prefix;
}

std::string ModelBuilder::param_name(const std::string& leaf) const {
  std::string path = module_path();
  return path.empty() ? leaf : path + "." + leaf;
}

// ---- layers ----

std::string ModelBuilder::conv_nd(const std::string& op_type, const std::string& module, const std::string& x,
                                  int64_t cin, int64_t cout, const Shape& kernel, const Shape& strides,
                                  const Shape& pads, const ConvOptions& o) {
  size_t spatial = kernel.size();
  if (cin <= 0 || cout <= 0 || o.groups <= 0 || cin % o.groups || cout % o.groups || spatial == 0 ||
      strides.size() != spatial || pads.size() != 2 * spatial)
    throw Error(ErrorKind::InvalidInput, "ModelBuilder: bad " + op_type + " channels/kernel/groups");
  double receptive = 1;
  for (int64_t k : kernel) {
    if (k <= 0) throw Error(ErrorKind::InvalidInput, "ModelBuilder: bad " + op_type + " kernel size");
    receptive *= static_cast<double>(k);
  }
  Module m(*this, module);
  bool transpose = op_type == "ConvTranspose";
  // Conv weight [cout, cin/g, k...]; ConvTranspose weight [cin, cout/g, k...] (fan_in from dim 1, as torch does).
  Shape ws = transpose ? Shape{cin, cout / o.groups} : Shape{cout, cin / o.groups};
  double fan_in = static_cast<double>(ws[1]) * receptive;
  ws.insert(ws.end(), kernel.begin(), kernel.end());
  float sd = o.weight_gain * static_cast<float>(std::sqrt(2.0 / fan_in));
  std::string w = random_normal(o.folded_bn ? anonymous_name(op_type) : param_name("weight"), ws, sd);
  std::vector<std::string> ins = {x, w};
  if (o.bias || o.folded_bn)
    ins.push_back(random_normal(o.folded_bn ? anonymous_name(op_type) : param_name("bias"), {cout}, 0.05f));
  std::vector<onnx::AttributeProto> attrs = {attr_ints("dilations", Shape(spatial, o.dilation)),
                                             attr_int("group", o.groups), attr_ints("kernel_shape", kernel)};
  if (transpose) attrs.push_back(attr_ints("output_padding", Shape(spatial, o.output_padding)));
  attrs.push_back(attr_ints("pads", pads));
  attrs.push_back(attr_ints("strides", strides));
  return op(op_type, ins, std::move(attrs));
}

std::string ModelBuilder::conv_square(const std::string& op_type, const std::string& module, const std::string& x,
                                      int64_t cin, int64_t cout, int64_t kernel, int spatial, const ConvOptions& o) {
  size_t n = static_cast<size_t>(spatial);
  return conv_nd(op_type, module, x, cin, cout, Shape(n, kernel), Shape(n, o.stride), Shape(2 * n, o.padding), o);
}

std::string ModelBuilder::conv(const std::string& module, const std::string& x, int64_t cin, int64_t cout,
                               const Shape& kernel, const Shape& strides, const Shape& pads, ConvOptions o) {
  return conv_nd("Conv", module, x, cin, cout, kernel, strides, pads, o);
}

std::string ModelBuilder::conv2d(const std::string& module, const std::string& x, int64_t cin, int64_t cout,
                                 int64_t kernel, ConvOptions o) {
  return conv_square("Conv", module, x, cin, cout, kernel, 2, o);
}

std::string ModelBuilder::conv3d(const std::string& module, const std::string& x, int64_t cin, int64_t cout,
                                 int64_t kernel, ConvOptions o) {
  return conv_square("Conv", module, x, cin, cout, kernel, 3, o);
}

std::string ModelBuilder::conv_transpose2d(const std::string& module, const std::string& x, int64_t cin,
                                           int64_t cout, int64_t kernel, ConvOptions o) {
  return conv_square("ConvTranspose", module, x, cin, cout, kernel, 2, o);
}

std::string ModelBuilder::batchnorm(const std::string& module, const std::string& x, int64_t c, float eps) {
  Module m(*this, module);
  std::string w = random_uniform(param_name("weight"), {c}, 0.5f, 1.0f);
  std::string b = random_normal(param_name("bias"), {c}, 0.1f);
  std::string mean = random_normal(param_name("running_mean"), {c}, 0.1f);
  std::string var = random_uniform(param_name("running_var"), {c}, 0.5f, 1.5f);
  return op("BatchNormalization", {x, w, b, mean, var}, {attr_float("epsilon", eps), attr_float("momentum", 0.9f)});
}

std::string ModelBuilder::relu(const std::string& x, const std::string& module) {
  Module m(*this, module);
  return op("Relu", {x});
}

std::string ModelBuilder::relu6(const std::string& x, const std::string& module) {
  Module m(*this, module);
  std::string lo = constant_float(0.0f);
  std::string hi = constant_float(6.0f);
  return op("Clip", {x, lo, hi});
}

std::string ModelBuilder::tanh(const std::string& x, const std::string& module) {
  Module m(*this, module);
  return op("Tanh", {x});
}

std::string ModelBuilder::linear(const std::string& module, const std::string& x, int64_t in, int64_t out,
                                 int input_rank, bool bias) {
  if (in <= 0 || out <= 0 || input_rank < 1) throw Error(ErrorKind::InvalidInput, "ModelBuilder: bad linear sizes");
  Module m(*this, module);
  // torch.nn.Linear's default init: U(-1/sqrt(in), 1/sqrt(in)).
  float bound = 1.0f / std::sqrt(static_cast<float>(in));
  if (input_rank == 2) {
    std::string w = random_uniform(param_name("weight"), {out, in}, -bound, bound);
    std::vector<std::string> ins = {x, w};
    if (bias) ins.push_back(random_uniform(param_name("bias"), {out}, -bound, bound));
    return op("Gemm", ins, {attr_float("alpha", 1.0f), attr_float("beta", 1.0f), attr_int("transB", 1)});
  }
  // The exporter pre-transposes the weight into an anonymous [in, out] initialiser.
  std::string w = random_uniform(anonymous_name("MatMul"), {in, out}, -bound, bound);
  std::string b = bias ? random_uniform(param_name("bias"), {out}, -bound, bound) : "";
  std::string y = op("MatMul", {x, w});
  return bias ? op("Add", {b, y}) : y;
}

std::string ModelBuilder::layer_norm(const std::string& module, const std::string& x, int64_t d, float eps) {
  Module m(*this, module);
  std::string w = random_uniform(param_name("weight"), {d}, 0.8f, 1.2f);
  std::string b = random_normal(param_name("bias"), {d}, 0.02f);
  return op("LayerNormalization", {x, w, b}, {attr_int("axis", -1), attr_float("epsilon", eps)});
}

std::string ModelBuilder::gelu(const std::string& x, const std::string& module) {
  Module m(*this, module);
  std::string div = op("Div", {x, constant_float(1.4142135381698608f)});
  std::string erf = op("Erf", {div});
  std::string add = op("Add", {erf, constant_float(1.0f)});
  std::string mul = op("Mul", {x, add});
  return op("Mul", {mul, constant_float(0.5f)});
}

std::string ModelBuilder::max_pool2d(const std::string& x, int64_t kernel, int64_t stride, int64_t padding,
                                     const std::string& module, bool ceil_mode) {
  Module m(*this, module);
  return op("MaxPool", {x},
            {attr_int("ceil_mode", ceil_mode ? 1 : 0), attr_ints("kernel_shape", {kernel, kernel}),
             attr_ints("pads", {padding, padding, padding, padding}), attr_ints("strides", {stride, stride})});
}

std::string ModelBuilder::avg_pool2d(const std::string& x, int64_t kernel, int64_t stride, int64_t padding,
                                     const std::string& module, bool count_include_pad) {
  Module m(*this, module);
  return op("AveragePool", {x},
            {attr_int("ceil_mode", 0), attr_int("count_include_pad", count_include_pad ? 1 : 0),
             attr_ints("kernel_shape", {kernel, kernel}), attr_ints("pads", {padding, padding, padding, padding}),
             attr_ints("strides", {stride, stride})});
}

std::string ModelBuilder::global_avg_pool_flatten(const std::string& x, const std::string& pool_module) {
  std::string pooled;
  {
    Module m(*this, pool_module);
    pooled = op("GlobalAveragePool", {x});
  }
  return op("Flatten", {pooled}, {attr_int("axis", 1)});
}

std::string ModelBuilder::dynamic_reshape(const std::string& x, const std::vector<int64_t>& kept_dims,
                                          const std::vector<int64_t>& constants) {
  std::vector<std::string> parts;
  for (int64_t d : kept_dims) {
    std::string shape = op("Shape", {x});
    std::string size = op("Gather", {shape, constant_int(d)}, {attr_int("axis", 0)});
    parts.push_back(op("Unsqueeze", {size, constant_ints({0})}));
  }
  for (int64_t c : constants) parts.push_back(constant_ints({c}));
  std::string target = op("Concat", parts, {attr_int("axis", 0)});
  return op("Reshape", {x, target}, {attr_int("allowzero", 0)});
}

// ---- output ----

void ModelBuilder::save(const std::string& path) const { save(path, -1); }

void ModelBuilder::save(const std::string& path, int64_t threshold) const {
  namespace fs = std::filesystem;
  onnx::ModelProto m = model_;
  if (threshold >= 0) {
    std::string data_name = fs::path(path).filename().string() + ".data";
    fs::path data_path = fs::path(path).parent_path() / data_name;
    std::ofstream data(data_path, std::ios::binary | std::ios::trunc);
    if (!data) throw Error(ErrorKind::Io, "cannot create '" + data_path.string() + "'");
    uint64_t offset = 0;
    for (auto& init : *m.mutable_graph()->mutable_initializer()) {
      const std::string& raw = init.raw_data();
      if (static_cast<int64_t>(raw.size()) <= threshold) continue;
      data.write(raw.data(), static_cast<std::streamsize>(raw.size()));
      auto add = [&](const char* key, const std::string& value) {
        auto* e = init.add_external_data();
        e->set_key(key);
        e->set_value(value);
      };
      add("location", data_name);
      add("offset", std::to_string(offset));
      add("length", std::to_string(raw.size()));
      offset += raw.size();
      init.clear_raw_data();
      init.set_data_location(onnx::TensorProto::EXTERNAL);
    }
    data.close();
    if (!data) throw Error(ErrorKind::Io, "cannot write '" + data_path.string() + "'");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !m.SerializeToOstream(&out)) throw Error(ErrorKind::Io, "cannot write model '" + path + "'");
  out.close();
  if (!out) throw Error(ErrorKind::Io, "cannot write model '" + path + "'");
}

int64_t ModelBuilder::parameter_count() const {
  int64_t n = 0;
  for (const auto& init : model_.graph().initializer()) {
    int64_t e = 1;
    for (int64_t d : init.dims()) e *= d;
    n += e;
  }
  return n;
}

}  // namespace collage
