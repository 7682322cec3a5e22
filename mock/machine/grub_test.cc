// mock/machine/grub.h against GRUB's and dash's rules: one case per rule (with the source line),
// the recorded behaviour of the real programs (testdata/grub_emu_transcript.txt: Debian 12's
// grub-emu 2.06-13 and dash, from testdata/grub_emu_record.sh), the /etc/default/grub table of
// 0-4 backslashes, the reverse spelling for `resmem plan`, and bad input.
#include "mock/machine/grub.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

namespace resmem::sim {
namespace {

std::vector<std::string> Argv(const std::string& grub_cfg_text) {
  std::vector<std::string> notes;
  auto r = GrubExpandArguments(grub_cfg_text, "\techo\t'Loading initial ramdisk ...'", {}, &notes);
  EXPECT_TRUE(r.ok()) << grub_cfg_text << ": " << r.status().message();
  return r.ok() ? *r : std::vector<std::string>{"<error>"};
}

std::string Kernel(const std::string& source, const std::string& text) {
  auto t = TraceKernelCmdline(source, text);
  EXPECT_TRUE(t.ok()) << text << ": " << t.status().message();
  return t.ok() ? t->kernel : "<error: " + t.status().message() + ">";
}

using V = std::vector<std::string>;

// --- GRUB's lexer (grub-core/script/yylex.l, GRUB 2.06 = 2.12) ---------------------------------

TEST(GrubLexer, DollarDigitsIsAPositionalParameterUnsetInAMenuentry) {
  // VARIABLE ${DIGITS}, DIGITS [[:digit:]]+: "$4" is parameter 4; the seed's line loses "$4"
  // only, keeping the "G" after it (execute.c grub_script_env_get: num > argc gives nothing).
  EXPECT_EQ(Argv("memmap=8G$4G"), V{"memmap=8GG"});
  EXPECT_EQ(Argv("memmap=4G$10x1"), V{"memmap=4Gx1"});            // DIGITS is greedy: $10
  EXPECT_EQ(Argv("memmap=64M$0x40000000"), V{"memmap=64Mx40000000"});  // $0: "no file name"
}

TEST(GrubLexer, ParameterOneIsTheMenuentryTitleSplitAtSpaces) {
  // commands/menuentry.c: the entry's parameters are its title (setparams 'TITLE');
  // an unquoted value is split into words (argv.c grub_script_argv_split_append).
  EXPECT_EQ(Argv("memmap=8G$1G"), (V{"memmap=8GDebian", "GNU/LinuxG"}));
  EXPECT_EQ(Argv("memmap=8G${1}G"), (V{"memmap=8GDebian", "GNU/LinuxG"}));
  EXPECT_EQ(Argv("\"memmap=8G$1G\""), V{"memmap=8GDebian GNU/LinuxG"});  // DQVAR: not split
}

TEST(GrubLexer, SpecialsAreCountStatusAndParameters) {
  // SPECIAL \?|\#|\*|\@ ; execute.c: $# = argc, $? = last status (echo: 0), $* $@ = parameters.
  EXPECT_EQ(Argv("memmap=8G$#G"), V{"memmap=8G1G"});
  EXPECT_EQ(Argv("memmap=8G${#}G"), V{"memmap=8G1G"});
  EXPECT_EQ(Argv("memmap=8G$?G"), V{"memmap=8G0G"});
  EXPECT_EQ(Argv("memmap=8G$*G"), (V{"memmap=8GDebian", "GNU/LinuxG"}));
  EXPECT_EQ(Argv("\"memmap=8G$@G\""), V{"memmap=8GDebian GNU/LinuxG"});
}

TEST(GrubLexer, NameIsAlphaUnderscoreThenAlnumUnderscore) {
  // NAME [[:alpha:]_][[:alnum:]_]*: "$G" eats "G", "$x.y" stops at the dot.
  EXPECT_EQ(Argv("memmap=8G$GG"), V{"memmap=8G"});
  EXPECT_EQ(Argv("memmap=8G${G}x"), V{"memmap=8Gx"});
  EXPECT_EQ(Argv("memmap=8G$x.y"), V{"memmap=8G.y"});
  EXPECT_EQ(Argv("memmap=8G$G_4 y"), (V{"memmap=8G", "y"}));
}

TEST(GrubLexer, UnsetVariableAloneIsNoArgumentQuotedItIsAnEmptyOne) {
  // argv.c grub_script_argv_next reuses a NULL argument; "" appends "" (execute.c DQSTR).
  EXPECT_EQ(Argv("$x y"), V{"y"});
  EXPECT_EQ(Argv("\"$x\" y"), (V{"", "y"}));
  EXPECT_EQ(Argv("\"\" x"), (V{"", "x"}));
}

TEST(GrubLexer, BackslashOutsideQuotesIsTheNextCharacter) {
  // ESC \\(.|\n); SPLIT copies "\c", execute.c wildcard_unescape drops the backslash.
  EXPECT_EQ(Argv("memmap=8G\\$4G"), V{"memmap=8G$4G"});
  EXPECT_EQ(Argv("memmap=8G\\G"), V{"memmap=8GG"});
  EXPECT_EQ(Argv("a\\\\b"), V{"a\\b"});
  EXPECT_EQ(Argv("a\\ b c"), (V{"a b", "c"}));
  EXPECT_EQ(Argv("memmap=8G\\\\$4G"), V{"memmap=8G\\G"});   // \\ then $4
  EXPECT_EQ(Argv("memmap=8G\\\\\\$4G"), V{"memmap=8G\\$4G"});
}

TEST(GrubLexer, BackslashInDoubleQuotesEscapesOnlyDollarBackslashQuote) {
  // <DQUOTE>: \$ \\ \" are the character; any other backslash stays ((.|\n) rule).
  EXPECT_EQ(Argv("\"memmap=8G\\$4G\""), V{"memmap=8G$4G"});
  EXPECT_EQ(Argv("\"memmap=8G\\\\$4G\""), V{"memmap=8G\\G"});
  EXPECT_EQ(Argv("\"memmap=8G\\G\""), V{"memmap=8G\\G"});
  EXPECT_EQ(Argv("\"a\\\"b\""), V{"a\"b"});
  EXPECT_EQ(Argv("\"memmap=8G$4G\""), V{"memmap=8GG"});     // $ expands in double quotes
}

TEST(GrubLexer, SingleQuotesAreLiteral) {
  // SQSTR \'{SQCHR}*\', SQCHR [^\']
  EXPECT_EQ(Argv("'memmap=8G$4G'"), V{"memmap=8G$4G"});
  EXPECT_EQ(Argv("'a\\b'"), V{"a\\b"});
  EXPECT_EQ(Argv("'a'\"b\"c"), V{"abc"});  // WORD ({CHAR}|{DQSTR}|{SQSTR}|...)+: one word
}

TEST(GrubLexer, BlanksSeparateWordsCommentsAndSemicolonsEndThem) {
  EXPECT_EQ(Argv("a\tb"), (V{"a", "b"}));   // BLANK [ \t]
  EXPECT_EQ(Argv("a#b c"), (V{"a#b", "c"}));  // # inside a word is a CHAR
  EXPECT_EQ(Argv("a #b c"), V{"a"});          // COMMENT #.*$ where a token starts
  EXPECT_EQ(Argv("a;b c"), V{"a"});           // ";": "b c" is another command
  EXPECT_EQ(Argv("$\"Loading\""), V{"Loading"});  // I18NSTR, untranslated
}

TEST(GrubLexer, TrailingBackslashJoinsTheNextGrubCfgLine) {
  // POS_MULTILINE {WORD}?\\\n: the next line of a 10_linux entry becomes arguments.
  EXPECT_EQ(Argv("quiet \\"), (V{"quiet", "echo", "Loading initial ramdisk ..."}));
  std::vector<std::string> notes;
  auto joined = GrubExpandArguments("quiet\\", "splash", {}, &notes);  // no blank between
  ASSERT_TRUE(joined.ok());
  EXPECT_EQ(*joined, V{"quietsplash"});
}

TEST(GrubLexer, ABadDollarOrOperatorIsASyntaxErrorThatDropsTheEntry) {
  // The lexer's "." rule (no VARIABLE matches) and tokens script.y does not take in arguments.
  for (const char* bad : {"a=$ b", "memmap=8G$", "a=${4G} b", "a=${ b", "a=${x b", "\"abc",
                          "'abc", "a|b", "a&b", "a<b", "a>b", "a{b", "a}b", "\"a$ b\""}) {
    std::vector<std::string> notes;
    auto r = GrubExpandArguments(bad, "", {}, &notes);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("menuentry"), std::string::npos) << bad;
  }
}

// --- Recorded ground truth: grub-emu 2.06-13 and dash ------------------------------------------

struct Recorded {
  std::string text;
  bool is_default = false;   // an /etc/default/grub case
  bool dropped = false;
  bool shell_error = false;
  std::string shell_message; // dash's words, after "/etc/default/grub: "
  std::string cfg;           // default cases: the grub.cfg text after "ro "
  V argv;
};

std::string Decode(const std::string& s) {  // "\n" in a case stands for a newline
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<Recorded> ReadTranscript() {
  std::ifstream in("mock/machine/testdata/grub_emu_transcript.txt");
  EXPECT_TRUE(in.good()) << "testdata/grub_emu_transcript.txt is missing from the runfiles";
  std::vector<Recorded> out;
  std::string line;
  int argc = -1;
  while (std::getline(in, line)) {
    auto starts = [&](const char* p) { return line.rfind(p, 0) == 0; };
    if (starts("case: ") || starts("default: ")) {
      Recorded r;
      r.is_default = starts("default: ");
      r.text = Decode(line.substr(r.is_default ? 9 : 6));
      out.push_back(r);
      argc = -1;
    } else if (out.empty()) {
      continue;
    } else if (starts("argc: ")) {
      argc = std::stoi(line.substr(6));
    } else if (starts("argv: <") && argc > 0) {
      out.back().argv.push_back(line.substr(7, line.size() - 8));
    } else if (line == "dropped") {
      out.back().dropped = true;
    } else if (starts("shell: ")) {
      out.back().shell_error = true;
      const std::string prefix = "shell: /etc/default/grub: ";
      if (starts(prefix.c_str())) out.back().shell_message = line.substr(prefix.size());
    } else if (starts("cfg: ")) {
      out.back().cfg = line.substr(5);
    }
  }
  return out;
}

TEST(GrubEmuTranscript, EveryGrubCfgCaseGivesGrubsOwnArguments) {
  auto cases = ReadTranscript();
  int n = 0;
  for (const auto& c : cases) {
    if (c.is_default) continue;
    ++n;
    std::vector<std::string> notes;
    auto r = GrubExpandArguments(c.text, "\techo\t'Loading initial ramdisk ...'", {}, &notes);
    if (c.dropped) {
      EXPECT_FALSE(r.ok()) << "grub-emu dropped the entry for: " << c.text;
    } else {
      ASSERT_TRUE(r.ok()) << c.text << ": " << r.status().message();
      EXPECT_EQ(*r, c.argv) << "case: " << c.text;
    }
  }
  EXPECT_GE(n, 60) << "grub_cfg cases read from the transcript";
  std::cout << n << " grub.cfg cases compared with grub-emu 2.06-13\n";
}

TEST(GrubEmuTranscript, EveryEtcDefaultGrubCaseGivesDashsGrubCfgAndGrubsArguments) {
  auto cases = ReadTranscript();
  int n = 0;
  for (const auto& c : cases) {
    if (!c.is_default) continue;
    ++n;
    auto t = TraceKernelCmdline("etc-default-grub", c.text);
    if (c.shell_error || c.dropped) {
      ASSERT_FALSE(t.ok()) << "dash or GRUB stopped on: " << c.text;
      // The error names what dash said.
      EXPECT_NE(t.status().message().find(c.shell_message), std::string::npos)
          << c.shell_message << " / " << t.status().message();
      continue;
    }
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.status().message();
    const std::string first_line = t->grub_cfg.substr(0, t->grub_cfg.find('\n'));
    EXPECT_EQ(first_line, c.cfg) << "default: " << c.text;
    EXPECT_EQ(t->grub_argv, c.argv) << "default: " << c.text;
  }
  EXPECT_GE(n, 40) << "/etc/default/grub cases read from the transcript";
  std::cout << n << " /etc/default/grub cases compared with dash + grub-emu\n";
}

// --- GRUB's Linux loader (grub-core/lib/cmdline.c, loader/i386/linux.c) -------------------------

TEST(GrubLoader, BootImageFirstThenArgumentsJoinedBySpaces) {
  std::vector<std::string> notes;
  EXPECT_EQ(GrubLoaderCmdline("/boot/vmlinuz-6.1.0", {"root=/dev/sda1", "ro", "quiet"}, {}, &notes),
            "BOOT_IMAGE=/boot/vmlinuz-6.1.0 root=/dev/sda1 ro quiet");
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(Kernel("grub-cfg", "linux\t/boot/vmlinuz-6.1.0 root=/dev/sda1 ro memmap=8G\\$4G"),
            "BOOT_IMAGE=/boot/vmlinuz-6.1.0 root=/dev/sda1 ro memmap=8G$4G");
}

TEST(GrubLoader, EscapesBackslashQuotesAndQuotesWordsWithSpaces) {
  std::vector<std::string> notes;
  EXPECT_EQ(GrubLoaderCmdline("", {"a\\b", "x=\"y\"", "it's", "b c"}, {}, &notes),
            "a\\\\b x=\\\"y\\\" it\\'s \"b c\"");
  EXPECT_EQ(notes.size(), 4u);
}

TEST(GrubLoader, ArgumentsPastCmdlineSizeAreDroppedWholeWithAllAfterThem) {
  // i386/linux.c: cmdline_size + 1 - strlen("BOOT_IMAGE="): 2037 bytes for path and arguments.
  GrubAssumptions a;
  std::vector<std::string> argv;
  for (int i = 0; i < 300; ++i) argv.push_back("opt" + std::to_string(1000 + i));  // 8 bytes each
  std::vector<std::string> notes;
  const std::string line = GrubLoaderCmdline("", argv, a, &notes);
  // The path "/boot/vmlinuz-6.1.0-13-amd64" takes 29; (2037 - 29) / 8 = 251 arguments fit.
  EXPECT_EQ(std::count(line.begin(), line.end(), ' ') + 1, 251);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("drops argument 252"), std::string::npos) << notes[0];
  EXPECT_LE(line.size() + 11 + 29, 2047u);
}

// --- /etc/default/grub through dash, grub.cfg and GRUB: what the kernel receives ----------------

TEST(EtcDefaultGrub, BackslashTableDoubleSingleAndNoQuotes) {
  struct Row {
    const char* written;
    const char* grub_cfg;
    const char* kernel;
  };
  // The seed's option with 0-4 backslashes before its dollar; every row is also in the
  // transcript (dash + grub-emu), the kernel column adds lib/cmdline.c's escaping.
  const Row rows[] = {
      {R"("memmap=8G$4G")", "memmap=8GG ", "memmap=8GG"},             // dash: $4 unset
      {R"("memmap=8G\$4G")", "memmap=8G$4G ", "memmap=8GG"},          // GRUB: $4 unset
      {R"("memmap=8G\\$4G")", "memmap=8G\\G ", "memmap=8GG"},         // GRUB: \G is G
      {R"("memmap=8G\\\$4G")", "memmap=8G\\$4G ", "memmap=8G$4G"},    // the right spelling
      {R"("memmap=8G\\\\$4G")", "memmap=8G\\\\G ", "memmap=8G\\\\G"},  // a backslash reaches
      {R"('memmap=8G$4G')", "memmap=8G$4G ", "memmap=8GG"},
      {R"('memmap=8G\$4G')", "memmap=8G\\$4G ", "memmap=8G$4G"},      // single: one is enough
      {R"('memmap=8G\\$4G')", "memmap=8G\\\\$4G ", "memmap=8G\\\\G"},
      {R"('memmap=8G\\\$4G')", "memmap=8G\\\\\\$4G ", "memmap=8G\\\\$4G"},
      {R"('memmap=8G\\\\$4G')", "memmap=8G\\\\\\\\$4G ", "memmap=8G\\\\\\\\G"},
      {R"(memmap=8G$4G)", "memmap=8GG ", "memmap=8GG"},
      {R"(memmap=8G\$4G)", "memmap=8G$4G ", "memmap=8GG"},
      {R"(memmap=8G\\$4G)", "memmap=8G\\G ", "memmap=8GG"},
      {R"(memmap=8G\\\$4G)", "memmap=8G\\$4G ", "memmap=8G$4G"},
      {R"(memmap=8G\\\\$4G)", "memmap=8G\\\\G ", "memmap=8G\\\\G"},
  };
  for (const Row& r : rows) {
    auto t = TraceKernelCmdline("etc-default-grub", std::string("GRUB_CMDLINE_LINUX=") + r.written);
    ASSERT_TRUE(t.ok()) << r.written << ": " << t.status().message();
    EXPECT_EQ(t->grub_cfg, r.grub_cfg) << r.written;
    EXPECT_EQ(t->kernel, r.kernel) << r.written;
    EXPECT_EQ(t->Changed(), std::string(r.kernel) != "memmap=8G$4G") << r.written;
    // The bare right-hand side means the same.
    EXPECT_EQ(Kernel("etc-default-grub", r.written), r.kernel) << r.written;
  }
}

TEST(EtcDefaultGrub, ShellParametersAreGrubMkconfigs) {
  // grub-mkconfig.in line 126 `set $grub_probe dummy`; $0 is grub-mkconfig; POSIX $12 = $1 "2".
  EXPECT_EQ(Kernel("etc-default-grub", R"("memmap=64M$0x40000000")"),
            "memmap=64M/usr/sbin/grub-mkconfigx40000000");
  EXPECT_EQ(Kernel("etc-default-grub", R"("memmap=8G$1G")"), "memmap=8G/usr/sbin/grub-probeG");
  EXPECT_EQ(Kernel("etc-default-grub", R"("memmap=8G$12G")"), "memmap=8G/usr/sbin/grub-probe2G");
  EXPECT_EQ(Kernel("etc-default-grub", R"("memmap=8G$#G")"), "memmap=8G2G");
  // "$ " is itself to dash (transcript: cfg "memmap=8G$ G"), then a syntax error to GRUB.
  auto lone = TraceKernelCmdline("etc-default-grub", R"("memmap=8G$ G")");
  ASSERT_FALSE(lone.ok());
  EXPECT_NE(lone.status().message().find("'linux ... ro memmap=8G$ G '"), std::string::npos)
      << lone.status().message();
}

TEST(EtcDefaultGrub, LinuxThenDefaultJoinedByASpaceAndTheFileCanReferToItself) {
  // 10_linux.in: "${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}"
  auto t = TraceKernelCmdline("etc-default-grub",
                              "# comment\nGRUB_DEFAULT=0\nGRUB_DISTRIBUTOR=`lsb_release -i -s 2> "
                              "/dev/null || echo Debian`\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n"
                              "GRUB_CMDLINE_LINUX=\"mem=4G\"\n"
                              "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX memmap=8G\\\\\\$4G\"\n");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->grub_cmdline_linux, "mem=4G memmap=8G\\$4G");
  EXPECT_EQ(t->grub_cfg, "mem=4G memmap=8G\\$4G quiet");
  EXPECT_EQ(t->kernel, "mem=4G memmap=8G$4G quiet");
  EXPECT_EQ(t->kernel_full,
            "BOOT_IMAGE=/boot/vmlinuz-6.1.0-13-amd64 root=<root device> ro mem=4G memmap=8G$4G quiet");
}

TEST(EtcDefaultGrub, TrailingBackslashEscapesTheJoiningSpace) {
  // "quiet\\" -> quiet\ ; 10_linux adds " " + DEFAULT: GRUB reads "\ " as a space in the word,
  // and the loader quotes it (transcript: argv <quiet >).
  auto t = TraceKernelCmdline("etc-default-grub", R"(GRUB_CMDLINE_LINUX="quiet\\")");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->grub_argv, V{"quiet "});
  EXPECT_EQ(t->kernel, "\"quiet \"");
}

// --- Bad input ---------------------------------------------------------------------------------

TEST(BadInput, UnterminatedQuotesAndBadSubstitutionsStopDashWithTheReason) {
  for (const char* bad : {R"(GRUB_CMDLINE_LINUX="quiet)", R"(GRUB_CMDLINE_LINUX='quiet)",
                          R"(GRUB_CMDLINE_LINUX="quiet\")", R"(GRUB_CMDLINE_LINUX="a${4G}")",
                          R"(GRUB_CMDLINE_LINUX="a${")", "GRUB_CMDLINE_LINUX=quiet splash",
                          "GRUB_CMDLINE_LINUX=\"$(uname -r)\"", "GRUB_CMDLINE_LINUX=a|b"}) {
    auto t = TraceKernelCmdline("etc-default-grub", bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("/etc/default/grub"), std::string::npos) << bad;
  }
  auto t = TraceKernelCmdline("etc-default-grub", "GRUB_CMDLINE_LINUX=quiet splash");
  EXPECT_NE(t.status().message().find("splash: not found"), std::string::npos)
      << t.status().message();
}

TEST(BadInput, GrubCfgSyntaxErrorsNameTheEntryThatIsDropped) {
  for (const char* bad : {"memmap=8G${", "\"quiet", "a=$ b"}) {
    auto t = TraceKernelCmdline("grub-cfg", bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_NE(t.status().message().find("drops the whole menuentry"), std::string::npos)
        << t.status().message();
  }
  EXPECT_EQ(ExpandGrubLine("a=$ b"), "");
}

TEST(BadInput, A4096CharacterLineIsCutWhereGrubsLoaderCutsIt) {
  std::string line;
  while (line.size() < 4096) line += "memmap=1M$0x" + std::to_string(100000 + line.size()) + " ";
  line.resize(4096);
  for (const char* source : {"grub-cfg", "etc-default-grub"}) {
    auto t = TraceKernelCmdline(source, source == std::string("grub-cfg") ? line : "\"" + line + "\"");
    ASSERT_TRUE(t.ok()) << source << ": " << t.status().message();
    // Unescaped dollars expand (to "x..."), and the loader keeps what fits in 2047.
    EXPECT_LE(t->kernel.size() + 11 + 29, 2047u) << source;
    EXPECT_GT(t->kernel.size(), 1900u) << source;
    EXPECT_TRUE(t->Changed());
  }
  auto k = TraceKernelCmdline("kernel", line);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->kernel, line);  // literal: what the kernel keeps of it is Boot()'s rule
  EXPECT_FALSE(k->Changed());
}

TEST(BadInput, ArbitraryTextNeverCrashesOrHangs) {
  // Every byte the lexers treat specially, in random order: each text gives a line or an error.
  const std::string alphabet = "$\\'\"{}|&;<>#` \t\nabG4=()_*?@!-x\x80";
  uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<size_t>(state >> 33);
  };
  int lines = 0, errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const size_t n = next() % 40;
    for (size_t k = 0; k < n; ++k) text += alphabet[next() % alphabet.size()];
    for (const char* source : {"grub-cfg", "etc-default-grub"}) {
      auto t = TraceKernelCmdline(source, text);
      if (t.ok()) {
        ++lines;
      } else {
        ++errors;
        EXPECT_FALSE(t.status().message().empty());
      }
    }
  }
  EXPECT_GT(lines, 0);
  EXPECT_GT(errors, 0);
  std::cout << lines << " random texts gave a kernel line, " << errors << " an error\n";
}

