// The shell pass of grub-mkconfig, GRUB's script lexer and executor, and GRUB's Linux loader, as
// they turn what a user wrote into the kernel's command line. Sources, by stage:
//   dash        POSIX sh quoting and parameter expansion; grub-2.06 util/grub-mkconfig.in
//               (line 2 `set -e`, line 126 `set $grub_probe dummy`, lines 160-161
//               `. ${sysconfdir}/default/grub`), util/grub.d/10_linux.in linux_entry (args="$4",
//               the `linux` line written by `sed ... << EOF` with ${args} expanded once and not
//               rescanned; the next line is "\techo\t'Loading initial ramdisk ...'").
//   GRUB lexer  grub-core/script/yylex.l (BLANK, COMMENT, CHAR, DIGITS, NAME, ESC, SPECIAL,
//               VARIABLE, WORD, MULTILINE, POS_MULTILINE and the SPLIT, DQUOTE, SQUOTE, VAR
//               states), script.y (a bad token is a syntax error: normal/main.c drops the whole
//               menuentry being parsed).
//   GRUB exec   grub-core/script/execute.c grub_script_env_get (positional parameters, $#, $*,
//               $@; unset variables give no value), grub_script_arglist_to_argv (unquoted values
//               split into words; a word that expands to nothing is no argument; quoted "" is an
//               empty one), argv.c grub_script_argv_next / grub_script_argv_split_append;
//               commands/menuentry.c (the entry's parameters are its title: `setparams 'TITLE'`).
//   loader      grub-core/loader/i386/linux.c grub_cmd_linux ("BOOT_IMAGE=" + argv, cmdline_size
//               from the kernel's setup header + 1), grub-core/lib/cmdline.c
//               grub_create_loader_cmdline (\ ' " escaped; a word with a space in double quotes;
//               arguments that do not fit are dropped, with all after them).
// GRUB 2.12 has the same lexer, executor, lib/cmdline.c, i386 loader command line, and 10_linux
// linux line (git diff grub-2.06 grub-2.12: whitespace only in grub-core/script). Observed
// behaviour is recorded in testdata/grub_emu_transcript.txt (Debian 12 grub-emu 2.06-13 and dash).
#include "mock/machine/grub.h"

#include <map>
#include <optional>
#include <set>

namespace resmem::sim {
namespace {

constexpr const char* kInitrdEchoLine = "\techo\t'Loading initial ramdisk ...'";

bool IsAsciiAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return IsAsciiAlpha(c) || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }
// grub_isspace (include/grub/misc.h): what grub_script_argv_split_append splits on.
bool IsGrubSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string Shorten(const std::string& s) {
  std::string out;
  for (char c : s.size() > 80 ? s.substr(0, 77) + "..." : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// GRUB's lexer and executor.

// One argument being built: absent until something is appended (argv.c grub_script_argv_next
// reuses an argument that is still NULL, so a word that expanded to nothing is no argument).
struct ArgvBuilder {
  std::vector<std::string> argv;
  std::optional<std::string> current;
  void Append(const std::string& s) {
    if (!current) current = std::string();
    *current += s;
  }
  void Next() {
    if (current) argv.push_back(*current);
    current.reset();
  }
};

// The variables GRUB itself sets before a menuentry runs (kern/main.c, normal/main.c,
// normal/menu.c, 00_header): their value on the machine replaces them, unknown to the model.
const std::set<std::string>& GrubSetVariables() {
  static const std::set<std::string> names = {
      "root", "prefix", "cmdpath", "grub_platform", "grub_cpu", "chosen", "default", "timeout",
      "menuentry_id_option", "lang", "locale_dir", "gfxmode", "gfxpayload", "pager",
      "secondary_locale_dir", "color_normal", "color_highlight", "feature_all_video_module",
      "feature_menuentry_id", "feature_default_font_path", "feature_platform_search_hint",
      "feature_timeout_style", "feature_200_final", "feature_nativedisk_cmd", "net_default_server",
      "linux_gfx_mode", "vt_handoff", "saved_entry", "next_entry", "prev_saved_entry", "boot_once"};
  return names;
}

class GrubLexer {
 public:
  GrubLexer(std::string text, std::string next_line, const GrubAssumptions& assume,
            std::vector<std::string>* notes)
      : s_(std::move(text)), next_line_(std::move(next_line)), assume_(assume), notes_(notes) {}

  Result<std::vector<std::string>> Run() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t') {  // BLANK
        ++i_;
        continue;
      }
      if (c == '\n' || c == ';') {  // "\n" ends the command; ";" GRUB_PARSER_TOKEN_SEMI
        EndOfCommand(c);
        break;
      }
      if (c == '#') {  // COMMENT #.*$ where a token starts (it is longer than any WORD there)
        const size_t nl = s_.find('\n', i_);
        Note("grub: '" + Shorten(s_.substr(i_, nl == std::string::npos ? nl : nl - i_)) +
             "' is a comment to GRUB (yylex.l COMMENT: '#' where a word starts): the kernel "
             "never sees it; escape it as \\#");
        i_ = nl == std::string::npos ? s_.size() : nl;
        continue;
      }
      if (IsOperator(c)) return SyntaxError(std::string("'") + c + "'", "yylex.l: { } | & < > are "
                                            "tokens of their own, which a command's arguments "
                                            "cannot hold (script.y)");
      RESMEM_RETURN_IF_ERROR(Word());
      b_.Next();
    }
    b_.Next();
    return b_.argv;
  }

