// Runs ONNX's own backend test cases (model.onnx + test_data_set_*/input_*.pb,
// output_*.pb) through the importer and the native executor.
// Prints "N passed, N failed, N skipped"; exits 1 if any case failed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "backends/native/native_kernel.h"
#include "core/import/onnx_import.h"
#include "core/runtime/executor.h"
#include "core/tensor_io/tensor_proto.h"

namespace fs = std::filesystem;
using namespace collage;

namespace {

// Out of the product's scope, by design: string tensors, sequence types and
// training-only operators. Nothing else may be skipped.
const std::map<std::string, std::string> kOutOfScope = {
    {"test_strnorm_model_monday_casesensintive_lower", "string op (StringNormalizer)"},
    {"test_strnorm_model_monday_casesensintive_nochangecase", "string op (StringNormalizer)"},
    {"test_strnorm_model_monday_casesensintive_upper", "string op (StringNormalizer)"},
    {"test_strnorm_model_monday_empty_output", "string op (StringNormalizer)"},
    {"test_strnorm_model_monday_insensintive_upper_twodim", "string op (StringNormalizer)"},
    {"test_strnorm_model_nostopwords_nochangecase", "string op (StringNormalizer)"},
    {"test_sequence_model1", "sequence types"},
    {"test_sequence_model2", "sequence types"},
    {"test_sequence_model3", "sequence types"},
    {"test_sequence_model4", "sequence types"},
    {"test_sequence_model5", "sequence types"},
    {"test_sequence_model6", "sequence types"},
    {"test_sequence_model7", "sequence types"},
    {"test_sequence_model8", "sequence types"},
    {"test_gradient_of_add", "training-only op (Gradient)"},
    {"test_gradient_of_add_and_mul", "training-only op (Gradient)"},
};

std::string compare(const Tensor& got, const Tensor& want, const std::string& name) {
  if (got.shape() != want.shape())
    return name + ": shape " + shape_to_string(got.shape()) + ", expected " + shape_to_string(want.shape());
  if (got.dtype() != want.dtype())
    return name + ": dtype " + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  std::vector<double> g = got.to_double_vector(), w = want.to_double_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    bool same = g[i] == w[i] || (std::isnan(g[i]) && std::isnan(w[i]));  // equal infinities too
    if (!same && !(std::fabs(g[i] - w[i]) <= 1e-4 + 1e-3 * std::fabs(w[i]))) {
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

// Empty string = passed; otherwise the failure reason.
std::string run_case(const fs::path& dir) {
  ImportOptions options;
  options.evaluator = native::node_evaluator();
  Graph graph = import_onnx_file((dir / "model.onnx").string(), options);
  Executor executor(graph, native::native_steps(graph));
  int sets = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("test_data_set_", 0) != 0) continue;
    ++sets;
    std::vector<Tensor> inputs;
    for (const auto& f : sorted_files(entry.path(), "input_")) {
      Tensor t = read_tensor_file(f.string());
      if (inputs.size() < graph.inputs.size())
        t = as_declared(t, graph.value(graph.inputs[inputs.size()]).dtype);
      inputs.push_back(t);
    }
    std::vector<Tensor> outputs = executor.run(inputs);
    auto expected = sorted_files(entry.path(), "output_");
    if (expected.size() != outputs.size())
      return "model has " + std::to_string(outputs.size()) + " outputs, test data " +
             std::to_string(expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      std::string diff =
          compare(outputs[i], as_declared(read_tensor_file(expected[i].string()), outputs[i].dtype()),
                  entry.path().filename().string() + "/" + expected[i].filename().string());
      if (!diff.empty()) return diff;
    }
  }
  return sets ? "" : "no test_data_set_* directories";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: collage_conformance DIR [DIR ...]  (each DIR holds test_* case folders)\n";
    return 2;
  }
  int passed = 0, failed = 0, skipped = 0;
  for (int a = 1; a < argc; ++a) {
    fs::path root = argv[a];
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
      if (auto skip = kOutOfScope.find(name); skip != kOutOfScope.end()) {
        std::cout << "SKIP " << name << " (" << skip->second << ")\n";
        ++skipped;
        continue;
      }
      std::string failure;
      try {
        failure = run_case(dir);
      } catch (const std::exception& e) {
        failure = e.what();
      }
      if (failure.empty()) {
        ++passed;
      } else {
        ++failed;
        std::cout << "FAIL " << name << ": " << failure << "\n";
      }
    }
  }
  std::cout << passed << " passed, " << failed << " failed, " << skipped << " skipped\n";
  return failed ? 1 : 0;
}
