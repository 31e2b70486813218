// The sweep page of `chopsim report` (docs/report.md): results.csv of `chopsim sweep --out DIR`.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/error.hpp"
#include "html_report.hpp"
#include "report_pages.hpp"

namespace chopsim::report_detail {

namespace fs = std::filesystem;

namespace {

struct Point {
  std::string label;  ///< the axis values, "key=value ..."
  std::string status;
  std::string reason;                       ///< invalid / failed / oom: why
  std::map<std::string, std::string> axes;  ///< axis key -> value
  std::map<std::string, double> figures;
  double at(const std::string& name) const {
    const auto it = figures.find(name);
    return it == figures.end() ? std::nan("") : it->second;
  }
};

struct Table {
  std::vector<std::string> axes;
  std::vector<Point> points;
};

Table read_results(const fs::path& file) {
  const ResultsCsv csv = read_results_csv(file, "chopsim sweep");
  const std::size_t key = csv.column("key"), status = csv.column("status"), reason = csv.column("reason");
  Table table;
  for (std::size_t c = key + 1; c < status; ++c) table.axes.push_back(csv.header[c]);
  for (const std::vector<std::string>& fields : csv.rows) {
    Point p;
    for (std::size_t c = key + 1; c < status; ++c) {
      p.label += (p.label.empty() ? "" : " ") + csv.header[c] + "=" + fields[c];
      p.axes[csv.header[c]] = fields[c];
    }
    p.status = fields[status];
    p.reason = fields[reason];
    for (std::size_t c = reason + 1; c < csv.header.size(); ++c)
      if (!fields[c].empty()) p.figures[csv.header[c]] = std::strtod(fields[c].c_str(), nullptr);
    table.points.push_back(std::move(p));
  }
  return table;
}

std::string labels_of(const std::vector<const Point*>& points) {
  std::string out;
  for (const Point* p : points) out += std::string(out.empty() ? "" : ",") + json_string(p->label);
  return out;
}

std::string values_of(const std::vector<const Point*>& points, const std::string& figure, double scale = 1.0) {
  std::string out;
  for (const Point* p : points) out += std::string(out.empty() ? "" : ",") + json_number(p->at(figure) * scale);
  return out;
}

/// The distinct values of `axis` in the points, numerically ordered when all are numbers, else in order of first
/// appearance.
std::vector<std::string> axis_values(const Table& table, const std::string& axis) {
  std::vector<std::string> values;
  for (const Point& p : table.points)
    if (std::find(values.begin(), values.end(), p.axes.at(axis)) == values.end()) values.push_back(p.axes.at(axis));
  const bool numeric = std::all_of(values.begin(), values.end(), [](const std::string& v) {
    char* end = nullptr;
    std::strtod(v.c_str(), &end);
    return !v.empty() && end == v.c_str() + v.size();
  });
  if (numeric)
    std::stable_sort(values.begin(), values.end(), [](const std::string& a, const std::string& b) {
      return std::strtod(a.c_str(), nullptr) < std::strtod(b.c_str(), nullptr);
    });
  return values;
}

/// The best throughput at each value of `axis` (over every other axis): how the objective moves with it.
Chart axis_chart(const Table& table, const std::string& axis, std::size_t index) {
  std::string labels, best;
  for (const std::string& value : axis_values(table, axis)) {
    double top = std::nan("");
    for (const Point& p : table.points)
      if (p.status == "ok" && p.axes.at(axis) == value && !(p.at("tokens_per_s") <= top)) top = p.at("tokens_per_s");
    labels += std::string(labels.empty() ? "" : ",") + json_string(value);
    best += std::string(best.empty() ? "" : ",") + json_number(top);
  }
  return {"axis_" + std::to_string(index), "Best throughput at each " + axis,
          "For each value of " + axis +
              ", the highest tokens/s of the simulated points with it (the other axes at "
              "their best); no bar: none of its points ran (out of memory or invalid).",
          "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels +
              "],\"datasets\":[{\"label\":\"best tokens/s\",\"data\":[" + best +
              "],\"backgroundColor\":\"#1f77b4\"}]},\"options\":{\"plugins\":{\"legend\":{\"display\":false}},"
              "\"scales\":{\"x\":" +
              axis_title(axis) + ",\"y\":" + axis_title("tokens/s") + "}}}"};
}

/// A tp x pp grid as an HTML table whose cells are shaded by value: the best `figure` over the other axes, "OOM"
/// where every point of the cell was out of memory, "-" where none was valid.
std::string heat_map(const Table& table, const std::string& title, const std::string& figure, double scale,
                     const char* format, bool higher_is_better) {
  const std::vector<std::string> tps = axis_values(table, "parallelism.tp"), pps = axis_values(table, "parallelism.pp");
  std::map<std::pair<std::string, std::string>, double> best;
  std::set<std::pair<std::string, std::string>> any_oom;
  double lo = INFINITY, hi = -INFINITY;
  for (const Point& p : table.points) {
    const auto cell = std::make_pair(p.axes.at("parallelism.tp"), p.axes.at("parallelism.pp"));
    if (p.status == "oom") any_oom.insert(cell);
    const bool counted = figure == "peak_bytes_per_gpu" ? (p.status == "ok" || p.status == "oom") : p.status == "ok";
    if (!counted || !std::isfinite(p.at(figure))) continue;
    const double v = p.at(figure) * scale;
    auto [it, added] = best.emplace(cell, v);
    if (!added) it->second = higher_is_better ? std::max(it->second, v) : std::min(it->second, v);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  std::string out = "<h3>" + html_escape(title) + "</h3>\n<table class=\"heat\">\n<tr><th>tp \\ pp</th>";
  for (const std::string& pp : pps) out += "<th>" + html_escape(pp) + "</th>";
  out += "</tr>\n";
  for (const std::string& tp : tps) {
    out += "<tr><th>" + html_escape(tp) + "</th>";
    for (const std::string& pp : pps) {
      const auto cell = std::make_pair(tp, pp);
      if (const auto it = best.find(cell); it != best.end()) {
        // Shade from white (worst) to blue (best).
        const double t = hi > lo ? (it->second - lo) / (hi - lo) : 1.0;
        const double good = higher_is_better ? t : 1.0 - t;
        char text[160];
        std::snprintf(text, sizeof text, "<td class=\"n\" style=\"background:rgba(31,119,180,%.2f)\">",
                      0.1 + 0.7 * good);
        out += text;
        std::snprintf(text, sizeof text, format, it->second);
        out += std::string(text) + (any_oom.count(cell) && figure == "peak_bytes_per_gpu" ? " (OOM)" : "") + "</td>";
      } else {
        out += any_oom.count(cell) ? "<td class=\"n\" style=\"background:#f4cccc\">OOM</td>" : "<td class=\"n\">-</td>";
      }
    }
    out += "</tr>\n";
  }
  return out + "</table>\n";
}

}  // namespace

void write_sweep_page(const fs::path& sweep_dir, const fs::path& html) {
  const Table table = read_results(sweep_dir / "results.csv");
  std::map<std::string, int> counts;
  std::vector<const Point*> ok, sized;
  for (const Point& p : table.points) {
    ++counts[p.status];
    if (p.status == "ok") ok.push_back(&p);
    if (p.status == "ok" || p.status == "oom") sized.push_back(&p);
  }
  std::sort(ok.begin(), ok.end(),
            [](const Point* a, const Point* b) { return a->at("tokens_per_s") > b->at("tokens_per_s"); });

  std::string head = "<p>" + std::to_string(table.points.size()) + " points: " + std::to_string(counts["ok"]) +
                     " simulated, " + std::to_string(counts["oom"]) + " out of memory (not simulated), " +
                     std::to_string(counts["invalid"]) + " invalid, " + std::to_string(counts["failed"]) +
                     " failed. Axes: " + html_escape([&] {
                       std::string axes;
                       for (const std::string& a : table.axes) axes += (axes.empty() ? "" : ", ") + a;
                       return axes;
                     }()) +
                     ".</p>\n<table>\n<tr><th>rank</th><th>point</th><th>tokens/s</th><th>MFU (%)</th><th>J/token</th>"
                     "<th>peak memory (GiB)</th><th>peak power, 1 ms (W)</th></tr>\n";
  for (std::size_t i = 0; i < ok.size() && i < 10; ++i) {
    char row[256];
    std::snprintf(row, sizeof row,
                  "<td class=\"n\">%.0f</td><td class=\"n\">%.1f</td><td class=\"n\">%.4f</td><td class=\"n\">%.1f</td>"
                  "<td class=\"n\">%.0f</td>",
                  ok[i]->at("tokens_per_s"), 100.0 * ok[i]->at("mfu"), ok[i]->at("energy_per_token_j"),
                  ok[i]->at("peak_bytes_per_gpu") / (1024.0 * 1024.0 * 1024.0), ok[i]->at("peak_power_1ms_w"));
    head += "<tr><td class=\"n\">" + std::to_string(i + 1) + "</td><td>" + html_escape(ok[i]->label) + "</td>" + row +
            "</tr>\n";
  }
  head += "</table>\n";
  const bool grid = std::find(table.axes.begin(), table.axes.end(), "parallelism.tp") != table.axes.end() &&
                    std::find(table.axes.begin(), table.axes.end(), "parallelism.pp") != table.axes.end();
  if (grid) {
    head += heat_map(table, "Best tokens/s by tp and pp", "tokens_per_s", 1.0, "%.0f", true);
    head += heat_map(table, "Lowest peak memory per GPU (GiB) by tp and pp", "peak_bytes_per_gpu",
                     1.0 / (1024.0 * 1024.0 * 1024.0), "%.1f", false);
  }
  // Every point, with its status and reason; a click on a column heading sorts by it.
  head +=
      "<h3>All points</h3>\n<table class=\"sortable\">\n<tr><th>point</th><th>status</th><th>tokens/s</th>"
      "<th>MFU (%)</th><th>J/token</th><th>peak memory (GiB)</th><th>reason</th></tr>\n";
  for (const Point& p : table.points) {
    const std::string cells = number_cell(p.at("tokens_per_s"), "%.0f") + number_cell(100.0 * p.at("mfu"), "%.1f") +
                              number_cell(p.at("energy_per_token_j"), "%.4f") +
                              number_cell(p.at("peak_bytes_per_gpu") / (1024.0 * 1024.0 * 1024.0), "%.1f");
    head += "<tr><td>" + html_escape(p.label) + "</td><td>" + html_escape(p.status) + "</td>" + cells + "<td>" +
            html_escape(p.reason) + "</td></tr>\n";
  }
  head += "</table>\n";

  std::vector<Chart> charts;
  for (std::size_t a = 0; a < table.axes.size(); ++a) charts.push_back(axis_chart(table, table.axes[a], a));
  charts.push_back({"throughput", "Throughput of each simulated point",
                    "Points in order of throughput; out-of-memory and invalid points are not drawn.",
                    "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels_of(ok) +
                        "],\"datasets\":[{\"label\":\"tokens/s\",\"data\":[" + values_of(ok, "tokens_per_s") +
                        "],\"backgroundColor\":\"#1f77b4\"}]},\"options\":{\"indexAxis\":\"y\",\"plugins\":{"
                        "\"legend\":{\"display\":false}},\"scales\":{\"x\":" +
                        axis_title("tokens/s") + ",\"y\":" + axis_title("point") + "}}}"});
  // Pareto front of throughput (more is better) against energy per token (less is better).
  std::string all, front;
  for (const Point* a : ok) {
    bool dominated = false;
    for (const Point* b : ok)
      if (b != a && b->at("tokens_per_s") >= a->at("tokens_per_s") &&
          b->at("energy_per_token_j") <= a->at("energy_per_token_j") &&
          (b->at("tokens_per_s") > a->at("tokens_per_s") || b->at("energy_per_token_j") < a->at("energy_per_token_j")))
        dominated = true;
    const std::string xy =
        "{\"x\":" + json_number(a->at("tokens_per_s")) + ",\"y\":" + json_number(a->at("energy_per_token_j")) + "}";
    all += std::string(all.empty() ? "" : ",") + xy;
    if (!dominated) front += std::string(front.empty() ? "" : ",") + xy;
  }
  charts.push_back({"pareto", "Throughput against energy per token",
                    "Every simulated point; the Pareto front (no other point has more tokens/s and fewer J/token) "
                    "in red.",
                    "{\"type\":\"scatter\",\"data\":{\"datasets\":[{\"label\":\"points\",\"data\":[" + all +
                        "],\"backgroundColor\":\"#1f77b4\"},{\"label\":\"Pareto front\",\"data\":[" + front +
                        "],\"backgroundColor\":\"#d62728\",\"pointRadius\":6}]},\"options\":{\"scales\":{\"x\":" +
                        axis_title("tokens/s") + ",\"y\":" + axis_title("energy per token (J)") + "}}}"});
  charts.push_back(
      {"peak_power", "Power peaks of each simulated point",
       "The highest 1 ms and 100 ms averages of any GPU (CharLLM-PPT: larger micro-batches raise them), "
       "and the mean power.",
       "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels_of(ok) +
           "],\"datasets\":[{\"label\":\"peak, 1 ms average\",\"data\":[" + values_of(ok, "peak_power_1ms_w") +
           "],\"backgroundColor\":\"#d62728\"},{\"label\":\"peak, 100 ms average\",\"data\":[" +
           values_of(ok, "peak_power_100ms_w") + "],\"backgroundColor\":\"#9467bd\"},{\"label\":\"mean\",\"data\":[" +
           values_of(ok, "mean_power_w") +
           "],\"backgroundColor\":\"#7f7f7f\"}]},\"options\":{\"indexAxis\":\"y\",\"scales\":{\"x\":" +
           axis_title("power per GPU (W)") + ",\"y\":" + axis_title("point") + "}}}"});
  constexpr double kGiB = 1.0 / (1024.0 * 1024.0 * 1024.0);
  charts.push_back({"memory", "Memory per GPU of each point against capacity",
                    "Simulated and out-of-memory points: the memory model's peak per GPU and the GPU's capacity.",
                    "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels_of(sized) +
                        "],\"datasets\":[{\"label\":\"needed\",\"data\":[" +
                        values_of(sized, "peak_bytes_per_gpu", kGiB) +
                        "],\"backgroundColor\":\"#2ca02c\"},{\"label\":\"capacity\",\"data\":[" +
                        values_of(sized, "capacity_bytes_per_gpu", kGiB) +
                        "],\"backgroundColor\":\"#bbbbbb\"}]},\"options\":{\"indexAxis\":\"y\",\"scales\":{\"x\":" +
                        axis_title("GiB per GPU") + ",\"y\":" + axis_title("point") + "}}}"});
  write_file_atomically(html, page("chopsim report: sweep " + sweep_dir.filename().string(), head, charts));
}

}  // namespace chopsim::report_detail
