#include "chopsim/traces/summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>

namespace chopsim {

void SummaryBuilder::add(const KernelRecord& r) {
  NameAcc& name = names_[r.name];
  if (name.count == 0) {
    name.kernel_class = r.kernel_class;
    name.min = name.max = r.duration_s;
  }
  ++name.count;
  name.total += r.duration_s;
  name.min = std::min(name.min, r.duration_s);
  name.max = std::max(name.max, r.duration_s);

  RankAcc& rank = ranks_[{r.rank, r.rank >= 0 ? -1 : static_cast<std::int64_t>(r.source)}];
  if (rank.count == 0) {
    rank.first = r.start_s;
    rank.last = r.start_s + r.duration_s;
  }
  ++rank.count;
  rank.total += r.duration_s;
  rank.first = std::min(rank.first, r.start_s);
  rank.last = std::max(rank.last, r.start_s + r.duration_s);
  rank.classes[static_cast<std::size_t>(r.kernel_class)] += r.duration_s;
  rank.names[r.name] += r.duration_s;
  streams_[{r.source, r.rank, r.device, r.stream}] = true;
}

void SummaryBuilder::add(const TelemetrySample& s) {
  TelemetryAcc& acc = telemetry_[{s.source, s.device}];
  ++acc.samples;
  if (std::isfinite(s.power_w)) {
    if (acc.power_samples == 0) acc.power_min = acc.power_max = s.power_w;
    ++acc.power_samples;
    acc.power_sum += s.power_w;
    acc.power_min = std::min(acc.power_min, s.power_w);
    acc.power_max = std::max(acc.power_max, s.power_w);
  }
  for (double t : {s.temp_edge_c, s.temp_junction_c, s.temp_memory_c}) {
    if (!std::isfinite(t)) continue;
    acc.temp_max = acc.has_temp ? std::max(acc.temp_max, t) : t;
    acc.has_temp = true;
  }
}

TraceSummary SummaryBuilder::finish(const StringTable& strings, std::size_t top_n) const {
  TraceSummary summary;
  summary.annotation_count = annotations_;
  summary.stream_count = streams_.size();
  std::array<ClassStat, kKernelClassCount> classes{};
  std::vector<KernelStat> kernels;
  for (const auto& [id, acc] : names_) {
    summary.record_count += acc.count;
    summary.gpu_time_s += acc.total;
    auto& c = classes[static_cast<std::size_t>(acc.kernel_class)];
    c.count += acc.count;
    c.total_s += acc.total;
    kernels.push_back({strings.at(id), acc.kernel_class, acc.count, acc.total, acc.min, acc.max, 0.0});
  }
  const double total = summary.gpu_time_s > 0 ? summary.gpu_time_s : 1.0;
  for (std::size_t i = 0; i < kKernelClassCount; ++i) {
    classes[i].kernel_class = static_cast<KernelClass>(i);
    classes[i].share = classes[i].total_s / total;
    if (classes[i].count > 0) summary.classes.push_back(classes[i]);
  }
  std::stable_sort(summary.classes.begin(), summary.classes.end(),
                   [](const ClassStat& a, const ClassStat& b) { return a.total_s > b.total_s; });
  // Ties broken by name so that the order is deterministic.
  std::sort(kernels.begin(), kernels.end(), [](const KernelStat& a, const KernelStat& b) {
    return a.total_s != b.total_s ? a.total_s > b.total_s : a.name < b.name;
  });
  for (auto& k : kernels) k.share = k.total_s / total;
  if (kernels.size() > top_n) kernels.resize(top_n);
  summary.top_kernels = std::move(kernels);
  for (const auto& [key, acc] : ranks_) {
    RankStat r;
    r.label = key.first >= 0 ? "rank " + std::to_string(key.first)
                             : "source " + std::to_string(key.second) + " (rank not known)";
    r.count = acc.count;
    r.gpu_time_s = acc.total;
    r.span_s = acc.last - acc.first;
    r.class_time_s = acc.classes;
    StringId top = kNoString;
    double top_time = -1.0;
    for (const auto& [name, time] : acc.names)
      if (time > top_time) {
        top = name;
        top_time = time;
      }
    r.top_kernel = strings.at(top);
    r.top_kernel_share = acc.total > 0 ? top_time / acc.total : 0.0;
    summary.ranks.push_back(std::move(r));
  }
  for (const auto& [key, acc] : telemetry_) {
    TelemetryStat t;
    t.source = key.first;
    t.device = key.second;
    t.samples = acc.samples;
    const double nan = std::nan("");
    t.power_min_w = acc.power_samples ? acc.power_min : nan;
    t.power_max_w = acc.power_samples ? acc.power_max : nan;
    t.power_mean_w = acc.power_samples ? acc.power_sum / static_cast<double>(acc.power_samples) : nan;
    t.temp_max_c = acc.has_temp ? acc.temp_max : nan;
    summary.telemetry.push_back(t);
  }
  return summary;
}

namespace {

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%5.1f %%", 100.0 * fraction);
  return text;
}

std::string micros(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", seconds * 1e6);
  return text;
}

std::string shorten(const std::string& name, std::size_t width) {
  if (name.size() <= width) return name;
  return name.substr(0, width - 3) + "...";
}

std::string number(double value, const char* format) {
  if (!std::isfinite(value)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

void print_summary(std::ostream& out, const TraceSummary& s) {
  out << "GPU records: " << s.record_count << " on " << s.stream_count << " streams, GPU time " << micros(s.gpu_time_s)
      << " us (sum of durations)";
  if (s.annotation_count) out << ", " << s.annotation_count << " annotations";
  out << "\n";
  if (!s.top_kernels.empty())
    out << "top kernel: " << percent(s.top_kernels.front().share) << " of GPU time  "
        << shorten(s.top_kernels.front().name, 100) << "\n";
  if (!s.classes.empty()) {
    out << "\nTime (%)  Total (us)        Instances  Class\n";
    for (const auto& c : s.classes)
      out << percent(c.share) << "  " << std::setw(16) << std::left << micros(c.total_s) << "  " << std::setw(9)
          << std::right << c.count << "  " << kernel_class_name(c.kernel_class) << "\n";
  }
  if (!s.top_kernels.empty()) {
    out << "\nTime (%)  Total (us)        Instances  Avg (us)      Class          Name\n";
    for (const auto& k : s.top_kernels)
      out << percent(k.share) << "  " << std::setw(16) << std::left << micros(k.total_s) << "  " << std::setw(9)
          << std::right << k.count << "  " << std::setw(12) << std::left
          << micros(k.total_s / static_cast<double>(k.count)) << "  " << std::setw(13)
          << kernel_class_name(k.kernel_class) << "  " << shorten(k.name, 90) << std::right << "\n";
  }
  if (!s.ranks.empty()) {
    out << "\nPer rank: GPU time, span, class shares, top kernel\n";
    for (const auto& r : s.ranks) {
      out << "  " << r.label << ": " << r.count << " records, " << micros(r.gpu_time_s) << " us GPU time, span "
          << micros(r.span_s) << " us;";
      for (std::size_t i = 0; i < kKernelClassCount; ++i)
        if (r.class_time_s[i] > 0 && r.gpu_time_s > 0)
          out << " " << kernel_class_name(static_cast<KernelClass>(i)) << " "
              << number(100.0 * r.class_time_s[i] / r.gpu_time_s, "%.1f") << "%";
      out << "; top " << percent(r.top_kernel_share) << " " << shorten(r.top_kernel, 60) << "\n";
    }
  }
  if (!s.telemetry.empty()) {
    out << "\nTelemetry per GPU: samples, power min/mean/max (W), hottest temperature (C)\n";
    for (const auto& t : s.telemetry)
      out << "  source " << t.source << " GPU " << t.device << ": " << t.samples << " samples, "
          << number(t.power_min_w, "%.1f") << " / " << number(t.power_mean_w, "%.1f") << " / "
          << number(t.power_max_w, "%.1f") << " W, " << number(t.temp_max_c, "%.1f") << " C\n";
  }
}

}  // namespace chopsim
