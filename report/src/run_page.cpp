// The run page of `chopsim report` (docs/report.md): summary.json for the figures, ops.h5's telemetry table for the
// traces over time.

#include <H5Cpp.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "chopsim/report/report.hpp"
#include "html_report.hpp"
#include "report_pages.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using report_detail::Chart;
using report_detail::html_escape;
using report_detail::json_number;
using report_detail::json_string;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
/// Points per GPU and trace: enough for a screen, few enough for a browser with 16 GPUs.
constexpr std::size_t kPointsPerTrace = 1500;
/// GPUs drawn individually; beyond, the hottest and the slowest half and half (the note says so).
constexpr std::size_t kLargestGpuCount = 16;
/// Points per trace of each simulated GPU in the GPU picker's data (every GPU, not only the ones drawn): coarser than
/// the drawn traces so that a 16,384-GPU run's 128 simulated GPUs add about 3 MB.
constexpr std::size_t kPickerPointsPerTrace = 200;

const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"};
std::string color(std::size_t i) { return kPalette[i % std::size(kPalette)]; }

/// summary.json, read once; figures by path, absent ones as nullopt.
class Summary {
 public:
  explicit Summary(const fs::path& file) {
    const simdjson::error_code error = parser_.load(file.string()).get(root_);
    if (error)
      throw InputError({file.string()}, "",
                       std::string("not a readable summary.json: ") + simdjson::error_message(error),
                       "pass the --out folder of chopsim run");
    std::string_view version;
    if (root_["chopsim_version"].get(version))
      throw InputError({file.string()}, "chopsim_version", "not a chopsim summary.json",
                       "pass the --out folder of chopsim run");
  }
  std::optional<double> number(std::initializer_list<std::string_view> path) const {
    simdjson::dom::element e = root_;
    for (const std::string_view key : path)
      if (e.at_key(key).get(e)) return std::nullopt;
    double d = 0.0;
    if (!e.get_double().get(d)) return d;
    std::int64_t i = 0;
    if (!e.get_int64().get(i)) return static_cast<double>(i);
    std::uint64_t u = 0;
    if (!e.get_uint64().get(u)) return static_cast<double>(u);
    return std::nullopt;
  }
  double value(std::initializer_list<std::string_view> path) const { return number(path).value_or(0.0); }
  /// A boolean; false when absent.
  bool flag(std::initializer_list<std::string_view> path) const {
    simdjson::dom::element e = root_;
    for (const std::string_view key : path)
      if (e.at_key(key).get(e)) return false;
    bool b = false;
    return !e.get_bool().get(b) && b;
  }
  std::string text(std::initializer_list<std::string_view> path) const {
    simdjson::dom::element e = root_;
    for (const std::string_view key : path)
      if (e.at_key(key).get(e)) return {};
    std::string_view s;
    return e.get_string().get(s) ? std::string() : std::string(s);
  }
  /// The keys and numbers of an object (summary.json writes them in a fixed order).
  std::vector<std::pair<std::string, double>> numbers_of(std::string_view key) const {
    simdjson::dom::object object;
    if (root_.at_key(key).get(object)) return {};
    return numbers_in(object);
  }

  /// memory.stages: each pipeline stage's parts (key -> bytes) in order; empty for a summary written before chopsim
  /// recorded them.
  std::vector<std::vector<std::pair<std::string, double>>> stage_breakdowns() const {
    std::vector<std::vector<std::pair<std::string, double>>> out;
    simdjson::dom::array stages;
    if (root_.at_key("memory").at_key("stages").get(stages)) return out;
    for (const simdjson::dom::element stage : stages) {
      simdjson::dom::object parts;
      if (stage.at_key("breakdown_bytes").get(parts)) return {};
      out.push_back(numbers_in(parts));
    }
    return out;
  }

 private:
  static std::vector<std::pair<std::string, double>> numbers_in(simdjson::dom::object object) {
    std::vector<std::pair<std::string, double>> out;
    for (const auto field : object) {
      double d = 0.0;
      if (!field.value.get_double().get(d)) out.emplace_back(std::string(field.key), d);
    }
    return out;
  }

  simdjson::dom::parser parser_;
  simdjson::dom::element root_;
};