 private:
  static bool IsOperator(char c) {
    return c == '{' || c == '}' || c == '|' || c == '&' || c == '<' || c == '>';
  }
  // CHAR is [^{}|&$;<> \t\n'"\\]: anything else ends or changes the word.
  static bool EndsWord(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == ';' || IsOperator(c);
  }

  void Note(const std::string& n) { notes_->push_back(n); }

  void EndOfCommand(char c) {
    std::string rest = s_.substr(i_ + 1);
    size_t first = rest.find_first_not_of(" \t\n");
    if (first != std::string::npos) {
      Note(std::string("grub: ") +
           (c == ';' ? "';' ends the linux command (yylex.l \";\")" : "a newline ends the linux "
                       "command") +
           ": GRUB runs '" + Shorten(rest.substr(first)) +
           "' as a command of its own (\"can't find command\" when it is not one) and the kernel "
           "never sees it");
      altered = true;
    }
    i_ = s_.size();
  }

  Status SyntaxError(const std::string& what, const std::string& rule) {
    return Status::InvalidArgument(
        "GRUB: syntax error at " + what + " in '" + Shorten(s_) + "' (" + rule +
        "): GRUB prints \"error: syntax error.\" and drops the whole menuentry "
        "(normal/main.c read_config_file; seen with grub-emu 2.06, testdata/"
        "grub_emu_transcript.txt), so this entry never boots and the kernel gets nothing from "
        "this line; escape the character with a backslash or put the word in single quotes");
  }

  // A backslash: ESC \\(.|\n). Outside quotes "\c" is c and "\<newline>" joins the next line
  // (SPLIT: \\. copies both, wildcard_unescape in execute.c drops the backslash; \\\n ignored).
  // At the very end of the text the newline that ends the grub.cfg line follows: POS_MULTILINE
  // reads the next line into this command.
  void Backslash() {
    if (i_ + 1 >= s_.size()) {
      Note("grub: the line ends in a backslash: GRUB joins the next grub.cfg line to it "
           "(yylex.l POS_MULTILINE), in a grub-mkconfig grub.cfg \"" + Shorten(next_line_) +
           "\", whose words become kernel arguments");
      altered = true;
      s_.pop_back();  // the backslash; i_ now points at the joined line's first character
      s_ += next_line_;
      next_line_.clear();
      return;
    }
    const char next = s_[i_ + 1];
    i_ += 2;
    if (next == '\n') return;
    b_.Append(std::string(1, next));
  }

  // The value(s) of a variable reference: execute.c grub_script_env_get inside the menuentry,
  // whose scope holds one parameter, the title. `quoted`: DQVAR (one value, no splitting).
  std::vector<std::string> Values(const std::string& name, const std::string& as_written,
                                  bool quoted) {
    const std::string& title = assume_.menuentry_title;
    std::vector<std::string> v;
    std::string why;
    if (name == "#") {
      v = {"1"};
      why = "the number of the menuentry's parameters: 1, its title";
    } else if (name == "?") {
      v = {"0"};
      why = "the status of the command before it (10_linux's echo 'Loading Linux ...'): 0";
    } else if (name == "*" || name == "@") {
      v = {title};
      why = "the menuentry's parameters: its title \"" + title + "\"";
    } else if (IsDigit(name[0])) {
      unsigned long n = 0;
      for (char d : name) n = n > 100000 ? n : n * 10 + (d - '0');
      if (n == 1) {
        v = {title};
        why = "the menuentry's parameter 1: its title \"" + title + "\"";
      } else if (n == 0) {
        why = "positional parameter 0, which GRUB leaves empty (execute.c: \"no file name, for "
              "now\")";
      } else {
        why = "positional parameter " + name + ", unset: a menuentry's only parameter is its "
              "title (commands/menuentry.c setparams)";
      }
    } else if (GrubSetVariables().count(name)) {
      why = "a variable GRUB sets at boot (its value on the machine would stand here; the model "
            "leaves it empty)";
    } else {
      why = "an unset GRUB variable";
    }
    if (!quoted && !v.empty()) {  // argv.c grub_script_argv_split_append
      std::vector<std::string> words;
      std::string w;
      for (char c : v[0]) {
        if (IsGrubSpace(c)) {
          if (!w.empty()) words.push_back(w);
          w.clear();
        } else {
          w += c;
        }
      }
      if (!w.empty()) words.push_back(w);
      if (words.size() > 1) why += ", split at its spaces into " + std::to_string(words.size()) +
                                   " arguments";
      v = words;
    }
    std::string shown = v.empty() ? "nothing" : "\"" + v[0] + "\"";
    if (v.size() > 1) shown = "the words of \"" + (quoted ? v[0] : title) + "\"";
    Note("grub: '" + as_written + "' is " + why + ": it becomes " + shown +
         " (yylex.l VARIABLE; execute.c grub_script_env_get)");
    altered = true;
    return v;
  }

