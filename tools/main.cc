// build/rotor: the command-line program, on CLI11. Each subcommand lives in
// its own tools/<name>_command.cc (listed in tools/commands.cc). Exit status:
// 0 on success (and for --help, --version), 2 for a usage error, reported
// with a pointer to --help, 1 for any other error, reported with its message.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/suggest.h"
#include "tools/commands.h"

namespace {

// The chosen command with its subcommands, e.g. "tokenizer train".
std::string ChosenCommand(const CLI::App& rotor) {
  std::string name;
  for (const CLI::App* app = &rotor; !app->get_subcommands().empty();) {
    app = app->get_subcommands().front();
    name += (name.empty() ? "" : " ") + app->get_name();
  }
  return name;
}

// The chosen command itself (e.g. the `train` of `tokenizer train`), or
// `rotor` when none was chosen.
const CLI::App* ChosenApp(const CLI::App& rotor) {
  const CLI::App* app = &rotor;
  while (!app->get_subcommands().empty()) app = app->get_subcommands().front();
  return app;
}

// ", did you mean 'X'?" for a word `app` does not know: the nearest of its
// commands or, for a word starting with '-', of its flags.
std::string Suggestion(const CLI::App& app, const std::string& word) {
  std::vector<std::string> names;
  if (word.rfind('-', 0) == 0) {
    for (const CLI::Option* option : app.get_options()) {
      for (const std::string& name : option->get_lnames()) {
        names.push_back("--" + name);
      }
    }
    return rotor::DidYouMean(word.substr(0, word.find('=')), names);
  }
  for (const CLI::App* command :
       app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!command->get_group().empty()) names.push_back(command->get_name());
  }
  return rotor::DidYouMean(word, names);
}

// A mistake on the command line: "rotor CMD: PROBLEM (see 'rotor CMD
// --help')", or the list of commands when none was chosen.
int ReportUsageError(const CLI::App& rotor, const CLI::ParseError& error) {
  const std::vector<CLI::App*> chosen = rotor.get_subcommands();
  // Words no flag or positional took. CLI11 checks them last, after the
  // required flags, but an unknown flag (often a required one misspelt)
  // explains more.
  const std::vector<std::string> unknown = rotor.remaining(/*recurse=*/true);
  if (chosen.empty()) {
    if (unknown.empty()) {
      std::cerr << rotor.help();
    } else {
      std::cerr << "rotor: unknown command '" << unknown.front() << "'"
                << Suggestion(rotor, unknown.front())
                << " (run 'rotor --help' for the list)\n";
    }
    return 2;
  }
  std::string problem = error.what();
  if (!unknown.empty()) {
    const std::string& word = unknown.front();
    problem =
        (word.rfind('-', 0) == 0 ? "unknown flag '" : "unexpected argument '") +
        word + "'" + Suggestion(*ChosenApp(rotor), word);
  }
  const std::string name = ChosenCommand(rotor);
  std::cerr << "rotor " << name << ": " << problem << " (see 'rotor " << name
            << " --help')\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  rotor::RestartWithoutBlasThreadsUnderAddressLimit(argv);
  CLI::App rotor("rotor " ROTOR_VERSION
                 " - train small transformer language models on CPUs",
                 "rotor");
  rotor.set_version_flag("--version", "rotor " ROTOR_VERSION);
  rotor.get_help_ptr()->disable_flag_override();
  // For every command's flags: a repeated flag keeps its last value, and a
  // flag without a value refuses one (--force=yes).
  rotor.option_defaults()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->disable_flag_override();
  rotor::tools::AddCommands(rotor);
  // `rotor help` is `rotor --help`.
  rotor.add_subcommand("help")->group("")->callback([&rotor] {
    std::cout << rotor.get_formatter()->make_help(&rotor, rotor.get_name(),
                                                  CLI::AppFormatMode::Normal);
  });
  // Exactly one command: once it is chosen, a later word such as the value
  // in `--checkpoint train` is not taken for another command.
  rotor.require_subcommand(1);
  rotor.footer("Run 'rotor <command> --help' for a command's options.");
  // The commands' own help keeps CLI11's layout; the list of commands gets
  // a narrower name column.
  auto list_layout = std::make_shared<CLI::Formatter>();
  list_layout->column_width(17);
  list_layout->label("SUBCOMMAND", "COMMAND");
  rotor.formatter(list_layout);

  try {
    rotor.parse(argc, argv);  // runs the chosen command (its callback)
    return 0;
  } catch (const CLI::Success& help_or_version) {
    return rotor.exit(help_or_version);
  } catch (const CLI::ParseError& error) {
    return ReportUsageError(rotor, error);
  } catch (const std::bad_alloc&) {
    // Past the up-front memory checks (docs/limits.md): a clear message and
    // status 1, never an abort.
    std::cerr << "rotor " << ChosenCommand(rotor)
              << ": error: out of memory; lower the model or batch sizes, or "
                 "run where more memory is available\n";
    return 1;
  } catch (const std::exception& error) {
    // rotor::Error, or not rotor's own checks (e.g. a file system error):
    // still a message and status 1 rather than an abort. The prefix once,
    // even when a message already starts with it.
    const std::string prefix = "rotor " + ChosenCommand(rotor) + ": ";
    std::string message = error.what();
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    std::cerr << prefix << "error: " << message << "\n";
    return 1;
  }
}