struct Sample {
  std::uint32_t gpu;
  double time_s, duration_s, power_w, clock_mhz, temperature_c, throttled_fraction;
};

/// ops.h5's /telemetry (empty when the run had no power dynamics or wrote no ops.h5).
std::vector<Sample> read_telemetry(const fs::path& file) {
  std::vector<Sample> samples;
  std::error_code error;
  if (!fs::is_regular_file(file, error)) return samples;
  try {
    H5::Exception::dontPrint();
    H5::H5File h5(file.string(), H5F_ACC_RDONLY);
    if (!h5.nameExists("telemetry")) return samples;
    H5::DataSet set = h5.openDataSet("telemetry");
    H5::CompType type(sizeof(Sample));
    type.insertMember("gpu", HOFFSET(Sample, gpu), H5::PredType::NATIVE_UINT32);
    type.insertMember("time_s", HOFFSET(Sample, time_s), H5::PredType::NATIVE_DOUBLE);
    type.insertMember("duration_s", HOFFSET(Sample, duration_s), H5::PredType::NATIVE_DOUBLE);
    type.insertMember("power_w", HOFFSET(Sample, power_w), H5::PredType::NATIVE_DOUBLE);
    type.insertMember("clock_mhz", HOFFSET(Sample, clock_mhz), H5::PredType::NATIVE_DOUBLE);
    type.insertMember("temperature_c", HOFFSET(Sample, temperature_c), H5::PredType::NATIVE_DOUBLE);
    type.insertMember("throttled_fraction", HOFFSET(Sample, throttled_fraction), H5::PredType::NATIVE_DOUBLE);
    hsize_t rows = 0;
    set.getSpace().getSimpleExtentDims(&rows);
    samples.resize(rows);
    if (rows > 0) set.read(samples.data(), type);
  } catch (const H5::Exception& e) {
    throw InputError({file.string()}, "telemetry", "cannot read the telemetry table: " + e.getDetailMsg(),
                     "pass the --out folder of chopsim run, as it wrote it");
  }
  return samples;
}

std::string axis(const std::string& title, bool stacked = false) {
  return std::string("{\"title\":{\"display\":true,\"text\":") + json_string(title) + "}" +
         (stacked ? ",\"stacked\":true" : "") + "}";
}

