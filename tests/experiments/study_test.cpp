// Procurement studies (issue 17): the cost arithmetic by hand, the study and catalog files' checks, and a small
// study end to end (each candidate's best point priced, results.csv the same whatever the job count).

#include "chopsim/experiments/study.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "chopsim/config/registries.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

TEST(StudyCost, RentalAndOwnershipByHand) {
  // 64 GPUs in 8 nodes at 50,000 tokens/s, 600 W mean and 800 W largest 100 ms average per GPU, 1e11 tokens.
  PointResult best;
  best.status = PointStatus::ok;
  best.figures.tokens_per_s = 50000.0;
  best.figures.mean_power_w = 600.0;
  best.figures.peak_power_100ms_w = 800.0;
  FacilityCost facility;
  facility.pue = 1.5;
  facility.electricity_usd_per_kwh = 0.1;
  facility.rack_power_kw = 40.0;
  GpuCost rented;
  rented.gpu_hour_usd = 4.0;
  rented.node_overhead_w = 4000.0;
  rented.gpus_per_rack = 32;
  const CandidateResult r = price_candidate("x", "H100-SXM5-80GB", 64, 8, best, 1e11, rented, facility);
  ASSERT_TRUE(r.feasible);
  const double time = 1e11 / 50000.0;  // 2e6 s
  EXPECT_DOUBLE_EQ(r.time_to_train_s, time);
  EXPECT_DOUBLE_EQ(r.gpu_energy_j, 600.0 * 64 * time);                            // 7.68e10 J
  EXPECT_DOUBLE_EQ(r.facility_energy_j, (600.0 * 64 + 4000.0 * 8) * 1.5 * time);  // 2.112e11 J
  EXPECT_NEAR(r.cost_usd, 4.0 * 64 * time / 3600.0, 1e-6);                        // $142,222
  EXPECT_NEAR(r.tokens_per_dollar, 1e11 / (4.0 * 64 * time / 3600.0), 1e-6);
  EXPECT_DOUBLE_EQ(r.facility_power_w, (800.0 * 64 + 4000.0 * 8) * 1.5);  // 124.8 kW
  EXPECT_DOUBLE_EQ(r.tokens_per_s_per_kw, 50000.0 / 124.8);
  // Space: 64 / 32 = 2 racks; power: 83.2 kW of IT at peak / 40 kW = 3 racks.
  EXPECT_EQ(r.racks, 3);
  // A system sold as whole racks with their own power (GB200 NVL72, ~120 kW) is not bound by the facility's 40 kW:
  // 83.2 kW / 132 kW = 1 rack by power, 64 / 72 = 1 by space.
  GpuCost rack_system = rented;
  rack_system.gpus_per_rack = 72;
  rack_system.rack_power_kw = 132.0;
  EXPECT_EQ(price_candidate("r", "GB200", 64, 8, best, 1e11, rack_system, facility).racks, 1);
  rack_system.rack_power_kw = 50.0;  // 83.2 / 50 -> 2 racks
  EXPECT_EQ(price_candidate("r", "GB200", 64, 8, best, 1e11, rack_system, facility).racks, 2);

  GpuCost owned = rented;
  owned.gpu_hour_usd.reset();
  owned.capex_usd_per_gpu = 30000.0;
  owned.amortisation_years = 4.0;
  const CandidateResult o = price_candidate("y", "H100-SXM5-80GB", 64, 8, best, 1e11, owned, facility);
  const double capex_share = 30000.0 * 64 * time / (4.0 * 365.25 * 86400.0);        // $30,418
  const double electricity = (600.0 * 64 + 4000.0 * 8) * 1.5 * time / 3.6e6 * 0.1;  // $5,867
  EXPECT_NEAR(o.cost_usd, capex_share + electricity, 1e-6);

  PointResult oom;
  oom.status = PointStatus::oom;
  EXPECT_FALSE(price_candidate("z", "H100-SXM5-80GB", 64, 8, oom, 1e11, rented, facility).feasible);
}

