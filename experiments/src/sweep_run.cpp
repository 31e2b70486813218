// Running a sweep: the resumable SQLite store, points in parallel (TBB), results.csv and the terminal's answer
// (docs/sweeps.md).

#include <sqlite3.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/version.hpp"
#include "chopsim/experiments/sweep.hpp"
#include "csv_text.hpp"

namespace chopsim {

namespace fs = std::filesystem;

namespace {

/// The figures in store and CSV column order, with their summary.json names.
struct FigureColumn {
  const char* name;
  double PointFigures::*field;
};
constexpr FigureColumn kFigures[] = {
    {"iteration_time_s", &PointFigures::iteration_time_s},
    {"tokens_per_s", &PointFigures::tokens_per_s},
    {"mfu", &PointFigures::mfu},
    {"model_tflops_per_gpu", &PointFigures::model_tflops_per_gpu},
    {"peak_bytes_per_gpu", &PointFigures::peak_bytes_per_gpu},
    {"capacity_bytes_per_gpu", &PointFigures::capacity_bytes_per_gpu},
    {"compute_s", &PointFigures::compute_s},
    {"exposed_comm_s", &PointFigures::exposed_comm_s},
    {"pipeline_bubble_s", &PointFigures::pipeline_bubble_s},
    {"idle_s", &PointFigures::idle_s},
    {"mean_power_w", &PointFigures::mean_power_w},
    {"peak_power_1ms_w", &PointFigures::peak_power_1ms_w},
    {"peak_power_100ms_w", &PointFigures::peak_power_100ms_w},
    {"energy_per_token_j", &PointFigures::energy_per_token_j},
    {"clock_mean_mhz", &PointFigures::clock_mean_mhz},
    {"throttled_fraction", &PointFigures::throttled_fraction},
    // Appended: a store from before these columns gets them added (Store), in this order.
    {"gpus", &PointFigures::gpus},
    {"nodes", &PointFigures::nodes},
    {"host_launch_time_s", &PointFigures::host_launch_time_s},
};

using detail::csv_field;
using detail::csv_number;

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// FNV-1a, 64 bits: a cache key (not a security hash) of what decides a point's result: chopsim's version and build,
/// the text of every file the point's run config reads (`inputs`: the base config, its model, calibration profile,
/// hardware and cluster files, so that editing any of them computes the point again), and the point's overrides.
std::string point_key(const std::vector<fs::path>& inputs, const SweepPoint& point) {
  std::uint64_t hash = 1469598103934665603ULL;
  auto mix = [&](std::string_view text) {
    for (const unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ULL;
    }
    hash ^= 0xff;  // separator
    hash *= 1099511628211ULL;
  };
  mix(kChopsimVersion);
  mix(build_id());
  for (const fs::path& file : inputs) mix(file_text(file));
  for (const ConfigOverride& o : point.overrides) {
    mix(o.key);
    mix(o.value);
  }
  std::ostringstream out;
  out << std::hex << std::setw(16) << std::setfill('0') << hash;
  return out.str();
}

/// A point before it is simulated: its run config, or, when it is excluded by a constraint or its config does not
/// load, why not (`invalid`); and its key, over the files the run config reads, or over the base config alone when
/// there is no run (what decides those results is the sweep and base files).
struct LoadedPoint {
  std::optional<RunSpec> run;
  PointResult invalid;
  std::string key;
};

LoadedPoint load_point(const SweepSpec& spec, const SweepPoint& point, const ConfigSearchPath& search,
                       const ModelRegistries& registries) {
  LoadedPoint loaded;
  PointResult& r = loaded.invalid;
  r.point = point;
  r.status = PointStatus::invalid;
  const auto excluding = std::find_if(spec.constraints.begin(), spec.constraints.end(),
                                      [&](const SweepConstraint& c) { return !meets_constraint(c, point); });
  if (excluding != spec.constraints.end()) {
    r.reason = "excluded by the constraint '" + excluding->text + "'";
  } else {
    try {
      loaded.run = load_run_config(spec.base, search, registries, point.overrides);
    } catch (const InputError& e) {
      r.reason = e.problem() + (e.key().empty() ? "" : " (" + e.key() + ")");
    } catch (const UnknownNameError& e) {
      r.reason = e.what();
    }
  }
  loaded.key = point_key(loaded.run ? loaded.run->input_files : std::vector<fs::path>{spec.base}, point);
  return loaded;
}

PointFigures figures_of(const RunSpec& run, const RunReport& r) {
  PointFigures f;
  f.gpus = r.gpus;
  f.nodes = run.cluster.nodes;
  f.peak_bytes_per_gpu = r.memory.total_bytes;
  f.capacity_bytes_per_gpu = r.memory.capacity_bytes;
  if (!r.simulated) return f;
  f.iteration_time_s = r.iteration_time_s;
  f.tokens_per_s = r.tokens_per_s;
  f.mfu = r.mfu;
  f.model_tflops_per_gpu = r.model_tflops_per_gpu;
  f.compute_s = r.breakdown.compute_s;
  f.exposed_comm_s = r.breakdown.exposed_comm_total_s();
  f.pipeline_bubble_s = r.breakdown.pipeline_bubble_s;
  f.idle_s = r.breakdown.idle_s;
  f.host_launch_time_s = r.host.launch_time_s;
  if (r.power.available) {
    f.mean_power_w = r.power.mean_w;
    f.peak_power_1ms_w = r.power.peak_1ms_w;
    f.peak_power_100ms_w = r.power.peak_100ms_w;
    f.energy_per_token_j = r.power.energy_per_token_j;
    f.clock_mean_mhz = r.power.clock_mean_hz / 1e6;
    f.throttled_fraction = r.power.throttled_fraction;
  }
  return f;
}

/// sweep.sqlite: one row per finished point, written in its own transaction as the point ends (WAL journal), so a
/// killed sweep loses at most the points that were running and a rerun finds every finished one.
class Store {
 public:
  explicit Store(const fs::path& path) : path_(path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) fail("cannot open");
    sqlite3_busy_timeout(db_, 10000);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    std::string columns;
    for (const FigureColumn& c : kFigures) columns += std::string(", ") + c.name + " REAL";
    exec("CREATE TABLE IF NOT EXISTS points (key TEXT PRIMARY KEY, status TEXT NOT NULL, reason TEXT NOT NULL" +
         columns + ")");
    // A store written before a figure existed: add its column (rows from then read it as 0, and an ok row without
    // its GPU count is run again, see finished()).
    std::set<std::string> present;
    sqlite3_stmt* info = prepare("PRAGMA table_info(points)");
    while (sqlite3_step(info) == SQLITE_ROW)
      present.insert(reinterpret_cast<const char*>(sqlite3_column_text(info, 1)));
    sqlite3_finalize(info);
    for (const FigureColumn& c : kFigures)
      if (!present.count(c.name)) exec(std::string("ALTER TABLE points ADD COLUMN ") + c.name + " REAL");
  }
  ~Store() { sqlite3_close(db_); }
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Finished points by key.
  std::map<std::string, PointResult> finished() {
    std::map<std::string, PointResult> out;
    sqlite3_stmt* statement = prepare("SELECT * FROM points");
    while (sqlite3_step(statement) == SQLITE_ROW) {
      PointResult r;
      r.key = reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
      const std::string status = reinterpret_cast<const char*>(sqlite3_column_text(statement, 1));
      for (const PointStatus s : {PointStatus::ok, PointStatus::oom, PointStatus::invalid, PointStatus::failed})
        if (status == to_string(s)) r.status = s;
      r.reason = reinterpret_cast<const char*>(sqlite3_column_text(statement, 2));
      int column = 3;
      for (const FigureColumn& c : kFigures) r.figures.*(c.field) = sqlite3_column_double(statement, column++);
      r.resumed = true;
      if (r.status == PointStatus::ok && r.figures.gpus == 0.0) continue;  // from before the gpus column: rerun
      out.emplace(r.key, std::move(r));
    }
    sqlite3_finalize(statement);
    return out;
  }

