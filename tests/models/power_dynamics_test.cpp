// A power domain driven by a scripted load: energy = integral of power, the steady temperature, clocks in range and
// on steps, the averaged power above the cap for at most the response time, thermal throttling that holds the
// slowdown temperature, a package cap shared by two dies, and the periodic control loop.

#include "chopsim/models/power_dynamics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "chopsim/common/error.hpp"
#include "power_test_support.hpp"

namespace chopsim {
namespace {

using namespace power_test;

// ---- a power domain under a scripted load --------------------------------------------------------------------

struct Script {
  double time_s;
  bool begin;
  KernelWork work;
};

/// Runs `script` (kernel begins/ends on die 0) through a domain; returns the domain for inspection.
std::unique_ptr<PowerDomain> run_script(const Models& m, const PowerDomainSettings& settings,
                                        const std::vector<Script>& script, double end_s, Collect& sink,
                                        const std::function<void(PowerDomain&, double)>& probe = {}) {
  auto domain = std::make_unique<PowerDomain>(*m.compute, *m.power, *m.thermal, *m.governor, settings, &sink, nullptr);
  domain->start(0.0);
  std::vector<PowerDomain::KernelHandle> running;
  double t = 0.0;
  for (const Script& s : script) {
    if (probe) probe(*domain, s.time_s);
    t = s.time_s;
    if (s.begin) {
      running.push_back(domain->kernel_begin(t, 0, s.work));
    } else {
      domain->kernel_end(t, 0, running.front());
      running.erase(running.begin());
    }
  }
  if (probe) probe(*domain, end_s);
  domain->finish(end_s);
  return domain;
}

PowerDomainSettings one_die(double cap_w, double inlet_c = 25.0, double initial_c = 40.0) {
  PowerDomainSettings s;
  s.cap_w = cap_w;
  s.ceiling_hz = 1.4e9;
  s.floor_hz = 0.21e9;
  s.dies.push_back({0, inlet_c, initial_c});
  return s;
}

TEST(PowerDomain, EnergyIsTheIntegralOfPower) {
  GovernorParams g;
  g.window_s = 0.01;
  const Models m = make_models(test_power(), {0.08, 100.0, 200.0}, g, "fixed");
  Collect sink;
  // 3 ms GEMM, 2 ms idle, 4 ms copy, 1 ms idle at the fixed 1.4 GHz: energy from the power model by hand.
  const std::vector<Script> script = {
      {0.0, true, gemm(3e-3)}, {3e-3, false, {}}, {5e-3, true, copy(4e-3)}, {9e-3, false, {}}};
  const auto domain = run_script(m, one_die(1e9), script, 10e-3, sink);
  auto die_power = [&](const KernelWork& w) {
    const KernelTiming t = m.compute->timing(w, 1.4e9);
    DieActivity a;
    a.busy = 1.0;
    a.tensor = w.kernel_class == KernelClass::gemm ? t.compute_utilization : 0.0;
    a.vector = w.kernel_class == KernelClass::gemm ? 0.0 : t.compute_utilization;
    a.hbm = t.memory_utilization;
    return m.power->power_w(a, 1.4e9, 40.0);
  };
  const double expected = die_power(gemm(3e-3)) * 3e-3 + 60.0 * 2e-3 + die_power(copy(4e-3)) * 4e-3 + 60.0 * 1e-3;
  EXPECT_NEAR(domain->energy_j(0), expected, 1e-12 * expected);
  // The telemetry integrates to the same energy.
  double from_samples = 0.0;
  for (std::size_t i = 0; i + 1 < sink.samples.size(); ++i)
    from_samples += sink.samples[i].power_w * (sink.samples[i + 1].time_s - sink.samples[i].time_s);
  EXPECT_NEAR(from_samples, expected, 1e-12 * expected);
  EXPECT_DOUBLE_EQ(sink.samples.back().time_s, 10e-3);
}

TEST(PowerDomain, SteadyTemperatureIsInletPlusPowerTimesResistance) {
  const Models m = make_models(test_power(), {0.08, 50.0, 200.0}, {}, "fixed");  // tau = 4 s
  Collect sink;
  const auto domain = run_script(m, one_die(1e9, 25.0, 25.0), {{0.0, true, gemm(100.0)}}, 0.0, sink);
  // One time constant later: 1 - 1/e of the way; after 30 time constants: the steady state.
  PowerDomain& d = *domain;
  const double p = d.power_w(0);
  d.advance_to(4.0);
  EXPECT_NEAR(d.temperature_c(0), 25.0 + p * 0.08 * (1.0 - std::exp(-1.0)), 1e-9);
  d.advance_to(120.0);
  EXPECT_NEAR(d.temperature_c(0), 25.0 + p * 0.08, 1e-9);
}

TEST(PowerDomain, SkippingASpanMovesTheTemperatureAsTheMeanPowerWould) {
  // A steady-state fold (engine.hpp, FoldPlan) leaves out `span` seconds of a load whose mean power is P: the RC
  // model's closed form at P, T(span) = T_inlet + P R + (T0 - T_inlet - P R) exp(-span / RC), and nothing else moves.
  const Models m = make_models(test_power(), {0.08, 50.0, 200.0}, {}, "fixed");  // tau = 4 s
  Collect sink;
  const auto domain = run_script(m, one_die(1e9, 25.0, 30.0), {{0.0, true, gemm(100.0)}}, 0.0, sink);
  PowerDomain& d = *domain;
  d.advance_to(1.0);
  const double before_c = d.temperature_c(0);
  const double energy = d.energy_j(0);
  const double mean_w = 400.0;
  d.skip_span(6.0, {mean_w});
  const double steady_c = 25.0 + mean_w * 0.08;
  EXPECT_NEAR(d.temperature_c(0), steady_c + (before_c - steady_c) * std::exp(-6.0 / 4.0), 1e-9);
  EXPECT_DOUBLE_EQ(d.time_s(), 1.0);
  EXPECT_DOUBLE_EQ(d.energy_j(0), energy);
  // Leakage follows the new temperature at the next decision (test_power has none: the power is unchanged).
  EXPECT_NEAR(d.power_w(0), sink.samples.back().power_w, 1e-9);
  EXPECT_THROW(d.skip_span(1.0, {}), ModelError);
}

TEST(PowerDomain, LockedClockGivesTheRooflineTime) {
  GovernorParams g;
  const Models m = make_models(test_power(), {0.08, 100.0, 200.0}, g, "firmware");
  PowerDomainSettings s = one_die(1e9);
  s.ceiling_hz = 0.7e9;  // a lock at half the max clock, under no binding cap
  PowerDomain d(*m.compute, *m.power, *m.thermal, *m.governor, s, nullptr, nullptr);
  d.start(0.0);
  const auto k = d.kernel_begin(0.0, 0, gemm(1e-3));
  EXPECT_DOUBLE_EQ(d.clock_hz(0), 0.7e9);
  // Compute-bound at half the clock: F / (peak * 0.7/1.4 * eta) = twice the 1 ms.
  EXPECT_NEAR(1.0 / d.kernel_rate(0, k), 2e-3, 1e-15);
  const auto c = d.kernel_begin(0.0, 0, copy(1e-3));
  // Two kernels share the die: each progresses at half its own rate; the copy keeps its memory-bound 1 ms.
  EXPECT_NEAR(1.0 / d.kernel_rate(0, c), 2.0 * 1e-3, 1e-15);
}

/// A random mix of compute- and memory-bound kernels with idle gaps, under a tight cap.
std::vector<Script> random_load(std::mt19937_64& rng, double duration_s) {
  std::uniform_real_distribution<double> length(20e-6, 8e-3), gap(0.0, 3e-3), kind(0.0, 1.0);
  std::vector<Script> script;
  double t = 0.0;
  while (t < duration_s) {
    const double l = length(rng);
    script.push_back({t, true, kind(rng) < 0.6 ? gemm(l) : copy(l)});
    t += l;  // the nominal length: the domain does not time kernels itself here
    script.push_back({t, false, {}});
    t += kind(rng) < 0.5 ? 0.0 : gap(rng);
  }
  return script;
}

TEST(PowerDomain, AveragedPowerExceedsTheCapForAtMostTheResponseTime) {
  GovernorParams g;
  g.window_s = 5e-3;
  g.response_s = 1e-3;
  g.clock_step_hz = 15e6;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    std::mt19937_64 rng(seed);
    const auto script = random_load(rng, 0.4);
    Collect sink;
    const double cap = 400.0;
    double over_since = -1.0, longest = 0.0;
    int checks = 0;
    // Probe the averaged power on a 10 µs grid between load changes (advance_to only integrates and takes the
    // governor's own timed decisions; it does not change what the domain does).
    double probed = 0.0;
    auto probe = [&](PowerDomain& d, double until) {
      for (; probed < until; probed += 1e-5) {
        d.advance_to(probed);
        ++checks;
        const bool over = d.filtered_power() > cap * (1.0 + 1e-9);
        if (over && over_since < 0.0) over_since = probed;
        if (!over) over_since = -1.0;
        if (over_since >= 0.0) longest = std::max(longest, probed - over_since);
        EXPECT_GE(d.clock_hz(0), 0.21e9);
        EXPECT_LE(d.clock_hz(0), 1.4e9);
      }
    };
    const auto domain = run_script(m, one_die(cap), script, script.back().time_s, sink, probe);
    EXPECT_GT(checks, 1000);
    EXPECT_LE(longest, g.response_s + 2e-5) << "seed " << seed;  // + two probe steps
    bool capped = false;
    for (const auto& s : sink.samples) {
      EXPECT_GE(s.clock_hz, 0.21e9);
      EXPECT_LE(s.clock_hz, 1.4e9);
      const bool on_grid = s.clock_hz == 1.4e9 || s.clock_hz == 0.21e9 || std::abs(std::fmod(s.clock_hz, 15e6)) < 1.0;
      EXPECT_TRUE(on_grid) << s.clock_hz;
      capped = capped || (s.flags & kThrottlePower) != 0;
    }
    EXPECT_TRUE(capped) << "the cap must bind in this test";
    // Bounded decisions: at most a few per load change, none while the load and clocks are steady.
    EXPECT_LE(domain->stats().decisions, 3 * script.size() + 10);
  }
}

TEST(PowerDomain, ImmediateGovernorNeverLetsTheAverageAboveTheCap) {
  GovernorParams g;
  g.window_s = 5e-3;
  g.response_s = 0.0;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  std::mt19937_64 rng(42);
  const auto script = random_load(rng, 0.2);
  Collect sink;
  double probed = 0.0, worst = 0.0;
  auto probe = [&](PowerDomain& d, double until) {
    for (; probed < until; probed += 1e-5) {
      d.advance_to(probed);
      worst = std::max(worst, d.filtered_power());
    }
  };
  (void)run_script(m, one_die(400.0), script, script.back().time_s, sink, probe);
  EXPECT_LE(worst, 400.0 * (1.0 + 1e-6));
  EXPECT_GT(worst, 390.0);  // and it does run up to it
}

TEST(PowerDomain, ThermalThrottlingHoldsTheSlowdownTemperature) {
  GovernorParams g;
  g.thermal_hysteresis_k = 2.0;
  const Models m = make_models(test_power(), {0.1, 20.0, 70.0}, g);  // tau 2 s; 600 W would reach 25 + 60 K
  Collect sink;
  PowerDomain d(*m.compute, *m.power, *m.thermal, *m.governor, one_die(1e9, 25.0, 40.0), &sink, nullptr);
  d.start(0.0);
  (void)d.kernel_begin(0.0, 0, gemm(1e3));
  double t = 0.0, max_t = 0.0;
  bool throttled = false;
  for (; t < 60.0; t += 0.01) {
    d.advance_to(t);
    max_t = std::max(max_t, d.temperature_c(0));
    throttled = throttled || (d.flags(0) & kThrottleThermal) != 0;
  }
  EXPECT_TRUE(throttled);
  EXPECT_LE(max_t, 70.0 + 1e-6);
  // Held in the hysteresis band under the slowdown point (the clock steps make it settle a little below).
  EXPECT_GE(d.temperature_c(0), 70.0 - g.thermal_hysteresis_k);
  EXPECT_LT(d.clock_hz(0), 1.4e9);
  EXPECT_LE(d.power_w(0), m.thermal->power_for_steady_w(25.0, 70.0) + 1e-9);
}

TEST(PowerDomain, TwoDiesShareThePackageCap) {
  GovernorParams g;
  g.window_s = 1e-3;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  PowerDomainSettings s = one_die(700.0);
  s.dies.push_back({1, 25.0, 40.0});
  PowerDomain d(*m.compute, *m.power, *m.thermal, *m.governor, s, nullptr, nullptr);
  d.start(0.0);
  (void)d.kernel_begin(0.0, 0, gemm(1.0));
  (void)d.kernel_begin(0.0, 1, gemm(1.0));
  d.advance_to(0.1);
  EXPECT_LE(d.power_w(0) + d.power_w(1), 700.0 + 1e-9);
  EXPECT_EQ(d.clock_hz(0), d.clock_hz(1));
  // One die alone may use what the other leaves: its clock is higher than when both run.
  PowerDomain single(*m.compute, *m.power, *m.thermal, *m.governor, s, nullptr, nullptr);
  single.start(0.0);
  (void)single.kernel_begin(0.0, 0, gemm(1.0));
  single.advance_to(0.1);
  EXPECT_GT(single.clock_hz(0), d.clock_hz(0));
  EXPECT_LE(single.power_w(0) + single.power_w(1), 700.0 + 1e-9);
}

// ---- a periodic control loop (GovernorParams::control_period_s) ------------------------------------------------

/// 1 ms GEMMs and 1 ms copies back to back for `duration_s`.
std::vector<Script> alternating_load(double duration_s) {
  std::vector<Script> script;
  int i = 0;
  for (double t = 0.0; t < duration_s - 1e-9; t += 1e-3, ++i) {
    script.push_back({t, true, i % 2 == 0 ? gemm(1e-3) : copy(1e-3)});
    script.push_back({t + 1e-3, false, {}});
  }
  return script;
}

TEST(PowerDomain, PeriodicControlChangesClocksOnlyAtItsPeriods) {
  GovernorParams g;
  g.window_s = 10e-3;
  g.control_period_s = 10e-3;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  Collect sink;
  const auto script = alternating_load(0.5);
  const auto domain = run_script(m, one_die(400.0), script, 0.5, sink);
  int changes = 0;
  for (std::size_t i = 1; i < sink.samples.size(); ++i) {
    if (sink.samples[i].clock_hz == sink.samples[i - 1].clock_hz) continue;
    ++changes;
    const double periods = sink.samples[i].time_s / g.control_period_s;
    EXPECT_NEAR(periods, std::round(periods), 1e-6) << "clock changed at " << sink.samples[i].time_s << " s";
  }
  EXPECT_GT(changes, 3) << "the cap must bind and the clock move in this test";
  // Decisions: one per load change plus one per period, not more.
  EXPECT_LE(domain->stats().decisions, script.size() + 0.5 / g.control_period_s + 3);
}

TEST(PowerDomain, PeriodicControlHoldsTheAverageAtTheCapWithOneClockForTheMix) {
  GovernorParams g;
  g.window_s = 10e-3;
  g.control_period_s = 10e-3;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  Collect sink;
  const double cap = 400.0;
  const auto domain = run_script(m, one_die(cap), alternating_load(1.0), 1.0, sink);
  // Mean power over the second half, from the telemetry: at the cap within the clock step's resolution.
  double energy = 0.0, gemm_peak = 0.0, copy_low = 1e9;
  for (std::size_t i = 0; i + 1 < sink.samples.size(); ++i) {
    const auto& s = sink.samples[i];
    const double from = std::max(s.time_s, 0.5), to = sink.samples[i + 1].time_s;
    if (to > from) energy += s.power_w * (to - from);
    if (s.time_s >= 0.5 && sink.samples[i + 1].time_s > s.time_s) {
      // Odd milliseconds hold copies, even ones GEMMs (alternating_load).
      const bool in_gemm = static_cast<long>(std::floor(s.time_s * 1e3 + 1e-6)) % 2 == 0;
      (in_gemm ? gemm_peak : copy_low) = in_gemm ? std::max(gemm_peak, s.power_w) : std::min(copy_low, s.power_w);
    }
  }
  EXPECT_NEAR(energy / 0.5, cap, 0.03 * cap);
  // One clock for both kernels of a period: the GEMMs draw more than the cap, the copies less (a per-kernel governor
  // would hold every GEMM at the cap itself).
  EXPECT_GT(gemm_peak, cap * 1.05);
  EXPECT_LT(copy_low, cap * 0.95);
}

TEST(PowerDomain, PeriodicControlRunsAnUncappedLoadAtTheCeiling) {
  GovernorParams g;
  g.control_period_s = 10e-3;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  Collect sink;
  (void)run_script(m, one_die(1e4), alternating_load(0.2), 0.2, sink);
  for (const auto& s : sink.samples) {
    EXPECT_EQ(s.clock_hz, 1.4e9);
    EXPECT_EQ(s.flags, 0);
  }
}

TEST(PowerDomain, PeriodicControlSleepsThroughASteadyLoad) {
  // One 100 s GEMM under a binding cap: the loop settles on the highest clock within the cap and sleeps until the
  // load changes, so the decisions do not grow with the kernel's length (10,000 periods).
  GovernorParams g;
  g.window_s = 10e-3;
  g.control_period_s = 10e-3;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  Collect sink;
  const double cap = 400.0;
  const auto domain = run_script(m, one_die(cap), {{0.0, true, gemm(100.0)}, {100.0, false, {}}}, 100.0, sink);
  EXPECT_LE(domain->stats().decisions, 20u);
  EXPECT_LE(sink.samples.size(), 20u);
  // Settled within the cap, at the highest clock step that holds it.
  const GpuStateSample& settled = sink.samples[sink.samples.size() - 2];
  EXPECT_LE(settled.power_w, cap);
  EXPECT_LT(settled.clock_hz, 1.4e9);
  EXPECT_GT(domain->energy_j(0) / 100.0, 0.95 * cap);
}

TEST(Governor, ControlPeriodBelowTenMicrosecondsIsRejected) {
  GovernorParams g;
  g.control_period_s = 1e-6;
  EXPECT_THROW((void)make_models(test_power(), {0.08, 100.0, 500.0}, g), ModelError);
  g.control_period_s = -1.0;
  EXPECT_THROW((void)make_models(test_power(), {0.08, 100.0, 500.0}, g), ModelError);
}

TEST(PowerDomain, ChangesAtOneInstantAreOneDecisionWhateverIsAskedBetween) {
  // 30 ms GEMMs and copies back to back under a binding cap: within each kernel the loop settles and sleeps, so at
  // every switch a decision begins a control period. Asking for the clock between the end of one kernel and the
  // start of the next (as an engine may) takes a decision for the idle instant in between; the outcome must be the
  // one decision for the instant's final load, sample for sample, and without asking there is one decision less per
  // switch.
  GovernorParams g;
  g.window_s = 10e-3;
  g.control_period_s = 5e-3;
  const Models m = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  std::vector<Script> script;
  for (int i = 0; i < 40; ++i) {
    // Exactly the same time for an end and the next begin.
    script.push_back({i * 30e-3, true, i % 2 == 0 ? gemm(30e-3) : copy(30e-3)});
    script.push_back({(i + 1) * 30e-3, false, {}});
  }
  std::sort(script.begin(), script.end(),
            [](const Script& a, const Script& b) { return a.time_s != b.time_s ? a.time_s < b.time_s : !a.begin; });
  Collect lazy_sink, asked_sink;
  const auto lazy = run_script(m, one_die(400.0), script, 1.2, lazy_sink);
  const auto asked = run_script(m, one_die(400.0), script, 1.2, asked_sink,
                                [](PowerDomain& domain, double) { (void)domain.clock_hz(0); });
  // The state an instant ends in: the last sample at each time.
  auto last_per_instant = [](const std::vector<GpuStateSample>& samples) {
    std::vector<GpuStateSample> out;
    for (const GpuStateSample& s : samples) {
      if (!out.empty() && out.back().time_s == s.time_s) out.pop_back();
      out.push_back(s);
    }
    return out;
  };
  const auto a = last_per_instant(lazy_sink.samples), b = last_per_instant(asked_sink.samples);
  ASSERT_EQ(a.size(), b.size());
  int capped = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].time_s, b[i].time_s) << i;
    EXPECT_EQ(a[i].clock_hz, b[i].clock_hz) << "at " << a[i].time_s << " s";
    EXPECT_EQ(a[i].power_w, b[i].power_w) << "at " << a[i].time_s << " s";
    capped += a[i].clock_hz < 1.4e9 ? 1 : 0;
  }
  EXPECT_GT(capped, 10) << "the cap must bind in this test";
  EXPECT_EQ(lazy->energy_j(0), asked->energy_j(0));
  EXPECT_EQ(lazy->temperature_c(0), asked->temperature_c(0));
  // One decision less per switch (39), except where a switch falls on a period boundary: there the timed decision
  // takes the changes either way.
  EXPECT_LE(lazy->stats().decisions + 30, asked->stats().decisions);
  EXPECT_GE(lazy->stats().decisions + 39, asked->stats().decisions);
}