TEST(BadInput, UnknownSourceNamesTheAcceptedOnes) {
  auto t = TraceKernelCmdline("lilo", "quiet");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("etc-default-grub"), std::string::npos);
  EXPECT_TRUE(TraceKernelCmdline("grub", "quiet").ok());  // the old name of grub-cfg
}

// --- The other direction: what `resmem plan` prints --------------------------------------------

TEST(SpellKernelOptionsForGrub, EachSpellingGivesTheKernelTheOptionsBack) {
  for (const char* options :
       {"memmap=8G$4G", "mem=4G memmap=8G$4G", "memmap=64M$0x40000000,128M$0x80000000",
        "memmap=1G!4G memmap=2G#8G", "memmap=100M@2G", "console=ttyS0,115200n8 a;b={x}|&<>#"}) {
    auto s = SpellKernelOptionsForGrub(options);
    ASSERT_TRUE(s.ok()) << options << ": " << s.status().message();
    auto cfg = TraceKernelCmdline("grub-cfg", s->grub_cfg);
    ASSERT_TRUE(cfg.ok()) << s->grub_cfg << ": " << cfg.status().message();
    EXPECT_EQ(cfg->kernel, options) << s->grub_cfg;
    EXPECT_FALSE(cfg->Changed()) << s->grub_cfg;
    auto def = TraceKernelCmdline("etc-default-grub", s->etc_default_grub_line);
    ASSERT_TRUE(def.ok()) << s->etc_default_grub_line << ": " << def.status().message();
    EXPECT_EQ(def->kernel, options) << s->etc_default_grub_line;
    EXPECT_EQ(def->grub_cmdline_linux, s->grub_cfg);
  }
  auto seed = SpellKernelOptionsForGrub("memmap=8G$4G");
  ASSERT_TRUE(seed.ok());
  EXPECT_EQ(seed->grub_cfg, "memmap=8G\\$4G");
  EXPECT_EQ(seed->etc_default_grub_line, R"(GRUB_CMDLINE_LINUX="memmap=8G\\\$4G")");
}

TEST(SpellKernelOptionsForGrub, RefusesWhatGrubsLoaderWouldEscape) {
  EXPECT_FALSE(SpellKernelOptionsForGrub("a=\"b c\"").ok());
  EXPECT_FALSE(SpellKernelOptionsForGrub("a\\b").ok());
  EXPECT_FALSE(SpellKernelOptionsForGrub("  ").ok());
}

// Found by the cmdline fuzz target: a line of "export" and blanks threw std::out_of_range.
TEST(EtcDefaultGrub, ExportFollowedByBlanksOnlyNamesNothing) {
  auto t = TraceKernelCmdline("etc-default-grub", "export   \nGRUB_CMDLINE_LINUX=\"mem=4G\"\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->grub_cmdline_linux, "mem=4G");
  (void)TraceKernelCmdline("etc-default-grub", "export ");
}

}  // namespace
}  // namespace resmem::sim
