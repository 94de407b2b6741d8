// tflm_2_3_runner: invoke one model a number of times in TFLM release 2.3, the
// release MLPerf Tiny's reference results ran (its API: MicroInterpreter over an
// ErrorReporter and the AllOpsResolver; no MicroContext, no RecordingMicroAllocator).
//
//   tflm_2_3_runner MODEL TRIALS
//
// Each trial fills every input with bytes from a fixed linear congruential stream
// (so a run is the same every time) and invokes once. It prints "ok" to stderr when
// every invoke succeeded; exit status 0 ok, 2 bad arguments or model file, 3 the
// arena does not hold the model, 4 an invoke failed. Counting instructions is the
// caller's (scripts/gen_reference_release_counts.py: two trials less one).

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tensorflow/lite/micro/all_ops_resolver.h"
#include "tensorflow/lite/micro/micro_error_reporter.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/schema/schema_generated.h"

namespace {
constexpr size_t kArenaBytes = 4 << 20;  // bytes: more than any MLPerf Tiny model needs
constexpr size_t kModelBytes = 2 << 20;  // bytes: the largest model file read
alignas(16) uint8_t arena[kArenaBytes];
alignas(16) uint8_t model_data[kModelBytes];

// The model file's bytes in model_data; its length, or -1.
long read_model(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return -1;
  const size_t n = fread(model_data, 1, kModelBytes, f);
  const bool more = fgetc(f) != EOF;
  fclose(f);
  return more ? -1 : static_cast<long>(n);
}
}  // namespace

// TFLM 2.3's log sink (the tree's own is the board's: mbed, Arduino...).
extern "C" void DebugLog(const char* s) { fputs(s, stderr); }

int main(int argc, char** argv) {
  if (argc != 3 || read_model(argv[1]) <= 0) {
    fputs("usage: tflm_2_3_runner MODEL TRIALS (a readable model file)\n", stderr);
    return 2;
  }
  const int trials = atoi(argv[2]);
  static tflite::MicroErrorReporter reporter;
  static tflite::AllOpsResolver resolver;
  tflite::MicroInterpreter interpreter(tflite::GetModel(model_data), resolver, arena,
                                       kArenaBytes, &reporter);
  if (interpreter.AllocateTensors() != kTfLiteOk) return 3;
  uint32_t state = 12345;
  for (int t = 0; t < trials; ++t) {
    for (size_t i = 0; i < interpreter.inputs_size(); ++i) {
      TfLiteTensor* input = interpreter.input(i);
      for (size_t k = 0; k < input->bytes; ++k) {
        state = state * 1664525u + 1013904223u;
        input->data.raw[k] = static_cast<char>(state >> 24);
      }
    }
    if (interpreter.Invoke() != kTfLiteOk) return 4;
  }
  fputs("ok\n", stderr);
  return 0;
}
