#pragma once
// The one way chopsim reads YAML (config library; run configs here, sweep, study, import and runs files in
// experiments/ through it): strict reading of YAML mappings with positions. Every read registers its key as valid
// for the mapping, so finish() can reject unknown keys and list the valid ones; every error is an InputError at
// file:line:column with the full key path and a fix. No YAML node reaches a model: decoders convert to typed specs.

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopsim/common/error.hpp"
#include "chopsim/common/text.hpp"
#include "chopsim/config/config.hpp"

namespace chopsim::config_detail {

/// Where each decoded key was written, by its path seen from the run ("parallelism.tp",
/// "model.heads"), so that cross-field rules can point at the line to change.
using KeyLocations = std::map<std::string, SourceLocation, std::less<>>;

/// Finds the location for a key path: the key itself, else its nearest recorded parent, else a fallback.
class Locator {
 public:
  explicit Locator(SourceLocation fallback, const KeyLocations* keys = nullptr)
      : fallback_(std::move(fallback)), keys_(keys) {}
  [[nodiscard]] SourceLocation operator()(std::string_view key) const;

 private:
  SourceLocation fallback_;
  const KeyLocations* keys_;
};

/// A path as shown in messages: relative to the working directory when that is shorter.
[[nodiscard]] std::string display_path(const std::filesystem::path& path);

/// 1-based location of a node (yaml-cpp marks are 0-based; a null mark gives line 0 = unknown).
[[nodiscard]] SourceLocation location_of(const YAML::Node& node, const std::string& file);

/// What a node holds, for "found ..." in messages: "'four'", "a list", "a mapping", "an empty value".
[[nodiscard]] std::string describe_value(const YAML::Node& node);

/// Reads and parses one YAML file holding one mapping. `what` names the file kind for messages
/// ("run config", "hardware file"). Throws InputError when the file is missing (saying where it looked),
/// unreadable, empty, has a syntax error (with its position) or holds several documents.
[[nodiscard]] YAML::Node load_yaml_file(const std::filesystem::path& path, std::string_view what);
/// A measured data file (YAML or JSON, such as ../shared/data's records and golden values): parsed as it is, without
/// the limits and checks of a config (data files can be large). InputError at the file's line for a malformed one,
/// with `fix` as the fix.
[[nodiscard]] YAML::Node load_data_file(const std::filesystem::path& path, std::string_view fix);

/// A copy of `root` (a run config read from `shown`) with every override's key set to its value parsed as YAML,
/// creating the mappings on its path. InputError naming the override's origin for a value that is not YAML, or a
/// path through something that is not a mapping (a component given by name).
[[nodiscard]] YAML::Node apply_overrides(const YAML::Node& root, const std::vector<ConfigOverride>& overrides,
                                         const std::string& shown);

/// Closest candidate within a small edit distance, or "" (for "did you mean ...").
[[nodiscard]] std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

enum class Need { optional, required };

/// A YAML value as one line of text (flow style), which YAML::Load reads back as the same value.
[[nodiscard]] std::string flow_text(const YAML::Node& node);
/// The keys of a mapping in file order (a Mapping over it has checked them for duplicates).
[[nodiscard]] std::vector<std::string> keys_of(const YAML::Node& node);

struct IntRule {
  long long min = std::numeric_limits<int>::min();
  long long max = std::numeric_limits<int>::max();
  const char* expected = "an integer";
};
inline constexpr IntRule kPositiveInt{1, std::numeric_limits<int>::max(), "a positive integer"};
inline constexpr IntRule kNonNegativeInt{0, std::numeric_limits<int>::max(), "an integer >= 0"};

struct RealRule {
  double min = -std::numeric_limits<double>::infinity();
  bool min_open = false;
  double max = std::numeric_limits<double>::infinity();
  bool max_open = false;
  const char* expected = "a number";
};
inline constexpr RealRule kPositiveReal{0.0, true, std::numeric_limits<double>::infinity(), false, "a number > 0"};
inline constexpr RealRule kNonNegativeReal{0.0, false, std::numeric_limits<double>::infinity(), false, "a number >= 0"};
/// (0, 1]: efficiencies.
inline constexpr RealRule kFraction{0.0, true, 1.0, false, "a fraction in (0, 1]"};
/// [0, 1): slowdowns and allowances.
inline constexpr RealRule kFractionBelowOne{0.0, false, 1.0, true, "a fraction in [0, 1)"};
/// >= 1: ratios such as oversubscription.
inline constexpr RealRule kAtLeastOne{1.0, false, std::numeric_limits<double>::infinity(), false, "a number >= 1"};

/// Where a mapping sits: the file it was read from, its key path for messages (relative to that file),
/// and its key path for KeyLocations (relative to the run).
struct Scope {
  std::string file;
  std::string message_path;  ///< "" at the top of a file
  std::string record_path;   ///< "" at the top of a run or of a file loaded on its own
  KeyLocations* locations = nullptr;
};

/// One YAML mapping being decoded.
class Mapping {
 public:
  /// Throws InputError when `node` is not a mapping, has a duplicated key or a non-scalar key.
  Mapping(const YAML::Node& node, Scope scope);

