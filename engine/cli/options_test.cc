// The commands' CLI11 definitions as the command line meets them: every registered command has a
// help of its own and refuses what it does not know by name; missing values, values outside the
// choices or the range, malformed sizes and negative counts are exit 2 with a message that names
// the option and points at the command's --help. Parse errors end before any action runs, so
// nothing here touches a GPU, a module or a mount.
#include <sstream>
#include <string>
#include <vector>

#include "engine/cli/command.h"
#include "engine/cli/values.h"
#include "gtest/gtest.h"

namespace resmem::cli {
namespace {

const Program kProgram{"resmem", "resmem under test", "resmem 9.9.9-test"};

struct Outcome {
  int rc;
  std::string out, err;
};

Outcome Call(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = RunProgram(kProgram, args, out, err);
  return {rc, out.str(), err.str()};
}

// Exit 2; the message names `option` and says `words`; the way out is the command's --help.
void ExpectBadInput(const std::vector<std::string>& args, const std::string& option,
                    const std::string& words) {
  const Outcome o = Call(args);
  std::string line;
  for (const auto& a : args) line += " " + a;
  EXPECT_EQ(o.rc, kExitBadInput) << line << "\n" << o.err;
  EXPECT_NE(o.err.find(option), std::string::npos) << line << "\n" << o.err;
  EXPECT_NE(o.err.find(words), std::string::npos) << line << "\n" << o.err;
  EXPECT_NE(o.err.find("`resmem " + args[0] + " --help`"), std::string::npos) << line << "\n"
                                                                               << o.err;
  EXPECT_TRUE(o.out.empty()) << line << "\n" << o.out;
}

TEST(Definitions, EveryCommandIsRegistered) {
  std::vector<std::string> names;
  for (const auto& c : Commands()) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"bench", "calibrate", "doctor", "fuse", "import",
                                             "plan", "run", "stream"}));
}

TEST(Definitions, EveryCommandHasItsHelp) {
  for (const auto& c : Commands()) {
    const Outcome o = Call({c.name, "--help"});
    EXPECT_EQ(o.rc, kExitOk) << c.name;
    EXPECT_NE(o.out.find(c.summary), std::string::npos) << o.out;
    EXPECT_NE(o.out.find("Usage: resmem " + c.name + " [OPTIONS]"), std::string::npos) << o.out;
    EXPECT_EQ(o.out, CommandHelp(kProgram, c.name).value_or("")) << c.name;
    EXPECT_TRUE(o.err.empty()) << o.err;
  }
  EXPECT_FALSE(CommandHelp(kProgram, "fly").has_value());
}

TEST(Definitions, EveryCommandRefusesAnUnknownOptionByName) {
  for (const auto& c : Commands())
    ExpectBadInput({c.name, "--no-such-option"}, "--no-such-option", "not expected");
}

TEST(Definitions, DefaultsAndChoicesShowInTheHelp) {
  const std::string run = CommandHelp(kProgram, "run").value_or("");
  EXPECT_NE(run.find("--backend NAME=sim"), std::string::npos) << run;
  const std::string stream = CommandHelp(kProgram, "stream").value_or("");
  EXPECT_NE(stream.find("--block SIZE=16M"), std::string::npos) << stream;
  EXPECT_NE(stream.find("--host KIND:{memfd,"), std::string::npos) << stream;
  EXPECT_NE(stream.find("staged path:"), std::string::npos) << stream;  // the shared group
  EXPECT_NE(stream.find("--lanes N:INT in [1 - 1024]=16"), std::string::npos) << stream;
  const std::string plan = CommandHelp(kProgram, "plan").value_or("");
  EXPECT_NE(plan.find("--mode MODE:{pages,pfnmap}=pages"), std::string::npos) << plan;
  const std::string calibrate = CommandHelp(kProgram, "calibrate").value_or("");
  EXPECT_NE(calibrate.find("--margin PCT=15"), std::string::npos) << calibrate;
  EXPECT_NE(calibrate.find("--sizes SIZE,...=64K,16M,256M"), std::string::npos) << calibrate;
}

