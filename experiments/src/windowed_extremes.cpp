#include "windowed_extremes.hpp"

#include <algorithm>
#include <cmath>

#include "chopsim/common/error.hpp"

namespace chopsim::detail {

namespace {
/// E at `time_s`, from the breakpoint at or before it.
double energy_from(const auto& point, double time_s) {
  return point.energy_j + point.power_w * (time_s - point.time_s);
}
}  // namespace

std::size_t WindowedExtremes::track(std::vector<double> offsets, std::vector<double> coefficients, double scale) {
  if (started_ || offsets.empty() || offsets.size() > kMaxOffsets || offsets.size() != coefficients.size())
    throw ModelError(
        "windowed extremes: track() needs 1 to 3 matching offsets and coefficients, before the first point");
  Functional f;
  f.count = offsets.size();
  std::copy(offsets.begin(), offsets.end(), f.offsets.begin());
  std::copy(coefficients.begin(), coefficients.end(), f.coefficients.begin());
  f.span = *std::max_element(offsets.begin(), offsets.end());
  f.scale = scale;
  span_ = std::max(span_, f.span);
  functionals_.push_back(f);
  return functionals_.size() - 1;
}

double WindowedExtremes::value(const Functional& f, double time_s) const {
  double sum = 0.0;
  for (std::size_t j = 0; j < f.count; ++j)
    sum += f.coefficients[j] * energy_from(point(f.at[j]), time_s - f.offsets[j]);
  return sum / f.scale;
}

double WindowedExtremes::slope(const Functional& f) const {
  double sum = 0.0;
  for (std::size_t j = 0; j < f.count; ++j) sum += f.coefficients[j] * point(f.at[j]).power_w;
  return sum;
}

template <std::size_t N>
void WindowedExtremes::sweep(Functional& f, double before_s) const {
  // Local copies (indices relative to the live points, each pointer's next instant) keep this loop, which runs for
  // every breakpoint and offset, in registers; N unrolls it.
  const Point* live = points_.data() + head_;
  const std::size_t size = end_index() - popped_;
  std::array<std::size_t, N> at{};
  std::array<double, N> upcoming{};
  const auto next_instant = [&](std::size_t j) {
    return at[j] + 1 < size ? live[at[j] + 1].time_s + f.offsets[j] : std::numeric_limits<double>::infinity();
  };
  for (std::size_t j = 0; j < N; ++j) {
    at[j] = f.at[j] - popped_;
    upcoming[j] = next_instant(j);
  }
  double rising = f.slope;
  for (;;) {
    double next = upcoming[0];
    for (std::size_t j = 1; j < N; ++j) next = std::min(next, upcoming[j]);
    if (!(next < before_s)) break;
    double after = 0.0;
    for (std::size_t j = 0; j < N; ++j) {
      while (upcoming[j] <= next) {
        ++at[j];
        upcoming[j] = next_instant(j);
      }
      after += f.coefficients[j] * live[at[j]].power_w;
    }
    if (rising > 0.0 && after <= 0.0) {  // F stops rising: a local maximum
      double sum = 0.0;
      for (std::size_t j = 0; j < N; ++j) sum += f.coefficients[j] * energy_from(live[at[j]], next - f.offsets[j]);
      f.best = std::max(f.best, sum / f.scale);
    }
    rising = after;
  }
  for (std::size_t j = 0; j < N; ++j) f.at[j] = at[j] + popped_;
  f.slope = rising;
}

void WindowedExtremes::evaluate_until(double time_s, bool inclusive) {
  // Instants before `before` are due. A breakpoint before time_s has its final power; a change at time_s itself may
  // still replace the last one's, so time_s is due only when the signal is closed.
  const double before = inclusive ? std::nextafter(time_s, std::numeric_limits<double>::infinity()) : time_s;
  const std::size_t end = end_index();
  for (Functional& f : functionals_) {
    if (!f.started) {
      // The first instant whose window lies within the signal: a candidate whatever the slope.
      const double first = start_s_ + f.span;
      if (!(first < before)) continue;
      for (std::size_t j = 0; j < f.count; ++j) {
        std::size_t k = popped_;
        while (k + 1 < end && point(k + 1).time_s + f.offsets[j] <= first) ++k;
        f.at[j] = k;
      }
      f.started = true;
      f.best = std::max(f.best, value(f, first));
      f.slope = slope(f);
    }
    switch (f.count) {
      case 1:
        sweep<1>(f, before);
        break;
      case 2:
        sweep<2>(f, before);
        break;
      default:
        sweep<3>(f, before);
        break;
    }
  }
}

void WindowedExtremes::add(double time_s, double power_w) {
  if (!started_) {
    started_ = true;
    start_s_ = time_s;
    points_.push_back({time_s, 0.0, power_w});
  } else {
    Point& last = points_.back();
    if (time_s == last.time_s) {
      // A second change at the same instant (a kernel ends and the next starts): E up to time_s is unchanged, and
      // no sweep has reached this breakpoint yet; only the power from here on changes.
      last.power_w = power_w;
      return;
    }
    const double energy = last.energy_j + last.power_w * (time_s - last.time_s);
    points_.push_back({time_s, energy, power_w});
  }
  // The functionals are swept in batches, and to the instants before time_s only: F's slope after time_s needs the
  // power from time_s on, and a change at the same instant may still replace it.
  if (++unevaluated_ < kBatch) return;
  unevaluated_ = 0;
  evaluate_until(time_s, false);
  // Keep the last point before time_s - span: every pointer's next breakpoint is at or after time_s - o_j (the sweep
  // stopped there), so the breakpoint it is at is that one or a later one.
  while (points_.size() - head_ > 1 && points_[head_ + 1].time_s < time_s - span_) {
    ++head_;
    ++popped_;
  }
  if (head_ > 1024 && head_ * 2 > points_.size()) {  // compact: amortised O(1) per point
    points_.erase(points_.begin(), points_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

void WindowedExtremes::finish(double end_s) {
  if (!started_) return;
  add(end_s, points_.back().power_w);
  evaluate_until(end_s, true);
  // The last instant is a candidate too, whatever the slope (the sweep has every pointer at or before it).
  for (Functional& f : functionals_)
    if (f.started) f.best = std::max(f.best, value(f, end_s));
}

double WindowedExtremes::extreme(std::size_t index) const {
  const double best = functionals_.at(index).best;
  return std::isfinite(best) ? best : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace chopsim::detail