/// Figures as a table: name, value, unit.
std::string headline_table(const Summary& s) {
  const double capacity = s.value({"memory", "capacity_bytes"});
  const double peak = s.value({"memory", "peak_bytes_per_gpu"});
  struct Row {
    std::string name, value, unit;
  };
  auto fixed = [](double v, int digits) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", digits, v);
    return std::string(text);
  };
  std::vector<Row> rows = {
      {"iteration time", fixed(s.value({"iteration_time_s"}), 3), "s"},
      {"throughput", fixed(s.value({"tokens_per_s"}), 0), "tokens/s"},
      {"MFU", fixed(100.0 * s.value({"mfu"}), 1), "%"},
      {"model TFLOP/s per GPU", fixed(s.value({"tflops_per_gpu"}), 1), "TFLOP/s"},
      {"peak memory per GPU", fixed(peak / kGiB, 1) + " of " + fixed(capacity / kGiB, 1),
       "GiB (" + fixed(capacity > 0 ? 100.0 * peak / capacity : 0.0, 0) + " %)"},
  };
  // A mixture of experts whose busiest expert-parallel rank takes more than the mean: every rank waits for it.
  // (Summaries before the key, and dense runs, have none.)
  if (s.number({"run", "training", "moe_load_imbalance"}) && s.value({"run", "training", "moe_load_imbalance"}) > 1.0)
    rows.push_back({"busiest expert-parallel rank's load (the pace every rank waits for)",
                    fixed(s.value({"run", "training", "moe_load_imbalance"}), 2),
                    "x the mean (training.moe_load_imbalance)"});
  // The host's launches, a floor under the iteration (summaries before the key have none).
  if (s.number({"host", "launch_time_s"}) && s.value({"host", "launch_time_s"}) > 0.0) {
    const double share = s.value({"host", "launch_time_s"}) / std::max(s.value({"iteration_time_s"}), 1e-300);
    rows.push_back({"host's kernel launches (a floor under the iteration)",
                    fixed(s.value({"host", "launch_time_s"}), 3),
                    "s: " + fixed(s.value({"host", "launches_per_iteration"}), 0) + " launches x " +
                        fixed(1e6 * s.value({"host", "launch_s"}), 0) + " us, " + fixed(100.0 * share, 0) +
                        " % of the iteration" + (s.flag({"host", "bound"}) ? " (host-bound)" : "")});
  }
  if (s.number({"energy_per_token_j"})) {
    rows.push_back({"energy per token", fixed(s.value({"energy_per_token_j"}), 3), "J"});
    rows.push_back({"mean power per GPU", fixed(s.value({"power", "mean_w"}), 0),
                    "W (cap " + fixed(s.value({"power", "cap_w"}), 0) + " W)"});
    rows.push_back({"peak power, 1 ms / 25 ms / 100 ms average",
                    fixed(s.value({"power", "peak_1ms_w"}), 0) + " / " + fixed(s.value({"power", "peak_25ms_w"}), 0) +
                        " / " + fixed(s.value({"power", "peak_100ms_w"}), 0),
                    "W (25 ms: the most an nvidia-smi reading can show)"});
    rows.push_back({"mean clock in kernels", fixed(s.value({"clock", "mean_mhz"}), 0),
                    "MHz (max " + fixed(s.value({"clock", "max_mhz"}), 0) + ")"});
    rows.push_back({"throttled", fixed(100.0 * s.value({"throttled_fraction"}), 1), "% of GPU time"});
    // Older summaries have no chip spread: their GPUs were identical.
    if (s.number({"power", "slowest_chip_dynamic_scale"}) && s.value({"power", "slowest_chip_dynamic_scale"}) > 1.0)
      rows.push_back({"slowest chip's dynamic power (the pace every GPU waits for)",
                      "+" + fixed(100.0 * (s.value({"power", "slowest_chip_dynamic_scale"}) - 1.0), 1),
                      "% (power.chip_variation " + fixed(s.value({"power", "chip_variation"}), 3) + ")"});
    rows.push_back({"peak temperature", fixed(s.value({"temperature", "peak_c"}), 1), "°C"});
  }
  std::string html = "<table>\n<tr><th>figure</th><th>value</th><th>unit</th></tr>\n";
  for (const Row& r : rows)
    html += "<tr><td>" + html_escape(r.name) + "</td><td class=\"n\">" + html_escape(r.value) + "</td><td>" +
            html_escape(r.unit) + "</td></tr>\n";
  return html + "</table>\n";
}

Chart breakdown_chart(const Summary& s) {
  std::string datasets;
  std::size_t i = 0;
  for (const auto& [name, seconds] : s.numbers_of("breakdown_s")) {
    if (seconds <= 0.0 && name.starts_with("exposed_comm")) continue;  // parallelisms the run does not use
    datasets += std::string(datasets.empty() ? "" : ",") + "{\"label\":" + json_string(name) + ",\"data\":[" +
                json_number(seconds) + "],\"backgroundColor\":" + json_string(color(i++)) + "}";
  }
  return {"breakdown", "Where the iteration's time goes",
          "Per GPU, mean over GPUs: compute kernels running, communication with no compute (per parallelism), the "
          "pipeline bubble (waiting for a pipeline peer) and idle time (waiting for the host's launches or "
          "synchronisations, or for the slowest GPU); they add up to the iteration time.",
          "{\"type\":\"bar\",\"data\":{\"labels\":[\"iteration\"],\"datasets\":[" + datasets +
              "]},\"options\":{\"indexAxis\":\"y\",\"scales\":{\"x\":" + axis("seconds per iteration", true) +
              ",\"y\":" + axis("one iteration", true) + "}}}"};
}

