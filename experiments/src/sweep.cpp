// Sweep files: decoding, expansion into points, constraints (docs/sweeps.md).

#include "chopsim/experiments/sweep.hpp"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>

#include "chopsim/config/detail/yaml.hpp"
#include "cost_internal.hpp"

namespace chopsim {

namespace fs = std::filesystem;
using config_detail::flow_text;
using config_detail::keys_of;
using config_detail::Mapping;
using config_detail::Scope;

namespace {

/// The objectives by their names in a sweep file and on the command line (--objective).
const std::vector<std::pair<std::string, SweepObjective>>& objective_choices() {
  static const std::vector<std::pair<std::string, SweepObjective>> choices = {
      {"tokens_per_s", SweepObjective::tokens_per_s},
      {"energy_per_token", SweepObjective::energy_per_token},
      {"mfu", SweepObjective::mfu},
      {"cost_per_token", SweepObjective::cost_per_token},
      {"time_to_train", SweepObjective::time_to_train},
  };
  return choices;
}

/// The values of one axis key: a non-empty list of scalars or flow values.
std::vector<std::string> axis_values(Mapping& m, const std::string& key) {
  const YAML::Node list = m.value(key);
  if (!list.IsSequence() || list.size() == 0)
    m.fail(key, "an axis needs a non-empty list of values", "write " + key + ": [value1, value2, ...]");
  std::vector<std::string> values;
  for (const YAML::Node& v : list) {
    if (v.IsNull()) m.fail(key, "an empty value in the list", "remove it or give it a value");
    values.push_back(flow_text(v));
  }
  return values;
}

// ---- constraint expressions -----------------------------------------------------------------------------------------

/// A recursive-descent evaluator over a point's axis values (or, with `point` null, a syntax and name check).
class Expression {
 public:
  Expression(const SweepConstraint& c, const std::vector<std::string>& axis_keys, const SweepPoint* point)
      : c_(c), text_(c.text), keys_(axis_keys), point_(point) {}

  double evaluate() {
    const double value = either();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(text_.substr(pos_)) + "'");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(c_.where, "constraints", "constraint '" + c_.text + "': " + problem,
                     "write expressions of axis keys and integers with + - * / %, < <= > >= == !=, && || ! and "
                     "parentheses, e.g. tp * pp <= 32");
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool take(std::string_view token) {
    skip_space();
    if (text_.substr(pos_, token.size()) != token) return false;
    // "<" must not take the first character of "<="; "!" not of "!=".
    if ((token == "<" || token == ">" || token == "!" || token == "=") && pos_ + 1 < text_.size() &&
        text_[pos_ + 1] == '=')
      return false;
    pos_ += token.size();
    return true;
  }
  double either() {
    double value = both();
    while (take("||")) {
      const double right = both();
      value = (value != 0.0 || right != 0.0) ? 1.0 : 0.0;
    }
    return value;
  }
  double both() {
    double value = comparison();
    while (take("&&")) {
      const double right = comparison();
      value = (value != 0.0 && right != 0.0) ? 1.0 : 0.0;
    }
    return value;
  }
  double comparison() {
    const double left = sum();
    for (const std::string_view op : {"<=", ">=", "==", "!=", "<", ">"}) {
      if (!take(op)) continue;
      const double right = sum();
      if (op == "<=") return left <= right;
      if (op == ">=") return left >= right;
      if (op == "==") return left == right;
      if (op == "!=") return left != right;
      if (op == "<") return left < right;
      return left > right;
    }
    return left;
  }
  double sum() {
    double value = product();
    for (;;) {
      if (take("+")) {
        value += product();
      } else if (take("-")) {
        value -= product();
      } else {
        return value;
      }
    }
  }
  double product() {
    double value = unary();
    for (;;) {
      if (take("*")) {
        value *= unary();
      } else if (take("/")) {
        const double d = unary();
        value = d == 0.0 ? (point_ ? fail_value("division by zero") : 0.0) : value / d;
      } else if (take("%")) {
        const double d = unary();
        value = d == 0.0 ? (point_ ? fail_value("modulo by zero") : 0.0) : std::fmod(value, d);
      } else {
        return value;
      }
    }
  }
  double fail_value(const std::string& problem) const { fail(problem); }
  double unary() {
    if (take("-")) return -unary();
    if (take("!")) return unary() == 0.0 ? 1.0 : 0.0;
    return primary();
  }
  double primary() {
    skip_space();
    if (take("(")) {
      const double value = either();
      if (!take(")")) fail("a '(' without its ')'");
      return value;
    }
    if (pos_ >= text_.size()) fail("ends where a value is expected");
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      double value = 0.0;
      const auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
      if (ec != std::errc()) fail("a bad number");
      pos_ = static_cast<std::size_t>(end - text_.data());
      return value;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' || text_[pos_] == '.'))
        ++pos_;
      return name(std::string(text_.substr(start, pos_ - start)));
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }
  double name(const std::string& word) {
    std::string key;
    for (const std::string& k : keys_) {
      const std::string last = k.substr(k.rfind('.') + 1);
      if (k == word || last == word) {
        if (!key.empty() && key != k) fail("'" + word + "' could be " + key + " or " + k + "; write the whole key");
        key = k;
      }
    }
    if (key.empty()) fail("'" + word + "' is no axis of the sweep");
    if (point_ == nullptr) return 1.0;
    for (const auto& [k, value] : point_->values) {
      if (k != key) continue;
      if (value == "true") return 1.0;
      if (value == "false") return 0.0;
      double number = 0.0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
      if (ec != std::errc() || end != value.data() + value.size())
        fail("the value '" + value + "' of " + key + " is not a number");
      return number;
    }
    fail("'" + word + "' has no value at this point");
  }

