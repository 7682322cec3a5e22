#include "engine/doctor/grub_stages.h"

#include <iostream>
#include <map>

#include "gtest/gtest.h"

namespace resmem::engine {
namespace {

// Only the boot loader's files; the stages need nothing else.
class BootFilesPlatform : public Platform {
 public:
  using Files = std::map<std::string, std::string>;
  explicit BootFilesPlatform(Files files) : files_(std::move(files)) {}
  std::string name() const override { return "boot-files"; }
  Result<std::string> ReadSource(const std::string& path) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::Errno(ENOENT, path + " absent");
    return it->second;
  }
  Result<std::unique_ptr<HostMemory>> AllocPageable(uint64_t) override {
    return Status::Unsupported("not needed");
  }
  Result<double> CopyHost(HostMemory&, uint64_t, HostMemory&, uint64_t, uint64_t) override {
    return Status::Unsupported("not needed");
  }
  Clock& clock() override { return clock_; }

 private:
  std::map<std::string, std::string> files_;
  VirtualClock clock_;
};

// Debian 12's /etc/default/grub with the seed's option added without escaping.
constexpr const char* kDebianDefaultGrub =
    "# If you change this file, run 'update-grub' afterwards to update\n"
    "GRUB_DEFAULT=0\n"
    "GRUB_TIMEOUT=5\n"
    "GRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`\n"
    "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n"
    "GRUB_CMDLINE_LINUX=\"mem=4G memmap=8G$4G\"\n";

TEST(GrubStages, UnescapedDollarInEtcDefaultGrubShowsEachStage) {
  BootFilesPlatform p(BootFilesPlatform::Files{{"/etc/default/grub", kDebianDefaultGrub}});
  auto f = GrubStageFindings(p);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "grub-changed-cmdline");
  EXPECT_EQ(f[0].severity, "warning");
  // Before and after at each stage, and what ate the text.
  EXPECT_NE(f[0].evidence.find("GRUB_CMDLINE_LINUX=\"mem=4G memmap=8GG\""), std::string::npos)
      << f[0].evidence;
  EXPECT_NE(f[0].evidence.find("kernel: mem=4G memmap=8GG quiet"), std::string::npos);
  EXPECT_NE(f[0].evidence.find("'$4' in GRUB_CMDLINE_LINUX is positional parameter 4"),
            std::string::npos) << f[0].evidence;
  EXPECT_NE(f[0].remedy.find("\\\\\\$"), std::string::npos) << f[0].remedy;
  std::cout << "evidence: " << f[0].evidence << "\n";
}

TEST(GrubStages, EscapedGrubCfgLineIsInfoAndBrokenOneIsAnError) {
  BootFilesPlatform ok(BootFilesPlatform::Files{{"/boot/grub/grub.cfg",
                         "menuentry 'Debian GNU/Linux' {\n\tlinux\t/boot/vmlinuz-6.1 root=/dev/sda1 "
                         "ro memmap=8G\\$4G\n\tinitrd\t/boot/initrd.img-6.1\n}\n"}});
  auto f = GrubStageFindings(ok);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "grub-cmdline-stages");
  EXPECT_NE(f[0].evidence.find("kernel: BOOT_IMAGE=/boot/vmlinuz-6.1 root=/dev/sda1 ro "
                               "memmap=8G$4G"),
            std::string::npos) << f[0].evidence;

  BootFilesPlatform broken(
      BootFilesPlatform::Files{{"/etc/default/grub", "GRUB_CMDLINE_LINUX=\"memmap=8G$4G\n"}});
  f = GrubStageFindings(broken);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].id, "grub-config-broken");
  EXPECT_NE(f[0].evidence.find("Unterminated quoted string"), std::string::npos);
}

TEST(GrubStages, AMachineWithoutGrubFilesGetsNoFinding) {
  BootFilesPlatform none(BootFilesPlatform::Files{});
  EXPECT_TRUE(GrubStageFindings(none).empty());
}

}  // namespace
}  // namespace resmem::engine
