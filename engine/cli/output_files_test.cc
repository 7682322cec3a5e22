// The files a command writes: refused up front without being touched (a missing folder, a
// folder, the same file as an input or as another output, by path, hard link or symbolic link),
// and written whole or not at all (a write that fails leaves the file that was there).
#include "engine/cli/output_files.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace resmem::cli {
namespace {

namespace fs = std::filesystem;

class OutputFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TEST_TMPDIR");
    dir_ = fs::path(tmp ? tmp : "/tmp") /
           ("output_files_test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Put(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name)) << text;
  }
  std::string Get(const std::string& name) const {
    std::ifstream in(Path(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  size_t Entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }

  fs::path dir_;
};

TEST_F(OutputFilesTest, AMissingFolderIsRefusedWithTheReasonAndTheWayOut) {
  const Status st = CheckOutputs({{"--json", Path("no/such/r.json"), "the JSON report"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "cannot write the JSON report --json " + Path("no/such/r.json") +
                              ": No such file or directory; give a file in a folder that exists "
                              "and that you may write (e.g. mkdir -p out, then --json "
                              "out/r.json)");
  EXPECT_FALSE(fs::exists(Path("no")));
}

TEST_F(OutputFilesTest, AFolderOrAFileAsFolderIsRefused) {
  const Status folder = CheckOutputs({{"--json", dir_.string(), "the JSON report"}});
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.message().find("Is a directory; give the name of a file"), std::string::npos)
      << folder.message();
  Put("file", "x");
  const Status under_file = CheckOutputs({{"-o", Path("file/s.toml"), "the scenario"}});
  ASSERT_FALSE(under_file.ok());
  EXPECT_NE(under_file.message().find("Not a directory"), std::string::npos)
      << under_file.message();
}

TEST_F(OutputFilesTest, CheckingTruncatesNothing) {
  Put("prev.xml", "previous report");
  EXPECT_TRUE(CheckOutputs({{"--junit", Path("prev.xml"), "the JUnit report"}}).ok());
  EXPECT_EQ(Get("prev.xml"), "previous report");
  EXPECT_TRUE(CheckOutputs({{"--json", Path("new.json"), "the JSON report"}, {"--x", ""}}).ok());
  EXPECT_FALSE(fs::exists(Path("new.json")));
}

TEST_F(OutputFilesTest, AnInputIsNoOutputByPathHardLinkOrSymbolicLink) {
  Put("a.toml", "scenario");
  fs::create_hard_link(Path("a.toml"), Path("hard.toml"));
  fs::create_symlink(Path("a.toml"), Path("soft.toml"));
  fs::create_directories(Path("x"));
  const std::string dotted = (dir_ / "." / "x" / ".." / "a.toml").string();
  for (const std::string& out : {Path("a.toml"), Path("hard.toml"), Path("soft.toml"), dotted}) {
    const Status st =
        CheckOutputs({{"--json", out, "the JSON report"}}, {{"PATH", Path("a.toml")}});
    ASSERT_FALSE(st.ok()) << out;
    EXPECT_EQ(st.message(), "--json " + out + " is the same file as the input PATH " +
                                Path("a.toml") +
                                ": writing it would overwrite that input; give --json another "
                                "file");
  }
  EXPECT_EQ(Get("a.toml"), "scenario");
  EXPECT_TRUE(CheckOutputs({{"--json", Path("b.json"), "the JSON report"}},
                           {{"PATH", Path("a.toml")}, {"--machine", "seed000-workstation"}})
                  .ok());
}

TEST_F(OutputFilesTest, TwoOutputsAreTwoFilesEvenBeforeTheyExist) {
  const Status st = CheckOutputs({{"-o", Path("x.toml"), "the scenario"},
                                  {"--machine-file", dir_.string() + "/./x.toml", "the machine"}});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "-o " + Path("x.toml") + " and --machine-file " + dir_.string() +
                              "/./x.toml are the same file: one would overwrite the other; give "
                              "each its own file");
}

TEST_F(OutputFilesTest, AnExistingFileInAnInputFolderIsAnInput) {
  fs::create_directories(Path("paste"));
  Put("paste/dmesg.txt", "BIOS-e820: ...");
  const Status st = CheckOutputs({{"-o", Path("paste/dmesg.txt"), "the scenario"}},
                                 {{"FILE", Path("paste")}});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("is inside the folder FILE " + Path("paste")), std::string::npos)
      << st.message();
  EXPECT_TRUE(CheckOutputs({{"-o", Path("paste/new.toml"), "the scenario"}},
                           {{"FILE", Path("paste")}}).ok());
}

TEST_F(OutputFilesTest, WritesWholeKeepingModeAndLinks) {
  Put("r.json", "old");
  fs::permissions(Path("r.json"), fs::perms(0640));
  fs::create_symlink(Path("r.json"), Path("link.json"));
  ASSERT_TRUE(WriteOutput({"--json", Path("link.json"), "the JSON report"}, "new").ok());
  EXPECT_EQ(Get("r.json"), "new");
  EXPECT_TRUE(fs::is_symlink(Path("link.json")));
  EXPECT_EQ(fs::status(Path("r.json")).permissions(), fs::perms(0640));
  ASSERT_TRUE(WriteOutput({"--json", Path("fresh.json"), "the JSON report"}, "fresh").ok());
  EXPECT_EQ(Get("fresh.json"), "fresh");
  EXPECT_EQ(Entries(), 3u);  // no temporary file left
}

// A write that fails halfway (here: past RLIMIT_FSIZE, EFBIG) leaves the old file whole.
TEST_F(OutputFilesTest, AFailedWriteLeavesTheFileThatWasThere) {
  Put("r.json", "old report");
  struct rlimit old_limit;
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  ::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const Status st = WriteOutput({"--json", Path("r.json"), "the JSON report"},
                                std::string(100000, 'x'));
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cannot write the JSON report --json " + Path("r.json") +
                              ": File too large; nothing was written there"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(Get("r.json"), "old report");
  EXPECT_EQ(Entries(), 1u);
}

TEST_F(OutputFilesTest, AStreamIsWrittenInPlace) {
  EXPECT_TRUE(CheckOutputs({{"--json", "/dev/null", "the JSON report"},
                            {"--junit", "/dev/null", "the JUnit report"}},
                           {{"FILE", "/dev/stdin"}})
                  .ok());
  EXPECT_TRUE(WriteOutput({"--json", "/dev/null", "the JSON report"}, "text").ok());
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // /dev/fd/N leading to a regular file: the text goes after what is there, the file stays.
  Put("log.txt", "table\n");
  const int fd = ::open(Path("log.txt").c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  const std::string dev_fd = "/dev/fd/" + std::to_string(fd);
  EXPECT_TRUE(CheckOutputs({{"--json", dev_fd, "the JSON report"}}).ok());
  EXPECT_TRUE(WriteOutput({"--json", dev_fd, "the JSON report"}, "json\n").ok());
  ::close(fd);
  EXPECT_EQ(Get("log.txt"), "table\njson\n");
  EXPECT_EQ(Entries(), 1u);
}

}  // namespace
}  // namespace resmem::cli
