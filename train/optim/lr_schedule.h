// Learning-rate schedule: linear warm-up, then cosine decay to min_lr
// (nanoGPT's get_lr, so its curves compare one to one).
//
//   step < warmup:            lr * (step + 1) / (warmup + 1)
//   warmup <= step <= total:  min_lr + (lr - min_lr) * 0.5 * (1 + cos(pi * r)),
//                             r = (step - warmup) / (total - warmup)
//   step > total:             min_lr
// `step` counts optimizer steps from 0.
#ifndef ROTOR_TRAIN_OPTIM_LR_SCHEDULE_H_
#define ROTOR_TRAIN_OPTIM_LR_SCHEDULE_H_

#include <cmath>
#include <cstdint>

namespace rotor::train {

struct CosineSchedule {
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup_steps = 0;
  int64_t total_steps = 1;

  double At(int64_t step) const {
    if (step < warmup_steps) {
      return lr * static_cast<double>(step + 1) / (warmup_steps + 1);
    }
    if (step > total_steps || total_steps <= warmup_steps) return min_lr;
    const double ratio = static_cast<double>(step - warmup_steps) /
                         static_cast<double>(total_steps - warmup_steps);
    const double coefficient = 0.5 * (1.0 + std::cos(M_PI * ratio));
    return min_lr + coefficient * (lr - min_lr);
  }
};

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_OPTIM_LR_SCHEDULE_H_
