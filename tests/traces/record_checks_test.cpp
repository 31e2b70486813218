// Numbers read from traces are range-checked before anything uses them (issue 16): each case is one malformed
// value, in the format where it was found; the error names the file and says what is wrong. Before, these were
// stored as given (a negative or string duration, a 9.2e9 s kernel) or overflowed int64 (undefined behaviour).

#include <gtest/gtest.h>

#include <string>

#include "chopsim/traces/reader.hpp"
#include "chopsim_test_helpers.hpp"
#include "traces_test_support.hpp"

namespace chopsim::test {
namespace {

class RecordChecks : public TempDirTest {
 protected:
  /// The message of reading `text` (written to `name`) with detection and checks.
  std::string error_of(const std::string& name, const std::string& text) {
    const auto path = write(name, text);
    const std::string message = input_error([&] { (void)read_trace(path, expected_format(name)); });
    EXPECT_NE(message.find(name), std::string::npos) << message;  // the file is named
    return message;
  }
  static std::string expected_format(const std::string& name) {
    if (name.ends_with(".json")) return "kineto";
    if (name.starts_with("rocprof")) return "rocprofv3-csv";
    return "nvidia-smi";
  }
};

std::string kineto_event(const std::string& ts, const std::string& dur, const std::string& device = "0") {
  return R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"ampere_sgemm","pid":0,"tid":7,"ts":)" + ts + R"(,"dur":)" +
         dur + R"(,"args":{"device":)" + device + R"(,"stream":7}}]})";
}

const char* kRocprofHeader =
    "\"Kind\",\"Agent_Id\",\"Queue_Id\",\"Kernel_Name\",\"Correlation_Id\",\"Start_Timestamp\",\"End_Timestamp\"\n";

std::string rocprof_row(const std::string& start, const std::string& end, const std::string& agent = "Agent 2") {
  return std::string(kRocprofHeader) + "\"KERNEL_DISPATCH\",\"" + agent + "\",16,\"k.kd\",1," + start + "," + end +
         "\n";
}

const char* kSmiHeader =
    "timestamp, index, name, power.draw [W], clocks.current.sm [MHz], temperature.gpu, utilization.gpu [%]\n";

std::string smi_row(const std::string& time, const std::string& power = "118.49 W", const std::string& index = "0",
                    const std::string& temperature = "34", const std::string& utilization = "0 %") {
  return std::string(kSmiHeader) + time + ", " + index + ", NVIDIA H100 80GB HBM3, " + power + ", 1980 MHz, " +
         temperature + ", " + utilization + "\n";
}

TEST_F(RecordChecks, KinetoDurationsMustBeNonNegativeNumbers) {
  EXPECT_NE(error_of("negative.json", kineto_event("100", "-5")).find("duration -5e-06 s is negative"),
            std::string::npos);
  EXPECT_NE(error_of("text.json", kineto_event("100", "\"abc\"")).find("'dur' abc, not a number"), std::string::npos);
  // 9.2e18 ns is no kernel's duration (the 9.22e9 s kernel the issue found).
  EXPECT_NE(error_of("huge.json", kineto_event("100", "9000000000000000")).find("longer than 11 days"),
            std::string::npos);
  EXPECT_NE(error_of("device.json", kineto_event("100", "5", "5000000000")).find("out of range"), std::string::npos);
}

TEST_F(RecordChecks, KinetoTimestampsBeyondInt64AreNotTimes) {
  EXPECT_NE(error_of("ts19.json", kineto_event("9223372036854775807", "5")).find("no numeric 'ts'"), std::string::npos);
  EXPECT_NE(error_of("ts40.json", kineto_event("1234567890123456789012345678901234567890", "5")).find("'ts'"),
            std::string::npos);
}

TEST_F(RecordChecks, RocprofEndBeforeStartAndInt64ExtremesAreRefused) {
  EXPECT_NE(error_of("rocprof_end.csv", rocprof_row("63857982592000", "63857982590000")).find("negative"),
            std::string::npos);
  // INT64_MIN and INT64_MAX: end - start would overflow int64.
  EXPECT_NE(
      error_of("rocprof_min.csv", rocprof_row("-9223372036854775808", "9223372036854775807")).find("out of range"),
      std::string::npos);
  EXPECT_NE(error_of("rocprof_agent.csv", rocprof_row("1000", "2000", "Agent 99999999999")).find("device"),
            std::string::npos);
}

TEST_F(RecordChecks, TelemetryTimesMustFitInt64Nanoseconds) {
  EXPECT_NE(error_of("smi_year.csv", smi_row("99999/05/22 17:15:22.123")).find("is not a time"), std::string::npos);
  EXPECT_NE(error_of("smi_digits.csv", smi_row("123456789012345678901234567890")).find("is not a time"),
            std::string::npos);
  // Milliseconds since the epoch where seconds are expected: year 56,000.
  EXPECT_NE(error_of("smi_ms.csv", smi_row("1716398122123")).find("is not a time"), std::string::npos);
  EXPECT_NE(error_of("smi_month.csv", smi_row("2024/13/22 17:15:22.123")).find("is not a time"), std::string::npos);
  EXPECT_NE(error_of("smi_index.csv", smi_row("1716398122", "118.49 W", "99999999999999")).find("not a GPU index"),
            std::string::npos);
}

TEST_F(RecordChecks, TelemetryReadingsMustBePhysical) {
  EXPECT_NE(error_of("smi_negative.csv", smi_row("1716398122", "-118.49 W")).find("power (W) -118.49"),
            std::string::npos);
  EXPECT_NE(error_of("smi_inf.csv", smi_row("1716398122", "inf W")).find("power (W) inf"), std::string::npos);
  EXPECT_NE(error_of("smi_hot.csv", smi_row("1716398122", "118 W", "0", "3400000")).find("temperature"),
            std::string::npos);
  EXPECT_NE(error_of("smi_util.csv", smi_row("1716398122", "118 W", "0", "34", "250 %")).find("utilization"),
            std::string::npos);
  // "[N/A]" stays an unknown reading, not an error.
  const auto path = write("smi_na.csv", smi_row("1716398122", "[N/A]"));
  const ReadResult read = read_trace(path, "nvidia-smi");
  ASSERT_EQ(read.sink.telemetry.size(), 1u);
  EXPECT_TRUE(std::isnan(read.sink.telemetry.front().power_w));
}

}  // namespace
}  // namespace chopsim::test
