// A tiny firmware: one model over two memories with stock TFLM.
//
// planner.h comes from arenaplan (the Makefile beside this file makes both headers;
// its defaults):
//
//   arenaplan plan keyword_scrambled.tflite --target imxrt1170 --memory tcm=640 \
//       --kernels cmsis_nn+dsp --planner-cpp planner.h
//
// For that plan the activations live in two arrays, arenaplan_tcm (the 640 B of TCM given)
// and arenaplan_ocram, and TFLM's persistent data in a third,
// arenaplan_persistent_ocram; each array is defined in its memory's linker section
// (.dtcm, .ocram: the target's), which the firmware's linker script places in that
// memory. model_data.h holds the model as a 16-aligned array:
//
//   alignas(16) const unsigned char g_model[] = {...};
//
// The wiring, all stock TFLM: arenaplan::CreateAllocator() makes the
// MicroAllocator over the arrays (an arenaplan::SplitArenaAllocator, the arena
// allocator whose overlay is the fast array, and arenaplan::TablePlanner, the
// memory planner answering TFLM from the plan's offset table); the interpreter
// takes it in place of an arena. arenaplan::OpResolver is TFLM's
// MicroMutableOpResolver with room for the model's operators, and
// arenaplan::RegisterOps adds them (the kernels of TFLM's library: CMSIS-NN's where
// the library was built with them). Nothing here names the model, its operators or
// the target's memories, so any plan builds unchanged.
//
// The program fills each input with a ramp (input k, byte i: 7 * i + k; a float32
// input's element i: (7 * i + k) % 256 / 128 - 1), runs the model once and prints
// each output's bytes ("output K" and hex) and where each array is.

#define ARENAPLAN_DEFINE_ARENAS        // in exactly one source file: the arrays themselves
#define ARENAPLAN_SPLIT_ARENA          // the allocator over them (includes TFLM's headers)
#define ARENAPLAN_DEFINE_OP_RESOLVER  // the model's operators
#include "planner.h"

#include <stdio.h>

#include "model_data.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/schema/schema_generated.h"
#ifdef TFLM_RUNNER_LOG_CALLBACK  // TFLM's cortex_m_generic logs through a callback
#include "tensorflow/lite/micro/cortex_m_generic/debug_log_callback.h"
static void Log(const char* s) { fputs(s, stderr); }
#endif

static void Fill(TfLiteTensor* t, size_t k) {
  if (t->type == kTfLiteFloat32) {
    for (size_t i = 0; i < t->bytes / sizeof(float); ++i) {
      t->data.f[i] = static_cast<float>((7 * i + k) % 256) / 128.0f - 1.0f;
    }
    return;
  }
  for (size_t i = 0; i < t->bytes; ++i) t->data.uint8[i] = static_cast<uint8_t>(7 * i + k);
}

static void Where(const char* what, const arenaplan::Array& a) {
  printf("%s %p, %u B\n", what, static_cast<void*>(a.data), static_cast<unsigned>(a.bytes));
}

int main() {
#ifdef TFLM_RUNNER_LOG_CALLBACK
  RegisterDebugLogCallback(Log);
#endif
  const tflite::Model* model = tflite::GetModel(g_model);
  static arenaplan::OpResolver resolver;
  if (arenaplan::RegisterOps(resolver) != kTfLiteOk) {
    printf("RegisterOps failed\n");
    return 1;
  }

  tflite::MicroInterpreter interpreter(model, resolver, arenaplan::CreateAllocator());
  if (interpreter.AllocateTensors() != kTfLiteOk) {
    printf("AllocateTensors failed\n");
    return 1;
  }
  for (size_t k = 0; k < interpreter.inputs_size(); ++k) Fill(interpreter.input(k), k);
  if (interpreter.Invoke() != kTfLiteOk) {
    printf("Invoke failed\n");
    return 1;
  }
  for (size_t k = 0; k < interpreter.outputs_size(); ++k) {
    const TfLiteTensor* output = interpreter.output(k);
    printf("output %u", static_cast<unsigned>(k));
    for (size_t i = 0; i < output->bytes; ++i) printf(" %02x", output->data.uint8[i]);
    printf("\n");
  }
  Where(arenaplan::kMemoryNames[0], arenaplan::kFastArray);
  for (int m = 1; m < arenaplan::kMemoryCount; ++m) {
    Where(arenaplan::kMemoryNames[m], arenaplan::kOtherArrays[m - 1]);
  }
  Where("persistent", arenaplan::kPersistentArray);
  printf("TFLM used %u B of persistent data\n",
         static_cast<unsigned>(interpreter.arena_used_bytes() - arenaplan::kFastBytes));
  return 0;
}