  // After '$' (at i_): VARIABLE ${NAME}|$\{{NAME}\}|${DIGITS}|$\{{DIGITS}\}|${SPECIAL}|
  // $\{{SPECIAL}\}; anything else cannot start a token: the lexer's "." rule, a syntax error.
  Status Variable(bool quoted) {
    const size_t dollar = i_;
    ++i_;
    std::string name;
    if (i_ < s_.size() && s_[i_] == '{') {
      size_t j = i_ + 1;
      if (j < s_.size() && (s_[j] == '?' || s_[j] == '#' || s_[j] == '*' || s_[j] == '@')) {
        name = s_.substr(j, 1);
        ++j;
      } else if (j < s_.size() && IsDigit(s_[j])) {
        while (j < s_.size() && IsDigit(s_[j])) name += s_[j++];
      } else if (j < s_.size() && IsNameStart(s_[j])) {
        while (j < s_.size() && IsNameChar(s_[j])) name += s_[j++];
      }
      if (name.empty() || j >= s_.size() || s_[j] != '}')
        return SyntaxError("'" + Shorten(s_.substr(dollar, 6)) + "'",
                           "yylex.l VARIABLE: ${ must hold a NAME [A-Za-z_][A-Za-z0-9_]*, DIGITS "
                           "or one of ? # * @, then }");
      i_ = j + 1;
    } else if (i_ < s_.size() &&
               (s_[i_] == '?' || s_[i_] == '#' || s_[i_] == '*' || s_[i_] == '@')) {
      name = s_.substr(i_++, 1);
    } else if (i_ < s_.size() && IsDigit(s_[i_])) {  // DIGITS [[:digit:]]+: $10 is parameter 10
      while (i_ < s_.size() && IsDigit(s_[i_])) name += s_[i_++];
    } else if (i_ < s_.size() && IsNameStart(s_[i_])) {  // NAME [[:alpha:]_][[:alnum:]_]*
      while (i_ < s_.size() && IsNameChar(s_[i_])) name += s_[i_++];
    } else {
      return SyntaxError("'$'", "yylex.l: a $ must start $NAME, ${NAME}, $DIGITS or one of $? "
                         "$# $* $@; GRUB says \"error: $.\"");
    }
    const std::string as_written = s_.substr(dollar, i_ - dollar);
    std::vector<std::string> values = Values(name, as_written, quoted);
    for (size_t k = 0; k < values.size(); ++k) {
      if (k != 0) b_.Next();  // execute.c grub_script_arglist_to_argv: argv_next between values
      b_.Append(values[k]);
    }
    return Status::Ok();
  }

  // '...': SQSTR, literal; unterminated: MULTILINE reads on through the file (observed: the
  // entry is dropped with "out of memory" and "syntax error").
  Status SingleQuoted() {
    const size_t close = s_.find('\'', i_ + 1);
    if (close == std::string::npos) return Unterminated("'");
    b_.Append(s_.substr(i_ + 1, close - i_ - 1));
    i_ = close + 1;
    return Status::Ok();
  }

  Status Unterminated(const std::string& quote) {
    return Status::InvalidArgument(
        "GRUB: unterminated " + quote + " in '" + Shorten(s_) +
        "': GRUB's lexer reads the following grub.cfg lines into the string (yylex.l MULTILINE) "
        "and, with grub-mkconfig's lines after it, ends in \"error: syntax error.\" and drops "
        "the whole menuentry (grub-emu 2.06, testdata/grub_emu_transcript.txt): this entry never "
        "boots; close the quote");
  }

  // "...": DQUOTE: \$ \\ \" are the character, \<newline> nothing, any other \ stays; $ starts
  // a variable (DQVAR: not split).
  Status DoubleQuoted(bool gettext) {
    i_ += gettext ? 2 : 1;
    b_.Append("");  // a quoted string is an argument even when empty
    while (true) {
      if (i_ >= s_.size()) return Unterminated(gettext ? "$\"" : "\"");
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return Status::Ok();
      }
      if (c == '\\' && i_ + 1 < s_.size()) {
        const char n = s_[i_ + 1];
        if (n == '\n') {
          i_ += 2;
          continue;
        }
        if (n == '"' || n == '\\' || (n == '$' && !gettext)) {
          // I18NQUOTE keeps both characters of \\ (yylex.l: COPY ("\\\\", 2)).
          b_.Append(gettext && n == '\\' ? "\\\\" : std::string(1, n));
          i_ += 2;
          continue;
        }
      }
      if (c == '$' && !gettext) {
        RESMEM_RETURN_IF_ERROR(Variable(true));
        continue;
      }
      b_.Append(std::string(1, c));
      ++i_;
    }
  }

  Status Word() {
    while (i_ < s_.size() && !EndsWord(s_[i_])) {
      const char c = s_[i_];
      if (c == '\\') {
        Backslash();
      } else if (c == '\'') {
        RESMEM_RETURN_IF_ERROR(SingleQuoted());
      } else if (c == '"') {
        RESMEM_RETURN_IF_ERROR(DoubleQuoted(false));
      } else if (c == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '"') {
        Note("grub: $\"...\" is a string GRUB translates with gettext (yylex.l I18NSTR, "
             "execute.c gettext_append); untranslated it is its text");
        RESMEM_RETURN_IF_ERROR(DoubleQuoted(true));
      } else if (c == '$') {
        RESMEM_RETURN_IF_ERROR(Variable(false));
      } else {
        b_.Append(std::string(1, c));
        ++i_;
      }
    }
    return Status::Ok();
  }

 public:
  bool altered = false;

 private:
  std::string s_;
  std::string next_line_;
  const GrubAssumptions& assume_;
  std::vector<std::string>* notes_;
  size_t i_ = 0;
  ArgvBuilder b_;
};

// ---------------------------------------------------------------------------------------------
// dash sourcing /etc/default/grub inside grub-mkconfig.

struct ShellValue {
  std::string text;
  std::string unknown;  // why the value cannot be known here; empty when known
};

