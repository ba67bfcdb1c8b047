// Shape buckets: the --dim value lists, the placement file with a placement per bucket
// (format 2; format 1 still read), the artifact with a plan per bucket and the weights
// stored once (format 2.0), and the runtime's dispatch by input shapes — the C++ and the
// C API — with shapes no bucket holds refused, naming the buckets.
#include "core/ir/shape_buckets.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "app/runtime/collage_runtime.h"
#include "app/runtime/runtime.h"
#include "app/workflow/workflow.h"
#include "backends/native/native_kernel.h"
#include "backends/registry.h"
#include "core/import/onnx_import.h"
#include "core/ir/random_inputs.h"
#include "core/ir/tensor_compare.h"
#include "core/search/artifact_export.h"
#include "core/search/placement.h"
#include "core/search/placement_buckets.h"
#include "core/search/placement_diff.h"
#include "core/tuning/candidates.h"
#include "core/tuning/measure_worker.h"
#include "core/tuning/measurer.h"
#include "resources/samples/zoo.h"
#include "tests/unit/mixed_placement.h"
#include "tests/unit/temp_dir.h"

namespace collage {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidInput) << e.what();
    return e.what();
  }
  return "";
}

// ---- --dim value lists ----

TEST(ShapeBuckets, EveryCombinationFirstNamedDimSlowest) {
  std::vector<DimValues> b = expand_buckets({{"seq", {16, 32}}, {"batch", {1, 4, 8}}});
  ASSERT_EQ(b.size(), 6u);
  EXPECT_EQ(b[0], (DimValues{{"seq", 16}, {"batch", 1}}));
  EXPECT_EQ(b[1], (DimValues{{"seq", 16}, {"batch", 4}}));
  EXPECT_EQ(b[2], (DimValues{{"seq", 16}, {"batch", 8}}));
  EXPECT_EQ(b[3], (DimValues{{"seq", 32}, {"batch", 1}}));
  EXPECT_EQ(b[5], (DimValues{{"seq", 32}, {"batch", 8}}));
  EXPECT_EQ(bucket_label(b[4]), "batch=4,seq=32");
  EXPECT_EQ(bucket_label({}), "static shapes");
  EXPECT_EQ(expand_buckets({}), std::vector<DimValues>(1));  // no --dim: one bucket, no dims
}

TEST(ShapeBuckets, RepeatsAndTooManyAreRefused) {
  EXPECT_NE(error_of([] {
              expand_buckets({{"seq", {16}}, {"seq", {32}}});
            }).find("given twice"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              expand_buckets({{"seq", {16, 32, 16}}});
            }).find("lists 16 twice"),
            std::string::npos);
  std::vector<int64_t> many;
  for (int64_t v = 1; v <= 9; ++v) many.push_back(v);
  EXPECT_NE(error_of([&] {
              expand_buckets({{"a", many}, {"b", many}}, 64);
            }).find("more than 64"),
            std::string::npos);
  EXPECT_EQ(expand_buckets({{"a", many}, {"b", many}}, 81).size(), 81u);
}

// ---- the placement file ----

Graph resnet_small(int64_t batch) {
  testing::ScopedTempDir dir("collage_buckets_model");
  fs::path path = dir.path() / "resnet_small.onnx";
  samples::build_sample("resnet_small").save(path.string());
  ImportOptions io;
  io.evaluator = native::node_evaluator();
  io.dims = {{"batch", batch}};
  return import_onnx_file(path.string(), io);
}

Placement native_placement(const Graph& g) {
  Placement p;
  p.model_fingerprint = model_fingerprint(g);
  for (NodeId n = 0; n < g.num_nodes(); ++n) p.kernels.push_back({{{n}, "native", g.node(n).op_type}});
  return p;
}

class BucketFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    g1_ = std::make_unique<Graph>(resnet_small(1));
    g3_ = std::make_unique<Graph>(resnet_small(3));
    p1_ = std::make_unique<Placement>(native_placement(*g1_));
    p3_ = std::make_unique<Placement>(testing::mixed_placement(*g3_));
  }
  static void TearDownTestSuite() {
    g1_.reset();
    g3_.reset();
    p1_.reset();
    p3_.reset();
  }
  static inline std::unique_ptr<Graph> g1_, g3_;
  static inline std::unique_ptr<Placement> p1_, p3_;
};