  const SweepConstraint& c_;
  std::string_view text_;
  const std::vector<std::string>& keys_;
  const SweepPoint* point_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<std::string> axis_keys(const std::vector<SweepAxis>& axes) {
  std::vector<std::string> keys;
  for (const SweepAxis& axis : axes) keys.insert(keys.end(), axis.keys.begin(), axis.keys.end());
  return keys;
}

SweepSpec load_sweep(const fs::path& file) {
  const std::string shown = config_detail::display_path(file);
  const YAML::Node root = config_detail::load_yaml_file(file, "sweep file");
  Mapping top(root, Scope{shown, "", "", nullptr});
  SweepSpec spec;
  spec.file = file;
  std::string base;
  top.read("base", base, config_detail::Need::required);
  spec.base = base;
  if (spec.base.is_relative()) spec.base = file.parent_path() / spec.base;
  std::error_code error;
  if (!fs::is_regular_file(spec.base, error))
    top.fail("base", "no run config at " + spec.base.string(), "give the path of a run config, relative to " + shown);

  std::set<std::string> seen;
  auto add_key = [&](Mapping& m, const std::string& key) {
    if (!seen.insert(key).second) m.fail(key, "the key " + key + " is swept twice", "keep it on one axis");
    if (key.empty() || key.front() == '.' || key.back() == '.' || key.find("..") != std::string::npos)
      m.fail(key, "'" + key + "' is not a dotted key of the run config", "write e.g. training.micro_batch");
  };
  if (top.has("axes")) {
    Mapping axes = top.child("axes");
    for (const std::string& key : keys_of(top.value("axes"))) {
      add_key(axes, key);
      SweepAxis axis;
      axis.keys = {key};
      axis.where = axes.where(key);
      for (std::string& v : axis_values(axes, key)) axis.values.push_back({std::move(v)});
      spec.axes.push_back(std::move(axis));
    }
    axes.finish();
  }
  if (top.has("zip")) {
    const YAML::Node groups = top.value("zip");
    if (!groups.IsSequence())
      top.fail("zip", "zip is a list of mappings of lists advanced together",
               "write zip: [{parallelism.tp: [8, 4], parallelism.pp: [4, 8]}]");
    for (std::size_t g = 0; g < groups.size(); ++g) {
      Mapping group(groups[g], Scope{shown, "zip[" + std::to_string(g) + "]", "", nullptr});
      SweepAxis axis;
      axis.where = group.where();
      std::vector<std::vector<std::string>> columns;
      for (const std::string& key : keys_of(groups[g])) {
        add_key(group, key);
        axis.keys.push_back(key);
        columns.push_back(axis_values(group, key));
        if (columns.back().size() != columns.front().size())
          group.fail(key,
                     "zipped lists must be as long as each other: " + key + " has " +
                         std::to_string(columns.back().size()) + " values, " + axis.keys.front() + " " +
                         std::to_string(columns.front().size()),
                     "give every key of the group the same number of values");
      }
      group.finish();
      if (columns.empty()) top.fail("zip", "an empty zip group", "remove it or give it keys");
      for (std::size_t step = 0; step < columns.front().size(); ++step) {
        std::vector<std::string> row;
        for (const auto& column : columns) row.push_back(column[step]);
        axis.values.push_back(std::move(row));
      }
      spec.axes.push_back(std::move(axis));
    }
  }
  if (top.has("set")) {
    Mapping fixed = top.child("set");
    for (const std::string& key : keys_of(top.value("set"))) {
      add_key(fixed, key);
      const YAML::Node value = fixed.value(key);
      // A null (`null`, `~`) is passed on: it unsets a key whose absence means something (for example
      // training.moe_capacity_factor: dropless), and the run's decoding refuses it, at this line, where a key needs
      // a value.
      if (!value.IsDefined()) fixed.fail(key, "no value", "give " + key + " a value");
      spec.fixed.push_back({key, flow_text(value), fixed.where(key).to_string() + " (set " + key + ")"});
    }
    fixed.finish();
  }
  if (spec.axes.empty()) top.fail("axes", "the sweep has no axis", "add axes: {training.micro_batch: [1, 2, 4]}");
  if (top.has("dp")) {
    std::string dp;
    top.read("dp", dp);
    if (dp != "auto")
      top.fail("dp", "dp: '" + dp + "'; the only value is auto", "write dp: auto, or sweep parallelism.dp");
    if (seen.count("parallelism.dp")) top.fail("dp", "dp: auto and an axis parallelism.dp", "keep one of them");
    spec.auto_dp = true;
  }
  if (top.has("constraints")) {
    const YAML::Node list = top.value("constraints");
    if (!list.IsSequence())
      top.fail("constraints", "constraints is a list of expressions", "write [\"tp * pp <= 32\"]");
    const std::vector<std::string> keys = axis_keys(spec.axes);
    for (const YAML::Node& item : list) {
      if (!item.IsScalar()) top.fail("constraints", "a constraint is one expression (text)", "quote it");
      SweepConstraint c{item.Scalar(), config_detail::location_of(item, shown)};
      (void)Expression(c, keys, nullptr).evaluate();  // syntax and names, before anything runs
      spec.constraints.push_back(std::move(c));
    }
  }
  if (top.read_choice<SweepObjective>("objective", spec.objective, objective_choices()))
    spec.objective_where = top.where("objective");
  if (top.has("cost")) {
    Mapping cost = top.child("cost");
    GpuCost gpu;
    config_detail::decode_gpu_cost(cost, gpu);
    if (!gpu.gpu_hour_usd && !gpu.capex_usd_per_gpu)
      top.fail("cost", "cost: has neither gpu_hour_usd nor capex_usd_per_gpu",
               "give a rental price (gpu_hour_usd: 2.5) or a purchase price (capex_usd_per_gpu: 30000)");
    spec.cost = gpu;
  }
  if (top.has("facility")) {
    Mapping facility = top.child("facility");
    config_detail::decode_facility(facility, spec.facility);
  }
  if (top.has("goal_tokens")) {
    double tokens = 0.0;
    top.read("goal_tokens", tokens, 1.0, config_detail::kPositiveReal, "tokens");
    spec.goal_tokens = tokens;
  }
  top.finish();
  return spec;
}

std::vector<std::string> sweep_objective_names() {
  std::vector<std::string> names;
  for (const auto& choice : objective_choices()) names.push_back(choice.first);
  return names;
}

void choose_objective(SweepSpec& spec, const std::string& name, const SourceLocation& where) {
  std::string names;
  for (const auto& [text, objective] : objective_choices()) {
    if (name == text) {
      spec.objective = objective;
      spec.objective_where = where;
      return;
    }
    names += (names.empty() ? "" : ", ") + text;
  }
  throw InputError(where, "objective", "unknown objective '" + name + "'", "use one of " + names);
}

void check_objective_inputs(const SweepSpec& spec) {
  const SourceLocation where =
      spec.objective_where.file.empty() ? SourceLocation{spec.file.string()} : spec.objective_where;
  if (spec.objective == SweepObjective::cost_per_token && !spec.cost)
    throw InputError(where, "objective", "cost_per_token needs a GPU price, and the sweep gives none",
                     "add to " + spec.file.string() +
                         " cost: {gpu_hour_usd: 2.5} (rented) or cost: {capex_usd_per_gpu: 30000} with facility: "
                         "{pue: 1.3, electricity_usd_per_kwh: 0.1} (owned)");
  if (spec.objective == SweepObjective::time_to_train && !spec.goal_tokens)
    throw InputError(where, "objective", "time_to_train needs the tokens to train, and the sweep gives none",
                     "add to " + spec.file.string() + " goal_tokens: 15e12");
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  std::size_t total = 1;
  for (const SweepAxis& axis : spec.axes) total *= axis.values.size();
  std::vector<SweepPoint> points;
  points.reserve(total);
  std::vector<std::size_t> step(spec.axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    SweepPoint p;
    p.index = static_cast<int>(n);
    p.overrides = spec.fixed;
    // Mixed radix, the last axis fastest.
    std::size_t rest = n;
    for (std::size_t a = spec.axes.size(); a-- > 0;) {
      step[a] = rest % spec.axes[a].values.size();
      rest /= spec.axes[a].values.size();
    }
    for (std::size_t a = 0; a < spec.axes.size(); ++a) {
      const SweepAxis& axis = spec.axes[a];
      for (std::size_t k = 0; k < axis.keys.size(); ++k) {
        const std::string& value = axis.values[step[a]][k];
        p.values.emplace_back(axis.keys[k], value);
        p.overrides.push_back({axis.keys[k], value, axis.where.to_string() + " (axis " + axis.keys[k] + ")"});
      }
    }
    if (spec.auto_dp) p.overrides.push_back({"parallelism.dp", "auto", spec.file.string() + " (dp: auto)"});
    points.push_back(std::move(p));
  }
  return points;
}

bool meets_constraint(const SweepConstraint& constraint, const SweepPoint& point) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : point.values) keys.push_back(key);
  return Expression(constraint, keys, &point).evaluate() != 0.0;
}

const char* to_string(PointStatus status) {
  switch (status) {
    case PointStatus::ok:
      return "ok";
    case PointStatus::oom:
      return "oom";
    case PointStatus::invalid:
      return "invalid";
    case PointStatus::failed:
      break;
  }
  return "failed";
}

}  // namespace chopsim
