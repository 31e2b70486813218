// The validation page of `chopsim report` (docs/report.md): validation.csv, which `chopsim validate` writes beside
// docs/validation.md. Predicted against measured per unit (the y = x line and a ±10 % band), and the error by group.

#include <algorithm>
#include <cmath>
#include <cstdio>
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

/// Distinct colours for the groups (Chart.js' default palette is one colour).
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

struct Row {
  std::string id, group, unit, status, reason;
  double measured = std::nan(""), predicted = std::nan(""), error = std::nan(""), calibrated_error = std::nan("");
};

double number(const std::string& field) { return field.empty() ? std::nan("") : std::strtod(field.c_str(), nullptr); }

std::vector<Row> read_rows(const fs::path& file) {
  const ResultsCsv csv = read_results_csv(file, "chopsim validate");
  const std::size_t id = csv.column("case"), group = csv.column("group"), unit = csv.column("metric_unit");
  const std::size_t measured = csv.column("measured"), predicted = csv.column("predicted");
  const std::size_t error = csv.column("error"), calibrated_error = csv.column("calibrated_error");
  const std::size_t status = csv.column("status"), reason = csv.column("reason");
  std::vector<Row> rows;
  for (const std::vector<std::string>& f : csv.rows)
    rows.push_back(Row{f[id], f[group], f[unit], f[status], f[reason], number(f[measured]), number(f[predicted]),
                       number(f[error]), number(f[calibrated_error])});
  return rows;
}

double median_abs(std::vector<double> values) {
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }), values.end());
  if (values.empty()) return std::nan("");
  for (double& v : values) v = std::abs(v);
  std::sort(values.begin(), values.end());
  const std::size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

std::string percent_cell(double fraction) { return number_cell(100.0 * fraction, "%.1f %%"); }

/// A line dataset from (lo, lo * factor) to (hi, hi * factor): y = x and the band's edges.
std::string line_dataset(const std::string& label, double lo, double hi, double factor, bool dashed) {
  return "{\"type\":\"line\",\"label\":" + json_string(label) + ",\"data\":[{\"x\":" + json_number(lo) +
         ",\"y\":" + json_number(lo * factor) + "},{\"x\":" + json_number(hi) + ",\"y\":" + json_number(hi * factor) +
         "}],\"borderColor\":\"#999\",\"borderWidth\":1,\"pointRadius\":0,\"fill\":false" +
         (dashed ? ",\"borderDash\":[6,4]" : "") + "}";
}

/// Predicted against measured for every predicted case of `unit`, one dataset per group; logarithmic axes when the
/// values span more than 20x.
Chart scatter(const std::string& id, const std::string& unit, const std::vector<const Row*>& rows,
              const std::vector<std::string>& groups) {
  double lo = INFINITY, hi = 0.0;
  for (const Row* r : rows) {
    lo = std::min({lo, r->measured, r->predicted});
    hi = std::max({hi, r->measured, r->predicted});
  }
  const bool logarithmic = lo > 0.0 && hi / lo > 20.0;
  std::string datasets;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    std::string points;
    for (const Row* r : rows)
      if (r->group == groups[g])
        points += std::string(points.empty() ? "" : ",") + "{\"x\":" + json_number(r->measured) +
                  ",\"y\":" + json_number(r->predicted) + ",\"case\":" + json_string(r->id) + "}";
    if (points.empty()) continue;
    const char* colour = kPalette[g % (sizeof kPalette / sizeof kPalette[0])];
    datasets += std::string(datasets.empty() ? "" : ",") + "{\"label\":" + json_string(groups[g]) + ",\"data\":[" +
                points + "],\"backgroundColor\":" + json_string(colour) + ",\"borderColor\":" + json_string(colour) +
                "}";
  }
  datasets += "," + line_dataset("predicted = measured", lo, hi, 1.0, false) + "," +
              line_dataset("+10 %", lo, hi, 1.1, true) + "," + line_dataset("-10 %", lo, hi, 0.9, true);
  const std::string type = logarithmic ? ",\"type\":\"logarithmic\"" : "";
  return {id, "Predicted against measured: " + unit,
          std::to_string(rows.size()) + " predicted cases; the solid line is y = x, the dashed ones ±10 %" +
              (logarithmic ? "; logarithmic axes." : "."),
          "{\"type\":\"scatter\",\"data\":{\"datasets\":[" + datasets + "]},\"options\":{\"scales\":{\"x\":{" +
              "\"title\":{\"display\":true,\"text\":" + json_string("measured (" + unit + ")") + "}" + type +
              "},\"y\":{\"title\":{\"display\":true,\"text\":" + json_string("predicted (" + unit + ")") + "}" + type +
              "}}}}"};
}

}  // namespace

