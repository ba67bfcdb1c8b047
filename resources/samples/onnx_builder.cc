#include "resources/samples/onnx_builder.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/tensor_io/tensor_proto.h"

namespace collage {

OnnxBuilder::OnnxBuilder(std::string graph_name, int opset, uint64_t seed)
    : rng_(seed * 0x9e3779b97f4a7c15ULL + 1) {
  model_.set_ir_version(8);
  model_.set_producer_name("collage-model-builder");
  auto* o = model_.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  model_.mutable_graph()->set_name(std::move(graph_name));
}

namespace {
void set_dims(onnx::TypeProto_Tensor* tt, const std::vector<Dim>& dims) {
  auto* shape = tt->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (auto* v = std::get_if<int64_t>(&d))
      dim->set_dim_value(*v);
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
}
}  // namespace

float OnnxBuilder::normal() {
  // splitmix64 + Box-Muller: identical on every platform, unlike std:: distributions.
  auto next = [&] {
    uint64_t z = (rng_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  double u1 = next(), u2 = next();
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1 + 1e-300)) * std::cos(6.283185307179586 * u2));
}

std::string OnnxBuilder::input(const std::string& name, DType dtype, const std::vector<Dim>& dims) {
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(dtype));
  set_dims(tt, dims);
  return name;
}

void OnnxBuilder::output(const std::string& value, const std::string& rename, const std::vector<Dim>& dims,
                         DType dtype) {
  std::string name = value;
  if (!rename.empty()) {  // PyTorch names graph outputs ("output", "logits"): rename the producing value
    for (auto& n : *model_.mutable_graph()->mutable_node()) {
      for (auto& o : *n.mutable_output())
        if (o == value) o = rename;
      for (auto& i : *n.mutable_input())
        if (i == value) i = rename;
    }
    name = rename;
  }
  auto* out = model_.mutable_graph()->add_output();
  out->set_name(name);
  auto* tt = out->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int>(dtype));
  set_dims(tt, dims);
}

std::string OnnxBuilder::initializer(const std::string& name, const Tensor& t) {
  *model_.mutable_graph()->add_initializer() = tensor_to_proto(t, name);
  return name;
}

std::string OnnxBuilder::random_normal(const std::string& name, const Shape& shape, float stddev) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<float>()[i] = normal() * stddev;
  return initializer(name, t);
}

std::string OnnxBuilder::ints(const std::string& name, const std::vector<int64_t>& values) {
  return initializer(name, Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values));
}

std::string OnnxBuilder::scalar(const std::string& name, float value) {
  return initializer(name, Tensor::scalar<float>(value));
}

std::string OnnxBuilder::constant_node(const std::vector<int64_t>& values, bool as_scalar) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  Shape shape = as_scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
  *a.mutable_t() = tensor_to_proto(Tensor::from_vector<int64_t>(shape, values), "");
  return op("Constant", {}, {a});
}

std::string OnnxBuilder::next_name(const std::string& op) const {
  std::string base;
  for (const auto& s : scopes_) base += "/" + s;
  base += "/" + op;
  auto it = counters_.find(base);
  int n = it == counters_.end() ? 0 : it->second;
  return n ? base + "_" + std::to_string(n) : base;
}

std::string OnnxBuilder::scoped(const std::string& op) {
  std::string name = next_name(op);
  std::string base;
  for (const auto& s : scopes_) base += "/" + s;
  counters_[base + "/" + op]++;
  return name;
}

std::vector<std::string> OnnxBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                           std::vector<onnx::AttributeProto> attrs, int outputs) {
  auto* n = model_.mutable_graph()->add_node();
  std::string name = scoped(op);
  n->set_name(name);
  n->set_op_type(op);
  for (const auto& i : inputs) n->add_input(i);
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) {
    outs.push_back(name + "_output_" + std::to_string(i));
    n->add_output(outs.back());
  }
  for (auto& a : attrs) *n->add_attribute() = std::move(a);
  return outs;
}

