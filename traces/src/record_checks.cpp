// Range checks on every record a reader produces, before it reaches a store or a fit (issue 16): a reader parses the
// syntax of its format; what the numbers mean is checked once, here, for every format alike.

#include "record_checks.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "chopsim/common/error.hpp"
#include "chopsim/traces/reader.hpp"

namespace chopsim {

namespace {

/// |time| since the source's origin: int64 nanoseconds reach 9.22e9 s (292 years); a time beyond is corrupt.
constexpr double kLargestTime_s = 9.2e9;
/// No GPU activity lasts 11.6 days (1e6 s): a longer one is an end timestamp from another clock or a corrupt file.
constexpr double kLongestActivity_s = 1e6;
/// Ranks and device indices above 2^20 (1,048,576) name no GPU of any cluster built so far.
constexpr double kLargestIndex = 1 << 20;
/// Physical bounds of telemetry readings: 100 kW per GPU, 100 GHz clocks, -273.15..1000 degrees C, utilization
/// fractions up to 1 (with rounding slack: tools print percentages with one decimal).
constexpr double kLargestPower_w = 1e5;
constexpr double kLargestClock_hz = 1e11;
constexpr double kLargestTemperature_c = 1000.0;
constexpr double kAbsoluteZero_c = -273.15;
constexpr double kLargestUtilization = 1.001;

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

namespace detail {

RecordChecker::RecordChecker(std::string file) : file_(std::move(file)) {}

void RecordChecker::kernel(const KernelRecord& r, const std::string& what) const {
  time(what, "start", r.start_s);
  duration(what, r.duration_s);
  index(what, "rank", r.rank);
  index(what, "device", r.device);
  optional_amount(what, "FLOP count", r.flops);
  optional_amount(what, "byte count", r.bytes);
  optional_amount(what, "collective size (bytes)", r.collective_bytes);
  if (r.group_size != -1) index(what, "process group size", r.group_size);
  if (!std::isnan(r.launch_start_s) || !std::isnan(r.launch_end_s)) {
    time(what, "launch start", r.launch_start_s);
    time(what, "launch end", r.launch_end_s);
    if (r.launch_end_s < r.launch_start_s)
      fail(what, "its launch call ends (" + number(r.launch_end_s) + " s) before it starts (" +
                     number(r.launch_start_s) + " s)");
  }
}

void RecordChecker::telemetry(const TelemetrySample& s, const std::string& what) const {
  time(what, "time", s.time_s);
  index(what, "device", s.device);
  reading(what, "power (W)", s.power_w, 0.0, kLargestPower_w);
  reading(what, "power limit (W)", s.power_limit_w, 0.0, kLargestPower_w);
  reading(what, "GPU clock (Hz)", s.gfx_clock_hz, 0.0, kLargestClock_hz);
  reading(what, "memory clock (Hz)", s.mem_clock_hz, 0.0, kLargestClock_hz);
  reading(what, "GPU temperature (degrees C)", s.temp_edge_c, kAbsoluteZero_c, kLargestTemperature_c);
  reading(what, "junction temperature (degrees C)", s.temp_junction_c, kAbsoluteZero_c, kLargestTemperature_c);
  reading(what, "memory temperature (degrees C)", s.temp_memory_c, kAbsoluteZero_c, kLargestTemperature_c);
  reading(what, "GPU utilization (fraction)", s.util_gpu, 0.0, kLargestUtilization);
  reading(what, "memory utilization (fraction)", s.util_memory, 0.0, kLargestUtilization);
  optional_amount(what, "memory used (bytes)", s.memory_used_bytes);
  optional_amount(what, "energy counter (J)", s.energy_j);
}

void RecordChecker::annotation(const AnnotationRecord& a, const std::string& what) const {
  time(what, "start", a.start_s);
  duration(what, a.duration_s);
  index(what, "rank", a.rank);
  index(what, "device", a.device);
}

void RecordChecker::fail(const std::string& what, const std::string& problem) const {
  throw InputError({file_}, "", what + ": " + problem,
                   "the file is corrupt or not what its format says; re-export it from the profiler, or pass the "
                   "right --format");
}

void RecordChecker::time(const std::string& what, const char* field, double t) const {
  if (!std::isfinite(t) || std::fabs(t) > kLargestTime_s)
    fail(what, std::string(field) + " time " + number(t) +
                   " s is not a time (finite, within 292 years of the trace's start)");
}

void RecordChecker::duration(const std::string& what, double d) const {
  if (!std::isfinite(d) || d < 0.0) fail(what, "duration " + number(d) + " s is negative or not a number");
  if (d > kLongestActivity_s) fail(what, "duration " + number(d) + " s is longer than 11 days");
}

void RecordChecker::index(const std::string& what, const char* field, double value) const {
  if (value < -1 || value >= kLargestIndex)
    fail(what, std::string(field) + " " + number(value) + " is out of range (0 to 1,048,575, or -1 for unknown)");
}

void RecordChecker::optional_amount(const std::string& what, const char* field, double value) const {
  if (std::isnan(value)) return;
  if (!std::isfinite(value) || value < 0.0) fail(what, std::string(field) + " " + number(value) + " is not >= 0");
}

void RecordChecker::reading(const std::string& what, const char* field, double value, double low, double high) const {
  if (std::isnan(value)) return;
  if (!(value >= low && value <= high))
    fail(what, std::string(field) + " " + number(value) + " is outside " + number(low) + " to " + number(high));
}

}  // namespace detail

namespace {

/// Checks every record on its way to `inner`, numbering them per kind as the reader produced them.
class CheckingSink final : public RecordSink {
 public:
  CheckingSink(const std::filesystem::path& path, RecordSink& inner) : checker_(path.string()), inner_(inner) {}

  StringId intern(std::string_view text) override {
    const StringId id = inner_.intern(text);
    names_.try_emplace(id, text);
    return id;
  }
  void add_kernel(const KernelRecord& r) override {
    checker_.kernel(r, "GPU record " + std::to_string(++kernels_) + " ('" + name(r.name) + "')");
    inner_.add_kernel(r);
  }
  void add_telemetry(const TelemetrySample& s) override {
    checker_.telemetry(s, "telemetry sample " + std::to_string(++samples_));
    inner_.add_telemetry(s);
  }
  void add_annotation(const AnnotationRecord& a) override {
    checker_.annotation(a, "annotation " + std::to_string(++annotations_) + " ('" + name(a.name) + "')");
    inner_.add_annotation(a);
  }

 private:
  std::string name(StringId id) const {
    const auto it = names_.find(id);
    return it == names_.end() ? std::string("?") : it->second;
  }

  detail::RecordChecker checker_;
  RecordSink& inner_;
  std::unordered_map<StringId, std::string> names_;
  std::uint64_t kernels_ = 0, samples_ = 0, annotations_ = 0;
};

}  // namespace

SourceInfo read_trace_checked(const TraceFormat& format, const std::filesystem::path& path, RecordSink& sink) {
  CheckingSink checking(path, sink);
  return format.create()->read(path, checking);
}

}  // namespace chopsim