TEST(Definitions, MissingValues) {
  ExpectBadInput({"run", "scenarios/", "--backend"}, "--backend", "1 required NAME missing");
  ExpectBadInput({"doctor", "--machine"}, "--machine", "required");
  ExpectBadInput({"run"}, "PATH", "is required");
  ExpectBadInput({"plan"}, "SIZE", "is required");
  ExpectBadInput({"import"}, "FILE", "is required");
  ExpectBadInput({"fuse", "--mount", "/tmp"}, "--machine", "is required");
}

TEST(Definitions, ValuesOutsideTheChoices) {
  ExpectBadInput({"run", "--backend", "warp", "x.toml"}, "--backend", "unknown backend 'warp'");
  ExpectBadInput({"plan", "4G", "--mode", "x"}, "--mode", "x not in {pages,pfnmap}");
  ExpectBadInput({"import", "f.log", "--arch", "sparc"}, "--arch", "sparc not in {x86_64,i386}");
  ExpectBadInput({"import", "f.log", "--kernel", "latest"}, "--kernel", "not a Linux version");
  ExpectBadInput({"fuse", "--machine", "nope", "--mount", "/tmp"}, "--machine",
                 "nope not in {seed000-workstation");
  ExpectBadInput({"fuse", "--machine", "h100-host", "--mount", "/tmp", "--cache", "xx"},
                 "--cache", "xx not in {wb,wc,uc}");
  ExpectBadInput({"bench", "--paths", "pinned,warp"}, "--paths", "warp not in {pinned,");
  ExpectBadInput({"stream", "--backend", "gpu"}, "--backend", "gpu not in {cuda,sim}");
  ExpectBadInput({"stream", "--path", "teleport"}, "--path", "teleport not in {");
  ExpectBadInput({"run", "--option", "nokey", "x.toml"}, "--option", "takes KEY=VALUE");
}

TEST(Definitions, NumbersOutsideTheirRange) {
  ExpectBadInput({"calibrate", "--runs", "0", "--out", "p.json"}, "--runs",
                 "Value 0 not in range 1 to 100");
  ExpectBadInput({"calibrate", "--compare", "p.json", "--margin", "150"}, "--margin",
                 "'150' is not a percentage");
  ExpectBadInput({"plan", "4G", "--dma-bits", "65"}, "--dma-bits", "not in range 32 to 64");
  ExpectBadInput({"bench", "--lanes", "0"}, "--lanes", "Value 0 not in range 1 to 1024");
  ExpectBadInput({"stream", "--buffers", "17"}, "--buffers", "Value 17 not in range 1 to 16");
  ExpectBadInput({"stream", "--blocks", "-5"}, "--blocks", "'-5' is not a whole number");
  ExpectBadInput({"run", "--seed", "-1", "x.toml"}, "--seed", "'-1' is not a whole number");
  ExpectBadInput({"run", "--seed", "seven", "x.toml"}, "--seed", "'seven' is not a whole number");
  ExpectBadInput({"stream", "--slots", "many"}, "--slots", "many");
}

TEST(Definitions, Sizes) {
  ExpectBadInput({"plan", "12Q"}, "SIZE", "'12Q' is no size");
  ExpectBadInput({"plan", "4G", "--keep", "lots"}, "--keep", "'lots' is no size");
  ExpectBadInput({"stream", "--chunk", "1K"}, "--chunk", "below the least allowed, 4K");
  ExpectBadInput({"bench", "--sizes", "64K,12Q"}, "--sizes", "'12Q' is no size");
}

TEST(Definitions, OptionsThatNeedOrExcludeOthers) {
  ExpectBadInput({"doctor", "--cmdline", "mem=4G"}, "--cmdline", "requires --machine");
  ExpectBadInput({"doctor", "--module", "r.ko", "--machine", "seed000-workstation"}, "--module",
                 "excludes");
  ExpectBadInput({"import", "--machine-file", "m.toml", "f.log"}, "--machine-file",
                 "requires --output");
  ExpectBadInput({"calibrate", "--merge", "a.json", "--compare", "b.json"}, "--merge",
                 "excludes");
  ExpectBadInput({"calibrate", "--merge", "--out", "x.json"}, "--merge",
                 "needs profile files before '--out'");
}

