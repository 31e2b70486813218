#pragma once
// Output files appear whole or not at all: everything is written to a temporary name beside the target and
// renamed into place only after every file of a run was written (the brief: never partial output files).

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace chopsim {

/// A set of files written together. Each is created under a temporary name; commit() renames them all.
/// If the object is destroyed without commit(), the temporary files are removed.
class AtomicOutputSet {
 public:
  AtomicOutputSet() = default;
  AtomicOutputSet(const AtomicOutputSet&) = delete;
  AtomicOutputSet& operator=(const AtomicOutputSet&) = delete;
  ~AtomicOutputSet();

  /// Reserves `final_path` and returns the temporary path to write it under (in the same directory, so the rename
  /// is atomic), created empty and exclusively under an unpredictable name; it is removed if the set is abandoned
  /// or the process is interrupted (temporary_files). The directory must exist.
  std::filesystem::path stage(const std::filesystem::path& final_path);

  /// Renames every staged file into place. Throws OutputError if a temporary file is missing.
  void commit();

 private:
  struct Staged {
    std::filesystem::path temporary;
    std::filesystem::path final_path;
    int slot;  ///< temporary_files' slot: removed if the process is interrupted
  };
  std::vector<Staged> staged_;
  bool committed_ = false;
};

/// Writes `content` to `path` through a temporary file and a rename.
void write_file_atomically(const std::filesystem::path& path, const std::string& content);

/// Before any work is done: `file` can be written where the user asked, i.e. its folder exists, `file` is not a
/// directory, and it is none of `inputs` (under any name: a link or another path to the same file), which writing
/// it would destroy. Throws InputError naming the command-line `option` that gave the path, and the fix.
void check_output_file(const std::filesystem::path& file, std::string_view option,
                       const std::vector<std::filesystem::path>& inputs = {});

/// Creates the output directory `directory` given by the command-line `option` (with its parents), or throws
/// InputError naming the option, the reason and the fix.
void create_output_directory(const std::filesystem::path& directory, std::string_view option);

/// Opens `path` for writing and throws OutputError naming the file if that fails.
std::ofstream open_for_writing(const std::filesystem::path& path);

}  // namespace chopsim