  void add(const PointResult& r) {
    std::string sql = "INSERT OR REPLACE INTO points VALUES (?, ?, ?";
    for (std::size_t i = 0; i < std::size(kFigures); ++i) sql += ", ?";
    sql += ")";
    sqlite3_stmt* statement = prepare(sql);
    sqlite3_bind_text(statement, 1, r.key.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(statement, 2, to_string(r.status), -1, SQLITE_STATIC);
    sqlite3_bind_text(statement, 3, r.reason.c_str(), -1, SQLITE_TRANSIENT);
    int index = 4;
    for (const FigureColumn& c : kFigures) sqlite3_bind_double(statement, index++, r.figures.*(c.field));
    const int rc = sqlite3_step(statement);
    sqlite3_finalize(statement);
    if (rc != SQLITE_DONE) fail("cannot record a point");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw OutputError(path_.string() + ": " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "no database"));
  }
  void exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
      const std::string text = message ? message : "?";
      sqlite3_free(message);
      fail(text);
    }
  }
  sqlite3_stmt* prepare(const std::string& sql) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) fail("bad statement");
    return statement;
  }

  fs::path path_;
  sqlite3* db_ = nullptr;
};

std::string memory_reason(const RunReport& r) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << "needs " << r.memory.total_bytes / (1u << 30) << " GiB per GPU of "
      << r.memory.capacity_bytes / (1u << 30) << " GiB (stage " << r.memory.pp_stage << ": weights "
      << r.memory.weights_bytes / (1u << 30) << ", gradients " << r.memory.gradients_bytes / (1u << 30)
      << ", optimizer " << r.memory.optimizer_bytes / (1u << 30) << ", activations "
      << r.memory.activations_bytes / (1u << 30) << " GiB)";
  return out.str();
}