TEST_F(BucketFiles, PlacementFileRoundTripAndOneShapeFilesStayVersionOne) {
  const std::string one = placement_to_json(*p1_, *g1_);
  std::vector<PlacementFileBucket> read = read_placement_buckets(one);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_TRUE(read[0].dims.empty());
  EXPECT_EQ(write_placement_buckets(read), one);  // a one-shape placement is written as version 1

  std::string two =
      write_placement_buckets({{{{"batch", 1}}, one}, {{{"batch", 3}}, placement_to_json(*p3_, *g3_)}});
  EXPECT_EQ(json::parse(two).at("version"), 2);
  read = read_placement_buckets(two);
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].dims, (DimValues{{"batch", 3}}));
  Placement back = placement_from_json(read[1].placement_json, *g3_, all_backends());
  ASSERT_EQ(back.kernels.size(), p3_->kernels.size());
  for (size_t k = 0; k < back.kernels.size(); ++k) {
    EXPECT_EQ(back.kernels[k].backend, p3_->kernels[k].backend);
    EXPECT_EQ(back.kernels[k].nodes, p3_->kernels[k].nodes);
  }
  // A bucket's placement is checked against its own bucket's graph: batch 3's is not batch 1's.
  EXPECT_NE(error_of([&] {
              placement_from_json(read[1].placement_json, *g1_, all_backends());
            }).find("different model"),
            std::string::npos);
  // A one-shape reader given the bucketed file says to pick a bucket rather than "newer version".
  EXPECT_NE(error_of([&] { placement_from_json(two, *g1_, all_backends()); }).find("--dim"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              find_bucket(read, {{"batch", 2}}, "p.json");
            }).find("batch=1; batch=3"),
            std::string::npos);
}

TEST_F(BucketFiles, BadBucketedPlacementFilesAreNamed) {
  const json placement = json::parse(placement_to_json(*p1_, *g1_));
  auto file = [&](json buckets, int version = 2) {
    return json{{"format", "collage-placement"}, {"version", version}, {"buckets", std::move(buckets)}}
        .dump();
  };
  auto bucket = [&](int64_t batch) { return json{{"dims", {{"batch", batch}}}, {"placement", placement}}; };
  EXPECT_NE(error_of([&] {
              read_placement_buckets(file(json::array({bucket(1), bucket(1)})));
            }).find("listed twice"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_placement_buckets(file(json::array())); }).find("non-empty"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_placement_buckets(file(json::array({bucket(1)}), 3)); }).find("newer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { read_placement_buckets(file(json::array({bucket(0)}))); }).find("positive"),
            std::string::npos);
  json no_dims = bucket(1);
  no_dims["dims"] = json::object();
  EXPECT_NE(error_of([&] { read_placement_buckets(file(json::array({no_dims}))); }).find("without dims"),
            std::string::npos);
  json no_placement = bucket(1);
  no_placement.erase("placement");
  EXPECT_NE(error_of([&] { read_placement_buckets(file(json::array({no_placement}))); }).find("placement"),
            std::string::npos);
}

TEST_F(BucketFiles, DiffAcrossBucketsLinesUpNodesOnlyWhenTheGraphsHaveTheSameNodes) {
  PlacementDiff d = diff_buckets(*g1_, *p1_, *g3_, *p3_, "batch=1", "batch=3");
  EXPECT_FALSE(d.identical());  // all native against a mix
  EXPECT_TRUE(diff_buckets(*g1_, *p1_, *g3_, native_placement(*g3_), "a", "b").identical());
  Graph other = *g3_;
  other.nodes.back().name = "renamed";
  EXPECT_NE(error_of([&] { diff_buckets(*g1_, *p1_, other, *p3_, "a", "b"); }).find("differ in structure"),
            std::string::npos);
}

// ---- a later bucket skips what clearly lost in the bucket before ----

