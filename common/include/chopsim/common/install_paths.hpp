#pragma once
// Where an installed chopsim keeps its files, found from the file that holds chopsim's code.

#include <filesystem>
#include <vector>

namespace chopsim {

/// The folder of the file holding this code (PREFIX/bin/chopsim, the Python module's
/// PREFIX/lib/python3/dist-packages/chopsim/_chopsim.so, or an executable of a build tree) and its parents, nearest
/// first, at most `levels` folders: where PREFIX/share/chopsim and PREFIX/lib/chopsim are looked for, so that an
/// install or a build tree can move. Empty when the file cannot be found.
[[nodiscard]] std::vector<std::filesystem::path> folders_above_this_program(int levels);

}  // namespace chopsim
