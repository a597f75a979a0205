// Exercise (rung 06, docs/training.md "the schedule"): the learning rate of
// step `step` (counted from 0) under linear warm-up and cosine decay, the
// schedule every rung from 06 on trains with.
//
// step < warmup: the rate rises linearly, in equal increments from
//   lr / (warmup + 1) at step 0 (so that step `warmup` would reach lr).
// warmup <= step <= total: half a period of a cosine, from lr at
//   step == warmup down to min_lr at step == total (a function of the
//   fraction q = (step - warmup) / (total - warmup) of the decay done).
// step > total (or total <= warmup, past the warm-up): min_lr.
// Test: ctest -R Learn.CosineSchedule (against train::CosineSchedule).
#ifndef ROTOR_EXAMPLES_EXERCISES_COSINE_SCHEDULE_H_
#define ROTOR_EXAMPLES_EXERCISES_COSINE_SCHEDULE_H_

#include <cmath>
#include <cstdint>

namespace learn {

inline double CosineLr(double lr, double min_lr, int64_t warmup, int64_t total,
                       int64_t step) {
  double result = lr;
  // ---- REFERENCE SOLUTION: delete from here ...
  const double kPi = 3.14159265358979323846;
  if (step < warmup) {
    result =
        lr * static_cast<double>(step + 1) / static_cast<double>(warmup + 1);
  } else if (step > total || total <= warmup) {
    result = min_lr;
  } else {
    const double q = static_cast<double>(step - warmup) /
                     static_cast<double>(total - warmup);
    result = min_lr + (lr - min_lr) * 0.5 * (1.0 + std::cos(kPi * q));
  }
  // ---- ... to here, and write your own. ----
  return result;
}

}  // namespace learn

#endif  // ROTOR_EXAMPLES_EXERCISES_COSINE_SCHEDULE_H_