class Study : public test::TempDirTest {
 protected:
  /// A sweep over the tiny Megatron GPT (8 GPUs of one node), a catalog, and a study with `candidates`.
  std::filesystem::path study(const std::string& candidates, const std::string& extra = "") const {
    (void)write("search.yaml",
                "base: " + (test::configs_dir() / "validation" / "megatron-gpt-tiny-tp1-pp1.yaml").string() +
                    "\ndp: auto\naxes:\n  training.micro_batch: [1, 4]\n  parallelism.tp: [1, 2]\n");
    (void)write("catalog.yaml",
                "facility: {pue: 1.5, electricity_usd_per_kwh: 0.1, rack_power_kw: 40}\n"
                "gpus:\n"
                "  H100-SXM5-80GB: {gpu_hour_usd: 4.0, node_overhead_w: 4600, gpus_per_rack: 32}\n"
                "  A100-SXM4-80GB: {gpu_hour_usd: 1.8, node_overhead_w: 3300, gpus_per_rack: 32}\n");
    return write("study.yaml", "sweep: search.yaml\ngoal: {tokens: 1.0e9}\n" + extra + "candidates:\n" + candidates);
  }
  StudyResult run(const StudySpec& spec, int jobs, const std::string& out) const {
    StudyOptions options;
    options.out_dir = dir_ / out;
    options.jobs = jobs;
    return run_study(spec, default_search_path(spec.sweep.base), registries_, options);
  }
  const ModelRegistries registries_ = ModelRegistries::with_builtins();
};

const std::string kTwoCandidates =
    "  - {name: H100 node, set: {hardware: H100-SXM5-80GB}}\n"
    "  - {name: A100 node, set: {hardware: A100-SXM4-80GB, cluster.name: dgx-a100, training.attention: flash2},\n"
    "     cost: {gpu_hour_usd: 2.0}}\n";

TEST_F(Study, EachCandidateIsPricedAtItsBestPoint) {
  const StudySpec spec = load_study(study(kTwoCandidates));
  ASSERT_EQ(spec.candidates.size(), 2u);
  EXPECT_EQ(*spec.candidates[1].cost->gpu_hour_usd, 2.0);  // the candidate's cost over the catalog's
  EXPECT_EQ(spec.candidates[1].cost->node_overhead_w, 3300.0);
  const StudyResult result = run(spec, 2, "out");
  ASSERT_EQ(result.candidates.size(), 2u);
  for (const CandidateResult& c : result.candidates) {
    SCOPED_TRACE(c.name);
    ASSERT_TRUE(c.feasible) << c.why_not;
    EXPECT_EQ(c.gpus, 8);
    EXPECT_EQ(c.nodes, 1);
    // The best point is the fastest of the candidate's sweep.
    const std::string csv = test::read_text(c.sweep_dir / "results.csv");
    EXPECT_NE(csv.find(",ok,"), std::string::npos);
    EXPECT_DOUBLE_EQ(c.time_to_train_s, 1e9 / c.tokens_per_s);
    const double rate = c.name == "H100 node" ? 4.0 : 2.0;
    EXPECT_NEAR(c.cost_usd, rate * 8 * c.time_to_train_s / 3600.0, 1e-9 * c.cost_usd);
  }
  EXPECT_EQ(result.candidates[0].hardware, "H100-SXM5-80GB");
  EXPECT_EQ(result.candidates[1].hardware, "A100-SXM4-80GB");
  EXPECT_GT(result.candidates[0].tokens_per_s, result.candidates[1].tokens_per_s);  // H100 is the faster GPU
  const std::string csv = test::read_text(result.results_csv);
  for (const char* column :
       {"candidate", "tokens_per_s", "time_to_train_s", "energy_j", "cost_usd", "tokens_per_dollar",
        "tokens_per_s_per_kw", "racks", "facility_power_kw", "parallelism.tp", "training.micro_batch"})
    EXPECT_NE(csv.find(column), std::string::npos) << column;
  // The same bytes with one job (and a fresh folder).
  EXPECT_EQ(test::read_text(run(spec, 1, "out1").results_csv), csv);
}

