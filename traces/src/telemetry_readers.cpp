// GPU telemetry: nvidia-smi --query-gpu CSV, DCGM `dcgmi dmon` text, AMD rocm-smi / amd-smi CSV.
// One TelemetrySample per GPU per row; fields a tool does not report stay kUnknown. Units are converted to SI here:
// MHz -> Hz, % -> fraction, MiB -> bytes, mJ -> J; temperatures stay in degrees Celsius (TelemetrySample says so).
// The time origin of a telemetry source is its first sample.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/traces/timestamps.hpp"
#include "csv.hpp"
#include "reader_util.hpp"

namespace chopsim::detail {

namespace {

using Field = double TelemetrySample::*;

struct Metric {
  std::string_view name;  ///< column name (without unit), lower-case
  Field field;
  double scale;  ///< to SI, for the unit the tool documents for this column
  /// When two columns give one field, the higher preference wins (else the first column).
  int preference = 0;
};

/// The tools' words for a reading they do not have: nvidia-smi "[N/A]", "[Not Supported]", "[Unknown Error]"; DCGM
/// "N/A"; rocm-smi/amd-smi "N/A" or an empty field.
bool not_available(std::string_view text) {
  text = trim(text);
  if (text.empty() || text == "-") return true;
  if (text.front() == '[' && text.back() == ']') text = text.substr(1, text.size() - 2);
  const std::string lower = to_lower(text);
  return lower == "n/a" || lower == "na" || lower == "not supported" || lower == "unknown error" ||
         lower == "unknown" || lower == "nan" || lower == "gpu is lost" || lower == "insufficient permissions";
}

/// "card3", "GPU 3", "3" -> 3.
std::optional<std::int32_t> parse_device(std::string_view text) {
  text = trim(text);
  std::size_t i = text.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]))) --i;
  if (i == text.size()) return std::nullopt;
  if (text.size() - i > 7) return std::nullopt;  // over ten million GPUs on a node: not an index
  return static_cast<std::int32_t>(std::stol(std::string(text.substr(i))));
}

/// Splits "power.draw [W]" into ("power.draw", "w").
std::pair<std::string, std::string> name_and_unit(std::string_view header) {
  header = trim(header);
  const auto open = header.rfind(" [");
  if (open != std::string_view::npos && header.back() == ']')
    return {to_lower(trim(header.substr(0, open))), to_lower(header.substr(open + 2, header.size() - open - 3))};
  return {to_lower(header), ""};
}

double unit_scale(const std::string& unit, double fallback) {
  if (unit == "w") return 1.0;
  if (unit == "mw") return 1e-3;
  if (unit == "mhz") return 1e6;
  if (unit == "ghz") return 1e9;
  if (unit == "%") return 0.01;
  if (unit == "mib") return 1024.0 * 1024.0;
  if (unit == "gib") return 1024.0 * 1024.0 * 1024.0;
  if (unit == "mj") return 1e-3;
  if (unit == "j") return 1.0;
  return fallback;
}

/// Reads a CSV telemetry file whose columns are mapped by name.
class CsvTelemetry {
 public:
  struct Columns {
    int time = -1;
    int device = -1;
    int gpu_name = -1;
    std::vector<std::pair<int, Metric>> metrics;
  };