/// Simulates a point whose run config loaded; `observer_thread` when the points run one at a time (one job), whose
/// second core would otherwise idle (RunOptions::observer_thread).
PointResult run_point(const SweepPoint& point, const RunSpec& run, const ModelRegistries& registries,
                      bool observer_thread) {
  PointResult r;
  r.point = point;
  try {
    RunOptions options;
    options.observer_thread = observer_thread;
    const RunReport report = run_simulation(run, registries, options);  // OOM points are not simulated
    r.figures = figures_of(run, report);
    if (report.out_of_memory) {
      r.status = PointStatus::oom;
      r.reason = memory_reason(report);
    }
  } catch (const std::exception& e) {
    r.status = PointStatus::failed;
    r.reason = e.what();
  }
  return r;
}

void write_csv(const SweepSpec& spec, const std::vector<PointResult>& points, const fs::path& path) {
  std::ostringstream out;
  out << "point,key";
  for (const SweepAxis& axis : spec.axes)
    for (const std::string& key : axis.keys) out << ',' << csv_field(key);
  out << ",status,reason";
  for (const FigureColumn& c : kFigures) out << ',' << c.name;
  out << '\n';
  for (const PointResult& r : points) {
    out << r.point.index << ',' << r.key;
    for (const auto& [key, value] : r.point.values) out << ',' << csv_field(value);
    out << ',' << to_string(r.status) << ',' << csv_field(r.reason);
    const bool figures = r.status == PointStatus::ok || r.status == PointStatus::oom;
    for (const FigureColumn& c : kFigures) out << ',' << (figures ? csv_number(r.figures.*(c.field)) : "");
    out << '\n';
  }
  write_file_atomically(path, out.str());
}

}  // namespace

SweepResult run_sweep(const SweepSpec& spec, const ConfigSearchPath& search, const ModelRegistries& registries,
                      const SweepOptions& options) {
  if (options.shard_count < 1 || options.shard_index < 0 || options.shard_index >= options.shard_count)
    throw InputError({"command line"}, "",
                     "--shard " + std::to_string(options.shard_index) + "/" + std::to_string(options.shard_count) +
                         " is not a shard (I/N with 0 <= I < N)",
                     "write e.g. --shard 0/4 for the first of four");
  check_objective_inputs(spec);
  create_output_directory(options.out_dir, "--out");
  SweepResult result;
  result.store = options.out_dir / "sweep.sqlite";
  result.results_csv = options.out_dir / "results.csv";
  Store store(result.store);
  const std::map<std::string, PointResult> finished = store.finished();

  std::vector<SweepPoint> points;
  for (SweepPoint& p : expand_sweep(spec))
    if (p.index % options.shard_count == options.shard_index) points.push_back(std::move(p));
  result.points.resize(points.size());
  // Each point's config is loaded once: for its key (the files it reads), then, unless the store has that key, to
  // simulate it.
  std::mutex mutex;
  std::size_t done = 0;
  tbb::task_arena arena(std::max(options.jobs, 1));
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, points.size(), [&](std::size_t i) {
      LoadedPoint loaded = load_point(spec, points[i], search, registries);
      if (const auto it = finished.find(loaded.key); it != finished.end()) {
        PointResult r = it->second;
        r.point = points[i];
        const std::lock_guard<std::mutex> lock(mutex);
        result.points[i] = std::move(r);
        ++done;
        return;
      }
      PointResult r =
          loaded.run ? run_point(points[i], *loaded.run, registries, options.jobs <= 1) : std::move(loaded.invalid);
      r.key = loaded.key;
      const std::lock_guard<std::mutex> lock(mutex);
      store.add(r);
      result.points[i] = std::move(r);
      ++done;
      if (options.on_point) options.on_point(result.points[i], done, points.size());
    });
  });
  write_csv(spec, result.points, result.results_csv);
  return result;
}