workflow::TuneStepOptions quick_tune(std::optional<workflow::BucketPrior> prior, double ratio) {
  workflow::TuneStepOptions o;
  o.backends = {find_backend("onednn"), find_backend("native")};
  o.isolated = false;
  o.min_time_ms = 0.5;
  o.epsilon_ms = 0;
  o.prior = std::move(prior);
  o.prune_ratio = ratio;
  return o;
}

TEST_F(BucketFiles, ALaterBucketSkipsCandidatesThatLostByTheRatio) {
  // The prior bucket (batch 1): every native kernel 10 ms, every oneDNN one 1 ms.
  TuneResult before;
  before.candidates = enumerate_candidates(*g1_, {find_backend("onednn"), find_backend("native")});
  for (const Candidate& c : before.candidates)
    before.costs.push_back({"", Cost::of_ms(c.backend == "native" ? 10.0 : 1.0), false});
  workflow::BucketPrior prior = workflow::bucket_prior({{"batch", 1}}, *g1_, before);
  std::set<std::string> onednn_nodes;
  for (const Candidate& c : before.candidates)
    if (c.backend == "onednn") onednn_nodes.insert(c.nodes.to_string());

  TuneResult r = workflow::tune(*g3_, quick_tune(prior, 4), nullptr);
  ASSERT_GT(r.skipped, 0u);
  std::set<std::pair<std::string, std::vector<NodeId>>> skipped;
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const Cost& cost = r.costs[i].cost;
    if (cost.status != CostStatus::NotMeasured) continue;
    skipped.insert({r.candidates[i].backend, r.candidates[i].group().nodes});
    EXPECT_EQ(r.candidates[i].backend, "native");  // only the 10x losers
    EXPECT_TRUE(onednn_nodes.count(r.candidates[i].nodes.to_string()));
    EXPECT_NE(cost.invalid_reason.find("10.0x slower than the best kernel of these nodes at batch=1"),
              std::string::npos)
        << cost.invalid_reason;
  }
  EXPECT_EQ(skipped.size(), r.skipped);
  for (const PlacedKernel& k : r.placement.kernels) EXPECT_FALSE(skipped.count({k.backend, k.nodes}));

  // The bucket after the one that skipped them still skips them, on the margin measured at batch=1;
  // forgetting it would measure every loser again every other bucket.
  TuneResult third =
      workflow::tune(*g3_, quick_tune(workflow::bucket_prior({{"batch", 3}}, *g3_, r, &prior), 4), nullptr);
  EXPECT_EQ(third.skipped, r.skipped);
  for (size_t i = 0; i < third.candidates.size(); ++i)
    if (third.costs[i].cost.status == CostStatus::NotMeasured) {
      EXPECT_NE(third.costs[i].cost.invalid_reason.find("at batch=1"), std::string::npos);
    }
  EXPECT_EQ(
      workflow::tune(*g3_, quick_tune(workflow::bucket_prior({{"batch", 3}}, *g3_, r), 4), nullptr).skipped,
      0u);  // without the earlier margins nothing is known about the skipped ones

  EXPECT_EQ(workflow::tune(*g3_, quick_tune(prior, 11), nullptr).skipped, 0u);  // within the ratio
  EXPECT_EQ(workflow::tune(*g3_, quick_tune(prior, 0), nullptr).skipped, 0u);   // pruning off
  prior.nodes.back() += "-renamed";  // another structure: node ids would not name the same nodes
  EXPECT_EQ(workflow::tune(*g3_, quick_tune(prior, 4), nullptr).skipped, 0u);
}

// ---- one measurement session for every bucket ----