  /// True when `key` is present; registers it as a valid key of this mapping.
  bool has(std::string_view key);
  /// True when `key` is present, without registering it.
  [[nodiscard]] bool contains(std::string_view key) const;
  /// The value of `key` (registers it); an invalid node when absent.
  [[nodiscard]] YAML::Node value(std::string_view key);
  /// The child mapping under `key`; throws when it is not a mapping. Call only when has(key).
  [[nodiscard]] Mapping child(std::string_view key);

  /// Readers: return true when the key was present and `out` was set. A missing required key throws.
  bool read(std::string_view key, int& out, const IntRule& rule, Need need = Need::optional);
  /// A list of integers, each within `rule` (a flow `[6, 6, 7, 5]` or block sequence).
  bool read(std::string_view key, std::vector<int>& out, const IntRule& rule, Need need = Need::optional);
  /// `scale` converts the file's unit to SI (e.g. 1e12 for TFLOP/s); `unit` names the file's unit.
  bool read(std::string_view key, double& out, double scale, const RealRule& rule, std::string_view unit,
            Need need = Need::optional);
  bool read(std::string_view key, bool& out, Need need = Need::optional);
  bool read(std::string_view key, std::string& out, Need need = Need::optional);
  /// One of `choices` (by name).
  template <class T>
  bool read_choice(std::string_view key, T& out, const std::vector<std::pair<std::string, T>>& choices,
                   Need need = Need::optional) {
    std::string text;
    if (!read(key, text, need)) return false;
    for (const auto& [name, choice] : choices) {
      if (name == text) {
        out = choice;
        return true;
      }
    }
    std::vector<std::string> names;
    for (const auto& choice : choices) names.push_back(choice.first);
    fail_choice(key, text, names);
  }

  /// Throws when a required key is missing.
  void require(std::string_view key, std::string_view expected);
  /// Rejects every key no reader asked for, listing the valid keys. Call after all reads.
  void finish() const;

  [[nodiscard]] SourceLocation where() const;                      ///< of the mapping
  [[nodiscard]] SourceLocation where(std::string_view key) const;  ///< of the key's value (mapping if absent)
  [[nodiscard]] std::string path(std::string_view key) const;      ///< message path of a key
  [[nodiscard]] const Scope& scope() const { return scope_; }
  [[nodiscard]] Scope child_scope(std::string_view key) const;

  /// Throws InputError at the key (or at the mapping when the key is absent).
  [[noreturn]] void fail(std::string_view key, const std::string& problem, const std::string& fix) const;
  [[noreturn]] void fail_choice(std::string_view key, const std::string& found,
                                const std::vector<std::string>& names) const;

 private:
  void record(std::string_view key) const;
  [[noreturn]] void fail_missing(std::string_view key, std::string_view expected) const;

  YAML::Node node_;
  Scope scope_;
  struct Entry {
    YAML::Node key;
    YAML::Node value;
  };
  std::vector<std::string> keys_in_order_;  ///< keys present, in file order
  std::map<std::string, Entry, std::less<>> entries_;
  std::vector<std::string> valid_;  ///< keys asked for, in order asked
};

}  // namespace chopsim::config_detail
