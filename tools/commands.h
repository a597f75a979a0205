// The subcommands of build/rotor. To add one: write tools/<name>_command.cc
// with a function `void Add<Name>Command(CLI::App& rotor)` that declares the
// command with AddCommand (tools/cli.h), its flags with their help, and sets
// the subcommand's callback to run it; declare the function here and call it
// in AddCommands (tools/commands.cc).
#ifndef ROTOR_TOOLS_COMMANDS_H_
#define ROTOR_TOOLS_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace rotor {
namespace tools {

// Adds every command to `rotor`, in the order `rotor --help` lists them.
void AddCommands(CLI::App& rotor);

void AddTrainCommand(CLI::App& rotor);
void AddEvalCommand(CLI::App& rotor);
void AddGenerateCommand(CLI::App& rotor);
void AddScoreCommand(CLI::App& rotor);
void AddPrepareCommand(CLI::App& rotor);
void AddExtendReportCommand(CLI::App& rotor);
void AddRopeCommand(CLI::App& rotor);
void AddTokenizerCommand(CLI::App& rotor);
void AddExportCommand(CLI::App& rotor);
void AddKeysCommand(CLI::App& rotor);

}  // namespace tools
}  // namespace rotor

#endif  // ROTOR_TOOLS_COMMANDS_H_
