#pragma once
// Private to import_nemo.cpp: a NeMo (Megatron-Core) training config being read, by dotted path, with OmegaConf's
// interpolations followed and errors at the key's line; it remembers what was read so the importer can list the
// settings it did not map.

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace chopsim::import_detail {

/// A NeMo config being read: values by dotted path, errors at the key's line.
class NemoJob {
 public:
  NemoJob(std::string file, YAML::Node root) : file_(std::move(file)), root_(std::move(root)) {}

  /// The node at `path`, with OmegaConf's interpolations followed (NeMo's own YAMLs use them:
  /// `max_position_embeddings: ${.encoder_seq_length}`, `seq_length: ${model.encoder_seq_length}`): an absolute
  /// `${a.b}`, or relative to the key's mapping, `${.b}` (a sibling) and `${..b}` (one level up).
  [[nodiscard]] YAML::Node at(const std::string& path) const;
  /// The job's model. and trainer. settings the mapping never asked for, but those that set nothing a step's time
  /// depends on (data, tokenizer, logging, checkpoints, the optimizer's hyper-parameters, initialisation).
  [[nodiscard]] std::vector<std::string> unread() const;
  [[nodiscard]] bool has(const std::string& path) const;
  /// Throws InputError at `path`'s line (not an interpolation target's).
  [[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& fix) const;
  /// The integer at `path`; `fallback` when it is absent (InputError without one).
  [[nodiscard]] int integer(const std::string& path, std::optional<int> fallback = std::nullopt) const;
  [[nodiscard]] double number(const std::string& path) const;
  /// false when absent.
  [[nodiscard]] bool flag(const std::string& path) const;
  /// "" when absent.
  [[nodiscard]] std::string text(const std::string& path) const;
  [[nodiscard]] const std::string& file() const { return file_; }

 private:
  void collect(const YAML::Node& node, const std::string& path, std::vector<std::string>& keys) const;

  std::string file_;
  YAML::Node root_;
  mutable std::set<std::string> read_;  ///< the dotted paths the mapping asked for
};

}  // namespace chopsim::import_detail