  static SourceInfo read(const std::filesystem::path& path, RecordSink& sink, const std::string& format,
                         const std::string& tool, const std::vector<Metric>& known,
                         const std::vector<std::string>& time_names, const std::vector<std::string>& device_names,
                         bool units_in_header) {
    const std::string file = path.string();
    LineReader lines(ByteSource::open(path), file);
    std::string line;
    if (!lines.next(line)) throw InputError({file}, "", "the file is empty", "pass a telemetry CSV with a header line");
    const std::string header_line = line;
    const auto header = split_csv_line(line);
    Columns c;
    for (std::size_t i = 0; i < header.size(); ++i) {
      const auto [name, unit] = name_and_unit(header[i]);
      const int index = static_cast<int>(i);
      if (std::find(time_names.begin(), time_names.end(), name) != time_names.end()) c.time = index;
      if (std::find(device_names.begin(), device_names.end(), name) != device_names.end()) c.device = index;
      if (name == "name") c.gpu_name = index;
      for (const auto& metric : known) {
        if (metric.name != name) continue;
        Metric m = metric;
        if (units_in_header) m.scale = unit_scale(unit, metric.scale);
        // When aliases repeat, the first column wins (power.draw before power.draw.average) unless a later one is
        // preferred (power.draw.instant).
        const auto taken = std::find_if(c.metrics.begin(), c.metrics.end(),
                                        [&](const auto& entry) { return entry.second.field == m.field; });
        if (taken == c.metrics.end())
          c.metrics.emplace_back(index, m);
        else if (m.preference > taken->second.preference)
          *taken = {index, m};
      }
    }
    if (c.metrics.empty())
      throw InputError({file, 1}, "", "the header names no power, clock, temperature or utilisation column",
                       "see docs/traces.md for the columns chopsim reads from " + tool);
    SourceInfo info;
    info.format = format;
    info.tool = tool;
    info.notes = "time origin = first sample";
    std::optional<std::int64_t> origin;
    std::int64_t row = 0;
    while (lines.next(line)) {
      if (trim(line).empty() || line == header_line) continue;
      const auto fields = split_csv_line(line);
      auto field = [&](int i) -> std::string_view {
        return i >= 0 && static_cast<std::size_t>(i) < fields.size() ? std::string_view(fields[i]) : "";
      };
      TelemetrySample sample;
      if (c.device >= 0) {
        // rocm-smi logs end each sampling round with a row that has a time but no device: not a sample.
        if (trim(field(c.device)).empty()) continue;
        const auto device = parse_device(field(c.device));
        if (!device)
          throw InputError({file, lines.line_number()}, header[static_cast<std::size_t>(c.device)],
                           "'" + std::string(field(c.device)) + "' is not a GPU index",
                           "the device column must hold an index (0, card0, GPU 0)");
        sample.device = *device;
      }
      std::int64_t time = row * std::int64_t{1'000'000'000};  // no time column: one row per second
      if (c.time >= 0) {
        const auto t = parse_timestamp_ns(field(c.time));
        if (!t)
          throw InputError({file, lines.line_number()}, header[static_cast<std::size_t>(c.time)],
                           "'" + std::string(field(c.time)) + "' is not a time",
                           "expected seconds since the epoch or YYYY/MM/DD HH:MM:SS.mmm");
        time = *t;
      }
      if (!origin) {
        origin = time;
        info.time_origin_ns = time;
        info.time_origin_clock = c.time >= 0 ? "unix_epoch" : "row number (the file has no time column)";
      }
      sample.time_s = ns_interval(time, *origin) / 1e9;
      bool any = false;
      for (const auto& [index, metric] : c.metrics) {
        if (auto value = parse_number_with_unit(field(index))) {
          sample.*(metric.field) = *value * metric.scale;
          any = true;
        } else if (!not_available(field(index))) {
          throw InputError({file, lines.line_number()}, header[static_cast<std::size_t>(index)],
                           "'" + std::string(field(index)) + "' is not a number",
                           "a reading is a number with an optional unit (123.4 W), or N/A");
        }
      }
      if (c.gpu_name >= 0 && info.gpu_name.empty()) info.gpu_name = std::string(field(c.gpu_name));
      if (!any) continue;  // a row of N/A
      sink.add_telemetry(sample);
      ++info.telemetry_count;
      ++row;
    }
    return info;
  }
};

// nvidia-smi --query-gpu field names (nvidia-smi --help-query-gpu); the unit comes from the header.
const std::vector<Metric> kNvidiaSmiMetrics = {
    {"power.draw", &TelemetrySample::power_w, 1.0},
    // Hopper and later: power.draw is the average of the last second, power.draw.instant the power now; a transient
    // (a phase starting, a power spike) shows only in the instant reading (nvidia-smi --help-query-gpu).
    {"power.draw.instant", &TelemetrySample::power_w, 1.0, 1},
    {"power.draw.average", &TelemetrySample::power_w, 1.0},
    {"power.limit", &TelemetrySample::power_limit_w, 1.0},
    {"enforced.power.limit", &TelemetrySample::power_limit_w, 1.0},
    {"clocks.sm", &TelemetrySample::gfx_clock_hz, 1e6},
    {"clocks.current.sm", &TelemetrySample::gfx_clock_hz, 1e6},
    {"clocks.gr", &TelemetrySample::gfx_clock_hz, 1e6},
    {"clocks.current.graphics", &TelemetrySample::gfx_clock_hz, 1e6},
    {"clocks.mem", &TelemetrySample::mem_clock_hz, 1e6},
    {"clocks.current.memory", &TelemetrySample::mem_clock_hz, 1e6},
    {"temperature.gpu", &TelemetrySample::temp_edge_c, 1.0},
    {"temperature.memory", &TelemetrySample::temp_memory_c, 1.0},
    {"utilization.gpu", &TelemetrySample::util_gpu, 0.01},
    {"utilization.memory", &TelemetrySample::util_memory, 0.01},
    {"memory.used", &TelemetrySample::memory_used_bytes, 1024.0 * 1024.0},
};

// AMD: the columns of rocm-smi --csv (e.g. "Temperature (Sensor edge) (C)", "Average Graphics Package Power (W)",
// "GPU use (%)"), of amd-smi metric --csv (power_socket_power, temperature_edge, temperature_hotspot,
// temperature_mem, usage_gfx_activity, ...), and of rocm-smi logging scripts such as the MI300X benchmark logs in
// ../shared/data/power (power_watts, power_cap_watts, temp_edge_celsius, temp_junction_celsius, gpu_use_percent,
// vram_used_bytes). Their "gfx_activity" column is a cumulative activity counter, not a percentage: not read.
const std::vector<Metric> kAmdSmiMetrics = {
    {"power_watts", &TelemetrySample::power_w, 1.0},
    {"average graphics package power (w)", &TelemetrySample::power_w, 1.0},
    {"current socket graphics package power (w)", &TelemetrySample::power_w, 1.0},
    {"power_socket_power", &TelemetrySample::power_w, 1.0},
    {"socket_power", &TelemetrySample::power_w, 1.0},
    {"power_cap_watts", &TelemetrySample::power_limit_w, 1.0},
    {"max graphics package power (w)", &TelemetrySample::power_limit_w, 1.0},
    {"temp_edge_celsius", &TelemetrySample::temp_edge_c, 1.0},
    {"temperature (sensor edge) (c)", &TelemetrySample::temp_edge_c, 1.0},
    {"temperature_edge", &TelemetrySample::temp_edge_c, 1.0},
    {"temp_junction_celsius", &TelemetrySample::temp_junction_c, 1.0},
    {"temperature (sensor junction) (c)", &TelemetrySample::temp_junction_c, 1.0},
    {"temperature_hotspot", &TelemetrySample::temp_junction_c, 1.0},
    {"temp_memory_celsius", &TelemetrySample::temp_memory_c, 1.0},
    {"temperature (sensor memory) (c)", &TelemetrySample::temp_memory_c, 1.0},
    {"temperature_mem", &TelemetrySample::temp_memory_c, 1.0},
    {"sclk_mhz", &TelemetrySample::gfx_clock_hz, 1e6},
    {"gfx_clock_mhz", &TelemetrySample::gfx_clock_hz, 1e6},
    {"clock_gfx_0_clk", &TelemetrySample::gfx_clock_hz, 1e6},
    {"mclk_mhz", &TelemetrySample::mem_clock_hz, 1e6},
    {"clock_mem_0_clk", &TelemetrySample::mem_clock_hz, 1e6},
    {"gpu_use_percent", &TelemetrySample::util_gpu, 0.01},
    {"gpu use (%)", &TelemetrySample::util_gpu, 0.01},
    {"usage_gfx_activity", &TelemetrySample::util_gpu, 0.01},
    {"memory_use_percent", &TelemetrySample::util_memory, 0.01},
    {"gpu memory use (%)", &TelemetrySample::util_memory, 0.01},
    {"usage_umc_activity", &TelemetrySample::util_memory, 0.01},
    {"vram_used_bytes", &TelemetrySample::memory_used_bytes, 1.0},
    {"energy_accumulator_j", &TelemetrySample::energy_j, 1.0},
};

class NvidiaSmiReader final : public TraceReader {
 public:
  SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const override {
    return CsvTelemetry::read(path, sink, "nvidia-smi", "nvidia-smi --query-gpu CSV", kNvidiaSmiMetrics, {"timestamp"},
                              {"index"}, true);
  }
};

class AmdSmiReader final : public TraceReader {
 public:
  SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const override {
    return CsvTelemetry::read(path, sink, "amd-smi", "rocm-smi / amd-smi CSV", kAmdSmiMetrics,
                              {"timestamp", "time", "timestamp_s"}, {"device", "gpu", "card"}, false);
  }
};

/// `dcgmi dmon -e ...` prints a header of field short names ("#Entity POWER GTEMP ..."), optionally a units line
/// ("ID W C ..."), then one line per entity per sampling round ("GPU 0  62.885  33 ..."); the header repeats every
/// so many rounds. It prints no timestamps: round k is at k * interval, the interval being dcgmi's default delay
/// of 1000 ms (-d). Field short names from `dcgmi dmon -l` (DCGM field ids in parentheses).
class DcgmDmonReader final : public TraceReader {
 public:
  SourceInfo read(const std::filesystem::path& path, RecordSink& sink) const override {
    static const std::map<std::string, Metric, std::less<>> kFields = {
        {"POWER", {"POWER", &TelemetrySample::power_w, 1.0}},                  // 155 power_usage, W
        {"TOTEC", {"TOTEC", &TelemetrySample::energy_j, 1e-3}},                // 156 total_energy_consumption, mJ
        {"GTEMP", {"GTEMP", &TelemetrySample::temp_edge_c, 1.0}},              // 150 gpu_temp, C
        {"MMTMP", {"MMTMP", &TelemetrySample::temp_memory_c, 1.0}},            // 140 memory_temp, C
        {"SMCLK", {"SMCLK", &TelemetrySample::gfx_clock_hz, 1e6}},             // 100 sm_clock, MHz
        {"MMCLK", {"MMCLK", &TelemetrySample::mem_clock_hz, 1e6}},             // 101 memory_clock, MHz
        {"GPUTL", {"GPUTL", &TelemetrySample::util_gpu, 0.01}},                // 203 gpu_utilization, %
        {"MCUTL", {"MCUTL", &TelemetrySample::util_memory, 0.01}},             // 204 mem_copy_utilization, %
        {"FBUSD", {"FBUSD", &TelemetrySample::memory_used_bytes, 1048576.0}},  // 252 fb_used, MiB
    };
    const std::string file = path.string();
    LineReader lines(ByteSource::open(path), file);
    std::string line;
    std::vector<std::optional<Metric>> columns;  // per value column after the entity
    SourceInfo info;
    info.format = "dcgm-dmon";
    info.tool = "DCGM dcgmi dmon";
    info.time_origin_clock = "sampling round x 1 s (dcgmi dmon prints no timestamps; default -d 1000 ms)";
    info.notes = "round k at k seconds";
    std::int64_t round = -1;
    std::optional<std::int32_t> first_device;
    while (lines.next(line)) {
      const std::string_view text = trim(line);
      if (text.empty()) continue;
      std::vector<std::string> words;
      std::size_t i = 0;
      while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
        std::size_t j = i;
        while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
        if (j > i) words.emplace_back(text.substr(i, j - i));
        i = j;
      }
      if (text.front() == '#') {
        // "#Entity POWER ..." or "# Entity POWER ...": the field short names follow the entity column.
        columns.clear();
        std::size_t first = words[0] == "#" ? 2 : 1;
        for (std::size_t k = first; k < words.size(); ++k) {
          auto it = kFields.find(words[k]);
          columns.push_back(it == kFields.end() ? std::nullopt : std::optional<Metric>(it->second));
        }
        continue;
      }
      if (words[0] == "ID") continue;  // units line
      if (columns.empty())
        throw InputError({file, lines.line_number()}, "", "a data line before the '#Entity' header",
                         "pass the output of dcgmi dmon -e FIELDS with its header");
      // Entity: "GPU 0" (two words) or "0".
      std::size_t value_start = 1;
      std::optional<std::int32_t> device;
      if (words[0] == "GPU" && words.size() > 1) {
        device = parse_device(words[1]);
        value_start = 2;
      } else {
        device = parse_device(words[0]);
      }
      if (!device)
        throw InputError({file, lines.line_number()}, "Entity", "'" + words[0] + "' is not a GPU entity",
                         "only GPU entities are read");
      if (!first_device || *device == *first_device) {
        if (!first_device) first_device = device;
        ++round;
      }
      TelemetrySample sample;
      sample.device = *device;
      sample.time_s = static_cast<double>(round);
      bool any = false;
      for (std::size_t k = 0; k < columns.size() && value_start + k < words.size(); ++k) {
        if (!columns[k]) continue;
        if (auto value = parse_number_with_unit(words[value_start + k])) {
          sample.*(columns[k]->field) = *value * columns[k]->scale;
          any = true;
        } else if (!not_available(words[value_start + k])) {
          throw InputError({file, lines.line_number()}, "", "'" + words[value_start + k] + "' is not a number",
                           "a reading is a number, or N/A");
        }
      }
      if (!any) continue;
      sink.add_telemetry(sample);
      ++info.telemetry_count;
    }
    return info;
  }
};

