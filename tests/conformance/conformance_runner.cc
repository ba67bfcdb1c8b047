// Runs ONNX's own backend test cases (model.onnx + test_data_set_*/input_*.pb,
// output_*.pb) through the importer and the native executor.
//
// Every case is in scope unless the model itself shows it belongs to one of the
// documented out-of-scope classes (see classify() and docs/import.md):
//   ai.onnx.ml domain, ai.onnx.preview.training domain, string tensors,
//   map types, float8/int4 tensors. A model with sequences or optionals is imported with
//   dynamic shapes (their tensors' shapes are decided as it runs).
// Random-number ops (Bernoulli, RandomUniform(Like), RandomNormal(Like),
// Multinomial, Dropout in training mode) are run, but only the outputs' shapes
// and dtypes are compared.
// A model whose shapes depend on input values (Range bounds, Reshape shapes fed by
// inputs, NonMaxSuppression...) is imported per test_data_set with those inputs
// bound to the data set's values (ImportOptions::bound_inputs).
//
// --pending FILE lists in-scope cases known to fail (ops not implemented yet):
// they are reported as "known failures" and do not fail the run, but a pending
// case that passes (or no longer exists) does, so the list can only shrink.
// --write-pending FILE writes the current in-scope failures as such a list.
// --shapes dynamic imports with ImportOptions::dynamic_shapes (detector and decoder exports).
//
// Last line: "N passed, N failed, N skipped, N pending, N fixed, N errata"; exits 1 on any
// in-scope failure or fixed/stale pending entry.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backends/native/native_kernel.h"
#include "core/import/declared_types.h"
#include "core/import/onnx_import.h"
#include "core/runtime/executor.h"
#include "core/tensor_io/tensor_proto.h"
#include "onnx/onnx_pb.h"

namespace fs = std::filesystem;
using namespace collage;

namespace {

// Out-of-scope class names, in report order.
const char* const kClassMlDomain = "ai.onnx.ml domain";
const char* const kClassTraining = "ai.onnx.preview.training domain";
const char* const kClassString = "string tensors";
const char* const kClassMap = "map types";
const char* const kClassLowBits = "float8/int4 tensors";
const char* const kClasses[] = {kClassMlDomain, kClassTraining, kClassString, kClassMap, kClassLowBits};
// Cases whose expected data in ONNX 1.16 contradicts the operator spec: run, and
// a mismatch is reported as "test-data errata" rather than a failure. Keyed by
// case name, as the defect is in the data, not in the model.
const std::map<std::string, std::string> kTestDataErrata = {
    {"test_qlinearmatmul_2D_int8_float16", "expected data wraps instead of saturating (onnx/onnx#7835)"},
    {"test_qlinearmatmul_2D_int8_float32", "expected data wraps instead of saturating (onnx/onnx#7835)"},
    {"test_qlinearmatmul_3D_int8_float16", "expected data wraps instead of saturating (onnx/onnx#7835)"},
    {"test_qlinearmatmul_3D_int8_float32", "expected data wraps instead of saturating (onnx/onnx#7835)"},
};

bool is_low_bit_type(int64_t t) { return t >= 17 && t <= 22; }  // FLOAT8* (17-20), UINT4, INT4

// Returns the out-of-scope class of a type, or nullptr.
const char* classify_type(const onnx::TypeProto& type) {
  if (type.has_tensor_type()) {
    int t = type.tensor_type().elem_type();
    if (t == onnx::TensorProto::STRING) return kClassString;
    if (is_low_bit_type(t)) return kClassLowBits;
    return nullptr;
  }
  if (type.has_map_type()) return kClassMap;
  if (type.has_sequence_type()) return classify_type(type.sequence_type().elem_type());
  if (type.has_optional_type()) return classify_type(type.optional_type().elem_type());
  return nullptr;
}

const char* classify_tensor(const onnx::TensorProto& t) {
  if (t.data_type() == onnx::TensorProto::STRING) return kClassString;
  if (is_low_bit_type(t.data_type())) return kClassLowBits;
  return nullptr;
}

// The kind of a graph input's or output's type, and its element type.
ValueKind kind_of(const onnx::TypeProto& type, DType& elem) {
  ValueKind kind;
  const onnx::TypeProto_Tensor* t = import_detail::element_type(type, kind);
  const int e = t ? t->elem_type() : 0;
  elem = e ? dtype_from_onnx(e) : DType::Undefined;
  return kind;
}

// True when a graph (or a body) has values of a non-tensor kind.
bool has_non_tensor_values(const onnx::GraphProto& g) {
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& v : *list)
      if (v.type().has_sequence_type() || v.type().has_optional_type()) return true;
  for (const auto& n : g.node()) {
    if (n.op_type().find("Sequence") != std::string::npos || n.op_type().rfind("Optional", 0) == 0)
      return true;
    for (const auto& a : n.attribute())
      if (a.has_g() && has_non_tensor_values(a.g())) return true;
  }
  return false;
}