Chart waterfall_chart(const Summary& s) {
  // Chopper's loss waterfall: from the ideal time (every kernel at its roofline, max clock) to the predicted one.
  const std::vector<std::pair<std::string, std::string>> steps = {{"kernel_efficiency", "kernel efficiency"},
                                                                  {"frequency", "clock below max (DVFS, cap)"},
                                                                  {"launch", "launch overhead"},
                                                                  {"comm_contention", "comm/compute contention"},
                                                                  {"exposed_comm", "exposed communication"},
                                                                  {"pipeline_bubble", "pipeline bubble"},
                                                                  {"idle", "idle"}};
  std::string labels = "\"ideal\"", bars;
  double level = s.value({"losses_s", "ideal"});
  bars = "[0," + json_number(level) + "]";
  for (const auto& [key, label] : steps) {
    const double loss = s.value({"losses_s", key});
    labels += "," + json_string(label);
    bars += ",[" + json_number(level) + "," + json_number(level + loss) + "]";
    level += loss;
  }
  labels += ",\"predicted\"";
  bars += ",[0," + json_number(level) + "]";
  return {"waterfall", "Loss waterfall: ideal to predicted iteration time",
          "Each bar adds one loss to the ideal time (every kernel at its roofline at the max clock, nothing else); the "
          "last bar is the predicted iteration time.",
          "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels + "],\"datasets\":[{\"label\":\"seconds\",\"data\":[" +
              bars +
              "],\"backgroundColor\":\"#d62728\"}]},\"options\":{\"plugins\":{\"legend\":{\"display\":false}},"
              "\"scales\":{\"y\":" +
              axis("seconds per iteration") + ",\"x\":" + axis("step") + "}}}"};
}

Chart memory_chart(const Summary& s) {
  constexpr const char* kParts[] = {"weights",   "gathered_weights", "gradients", "optimizer",    "activations",
                                    "transient", "workspaces",       "reserved",  "fragmentation"};
  // One bar per pipeline stage (summary.json's memory.stages), else the largest stage alone (older summaries).
  std::vector<std::vector<std::pair<std::string, double>>> stages = s.stage_breakdowns();
  const int peak_stage = static_cast<int>(s.value({"memory", "peak_stage"}));
  std::vector<std::string> labels;
  if (stages.empty()) {
    auto& row = stages.emplace_back();
    for (const char* key : kParts) row.emplace_back(key, s.value({"memory", "breakdown_bytes", key}));
    labels.push_back("needed (stage " + std::to_string(peak_stage) + ")");
  } else {
    for (std::size_t i = 0; i < stages.size(); ++i)
      labels.push_back("stage " + std::to_string(i) + (static_cast<int>(i) == peak_stage ? " (peak)" : ""));
  }
  const auto part_of = [](const std::vector<std::pair<std::string, double>>& row, std::string_view key) {
    for (const auto& [name, bytes] : row)
      if (name == key) return bytes;
    return 0.0;
  };
  std::string datasets;
  std::size_t i = 0;
  for (const char* key : kParts) {
    std::string data;
    for (const auto& row : stages) data += json_number(part_of(row, key) / kGiB) + ",";
    datasets += std::string(datasets.empty() ? "" : ",") + "{\"label\":" + json_string(key) + ",\"data\":[" + data +
                "null],\"backgroundColor\":" + json_string(color(i++)) + "}";
  }
  std::string capacity;
  for (std::size_t k = 0; k < stages.size(); ++k) capacity += "null,";
  datasets += ",{\"label\":\"capacity\",\"data\":[" + capacity +
              json_number(s.value({"memory", "capacity_bytes"}) / kGiB) + "],\"backgroundColor\":\"#bbbbbb\"}";
  std::string label_list;
  for (const std::string& label : labels) label_list += json_string(label) + ",";
  return {"memory", "Memory per GPU against capacity",
          stages.size() > 1 ? "Each pipeline stage's GPUs: what the memory model counts, stacked, and the GPU's "
                              "capacity (the first stage keeps the most micro-batches in flight, the last the output "
                              "head and the logits)."
                            : "What the memory model counts, stacked, and the GPU's capacity.",
          "{\"type\":\"bar\",\"data\":{\"labels\":[" + label_list + "\"capacity\"],\"datasets\":[" + datasets +
              "]},\"options\":{\"indexAxis\":\"y\",\"scales\":{\"x\":" + axis("GiB per GPU", true) +
              ",\"y\":" + axis("pipeline stage", true) + "}}}"};
}

