// The "simgrid" engine, loaded on demand from its module (libchopsim_simgrid_engine.so, simgrid_engine.cpp). SimGrid
// and what it links (ns-3, Boost.Context, ...) cost every process ~30 ms of loading and static initialisation, two
// thirds of a quick-start run, although the default engine never touches them; a process that asks for the SimGrid
// engine loads the module then, once (dlopen counts references; RTLD_NODELETE keeps its code for the engines' life).

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <system_error>

#include "chopsim/common/error.hpp"
#include "chopsim/common/install_paths.hpp"
#include "engines.hpp"

namespace chopsim::sim_detail {

namespace {

namespace fs = std::filesystem;

constexpr const char* kModuleName = "libchopsim_simgrid_engine.so";
constexpr const char* kEntryPoint = "chopsim_make_simgrid_engine";
using MakeEngine = Engine* (*)(const EngineOptions*, std::string*);

/// Where the module is: lib/chopsim/ under a folder at most five levels above the file holding this code. That is
/// PREFIX/lib/chopsim for an installed chopsim (PREFIX/bin/chopsim, or the Python module's
/// PREFIX/lib/python3/dist-packages/chopsim/_chopsim.so), and BUILD/lib/chopsim for every executable of a build tree
/// (BUILD/app, BUILD/tests/sim, BUILD/bench, ...). Also returns the folders looked at, for the error.
fs::path find_module(std::string& looked_at) {
  std::error_code error;
  for (const fs::path& dir : folders_above_this_program(5)) {
    const fs::path candidate = dir / "lib" / "chopsim" / kModuleName;
    if (fs::is_regular_file(candidate, error)) return candidate;
    looked_at += (looked_at.empty() ? "" : ", ") + candidate.parent_path().string();
  }
  return {};
}

}  // namespace

std::unique_ptr<Engine> make_simgrid_engine(const EngineOptions& options) {
  std::string looked_at;
  const fs::path module = find_module(looked_at);
  if (module.empty())
    throw EngineError(std::string("the SimGrid engine's module ") + kModuleName + " was not found (looked in " +
                      looked_at + "); build it (cmake --build build) or reinstall chopsim, or use --engine fast");
  void* handle = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    const char* why = dlerror();
    throw EngineError("cannot load the SimGrid engine's module " + module.string() + ": " +
                      (why != nullptr ? why : "unknown error") +
                      "; install SimGrid 3.32 (apt install libsimgrid3.32) or use --engine fast");
  }
  const auto make = reinterpret_cast<MakeEngine>(dlsym(handle, kEntryPoint));
  if (make == nullptr)
    throw EngineError("the SimGrid engine's module " + module.string() + " has no " + kEntryPoint +
                      ": it is not this chopsim's (rebuild or reinstall chopsim)");
  std::string error;
  std::unique_ptr<Engine> engine(make(&options, &error));
  if (engine == nullptr) throw EngineError(error);
  return engine;
}

}  // namespace chopsim::sim_detail