onnx::AttributeProto OnnxBuilder::attr(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}
onnx::AttributeProto OnnxBuilder::attr(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
onnx::AttributeProto OnnxBuilder::attr(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}
onnx::AttributeProto OnnxBuilder::attr(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

std::string OnnxBuilder::conv(const std::string& x, int64_t cin, int64_t cout, int64_t k, int64_t stride,
                              int64_t pad, int64_t group, bool bias, int spatial) {
  std::string name = next_name("Conv");
  Shape ws = {cout, cin / group};
  for (int i = 0; i < spatial; ++i) ws.push_back(k);
  float fan_in = static_cast<float>(cin / group * std::pow(k, spatial));
  std::vector<std::string> ins = {x, random_normal(name + ".weight", ws, std::sqrt(2.0f / fan_in))};
  if (bias) ins.push_back(random_normal(name + ".bias", {cout}, 0.05f));
  std::vector<int64_t> ks(static_cast<size_t>(spatial), k), st(static_cast<size_t>(spatial), stride),
      pads(static_cast<size_t>(2 * spatial), pad), dil(static_cast<size_t>(spatial), 1);
  return op("Conv", ins,
            {attr("dilations", dil), attr("group", group), attr("kernel_shape", ks), attr("pads", pads),
             attr("strides", st)});
}

std::string OnnxBuilder::batch_norm(const std::string& x, int64_t c) {
  std::string name = next_name("BatchNormalization");
  Tensor var(DType::Float32, {c});
  for (int64_t i = 0; i < c; ++i) var.data<float>()[i] = 0.5f + std::fabs(normal()) * 0.5f;
  return op("BatchNormalization",
            {x, random_normal(name + ".weight", {c}, 0.2f), random_normal(name + ".bias", {c}, 0.1f),
             random_normal(name + ".running_mean", {c}, 0.1f), initializer(name + ".running_var", var)},
            {attr("epsilon", 1e-5f), attr("momentum", 0.9f)});
}

std::string OnnxBuilder::relu6(const std::string& x) {
  std::string lo = float_constant(0.0f), hi = float_constant(6.0f);
  return op("Clip", {x, lo, hi});
}

std::string OnnxBuilder::linear(const std::string& x, int64_t in, int64_t out, bool rank2) {
  std::string name = next_name(rank2 ? "Gemm" : "MatMul");
  float sd = std::sqrt(1.0f / static_cast<float>(in));
  if (rank2)
    return op(
        "Gemm",
        {x, random_normal(name + ".weight", {out, in}, sd), random_normal(name + ".bias", {out}, 0.02f)},
        {attr("alpha", 1.0f), attr("beta", 1.0f), attr("transB", int64_t{1})});
  std::string mm = op("MatMul", {x, random_normal(name + ".weight_t", {in, out}, sd)});
  return op("Add", {random_normal(name + ".bias", {out}, 0.02f), mm});
}

std::string OnnxBuilder::layer_norm(const std::string& x, int64_t d) {
  std::string name = next_name("LayerNormalization");
  Tensor ones(DType::Float32, {d});
  for (int64_t i = 0; i < d; ++i) ones.data<float>()[i] = 1.0f + 0.1f * normal();
  return op("LayerNormalization",
            {x, initializer(name + ".weight", ones), random_normal(name + ".bias", {d}, 0.02f)},
            {attr("axis", int64_t{-1}), attr("epsilon", 1e-5f)});
}

std::string OnnxBuilder::float_constant(float value) {
  onnx::AttributeProto a;
  a.set_name("value");
  a.set_type(onnx::AttributeProto::TENSOR);
  *a.mutable_t() = tensor_to_proto(Tensor::scalar<float>(value), "");
  return op("Constant", {}, {a});
}

std::string OnnxBuilder::gelu(const std::string& x) {
  auto c = [&](float v) { return float_constant(v); };
  std::string d = op("Div", {x, c(1.4142135381698608f)});
  std::string e = op("Erf", {d});
  std::string a = op("Add", {e, c(1.0f)});
  std::string m = op("Mul", {x, a});
  return op("Mul", {m, c(0.5f)});
}

std::string OnnxBuilder::dynamic_reshape(const std::string& x, const std::vector<int64_t>& rest) {
  std::string shape = op("Shape", {x});
  std::string batch = op("Gather", {shape, constant_node({0}, true)}, {attr("axis", int64_t{0})});
  std::string b1 = op("Unsqueeze", {batch, constant_node({0})});
  std::string target = op("Concat", {b1, constant_node(rest)}, {attr("axis", int64_t{0})});
  return op("Reshape", {x, target}, {attr("allowzero", int64_t{0})});
}

void OnnxBuilder::set_opset(int opset) {
  for (auto& o : *model_.mutable_opset_import())
    if (o.domain().empty()) o.set_version(opset);
}

namespace {

void tensor_to_half(onnx::TensorProto* t) {
  if (t->data_type() != onnx::TensorProto::FLOAT) return;
  std::vector<float> values;
  if (t->has_raw_data()) {
    values.resize(t->raw_data().size() / 4);
    std::memcpy(values.data(), t->raw_data().data(), values.size() * 4);
  } else {
    values.assign(t->float_data().begin(), t->float_data().end());
  }
  std::string raw(values.size() * 2, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t h = float_to_half(values[i]);
    std::memcpy(&raw[i * 2], &h, 2);
  }
  t->clear_float_data();
  t->set_raw_data(raw);
  t->set_data_type(onnx::TensorProto::FLOAT16);
}

void value_to_half(onnx::ValueInfoProto* v) {
  auto* tt = v->mutable_type()->mutable_tensor_type();
  if (tt->elem_type() == onnx::TensorProto::FLOAT) tt->set_elem_type(onnx::TensorProto::FLOAT16);
}

}  // namespace

void OnnxBuilder::convert_to_float16() {
  onnx::GraphProto* g = model_.mutable_graph();
  for (auto& t : *g->mutable_initializer()) tensor_to_half(&t);
  for (auto& n : *g->mutable_node())
    for (auto& a : *n.mutable_attribute())
      if (a.has_t()) tensor_to_half(a.mutable_t());
  for (auto& v : *g->mutable_input()) value_to_half(&v);
  for (auto& v : *g->mutable_output()) value_to_half(&v);
  for (auto& v : *g->mutable_value_info()) value_to_half(&v);
}

void OnnxBuilder::save(const std::string& path, int64_t external_threshold) const {
  onnx::ModelProto m = model_;
  if (external_threshold >= 0) {
    std::string data_name = std::filesystem::path(path).filename().string() + ".data";
    std::ofstream data((std::filesystem::path(path).parent_path() / data_name).string(),
                       std::ios::binary | std::ios::trunc);
    int64_t offset = 0;
    for (auto& init : *m.mutable_graph()->mutable_initializer()) {
      if (static_cast<int64_t>(init.raw_data().size()) < external_threshold) continue;
      const std::string& raw = init.raw_data();
      data.write(raw.data(), static_cast<std::streamsize>(raw.size()));
      auto add = [&](const char* k, const std::string& v) {
        auto* e = init.add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", data_name);
      add("offset", std::to_string(offset));
      add("length", std::to_string(raw.size()));
      offset += static_cast<int64_t>(raw.size());
      init.clear_raw_data();
      init.set_data_location(onnx::TensorProto::EXTERNAL);
    }
    if (!data) throw Error(ErrorKind::Io, "cannot write external data next to '" + path + "'");
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !m.SerializeToOstream(&out)) throw Error(ErrorKind::Io, "cannot write model '" + path + "'");
}

size_t OnnxBuilder::parameter_count() const {
  size_t n = 0;
  for (const auto& init : model_.graph().initializer()) {
    size_t e = 1;
    for (int64_t d : init.dims()) e *= static_cast<size_t>(d);
    if (init.data_type() == onnx::TensorProto::FLOAT) n += e;
  }
  return n;
}

}  // namespace collage
