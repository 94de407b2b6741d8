// ARENAPLAN_CASCADE: one TFLM custom operator that runs a chain of int8 operators
// row by row, keeping of each intermediate tensor only a ring of rows in one
// scratch buffer. The format (custom options, chain blob, row order) is arenaplan's
// docs/cascade.md.
//
// A firmware compiles arenaplan_cascade.cc with TFLM and registers the kernel:
//
//   #include "arenaplan_cascade.h"
//   resolver.AddCustom("ARENAPLAN_CASCADE", tflite::Register_ARENAPLAN_CASCADE());

#ifndef ARENAPLAN_CASCADE_H_
#define ARENAPLAN_CASCADE_H_

#include "tensorflow/lite/micro/micro_common.h"

namespace tflite {

// The kernel's registration (a static object: the pointer stays valid).
TFLMRegistration* Register_ARENAPLAN_CASCADE();

}  // namespace tflite

#endif  // ARENAPLAN_CASCADE_H_