const char* classify_graph(const onnx::GraphProto& g) {
  for (const auto* list : {&g.input(), &g.output(), &g.value_info()})
    for (const auto& v : *list)
      if (const char* c = classify_type(v.type())) return c;
  for (const auto& t : g.initializer())
    if (const char* c = classify_tensor(t)) return c;
  for (const auto& n : g.node()) {
    if (n.domain() == "ai.onnx.ml") return kClassMlDomain;
    if (n.domain() == "ai.onnx.preview.training") return kClassTraining;
    for (const auto& a : n.attribute()) {
      if (a.has_t())
        if (const char* c = classify_tensor(a.t())) return c;
      // Cast/CastLike "to", QuantizeLinear "output_dtype", Constant/EyeLike/Random* "dtype".
      if (a.type() == onnx::AttributeProto::INT && (a.name() == "to" || a.name() == "output_dtype")) {
        if (a.i() == onnx::TensorProto::STRING) return kClassString;
        if (is_low_bit_type(a.i())) return kClassLowBits;
      }
      if (a.has_g())
        if (const char* c = classify_graph(a.g())) return c;
      for (const auto& sub : a.graphs())
        if (const char* c = classify_graph(sub)) return c;
    }
  }
  return nullptr;
}

// The out-of-scope class of a model, or nullptr when it is in scope.
const char* classify(const onnx::ModelProto& model) {
  for (const auto& o : model.opset_import()) {
    if (o.domain() == "ai.onnx.ml") return kClassMlDomain;
    if (o.domain() == "ai.onnx.preview.training") return kClassTraining;
  }
  for (const auto& f : model.functions())
    for (const auto& n : f.node()) {
      if (n.domain() == "ai.onnx.ml") return kClassMlDomain;
      if (n.domain() == "ai.onnx.preview.training") return kClassTraining;
    }
  return classify_graph(model.graph());
}

// True when the model draws random numbers: its outputs can only be checked for
// shape and dtype.
bool has_random_op(const onnx::GraphProto& g) {
  static const std::set<std::string> kRandomOps = {"Bernoulli",    "RandomUniform",    "RandomUniformLike",
                                                   "RandomNormal", "RandomNormalLike", "Multinomial"};
  for (const auto& n : g.node()) {
    if (kRandomOps.count(n.op_type())) return true;
    // Dropout with a training_mode input draws its mask (unless that input is false
    // at run time; the check stays conservative).
    if (n.op_type() == "Dropout" && n.input_size() >= 3 && !n.input(2).empty()) return true;
  }
  return false;
}