class ShellPass {
 public:
  ShellPass(std::string text, std::vector<std::string>* notes)
      : s_(std::move(text)), notes_(notes) {}

  // Runs the text; on success GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT are in vars_.
  Status Run() {
    while (i_ < s_.size()) {
      std::vector<std::string> assigned;
      std::string command;  // the first word that is not an assignment
      size_t command_line = line_;
      while (i_ < s_.size()) {
        const char c = s_[i_];
        if (c == ' ' || c == '\t') {
          ++i_;
          continue;
        }
        if (c == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {  // line continuation
          i_ += 2;
          ++line_;
          continue;
        }
        if (c == '\n' || c == ';') {
          if (c == '\n') ++line_;
          ++i_;
          break;
        }
        if (c == '#') {  // a comment where a word starts
          while (i_ < s_.size() && s_[i_] != '\n') ++i_;
          continue;
        }
        if (c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')')
          return Status::Unsupported(
              Where() + "'" + std::string(1, c) + "' is shell syntax (a pipe, redirection, "
              "background job or subshell) that the model does not run; /etc/default/grub "
              "should hold only NAME=\"value\" lines");
        // A word. An assignment is NAME= unquoted at the start of a word, before any command.
        size_t name_end = i_;
        while (name_end < s_.size() && IsNameChar(s_[name_end])) ++name_end;
        const bool is_assignment = (command.empty() || command == "export") && name_end > i_ &&
                                   IsNameStart(s_[i_]) && name_end < s_.size() &&
                                   s_[name_end] == '=';
        if (is_assignment) {
          const std::string name = s_.substr(i_, name_end - i_);
          const size_t start = i_;
          i_ = name_end + 1;
          auto value = Word(name);
          if (!value.ok()) return value.status();
          vars_[name] = *value;
          if (ForCmdline(name)) assignments.push_back(s_.substr(start, i_ - start));
          assigned.push_back(name);
        } else {
          const size_t start = i_;
          auto word = Word("");
          if (!word.ok()) return word.status();
          if (command.empty()) {
            command = s_.substr(start, i_ - start);
            command_line = line_;
          }
        }
      }
      if (!command.empty() && command != "export" && command != ":" && command != "true") {
        std::string for_whom = assigned.empty() ? "" : " (the assignment before it, " +
                                                       assigned.front() + "=..., then applies "
                                                       "only to that command's environment)";
        return Status::InvalidArgument(
            "line " + std::to_string(command_line) + ": dash runs '" + Shorten(command) +
            "' as a command" + for_whom + ": the words after an unquoted space are not part of "
            "the value. Where no such program exists dash says \"" + command +
            ": not found\" and grub-mkconfig stops (set -e; testdata/grub_emu_transcript.txt), "
            "leaving grub.cfg as it was; quote the whole value: NAME=\"a b\"");
      }
    }
    return Status::Ok();
  }

  ShellValue Get(const std::string& name) const {
    auto it = vars_.find(name);
    return it == vars_.end() ? ShellValue{} : it->second;
  }
  bool Assigned(const std::string& name) const { return vars_.count(name) != 0; }

  std::vector<std::string> assignments;  // GRUB_CMDLINE_LINUX*= as written, in order

 private:
  void Note(const std::string& n) { notes_->push_back(n); }
  static bool ForCmdline(const std::string& var) {
    return var.rfind("GRUB_CMDLINE_LINUX", 0) == 0;
  }
  std::string Where() const { return "line " + std::to_string(line_) + ": "; }

  Status Unterminated(const std::string& quote) const {
    return Status::InvalidArgument(
        Where() + "unterminated " + quote + " quote: dash stops with \"Syntax error: "
        "Unterminated quoted string\" and grub-mkconfig (update-grub) fails, writing no new "
        "grub.cfg: the kernel keeps the command line of the last update-grub that worked "
        "(testdata/grub_emu_transcript.txt); close the quote");
  }

  // The value of $NAME, ${NAME}, $1, $#, ... while grub-mkconfig sources the file: its
  // positional parameters are "$grub_probe dummy" (grub-mkconfig.in line 126), $0 is the script.
  ShellValue Parameter(const std::string& name, const std::string& as_written,
                       const std::string& for_var) {
    ShellValue v;
    std::string why;
    if (name == "0") {
      v.text = "/usr/sbin/grub-mkconfig";
      why = "$0, the script that sources the file (update-grub runs /usr/sbin/grub-mkconfig)";
    } else if (name == "1") {
      v.text = "/usr/sbin/grub-probe";
      why = "positional parameter 1: grub-mkconfig ran `set $grub_probe dummy` before sourcing "
            "the file (grub-mkconfig.in line 126)";
    } else if (name == "2") {
      v.text = "dummy";
      why = "positional parameter 2 (grub-mkconfig.in line 126: `set $grub_probe dummy`)";
    } else if (IsDigit(name[0])) {
      why = "positional parameter " + name + ", unset: grub-mkconfig has 2 (`set $grub_probe "
            "dummy`)";
    } else if (name == "#") {
      v.text = "2";
      why = "the number of positional parameters (`set $grub_probe dummy`)";
    } else if (name == "?") {
      v.text = "0";
      why = "the status of `test -f /etc/default/grub` before the file is sourced";
    } else if (name == "*" || name == "@") {
      v.text = "/usr/sbin/grub-probe dummy";
      why = "the positional parameters (`set $grub_probe dummy`)";
    } else if (name == "-") {
      v.text = "e";
      why = "the shell's options (grub-mkconfig runs with set -e)";
    } else if (name == "!") {
      why = "the last background job's process id: none";
    } else if (name == "$") {
      v.unknown = "'" + as_written + "' is the shell's process id, different on every run";
      why = "the shell's process id";
    } else if (vars_.count(name)) {
      v = vars_[name];
      why = "the value the file gave " + name + " above";
      if (v.unknown.empty()) {
        if (ForCmdline(for_var))
          Note("shell: '" + as_written + "' in " + for_var + " is " + why + ": \"" +
               Shorten(v.text) + "\"");
        return v;
      }
    } else {
      why = "an unset shell variable (unless update-grub's environment exports it)";
    }
    if (ForCmdline(for_var)) {
      Note("shell: '" + as_written + "' in " + for_var + " is " + why + ": it becomes " +
           (v.unknown.empty() ? (v.text.empty() ? "nothing" : "\"" + v.text + "\"")
                              : "unknown") +
           " (dash parameter expansion)");
      altered = true;
    }
    return v;
  }

  // After '$' at i_. Unquoted and in double quotes alike (no field splitting in assignments).
  Result<ShellValue> Dollar(const std::string& for_var) {
    const size_t dollar = i_;
    ++i_;
    auto unknown = [&](const std::string& what) {
      ShellValue v;
      v.unknown = what;
      if (ForCmdline(for_var)) Note("shell: " + what + " in " + for_var + ": the model does "
                                    "not run it");
      return v;
    };
    if (i_ >= s_.size()) return ShellValue{"$", ""};
    const char c = s_[i_];
    if (c == '(') {  // $( command ) or $(( arithmetic )): find the matching parenthesis
      int depth = 0;
      size_t j = i_;
      for (; j < s_.size(); ++j) {
        if (s_[j] == '(') ++depth;
        if (s_[j] == ')' && --depth == 0) break;
      }
      if (j >= s_.size())
        return Status::InvalidArgument(Where() + "'$(' without its ')': dash stops with a syntax "
                                       "error and update-grub fails; close the parenthesis");
      i_ = j + 1;
      return unknown("the command substitution '" + Shorten(s_.substr(dollar, i_ - dollar)) + "'");
    }
    std::string name;
    if (c == '{') {
      const size_t close = s_.find('}', i_);
      if (close == std::string::npos)
        return Unterminated("${");
      const std::string inner = s_.substr(i_ + 1, close - i_ - 1);
      i_ = close + 1;
      const std::string as_written = s_.substr(dollar, i_ - dollar);
      bool all_digits = !inner.empty();
      for (char d : inner) all_digits = all_digits && IsDigit(d);
      bool is_name = !inner.empty() && IsNameStart(inner[0]);
      for (char d : inner) is_name = is_name && IsNameChar(d);
      const bool special = inner.size() == 1 && std::string("#?*@-!$0").find(inner[0]) !=
                                                    std::string::npos;
      if (all_digits || is_name || special) return Parameter(inner, as_written, for_var);
      size_t op = 0;
      while (op < inner.size() && IsNameChar(inner[op])) ++op;
      if (op > 0 && IsNameStart(inner[0]) && op < inner.size() &&
          std::string(":-=?+%#").find(inner[op]) != std::string::npos)
        return unknown("the parameter expansion '" + as_written + "' (with an operator)");
      return Status::InvalidArgument(
          Where() + "'" + as_written + "': dash stops with \"Bad substitution\" (a ${...} must "
          "hold a name, a number or one of # ? * @ - ! $) and update-grub fails, leaving grub.cfg "
          "as it was (testdata/grub_emu_transcript.txt); to keep the text, escape the dollar");
    }
    const size_t start = i_;
    if (IsNameStart(c)) {
      while (i_ < s_.size() && IsNameChar(s_[i_])) ++i_;
      name = s_.substr(start, i_ - start);
    } else if (IsDigit(c) || std::string("#?*@-!$").find(c) != std::string::npos) {
      name = std::string(1, c);  // POSIX: $12 is $1 then "2"
      ++i_;
    } else {
      return ShellValue{"$", ""};  // a $ before anything else is itself (dash)
    }
    return Parameter(name, s_.substr(dollar, i_ - dollar), for_var);
  }

  // `command` at i_: a command substitution, which the model does not run.
  Result<ShellValue> Backquoted() {
    const size_t close = s_.find('`', i_ + 1);
    if (close == std::string::npos) return Unterminated("`");
    ShellValue v;
    v.unknown = "the command substitution " + Shorten(s_.substr(i_, close - i_ + 1));
    i_ = close + 1;
    return v;
  }

  // One word (for an assignment: its value), with quote removal and expansion.
  Result<ShellValue> Word(const std::string& for_var) {
    ShellValue out;
    auto add = [&out](const ShellValue& v) {
      out.text += v.text;
      if (out.unknown.empty()) out.unknown = v.unknown;
    };
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' ||
          c == '>' || c == '(' || c == ')')
        break;
      if (c == '\\') {  // unquoted: \c is c, \<newline> nothing
        if (i_ + 1 >= s_.size()) {
          out.text += '\\';
          ++i_;
          continue;
        }
        if (s_[i_ + 1] == '\n') ++line_;
        else out.text += s_[i_ + 1];
        i_ += 2;
      } else if (c == '\'') {
        const size_t close = s_.find('\'', i_ + 1);
        if (close == std::string::npos) return Unterminated("'");
        for (size_t k = i_ + 1; k < close; ++k) line_ += s_[k] == '\n';
        out.text += s_.substr(i_ + 1, close - i_ - 1);
        i_ = close + 1;
      } else if (c == '"') {
        ++i_;
        while (true) {
          if (i_ >= s_.size()) return Unterminated("\"");
          const char d = s_[i_];
          if (d == '"') {
            ++i_;
            break;
          }
          if (d == '\\' && i_ + 1 < s_.size()) {
            const char n = s_[i_ + 1];
            if (n == '\n') {  // removed
              i_ += 2;
              ++line_;
              continue;
            }
            if (n == '$' || n == '`' || n == '"' || n == '\\') {
              out.text += n;
              i_ += 2;
              continue;
            }
          }
          if (d == '$') {
            auto v = Dollar(for_var);
            if (!v.ok()) return v.status();
            add(*v);
            continue;
          }
          if (d == '`') {
            auto v = Backquoted();
            if (!v.ok()) return v.status();
            add(*v);
            continue;
          }
          if (d == '\n') ++line_;
          out.text += d;
          ++i_;
        }
      } else if (c == '$') {
        auto v = Dollar(for_var);
        if (!v.ok()) return v.status();
        add(*v);
      } else if (c == '`') {
        auto v = Backquoted();
        if (!v.ok()) return v.status();
        add(*v);
      } else {
        out.text += c;
        ++i_;
      }
    }
    return out;
  }

 public:
  bool altered = false;

 private:
  std::string s_;
  std::vector<std::string>* notes_;
  size_t i_ = 0;
  int line_ = 1;
  std::map<std::string, ShellValue> vars_;
};

