// build/rotor: the command-line program. Each subcommand lives in its own
// tools/<name>_command.cc and registers itself in tools/commands.h.
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tools/commands.h"
#include "tools/flag_parser.h"

namespace {

void PrintUsage(std::ostream& out) {
  out << "rotor " << ROTOR_VERSION
      << " - train small transformer language models on CPUs\n\n"
         "Usage: rotor <command> [options]\n"
         "       rotor --help | --version\n\n"
         "Commands:\n";
  for (const rotor::tools::Command& command : rotor::tools::Commands()) {
    out << "  " << command.name;
    for (size_t pad = command.name.size(); pad < 15; ++pad) out << ' ';
    out << command.summary << "\n";
  }
  out << "\nRun 'rotor <command> --help' for a command's options.\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    PrintUsage(std::cerr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    PrintUsage(std::cout);
    return 0;
  }
  if (first == "--version") {
    std::cout << "rotor " << ROTOR_VERSION << "\n";
    return 0;
  }
  for (const rotor::tools::Command& command : rotor::tools::Commands()) {
    if (command.name != first) continue;
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
      return command.run(args);
    } catch (const rotor::tools::UsageError& error) {
      std::cerr << "rotor " << first << ": " << error.what() << " (see 'rotor "
                << first << " --help')\n";
      return 2;
    } catch (const rotor::Error& error) {
      std::cerr << "rotor " << first << ": error: " << error.what() << "\n";
      return 1;
    } catch (const std::exception& error) {
      // Not rotor's own checks (e.g. a file system error): still a message
      // and status 1 rather than an abort.
      std::cerr << "rotor " << first << ": error: " << error.what() << "\n";
      return 1;
    }
  }
  std::cerr << "rotor: unknown command '" << first
            << "' (run 'rotor --help' for the list)\n";
  return 2;
}