TEST(PowerDomain, TheGovernorHoldsTheCapForTheSlowestChip) {
  // A domain governed for a chip with 1.2x the dynamic power (the job's slowest) settles on the clock a domain of that
  // chip settles on, and while the cap binds reports that chip's power (the typical chip races and waits at the cap).
  GovernorParams g;
  g.window_s = 10e-3;
  g.control_period_s = 10e-3;
  const double cap = 400.0;
  const std::vector<Script> script{{0.0, true, gemm(20.0)}, {20.0, false, {}}};
  PowerParams slow_chip = test_power();
  slow_chip.dynamic_w *= 1.2;
  const Models typical = make_models(test_power(), {0.08, 100.0, 500.0}, g);
  const Models slowest = make_models(slow_chip, {0.08, 100.0, 500.0}, g);
  PowerDomainSettings governed = one_die(cap);
  governed.governed_dynamic_scale = 1.2;
  Collect alone, paced, slow;
  (void)run_script(typical, one_die(cap), script, 20.0, alone);
  const auto domain = run_script(typical, governed, script, 20.0, paced);
  (void)run_script(slowest, one_die(cap), script, 20.0, slow);
  const auto settled = [](const Collect& c) { return c.samples[c.samples.size() - 2]; };
  EXPECT_LT(settled(slow).clock_hz, settled(alone).clock_hz) << "the cap must bind harder on the slower chip";
  EXPECT_EQ(settled(paced).clock_hz, settled(slow).clock_hz);
  EXPECT_NE(settled(paced).flags & kThrottlePower, 0);
  EXPECT_NEAR(settled(paced).power_w, settled(slow).power_w, 1e-9 * cap);
  EXPECT_NEAR(settled(paced).filtered_power_w, settled(slow).filtered_power_w, 1e-9 * cap);
  // Over the 20 s, the average power is the cap's (within the burst before the loop settles).
  EXPECT_NEAR(domain->energy_j(0) / 20.0, cap, 0.02 * cap);

  // Uncapped (a cap far above the load): the common clock is the ceiling and the typical chip draws its own power.
  PowerDomainSettings uncapped = one_die(1e4);
  uncapped.governed_dynamic_scale = 1.2;
  Collect own, paced_uncapped;
  const auto a = run_script(typical, one_die(1e4), script, 20.0, own);
  const auto b = run_script(typical, uncapped, script, 20.0, paced_uncapped);
  EXPECT_EQ(settled(paced_uncapped).clock_hz, 1.4e9);
  EXPECT_EQ(settled(paced_uncapped).flags, 0);
  EXPECT_EQ(settled(paced_uncapped).power_w, settled(own).power_w);
  EXPECT_EQ(b->energy_j(0), a->energy_j(0));
}

}  // namespace
}  // namespace chopsim
