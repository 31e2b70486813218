#include "cli.hpp"

#include <algorithm>

#include "chopsim/config/config.hpp"
#include "chopsim/config/registries.hpp"

namespace chopsim::cli {

InputError argument_error(const std::string& problem, const std::string& fix) {
  return InputError(SourceLocation{"command line", 0, 0}, "", problem, fix);
}

void check_engine_name(const ModelRegistries& registries, const std::string& name) {
  if (registries.engine.contains(name)) return;
  std::string valid;
  for (const std::string& engine : registries.engine.names()) valid += (valid.empty() ? "" : ", ") + engine;
  throw argument_error("--engine " + name + " is not an engine", "use one of: " + valid);
}

TimelineFormat timeline_format_option(const Arguments& args) {
  const auto format = args.option("--timeline-format");
  if (!format) return TimelineFormat::json;
  if (const auto named = timeline_format_named(*format)) return *named;
  throw argument_error("--timeline-format expects json or perfetto, found '" + *format + "'",
                       "write --timeline-format perfetto (timeline.pftrace) or json (timeline.json, the default)");
}

std::optional<std::filesystem::path> configs_option(const Arguments& args) {
  const auto given = args.option("--configs");
  if (!given) return std::nullopt;
  check_configs_folder(*given, "--configs");
  return std::filesystem::path(*given);
}

namespace {
bool contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string valid_flags(std::span<const Option> options) {
  std::string text;
  for (const auto& o : options)
    text += (text.empty() ? "" : ", ") + std::string(o.name) + (o.value == Value::none ? "" : " VALUE");
  return text.empty() ? "this command takes no options" : "valid options: " + text;
}
}  // namespace

Arguments::Arguments(const std::vector<std::string>& args, std::span<const Option> options) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() > 1 && arg[0] == '-') {
      const auto known = std::find_if(options.begin(), options.end(), [&](const Option& o) { return o.name == arg; });
      if (known == options.end()) throw argument_error("unknown option '" + arg + "'", valid_flags(options));
      if (known->value == Value::none) {
        switches_.push_back(arg);
        continue;
      }
      if (i + 1 >= args.size()) throw argument_error(arg + " needs a value", "write " + arg + " VALUE");
      options_[arg] = args[++i];
      in_order_.emplace_back(arg, args[i]);
    } else {
      positional_.push_back(arg);
    }
  }
}

std::optional<std::string> Arguments::option(std::string_view name) const {
  auto it = options_.find(name);
  if (it == options_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Arguments::values(std::string_view name) const {
  std::vector<std::string> out;
  for (const auto& [option, value] : in_order_)
    if (option == name) out.push_back(value);
  return out;
}

std::optional<int> Arguments::positive_int(std::string_view name) const {
  const auto value = option(name);
  if (!value) return std::nullopt;
  try {
    std::size_t used = 0;
    const int n = std::stoi(*value, &used);
    if (used == value->size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  throw argument_error(std::string(name) + " expects a positive integer, found '" + *value + "'",
                       "write e.g. " + std::string(name) + " 2");
}

bool Arguments::has_switch(std::string_view name) const { return contains(switches_, name); }

}  // namespace chopsim::cli
