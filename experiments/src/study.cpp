// Procurement studies (study.hpp, docs/studies.md): the study and catalog files, each candidate's sweep, the cost
// arithmetic of its best point, results.csv and the terminal's ranking.

#include "chopsim/experiments/study.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>
#include <system_error>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/config/detail/decode.hpp"
#include "cost_internal.hpp"
#include "csv_text.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using config_detail::flow_text;
using config_detail::keys_of;
using config_detail::Mapping;
using config_detail::Need;
using config_detail::RealRule;
using config_detail::Scope;

namespace {

CostCatalog load_catalog(const fs::path& file) {
  const std::string shown = config_detail::display_path(file);
  const YAML::Node root = config_detail::load_yaml_file(file, "cost catalog");
  Mapping top(root, Scope{shown, "", "", nullptr});
  CostCatalog catalog;
  if (top.has("facility")) {
    Mapping f = top.child("facility");
    decode_facility(f, catalog.facility);
  }
  top.require("gpus", "a mapping of hardware names to their costs");
  Mapping gpus = top.child("gpus");
  for (const std::string& name : keys_of(top.value("gpus"))) {
    Mapping entry = gpus.child(name);
    GpuCost cost;
    decode_gpu_cost(entry, cost);
    if (!cost.gpu_hour_usd && !cost.capex_usd_per_gpu)
      gpus.fail(name, name + " has neither gpu_hour_usd nor capex_usd_per_gpu",
                "give a rental price (gpu_hour_usd) or a purchase price (capex_usd_per_gpu)");
    catalog.gpus[name] = cost;
  }
  gpus.finish();
  top.finish();
  return catalog;
}

/// A folder name for a candidate: its name with everything but letters, digits, '-' and '.' as '_'.
std::string slug(const std::string& name) { return name.empty() ? "candidate" : file_name_slug(name); }

}  // namespace

StudySpec load_study(const fs::path& file) {
  const std::string shown = config_detail::display_path(file);
  const YAML::Node root = config_detail::load_yaml_file(file, "study file");
  Mapping top(root, Scope{shown, "", "", nullptr});
  StudySpec spec;
  spec.file = file;
  const auto relative = [&](const std::string& text) {
    fs::path p(text);
    return p.is_relative() ? file.parent_path() / p : p;
  };
  std::string sweep;
  top.read("sweep", sweep, Need::required);
  const fs::path sweep_file = relative(sweep);
  std::error_code error;
  if (!fs::is_regular_file(sweep_file, error))
    top.fail("sweep", "no sweep file at " + sweep_file.string(),
             "give the path of a sweep file (docs/sweeps.md), relative to " + shown);
  spec.sweep = load_sweep(sweep_file);

  top.require("goal", "a mapping with tokens");
  Mapping goal = top.child("goal");
  goal.read("tokens", spec.tokens_to_train, 1.0, config_detail::kPositiveReal, "tokens", Need::required);
  goal.finish();

  // The catalog: as named; else the one beside the study; else the one chopsim ships (configs/studies/catalog.yaml).
  std::string catalog;
  if (top.read("catalog", catalog)) {
    spec.catalog_file = relative(catalog);
  } else {
    spec.catalog_file = file.parent_path() / "catalog.yaml";
    if (!fs::is_regular_file(spec.catalog_file, error))
      spec.catalog_file = fs::path(CHOPSIM_SHIPPED_CONFIGS) / "studies" / "catalog.yaml";
  }
  if (!fs::is_regular_file(spec.catalog_file, error))
    top.fail("catalog", "no cost catalog at " + spec.catalog_file.string(),
             "give the path of a catalog (configs/studies/catalog.yaml is the shipped one), relative to " + shown);
  spec.catalog = load_catalog(spec.catalog_file);
  if (top.has("facility")) {
    Mapping f = top.child("facility");
    decode_facility(f, spec.catalog.facility);
  }

  const std::vector<std::string> swept = axis_keys(spec.sweep.axes);
  top.require("candidates", "a list of candidate systems");
  const YAML::Node list = top.value("candidates");
  if (!list.IsSequence() || list.size() == 0)
    top.fail("candidates", "candidates is a non-empty list of {name, set, cost}",
             "write candidates: [{name: 64x H100, set: {hardware: H100-SXM5-80GB, cluster.nodes: 8}}]");
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    Mapping m(list[i], Scope{shown, "candidates[" + std::to_string(i) + "]", "", nullptr});
    StudyCandidate c;
    c.where = m.where();
    m.read("name", c.name, Need::required);
    if (!names.insert(c.name).second) m.fail("name", "two candidates are named '" + c.name + "'", "rename one");
    m.require("set", "a mapping of run keys (hardware, cluster.name, cluster.nodes, ...)");
    Mapping set = m.child("set");
    for (const std::string& key : keys_of(m.value("set"))) {
      const YAML::Node value = set.value(key);
      if (!value.IsDefined() || value.IsNull()) set.fail(key, "no value", "give " + key + " a value");
      if (std::find(swept.begin(), swept.end(), key) != swept.end())
        set.fail(key, key + " is an axis of the study's sweep", "sweep it there or set it here, not both");
      c.set.push_back({key, flow_text(value), set.where(key).to_string() + " (candidate " + c.name + ")"});
    }
    set.finish();
    for (const ConfigOverride& o : c.set)
      if (o.key == "hardware") c.hardware = o.value;
    if (c.hardware.empty())
      set.fail("hardware", "the candidate names no hardware", "set hardware: NAME (a file of configs/hardware)");
    const auto entry = spec.catalog.gpus.find(c.hardware);
    if (entry == spec.catalog.gpus.end()) {
      std::vector<std::string> priced;
      for (const auto& [name, cost] : spec.catalog.gpus) priced.push_back(name);
      set.fail("hardware",
               "the catalog " + config_detail::display_path(spec.catalog_file) + " does not price " + c.hardware +
                   "; it prices " + join(priced),
               "add " + c.hardware + " to the catalog, or give the candidate a cost: mapping with its prices");
    }
    c.cost = entry->second;
    if (m.has("cost")) {
      Mapping cost = m.child("cost");
      decode_gpu_cost(cost, *c.cost);
    }
    m.finish();
    spec.candidates.push_back(std::move(c));
  }
  top.finish();
  return spec;
}

