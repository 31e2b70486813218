#pragma once
// Typed errors thrown by every chopsim library. Only main() turns them into exit codes:
// InputError -> 2 (the user's input is wrong and the message says how to fix it), anything else -> 1.

#include <stdexcept>
#include <string>
#include <vector>

namespace chopsim {

/// Base of all chopsim errors.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where in a user's file something went wrong. Lines and columns are 1-based; 0 means unknown.
struct SourceLocation {
  std::string file;
  int line = 0;
  int column = 0;

  /// "file:line:column", "file:line" or "file", whichever parts are known.
  [[nodiscard]] std::string to_string() const;
};

/// The user's input (a config, a trace, a command-line argument) is wrong.
/// The message names the place, the key or field, what was found or expected, and the fix.
class InputError : public Error {
 public:
  InputError(SourceLocation where, std::string key, std::string problem, std::string fix);

  [[nodiscard]] const SourceLocation& where() const { return where_; }
  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] const std::string& problem() const { return problem_; }
  [[nodiscard]] const std::string& fix() const { return fix_; }

 private:
  SourceLocation where_;
  std::string key_;
  std::string problem_;
  std::string fix_;
};

/// A model, algorithm or engine was asked for by a name nobody registered.
class UnknownNameError : public Error {
 public:
  UnknownNameError(std::string kind, std::string name, std::vector<std::string> valid_names);

  [[nodiscard]] const std::string& kind() const { return kind_; }
  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::vector<std::string>& valid_names() const { return valid_names_; }

 private:
  std::string kind_;
  std::string name_;
  std::vector<std::string> valid_names_;
};

/// A model was given parameters it cannot work with (a bug in the caller, or a validator that missed a case).
class ModelError : public Error {
 public:
  using Error::Error;
};

/// The simulation engine failed (SimGrid aborted, a child process died, a deadlock in the workload).
class EngineError : public Error {
 public:
  using Error::Error;
};

/// Writing an output file failed.
class OutputError : public Error {
 public:
  using Error::Error;
};

}  // namespace chopsim
