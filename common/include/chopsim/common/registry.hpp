#pragma once
// A registry of named implementations of one interface (compute model, collective model, topology, ...).
// It is an ordinary object, not a global: callers build one and fill it with
// `register_builtin_*(registry)` so that several configurations can coexist in one process.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chopsim/common/error.hpp"

namespace chopsim {

template <class Interface, class... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Interface>(Args...)>;

  struct Entry {
    std::string description;
    Factory factory;
  };

  /// `kind` names what is registered ("compute model"), for error messages.
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  /// Registers `name`; registering a name twice is a programming error.
  void add(std::string name, std::string description, Factory factory) {
    auto [it, inserted] = entries_.emplace(std::move(name), Entry{std::move(description), std::move(factory)});
    if (!inserted) throw ModelError(kind_ + " '" + it->first + "' registered twice");
  }

  [[nodiscard]] bool contains(std::string_view name) const {
    return entries_.find(std::string(name)) != entries_.end();
  }

  /// Builds the implementation called `name`; throws UnknownNameError listing the valid names.
  [[nodiscard]] std::unique_ptr<Interface> create(std::string_view name, Args... args) const {
    auto it = entries_.find(std::string(name));
    if (it == entries_.end()) throw UnknownNameError(kind_, std::string(name), names());
    return it->second.factory(std::forward<Args>(args)...);
  }

  /// Registered names in sorted order.
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& [name, entry] : entries_) out.push_back(name);
    return out;
  }

  [[nodiscard]] const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }
  [[nodiscard]] const std::string& kind() const { return kind_; }

 private:
  std::string kind_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace chopsim
