// Bodies placed like graphs: the tune places each control-flow body as a graph of its own, the
// placement file carries those placements, and the control node's kernel runs its bodies
// through them (core/runtime/placed_bodies.h). Expected values are computed here from the inputs.
#include <gtest/gtest.h>

#include "backends/native/native_kernel.h"
#include "backends/native/native_spec.h"
#include "core/runtime/artifact.h"
#include "core/search/artifact_export.h"
#include "core/search/placement.h"
#include "core/search/placement_timing.h"
#include "core/search/tuner.h"
#include "onnx_test_model.h"

namespace collage {
namespace {

using testing::OnnxTestModel;

// for i in 0..2: acc = Relu(acc - 1) + x; acc starts at x.
OnnxTestModel loop_model() {
  OnnxTestModel model(17);
  model.input("x", {2, 3});
  model.initializer("m", Tensor::scalar<int64_t>(3));
  model.initializer("go", Tensor::scalar<bool>(true));
  OnnxTestModel body(17);
  body.input("i", {}, onnx::TensorProto::INT64);
  body.input("c", {}, onnx::TensorProto::BOOL);
  body.input("acc", {2, 3});
  body.initializer("one", Tensor::scalar<float>(1.0f));
  body.node("Identity", {"c"}, {"c_out"});
  body.node("Sub", {"acc", "one"}, {"d"});
  body.node("Relu", {"d"}, {"r"});
  body.node("Add", {"r", "x"}, {"acc_out"});
  body.output("c_out");
  body.output("acc_out");
  auto& loop = model.node("Loop", {"m", "go", "x"}, {"y"});
  OnnxTestModel::attr_graph(loop, "body", body.graph());
  model.output("y");
  return model;
}

std::vector<float> expected(const std::vector<float>& x) {
  std::vector<float> acc = x;
  for (int trip = 0; trip < 3; ++trip)
    for (size_t k = 0; k < acc.size(); ++k) acc[k] = std::max(acc[k] - 1.0f, 0.0f) + x[k];
  return acc;
}

// Runs Relu as the native kernel does, counting its runs: shows which kernels ran.
int relu_runs = 0;
class CountingRelu : public Kernel {
 public:
  explicit CountingRelu(const Node& node) : inner_(native::make_node_kernel(node)) {}
  std::vector<Tensor> run(KernelInputs inputs, TensorAllocator& alloc) override {
    ++relu_runs;
    return inner_->run(inputs, alloc);
  }