// True when some line of the text assigns a GRUB_ variable (GRUB_...= at a line's start,
// `export` allowed): then the text is /etc/default/grub lines, else GRUB_CMDLINE_LINUX's right
// side (whose options, like memmap=..., look like assignments to the shell too).
bool HasGrubAssignment(const std::string& text) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    size_t k = line.find_first_not_of(" \t");
    if (k != std::string::npos) {
      line = line.substr(k);
      if (line.rfind("export ", 0) == 0) {
        // "export" and blanks alone name nothing (found by the cmdline fuzz target: substr of
        // npos threw std::out_of_range).
        const size_t name = line.find_first_not_of(' ', 6);
        line = name == std::string::npos ? std::string() : line.substr(name);
      }
      size_t n = 0;
      while (n < line.size() && IsNameChar(line[n])) ++n;
      if (line.rfind("GRUB_", 0) == 0 && n < line.size() && line[n] == '=') return true;
    }
    pos = end + 1;
  }
  return false;
}

// The same error with the stage in front of its message.
Status Prefixed(const Status& st, const std::string& prefix) {
  return st.code() == kUnsupported ? Status::Unsupported(prefix + st.message())
                                   : Status::InvalidArgument(prefix + st.message());
}

}  // namespace

Result<CmdlineSource> ParseCmdlineSource(const std::string& name) {
  if (name == "kernel") return CmdlineSource::kKernel;
  if (name == "grub-cfg" || name == "grub") return CmdlineSource::kGrubCfg;
  if (name == "etc-default-grub") return CmdlineSource::kEtcDefaultGrub;
  return Status::InvalidArgument("machine cmdline_source '" + name +
                                 "' is unknown; use \"kernel\" (literal, as /proc/cmdline "
                                 "reads), \"grub-cfg\" (a grub.cfg linux line) or "
                                 "\"etc-default-grub\" (GRUB_CMDLINE_LINUX in /etc/default/grub)");
}