TEST(Program, VersionHelpAndCommands) {
  Outcome o = Call({"--version"});
  EXPECT_EQ(o.rc, kExitOk);
  EXPECT_EQ(o.out, "resmem 9.9.9-test\n");
  o = Call({"--help"});
  EXPECT_EQ(o.rc, kExitOk);
  for (const auto& c : Commands()) EXPECT_NE(o.out.find(c.summary), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--version"), std::string::npos) << o.out;
  o = Call({});
  EXPECT_EQ(o.rc, kExitBadInput);
  EXPECT_NE(o.err.find("Usage: resmem"), std::string::npos) << o.err;
  o = Call({"fly"});
  EXPECT_EQ(o.rc, kExitBadInput);
  EXPECT_NE(o.err.find("unknown command 'fly'; `resmem --help` lists the commands"),
            std::string::npos)
      << o.err;
  o = Call({"--fast"});
  EXPECT_EQ(o.rc, kExitBadInput);
  EXPECT_NE(o.err.find("--fast"), std::string::npos) << o.err;
}

// The plan runs on a preset, so the positional SIZE after `--` and after options is seen.
TEST(Program, PositionalAfterDoubleDash) {
  EXPECT_EQ(Call({"plan", "--machine", "seed000-workstation", "--replace", "--at", "4G", "--",
                  "64G"})
                .rc,
            kExitOk);
  EXPECT_EQ(Call({"plan", "--machine", "seed000-workstation", "64G", "--replace"}).rc, kExitOk);
}

// After a `--` the value is the command's own: its error is the one shown, not "The following
// argument was not expected: --" (CLI11 keeps the `--` among the leftovers).
TEST(Program, ErrorsOfAValueAfterDoubleDashNameTheValue) {
  const std::vector<std::pair<std::string, std::string>> sizes = {
      {"0x", "'0x' is no size"}, {"-1M", "'-1M' is no size"}, {"0", "'0' is below the least"},
      {"16Q", "'16Q' is no size"}};
  for (const auto& [size, words] : sizes) {
    ExpectBadInput({"plan", "--machine", "seed000-workstation", "--", size}, "SIZE", words);
    EXPECT_EQ(Call({"plan", "--machine", "seed000-workstation", "--", size}).err.find("--\n"),
              std::string::npos);
  }
}

// After a `--` nothing is an option: a --help or -h there is an argument nobody took (it printed
// the command's help, exit 0), and one before the `--` still asks for the help.
TEST(Program, HelpAfterDoubleDashIsNoOption) {
  for (const std::string h : {"--help", "-h"}) {
    ExpectBadInput({"plan", "1G", "--", h}, "The following argument was not expected: " + h, "");
    ExpectBadInput({"doctor", "--machine", "seed000-workstation", "--", h},
                   "The following argument was not expected: " + h, "");
    const Outcome help = Call({"plan", h, "1G", "--", h});
    EXPECT_EQ(help.rc, kExitOk) << help.err;
    EXPECT_NE(help.out.find("Usage: resmem plan"), std::string::npos) << help.out;
  }
}

// What nobody took is listed in the order given (CLI11 joins its list last first), the command's
// own before what followed a `--` once its positionals were full.
TEST(Program, UnexpectedArgumentsInTheOrderGiven) {
  ExpectBadInput({"doctor", "a", "b", "--", "c"}, "a b c", "not expected: a b c");
  ExpectBadInput({"plan", "1G", "2G", "3G"}, "2G 3G", "not expected: 2G 3G");
  ExpectBadInput({"plan", "--machine", "seed000-workstation", "1G", "--", "2G", "-3G"}, "2G -3G",
                 "not expected: 2G -3G");
  ExpectBadInput({"run", "x.toml", "--fast", "y", "--bogus"}, "--fast --bogus",
                 "not expected: --fast --bogus");
}

// "--json=" takes the next argument as the file (run --json= a.toml then wanted its PATH): the
// option is named, and what it would have taken.
TEST(Program, AnOptionWithNothingAfterItsEqualsSignIsNamed) {
  ExpectBadInput({"run", "--json=", "a.toml"}, "--json",
                 "'--json=' has nothing after the '=', so the next argument (a.toml) would be "
                 "taken as its value; write --json=VALUE or --json VALUE");
  ExpectBadInput({"run", "a.toml", "--junit="}, "--junit", "'--junit=' has nothing after the '='");
  ExpectBadInput({"run", "a.toml", "b.toml", "--junit=", "c.toml"}, "--junit", "(c.toml)");
}

// An empty path names no file: `--json ""` wrote nothing and said nothing.
TEST(Definitions, AnEmptyPathIsRefused) {
  const std::string words = "'' names no file or folder; give a path, or leave the option out";
  ExpectBadInput({"run", "--json", "", "x.toml"}, "--json", words);
  ExpectBadInput({"run", "--junit", "", "x.toml"}, "--junit", words);
  ExpectBadInput({"plan", "--json", "", "1G"}, "--json", words);
  ExpectBadInput({"doctor", "--record", ""}, "--record", words);
  ExpectBadInput({"import", "f.log", "-o", ""}, "--output", words);
  ExpectBadInput({"bench", "--json", ""}, "--json", words);
  ExpectBadInput({"stream", "--json", ""}, "--json", words);
  ExpectBadInput({"calibrate", "--out", ""}, "--out", words);
  ExpectBadInput({"fuse", "--machine", "h100-host", "--mount", ""}, "--mount",
                 "'' names no file or folder; give a path\n");
}

// What was dropped in silence: an --option no part reads, a backend part named twice, a stream
// of no blocks; and a rate's range no longer spells out DBL_MAX.
TEST(Definitions, ValuesThatWereIgnoredAreRefused) {
  ExpectBadInput({"run", "--option", "typo=1", "x.toml"}, "--option",
                 "no part of a backend reads 'typo'; the keys are card_devices, card_mailbox, "
                 "cuda_device, edu_devices, gpudirect, host_region_size, kmod_devices, "
                 "p2p_provider");
  ExpectBadInput({"run", "--option", "=bar", "x.toml"}, "--option", "'=bar' names no key");
  ExpectBadInput({"run", "--backend", "platform=sim,region=sim,gpu=sim,gpu=cuda", "x.toml"},
                 "--backend", "backend part 'gpu' is given twice");
  ExpectBadInput({"stream", "--blocks", "0"}, "--blocks", "'0' is less than 1, the least allowed");
  ExpectBadInput({"stream", "--slots", "1"}, "--slots", "Value 1 not in range 2 to");
  ExpectBadInput({"stream", "--rate", "-5"}, "--rate", "'-5' is not a number of 0 or more");
  EXPECT_EQ(Call({"stream", "--rate", "-5"}).err.find("1797693"), std::string::npos);
  ExpectBadInput({"stream", "--rate", "nan"}, "--rate", "'nan' is not a number of 0 or more");
}

// The value kinds on an app of their own (ParseArgs, as a probe binary uses it).
TEST(Values, SizesCountsAndTheirMessages) {
  uint64_t block = 16ull << 20, count = 3;
  std::vector<uint64_t> sizes = {64ull << 10};
  auto app = MakeApp("probe", "probe");
  AddSizeOption(*app, "--block", &block, "block", 4096);
  AddSizeListOption(*app, "--sizes", &sizes, "sizes");
  app->add_option("--count", count, "count")->check(NonNegativeInteger());
  std::ostringstream out, err;
  EXPECT_EQ(ParseArgs(*app, {"--block", "2M", "--sizes=4K,1G", "--count", "0x10"}, out, err),
            std::nullopt)
      << err.str();
  EXPECT_EQ(block, 2ull << 20);
  EXPECT_EQ(sizes, (std::vector<uint64_t>{4096, 1ull << 30}));
  EXPECT_EQ(count, 16u);
  EXPECT_EQ(ParseArgs(*app, {"--count", "-1"}, out, err), kExitBadInput);
  EXPECT_NE(err.str().find("probe: --count: '-1' is not a whole number of 0 or more"),
            std::string::npos)
      << err.str();
  std::ostringstream help;
  EXPECT_EQ(ParseArgs(*app, {"--help"}, help, err), kExitOk);
  EXPECT_NE(help.str().find("--block SIZE=16M"), std::string::npos) << help.str();
  EXPECT_EQ(SpellSize(0), "0");
  EXPECT_EQ(SpellSize(4096), "4K");
  EXPECT_EQ(SpellSize(188ull << 30), "188G");
  EXPECT_EQ(SpellSize(1000), "1000");
}

// A count with a least value, a number of 0 or more, a path; a probe's leftovers in order.
TEST(Values, LeastCountsRatesPathsAndLeftovers) {
  uint64_t blocks = 5;
  double rate = 1;
  std::string file = "x";
  auto app = MakeApp("probe", "probe");
  app->add_option("--blocks", blocks, "blocks")->check(WholeNumberFrom(1));
  app->add_option("--rate", rate, "rate")->check(NonNegativeReal());
  app->add_option("--file", file, "file")->check(PathNamed());
  std::ostringstream out, err;
  EXPECT_EQ(ParseArgs(*app, {"--blocks", "1", "--rate", "0", "--file", "f"}, out, err),
            std::nullopt)
      << err.str();
  EXPECT_EQ(blocks, 1u);
  EXPECT_EQ(rate, 0);
  for (const auto& [args, words] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--blocks", "0"}, "--blocks: '0' is less than 1, the least allowed"},
           {{"--rate", "-0.5"}, "--rate: '-0.5' is not a number of 0 or more"},
           {{"--rate", "1e999"}, "--rate: '1e999' is not a number of 0 or more"},
           {{"--file", ""}, "--file: '' names no file or folder"},
           {{"--file=", "g"}, "--file: '--file=' has nothing after the '='"},
           {{"a", "--x", "b"}, "The following arguments were not expected: a --x b"}}) {
    std::ostringstream o, e;
    EXPECT_EQ(ParseArgs(*app, args, o, e), kExitBadInput) << words;
    EXPECT_NE(e.str().find("probe: " + words), std::string::npos) << e.str();
  }
}

