#include <exception>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "chopsim/calibration/profile.hpp"
#include "chopsim/common/atomic_output.hpp"
#include "chopsim/common/kernel_class.hpp"
#include "chopsim/common/units.hpp"
#include "chopsim/experiments/power_fit.hpp"
#include "cli.hpp"
#include "progress.hpp"

namespace chopsim::cli {

namespace {

double positive_number(const Arguments& args, std::string_view name, double fallback) {
  const auto value = args.option(name);
  if (!value) return fallback;
  try {
    std::size_t used = 0;
    const double number = std::stod(*value, &used);
    if (used == value->size() && number >= 0.0) return number;
  } catch (const std::exception&) {
  }
  throw argument_error(std::string(name) + " expects a non-negative number, found '" + *value + "'",
                       "write e.g. " + std::string(name) + " 10");
}

}  // namespace

int command_calibrate(const std::vector<std::string>& raw) {
  const Arguments args(raw, kCalibrateOptions);
  if (args.positional().empty())
    throw argument_error("calibrate needs at least one INPUT (kernel store, measurement table or trace)",
                         "write chopsim calibrate store.h5 --hardware H100-SXM5-80GB -o profile.yaml");
  CalibrateOptions options;
  for (const auto& input : args.positional()) options.inputs.emplace_back(input);
  const auto hardware = args.option("--hardware");
  if (!hardware)
    throw argument_error("calibrate needs --hardware NAME: the GPU the data was measured on",
                         "write e.g. --hardware H100-SXM5-80GB (a name under configs/hardware or a YAML path)");
  options.hardware = *hardware;
  if (const auto configs = configs_option(args)) options.configs_dir = *configs;
  if (const auto out = args.option("--out")) options.output = *out;
  if (const auto out = args.option("-o")) options.output = *out;
  if (options.output.empty())
    throw argument_error("calibrate needs -o PROFILE.yaml", "write e.g. -o calibration/profiles/h100.yaml");
  if (const auto report = args.option("--report")) options.report = *report;
  if (args.option("--clock-mhz") == std::optional<std::string>("held")) {
    options.held_clock = true;
  } else {
    try {
      options.clock_hz = positive_number(args, "--clock-mhz", 0.0) * units::kMega;
    } catch (const InputError&) {
      throw argument_error("--clock-mhz expects a clock in MHz or 'held', found '" + *args.option("--clock-mhz") + "'",
                           "write e.g. --clock-mhz 1410, or --clock-mhz held (the clock the power model holds)");
    }
  }
  options.min_kernel_s = positive_number(args, "--min-kernel-us", 10.0) * units::kMicrosecond;
  options.max_gap_s = positive_number(args, "--max-gap-us", 100.0) * units::kMicrosecond;
  if (const auto n = args.positive_int("--gpus-per-node")) options.gpus_per_node = *n;
  if (const auto classes = args.option("--keep-asymptote")) {
    std::stringstream list(*classes);
    for (std::string name; std::getline(list, name, ',');) {
      bool known = false;
      for (const KernelClass c : {KernelClass::gemm, KernelClass::attention})
        if (name == kernel_class_name(c)) {
          options.keep_asymptote.insert(c);
          known = true;
        }
      if (!known)
        throw argument_error("--keep-asymptote: '" + name + "' is not a compute kernel class (gemm, attention)",
                             "write e.g. --keep-asymptote gemm");
    }
  }
  if (const auto links = args.option("--node-links")) {
    if (*links == "nvswitch")
      options.node_links = NodeLinks::nvswitch;
    else if (*links == "xgmi_mesh")
      options.node_links = NodeLinks::xgmi_mesh;
    else
      throw argument_error("--node-links expects nvswitch or xgmi_mesh, found '" + *links + "'",
                           "write --node-links nvswitch (NVIDIA HGX/DGX) or xgmi_mesh (AMD MI300X)");
  }

  // --power-runs: read (and checked) before the inputs, fitted once the profile's other values are.
  std::optional<PowerFitRuns> power_runs;
  if (const auto file = args.option("--power-runs")) {
    power_runs = load_power_fit_runs(*file);
    // Never overwrite an input: the runs file and its run configs are inputs too.
    std::vector<std::filesystem::path> read{power_runs->file};
    for (const PowerFitRun& run : power_runs->runs) read.push_back(run.config);
    check_output_file(options.output, "-o", read);
    if (options.report) check_output_file(*options.report, "--report", read);
  }
  if (power_runs) {
    options.refine = [&](CalibrationResult& result, const MeasurementSet& measurements) {
      if (!args.has_switch("--quiet"))
        std::cerr << "chopsim calibrate: fitting the power model to " << power_runs->runs.size() << " simulated runs\n";
      fit_power_to_runs(result, measurements, *power_runs, ModelRegistries::with_builtins(), options.output.string());
    };
  }

  Progress progress("chopsim calibrate", "inputs read", args.has_switch("--quiet"));
  options.on_input = [&](std::size_t done, std::size_t total, const std::filesystem::path& input) {
    progress.update(done, total, input.string());
  };
  const CalibrationResult result = run_calibration(options);
  std::size_t classes = 0;
  for (const auto& fit : result.kernels) classes += fit.in_profile && fit.path == ElementwisePath::fused ? 1 : 0;
  if (!args.has_switch("--quiet"))
    std::cerr << "chopsim calibrate: " << result.inputs.size() << " inputs, " << classes << " kernel classes, "
              << result.collectives.fits.size() << " collective groups"
              << (result.telemetry.gpus > 0 ? ", telemetry of " + std::to_string(result.telemetry.gpus) + " GPUs" : "")
              << "\n";
  std::cout << "wrote " << options.output.string() << "\n";
  if (options.report) std::cout << "wrote " << options.report->string() << "\n";
  return kExitOk;
}

}  // namespace chopsim::cli