const char* CmdlineSourceName(CmdlineSource source) {
  switch (source) {
    case CmdlineSource::kKernel: return "kernel";
    case CmdlineSource::kGrubCfg: return "grub-cfg";
    case CmdlineSource::kEtcDefaultGrub: return "etc-default-grub";
  }
  return "kernel";
}

bool KernelCmdlineTrace::Changed() const { return altered; }

std::vector<std::string> KernelCmdlineTrace::StageLines() const {
  std::vector<std::string> out;
  out.push_back(std::string("written (") + CmdlineSourceName(source) + "): " +
                (written_assignments.empty() ? Shorten(written) : written_assignments));
  if (source == CmdlineSource::kEtcDefaultGrub) {
    out.push_back("after the shell: GRUB_CMDLINE_LINUX=\"" + grub_cmdline_linux +
                  "\" GRUB_CMDLINE_LINUX_DEFAULT=\"" + grub_cmdline_linux_default + "\"");
    out.push_back("grub.cfg: linux ... ro " + Shorten(grub_cfg));
  }
  if (source != CmdlineSource::kKernel) {
    std::string argv;
    for (const auto& a : grub_argv) argv += "<" + a + ">";
    out.push_back("GRUB's arguments: " + (argv.empty() ? std::string("(none)") : argv));
  }
  out.push_back("kernel: " + kernel);
  return out;
}

Result<std::vector<std::string>> GrubExpandArguments(const std::string& text,
                                                     const std::string& next_line,
                                                     const GrubAssumptions& assume,
                                                     std::vector<std::string>* notes) {
  GrubLexer lexer(text, next_line, assume, notes);
  return lexer.Run();
}