// A count is decimal (or 0x hex): CLI11's strtoull(..., 0) read "010" as octal 8 and refused
// "09"; a number past 2^64-1 was "not a whole number" though it was one, too large.
TEST(Values, CountsAreDecimalAndSayWhenTooLarge) {
  uint64_t count = 3;
  auto app = MakeApp("probe", "probe");
  app->add_option("--count", count, "count")->check(NonNegativeInteger());
  auto refused = [&](const std::string& text, const std::string& want) {
    std::ostringstream out, err;
    EXPECT_EQ(ParseArgs(*app, {"--count", text}, out, err), kExitBadInput) << text;
    EXPECT_NE(err.str().find("probe: --count: '" + text + "' " + want), std::string::npos)
        << err.str();
  };
  refused("010", "starts with 0, which would read as octal: write it without the leading zeros (10)");
  refused("09", "starts with 0, which would read as octal: write it without the leading zeros (9)");
  refused("99999999999999999999", "is too large (at most 18446744073709551615)");
  refused("0x10000000000000000", "is too large (at most 18446744073709551615)");
  refused("+5", "is not a whole number of 0 or more");
  refused(" 5", "is not a whole number of 0 or more");
  refused("0x", "is not a whole number of 0 or more");
  for (const auto& [text, want] : std::vector<std::pair<std::string, uint64_t>>{
           {"0", 0}, {"10", 10}, {"0x1F", 31}, {"18446744073709551615", UINT64_MAX}}) {
    std::ostringstream out, err;
    EXPECT_EQ(ParseArgs(*app, {"--count", text}, out, err), std::nullopt) << text << err.str();
    EXPECT_EQ(count, want) << text;
  }
}

}  // namespace
}  // namespace resmem::cli
