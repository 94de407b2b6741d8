// A tiny firmware: one model over two memories with stock TFLM (reference kernels).
//
// planner.h comes from arenaplan (the Makefile beside this file makes both headers):
//
//   arenaplan plan keyword_scrambled.tflite --target imxrt1170 --memory tcm=640 \
//       --planner-cpp planner.h
//
// The activations then live in two arrays, arenaplan_tcm (the 640 B of TCM given)
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
// takes it in place of an arena. The program fills the input with a ramp, runs
// the model once and prints its output bytes and where each array is.

#define ARENAPLAN_DEFINE_ARENAS  // in exactly one source file: the arrays themselves
#define ARENAPLAN_SPLIT_ARENA    // the allocator over them (includes TFLM's headers)
#include "planner.h"

#include <stdio.h>

#include "model_data.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#ifdef TFLM_RUNNER_LOG_CALLBACK  // TFLM's cortex_m_generic logs through a callback
#include "tensorflow/lite/micro/cortex_m_generic/debug_log_callback.h"
static void Log(const char* s) { fputs(s, stderr); }
#endif

int main() {
#ifdef TFLM_RUNNER_LOG_CALLBACK
  RegisterDebugLogCallback(Log);
#endif
  const tflite::Model* model = tflite::GetModel(g_model);
  static tflite::MicroMutableOpResolver<4> resolver;  // the kernels this model uses
  resolver.AddFullyConnected();
  resolver.AddQuantize();
  resolver.AddSoftmax();
  resolver.AddSvdf();

  tflite::MicroInterpreter interpreter(model, resolver, arenaplan::CreateAllocator());
  if (interpreter.AllocateTensors() != kTfLiteOk) {
    printf("AllocateTensors failed\n");
    return 1;
  }
  TfLiteTensor* input = interpreter.input(0);
  for (size_t i = 0; i < input->bytes; ++i) input->data.uint8[i] = static_cast<uint8_t>(7 * i);
  if (interpreter.Invoke() != kTfLiteOk) {
    printf("Invoke failed\n");
    return 1;
  }
  TfLiteTensor* output = interpreter.output(0);
  printf("output");
  for (size_t i = 0; i < output->bytes; ++i) printf(" %02x", output->data.uint8[i]);
  printf("\n");
  printf("arenaplan_tcm %p, %u B; arenaplan_ocram %p, %u B\n", static_cast<void*>(arenaplan_tcm),
         static_cast<unsigned>(sizeof(arenaplan_tcm)), static_cast<void*>(arenaplan_ocram),
         static_cast<unsigned>(sizeof(arenaplan_ocram)));
  printf("arenaplan_persistent_ocram %p, %u B (TFLM used %u B of persistent data)\n",
         static_cast<void*>(arenaplan_persistent_ocram),
         static_cast<unsigned>(sizeof(arenaplan_persistent_ocram)),
         static_cast<unsigned>(interpreter.arena_used_bytes() - arenaplan::kFastBytes));
  return 0;
}