/// The GPUs to draw: all up to kLargestGpuCount; beyond, the half with the highest peak temperature and the half with
/// the lowest time-weighted mean clock (ties by GPU index), the rest filled in index order.
std::set<std::uint32_t> drawn_gpus(const std::map<std::uint32_t, std::vector<Sample>>& by_gpu) {
  std::set<std::uint32_t> drawn;
  if (by_gpu.size() <= kLargestGpuCount) {
    for (const auto& entry : by_gpu) drawn.insert(entry.first);
    return drawn;
  }
  std::vector<std::tuple<double, double, std::uint32_t>> gpus;  // (-peak temperature, mean clock, gpu)
  for (const auto& [gpu, samples] : by_gpu) {
    double peak = -INFINITY, clock_time = 0.0, time = 0.0;
    for (const Sample& x : samples) {
      peak = std::max(peak, x.temperature_c);
      clock_time += x.clock_mhz * x.duration_s;
      time += x.duration_s;
    }
    gpus.emplace_back(-peak, time > 0.0 ? clock_time / time : 0.0, gpu);
  }
  std::sort(gpus.begin(), gpus.end());  // hottest first
  for (std::size_t i = 0; i < gpus.size() && drawn.size() < kLargestGpuCount / 2; ++i)
    drawn.insert(std::get<2>(gpus[i]));
  std::sort(gpus.begin(), gpus.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<1>(a), std::get<2>(a)) < std::tie(std::get<1>(b), std::get<2>(b));
  });  // slowest first
  for (std::size_t i = 0; i < gpus.size() && drawn.size() < kLargestGpuCount; ++i) drawn.insert(std::get<2>(gpus[i]));
  return drawn;
}

/// One trace as a JSON array of at most `most` points, each a bucket's max (use_max: keeps power peaks visible) or
/// min (keeps clock dips) of the field.
std::string bucketed_points(const std::vector<Sample>& samples, double Sample::*field, bool use_max, std::size_t most) {
  const std::size_t per = std::max<std::size_t>(1, (samples.size() + most - 1) / most);
  std::string points;
  for (std::size_t start = 0; start < samples.size(); start += per) {
    double value = samples[start].*field;
    for (std::size_t k = start; k < std::min(samples.size(), start + per); ++k)
      value = use_max ? std::max(value, samples[k].*field) : std::min(value, samples[k].*field);
    points += std::string(points.empty() ? "" : ",") + "{\"x\":" + json_number(samples[start].time_s) +
              ",\"y\":" + json_number(value) + "}";
  }
  return "[" + points + "]";
}

/// The drawn GPUs' traces as Chart.js datasets, at most kPointsPerTrace points each.
std::string traces(const std::map<std::uint32_t, std::vector<Sample>>& by_gpu, const std::set<std::uint32_t>& drawn,
                   double Sample::*field, bool use_max) {
  std::string datasets;
  std::size_t i = 0;
  for (const auto& [gpu, samples] : by_gpu) {
    if (!drawn.count(gpu)) continue;
    datasets += std::string(datasets.empty() ? "" : ",") + "{\"label\":\"GPU " + std::to_string(gpu) +
                "\",\"gpu\":" + std::to_string(gpu) +
                ",\"data\":" + bucketed_points(samples, field, use_max, kPointsPerTrace) +
                ",\"borderColor\":" + json_string(color(i)) + ",\"pointRadius\":0,\"borderWidth\":1,\"stepped\":true}";
    ++i;
  }
  return datasets;
}