std::string compare(const Tensor& got, const Tensor& want, const std::string& name, bool shape_only) {
  if (got.is_dense() != want.is_dense() || got.is_sequence() != want.is_sequence())
    return name + ": " + describe_value(got) + ", expected " + describe_value(want);
  if (got.is_sequence()) {
    if (got.items().size() != want.items().size())
      return name + ": " + describe_value(got) + ", expected " + describe_value(want);
    for (size_t i = 0; i < got.items().size(); ++i) {
      std::string diff =
          compare(got.items()[i], want.items()[i], name + "[" + std::to_string(i) + "]", shape_only);
      if (!diff.empty()) return diff;
    }
    return "";
  }
  if (got.is_none()) return "";
  if (got.shape() != want.shape())
    return name + ": shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape());
  if (got.dtype() != want.dtype())
    return name + ": dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (shape_only) return "";
  std::vector<double> g = got.to_double_vector(), w = want.to_double_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    bool both_nan = std::isnan(g[i]) && std::isnan(w[i]);
    bool same_inf = std::isinf(g[i]) && g[i] == w[i];
    if (!both_nan && !same_inf && !(std::fabs(g[i] - w[i]) <= 1e-4 + 1e-3 * std::fabs(w[i]))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, ": element %zu is %.7g, expected %.7g", i, g[i], w[i]);
      return name + buf;
    }
  }
  return "";
}

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) files.push_back(e.path());
  // input_10.pb must follow input_9.pb: order by the number after the prefix.
  std::sort(files.begin(), files.end(), [&](const fs::path& a, const fs::path& b) {
    return std::stoi(a.stem().string().substr(prefix.size())) <
           std::stoi(b.stem().string().substr(prefix.size()));
  });
  return files;
}

// ONNX stores bfloat16 test data as uint16 bit patterns (numpy has no
// bfloat16): read such a tensor as the bfloat16 the model declares.
Tensor as_declared(const Tensor& t, DType declared) {
  if (declared == DType::BFloat16 && t.dtype() == DType::UInt16)
    return Tensor(DType::BFloat16, t.shape(), t.storage());
  return t;
}

// The test data set's inputs, in graph input order, as the model declares them.
std::vector<Tensor> read_inputs(const fs::path& set_dir, const std::vector<DType>& declared,
                                const std::vector<ValueKind>& kinds) {
  std::vector<Tensor> inputs;
  for (const auto& f : sorted_files(set_dir, "input_")) {
    const size_t i = inputs.size();
    Tensor t =
        i < kinds.size() ? read_value_file(f.string(), kinds[i], declared[i]) : read_tensor_file(f.string());
    if (i < declared.size() && t.is_dense()) t = as_declared(t, declared[i]);
    inputs.push_back(t);
  }
  return inputs;
}

// Empty string = passed; otherwise the failure reason. A model whose shapes depend on
// input values is imported once per data set, specialised on those inputs' values.
bool dynamic_shapes = false;  // --shapes dynamic

std::string run_case(const fs::path& dir, const onnx::ModelProto& model, bool shape_only) {
  ImportOptions options;
  options.dynamic_shapes = dynamic_shapes || has_non_tensor_values(model.graph());
  options.evaluator = native::node_evaluator();
  const std::string path = (dir / "model.onnx").string();
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  std::vector<std::string> names;
  std::vector<DType> declared, declared_out;
  std::vector<ValueKind> kinds, kinds_out;
  for (const auto& in : model.graph().input()) {
    if (initializers.count(in.name())) continue;
    names.push_back(in.name());
    declared.emplace_back();
    kinds.push_back(kind_of(in.type(), declared.back()));
  }
  for (const auto& out : model.graph().output()) {
    declared_out.emplace_back();
    kinds_out.push_back(kind_of(out.type(), declared_out.back()));
  }
  // Symbolic input dims take the first data set's sizes (the import's default is 1); an input
  // whose size there is 0 (a --dim must be positive) is bound to each data set's value instead.
  std::vector<std::string> zero_sized;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set_0", 0) != 0) continue;
    std::vector<Tensor> first = read_inputs(entry.path(), declared, kinds);
    size_t i = 0;
    for (const auto& in : model.graph().input()) {
      if (initializers.count(in.name())) continue;
      if (i < first.size() && first[i].is_dense() && in.type().has_tensor_type())
        for (int d = 0; d < in.type().tensor_type().shape().dim_size() && d < first[i].rank(); ++d) {
          const auto& dim = in.type().tensor_type().shape().dim(d);
          if (!dim.has_dim_param() || dim.dim_param().empty()) continue;
          if (first[i].dim(d) == 0)
            zero_sized.push_back(in.name());
          else
            options.dims[dim.dim_param()] = first[i].dim(d);
        }
      ++i;
    }
  }
  std::optional<Graph> generic;
  std::vector<std::string> dependent = zero_sized;
  try {
    if (dependent.empty()) generic = import_onnx_file(path, options);
  } catch (const ValueDependentShapeError& e) {
    if (e.inputs().empty()) throw;
    dependent = e.inputs();
  }
  std::optional<Executor> generic_executor;
  if (generic) generic_executor.emplace(*generic, native::native_steps(*generic));
  int sets = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    ++sets;
    std::vector<Tensor> inputs = read_inputs(entry.path(), declared, kinds);
    std::vector<Tensor> outputs;
    if (generic_executor) {
      outputs = generic_executor->run(inputs);
    } else {
      ImportOptions bound = options;
      std::vector<Tensor> rest;
      for (size_t i = 0; i < inputs.size(); ++i) {
        bool bind = i < names.size() && std::count(dependent.begin(), dependent.end(), names[i]);
        if (bind)
          bound.bound_inputs[names[i]] = inputs[i];
        else
          rest.push_back(inputs[i]);
      }
      Graph graph = import_onnx_file(path, bound);
      outputs = Executor(graph, native::native_steps(graph)).run(rest);
    }
    auto expected = sorted_files(entry.path(), "output_");
    if (expected.size() != outputs.size())
      return "model has " + std::to_string(outputs.size()) + " outputs, test data " +
             std::to_string(expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      Tensor want = i < kinds_out.size()
                        ? read_value_file(expected[i].string(), kinds_out[i], declared_out[i])
                        : read_tensor_file(expected[i].string());
      if (want.is_dense()) want = as_declared(want, outputs[i].dtype());
      std::string diff =
          compare(outputs[i], want, entry.path().filename().string() + "/" + expected[i].filename().string(),
                  shape_only);
      if (!diff.empty()) return diff;
    }
  }
  return sets ? "" : "no test_data_set_* directories";
}

