#include "chopsim/common/error.hpp"

#include <utility>

namespace chopsim {

std::string SourceLocation::to_string() const {
  std::string text = file.empty() ? std::string("<input>") : file;
  if (line > 0) {
    text += ":" + std::to_string(line);
    if (column > 0) text += ":" + std::to_string(column);
  }
  return text;
}

namespace {
std::string input_message(const SourceLocation& where, const std::string& key, const std::string& problem,
                          const std::string& fix) {
  std::string message = where.to_string() + ": ";
  if (!key.empty()) message += "key '" + key + "': ";
  message += problem;
  if (!fix.empty()) message += ". Fix: " + fix;
  return message;
}

std::string unknown_name_message(const std::string& kind, const std::string& name,
                                 const std::vector<std::string>& valid) {
  std::string message = "unknown " + kind + " '" + name + "'; valid names: ";
  for (std::size_t i = 0; i < valid.size(); ++i) {
    if (i > 0) message += ", ";
    message += valid[i];
  }
  if (valid.empty()) message += "(none registered)";
  return message;
}
}  // namespace

InputError::InputError(SourceLocation where, std::string key, std::string problem, std::string fix)
    : Error(input_message(where, key, problem, fix)),
      where_(std::move(where)),
      key_(std::move(key)),
      problem_(std::move(problem)),
      fix_(std::move(fix)) {}

UnknownNameError::UnknownNameError(std::string kind, std::string name, std::vector<std::string> valid_names)
    : Error(unknown_name_message(kind, name, valid_names)),
      kind_(std::move(kind)),
      name_(std::move(name)),
      valid_names_(std::move(valid_names)) {}

}  // namespace chopsim
