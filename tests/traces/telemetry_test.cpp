// Telemetry: the rocm-smi logs of 8x MI300X vLLM inference in ../shared/data/power (real), and fixtures modelled on
// the documented output of nvidia-smi --query-gpu ... --format=csv and dcgmi dmon -e
// 155,156,150,140,100,101,203,204,252.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "chopsim/common/error.hpp"
#include "chopsim/traces/timestamps.hpp"
#include "chopsim_test_helpers.hpp"
#include "traces_test_support.hpp"

namespace chopsim {
namespace {

const std::string kMi300x = "power/mi300x_rocm_smi_inference/";
const std::string kRun = "Llama-3.1-8B_latency_bs8_in128_out128_float16_mem0.9_20250807_191332.csv";

struct Range {
  double min = 1e300, max = -1e300, sum = 0.0;
  std::size_t n = 0;
  void add(double v) {
    if (!std::isfinite(v)) return;
    min = std::min(min, v);
    max = std::max(max, v);
    sum += v;
    ++n;
  }
};

TEST(Telemetry, Mi300xRocmSmiPowerTemperatureAndUse) {
  CHOPSIM_REQUIRE_SHARED_DATA(kMi300x + "gpu_power_" + kRun);
  // Values from the CSVs (Python csv module): power 2888 samples, 139..751 W, mean 169.156 W over 1841 s;
  // temperatures 2872 samples, edge 43..67 C, junction 37..71 C; GPU use 0..100 %.
  const auto power = test::read_trace(test::shared_data_dir() / kMi300x / ("gpu_power_" + kRun), "amd-smi");
  ASSERT_EQ(power.sink.telemetry.size(), 2888U);
  Range watts;
  std::set<std::int32_t> devices;
  double last = 0.0;
  std::size_t with_cap = 0;
  for (const auto& s : power.sink.telemetry) {
    watts.add(s.power_w);
    devices.insert(s.device);
    last = std::max(last, s.time_s);
    with_cap += std::isfinite(s.power_limit_w);
    EXPECT_FALSE(std::isfinite(s.temp_edge_c));
  }
  EXPECT_EQ(watts.min, 139.0);
  EXPECT_EQ(watts.max, 751.0);
  EXPECT_NEAR(watts.sum / static_cast<double>(watts.n), 169.15616343490305, 1e-9);
  EXPECT_EQ(devices, (std::set<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(last, 1841.0);
  EXPECT_EQ(with_cap, 0U);  // the power_cap_watts column is empty in every row
  EXPECT_EQ(power.info.time_origin_ns, std::int64_t{1754586812} * 1000000000);

  const auto temp = test::read_trace(test::shared_data_dir() / kMi300x / ("gpu_temp_" + kRun), "amd-smi");
  ASSERT_EQ(temp.sink.telemetry.size(), 2872U);
  Range edge, junction;
  for (const auto& s : temp.sink.telemetry) {
    edge.add(s.temp_edge_c);
    junction.add(s.temp_junction_c);
  }
  EXPECT_EQ(edge.min, 43.0);
  EXPECT_EQ(edge.max, 67.0);
  EXPECT_EQ(junction.min, 37.0);
  EXPECT_EQ(junction.max, 71.0);

  const auto use = test::read_trace(test::shared_data_dir() / kMi300x / ("gpu_usage_" + kRun), "amd-smi");
  ASSERT_EQ(use.sink.telemetry.size(), 2888U);
  Range util, vram;
  for (const auto& s : use.sink.telemetry) {
    util.add(s.util_gpu);
    vram.add(s.memory_used_bytes);
  }
  EXPECT_EQ(util.min, 0.0);
  EXPECT_EQ(util.max, 1.0);
  EXPECT_EQ(vram.max, 178139209728.0);
}

TEST(Telemetry, NvidiaSmiQueryGpuCsvWithUnits) {
  const auto r = test::read_trace(test::fixture("nvidia_smi.csv"), "nvidia-smi");
  ASSERT_EQ(r.sink.telemetry.size(), 6U);
  EXPECT_EQ(r.info.gpu_name, "NVIDIA H100 80GB HBM3");
  const auto& first = r.sink.telemetry[0];
  EXPECT_EQ(first.device, 0);
  EXPECT_DOUBLE_EQ(first.time_s, 0.0);
  EXPECT_DOUBLE_EQ(first.power_w, 118.49);
  EXPECT_DOUBLE_EQ(first.power_limit_w, 700.0);
  EXPECT_DOUBLE_EQ(first.gfx_clock_hz, 1980e6);
  EXPECT_DOUBLE_EQ(first.mem_clock_hz, 2619e6);
  EXPECT_DOUBLE_EQ(first.temp_edge_c, 34.0);
  EXPECT_DOUBLE_EQ(first.temp_memory_c, 41.0);
  EXPECT_DOUBLE_EQ(first.memory_used_bytes, 1024.0 * 1024.0);
  const auto& busy = r.sink.telemetry[3];
  EXPECT_EQ(busy.device, 1);
  EXPECT_NEAR(busy.time_s, 1.003, 1e-9);
  EXPECT_DOUBLE_EQ(busy.util_gpu, 1.0);
  EXPECT_DOUBLE_EQ(busy.util_memory, 0.61);
  EXPECT_FALSE(std::isfinite(busy.temp_memory_c));  // [N/A]
  // 2024-05-22 17:15:22.123 read as UTC.
  EXPECT_EQ(r.info.time_origin_ns, 1716398122123000000);

  const auto nounits = test::read_trace(test::fixture("nvidia_smi_nounits.csv"), "nvidia-smi");
  ASSERT_EQ(nounits.sink.telemetry.size(), 2U);
  EXPECT_DOUBLE_EQ(nounits.sink.telemetry[1].gfx_clock_hz, 1755e6);
  EXPECT_NEAR(nounits.sink.telemetry[1].time_s, 0.5, 1e-9);
}

// Hopper's power.draw is the average of the last second and lags a phase that starts; when the log also has
// power.draw.instant, that is the power read (the H200 probe's nvidia-smi.csv has both, instant second).
TEST(Telemetry, NvidiaSmiPrefersTheInstantPower) {
  const std::string file = "measured/h200_llama32_1b/nvidia-smi.csv";
  CHOPSIM_REQUIRE_SHARED_DATA(file);
  const auto r = test::read_trace(test::shared_data_dir() / file, "nvidia-smi");
  std::ifstream in(test::shared_data_dir() / file);
  std::string line;
  std::getline(in, line);  // header: timestamp, index, name, power.draw [W], power.draw.instant [W], ...
  std::size_t i = 0, differ = 0;
  while (std::getline(in, line) && i < r.sink.telemetry.size()) {
    std::vector<std::string> fields;
    std::stringstream split(line);
    for (std::string field; std::getline(split, field, ',');) fields.push_back(field);
    ASSERT_GE(fields.size(), 5U);
    const double average = std::stod(fields[3]), instant = std::stod(fields[4]);
    EXPECT_DOUBLE_EQ(r.sink.telemetry[i].power_w, instant) << "row " << i + 2;
    differ += std::fabs(average - instant) > 50.0;
    ++i;
  }
  EXPECT_EQ(i, r.sink.telemetry.size());
  EXPECT_GT(differ, 100U);  // the choice matters: the two columns differ by over 50 W in many rows
}

TEST(Telemetry, TimestampsAsToolsWriteThem) {
  // 2024-05-22 17:15:22 UTC = 1716398122 s since the epoch (date -u -d '2024-05-22 17:15:22' +%s).
  EXPECT_EQ(parse_timestamp_ns("2024/05/22 17:15:22.123"), 1716398122123000000);
  EXPECT_EQ(parse_timestamp_ns("2024-05-22 17:15:22.123"), 1716398122123000000);
  EXPECT_EQ(parse_timestamp_ns("2024-05-22T17:15:22.123Z"), 1716398122123000000);
  EXPECT_EQ(parse_timestamp_ns(" 1716398122.5 "), 1716398122500000000);
  EXPECT_FALSE(parse_timestamp_ns("yesterday"));
  EXPECT_FALSE(parse_timestamp_ns("2024-13-22 17:15:22"));
  EXPECT_FALSE(parse_timestamp_ns("2262-01-01 00:00:00"));  // past what int64 nanoseconds hold
}

TEST(Telemetry, DcgmDmon) {
  const auto r = test::read_trace(test::fixture("dcgm_dmon.txt"), "dcgm-dmon");
  ASSERT_EQ(r.sink.telemetry.size(), 7U);  // the all-N/A row is dropped
  const auto& s = r.sink.telemetry[2];
  EXPECT_EQ(s.device, 0);
  EXPECT_DOUBLE_EQ(s.time_s, 1.0);
  EXPECT_DOUBLE_EQ(s.power_w, 402.125);
  EXPECT_DOUBLE_EQ(s.energy_j, 101606.687);
  EXPECT_DOUBLE_EQ(s.temp_edge_c, 41.0);
  EXPECT_DOUBLE_EQ(s.temp_memory_c, 44.0);
  EXPECT_DOUBLE_EQ(s.gfx_clock_hz, 1980e6);
  EXPECT_DOUBLE_EQ(s.util_gpu, 1.0);
  EXPECT_DOUBLE_EQ(s.util_memory, 0.38);
  EXPECT_DOUBLE_EQ(s.memory_used_bytes, 70655.0 * 1048576.0);
  EXPECT_DOUBLE_EQ(r.sink.telemetry.back().time_s, 3.0);  // the header repeats; rounds keep counting
}

TEST(Telemetry, BadRowsNameFileAndLine) {
  const auto dir = test::process_temp_dir() / "telemetry";
  std::filesystem::create_directories(dir);
  const auto file = dir / "bad_power.csv";
  {
    std::ofstream out(file);
    out << "timestamp,device,power_watts\n1754586812,card0,154.0\n1754586813,cardX,150.0\n";
  }
  try {
    (void)test::read_trace(file, "amd-smi");
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_NE(std::string(error.what()).find("bad_power.csv:3"), std::string::npos) << error.what();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace chopsim