void write_validation_page(const fs::path& csv_file, const fs::path& html) {
  const std::vector<Row> rows = read_rows(csv_file);
  std::vector<std::string> groups, units;
  for (const Row& r : rows) {
    if (std::find(groups.begin(), groups.end(), r.group) == groups.end()) groups.push_back(r.group);
    if (r.unit != "finding" && std::find(units.begin(), units.end(), r.unit) == units.end()) units.push_back(r.unit);
  }
  // Per group and unit: cases, predicted, median |error| plain and calibrated, within 10 %.
  struct Tally {
    int cases = 0, predicted = 0, within = 0;
    std::vector<double> errors, calibrated;
  };
  std::map<std::pair<std::string, std::string>, Tally> tallies;
  std::map<std::string, int> reasons;
  int predicted_total = 0;
  for (const Row& r : rows) {
    Tally& t = tallies[{r.group, r.unit}];
    ++t.cases;
    if (r.status != "ok") {
      ++reasons[r.reason.empty() ? r.status : r.reason];
      continue;
    }
    ++t.predicted;
    ++predicted_total;
    if (r.unit == "finding") continue;
    t.within += std::abs(r.error) <= 0.10 ? 1 : 0;
    t.errors.push_back(r.error);
    t.calibrated.push_back(r.calibrated_error);
  }
  std::string head = "<p>" + std::to_string(rows.size()) + " measured cases from " + html_escape(csv_file.string()) +
                     " (chopsim validate), " + std::to_string(predicted_total) +
                     " predicted. Error = (predicted - measured) / measured; calibrated: with the calibration "
                     "profile of the case's GPU, where one exists.</p>\n<table>\n<tr><th>group</th><th>unit</th>"
                     "<th>cases</th><th>predicted</th><th>median |error|</th><th>calibrated</th>"
                     "<th>within 10 %</th></tr>\n";
  std::string labels, plain, calibrated;
  for (const auto& [key, t] : tallies) {
    head += "<tr><td>" + html_escape(key.first) + "</td><td>" + html_escape(key.second) + "</td><td class=\"n\">" +
            std::to_string(t.cases) + "</td><td class=\"n\">" + std::to_string(t.predicted) + "</td>" +
            percent_cell(median_abs(t.errors)) + percent_cell(median_abs(t.calibrated)) + "<td class=\"n\">" +
            (key.second == "finding" ? std::string("-") : std::to_string(t.within)) + "</td></tr>\n";
    if (key.second == "finding" || t.errors.empty()) continue;
    labels += std::string(labels.empty() ? "" : ",") + json_string(key.first + " (" + key.second + ")");
    plain += std::string(plain.empty() ? "" : ",") + json_number(100.0 * median_abs(t.errors));
    calibrated += std::string(calibrated.empty() ? "" : ",") + json_number(100.0 * median_abs(t.calibrated));
  }
  head += "</table>\n";
  if (!reasons.empty()) {
    head += "<p>Not predicted:</p>\n<ul>\n";
    for (const auto& [reason, count] : reasons)
      head += "<li>" + std::to_string(count) + " x " + html_escape(reason) + "</li>\n";
    head += "</ul>\n";
  }
  std::vector<Chart> charts;
  charts.push_back({"error_by_group", "Median |error| by group",
                    "Per group of cases and unit, with the hardware files and with the calibration profiles.",
                    "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels +
                        "],\"datasets\":[{\"label\":\"hardware files\",\"data\":[" + plain +
                        "],\"backgroundColor\":\"#1f77b4\"},{\"label\":\"calibrated\",\"data\":[" + calibrated +
                        "],\"backgroundColor\":\"#ff7f0e\"}]},\"options\":{\"indexAxis\":\"y\",\"scales\":{\"x\":" +
                        axis_title("median |error| (%)") + ",\"y\":" + axis_title("group (unit)") + "}}}"});
  for (std::size_t u = 0; u < units.size(); ++u) {
    std::vector<const Row*> shown;
    for (const Row& r : rows)
      if (r.unit == units[u] && r.status == "ok" && std::isfinite(r.measured) && std::isfinite(r.predicted))
        shown.push_back(&r);
    if (!shown.empty()) charts.push_back(scatter("scatter_" + std::to_string(u), units[u], shown, groups));
  }
  write_file_atomically(html, page("chopsim report: validation", head, charts));
}

}  // namespace chopsim::report_detail