/// The GPU picker above the power chart: a list of every simulated GPU, and each one's power, clock and temperature
/// (coarser than the drawn traces) in a JSON element the page's script reads when one is picked.
std::string gpu_picker(const std::map<std::uint32_t, std::vector<Sample>>& by_gpu) {
  std::string options = "<option value=\"\">the GPUs drawn</option>";
  std::string data;
  for (const auto& [gpu, samples] : by_gpu) {
    const std::string label = "GPU " + std::to_string(gpu);
    options += "<option>" + label + "</option>";
    data += std::string(data.empty() ? "" : ",\n") + json_string(label) +
            ":{\"power\":" + bucketed_points(samples, &Sample::power_w, true, kPickerPointsPerTrace) +
            ",\"clock\":" + bucketed_points(samples, &Sample::clock_mhz, false, kPickerPointsPerTrace) +
            ",\"temperature\":" + bucketed_points(samples, &Sample::temperature_c, true, kPickerPointsPerTrace) + "}";
  }
  return "<p><label for=\"gpu-picker\">Show one GPU in the power, clock and temperature charts: </label>"
         "<select id=\"gpu-picker\" class=\"trace-picker\" data-source=\"chopsim-gpu-traces\" "
         "data-charts=\"power,clock,temperature\">" +
         options + "</select></p>\n<script type=\"application/json\" id=\"chopsim-gpu-traces\">\n{" + data +
         "}\n</script>\n";
}

std::string line_config(const std::string& datasets, const std::string& y_title) {
  return "{\"type\":\"line\",\"data\":{\"datasets\":[" + datasets +
         "]},\"options\":{\"animation\":false,\"parsing\":false,\"scales\":{\"x\":{\"type\":\"linear\",\"title\":{"
         "\"display\":true,\"text\":\"time (s)\"}},\"y\":" +
         axis(y_title) + "}}}";
}

std::vector<Chart> time_charts(const Summary& s, const std::vector<Sample>& samples) {
  std::map<std::uint32_t, std::vector<Sample>> by_gpu;
  for (const Sample& x : samples) by_gpu[x.gpu].push_back(x);
  const std::set<std::uint32_t> drawn = drawn_gpus(by_gpu);
  const std::string shown = by_gpu.size() > kLargestGpuCount
                                ? std::to_string(kLargestGpuCount) + " of the " + std::to_string(by_gpu.size()) +
                                      " GPUs simulated are drawn: the " + std::to_string(kLargestGpuCount / 2) +
                                      " hottest (peak temperature) and the slowest (lowest mean clock). "
                                : "";
  std::vector<Chart> charts;
  // The cap and the windowed peaks as flat lines across the run.
  double end = 0.0;
  for (const Sample& x : samples) end = std::max(end, x.time_s + x.duration_s);
  auto flat = [&](const std::string& label, double value, const std::string& colour) {
    return ",{\"label\":" + json_string(label) + ",\"data\":[{\"x\":0,\"y\":" + json_number(value) +
           "},{\"x\":" + json_number(end) + ",\"y\":" + json_number(value) +
           "}],\"borderColor\":" + json_string(colour) + ",\"borderDash\":[6,4],\"pointRadius\":0,\"borderWidth\":1.5}";
  };
  const std::string power = traces(by_gpu, drawn, &Sample::power_w, true) +
                            flat("cap", s.value({"power", "cap_w"}), "#000000") +
                            flat("peak 1 ms average", s.value({"power", "peak_1ms_w"}), "#d62728") +
                            flat("peak 25 ms average", s.value({"power", "peak_25ms_w"}), "#ff7f0e") +
                            flat("peak 100 ms average", s.value({"power", "peak_100ms_w"}), "#9467bd");
  charts.push_back({"power", "Power per GPU over the run",
                    shown + "Board power of each simulated GPU (each stands for its symmetry class), the power cap, "
                            "and the highest 1 ms, 25 ms (what an nvidia-smi reading averages) and 100 ms averages of "
                            "any GPU. Each point is the highest sample "
                            "of its bucket.",
                    line_config(power, "power (W)"), gpu_picker(by_gpu)});
  charts.push_back({"clock", "Clock per GPU over the run",
                    shown + "SM/GFX clock set by the governor; each point is the lowest sample of its bucket.",
                    line_config(traces(by_gpu, drawn, &Sample::clock_mhz, false), "clock (MHz)")});
  charts.push_back({"temperature", "Temperature per GPU over the run",
                    shown + "GPU temperature from the thermal model (inlet per slot); each point is the highest "
                            "sample of its bucket.",
                    line_config(traces(by_gpu, drawn, &Sample::temperature_c, true), "temperature (°C)")});
  std::string labels, shares;
  for (const auto& [gpu, list] : by_gpu) {
    double time = 0.0, throttled = 0.0;
    for (const Sample& x : list) {
      time += x.duration_s;
      throttled += x.duration_s * x.throttled_fraction;
    }
    labels += std::string(labels.empty() ? "" : ",") + "\"GPU " + std::to_string(gpu) + "\"";
    shares += std::string(shares.empty() ? "" : ",") + json_number(time > 0 ? 100.0 * throttled / time : 0.0);
  }
  charts.push_back(
      {"throttled", "Throttled share per GPU",
       "Time each simulated GPU ran below its ceiling clock for power or temperature.",
       "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels + "],\"datasets\":[{\"label\":\"throttled\",\"data\":[" +
           shares +
           "],\"backgroundColor\":\"#ff7f0e\"}]},\"options\":{\"plugins\":{\"legend\":{\"display\":false}},"
           "\"scales\":{\"y\":" +
           axis("% of time throttled") + ",\"x\":" + axis("GPU") + "}}}"});
  return charts;
}

}  // namespace

