// `pipescope`: dispatches to one subcommand. Every parse failure becomes one line on stderr
// and exit code 2; --help and --version exit 0.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "command.h"
#include "pipescope/trace/format.h"

namespace pipescope::cli {

int usage_error(const std::string& command, const std::string& message) {
  std::cerr << command << ": " << message << '\n';
  return kExitUsage;
}

int needs_profiler_build(const std::string& command, const std::string& what, const std::string& variable) {
  return usage_error(command, "this pipescope is the planner-only build (PIPESCOPE_PROFILER=OFF), without " +
                                  what + "; build with the CUDA toolkit and NCCL, or set " + variable +
                                  " to a profiler build's");
}

namespace {

std::string version_text() {
  return std::string("pipescope ") + PIPESCOPE_VERSION + " (trace format " +
         std::to_string(trace::kFormatMajor) + "." + std::to_string(trace::kFormatMinor) + ")" +
         (kProfilerBuilt ? "" : ", planner-only build");
}

// CLI11's messages can span lines; the contract is one line.
std::string one_line(std::string text) {
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return text;
}

int run(int argc, char** argv) {
  CLI::App root{"pipescope: profile distributed LLM training and plan its parallel layout", "pipescope"};
  root.set_version_flag("--version", version_text());
  root.require_subcommand(1);
  root.get_formatter()->column_width(34);

  std::vector<Command> commands = {
      add_record_command(root),  add_report_command(root), add_export_command(root),
      add_plan_command(root),    add_search_command(root), add_calibrate_command(root),
      add_inspect_command(root),
  };

  if (argc >= 2 && argv[1][0] == '-') {
    const std::string flag = argv[1];
    if (flag != "-h" && flag != "--help" && flag != "--version") {
      return usage_error("pipescope", "unknown option '" + flag + "' (see 'pipescope --help')");
    }
  }
  if (argc >= 2 && argv[1][0] != '-') {
    bool known = false;
    for (const Command& c : commands) known = known || c.app->check_name(argv[1]);
    if (!known) {
      return usage_error("pipescope", std::string("unknown command '") + argv[1] +
                                          "' (commands: record, report, export, plan, search, "
                                          "calibrate, inspect; see 'pipescope --help')");
    }
  }

  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return root.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string where = "pipescope";
    for (const CLI::App* sub = &root; !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      where += " " + sub->get_name();
    }
    return usage_error(where, one_line(e.what()) + " (see '" + where + " --help')");
  }

  for (const Command& c : commands) {
    if (c.app->parsed()) return c.run();
  }
  return usage_error("pipescope", "a command is required (see 'pipescope --help')");
}

}  // namespace
}  // namespace pipescope::cli

int main(int argc, char** argv) {
  try {
    return pipescope::cli::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "pipescope: internal error: " << e.what() << '\n';
    return pipescope::cli::kExitFailure;
  }
}
