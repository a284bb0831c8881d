// The examples show pipescope's output: each command on an example page must print today what the
// page shows. A page shows a command as a one-line ```sh block starting with "pipescope ", followed
// by a ```text block of its output: whole, or excerpts separated by "..." lines, in order.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "run_command.h"

namespace pipescope::testing {
namespace {

struct ShownCommand {
  std::vector<std::string> args;   // after "pipescope"
  std::vector<std::string> shown;  // the text block's lines
};

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<ShownCommand> shown_commands(const std::string& page) {
  std::ifstream in(std::string(PIPESCOPE_SOURCE_DIR) + "/" + page);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<ShownCommand> out;
  for (size_t i = 0; i + 2 < lines.size(); ++i) {
    if (lines[i] != "```sh" || lines[i + 1].rfind("pipescope ", 0) != 0 || lines[i + 2] != "```") continue;
    size_t at = i + 3;
    while (at < lines.size() && lines[at].empty()) ++at;
    if (at >= lines.size() || lines[at] != "```text") continue;
    ShownCommand command;
    command.args = words_of(lines[i + 1].substr(std::string("pipescope ").size()));
    for (++at; at < lines.size() && lines[at] != "```"; ++at) command.shown.push_back(lines[at]);
    out.push_back(std::move(command));
  }
  return out;
}

// Empty when `shown` is `output` or its excerpts: runs of lines between "..." lines, each found
// whole and in order; otherwise the first line shown that is not there.
std::string first_line_not_printed(const std::vector<std::string>& output,
                                   const std::vector<std::string>& shown) {
  size_t from = 0;
  size_t i = 0;
  while (i < shown.size()) {
    if (shown[i] == "...") {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < shown.size() && shown[end] != "...") ++end;
    const size_t run = end - i;
    bool found = false;
    for (size_t at = from; at + run <= output.size() && !found; ++at) {
      found = std::equal(shown.begin() + static_cast<std::ptrdiff_t>(i),
                         shown.begin() + static_cast<std::ptrdiff_t>(end),
                         output.begin() + static_cast<std::ptrdiff_t>(at));
      if (found) from = at + run;
    }
    if (!found) return shown[i];
    i = end;
  }
  return {};
}

TEST(ExampleDocs, ExcerptsMustBePrintedWholeAndInOrder) {
  const std::vector<std::string> output = {"a", "b", "c", "d"};
  EXPECT_EQ(first_line_not_printed(output, {"a", "b", "c", "d"}), "");
  EXPECT_EQ(first_line_not_printed(output, {"a", "...", "c", "d"}), "");
  EXPECT_EQ(first_line_not_printed(output, {"b", "c"}), "");
  EXPECT_EQ(first_line_not_printed(output, {"a", "c"}), "a");         // not contiguous
  EXPECT_EQ(first_line_not_printed(output, {"c", "...", "a"}), "a");  // not in order
  EXPECT_EQ(first_line_not_printed(output, {"a", "...", "e"}), "e");
}

TEST(ExampleDocs, InternEvo123bShowsWhatPipescopePrints) {
  const std::vector<ShownCommand> commands = shown_commands("examples/internevo-123b.md");
  ASSERT_EQ(commands.size(), 6u) << "examples/internevo-123b.md shows six commands with their output";
  for (const ShownCommand& command : commands) {
    std::string line;
    for (const std::string& arg : command.args) line += " " + arg;
    SCOPED_TRACE("pipescope" + line);
    const CommandResult r = run_pipescope(command.args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(first_line_not_printed(lines_of(r.out), command.shown), "") << r.out;
  }
}

}  // namespace
}  // namespace pipescope::testing
