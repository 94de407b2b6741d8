/* Runs a model through arenaplan's split arena in the real TFLM library and
   measures each array; built by tests/export/test_multi_memory_runtime.py.

     multi_memory_driver MODEL.tflite INPUTS.bin TRIALS
     multi_memory_driver MODEL.tflite INPUTS.bin TRIALS TEMPORARY_BYTES TAIL_BYTES

   INPUTS.bin: TRIALS x (the model's inputs, in order, raw bytes). The build
   provides planner.h (arenaplan --planner-cpp) and arrays.h, which names its
   arrays:
     ARENAPLAN_FAST        the fast memory's array (TFLM's overlay)
     ARENAPLAN_PERSISTENT  the persistent array
     ARENAPLAN_ARRAYS(X)   X(array) for every array, fast first, persistent last

   The first form runs the model with TFLM's own planner in one plain arena (the
   reference), then through arenaplan::CreateAllocator() twice, with every array
   filled beforehand with a different byte (0xA5, then 0x5A): a byte counts as
   written when it differs from its fill after either run (the same inputs write
   the same values, which cannot equal both fills). Lines printed (offsets and
   sizes in bytes):
     reference ok | reference failed
     split ok | split failed
     output TRIAL INDEX HEX          (the split run's outputs)
     identical 1|0                   (split outputs == reference outputs)
     tensor input|output INDEX ARRAY OFFSET   (where TFLM put each I/O tensor)
     tail BYTES                      (TFLM's persistent data after AllocateTensors)
     array NAME SIZE START-END ...   (written bytes, half-open ranges)

   The second form only allocates, with a persistent array of the given parts
   (from the heap, so that sizes above the generated ones can be tried), and
   prints "allocates 1" or "allocates 0". The parts cannot overlap, so an
   allocation that succeeds runs as the generated sizes do.
*/
#define ARENAPLAN_DEFINE_ARENAS
#define ARENAPLAN_SPLIT_ARENA
#include "planner.h"
#include "arrays.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/schema/schema_generated.h"
#ifdef TFLM_RUNNER_LOG_CALLBACK  // cortex_m_generic: TFLM's log goes through a callback
#include "tensorflow/lite/micro/cortex_m_generic/debug_log_callback.h"
#endif

