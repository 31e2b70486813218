// The sweep page of `chopsim report` (docs/report.md): results.csv of `chopsim sweep --out DIR`.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
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
    for (std::size_t c = key + 1; c < status; ++c)
      p.label += (p.label.empty() ? "" : " ") + csv.header[c] + "=" + fields[c];
    p.status = fields[status];
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

  std::vector<Chart> charts;
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