std::string first_line(const FilePreview& preview) {
  const std::string_view head = preview.head;
  return to_lower(trim(head.substr(0, head.find('\n'))));
}

}  // namespace

std::unique_ptr<TraceReader> make_nvidia_smi_reader() { return std::make_unique<NvidiaSmiReader>(); }
std::unique_ptr<TraceReader> make_dcgm_dmon_reader() { return std::make_unique<DcgmDmonReader>(); }
std::unique_ptr<TraceReader> make_amd_smi_reader() { return std::make_unique<AmdSmiReader>(); }

bool probe_nvidia_smi(const FilePreview& preview) {
  const std::string line = first_line(preview);
  for (std::string_view key : {"power.draw", "utilization.gpu", "temperature.gpu", "clocks.sm", "clocks.current.sm",
                               "clocks.gr", "memory.used"})
    if (line.find(key) != std::string::npos) return true;
  return false;
}

bool probe_dcgm_dmon(const FilePreview& preview) {
  const std::string line = first_line(preview);
  return line.starts_with("#entity") || line.starts_with("# entity");
}

bool probe_amd_smi(const FilePreview& preview) {
  const std::string line = first_line(preview);
  if (line.find(',') == std::string::npos) return false;
  const auto header = split_csv_line(line);
  for (const auto& column : header)
    for (const auto& metric : kAmdSmiMetrics)
      if (column == metric.name) return true;
  return false;
}

}  // namespace chopsim::detail
