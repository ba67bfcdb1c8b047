// oneDNN's LSTM primitive against the native LSTM (the ONNX reference): every
// direction, with and without bias and initial states (constant or runtime), each
// output alone; and the variants oneDNN cannot compute exactly are not claimed.
#include <gtest/gtest.h>

#include "backend_check.h"
#include "backend_test_models.h"
#include "backends/onednn/onednn_spec.h"

namespace collage {
namespace {

using namespace collage::testing;

constexpr int64_t kSeq = 5, kBatch = 3, kIn = 4, kHidden = 6;

enum class States { None, Runtime, Constant };

struct LstmCase {
  std::string direction = "forward";
  bool bias = true;
  States states = States::None;
  std::vector<std::string> outputs = {"y", "yh", "yc"};  // "" leaves that output unused
};

void attr_strings(onnx::NodeProto& n, const std::string& name, const std::vector<std::string>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRINGS);
  for (const auto& s : v) a->add_strings(s);
}

// An LSTM as PyTorch exports it (W, R, B initializers); `edit` adds what a case varies.
OnnxTestModel lstm_model(const LstmCase& c,
                         const std::function<void(OnnxTestModel&, onnx::NodeProto&)>& edit = {}) {
  int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  OnnxTestModel m(17);
  m.input("x", {kSeq, kBatch, kIn});
  m.initializer("w", random_tensor_f32({dirs, 4 * kHidden, kIn}, 11));
  m.initializer("r", random_tensor_f32({dirs, 4 * kHidden, kHidden}, 12));
  std::vector<std::string> inputs = {"x", "w", "r", c.bias ? "b" : "", "", "", ""};
  if (c.bias) m.initializer("b", random_tensor_f32({dirs, 8 * kHidden}, 13));
  if (c.states == States::Runtime) {
    m.input("h0", {dirs, kBatch, kHidden});
    m.input("c0", {dirs, kBatch, kHidden});
  } else if (c.states == States::Constant) {
    m.initializer("h0", random_tensor_f32({dirs, kBatch, kHidden}, 14));
    m.initializer("c0", random_tensor_f32({dirs, kBatch, kHidden}, 15));
  }
  if (c.states != States::None) inputs[5] = "h0", inputs[6] = "c0";
  while (!inputs.empty() && inputs.back().empty()) inputs.pop_back();
  auto& n = m.node("LSTM", inputs, c.outputs);
  OnnxTestModel::attr_int(n, "hidden_size", kHidden);
  OnnxTestModel::attr_string(n, "direction", c.direction);
  if (edit) edit(m, n);
  for (const auto& o : c.outputs)
    if (!o.empty()) m.output(o);
  return m;
}

// The oneDNN candidates of the model's LSTM node.
std::vector<Candidate> lstm_candidates(const Graph& g) {
  std::vector<Candidate> out;
  for (const Candidate& c : enumerate_candidates(g, {&onednn_backend()}))
    if (c.label == "LSTM") out.push_back(c);
  return out;
}

TEST(OnednnLstm, EveryDirectionBiasAndInitialStateMatchesTheNativeLstm) {
  int checked = 0;
  for (const char* direction : {"forward", "reverse", "bidirectional"})
    for (bool bias : {true, false})
      for (States states : {States::None, States::Runtime, States::Constant}) {
        LstmCase c{direction, bias, states};
        std::string what = std::string(direction) + (bias ? " bias" : " no-bias") + " states " +
                           std::to_string(static_cast<int>(states));
        Graph g = import_model(lstm_model(c));
        auto values = reference_values(g);
        auto candidates = lstm_candidates(g);
        ASSERT_EQ(candidates.size(), 1u) << what;
        CandidateCheck r = check_candidate(g, onednn_backend(), candidates[0].nodes, values, 1e-5, 1e-5);
        EXPECT_TRUE(r.supported) << what << ": " << r.mismatch;
        EXPECT_TRUE(r.mismatch.empty()) << what << ": " << r.mismatch;
        ++checked;
      }
  EXPECT_EQ(checked, 18);
}

TEST(OnednnLstm, EachOutputAloneIsTheRightOne) {
  for (const char* direction : {"forward", "bidirectional"})
    for (std::vector<std::string> outputs : {std::vector<std::string>{"y"}, {"", "yh"}, {"", "", "yc"}}) {
      LstmCase c{direction, true, States::Runtime, outputs};
      Graph g = import_model(lstm_model(c));
      auto values = reference_values(g);
      auto candidates = lstm_candidates(g);
      ASSERT_EQ(candidates.size(), 1u);
      CandidateCheck r = check_candidate(g, onednn_backend(), candidates[0].nodes, values, 1e-5, 1e-5);
      EXPECT_TRUE(r.supported && r.mismatch.empty())
          << direction << " " << outputs.size() << ": " << r.mismatch;
    }
}

TEST(OnednnLstm, DefaultActivationsSpelledOutAreClaimed) {
  Graph g = import_model(lstm_model({"bidirectional"}, [](OnnxTestModel&, onnx::NodeProto& n) {
    attr_strings(n, "activations", {"Sigmoid", "Tanh", "Tanh", "Sigmoid", "Tanh", "Tanh"});
  }));
  EXPECT_EQ(lstm_candidates(g).size(), 1u);
}

TEST(OnednnLstm, VariantsOneDnnCannotComputeAreNotClaimed) {
  using Edit = std::function<void(OnnxTestModel&, onnx::NodeProto&)>;
  std::vector<std::pair<std::string, Edit>> variants = {
      {"clip", [](OnnxTestModel&, onnx::NodeProto& n) { OnnxTestModel::attr_float(n, "clip", 0.5f); }},
      {"input_forget",
       [](OnnxTestModel&, onnx::NodeProto& n) { OnnxTestModel::attr_int(n, "input_forget", 1); }},
      {"activations",
       [](OnnxTestModel&, onnx::NodeProto& n) {
         attr_strings(n, "activations", {"Sigmoid", "Relu", "Tanh"});
       }},
      {"peepholes",
       [](OnnxTestModel& m, onnx::NodeProto& n) {
         m.initializer("p", random_tensor_f32({1, 3 * kHidden}, 16));
         while (n.input_size() < 7) n.add_input("");
         n.add_input("p");
       }},
      {"sequence_lens",
       [](OnnxTestModel& m, onnx::NodeProto& n) {
         Tensor lens(DType::Int32, {kBatch});
         for (int64_t i = 0; i < kBatch; ++i) lens.data<int32_t>()[i] = static_cast<int32_t>(kSeq - i);
         m.initializer("lens", lens);
         n.add_input("lens");
       }},
  };
  for (const auto& [name, edit] : variants) {
    Graph g = import_model(lstm_model({}, edit));
    EXPECT_TRUE(lstm_candidates(g).empty()) << name;
    // The native LSTM still computes it.
    EXPECT_FALSE(reference_values(g).empty()) << name;
  }
}

}  // namespace
}  // namespace collage