void write_report(const fs::path& folder, const fs::path& html) {
  std::error_code error;
  if (fs::is_regular_file(folder, error)) {
    std::ifstream in(folder);
    std::string header;
    std::getline(in, header);
    if (header.rfind("case,group,metric_unit,", 0) == 0) return report_detail::write_validation_page(folder, html);
    throw InputError({folder.string()}, "",
                     "not a validation.csv of chopsim validate (its first line is not "
                     "'case,group,metric_unit,...')",
                     "pass the --out folder of chopsim run, sweep or study, or the validation.csv chopsim validate "
                     "writes beside its page");
  }
  if (fs::is_regular_file(folder / "summary.json", error)) return report_detail::write_run_page(folder, html);
  if (fs::is_regular_file(folder / "results.csv", error)) {
    std::ifstream in(folder / "results.csv");
    std::string header;
    std::getline(in, header);
    if (header.rfind("candidate,", 0) == 0) return report_detail::write_study_page(folder, html);
    return report_detail::write_sweep_page(folder, html);
  }
  if (fs::is_regular_file(folder / "validation.csv", error))
    return report_detail::write_validation_page(folder / "validation.csv", html);
  throw InputError({folder.string()}, "",
                   "no summary.json (a run), results.csv (a sweep or a study) or validation.csv in this folder",
                   "pass the --out folder of chopsim run, chopsim sweep or chopsim study, or the validation.csv of "
                   "chopsim validate");
}

void write_run_report(const fs::path& run_dir, const fs::path& html) { report_detail::write_run_page(run_dir, html); }

void report_detail::write_run_page(const fs::path& run_dir, const fs::path& html) {
  const fs::path summary_file = run_dir / "summary.json";
  std::error_code error;
  if (!fs::is_regular_file(summary_file, error))
    throw InputError({run_dir.string()}, "", "no summary.json in this folder",
                     "pass the --out folder of chopsim run (chopsim run CONFIG --out DIR)");
  const Summary s(summary_file);
  const std::string name = s.text({"run", "name"});
  std::string head = "<p>" + html_escape(s.text({"run", "model"})) + " on " +
                     std::to_string(static_cast<long long>(s.value({"run", "gpus"}))) + " x " +
                     html_escape(s.text({"run", "hardware"})) + " (" + html_escape(s.text({"run", "cluster"})) +
                     "), engine " + html_escape(s.text({"run", "engine"})) + ", status " +
                     html_escape(s.text({"status"})) + ".</p>\n" + headline_table(s);
  std::vector<Chart> charts;
  if (s.text({"status"}) == "ok") {
    charts.push_back(breakdown_chart(s));
    charts.push_back(waterfall_chart(s));
  }
  charts.push_back(memory_chart(s));
  const std::vector<Sample> samples = read_telemetry(run_dir / "ops.h5");
  if (!samples.empty()) {
    for (Chart& c : time_charts(s, samples)) charts.push_back(std::move(c));
  } else {
    head +=
        "<p class=\"note\">No power, clock or temperature traces: the run had no power dynamics, or its folder "
        "holds no ops.h5.</p>\n";
  }
  write_file_atomically(html, report_detail::page("chopsim report: " + name, head, charts));
}

}  // namespace chopsim
