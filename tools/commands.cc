#include "tools/commands.h"

namespace rotor {
namespace tools {

void AddCommands(CLI::App& rotor) {
  AddTrainCommand(rotor);
  AddEvalCommand(rotor);
  AddGenerateCommand(rotor);
  AddScoreCommand(rotor);
  AddExportCommand(rotor);
  AddPrepareCommand(rotor);
  AddExtendReportCommand(rotor);
  AddRopeCommand(rotor);
  AddTokenizerCommand(rotor);
  AddKeysCommand(rotor);
}

}  // namespace tools
}  // namespace rotor