SweepResult merge_sweep(const SweepSpec& spec, const std::vector<fs::path>& shard_dirs, const fs::path& out_dir,
                        const ConfigSearchPath& search, const ModelRegistries& registries) {
  std::map<std::string, PointResult> rows;
  for (const fs::path& dir : shard_dirs) {
    std::error_code error;
    if (!fs::is_regular_file(dir / "sweep.sqlite", error))
      throw InputError({dir.string()}, "", "no sweep.sqlite in this folder", "pass the --out folders of the shards");
    Store shard(dir / "sweep.sqlite");
    for (auto& [key, row] : shard.finished()) rows.emplace(key, std::move(row));
  }
  SweepResult result;
  std::vector<int> missing;
  for (const SweepPoint& p : expand_sweep(spec)) {
    const auto it = rows.find(load_point(spec, p, search, registries).key);
    if (it == rows.end()) {
      missing.push_back(p.index);
      continue;
    }
    result.points.push_back(it->second);
    result.points.back().point = p;
  }
  if (!missing.empty()) {
    std::string list;
    for (std::size_t i = 0; i < missing.size() && i < 10; ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
    throw InputError({spec.file.string()}, "",
                     std::to_string(missing.size()) + " points are in no shard store (" + list +
                         (missing.size() > 10 ? ", ..." : "") + ")",
                     "run the shards they belong to (point % N), then merge again; shards run with --configs DIR "
                     "are merged with the same --configs (a point's key covers the config files it read)");
  }
  create_output_directory(out_dir, "--out");
  result.store = out_dir / "sweep.sqlite";
  result.results_csv = out_dir / "results.csv";
  Store store(result.store);
  for (const PointResult& r : result.points) store.add(r);
  write_csv(spec, result.points, result.results_csv);
  return result;
}

double objective_value(const SweepSpec& spec, const PointFigures& figures) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  switch (spec.objective) {
    case SweepObjective::energy_per_token:
      return figures.energy_per_token_j;
    case SweepObjective::mfu:
      return figures.mfu;
    case SweepObjective::cost_per_token:
      if (!spec.cost || !(figures.tokens_per_s > 0.0)) return kInfinity;
      return cost_usd_per_s(*spec.cost, spec.facility, static_cast<int>(figures.gpus), static_cast<int>(figures.nodes),
                            figures.mean_power_w) /
             figures.tokens_per_s;
    case SweepObjective::time_to_train:
      if (!spec.goal_tokens || !(figures.tokens_per_s > 0.0)) return kInfinity;
      return *spec.goal_tokens / figures.tokens_per_s;
    case SweepObjective::tokens_per_s:
      break;
  }
  return figures.tokens_per_s;
}

bool lower_is_better(SweepObjective objective) {
  return objective == SweepObjective::energy_per_token || objective == SweepObjective::cost_per_token ||
         objective == SweepObjective::time_to_train;
}

bool better_point(const SweepSpec& spec, const PointResult& a, const PointResult& b) {
  const double x = objective_value(spec, a.figures), y = objective_value(spec, b.figures);
  if (x != y) return lower_is_better(spec.objective) ? x < y : x > y;
  return a.point.index < b.point.index;
}

namespace {

/// A point whose GPUs wait for the host (HostLoad::binds).
bool host_bound(const PointFigures& f) { return HostLoad{0.0, f.host_launch_time_s}.binds(f.iteration_time_s); }

}  // namespace

