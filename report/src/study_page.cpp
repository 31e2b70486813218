// The study page of `chopsim report` (docs/report.md): results.csv of `chopsim study --out DIR`, one row per
// candidate system.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

struct Candidate {
  std::string name, hardware, status, mix, reason;
  int gpus = 0;
  std::map<std::string, double> figures;
  double at(const std::string& figure) const {
    const auto it = figures.find(figure);
    return it == figures.end() ? std::nan("") : it->second;
  }
};

std::vector<Candidate> read_candidates(const fs::path& file) {
  const ResultsCsv csv = read_results_csv(file, "chopsim study");
  const std::size_t status = csv.column("status"), first_figure = csv.column("tokens_per_s");
  const std::size_t reason = csv.column("reason"), name = csv.column("candidate");
  const std::size_t hardware = csv.column("hardware"), gpus = csv.column("gpus");
  std::vector<Candidate> out;
  for (const std::vector<std::string>& fields : csv.rows) {
    Candidate c;
    c.name = fields[name];
    c.hardware = fields[hardware];
    c.gpus = std::atoi(fields[gpus].c_str());
    c.status = fields[status];
    c.reason = fields[reason];
    for (std::size_t i = status + 1; i < first_figure; ++i)
      if (!fields[i].empty()) c.mix += (c.mix.empty() ? "" : " ") + csv.header[i] + "=" + fields[i];
    for (std::size_t i = first_figure; i < reason; ++i)
      if (!fields[i].empty()) c.figures[csv.header[i]] = std::strtod(fields[i].c_str(), nullptr);
    out.push_back(std::move(c));
  }
  return out;
}

/// A horizontal bar chart of one figure per feasible candidate.
Chart bars(const std::string& id, const std::string& title, const std::string& note,
           const std::vector<const Candidate*>& shown, const std::string& figure, double scale, const std::string& unit,
           const std::string& colour) {
  std::string labels, values;
  for (const Candidate* c : shown) {
    labels += std::string(labels.empty() ? "" : ",") + json_string(c->name);
    values += std::string(values.empty() ? "" : ",") + json_number(c->at(figure) * scale);
  }
  return {id, title, note,
          "{\"type\":\"bar\",\"data\":{\"labels\":[" + labels + "],\"datasets\":[{\"label\":" + json_string(unit) +
              ",\"data\":[" + values + "],\"backgroundColor\":" + json_string(colour) +
              "}]},\"options\":{\"indexAxis\":\"y\",\"plugins\":{\"legend\":{\"display\":false}},\"scales\":{\"x\":" +
              axis_title(unit) + ",\"y\":" + axis_title("candidate") + "}}}"};
}

}  // namespace

void write_study_page(const fs::path& study_dir, const fs::path& html) {
  const std::vector<Candidate> candidates = read_candidates(study_dir / "results.csv");
  std::vector<const Candidate*> ok;
  for (const Candidate& c : candidates)
    if (c.status == "ok") ok.push_back(&c);
  std::stable_sort(ok.begin(), ok.end(), [](const Candidate* a, const Candidate* b) {
    return a->at("tokens_per_dollar") > b->at("tokens_per_dollar");
  });
  std::string head = "<p>" + std::to_string(candidates.size()) + " candidate systems, " + std::to_string(ok.size()) +
                     " feasible, ranked by tokens per dollar. Each is shown at the best point of its sweep "
                     "(the folder named in results.csv).</p>\n<table>\n<tr><th>rank</th><th>candidate</th>"
                     "<th>GPUs</th><th>best mix</th><th>tokens/s</th><th>days to train</th><th>cost (USD)</th>"
                     "<th>tokens per USD</th><th>tokens/s per kW</th><th>facility power (kW)</th><th>racks</th></tr>\n";
  int rank = 0;
  for (const Candidate* c : ok)
    head += "<tr><td class=\"n\">" + std::to_string(++rank) + "</td><td>" + html_escape(c->name) + " (" +
            html_escape(c->hardware) + ")</td><td class=\"n\">" + std::to_string(c->gpus) + "</td><td>" +
            html_escape(c->mix) + "</td>" + number_cell(c->at("tokens_per_s"), "%.0f") +
            number_cell(c->at("time_to_train_s") / 86400.0, "%.1f") + number_cell(c->at("cost_usd"), "%.0f") +
            number_cell(c->at("tokens_per_dollar"), "%.0f") + number_cell(c->at("tokens_per_s_per_kw"), "%.1f") +
            number_cell(c->at("facility_power_kw"), "%.1f") + number_cell(c->at("racks"), "%.0f") + "</tr>\n";
  for (const Candidate& c : candidates)
    if (c.status != "ok")
      head += "<tr><td>-</td><td>" + html_escape(c.name) + " (" + html_escape(c.hardware) +
              ")</td><td colspan=\"9\">infeasible: " + html_escape(c.reason) + "</td></tr>\n";
  head += "</table>\n";

  std::vector<Chart> charts;
  charts.push_back(bars("per_dollar", "Tokens per dollar", "Training tokens bought by one USD at the catalog's prices.",
                        ok, "tokens_per_dollar", 1.0, "tokens per USD", "#2ca02c"));
  charts.push_back(bars("time", "Time to train", "The study's goal in tokens at each candidate's best throughput.", ok,
                        "time_to_train_s", 1.0 / 86400.0, "days", "#1f77b4"));
  charts.push_back(bars("cost", "Cost of the training", "Rental, or amortised purchase plus the facility's energy.", ok,
                        "cost_usd", 1.0, "USD", "#ff7f0e"));
  charts.push_back(bars("facility_power", "Facility power to provision",
                        "GPUs at their largest 100 ms average power plus the nodes' other power, times the PUE.", ok,
                        "facility_power_kw", 1.0, "kW", "#d62728"));
  charts.push_back(bars("energy", "Facility energy of the training",
                        "GPU and node power over the training, times the PUE.", ok, "facility_energy_j", 1.0 / 3.6e9,
                        "MWh", "#9467bd"));
  write_file_atomically(html, page("chopsim report: study " + study_dir.filename().string(), head, charts));
}

}  // namespace chopsim::report_detail