 private:
  std::unique_ptr<Kernel> inner_;
};

BackendSpec counting_backend() {
  BackendSpec s;
  s.name = "counting";
  s.version = "1";
  s.patterns.push_back(op("Relu"));
  s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions&) -> std::unique_ptr<Kernel> {
    return std::make_unique<CountingRelu>(g.node(sub.node_list.at(0)));
  };
  return s;
}

NodeId node_named(const Graph& g, const std::string& op) {
  for (NodeId n = 0; n < g.num_nodes(); ++n)
    if (g.node(n).op_type == op) return n;
  return kNoNode;
}

// The body's nodes one kernel each, its Relu on `relu_backend`, the rest native.
Placement body_placement(const Graph& body, const std::string& relu_backend) {
  Placement p;
  p.model_fingerprint = model_fingerprint(body);
  for (NodeId n = 0; n < body.num_nodes(); ++n) {
    PlacedKernel k;
    k.nodes = {n};
    k.backend = body.node(n).op_type == "Relu" ? relu_backend : "native";
    p.kernels.push_back(k);
  }
  return p;
}

Placement all_native(const Graph& g) { return body_placement(g, "native"); }

TEST(PlacedBodies, TheLoopRunsItsBodyThroughTheBodysPlacement) {
  Graph g = testing::import_model(loop_model());
  const NodeId loop = node_named(g, "Loop");
  ASSERT_NE(loop, kNoNode);
  const Graph& body = g.node(loop).body("body");
  BackendSpec counting = counting_backend();
  std::vector<const BackendSpec*> backends = {&native_backend(), &counting};
  Placement p = all_native(g);
  p.bodies.push_back({g.node(loop).name, "body", body_placement(body, "counting")});
  const std::vector<float> x = {-2, -0.5f, 0, 0.5f, 1, 4};
  relu_runs = 0;
  Executor placed(g, placement_steps(g, p, backends, CompileOptions{}));
  std::vector<Tensor> out = placed.run({Tensor::from_vector<float>({2, 3}, x)});
  EXPECT_EQ(relu_runs, 3) << "one run of the placed body's Relu per trip";
  const std::vector<float> want = expected(x);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_FLOAT_EQ(out[0].data<float>()[k], want[k]) << k;

  // The file carries it: read back, the body's Relu is on the same backend, and it runs the same.
  Placement back = placement_from_json(placement_to_json(p, g), g, backends);
  ASSERT_EQ(back.bodies.size(), 1u);
  EXPECT_EQ(back.bodies[0].node, g.node(loop).name);
  EXPECT_EQ(back.bodies[0].body, "body");
  ASSERT_EQ(back.bodies[0].placement.kernels.size(), body.nodes.size());
  relu_runs = 0;
  Executor again(g, placement_steps(g, back, backends, CompileOptions{}));
  std::vector<Tensor> out2 = again.run({Tensor::from_vector<float>({2, 3}, x)});
  EXPECT_EQ(relu_runs, 3);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(out2[0].data<float>()[k], out[0].data<float>()[k]);

  // Without the body's placement, the body runs node by node natively.
  relu_runs = 0;
  Executor unplaced(g, placement_steps(g, all_native(g), backends, CompileOptions{}));
  unplaced.run({Tensor::from_vector<float>({2, 3}, x)});
  EXPECT_EQ(relu_runs, 0);
}

TEST(PlacedBodies, ArtifactsCarryThePlacedBodiesAndRunThem) {
  Graph g = testing::import_model(loop_model());
  const NodeId loop = node_named(g, "Loop");
  BackendSpec counting = counting_backend();
  std::vector<const BackendSpec*> backends = {&native_backend(), &counting};
  Placement p = all_native(g);
  p.bodies.push_back({g.node(loop).name, "body", body_placement(g.node(loop).body("body"), "counting")});
  Artifact a = parse_artifact(serialize_artifact(build_artifact(g, p, backends, "loop")), "test");
  ASSERT_EQ(a.bodies.size(), 1u);
  EXPECT_EQ(a.bodies[0].node, loop);
  const std::vector<float> x = {1, -3, 0.5f, 2, -0.25f, 0};
  relu_runs = 0;
  Executor run(a.graph, artifact_steps(a, backends, CompileOptions{}));
  std::vector<Tensor> out = run.run({Tensor::from_vector<float>({2, 3}, x)});
  EXPECT_EQ(relu_runs, 3);
  const std::vector<float> want = expected(x);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_FLOAT_EQ(out[0].data<float>()[k], want[k]) << k;

  // A plan for a body its node lacks is refused by the loader, naming both.
  std::string bytes = serialize_artifact(build_artifact(g, p, backends, "loop"));
  const std::string from = "\"body\":\"body\"", to = "\"body\":\"else\"";
  ASSERT_NE(bytes.find(from), std::string::npos);
  bytes.replace(bytes.find(from), from.size(), to);
  bytes.insert(bytes.find(to) + to.size(), std::string(from.size() - to.size(), ' '));  // same length
  artifact_detail::reseal(bytes);
  try {
    parse_artifact(bytes, "edited");
    ADD_FAILURE() << "a plan for a missing body was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
    EXPECT_NE(std::string(e.what()).find("has no body 'else'"), std::string::npos) << e.what();
  }
}

TEST(PlacedBodies, ABodyPlacementNamingNoBodyOrAnotherModelIsRefused) {
  Graph g = testing::import_model(loop_model());
  const NodeId loop = node_named(g, "Loop");
  std::vector<const BackendSpec*> backends = {&native_backend()};
  const Graph& body = g.node(loop).body("body");
  auto refused = [&](const Placement& p, const std::string& words) {
    try {
      placement_from_json(placement_to_json(p, g), g, backends);
      ADD_FAILURE() << "accepted; expected: " << words;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidInput);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  Placement other_model = all_native(g);
  other_model.bodies.push_back({g.node(loop).name, "body", all_native(body)});
  other_model.bodies[0].placement.model_fingerprint = "0000";
  refused(other_model, "different model");
  Placement uncovered = all_native(g);
  uncovered.bodies.push_back({g.node(loop).name, "body", all_native(body)});
  uncovered.bodies[0].placement.kernels.pop_back();
  refused(uncovered, "not covered by any kernel");
  Placement no_body = all_native(g);
  no_body.bodies.push_back({g.node(loop).name, "body", all_native(body)});
  std::string text = placement_to_json(no_body, g);
  text.replace(text.find("\"body\": \"body\""), 14, "\"body\": \"then_branch\"");
  try {
    placement_from_json(text, g, backends);
    ADD_FAILURE() << "a placement for a body the node lacks was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no body 'then_branch'"), std::string::npos) << e.what();
  }
}

