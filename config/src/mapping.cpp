// Mapping (chopsim/config/detail/yaml.hpp): a YAML mapping read key by key, each value checked against its rule
// (type, range, unit) where it is read, every key it did not read reported as unknown, and every error naming the
// file, line, key path and the fix.

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "chopsim/config/detail/yaml.hpp"

namespace chopsim::config_detail {

Mapping::Mapping(const YAML::Node& node, Scope scope) : node_(node), scope_(std::move(scope)) {
  if (!node_.IsMap()) {
    const std::string where_text = scope_.message_path.empty() ? "at the top of the file" : "here";
    throw InputError(location_of(node_, scope_.file), scope_.message_path,
                     "expected a mapping of 'key: value' lines " + where_text + ", found " + describe_value(node_),
                     "write one 'key: value' per line, indented under its parent (see docs/configs.md)");
  }
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar())
      throw InputError(location_of(key, scope_.file), scope_.message_path,
                       "a key must be plain text, found " + describe_value(key), "write keys as plain words");
    const std::string name = key.Scalar();
    if (auto found = entries_.find(name); found != entries_.end()) {
      const SourceLocation first = location_of(found->second.key, scope_.file);
      throw InputError(location_of(key, scope_.file), path(name),
                       "key '" + name + "' appears twice" +
                           (first.line > 0 ? " (first on line " + std::to_string(first.line) + ")" : ""),
                       "keep one of them");
    }
    entries_.emplace(name, Entry{key, it->second});
    keys_in_order_.push_back(name);
  }
}

bool Mapping::has(std::string_view key) {
  if (std::find(valid_.begin(), valid_.end(), key) == valid_.end()) valid_.emplace_back(key);
  return contains(key);
}

bool Mapping::contains(std::string_view key) const { return entries_.find(key) != entries_.end(); }

YAML::Node Mapping::value(std::string_view key) {
  if (!has(key)) return YAML::Node();
  return entries_.find(key)->second.value;
}

Scope Mapping::child_scope(std::string_view key) const {
  Scope child = scope_;
  child.message_path = path(key);
  child.record_path = scope_.record_path.empty() ? std::string(key) : scope_.record_path + "." + std::string(key);
  return child;
}

Mapping Mapping::child(std::string_view key) {
  const YAML::Node node = value(key);
  record(key);
  if (!node.IsMap())
    fail(key, "expected a mapping of 'key: value' lines, found " + describe_value(node),
         "indent the keys of '" + std::string(key) + "' under it, one per line, or write '{key: value, ...}'");
  return Mapping(node, child_scope(key));
}

void Mapping::record(std::string_view key) const {
  if (scope_.locations == nullptr) return;
  const std::string record_key =
      scope_.record_path.empty() ? std::string(key) : scope_.record_path + "." + std::string(key);
  (*scope_.locations)[record_key] = where(key);
}

namespace {
std::string leaf_example(std::string_view key, std::string_view sample) {
  return "'" + std::string(key) + ": " + std::string(sample) + "'";
}

/// The integer a scalar node holds when it is one within `rule`.
std::optional<int> integer_in(const YAML::Node& node, const IntRule& rule) {
  if (!node.IsScalar()) return std::nullopt;
  const std::string& text = node.Scalar();
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  long long parsed = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, parsed);
  if (ec != std::errc() || ptr != end || begin == end || parsed < rule.min || parsed > rule.max) return std::nullopt;
  return static_cast<int>(parsed);
}

/// Why `node` is not an integer within `rule`: what was expected and found, and the largest allowed value when it is
/// a whole number above it (e.g. a sequence length beyond 32-bit range).
std::string integer_problem(const YAML::Node& node, const IntRule& rule) {
  std::string problem = "expected " + std::string(rule.expected) + ", found " + describe_value(node);
  if (!node.IsScalar()) return problem;
  const std::string& text = node.Scalar();
  const char* begin = text.data() + (text.starts_with('+') ? 1 : 0);
  const char* end = text.data() + text.size();
  long long parsed = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, parsed);
  const bool digits_only = begin != end && ptr == end;
  if (digits_only && (ec == std::errc::result_out_of_range || (ec == std::errc() && parsed > rule.max)))
    problem += ", above the largest allowed value " + std::to_string(rule.max);
  return problem;
}
}  // namespace

bool Mapping::read(std::string_view key, int& out, const IntRule& rule, Need need) {
  if (!has(key)) {
    if (need == Need::required) fail_missing(key, rule.expected);
    return false;
  }
  record(key);
  const YAML::Node node = entries_.find(key)->second.value;
  const std::optional<int> value = integer_in(node, rule);
  if (!value)
    fail(key, integer_problem(node, rule),
         "write " + std::string(rule.expected) + ", e.g. " +
             leaf_example(key, std::to_string(std::max<long long>(rule.min, 1))));
  out = *value;
  return true;
}

bool Mapping::read(std::string_view key, std::vector<int>& out, const IntRule& rule, Need need) {
  const std::string expected = "a list, each entry " + std::string(rule.expected);
  if (!has(key)) {
    if (need == Need::required) fail_missing(key, expected);
    return false;
  }
  record(key);
  const YAML::Node node = entries_.find(key)->second.value;
  const std::string fix = "write " + expected + ", e.g. " + std::string(key) + ": [6, 6, 7, 5]";
  if (!node.IsSequence() || node.size() == 0)
    fail(key, "expected " + expected + ", found " + (node.IsSequence() ? "an empty list" : describe_value(node)), fix);
  std::vector<int> values;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::optional<int> value = integer_in(node[i], rule);
    if (!value) {
      const SourceLocation at = location_of(node[i], scope_.file);
      throw InputError(at.line > 0 ? at : where(key), path(key),
                       "entry " + std::to_string(i + 1) + ": " + integer_problem(node[i], rule), fix);
    }
    values.push_back(*value);
  }
  out = std::move(values);
  return true;
}