void print_sweep_summary(std::ostream& out, const SweepSpec& spec, const SweepResult& result, int top) {
  std::map<PointStatus, int> counts;
  for (const PointResult& r : result.points) ++counts[r.status];
  int resumed = 0;
  for (const PointResult& r : result.points) resumed += r.resumed ? 1 : 0;
  out << "chopsim sweep: " << result.points.size() << " points: " << counts[PointStatus::ok] << " ok, "
      << counts[PointStatus::oom] << " out of memory, " << counts[PointStatus::invalid] << " invalid, "
      << counts[PointStatus::failed] << " failed (" << resumed << " from an earlier run)\n";
  std::vector<const PointResult*> ok;
  for (const PointResult& r : result.points)
    if (r.status == PointStatus::ok) ok.push_back(&r);
  auto describe = [](const PointResult& r) {
    std::string text;
    for (const auto& [key, value] : r.point.values) text += (text.empty() ? "" : " ") + key + "=" + value;
    return text;
  };
  // What the ranking prints: cost per million tokens and days to train read better than USD/token and seconds.
  const char* objective_name = "tokens/s";
  double shown_scale = 1.0;
  switch (spec.objective) {
    case SweepObjective::energy_per_token:
      objective_name = "J/token";
      break;
    case SweepObjective::mfu:
      objective_name = "MFU";
      break;
    case SweepObjective::cost_per_token:
      objective_name = "USD per million tokens";
      shown_scale = 1e6;
      break;
    case SweepObjective::time_to_train:
      objective_name = "days to train";
      shown_scale = 1.0 / 86400.0;
      break;
    case SweepObjective::tokens_per_s:
      break;
  }
  auto objective = [&](const PointResult& r) { return objective_value(spec, r.figures) * shown_scale; };
  auto better = [&](const PointResult* a, const PointResult* b) { return better_point(spec, *a, *b); };
  std::sort(ok.begin(), ok.end(), better);
  out << std::setprecision(4);
  if (!ok.empty()) {
    out << "best by " << objective_name << ":\n";
    for (int i = 0; i < top && i < static_cast<int>(ok.size()); ++i) {
      const PointResult& r = *ok[static_cast<std::size_t>(i)];
      out << "  " << i + 1 << ". " << describe(r) << ": " << r.figures.tokens_per_s << " tokens/s, MFU "
          << 100 * r.figures.mfu << " %, " << r.figures.energy_per_token_j << " J/token, "
          << r.figures.peak_bytes_per_gpu / (1u << 30) << " GiB/GPU";
      if (spec.objective == SweepObjective::cost_per_token || spec.objective == SweepObjective::time_to_train)
        out << ", " << objective(r) << " " << objective_name;
      if (host_bound(r.figures)) out << ", host-bound";
      out << "\n";
    }
    const auto bound = std::count_if(ok.begin(), ok.end(), [](const PointResult* r) { return host_bound(r->figures); });
    if (bound > 0)
      out << bound << " of " << ok.size()
          << " points are host-bound (the host's kernel launches take 90 % of the iteration or more: "
             "host_launch_time_s "
             "in results.csv)\n";
    // Pareto front: no other point has more tokens/s and less energy per token.
    std::vector<const PointResult*> front;
    for (const PointResult* a : ok) {
      bool dominated = false;
      for (const PointResult* b : ok)
        if (b != a && b->figures.tokens_per_s >= a->figures.tokens_per_s &&
            b->figures.energy_per_token_j <= a->figures.energy_per_token_j &&
            (b->figures.tokens_per_s > a->figures.tokens_per_s ||
             b->figures.energy_per_token_j < a->figures.energy_per_token_j))
          dominated = true;
      if (!dominated) front.push_back(a);
    }
    std::sort(front.begin(), front.end(), [](const PointResult* a, const PointResult* b) {
      return a->figures.tokens_per_s != b->figures.tokens_per_s ? a->figures.tokens_per_s > b->figures.tokens_per_s
                                                                : a->point.index < b->point.index;
    });
    out << "Pareto front, throughput vs energy per token (" << front.size() << " points):\n";
    for (const PointResult* r : front)
      out << "  " << describe(*r) << ": " << r->figures.tokens_per_s << " tokens/s, " << r->figures.energy_per_token_j
          << " J/token\n";
    out << "best " << objective_name << " by axis value:\n";
    for (const SweepAxis& axis : spec.axes) {
      // A zip group is one axis: its keys joined by '+', each step's values by '/'.
      std::string label;
      for (const std::string& key : axis.keys) label += (label.empty() ? "" : "+") + key;
      out << "  " << label << ":";
      for (const auto& values : axis.values) {
        const PointResult* best = nullptr;
        for (const PointResult* r : ok) {
          bool match = true;
          for (std::size_t k = 0; k < axis.keys.size(); ++k)
            for (const auto& [key, value] : r->point.values)
              if (key == axis.keys[k] && value != values[k]) match = false;
          if (match && (best == nullptr || better(r, best))) best = r;
        }
        std::string step;
        for (const std::string& v : values) step += (step.empty() ? "" : "/") + v;
        out << "  " << step << " -> ";
        if (best) {
          out << objective(*best);
        } else {
          out << "-";
        }
      }
      out << "\n";
    }
  }
  out << "wrote " << result.results_csv.string() << " and " << result.store.string() << "\n";
}

}  // namespace chopsim
