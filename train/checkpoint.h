// Checkpoints: one folder per saved step,
//
//   <output_dir>/checkpoints/step_00000500/
//     model.safetensors       weights, Hugging Face Llama names, F32
//     optimizer.safetensors   AdamW moments: exp_avg.<name>, exp_avg_sq.<name>
//     trainer_state.json      step, sampler state (RNG + batches drawn),
//                             tokens seen, loss statistics, elapsed time
//     config.yaml             the resolved training config
//
// Each folder is written into a temporary folder and renamed into place, so
// a killed run never leaves a half-written checkpoint; resuming from it
// continues bitwise as the uninterrupted run would have (same thread count).
#ifndef ROTOR_TRAIN_CHECKPOINT_H_
#define ROTOR_TRAIN_CHECKPOINT_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "nn/module.h"
#include "train/data/batches.h"
#include "train/optim/adamw.h"

namespace rotor::train {

// Everything besides weights and moments that resuming needs.
struct TrainerState {
  int64_t step = 0;  // optimizer steps completed
  SamplerState sampler;
  int64_t tokens_seen = 0;
  double best_val_loss = std::numeric_limits<double>::infinity();
  // Exponential moving average of the training loss (watchdog), NaN before
  // the first step, and its lowest value so far.
  double smoothed_loss = std::numeric_limits<double>::quiet_NaN();
  double min_smoothed_loss = std::numeric_limits<double>::infinity();
  double elapsed_seconds = 0.0;
};

// "<output_dir>/checkpoints/step_00000500".
std::string CheckpointDir(const std::string& output_dir, int64_t step);
// Checkpoint folders under <output_dir>/checkpoints, oldest first.
std::vector<std::string> ListCheckpoints(const std::string& output_dir);

// Writes a complete checkpoint folder atomically. `optimizer` may be null
// (weights only).
void SaveCheckpoint(const std::string& dir, const nn::Module& model,
                    AdamW* optimizer, const TrainerState& state,
                    const std::string& config_yaml);
// Deletes all but the newest `keep_last_n` checkpoint folders, and the
// temporary folders a run killed while saving left behind next to a
// complete folder of the same step. Call it right after a save (one writer
// per output_dir).
void PruneCheckpoints(const std::string& output_dir, int64_t keep_last_n);

// Copies the weights of <dir>/model.safetensors into `model`. Every
// parameter must be present with its shape; errors name the file and tensor.
void LoadModelWeights(const std::string& dir, const nn::Module& model);
void LoadOptimizerState(const std::string& dir, AdamW& optimizer);
TrainerState LoadTrainerState(const std::string& dir);
// The config.yaml text saved in a checkpoint.
std::string LoadCheckpointConfig(const std::string& dir);

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CHECKPOINT_H_