namespace {

constexpr size_t kReferenceArena = 1 << 20;  // bytes: more than any shared model needs
constexpr int kMaxOutputs = 8;
constexpr int kMaxTrials = 4;

using Resolver = tflite::MicroMutableOpResolver<48>;

void AddOps(Resolver& r) {
  r.AddAdd();
  r.AddAveragePool2D();
  r.AddCast();
  r.AddConcatenation();
  r.AddConv2D();
  r.AddDepthwiseConv2D();
  r.AddDequantize();
  r.AddDiv();
  r.AddEnergy();
  r.AddExpandDims();
  r.AddFftAutoScale();
  r.AddFilterBank();
  r.AddFilterBankLog();
  r.AddFilterBankSpectralSubtraction();
  r.AddFilterBankSquareRoot();
  r.AddFullyConnected();
  r.AddHardSwish();
  r.AddLeakyRelu();
  r.AddLogistic();
  r.AddMaxPool2D();
  r.AddMaximum();
  r.AddMean();
  r.AddMinimum();
  r.AddMul();
  r.AddPCAN();
  r.AddPack();
  r.AddPad();
  r.AddQuantize();
  r.AddRelu();
  r.AddRelu6();
  r.AddReshape();
  r.AddRfft();
  r.AddShape();
  r.AddSoftmax();
  r.AddSplit();
  r.AddSqueeze();
  r.AddStridedSlice();
  r.AddSub();
  r.AddSvdf();
  r.AddTanh();
  r.AddTranspose();
  r.AddUnidirectionalSequenceLSTM();
  r.AddUnpack();
  r.AddWindow();
}

struct Outputs {
  bool ok = false;
  int count = 0;  // outputs per trial
  size_t bytes[kMaxOutputs] = {};
  uint8_t* data[kMaxTrials][kMaxOutputs] = {};
};

struct Inputs {
  const uint8_t* data = nullptr;
  size_t size = 0;
  int trials = 0;
};

// ``bytes`` from the heap, 16-aligned (newlib has no aligned_alloc); never freed.
uint8_t* Aligned16(size_t bytes) {
  uint8_t* p = static_cast<uint8_t*>(malloc(bytes + 16));
  return p == nullptr ? nullptr : p + (16 - reinterpret_cast<uintptr_t>(p) % 16);
}

uint8_t* ReadFile(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return nullptr;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t* buf = Aligned16(static_cast<size_t>(n));  // the model is read in place
  if (buf != nullptr && fread(buf, 1, n, f) != static_cast<size_t>(n)) buf = nullptr;
  fclose(f);
  *size = static_cast<size_t>(n);
  return buf;
}

// Sets the inputs of each trial, invokes, copies the outputs.
Outputs RunTrials(tflite::MicroInterpreter& interpreter, const Inputs& in) {
  Outputs out;
  out.count = static_cast<int>(interpreter.outputs_size());
  if (out.count > kMaxOutputs || in.trials > kMaxTrials) return out;
  size_t at = 0;
  for (int t = 0; t < in.trials; ++t) {
    for (size_t i = 0; i < interpreter.inputs_size(); ++i) {
      TfLiteTensor* x = interpreter.input(i);
      if (at + x->bytes > in.size) return out;
      memcpy(x->data.raw, in.data + at, x->bytes);
      at += x->bytes;
    }
    if (interpreter.Invoke() != kTfLiteOk) return out;
    for (int k = 0; k < out.count; ++k) {
      TfLiteTensor* y = interpreter.output(k);
      out.bytes[k] = y->bytes;
      out.data[t][k] = static_cast<uint8_t*>(malloc(y->bytes + 1));
      memcpy(out.data[t][k], y->data.raw, y->bytes);
    }
  }
  out.ok = at == in.size;
  return out;
}

bool Same(const Outputs& a, const Outputs& b, int trials) {
  if (!a.ok || !b.ok || a.count != b.count) return false;
  for (int t = 0; t < trials; ++t) {
    for (int k = 0; k < a.count; ++k) {
      if (a.bytes[k] != b.bytes[k] || memcmp(a.data[t][k], b.data[t][k], a.bytes[k]) != 0) {
        return false;
      }
    }
  }
  return true;
}

Outputs RunReference(const tflite::Model* model, const Resolver& resolver, const Inputs& in) {
  static uint8_t* arena = Aligned16(kReferenceArena);
  tflite::MicroInterpreter interpreter(model, resolver, arena, kReferenceArena);
  if (interpreter.AllocateTensors() != kTfLiteOk) return Outputs();
  return RunTrials(interpreter, in);
}

#define ARENAPLAN_WHERE(array)                                                          \
  if (p >= array && p < array + sizeof(array)) {                                        \
    printf("tensor %s %d %s %ld\n", kind, index, #array, static_cast<long>(p - array)); \
    return;                                                                             \
  }

void PrintWhere(const char* kind, int index, const uint8_t* p) {
  ARENAPLAN_ARRAYS(ARENAPLAN_WHERE)
  printf("tensor %s %d elsewhere 0\n", kind, index);
}

// The generated wiring, as firmware uses it; ``tail``: TFLM's persistent bytes
// after AllocateTensors; ``where``: print where TFLM put the I/O tensors.
Outputs RunSplit(const tflite::Model* model, const Resolver& resolver, const Inputs& in,
                 size_t* tail, bool where) {
  tflite::MicroInterpreter interpreter(model, resolver, arenaplan::CreateAllocator());
  if (interpreter.AllocateTensors() != kTfLiteOk) return Outputs();
  // used bytes: the overlay reserved in the fast array, plus the persistent data
  *tail = interpreter.arena_used_bytes() - arenaplan::kFastBytes;
  if (where) {
    for (size_t i = 0; i < interpreter.inputs_size(); ++i) {
      PrintWhere("input", static_cast<int>(i), interpreter.input(i)->data.uint8);
    }
    for (size_t i = 0; i < interpreter.outputs_size(); ++i) {
      PrintWhere("output", static_cast<int>(i), interpreter.output(i)->data.uint8);
    }
  }
  return RunTrials(interpreter, in);
}

// AllocateTensors with a persistent array of ``temporary`` + ``tail`` bytes.
bool Allocates(size_t temporary, size_t tail, const tflite::Model* model,
               const Resolver& resolver) {
  uint8_t* persistent = Aligned16(temporary + tail);
  alignas(arenaplan::SplitArenaAllocator) static uint8_t
      a[sizeof(arenaplan::SplitArenaAllocator)];
  alignas(arenaplan::TablePlanner) static uint8_t p[sizeof(arenaplan::TablePlanner)];
  auto* allocator = new (a) arenaplan::SplitArenaAllocator(persistent, temporary, tail,
                                                           ARENAPLAN_FAST, arenaplan::kFastBytes);
  auto* planner = new (p) arenaplan::TablePlanner(ARENAPLAN_FAST, sizeof(ARENAPLAN_FAST));
  tflite::MicroInterpreter interpreter(model, resolver,
                                       tflite::MicroAllocator::Create(allocator, planner));
  return interpreter.AllocateTensors() == kTfLiteOk;
}

#define ARENAPLAN_FILL(array) memset(array, fill, sizeof(array));
#define ARENAPLAN_MARK(array)                                                   \
  for (size_t i = 0; i < sizeof(array); ++i) mark[at + i] |= array[i] != fill; \
  at += sizeof(array);
#define ARENAPLAN_SIZE(array) +sizeof(array)
#define ARENAPLAN_PRINT(array)                                                      \
  printf("array %s %u", #array, static_cast<unsigned>(sizeof(array)));              \
  for (size_t i = 0; i < sizeof(array); ++i) {                                      \
    if (mark[at + i] && (i == 0 || !mark[at + i - 1])) {                            \
      size_t j = i;                                                                 \
      while (j < sizeof(array) && mark[at + j]) ++j;                                \
      printf(" %u-%u", static_cast<unsigned>(i), static_cast<unsigned>(j));         \
    }                                                                               \
  }                                                                                 \
  printf("\n");                                                                     \
  at += sizeof(array);

#ifdef TFLM_RUNNER_LOG_CALLBACK
void LogCallback(const char* s) { fputs(s, stderr); }
#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef TFLM_RUNNER_LOG_CALLBACK
  RegisterDebugLogCallback(LogCallback);
#endif
  if (argc != 4 && argc != 6) {
    fprintf(stderr, "usage: %s MODEL INPUTS TRIALS [TEMPORARY_BYTES TAIL_BYTES]\n", argv[0]);
    return 2;
  }
  size_t model_size = 0;
  Inputs in;
  const uint8_t* model_data = ReadFile(argv[1], &model_size);
  in.data = ReadFile(argv[2], &in.size);
  in.trials = atoi(argv[3]);
  if (model_data == nullptr || in.data == nullptr || in.trials < 1 || in.trials > kMaxTrials) {
    fprintf(stderr, "cannot read the model or the inputs\n");
    return 2;
  }
  const tflite::Model* model = tflite::GetModel(model_data);
  static Resolver resolver;
  AddOps(resolver);
  if (argc == 6) {
    const bool ok = Allocates(strtoul(argv[4], nullptr, 10), strtoul(argv[5], nullptr, 10),
                              model, resolver);
    printf("allocates %d\n", ok ? 1 : 0);
    return 0;
  }

  Outputs reference = RunReference(model, resolver, in);
  printf("reference %s\n", reference.ok ? "ok" : "failed");
  if (!reference.ok) return 1;

  const size_t total = 0 ARENAPLAN_ARRAYS(ARENAPLAN_SIZE);
  bool* mark = static_cast<bool*>(calloc(total, 1));
  bool identical = true;
  size_t tail = 0;
  const uint8_t fills[2] = {0xA5, 0x5A};
  for (int run = 0; run < 2; ++run) {
    const uint8_t fill = fills[run];
    ARENAPLAN_ARRAYS(ARENAPLAN_FILL)
    Outputs out = RunSplit(model, resolver, in, &tail, run == 0);
    if (!out.ok) {
      printf("split failed\n");
      return 1;
    }
    if (run == 0) {
      printf("split ok\n");
      for (int t = 0; t < in.trials; ++t) {
        for (int k = 0; k < out.count; ++k) {
          printf("output %d %d ", t, k);
          for (size_t b = 0; b < out.bytes[k]; ++b) printf("%02x", out.data[t][k][b]);
          printf("\n");
        }
      }
    }
    identical = identical && Same(out, reference, in.trials);
    size_t at = 0;
    ARENAPLAN_ARRAYS(ARENAPLAN_MARK)
  }
  printf("identical %d\n", identical ? 1 : 0);
  printf("tail %u\n", static_cast<unsigned>(tail));
  size_t at = 0;
  ARENAPLAN_ARRAYS(ARENAPLAN_PRINT)
  return identical ? 0 : 1;
}