CandidateResult price_candidate(const std::string& name, const std::string& hardware, int gpus, int nodes,
                                const PointResult& best, double tokens_to_train, const GpuCost& cost,
                                const FacilityCost& facility) {
  CandidateResult r;
  r.name = name;
  r.hardware = hardware;
  r.gpus = gpus;
  r.nodes = nodes;
  r.best = best;
  r.feasible = best.status == PointStatus::ok && best.figures.tokens_per_s > 0.0;
  if (!r.feasible) return r;
  const PointFigures& f = best.figures;
  const double n = static_cast<double>(gpus);
  const double overhead_w = cost.node_overhead_w * static_cast<double>(nodes);
  r.tokens_per_s = f.tokens_per_s;
  r.time_to_train_s = tokens_to_train / f.tokens_per_s;
  r.gpu_energy_j = f.mean_power_w * n * r.time_to_train_s;
  r.facility_energy_j = (f.mean_power_w * n + overhead_w) * facility.pue * r.time_to_train_s;
  r.cost_usd = cost_usd_per_s(cost, facility, gpus, nodes, f.mean_power_w) * r.time_to_train_s;
  r.tokens_per_dollar = r.cost_usd > 0.0 ? tokens_to_train / r.cost_usd : 0.0;
  // Provision for the largest 100 ms average (what breakers and PDUs see), not the mean.
  const double it_peak_w = f.peak_power_100ms_w * n + overhead_w;
  r.facility_power_w = it_peak_w * facility.pue;
  r.tokens_per_s_per_kw = r.facility_power_w > 0.0 ? f.tokens_per_s / (r.facility_power_w / 1e3) : 0.0;
  const int by_space = (gpus + cost.gpus_per_rack - 1) / cost.gpus_per_rack;
  const double rack_power_kw = cost.rack_power_kw.value_or(facility.rack_power_kw);
  const int by_power = static_cast<int>(std::ceil(it_peak_w / 1e3 / rack_power_kw - 1e-9));
  r.racks = std::max(by_space, by_power);
  return r;
}