bool read_model(const fs::path& path, onnx::ModelProto& model) {
  std::ifstream in(path, std::ios::binary);
  return in && model.ParseFromIstream(&in);
}

// Pending-list file: one case name per line; '#' starts a comment.
std::set<std::string> read_pending(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read pending list '" + path + "'");
  std::set<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    size_t b = line.find_first_not_of(" \t\r"), e = line.find_last_not_of(" \t\r");
    if (b != std::string::npos) names.insert(line.substr(b, e - b + 1));
  }
  return names;
}

void write_pending(const std::string& path, const std::vector<std::pair<std::string, std::string>>& failures,
                   const std::vector<std::string>& dirs) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write pending list '" + path + "'");
  out << "# In-scope ONNX node test cases that fail today because an op (or an op variant) is not\n"
         "# implemented yet. collage_conformance --pending reports them as known failures; a listed\n"
         "# case that passes fails the run, so this list can only shrink. Generated by:\n"
         "#   build/tests/collage_conformance --write-pending tests/conformance/node_pending.txt";
  for (const auto& d : dirs) out << " " << d;
  out << "\n# One case per line; the comment is the failure at generation time.\n";
  for (const auto& [name, reason] : failures) {
    std::string r = reason.substr(0, reason.find('\n'));
    if (r.size() > 160) r = r.substr(0, 157) + "...";
    out << name << "  # " << r << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string pending_path, write_path;
  std::vector<std::string> dirs;
  for (int a = 1; a < argc; ++a) {
    std::string arg = argv[a];
    if ((arg == "--pending" || arg == "--write-pending") && a + 1 < argc) {
      (arg == "--pending" ? pending_path : write_path) = argv[++a];
    } else if (arg == "--shapes" && a + 1 < argc && std::string(argv[a + 1]) == "dynamic") {
      dynamic_shapes = true;
      ++a;
    } else if (arg.rfind("--", 0) == 0) {
      dirs.clear();
      break;
    } else {
      dirs.push_back(arg);
    }
  }
  if (dirs.empty()) {
    std::cerr << "usage: collage_conformance [--pending FILE] [--write-pending FILE] [--shapes dynamic] DIR "
                 "[DIR ...]\n"
                 "  each DIR holds test_* case folders (model.onnx + test_data_set_*)\n";
    return 2;
  }
  std::set<std::string> pending;
  try {
    if (!pending_path.empty()) pending = read_pending(pending_path);
  } catch (const std::exception& e) {
    std::cerr << "collage_conformance: " << e.what() << "\n";
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0, known = 0, errata = 0, random_passed = 0, random_failed = 0;
  std::map<std::string, int> skipped_by_class;
  std::vector<std::pair<std::string, std::string>> failures, known_failures;
  std::vector<std::string> fixed;
  std::set<std::string> seen;
  for (const std::string& root_arg : dirs) {
    fs::path root = root_arg;
    if (!fs::is_directory(root)) {
      std::cerr << "collage_conformance: '" << root.string() << "' is not a directory\n";
      return 2;
    }
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(root))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    for (const fs::path& dir : cases) {
      std::string name = dir.filename().string();
      seen.insert(name);
      onnx::ModelProto model;
      const char* skip_class = nullptr;
      bool random = false;
      if (read_model(dir / "model.onnx", model)) {  // unreadable: let the importer report it
        skip_class = classify(model);
        random = has_random_op(model.graph());
      }
      std::string failure;
      if (!skip_class) {
        try {
          failure = run_case(dir, model, random);
        } catch (const std::exception& e) {
          failure = e.what();
        }
      }
      if (skip_class) {
        std::cout << "SKIP " << name << " (" << skip_class << ")\n";
        ++skipped;
        ++skipped_by_class[skip_class];
        continue;
      }
      if (random) ++(failure.empty() ? random_passed : random_failed);
      if (auto e = kTestDataErrata.find(name); e != kTestDataErrata.end() &&
                                               failure.find("expected") != std::string::npos &&
                                               failure.find("element") != std::string::npos) {
        std::cout << "ERRATA " << name << ": " << failure << " [" << e->second << "]\n";
        ++errata;
        continue;
      }
      bool is_pending = pending.count(name) > 0;
      if (failure.empty()) {
        ++passed;
        if (is_pending) {
          std::cout << "FIXED " << name << ": passes now, remove it from the pending list\n";
          fixed.push_back(name);
        }
      } else if (is_pending) {
        ++known;
        known_failures.emplace_back(name, failure);
      } else {
        ++failed;
        failures.emplace_back(name, failure);
        std::cout << "FAIL " << name << ": " << failure << "\n";
      }
    }
  }
  std::vector<std::string> stale;
  for (const auto& name : pending)
    if (!seen.count(name)) stale.push_back(name);

  std::cout << "\nOut of scope (skipped):\n";
  for (const char* c : kClasses) std::cout << "  " << skipped_by_class[c] << "  " << c << "\n";
  std::cout << "Random-number ops (shapes and dtypes compared only): " << random_passed << " passed, "
            << random_failed << " failed\n";
  std::cout << "Test-data errata (value mismatch where ONNX's expected data is wrong): " << errata << "\n";
  if (!known_failures.empty()) {
    std::cout << "Known failures (pending ops): " << known_failures.size() << "\n";
    for (const auto& [name, reason] : known_failures)
      std::cout << "  PENDING " << name << ": " << reason.substr(0, reason.find('\n')) << "\n";
  }
  if (!fixed.empty()) {
    std::cout << "Fixed, remove from the pending list (" << pending_path << "):\n";
    for (const auto& name : fixed) std::cout << "  " << name << "\n";
  }
  if (!stale.empty()) {
    std::cout << "Pending entries matching no case, remove them from " << pending_path << ":\n";
    for (const auto& name : stale) std::cout << "  " << name << "\n";
  }
  if (!failures.empty()) {
    std::cout << "Failures (" << failures.size() << "):\n";
    for (const auto& f : failures) std::cout << "  " << f.first << "\n";
  }
  if (!write_path.empty()) {
    std::vector<std::pair<std::string, std::string>> all = failures;
    all.insert(all.end(), known_failures.begin(), known_failures.end());
    std::sort(all.begin(), all.end());
    try {
      write_pending(write_path, all, dirs);
    } catch (const std::exception& e) {
      std::cerr << "collage_conformance: " << e.what() << "\n";
      return 2;
    }
    std::cout << "wrote " << all.size() << " pending cases to " << write_path << "\n";
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped, " << known
            << " pending, " << fixed.size() << " fixed, " << errata << " errata\n";
  if (!write_path.empty()) return 0;
  return failed || !fixed.empty() || !stale.empty() ? 1 : 0;
}
