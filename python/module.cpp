// chopsim._chopsim: the C++ side of the Python API (python/chopsim/__init__.py wraps it). Strings in and out: a run's
// summary is summary.json's text, so Python sees exactly the figures the CLI writes. The GIL is released while a run
// or a sweep simulates.

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/version.hpp"
#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"
#include "chopsim/experiments/run.hpp"
#include "chopsim/experiments/study.hpp"
#include "chopsim/experiments/sweep.hpp"
#include "chopsim/report/report.hpp"

namespace py = pybind11;

namespace {

/// Python's configs= argument: empty (none) or a folder that holds configs (check_configs_folder).
void check_configs(const std::string& configs) {
  if (!configs.empty()) chopsim::check_configs_folder(configs, "configs=");
}

/// `config` (a file, or a shipped run config by name: "llama3-8b-fsdp") with `overrides` (key, YAML text), checked
/// as the CLI loads it; `caller` names the Python function in messages.
chopsim::RunSpec load_spec(const std::string& config, const std::vector<std::pair<std::string, std::string>>& overrides,
                           const std::string& configs, const chopsim::ModelRegistries& registries,
                           const std::string& caller) {
  std::vector<chopsim::ConfigOverride> list;
  for (const auto& [key, value] : overrides) list.push_back({key, value, caller + "(" + key + "=...)"});
  check_configs(configs);
  const std::filesystem::path file = chopsim::find_run_config(config, chopsim::default_search_path(config, configs));
  return chopsim::load_run_config(file, chopsim::default_search_path(file, configs), registries, list);
}

/// Runs `config` with `overrides` (key, YAML text); returns summary.json's text.
std::string run(const std::string& config, const std::vector<std::pair<std::string, std::string>>& overrides,
                const std::string& out, const std::string& configs, bool simulate_oom,
                const std::string& timeline_format) {
  chopsim::RunOptions options;
  if (const auto named = chopsim::timeline_format_named(timeline_format))
    options.timeline_format = *named;
  else
    throw chopsim::InputError(chopsim::SourceLocation{"chopsim.run", 0, 0}, "timeline_format",
                              "timeline_format expects 'json' or 'perfetto', found '" + timeline_format + "'",
                              "pass timeline_format=\"perfetto\" (timeline.pftrace) or \"json\" (timeline.json)");
  const auto registries = chopsim::ModelRegistries::with_builtins();
  const chopsim::RunSpec spec = load_spec(config, overrides, configs, registries, "chopsim.run");
  options.output_dir = out;
  options.simulate_when_out_of_memory = simulate_oom;
  options.observer_thread = true;  // as `chopsim run`: the observers on a second core
  chopsim::RunReport report;
  {
    const py::gil_scoped_release release;
    report = chopsim::run_simulation(spec, registries, options);
  }
  return chopsim::summary_json(spec, report);
}

/// Loads and checks `config` with `overrides` as `run` does, without simulating; returns summary.json's text of the
/// unsimulated run: its `run` section is what the config resolved to, `memory` the memory model's estimate.
std::string load_config(const std::string& config, const std::vector<std::pair<std::string, std::string>>& overrides,
                        const std::string& configs) {
  const auto registries = chopsim::ModelRegistries::with_builtins();
  const chopsim::RunSpec spec = load_spec(config, overrides, configs, registries, "chopsim.load_config");
  return chopsim::summary_json(spec, chopsim::unsimulated_report(spec));
}

/// Runs a sweep file into `out`; returns the results.csv path.
std::string sweep(const std::string& file, const std::string& out, int jobs, const std::string& configs) {
  const auto registries = chopsim::ModelRegistries::with_builtins();
  check_configs(configs);
  const chopsim::SweepSpec spec = chopsim::load_sweep(file);
  chopsim::SweepOptions options;
  options.out_dir = out;
  options.jobs = jobs;
  chopsim::SweepResult result;
  {
    const py::gil_scoped_release release;
    result = chopsim::run_sweep(spec, chopsim::default_search_path(spec.base, configs), registries, options);
  }
  return result.results_csv.string();
}

/// Runs a study file into `out`; returns the results.csv path.
std::string study(const std::string& file, const std::string& out, int jobs, const std::string& configs) {
  const auto registries = chopsim::ModelRegistries::with_builtins();
  check_configs(configs);
  const chopsim::StudySpec spec = chopsim::load_study(file);
  chopsim::StudyOptions options;
  options.out_dir = out;
  options.jobs = jobs;
  chopsim::StudyResult result;
  {
    const py::gil_scoped_release release;
    result = chopsim::run_study(spec, chopsim::default_search_path(spec.sweep.base, configs), registries, options);
  }
  return result.results_csv.string();
}

}  // namespace

PYBIND11_MODULE(_chopsim, m) {
  m.doc() = "chopsim's C++ core (use the chopsim package)";
  m.attr("__version__") = chopsim::kChopsimVersion;
  // Python exceptions with the CLI's messages: bad input (file, line, key, fix) is a ValueError.
  static py::exception<chopsim::InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<chopsim::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const chopsim::InputError& e) {
      input_error(e.what());
    } catch (const chopsim::UnknownNameError& e) {
      input_error(e.what());
    } catch (const chopsim::Error& e) {
      error(e.what());
    }
  });
  m.def("run", &run, py::arg("config"), py::arg("overrides"), py::arg("out"), py::arg("configs"),
        py::arg("simulate_oom"), py::arg("timeline_format"));
  m.def("load_config", &load_config, py::arg("config"), py::arg("overrides"), py::arg("configs"));
  m.def("sweep", &sweep, py::arg("file"), py::arg("out"), py::arg("jobs"), py::arg("configs"));
  m.def("study", &study, py::arg("file"), py::arg("out"), py::arg("jobs"), py::arg("configs"));
  m.def("report", [](const std::string& folder, const std::string& html) { chopsim::write_report(folder, html); });
}
