#include "chopsim/common/atomic_output.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <iterator>

#include "chopsim/common/error.hpp"
#include "chopsim/common/temporary_files.hpp"
#include "chopsim_test_helpers.hpp"

namespace chopsim {
namespace {

/// A fresh folder per test (TempDirTest), removed afterwards whatever the outcome.
class AtomicOutput : public test::TempDirTest {
 protected:
  std::filesystem::path fresh_directory(const std::string& name) const {
    const auto dir = dir_ / name;
    std::filesystem::create_directories(dir);
    return dir;
  }
};

TEST_F(AtomicOutput, AtomicOutputSetNothingAppearsUntilCommit) {
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
  EXPECT_EQ(test::read_text(dir / "summary.json"), "{}");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()), 1);
}

TEST_F(AtomicOutput, AtomicOutputSetAbandonedSetLeavesNoFiles) {
  const auto dir = fresh_directory("abandon");
  {
    AtomicOutputSet set;
    auto out = open_for_writing(set.stage(dir / "timeline.json"));
    out << "partial";
  }  // e.g. the engine threw before commit
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST_F(AtomicOutput, AtomicOutputSetCreatesTemporariesExclusivelyUnderUnpredictableNames) {
  // A symlink planted where a temporary might go is never written through: each temporary is created with O_EXCL
  // under a random name, and two stagings of one path get two names.
  const auto dir = fresh_directory("exclusive");
  std::ofstream(dir / "victim") << "keep";
  std::filesystem::create_symlink(dir / "victim", dir / ("ops.h5.tmp." + std::to_string(::getpid())));
  AtomicOutputSet set;
  const auto first = set.stage(dir / "ops.h5");
  const auto second = set.stage(dir / "ops.h5");
  EXPECT_NE(first, second);
  for (const auto& temporary : {first, second}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(std::filesystem::symlink_status(temporary))) << temporary;
    EXPECT_EQ(temporary.parent_path(), dir);
    EXPECT_TRUE(temporary.filename().string().starts_with("ops.h5.tmp." + std::to_string(::getpid()) + "."));
  }
  std::ofstream(first) << "x";
  EXPECT_EQ(test::read_text(dir / "victim"), "keep");
}

TEST_F(AtomicOutput, AnInterruptRemovesTheStagedTemporaries) {
  // What the SIGINT/SIGTERM handler of main() does before the process dies: unlink every tracked temporary. A
  // committed or abandoned set's files are no longer tracked.
  const auto dir = fresh_directory("interrupt");
  AtomicOutputSet running;
  const auto temporary = running.stage(dir / "timeline.json");
  std::ofstream(temporary) << "partial";
  {
    AtomicOutputSet done;
    std::ofstream(done.stage(dir / "summary.json")) << "{}";
    done.commit();
  }
  temporary_files::remove_tracked();
  EXPECT_FALSE(std::filesystem::exists(temporary));
  EXPECT_EQ(test::read_text(dir / "summary.json"), "{}");
}

TEST_F(AtomicOutput, WriteFileAtomicallyReplacesExistingContent) {
  const auto dir = fresh_directory("replace");
  write_file_atomically(dir / "a.txt", "first");
  write_file_atomically(dir / "a.txt", "second");
  EXPECT_EQ(test::read_text(dir / "a.txt"), "second");
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

TEST_F(AtomicOutput, CheckOutputFileAcceptsAFileInAnExistingFolderAndNamesTheOptionOtherwise) {
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

TEST_F(AtomicOutput, CheckOutputFileRefusesAnOutputThatIsAnInputUnderAnyName) {
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
  EXPECT_EQ(test::read_text(dir / "trace.json"), "{}");
}

TEST_F(AtomicOutput, CreateOutputDirectoryCreatesParentsAndRejectsAPathThroughAFile) {
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