// The buckets' graphs go to one worker process, which switches between them: each bucket's
// candidates are measured on that bucket's graph (valid where measuring in-process finds them
// valid; timed at its shapes, so batch 3's convolutions cost about 3x batch 1's in the same
// worker -- a worker left on one bucket would time both alike), and no second worker starts.
TEST_F(BucketFiles, OneMeasureSessionServesEveryBucket) {
  std::vector<const BackendSpec*> backends = {find_backend("onednn"), find_backend("native")};
  MeasureOptions options;
  options.min_time_ms = 0.5;
  options.min_samples = 3;
  options.worker.command = {COLLAGE_FAULTY_CLI, kMeasureWorkerFlag};
  MeasureWorker session({{{{"batch", 1}}, g1_.get()}, {{{"batch", 3}}, g3_.get()}}, options);
  const Graph* graphs[] = {g1_.get(), g3_.get()};
  std::map<size_t, std::vector<double>> conv_ms;  // bucket -> per visit, the convolutions' total
  for (size_t b : {1u, 0u, 1u}) {
    SCOPED_TRACE("bucket " + std::to_string(b));
    const Graph& g = *graphs[b];
    std::vector<Candidate> candidates;
    for (const Candidate& c : enumerate_candidates(g, backends))
      if (c.label == "Conv") candidates.push_back(c);
    ASSERT_GT(candidates.size(), 4u);
    std::vector<Tensor> values = reference_values(g, random_inputs(g, 1), native::node_evaluator());
    MeasureOptions in_process = options;
    in_process.worker.command.clear();
    std::vector<MeasuredCandidate> want =
        Measurer(g, values, nullptr, in_process).measure(candidates, backends);
    Measurer measurer(g, values, nullptr, options);
    measurer.share_worker(&session, b);
    std::vector<MeasuredCandidate> got = measurer.measure(candidates, backends);
    ASSERT_EQ(got.size(), want.size());
    double total = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].cost.valid(), want[i].cost.valid())
          << candidates[i].backend << " " << candidates[i].label << ": " << got[i].cost.invalid_reason;
      EXPECT_TRUE(got[i].cost.valid()) << got[i].cost.invalid_reason;
      total += got[i].cost.median_ms;
    }
    conv_ms[b].push_back(total);
    EXPECT_EQ(measurer.workers_started(), conv_ms.size() == 1 && conv_ms[b].size() == 1 ? 1 : 0);
  }
  for (double batch3 : conv_ms[1]) EXPECT_GT(batch3, 1.5 * conv_ms[0].at(0));
  EXPECT_EQ(session.workers_started(), 1);
  EXPECT_THROW(session.select(1, *g1_, random_inputs(*g1_, 1), 1), Error);  // not bucket 1's graph
}

// ---- the artifact ----

size_t weights_bytes(const std::string& artifact) {
  uint64_t v = 0;
  std::memcpy(&v, artifact.data() + 40, 8);  // header: weights size (docs/artifact-format.md)
  return static_cast<size_t>(v);
}

// Every distinct constant once, each at a 64-byte boundary: the weights section of an
// artifact holding `graphs` when equal contents are stored once.
size_t distinct_constant_bytes(const std::vector<const Graph*>& graphs) {
  std::set<std::string> contents;
  auto add = [&](const Tensor& t) {
    contents.insert(std::string(static_cast<const char*>(t.raw()), t.bytes()));
  };
  for (const Graph* g : graphs) {
    for (const Value& v : g->values)
      if (v.constant) add(*v.constant);
    for (const Node& n : g->nodes)
      for (const auto& [key, a] : n.attrs)
        if (a.kind == AttrKind::Tensor) add(a.t);
  }
  size_t total = 0;
  for (const std::string& c : contents) total += (c.size() + 63) / 64 * 64;
  return total;
}

TEST_F(BucketFiles, ArtifactStoresTheWeightsOnceAndReadsBack) {
  Artifact a1 = build_artifact(*g1_, *p1_, all_backends(), "resnet_small");
  Artifact a3 = build_artifact(*g3_, *p3_, all_backends(), "resnet_small");
  std::string single = serialize_artifact(a1);
  std::string both = serialize_artifact({{{{"batch", 1}}, a1}, {{{"batch", 3}}, a3}});
  const size_t distinct = distinct_constant_bytes({g1_.get(), g3_.get()});
  EXPECT_LE(weights_bytes(both), distinct);
  EXPECT_GT(weights_bytes(both) + 64, distinct);
  EXPECT_LT(weights_bytes(both), weights_bytes(single) * 105 / 100);  // not twice the weights
  EXPECT_LT(both.size(), single.size() * 2);

  std::vector<ArtifactBucket> read = parse_artifact_buckets(both, "b.collage");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[0].artifact.info.major, 2);
  EXPECT_EQ(read[0].dims, (DimValues{{"batch", 1}}));
  EXPECT_EQ(read[1].artifact.info.inputs.at(0).shape, (Shape{3, 3, 64, 64}));
  EXPECT_EQ(read[1].artifact.kernels.size(), p3_->kernels.size());
  EXPECT_EQ(read[1].artifact.info.model_fingerprint, model_fingerprint(*g3_));
  EXPECT_NE(error_of([&] { parse_artifact(both, "b.collage"); }).find("batch=1; batch=3"), std::string::npos);
  // A one-plan artifact is still a version-1 file, and reads as one bucket without dims.
  std::vector<ArtifactBucket> one = parse_artifact_buckets(single, "s.collage");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].artifact.info.major, 1);
  EXPECT_TRUE(one[0].dims.empty());
}