std::string GrubLoaderCmdline(const std::string& path, const std::vector<std::string>& argv,
                              const GrubAssumptions& assume, std::vector<std::string>* notes) {
  // loader/i386/linux.c: maximal_cmdline_size = cmdline_size + 1; the arguments (the path
  // first) get that less strlen("BOOT_IMAGE="); lib/cmdline.c check_arg counts each character,
  // one more for each \ ' ", two quotes when it holds a space, and one separator.
  const size_t budget = assume.kernel_cmdline_size + 1 - (sizeof("BOOT_IMAGE=") - 1);
  auto size_of = [](const std::string& a) {
    size_t n = a.size() + 1;
    bool space = false;
    for (char c : a) {
      if (c == '\\' || c == '\'' || c == '"') ++n;
      else if (c == ' ') space = true;
    }
    return n + (space ? 2 : 0);
  };
  size_t left = budget;
  const std::string& counted_path = path.empty() ? assume.kernel_path : path;
  left = size_of(counted_path) <= left ? left - size_of(counted_path) : 0;
  std::string out = path.empty() ? "" : "BOOT_IMAGE=" + path;
  for (size_t k = 0; k < argv.size(); ++k) {
    const std::string& a = argv[k];
    const size_t need = size_of(a);
    if (left < need) {
      notes->push_back("grub: the command line is longer than the kernel takes (cmdline_size " +
                       std::to_string(assume.kernel_cmdline_size) + " with BOOT_IMAGE=" +
                       counted_path + "): GRUB's loader drops argument " + std::to_string(k + 1) +
                       " '" + Shorten(a) + "' and the " + std::to_string(argv.size() - k - 1) +
                       " after it, silently (lib/cmdline.c grub_create_loader_cmdline)");
      break;
    }
    left -= need;
    std::string quoted;
    const bool space = a.find(' ') != std::string::npos;
    if (space) quoted += '"';
    for (char c : a) {
      if (c == '\\' || c == '\'' || c == '"') quoted += '\\';
      quoted += c;
    }
    if (space) quoted += '"';
    if (quoted != a)
      notes->push_back("grub: its loader passes the argument '" + Shorten(a) + "' as '" +
                       Shorten(quoted) + "' (lib/cmdline.c grub_create_loader_cmdline: a " +
                       "backslash before \\ ' \", double quotes around a word with a space)");
    out += (out.empty() ? "" : " ") + quoted;
  }
  return out;
}

