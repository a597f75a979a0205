// Forwarding header for code written against an installed rotor before the
// field vocabulary moved to core/fields.h (namespace rotor) and the
// override helpers to train/config/overrides.h: the old names, in
// rotor::train, stay usable. rotor's own code includes those two instead.
#ifndef ROTOR_TRAIN_CONFIG_FIELDS_H_
#define ROTOR_TRAIN_CONFIG_FIELDS_H_

#include "core/fields.h"
#include "train/config/overrides.h"

namespace rotor::train {

using ::rotor::ConfigProblem;
using ::rotor::Key;
using ::rotor::KeyNames;
using ::rotor::KeyNamesOf;
using ::rotor::KeyPaths;
using ::rotor::KeyPathsOf;
using ::rotor::VisitedOnDefaults;
namespace field = ::rotor::field;

}  // namespace rotor::train

#endif  // ROTOR_TRAIN_CONFIG_FIELDS_H_
