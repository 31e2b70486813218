// Output files: written whole or not at all, byte-identical for the same inputs, and complete.

#include <H5Cpp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "chopsim/common/error.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim_test_helpers.hpp"
#include "chopsim_test_paths.hpp"

namespace chopsim {
namespace {

std::filesystem::path fresh_directory(const std::string& name) {
  auto dir = test::process_temp_dir() / ("outputs_" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

/// Every object of an HDF5 file carries no timestamp (H5Oget_info reports 0 for untracked times): a file written a
/// second later must have the same bytes. (A byte-compare of two runs misses this when both fall in one second.)
void expect_no_object_timestamps(const std::filesystem::path& path) {
  const hid_t file = H5Fopen(path.string().c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  ASSERT_GE(file, 0) << path;
  std::vector<std::string> stamped;
  const auto visit = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    if (info->ctime != 0 || info->mtime != 0 || info->atime != 0 || info->btime != 0)
      static_cast<std::vector<std::string>*>(data)->emplace_back(name);
    return 0;
  };
  EXPECT_GE(H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, visit, &stamped, H5O_INFO_TIME), 0);
  H5Fclose(file);
  EXPECT_TRUE(stamped.empty()) << path << ": objects with timestamps, first " << stamped.front();
}

RunSpec quickstart_run(const ModelRegistries& registries) {
  const auto config = test::configs_dir() / "llama3-8b-fsdp.yaml";
  return load_run_config(config, default_search_path(config), registries);
}

TEST(RunOutputs, SameInputsGiveByteIdenticalFiles) {
  const auto registries = ModelRegistries::with_builtins();
  const RunSpec run = quickstart_run(registries);
  const auto first = fresh_directory("first");
  const auto second = fresh_directory("second");
  (void)run_simulation(run, registries, RunOptions{first, false, nullptr, {}});
  (void)run_simulation(run, registries, RunOptions{second, false, nullptr, {}});
  for (const char* file : {"summary.json", "timeline.json", "ops.h5"}) {
    const std::string a = test::read_text(first / file);
    ASSERT_FALSE(a.empty()) << file;
    EXPECT_TRUE(a == test::read_text(second / file)) << file << " differs between two identical runs";
  }
  expect_no_object_timestamps(first / "ops.h5");
}

TEST(RunOutputs, TerminalHeaderSaysWhenARunIsDeterministic) {
  const auto registries = ModelRegistries::with_builtins();
  RunSpec run = quickstart_run(registries);
  const auto header = [&] {
    std::ostringstream out;
    print_run_summary(out, run, run_simulation(run, registries));
    const std::string text = out.str();
    return text.substr(0, text.find("\n\n"));
  };
  EXPECT_EQ(header().find("deterministic"), std::string::npos);
  run.training.deterministic = true;
  EXPECT_TRUE(header().ends_with("recompute selective, deterministic")) << header();
}

TEST(RunOutputs, OpsTableHasOneRowPerExecutedOp) {
  const auto registries = ModelRegistries::with_builtins();
  const RunSpec run = quickstart_run(registries);
  const auto dir = fresh_directory("rows");
  const RunReport report = run_simulation(run, registries, RunOptions{dir, false, nullptr, {}});
  H5::H5File file((dir / "ops.h5").string(), H5F_ACC_RDONLY);
  const H5::DataSet ops = file.openDataSet("ops");
  hsize_t rows = 0;
  ops.getSpace().getSimpleExtentDims(&rows);
  // Every op emits a start and an end event.
  EXPECT_EQ(rows * 2, report.stats.op_events);
  const H5::CompType type = ops.getCompType();
  for (const char* column : {"rank", "stream", "name", "class", "start_s", "duration_s", "flops", "bytes"})
    EXPECT_GE(type.getMemberIndex(column), 0) << column;
  // The table says what it holds, as the kernel store does: UTF-8 string attributes (h5py reads them as str).
  const auto attribute = [&](const char* name) {
    const H5::Attribute a = ops.openAttribute(name);
    const H5::StrType string_type = a.getStrType();
    EXPECT_EQ(string_type.getCset(), H5T_CSET_UTF8) << name;
    std::string value;
    a.read(string_type, value);
    return value;
  };
  EXPECT_EQ(attribute("run"), run.name);
  EXPECT_NE(attribute("description").find("one row per executed op"), std::string::npos);
}

TEST(RunOutputs, FailedRunLeavesNoFiles) {
  const auto registries = ModelRegistries::with_builtins();
  const RunSpec run = quickstart_run(registries);
  const auto dir = fresh_directory("failed");
  // summary.json is written last; a directory in its way makes the run fail after the timeline and the op
  // table were written under temporary names.
  std::filesystem::create_directories(dir / "summary.json");
  EXPECT_THROW((void)run_simulation(run, registries, RunOptions{dir, false, nullptr, {}}), OutputError);
  std::vector<std::string> left;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) left.push_back(entry.path().filename().string());
  EXPECT_EQ(left, std::vector<std::string>{"summary.json"}) << "a failed run must not leave partial output files";
}

TEST(RunOutputs, OutOfMemoryRunWritesOnlyTheSummary) {
  const auto registries = ModelRegistries::with_builtins();
  RunSpec run = quickstart_run(registries);
  run.training.micro_batch = 16;  // 8 x 8192-token sequences per GPU: far beyond 192 GB of activations
  run.training.global_batch = 128;
  const auto dir = fresh_directory("oom");
  const RunReport report = run_simulation(run, registries, RunOptions{dir, false, nullptr, {}});
  EXPECT_TRUE(report.out_of_memory);
  EXPECT_FALSE(report.simulated);
  EXPECT_GT(report.memory.total_bytes, report.memory.capacity_bytes);
  EXPECT_TRUE(std::filesystem::exists(dir / "summary.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "timeline.json"));
  EXPECT_NE(test::read_text(dir / "summary.json").find("\"status\": \"out_of_memory\""), std::string::npos);
}

}  // namespace
}  // namespace chopsim

namespace chopsim {
namespace {

/// The "pid" of every complete event and the label of every named process in a timeline.json, read by scanning the
/// writer's compact output (a JSON parser takes seconds on a file this size).
std::pair<std::set<int>, std::map<int, std::string>> timeline_processes(const std::filesystem::path& file) {
  const std::string text = test::read_text(file);
  std::set<int> with_events;
  std::map<int, std::string> labels;
  auto number_after = [&](std::size_t at, const std::string& key) {
    const std::size_t k = text.find(key, at);
    return k == std::string::npos ? -1 : std::stoi(text.substr(k + key.size(), 12));
  };
  for (std::size_t at = text.find(R"("ph":"X")"); at != std::string::npos; at = text.find(R"("ph":"X")", at + 1))
    with_events.insert(number_after(at, R"("pid":)"));
  const std::string process = R"("name":"process_name","ph":"M")";
  for (std::size_t at = text.find(process); at != std::string::npos; at = text.find(process, at + 1)) {
    const int pid = number_after(at, R"("pid":)");
    const std::string key = R"("args":{"name":")";
    const std::size_t begin = text.find(key, at) + key.size();
    labels[pid] = text.substr(begin, text.find('"', begin) - begin);
  }
  return {with_events, labels};
}

TEST(RunOutputs, TimelineShowsTheChosenGpusThroughTheirClasses) {
  // Llama-3-8B TP2 PP2 DP8 on 32 MI250 GCDs (4 nodes, rear slots warmer): the fast engine simulates one GCD per
  // class of data-parallel replicas in the same slot. The timeline shows the representatives, each saying what it
  // stands for, or only the GPUs asked for.
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "llama3-8b-mi250-3d.yaml";
  const RunSpec run = load_run_config(config, default_search_path(config), registries);
  const auto dir = fresh_directory("timeline_ranks");
  RunOptions options;
  options.output_dir = dir / "all";
  const RunReport all = run_simulation(run, registries, options);
  ASSERT_LT(static_cast<int>(all.stats.simulated_ranks), all.gpus);
  const auto [simulated, labels] = timeline_processes(dir / "all" / "timeline.json");
  EXPECT_EQ(simulated.size(), all.stats.simulated_ranks);
  const int class_size = all.gpus / static_cast<int>(all.stats.simulated_ranks);
  for (const int pid : simulated)
    EXPECT_NE(labels.at(pid).find("stands for " + std::to_string(class_size) + " GPUs"), std::string::npos);
  // GPU 31 (the last data-parallel replica's last GCD) is shown through its representative: the same tp and pp,
  // its dp coordinate modulo the classes' shift.
  const RankLayout layout(run.parallelism);
  RankCoordinates c = layout.coordinates(31);
  c.dp %= run.parallelism.dp / class_size;
  options.output_dir = dir / "chosen";
  options.timeline_ranks = {0, 31};
  (void)run_simulation(run, registries, options);
  const auto [chosen, chosen_labels] = timeline_processes(dir / "chosen" / "timeline.json");
  EXPECT_EQ(chosen, (std::set<int>{0, layout.rank_of(c)}));
  // ops.h5 holds the representatives' rows and says, per GPU, whose rows stand for it.
  {
    H5::H5File ops((dir / "all" / "ops.h5").string(), H5F_ACC_RDONLY);
    const H5::DataSet classes = ops.openDataSet("representative");
    hsize_t gpus = 0;
    classes.getSpace().getSimpleExtentDims(&gpus);
    ASSERT_EQ(static_cast<int>(gpus), all.gpus);
    std::vector<std::uint32_t> representative(gpus);
    classes.read(representative.data(), H5::PredType::NATIVE_UINT32);
    EXPECT_EQ(representative[31], static_cast<std::uint32_t>(layout.rank_of(c)));
    EXPECT_EQ(representative[0], 0u);
  }
  expect_no_object_timestamps(dir / "all" / "ops.h5");
  EXPECT_EQ(chosen_labels.size(), 2u);
  // A GPU outside the run is refused before anything is written.
  options.output_dir = dir / "bad";
  options.timeline_ranks = {32};
  EXPECT_THROW((void)run_simulation(run, registries, options), ModelError);
  EXPECT_FALSE(std::filesystem::exists(dir / "bad" / "timeline.json"));
  std::filesystem::remove_all(dir);
}

TEST(RunOutputs, TimelineTooLargeIsRefusedBeforeTheRunWithItsEstimatedSize) {
  // The quick start writes a few MB of timeline per iteration; 700 iterations would pass kLargestTimelineBytes (2 GiB).
  // The run is refused before its first event with the estimate, which must track the real size of one iteration.
  const auto registries = ModelRegistries::with_builtins();
  const auto config = test::configs_dir() / "llama3-8b-fsdp.yaml";
  RunSpec run = load_run_config(config, default_search_path(config), registries);
  const auto dir = fresh_directory("timeline_bound");
  RunOptions options;
  options.output_dir = dir / "one";
  (void)run_simulation(run, registries, options);
  const double one_iteration = static_cast<double>(std::filesystem::file_size(dir / "one" / "timeline.json"));
  const int iterations = static_cast<int>(std::ceil(kLargestTimelineBytes / one_iteration * 1.5));
  run.iterations = iterations;
  options.output_dir = dir / "many";
  try {
    (void)run_simulation(run, registries, options);
    FAIL() << "a timeline of about " << one_iteration * iterations << " bytes was written";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("--force"), std::string::npos) << message;
    EXPECT_NE(message.find("--timeline-ranks"), std::string::npos) << message;
    // "about 3.1 GiB": within a factor of 1.5 of what the iterations would write.
    const auto at = message.find("about ");
    ASSERT_NE(at, std::string::npos) << message;
    const double gib = std::stod(message.substr(at + 6));
    ASSERT_NE(message.find("GiB", at), std::string::npos) << message;
    const double expected_gib = one_iteration * iterations / (1024.0 * 1024.0 * 1024.0);
    EXPECT_GT(gib, expected_gib / 1.5);
    EXPECT_LT(gib, expected_gib * 1.5);
  }
  // Nothing left behind: no timeline, no temporary file.
  for (const auto& entry : std::filesystem::directory_iterator(dir / "many"))
    ADD_FAILURE() << "left behind: " << entry.path();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace chopsim