bool Mapping::read(std::string_view key, double& out, double scale, const RealRule& rule, std::string_view unit,
                   Need need) {
  std::string expected = rule.expected;
  if (!unit.empty()) expected += " (" + std::string(unit) + ")";
  if (!has(key)) {
    if (need == Need::required) fail_missing(key, expected);
    return false;
  }
  record(key);
  const YAML::Node node = entries_.find(key)->second.value;
  const std::string fix = "write " + expected + " for '" + path(key) + "'";
  if (!node.IsScalar()) fail(key, "expected " + expected + ", found " + describe_value(node), fix);
  const std::string text = node.Scalar();
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+') ++begin;
  double parsed = 0.0;
  const auto [ptr, ec] = std::from_chars(begin, end, parsed);
  if (ec != std::errc() || ptr != end || begin == end || !std::isfinite(parsed))
    fail(key, "expected " + expected + ", found " + describe_value(node), fix);
  const bool below = rule.min_open ? !(parsed > rule.min) : parsed < rule.min;
  const bool above = rule.max_open ? !(parsed < rule.max) : parsed > rule.max;
  if (below || above) fail(key, "expected " + expected + ", found " + describe_value(node), fix);
  out = parsed * scale;
  return true;
}

bool Mapping::read(std::string_view key, bool& out, Need need) {
  if (!has(key)) {
    if (need == Need::required) fail_missing(key, "true or false");
    return false;
  }
  record(key);
  const YAML::Node node = entries_.find(key)->second.value;
  bool parsed = false;
  if (!node.IsScalar() || !YAML::convert<bool>::decode(node, parsed))
    fail(key, "expected true or false, found " + describe_value(node),
         "write " + leaf_example(key, "true") + " or " + leaf_example(key, "false"));
  out = parsed;
  return true;
}

bool Mapping::read(std::string_view key, std::string& out, Need need) {
  if (!has(key)) {
    if (need == Need::required) fail_missing(key, "a name");
    return false;
  }
  record(key);
  const YAML::Node node = entries_.find(key)->second.value;
  if (!node.IsScalar() || node.Scalar().empty())
    fail(key, "expected a name (plain text), found " + describe_value(node), "write " + leaf_example(key, "NAME"));
  out = node.Scalar();
  return true;
}

void Mapping::require(std::string_view key, std::string_view expected) {
  if (!has(key)) fail_missing(key, expected);
}

void Mapping::finish() const {
  for (const auto& key : keys_in_order_) {
    if (std::find(valid_.begin(), valid_.end(), key) != valid_.end()) continue;
    const std::string in = scope_.message_path.empty() ? "at the top of the file" : "in '" + scope_.message_path + "'";
    const std::string suggestion = closest_match(key, valid_);
    throw InputError(location_of(entries_.find(key)->second.key, scope_.file), path(key),
                     "unknown key '" + key + "' " + in + "; valid keys: " + join(valid_),
                     suggestion.empty() ? "remove it or use one of the valid keys (docs/configs.md lists them all)"
                                        : "did you mean '" + suggestion + "'? Otherwise remove it");
  }
}

SourceLocation Mapping::where() const { return location_of(node_, scope_.file); }

SourceLocation Mapping::where(std::string_view key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return where();
  SourceLocation at = location_of(it->second.value, scope_.file);
  if (at.line == 0) at = location_of(it->second.key, scope_.file);
  return at;
}

std::string Mapping::path(std::string_view key) const {
  return scope_.message_path.empty() ? std::string(key) : scope_.message_path + "." + std::string(key);
}

void Mapping::fail(std::string_view key, const std::string& problem, const std::string& fix) const {
  throw InputError(where(key), path(key), problem, fix);
}

void Mapping::fail_choice(std::string_view key, const std::string& found, const std::vector<std::string>& names) const {
  const std::string suggestion = closest_match(found, names);
  fail(key, "expected one of " + join(names) + ", found '" + found + "'",
       suggestion.empty() ? "use one of: " + join(names) : "did you mean '" + suggestion + "'?");
}

void Mapping::fail_missing(std::string_view key, std::string_view expected) const {
  const std::string in = scope_.message_path.empty() ? "" : " in '" + scope_.message_path + "'";
  // A present key that nobody asked for and that looks like the missing one is probably a misspelling.
  std::vector<std::string> unclaimed;
  for (const auto& present : keys_in_order_)
    if (std::find(valid_.begin(), valid_.end(), present) == valid_.end()) unclaimed.push_back(present);
  // Only near-identical long words: short keys such as fp32/tf32 differ by one letter legitimately.
  const std::string typo = key.size() >= 5 ? closest_match(key, unclaimed) : std::string();
  const std::string hint = typo.empty() ? "" : " ('" + typo + "' is present: a misspelling?)";
  throw InputError(where(), path(key), "required key '" + std::string(key) + "' is missing" + in + hint,
                   "add '" + std::string(key) + ": ...' with " + std::string(expected));
}

}  // namespace chopsim::config_detail