StudyResult run_study(const StudySpec& spec, const ConfigSearchPath& search, const ModelRegistries& registries,
                      const StudyOptions& options) {
  StudyResult result;
  fs::create_directories(options.out_dir);
  for (const StudyCandidate& c : spec.candidates) {
    SweepSpec sweep = spec.sweep;
    sweep.fixed.insert(sweep.fixed.end(), c.set.begin(), c.set.end());
    // The candidate's own price and the study's goal: a sweep objective of cost_per_token or time_to_train ranks
    // each candidate's points with them.
    sweep.cost = c.cost;
    sweep.facility = spec.catalog.facility;
    sweep.goal_tokens = spec.tokens_to_train;
    SweepOptions sweep_options;
    sweep_options.out_dir = options.out_dir / slug(c.name);
    sweep_options.jobs = options.jobs;
    if (options.on_point)
      sweep_options.on_point = [&](const PointResult& p, std::size_t done, std::size_t total) {
        options.on_point(c.name, p, done, total);
      };
    std::optional<SweepResult> swept =
        options.run_candidate_sweep ? options.run_candidate_sweep(sweep, sweep_options)
                                    : std::optional<SweepResult>(run_sweep(sweep, search, registries, sweep_options));
    if (!swept) {  // another process merges and prices (every candidate's sweep runs on every rank)
      result.priced = false;
      continue;
    }
    const SweepResult& points = *swept;

    const PointResult* best = nullptr;
    std::map<std::string, int> statuses;
    for (const PointResult& p : points.points) {
      ++statuses[to_string(p.status)];
      if (p.status == PointStatus::ok && (best == nullptr || better_point(sweep, p, *best))) best = &p;
    }
    int gpus = 0, nodes = 0;
    if (best != nullptr) {
      const RunSpec run = load_run_config(sweep.base, search, registries, best->point.overrides);
      gpus = run.cluster.gpu_count();
      nodes = run.cluster.nodes;
    }
    CandidateResult r = price_candidate(c.name, c.hardware, gpus, nodes, best != nullptr ? *best : PointResult{},
                                        spec.tokens_to_train, *c.cost, spec.catalog.facility);
    if (best == nullptr) {
      r.best.status = PointStatus::invalid;
      for (const auto& [status, count] : statuses)
        r.why_not += (r.why_not.empty() ? "" : ", ") + std::to_string(count) + " " + status;
      r.why_not = "no point ran: " + r.why_not;
    }
    r.sweep_dir = sweep_options.out_dir;
    result.candidates.push_back(std::move(r));
  }

  if (!result.priced) {
    result.candidates.clear();
    return result;
  }
  // results.csv: one row per candidate, in the study's order.
  std::ostringstream out;
  out << "candidate,hardware,gpus,nodes,status";
  const std::vector<std::string> swept = axis_keys(spec.sweep.axes);
  for (const std::string& key : swept) out << ',' << detail::csv_field(key);
  out << ",tokens_per_s,time_to_train_s,energy_j,facility_energy_j,cost_usd,tokens_per_dollar,tokens_per_s_per_kw,"
         "racks,facility_power_kw,mfu,mean_power_w,peak_power_1ms_w,peak_power_100ms_w,throttled_fraction,reason,"
         "sweep_dir\n";
  for (const CandidateResult& r : result.candidates) {
    out << detail::csv_field(r.name) << ',' << detail::csv_field(r.hardware) << ',' << r.gpus << ',' << r.nodes << ','
        << (r.feasible ? "ok" : "infeasible");
    for (const std::string& key : swept) {
      std::string value;
      for (const auto& [k, v] : r.best.point.values)
        if (k == key) value = v;
      out << ',' << detail::csv_field(r.feasible ? value : "");
    }
    const auto number = [&](double v) { return r.feasible ? detail::csv_number(v) : std::string(); };
    const PointFigures& f = r.best.figures;
    out << ',' << number(r.tokens_per_s) << ',' << number(r.time_to_train_s) << ',' << number(r.gpu_energy_j) << ','
        << number(r.facility_energy_j) << ',' << number(r.cost_usd) << ',' << number(r.tokens_per_dollar) << ','
        << number(r.tokens_per_s_per_kw) << ',' << (r.feasible ? std::to_string(r.racks) : "") << ','
        << number(r.facility_power_w / 1e3) << ',' << number(f.mfu) << ',' << number(f.mean_power_w) << ','
        << number(f.peak_power_1ms_w) << ',' << number(f.peak_power_100ms_w) << ',' << number(f.throttled_fraction)
        << ',' << detail::csv_field(r.why_not) << ',' << detail::csv_field(r.sweep_dir.filename().string()) << '\n';
  }
  result.results_csv = options.out_dir / "results.csv";
  write_file_atomically(result.results_csv, out.str());
  return result;
}

void print_study_summary(std::ostream& out, const StudySpec& spec, const StudyResult& result) {
  std::vector<const CandidateResult*> ranked;
  for (const CandidateResult& r : result.candidates) ranked.push_back(&r);
  std::stable_sort(ranked.begin(), ranked.end(), [](const CandidateResult* a, const CandidateResult* b) {
    if (a->feasible != b->feasible) return a->feasible;
    return a->tokens_per_dollar > b->tokens_per_dollar;
  });
  out << "Study " << config_detail::display_path(spec.file) << ": " << std::setprecision(3) << spec.tokens_to_train
      << " tokens, ranked by tokens per dollar\n";
  out << std::fixed;
  for (const CandidateResult* r : ranked) {
    out << "  " << std::left << std::setw(22) << r->name << std::right;
    if (!r->feasible) {
      out << " infeasible (" << r->why_not << ")\n";
      continue;
    }
    std::string mix;
    for (const auto& [key, value] : r->best.point.values) mix += (mix.empty() ? "" : " ") + key + "=" + value;
    out << std::setprecision(0) << std::setw(9) << r->tokens_per_s << " tokens/s  " << std::setprecision(1)
        << std::setw(7) << r->time_to_train_s / 86400.0 << " days  $" << std::setprecision(0) << r->cost_usd << "  "
        << std::setprecision(0) << r->tokens_per_dollar << " tokens/$  " << std::setprecision(1)
        << r->facility_power_w / 1e3 << " kW  " << r->racks << (r->racks == 1 ? " rack" : " racks") << "  [" << mix
        << "]\n";
  }
  out.unsetf(std::ios::fixed);
  out << "wrote " << result.results_csv.string() << "\n";
}

}  // namespace chopsim