TEST_F(BucketFiles, HostileBucketManifestsAreNamed) {
  Artifact a1 = build_artifact(*g1_, *p1_, all_backends(), "m");
  Artifact a3 = build_artifact(*g3_, native_placement(*g3_), all_backends(), "m");
  const std::string bytes = serialize_artifact({{{{"batch", 1}}, a1}, {{{"batch", 3}}, a3}});
  auto edited = [&](const std::function<void(json&)>& edit) {
    uint64_t manifest_bytes = 0, weights_at = 0, weights_len = 0;
    std::memcpy(&manifest_bytes, bytes.data() + 24, 8);
    std::memcpy(&weights_at, bytes.data() + 32, 8);
    std::memcpy(&weights_len, bytes.data() + 40, 8);
    json m = json::parse(bytes.substr(artifact_detail::kHeaderBytes, manifest_bytes));
    edit(m);
    std::string text = m.dump();
    uint64_t new_at = (artifact_detail::kHeaderBytes + text.size() + 63) / 64 * 64, tl = text.size();
    std::string out(new_at + weights_len, '\0');
    std::memcpy(out.data(), bytes.data(), artifact_detail::kHeaderBytes);
    std::memcpy(out.data() + 24, &tl, 8);
    std::memcpy(out.data() + 32, &new_at, 8);
    std::memcpy(out.data() + artifact_detail::kHeaderBytes, text.data(), text.size());
    std::memcpy(out.data() + new_at, bytes.data() + weights_at, weights_len);
    artifact_detail::reseal(out);
    return error_of([&] { parse_artifact_buckets(out, "x.collage"); });
  };
  EXPECT_EQ(edited([](json&) {}), "") << "an unedited manifest must load";
  EXPECT_NE(edited([](json& m) { m["buckets"] = json::array(); }).find("non-empty"), std::string::npos);
  EXPECT_NE(edited([](json& m) { m["buckets"][1]["dims"]["batch"] = 1; }).find("listed twice"),
            std::string::npos);
  EXPECT_NE(edited([](json& m) { m["buckets"][1]["dims"] = json::object(); }).find("no dims"),
            std::string::npos);
  EXPECT_NE(edited([](json& m) { m["buckets"][0]["dims"]["batch"] = -4; }).find("out of range"),
            std::string::npos);
  EXPECT_NE(edited([](json& m) {
              m["buckets"][1] = m["buckets"][0];  // batch 1's plan filed under batch=3
              m["buckets"][1]["dims"]["batch"] = 3;
            }).find("same input shapes"),
            std::string::npos);
  EXPECT_NE(edited([](json& m) { m["buckets"][1]["plan"].erase(0); }).find("is in no kernel"),
            std::string::npos);
  EXPECT_NE(edited([](json& m) { m.erase("buckets"); }).find("buckets"), std::string::npos);
}

// ---- the runtime: dispatch by input shapes ----

class BucketRuntime : public BucketFiles {
 protected:
  void SetUp() override {
    path_ = dir_.path() / "b.collage";
    // Both plans mixed (their oneDNN kernels convert the weights the buckets share).
    write_artifact(
        {{{{"batch", 1}}, build_artifact(*g1_, testing::mixed_placement(*g1_), all_backends(), "m")},
         {{{"batch", 3}}, build_artifact(*g3_, *p3_, all_backends(), "m")}},
        path_.string());
  }
  testing::ScopedTempDir dir_{"collage_buckets_runtime"};
  fs::path path_;
};