TEST(PlacedBodies, TheTunePlacesEachBodyAsAGraphOfItsOwn) {
  Graph g = testing::import_model(loop_model());
  const NodeId loop = node_named(g, "Loop");
  const Graph& body = g.node(loop).body("body");
  BackendSpec counting = counting_backend();
  std::vector<const BackendSpec*> backends = {&native_backend(), &counting};
  TuneOptions options;
  options.measure.min_time_ms = 0.2;
  options.measure.min_samples = 3;
  options.measure.warmup_runs = 1;
  options.search.epsilon_ms = 0;
  options.contests.rounds = 0;
  TuneResult r = tune(g, backends, native::node_evaluator(), options, nullptr);
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
  ASSERT_EQ(r.placement.bodies.size(), 1u);
  const Placement& bp = r.placement.bodies[0].placement;
  EXPECT_EQ(bp.model_fingerprint, model_fingerprint(body));
  size_t covered = 0;
  for (const PlacedKernel& k : bp.kernels) {
    covered += k.nodes.size();
    EXPECT_TRUE(k.cost.valid()) << k.backend;  // measured, whichever backend won
  }
  EXPECT_EQ(covered, body.nodes.size());
  const std::vector<float> x = {3, -1, 0.25f, -0.75f, 2, 0};
  Executor placed(g, placement_steps(g, r.placement, backends, CompileOptions{}));
  std::vector<Tensor> out = placed.run({Tensor::from_vector<float>({2, 3}, x)});
  const std::vector<float> want = expected(x);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_FLOAT_EQ(out[0].data<float>()[k], want[k]) << k;
}

// What each compile was told of `sole_kernel` (CompileOptions), in compile order.
std::vector<bool> sole_seen;
BackendSpec recording_backend() {
  BackendSpec s = native_backend();
  s.name = "recording";
  s.compile = [](const Graph& g, const SubGraph& sub, const CompileOptions& o) -> std::unique_ptr<Kernel> {
    sole_seen.push_back(o.sole_kernel);
    return native_backend().compile(g, sub, o);
  };
  return s;
}

// Every node a kernel of its own on "recording".
Placement on_recording(const Graph& g) {
  Placement p = all_native(g);
  for (PlacedKernel& k : p.kernels) k.backend = "recording";
  return p;
}

// A pool may stay awake between runs only when its kernel is all a run does: a placement (or
// artifact) of one kernel. A body's kernels run among the outer graph's, so neither they nor
// the control node that runs them are told so.
TEST(PlacedBodies, OnlyARunsSoleKernelIsCompiledAsSole) {
  Graph g = testing::import_model(loop_model());
  const NodeId loop = node_named(g, "Loop");
  ASSERT_EQ(g.num_nodes(), 1) << "the outer graph is the Loop alone";
  BackendSpec recording = recording_backend();
  std::vector<const BackendSpec*> backends = {&native_backend(), &recording};
  Placement alone = on_recording(g);
  Placement with_body = alone;
  with_body.bodies.push_back({g.node(loop).name, "body", on_recording(g.node(loop).body("body"))});
  const size_t body_kernels = with_body.bodies[0].placement.kernels.size();
  ASSERT_GT(body_kernels, 1u);

  sole_seen.clear();
  placement_steps(g, alone, backends, CompileOptions{});
  EXPECT_EQ(sole_seen, std::vector<bool>({true}));
  sole_seen.clear();
  placement_steps(g, with_body, backends, CompileOptions{});
  EXPECT_EQ(sole_seen, std::vector<bool>(1 + body_kernels, false));

  // The artifact's loader decides the same.
  for (const Placement* p : {&alone, &with_body}) {
    Artifact a = parse_artifact(serialize_artifact(build_artifact(g, *p, backends, "loop")), "test");
    sole_seen.clear();
    Executor run(a.graph, artifact_steps(a, backends, CompileOptions{}));
    EXPECT_EQ(sole_seen,
              p == &alone ? std::vector<bool>({true}) : std::vector<bool>(1 + body_kernels, false));
    const std::vector<float> x = {1, -3, 0.5f, 2, -0.25f, 0};
    std::vector<Tensor> out = run.run({Tensor::from_vector<float>({2, 3}, x)});
    const std::vector<float> want = expected(x);
    for (size_t k = 0; k < want.size(); ++k) EXPECT_FLOAT_EQ(out[0].data<float>()[k], want[k]) << k;
  }

  // Two kernels: neither is all a run does.
  OnnxTestModel two(17);
  two.input("x", {2, 3});
  two.node("Relu", {"x"}, {"r"});
  two.node("Neg", {"r"}, {"y"});
  two.output("y");
  Graph g2 = testing::import_model(two);
  sole_seen.clear();
  placement_steps(g2, on_recording(g2), backends, CompileOptions{});
  EXPECT_EQ(sole_seen, std::vector<bool>({false, false}));

  // Timed in turns with another placement (a contest, a fitness): not sole either, lest its pool
  // stay awake into the other side's turn. The time-side-by-side helpers compile so themselves.
  CompileOptions turns;
  turns.beside_others = true;
  sole_seen.clear();
  placement_steps(g, alone, backends, turns);
  EXPECT_EQ(sole_seen, std::vector<bool>({false}));
  sole_seen.clear();
  compare_placements(g, alone, alone, backends, CompileOptions{},
                     {Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})}, 1);
  EXPECT_EQ(sole_seen, std::vector<bool>({false, false}));
  sole_seen.clear();
  measured_fitness(g, backends, CompileOptions{}, {Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6})},
                   1)(alone);
  EXPECT_EQ(sole_seen, std::vector<bool>({false}));
}

}  // namespace
}  // namespace collage