TEST_F(Study, BadStudiesNameTheFileAndKey) {
  struct Case {
    std::string candidates, extra, expected;
  };
  const Case cases[] = {
      {kTwoCandidates, "colour: red\n", "unknown key 'colour'"},
      {"  - {name: x, set: {hardware: B200}}\n", "", "does not price B200"},
      {"  - {name: x, set: {cluster.nodes: 1}}\n", "", "names no hardware"},
      {"  - {name: x, set: {hardware: H100-SXM5-80GB, parallelism.tp: 2}}\n", "", "is an axis of the study's sweep"},
      {"  - {name: x, set: {hardware: H100-SXM5-80GB}, cost: {gpu_hour_usd: -1}}\n", "", "cost.gpu_hour_usd"},
      {"  - {name: x, set: {hardware: H100-SXM5-80GB}}\n  - {name: x, set: {hardware: H100-SXM5-80GB}}\n", "",
       "two candidates are named 'x'"},
      {"  - {name: x, set: {hardware: H100-SXM5-80GB}}\n", "facility: {pue: 0.5}\n", "facility.pue"},
  };
  for (const Case& c : cases) {
    const auto file = study(c.candidates, c.extra);
    const std::string message = test::input_error([&] { (void)load_study(file); });
    EXPECT_NE(message.find("study.yaml"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.expected << " -> " << message;
  }
  const auto no_goal = write("nogoal.yaml", "sweep: search.yaml\ncandidates: []\n");
  EXPECT_NE(test::input_error([&] { (void)load_study(no_goal); }).find("goal"), std::string::npos);
}

TEST(ShippedStudies, LoadWithEveryCandidatePriced) {
  for (const char* name : {"scaleup-vs-scaleout.yaml", "llama3-70b-procurement.yaml"}) {
    const StudySpec spec = load_study(test::configs_dir() / "studies" / name);
    EXPECT_GE(spec.candidates.size(), 2u) << name;
    for (const StudyCandidate& c : spec.candidates) {
      ASSERT_TRUE(c.cost.has_value()) << c.name;
      EXPECT_TRUE(c.cost->gpu_hour_usd || c.cost->capex_usd_per_gpu) << c.name;
      EXPECT_FALSE(c.cost->source.empty()) << c.name << ": every catalog price names its source";
    }
  }
  // The shipped catalog prices the GPUs issue 17 names, each with a dated source (a year in its source text).
  const StudySpec spec = load_study(test::configs_dir() / "studies" / "scaleup-vs-scaleout.yaml");
  for (const char* gpu : {"H100-SXM5-80GB", "H200-SXM-141GB", "A100-SXM4-80GB", "B200", "GB200", "MI300X", "MI325X"}) {
    const auto it = spec.catalog.gpus.find(gpu);
    ASSERT_NE(it, spec.catalog.gpus.end()) << gpu;
    EXPECT_TRUE(it->second.gpu_hour_usd || it->second.capex_usd_per_gpu) << gpu;
    EXPECT_NE(it->second.source.find("202"), std::string::npos) << gpu << ": " << it->second.source;
    EXPECT_TRUE(std::filesystem::exists(test::configs_dir() / "hardware" / (std::string(gpu) + ".yaml"))) << gpu;
  }
  // GB200 racks come with their own power (an NVL72 rack is ~120-132 kW, above an air-cooled facility's limit).
  EXPECT_GT(spec.catalog.gpus.at("GB200").rack_power_kw.value_or(0.0), spec.catalog.facility.rack_power_kw);
}

}  // namespace
}  // namespace chopsim
