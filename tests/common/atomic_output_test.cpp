#include "chopsim/common/atomic_output.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "chopsim/common/error.hpp"

namespace chopsim {
namespace {

std::filesystem::path fresh_directory(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("chopsim_atomic_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(AtomicOutputSet, NothingAppearsUntilCommit) {
  const auto dir = fresh_directory("commit");
  {
    AtomicOutputSet set;
    const auto temporary = set.stage(dir / "summary.json");
    auto out = open_for_writing(temporary);
    out << "{}";
    out.close();
    EXPECT_FALSE(std::filesystem::exists(dir / "summary.json"));
    set.commit();
  }
  EXPECT_EQ(read(dir / "summary.json"), "{}");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
}

TEST(AtomicOutputSet, AbandonedSetLeavesNoFiles) {
  const auto dir = fresh_directory("abandon");
  {
    AtomicOutputSet set;
    auto out = open_for_writing(set.stage(dir / "timeline.json"));
    out << "partial";
  }  // e.g. the engine threw before commit
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(AtomicOutputSet, CommitFailsWhenAStagedFileWasNeverWritten) {
  const auto dir = fresh_directory("missing");
  AtomicOutputSet set;
  (void)set.stage(dir / "ops.h5");
  EXPECT_THROW(set.commit(), OutputError);
}

TEST(WriteFileAtomically, ReplacesExistingContent) {
  const auto dir = fresh_directory("replace");
  write_file_atomically(dir / "a.txt", "first");
  write_file_atomically(dir / "a.txt", "second");
  EXPECT_EQ(read(dir / "a.txt"), "second");
}

TEST(OpenForWriting, NamesTheFileWhenItCannotBeOpened) {
  try {
    (void)open_for_writing("/nonexistent-dir/x.json");
    FAIL() << "expected OutputError";
  } catch (const OutputError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-dir/x.json"), std::string::npos);
  }
}

std::string input_error_message(const std::function<void()>& call) {
  try {
    call();
  } catch (const InputError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected InputError";
  return {};
}

TEST(CheckOutputFile, AcceptsAFileInAnExistingFolderAndNamesTheOptionOtherwise) {
  const auto dir = fresh_directory("check");
  EXPECT_NO_THROW(check_output_file(dir / "profile.yaml", "-o"));
  EXPECT_NO_THROW(check_output_file("relative.md", "--out"));  // the current directory
  const std::string missing = input_error_message([&] { check_output_file(dir / "no" / "x.md", "--out"); });
  EXPECT_NE(missing.find("--out " + (dir / "no" / "x.md").string()), std::string::npos) << missing;
  EXPECT_NE(missing.find("Fix: create the folder first"), std::string::npos) << missing;
  const std::string directory = input_error_message([&] { check_output_file(dir, "-o"); });
  EXPECT_NE(directory.find("is a directory, not a file"), std::string::npos) << directory;
  EXPECT_TRUE(std::filesystem::is_empty(dir));  // checking writes nothing
}

TEST(CheckOutputFile, RefusesAnOutputThatIsAnInputUnderAnyName) {
  // `chopsim ingest T -o T` used to replace the trace T with the store (issue 16): the output may be no input, by
  // the same name, a link to it, or another spelling of its path.
  const auto dir = fresh_directory("input");
  write_file_atomically(dir / "trace.json", "{}");
  std::filesystem::create_symlink(dir / "trace.json", dir / "link.json");
  const std::vector<std::filesystem::path> inputs{dir / "other.json", dir / "trace.json"};
  for (const auto& output : {dir / "trace.json", dir / "link.json", dir / "." / "trace.json"}) {
    const std::string message = input_error_message([&] { check_output_file(output, "-o", inputs); });
    EXPECT_NE(message.find("is the input " + (dir / "trace.json").string()), std::string::npos) << message;
    EXPECT_NE(message.find("Fix: write the output to another file"), std::string::npos) << message;
  }
  EXPECT_NO_THROW(check_output_file(dir / "store.h5", "-o", inputs));
  EXPECT_EQ(read(dir / "trace.json"), "{}");
  std::filesystem::remove_all(dir);
}

TEST(CreateOutputDirectory, CreatesParentsAndRejectsAPathThroughAFile) {
  const auto dir = fresh_directory("mkdir");
  create_output_directory(dir / "a" / "b", "--out");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "a" / "b"));
  write_file_atomically(dir / "file", "x");
  const std::string message = input_error_message([&] { create_output_directory(dir / "file" / "sub", "--out"); });
  EXPECT_NE(message.find("--out " + (dir / "file" / "sub").string() + ": cannot create the directory"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace chopsim