Result<KernelCmdlineTrace> TraceKernelCmdline(const std::string& source_name,
                                              const std::string& text,
                                              const GrubAssumptions& assume) {
  RESMEM_ASSIGN_OR_RETURN(CmdlineSource source, ParseCmdlineSource(source_name));
  KernelCmdlineTrace t;
  t.source = source;
  t.written = text;
  if (source == CmdlineSource::kKernel) {
    // Literal; the kernel's own limit (COMMAND_LINE_SIZE) is Boot()'s.
    t.kernel = t.kernel_full = text;
    return t;
  }

  std::string grub_text = text;
  if (source == CmdlineSource::kEtcDefaultGrub) {
    std::string shell_text = text;
    if (!HasGrubAssignment(text)) {
      shell_text = "GRUB_CMDLINE_LINUX=" + text;
      t.notes.push_back("shell: the text has no GRUB_...= line: taken as the right-hand side of "
                        "GRUB_CMDLINE_LINUX= in /etc/default/grub");
    }
    ShellPass shell(shell_text, &t.notes);
    Status st = shell.Run();
    if (!st.ok())
      return Prefixed(st, "/etc/default/grub: ");
    for (const char* name : {"GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT"}) {
      ShellValue v = shell.Get(name);
      if (!v.unknown.empty())
        return Status::Unsupported("/etc/default/grub: " + std::string(name) + " depends on " +
                                   v.unknown + ", which the model cannot run; write the value "
                                   "out");
    }
    for (const auto& a : shell.assignments)
      t.written_assignments += (t.written_assignments.empty() ? "" : "; ") + a;
    t.grub_cmdline_linux = shell.Get("GRUB_CMDLINE_LINUX").text;
    t.grub_cmdline_linux_default = shell.Get("GRUB_CMDLINE_LINUX_DEFAULT").text;
    if (shell.altered) t.altered = true;
    // 10_linux.in: linux_entry ... "${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}", then
    // `linux ${rel_dirname}/${basename} root=... ro ${args}` in a here-doc: the value verbatim.
    t.grub_cfg = t.grub_cmdline_linux + " " + t.grub_cmdline_linux_default;
    grub_text = t.grub_cfg;
    if (grub_text.find('\n') != std::string::npos)
      t.notes.push_back("grub-mkconfig: the value holds a newline, so the linux line in "
                        "grub.cfg is cut there and what follows is a line of its own");
  } else {
    t.grub_cfg = text;
  }

  std::vector<std::string> grub_notes;
  GrubLexer lexer(grub_text, kInitrdEchoLine, assume, &grub_notes);
  auto argv = lexer.Run();
  if (!argv.ok()) {
    std::string where = source == CmdlineSource::kEtcDefaultGrub
                            ? "grub.cfg (written from /etc/default/grub as 'linux ... ro " +
                                  Shorten(grub_text) + "'): "
                            : "grub.cfg: ";
    return Prefixed(argv.status(), where);
  }
  if (lexer.altered) t.altered = true;
  std::vector<std::string> args = *argv;
  // A whole `linux PATH ...` line (loader/i386/linux.c registers linux and linux16; distros add
  // linuxefi): the path is argv[0] of the loader and BOOT_IMAGE's value.
  if (source == CmdlineSource::kGrubCfg && !args.empty() &&
      (args[0] == "linux" || args[0] == "linux16" || args[0] == "linuxefi")) {
    if (args.size() < 2)
      return Status::InvalidArgument("grub.cfg: '" + Shorten(text) + "': the linux command "
                                     "needs the kernel's path (GRUB: \"filename expected\")");
    t.kernel_path = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  t.grub_argv = args;
  for (auto& n : grub_notes) t.notes.push_back(n);
  size_t before = t.notes.size();
  t.kernel = GrubLoaderCmdline(t.kernel_path, args, assume, &t.notes);
  if (t.notes.size() != before) t.altered = true;
  if (source == CmdlineSource::kEtcDefaultGrub)
    t.kernel_full = "BOOT_IMAGE=" + assume.kernel_path + " root=<root device> ro" +
                    (t.kernel.empty() ? "" : " " + t.kernel);
  else
    t.kernel_full = t.kernel;
  return t;
}

std::string ExpandGrubLine(const std::string& line) {
  auto t = TraceKernelCmdline("grub-cfg", line);
  return t.ok() ? t->kernel : std::string();
}

BootLoaderFile BootLoaderFileFor(const std::string& source, const std::string& cmdline,
                                 const GrubAssumptions& assume) {
  auto parsed = ParseCmdlineSource(source);
  if (!parsed.ok() || *parsed == CmdlineSource::kKernel) return {};
  if (*parsed == CmdlineSource::kEtcDefaultGrub)
    return {"/etc/default/grub", (HasGrubAssignment(cmdline) ? cmdline
                                                             : "GRUB_CMDLINE_LINUX=" + cmdline) +
                                     "\n"};
  std::string linux_line = cmdline;
  const size_t first = cmdline.find_first_not_of(" \t");
  const std::string head = first == std::string::npos ? "" : cmdline.substr(first, 9);
  if (!(head.rfind("linux ", 0) == 0 || head.rfind("linux\t", 0) == 0 ||
        head.rfind("linux16", 0) == 0 || head.rfind("linuxefi", 0) == 0))
    linux_line = "linux\t" + assume.kernel_path + " " + cmdline;
  // 10_linux.in linux_entry, the simple entry.
  return {"/boot/grub/grub.cfg",
          "menuentry '" + assume.menuentry_title +
              "' --class debian --class gnu-linux --class gnu --class os $menuentry_id_option "
              "'gnulinux-simple' {\n\tload_video\n\tinsmod gzio\n\techo\t'Loading Linux ...'\n\t" +
              linux_line + "\n" + kInitrdEchoLine + "\n\tinitrd\t/boot/initrd.img\n}\n"};
}

std::string FirstGrubCfgLinuxLine(const std::string& grub_cfg) {
  size_t pos = 0;
  while (pos < grub_cfg.size()) {
    size_t end = grub_cfg.find('\n', pos);
    if (end == std::string::npos) end = grub_cfg.size();
    const std::string line = grub_cfg.substr(pos, end - pos);
    const size_t k = line.find_first_not_of(" \t");
    if (k != std::string::npos) {
      const std::string rest = line.substr(k);
      for (const char* cmd : {"linux", "linux16", "linuxefi"}) {
        const size_t n = std::string(cmd).size();
        if (rest.compare(0, n, cmd) == 0 && rest.size() > n && (rest[n] == ' ' || rest[n] == '\t'))
          return rest;
      }
    }
    pos = end + 1;
  }
  return "";
}

Result<GrubSpelling> SpellKernelOptionsForGrub(const std::string& kernel_options) {
  GrubSpelling out;
  std::vector<std::string> options;
  std::string w;
  for (char c : kernel_options + " ") {
    if (c == ' ') {
      if (!w.empty()) options.push_back(w);
      w.clear();
      continue;
    }
    if (c == '\\' || c == '\'' || c == '"' || c == '\n' || c == '\t')
      return Status::InvalidArgument(
          "kernel options '" + Shorten(kernel_options) + "': GRUB cannot pass a " +
          (c == '\n' ? std::string("newline") : c == '\t' ? std::string("tab")
                                                          : std::string(1, c)) +
          " unchanged (its loader writes a backslash before \\ ' \", lib/cmdline.c; a newline "
          "or tab separates arguments); write the option without it");
    w += c;
  }
  if (options.empty())
    return Status::InvalidArgument("kernel options: empty; give at least one, e.g. "
                                   "memmap=64M$0x40000000");
  for (size_t k = 0; k < options.size(); ++k) {
    if (k) out.grub_cfg += ' ';
    for (char c : options[k]) {
      // Everything that is not CHAR for yylex.l, and # (a comment where a word starts).
      if (std::string("$;{}|&<>#").find(c) != std::string::npos) out.grub_cfg += '\\';
      out.grub_cfg += c;
    }
  }
  // dash double quotes: a backslash keeps $ ` " \ literal; everything else is itself.
  out.etc_default_grub_value = "\"";
  for (char c : out.grub_cfg) {
    if (c == '$' || c == '`' || c == '"' || c == '\\') out.etc_default_grub_value += '\\';
    out.etc_default_grub_value += c;
  }
  out.etc_default_grub_value += "\"";
  out.etc_default_grub_line = "GRUB_CMDLINE_LINUX=" + out.etc_default_grub_value;
  return out;
}

}  // namespace resmem::sim