// The reference: the graph run node by node by the native kernels.
std::vector<Tensor> native_outputs(const Graph& g, const std::vector<Tensor>& inputs) {
  return Executor(g, placement_steps(g, native_placement(g), all_backends(), CompileOptions{})).run(inputs);
}

TEST_F(BucketRuntime, EachShapeRunsItsOwnBucketsPlan) {
  auto rt = Runtime::load(path_.string());
  ASSERT_EQ(rt->bucket_count(), 2u);
  EXPECT_EQ(rt->kernel_count(1), p3_->kernels.size());
  // The second bucket's oneDNN kernels took the first's converted weights (shared, not repacked):
  // the outputs below show the shared weights are the right ones.
  size_t onednn_kernels = 0;
  for (const PlacedKernel& k : p3_->kernels) onednn_kernels += k.backend.rfind("onednn", 0) == 0;
  if (onednn_kernels > 0) {
    EXPECT_GT(rt->shared_weights(), 0u);
  }
  for (auto [graph, bucket] : {std::pair{g3_.get(), size_t{1}}, std::pair{g1_.get(), size_t{0}}}) {
    std::vector<Tensor> inputs = random_inputs(*graph, 5);
    std::vector<Tensor> got = rt->run(inputs);
    EXPECT_EQ(rt->last_bucket(), bucket);
    std::vector<Tensor> want = native_outputs(*graph, inputs);
    ASSERT_EQ(got.size(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      EXPECT_EQ(got[o].shape(), want[o].shape());
      TensorComparison c = compare_tensors(got[o], want[o], Tolerance{1e-4, 1e-4, 0});
      EXPECT_TRUE(c.ok()) << "bucket " << bucket << " output " << o << ": " << c.max_abs_error;
    }
  }
}

TEST_F(BucketRuntime, AShapeNoBucketHoldsIsRefusedListingTheBuckets) {
  auto rt = Runtime::load(path_.string());
  std::string err = error_of([&] { rt->run({Tensor(DType::Float32, {2, 3, 64, 64})}); });
  EXPECT_NE(err.find("[2,3,64,64]"), std::string::npos) << err;
  EXPECT_NE(err.find("batch=1: input [1,3,64,64]"), std::string::npos) << err;
  EXPECT_NE(err.find("batch=3: input [3,3,64,64]"), std::string::npos) << err;
  EXPECT_NE(err.find("neither padded nor cut"), std::string::npos) << err;
  EXPECT_NE(error_of([&] { load_artifact(path_.string()); }).find("read it as buckets"), std::string::npos);
}

TEST_F(BucketRuntime, CApiPicksTheBucketFromTheInputsSet) {
  collage_model* m = collage_load(path_.string().c_str());
  ASSERT_NE(m, nullptr) << collage_last_error();
  EXPECT_EQ(collage_num_buckets(m), 2);
  collage_tensor_info info{};
  ASSERT_EQ(collage_bucket_input_info(m, 1, 0, &info), 0);
  EXPECT_EQ(info.shape[0], 3);
  EXPECT_NE(collage_bucket_input_info(m, 2, 0, &info), 0);
  std::vector<float> data(3 * 3 * 64 * 64, 0.5f);
  const int64_t bad[] = {2, 3, 64, 64}, good[] = {3, 3, 64, 64};
  EXPECT_NE(collage_set_input(m, "input", data.data(), 4, bad), 0);
  EXPECT_NE(std::string(collage_last_error()).find("[1,3,64,64] or [3,3,64,64]"), std::string::npos)
      << collage_last_error();
  ASSERT_EQ(collage_set_input(m, "input", data.data(), 4, good), 0) << collage_last_error();
  ASSERT_EQ(collage_run(m), 0) << collage_last_error();
  ASSERT_EQ(collage_output_info(m, 0, &info), 0);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.shape[0], 3);  // the outputs of the bucket that ran
  EXPECT_EQ(collage_num_buckets(nullptr), -1);
  collage_free(m);
}

}  // namespace
}  // namespace collage
