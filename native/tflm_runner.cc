// tflm_runner: run one model in TFLM built from source and report what it measured.
//
//   tflm_runner MODEL ARENA_BYTES RESULT_JSON OUTPUTS_BIN [INPUT_FILE ...]
//
// The input files are read one after the other as one stream of bytes, cut into
// trials of sum(input tensor bytes) each: one file per input tensor (one trial),
// or one blob holding any number of trials; no input file, no trial (allocation
// only, as the PyPI runtime with no inputs). Each trial sets every input, invokes,
// and appends every output's bytes to OUTPUTS_BIN (trial-major, then output order).
//
// TFLM's log goes to stderr. RESULT_JSON says how it went: "status" ("ok" or the stage that failed: "read",
// "model", "allocate", "inputs", "invoke"), "error", and after AllocateTensors
// the arena figures as the PyPI runtime's worker reads them from the recording
// allocator (head = non-persistent bytes, tail = persistent bytes, both after
// the last trial), the input and output tensors (type, dims, bytes), and per
// tensor of every subgraph its data address as a byte offset from the arena
// start (-1 when the data is not in the arena: constants in the model, no data).
//
// It sets the interpreter up as the PyPI runtime does
// (python/tflite_micro/interpreter_wrapper.cc): a RecordingMicroAllocator over
// the arena, MicroResourceVariables for the model's distinct VAR_HANDLE shared
// names, and the PythonOpsResolver's kernels. The arena is 16-aligned, so the
// arena start TFLM uses is the buffer start.
//
// Paths are kept short by the caller: on 32-bit ARM the command line reaches
// the program through semihosting (newlib's rdimon), which caps its length.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "arenaplan_cascade.h"  // src/arenaplan/firmware/, compiled into the runner
#include "tensorflow/lite/micro/micro_context.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_interpreter_graph.h"
#include "tensorflow/lite/micro/micro_mutable_op_resolver.h"
#include "tensorflow/lite/micro/micro_resource_variable.h"
#include "tensorflow/lite/micro/recording_micro_allocator.h"
#include "tensorflow/lite/schema/schema_generated.h"

#ifdef TFLM_RUNNER_LOG_CALLBACK
#include "tensorflow/lite/micro/cortex_m_generic/debug_log_callback.h"
#endif

namespace {

constexpr size_t kArenaAlignment = 16;  // bytes: TFLM's MicroArenaBufferAlignment()

// The kernels of python/tflite_micro/python_ops_resolver.cc, in its order, then
// arenaplan's own (docs/cascade.md).
class AllOpsResolver : public tflite::MicroMutableOpResolver<200> {
 public:
  AllOpsResolver() {
    AddAbs();
    AddAdd();
    AddAddN();
    AddArgMax();
    AddArgMin();
    AddAssignVariable();
    AddAveragePool2D();
    AddBatchMatMul();
    AddBatchToSpaceNd();
    AddBroadcastArgs();
    AddBroadcastTo();
    AddCallOnce();
    AddCast();
    AddCeil();
    AddCircularBuffer();
    AddConcatenation();
    AddConv2D();
    AddCos();
    AddCumSum();
    AddDecode();
    AddDelay();
    AddDepthToSpace();
    AddDepthwiseConv2D();
    AddDequantize();
    AddDetectionPostprocess();
    AddDiv();
    AddDynamicUpdateSlice();
    AddElu();
    AddEmbeddingLookup();
    AddEnergy();
    AddEqual();
    AddEthosU();
    AddExp();
    AddExpandDims();
    AddFftAutoScale();
    AddFill();
    AddFilterBank();
    AddFilterBankLog();
    AddFilterBankSpectralSubtraction();
    AddFilterBankSquareRoot();
    AddFloor();
    AddFloorDiv();
    AddFloorMod();
    AddFramer();
    AddFullyConnected();
    AddGather();
    AddGatherNd();
    AddGreater();
    AddGreaterEqual();
    AddHardSwish();
    AddIf();
    AddIrfft();
    AddL2Normalization();
    AddL2Pool2D();
    AddLeakyRelu();
    AddLess();
    AddLessEqual();
    AddLog();
    AddLogSoftmax();
    AddLogicalAnd();
    AddLogicalNot();
    AddLogicalOr();
    AddLogistic();
    AddMaxPool2D();
    AddMaximum();
    AddMean();
    AddMinimum();
    AddMirrorPad();
    AddMul();
    AddNeg();
    AddNotEqual();
    AddOverlapAdd();
    AddPCAN();
    AddPack();
    AddPad();
    AddPadV2();
    AddPrelu();
    AddQuantize();
    AddReadVariable();
    AddReduceAll();
    AddReduceMax();
    AddReduceMin();
    AddRelu();
    AddRelu6();
    AddReshape();
    AddResizeBilinear();
    AddResizeNearestNeighbor();
    AddReverseV2();
    AddRfft();
    AddRound();
    AddRsqrt();
    AddSelectV2();
    AddShape();
    AddSin();
    AddSlice();
    AddSoftmax();
    AddSpaceToBatchNd();
    AddSpaceToDepth();
    AddSplit();
    AddSplitV();
    AddSqrt();
    AddSquare();
    AddSquaredDifference();
    AddSqueeze();
    AddStacker();
    AddStridedSlice();
    AddSub();
    AddSum();
    AddSvdf();
    AddTanh();
    AddTranspose();
    AddTransposeConv();
    AddUnidirectionalSequenceLSTM();
    AddUnpack();
    AddVarHandle();
    AddWhile();
    AddWindow();
    AddZerosLike();
    AddCustom("ARENAPLAN_CASCADE", tflite::Register_ARENAPLAN_CASCADE());
  }
};

// A MicroInterpreter that lets the runner read every subgraph's eval tensors
// (the data addresses TFLM committed) without preserving all tensors, which
// would change the plan.
class ProbingInterpreter : public tflite::MicroInterpreter {
 public:
  using tflite::MicroInterpreter::MicroInterpreter;

  tflite::SubgraphAllocations* allocations() {
    tflite::MicroGraph& graph = tflite::GetMicroContext(&context())->graph();
    return static_cast<tflite::MicroInterpreterGraph&>(graph).GetAllocations();
  }
};

#ifdef TFLM_RUNNER_LOG_CALLBACK
// cortex_m_generic's DebugLog hands each message to a callback: send it to
// stderr, as the host's DebugLog does (semihosting carries it to the host).
void LogCallback(const char* s) { fputs(s, stderr); }
#endif

bool ReadFile(const char* path, std::vector<uint8_t>* out, std::string* error) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) {
    *error = std::string("cannot open ") + path;
    return false;
  }
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    out->insert(out->end(), chunk, chunk + n);
  }
  bool ok = ferror(f) == 0;
  fclose(f);
  if (!ok) *error = std::string("cannot read ") + path;
  return ok;
}

void AppendEscaped(std::string* json, const std::string& text) {
  *json += '"';
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      *json += '\\';
      *json += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", c);
      *json += buf;
    } else {
      *json += static_cast<char>(c);
    }
  }
  *json += '"';
}

void AppendInt(std::string* json, long long value) {
  char buf[32];
  snprintf(buf, sizeof buf, "%lld", value);
  *json += buf;
}

void AppendTensorSpecs(std::string* json, const char* key, size_t count,
                       TfLiteTensor* (ProbingInterpreter::*get)(size_t),
                       ProbingInterpreter* interpreter) {
  *json += ",\n\"";
  *json += key;
  *json += "\": [";
  for (size_t i = 0; i < count; ++i) {
    const TfLiteTensor* t = (interpreter->*get)(i);
    if (i > 0) *json += ", ";
    *json += "{\"type\": ";
    AppendInt(json, t->type);
    *json += ", \"bytes\": ";
    AppendInt(json, static_cast<long long>(t->bytes));
    *json += ", \"dims\": [";
    for (int d = 0; t->dims != nullptr && d < t->dims->size; ++d) {
      if (d > 0) *json += ", ";
      AppendInt(json, t->dims->data[d]);
    }
    *json += "]}";
  }
  *json += "]";
}

// The PyPI runtime's count_resource_variables: distinct VAR_HANDLE shared names.
int CountResourceVariables(const tflite::Model* model) {
  std::set<std::string> names;
  const auto* codes = model->operator_codes();
  if (model->subgraphs() == nullptr || codes == nullptr) return 0;
  for (const tflite::SubGraph* subgraph : *model->subgraphs()) {
    if (subgraph->operators() == nullptr) continue;
    for (const tflite::Operator* op : *subgraph->operators()) {
      if (op->opcode_index() >= codes->size()) continue;
      const tflite::OperatorCode* code = codes->Get(op->opcode_index());
      int builtin = static_cast<int>(code->builtin_code());
      if (code->deprecated_builtin_code() > builtin) builtin = code->deprecated_builtin_code();
      if (builtin != tflite::BuiltinOperator_VAR_HANDLE) continue;
      const tflite::VarHandleOptions* options = op->builtin_options_as_VarHandleOptions();
      const char* name = options != nullptr && options->shared_name() != nullptr
                             ? options->shared_name()->c_str()
                             : "";
      names.insert(name);
    }
  }
  return static_cast<int>(names.size());
}

struct Result {
  std::string status = "ok";  // or the stage that failed
  std::string error;
  std::string body;  // JSON members after status and error, each led by ",\n"
};

bool WriteResult(const char* path, const Result& result) {
  std::string json = "{\"status\": ";
  AppendEscaped(&json, result.status);
  json += ",\n\"error\": ";
  if (result.status == "ok") {
    json += "null";
  } else {
    AppendEscaped(&json, result.error);
  }
  json += result.body;
  json += "}\n";
  FILE* f = fopen(path, "wb");
  if (f == nullptr) return false;
  bool ok = fwrite(json.data(), 1, json.size(), f) == json.size();
  return fclose(f) == 0 && ok;
}

int Fail(const char* result_path, Result* result, const char* stage, const std::string& error) {
  result->status = stage;
  result->error = error;
  if (!WriteResult(result_path, *result)) {
    fprintf(stderr, "tflm_runner: cannot write %s\n", result_path);
    return 2;
  }
  return 0;  // the failure is in the result file, for the caller to read
}

}  // namespace

int main(int argc, char** argv) {
#ifdef TFLM_RUNNER_LOG_CALLBACK
  RegisterDebugLogCallback(LogCallback);
#endif
  if (argc < 5) {
    fprintf(stderr, "usage: tflm_runner MODEL ARENA_BYTES RESULT_JSON OUTPUTS_BIN [INPUT ...]\n");
    return 2;
  }
  const char* result_path = argv[3];
  Result result;

  // The model, 16-aligned (flatbuffers reads scalars in place).
  std::vector<uint8_t> file;
  std::string error;
  if (!ReadFile(argv[1], &file, &error)) return Fail(result_path, &result, "read", error);
  std::vector<uint64_t> model_words((file.size() + 15) / 8 + 1);
  uint8_t* model_data = reinterpret_cast<uint8_t*>(model_words.data());
  memcpy(model_data, file.data(), file.size());
  // Not checked with flatbuffers' Verifier: neither TFLM nor the PyPI runtime does,
  // and the runner must accept what they accept (a bad model may crash it).
  if (file.size() < 8) {
    return Fail(result_path, &result, "model", "the model is shorter than 8 bytes");
  }
  const tflite::Model* model = tflite::GetModel(model_data);

  std::vector<uint8_t> stream;
  for (int i = 5; i < argc; ++i) {
    if (!ReadFile(argv[i], &stream, &error)) return Fail(result_path, &result, "read", error);
  }

  char* end = nullptr;
  unsigned long arena_size = strtoul(argv[2], &end, 10);
  if (end == argv[2] || *end != '\0') {
    return Fail(result_path, &result, "read", std::string("bad arena size ") + argv[2]);
  }
  uint8_t* raw_arena = static_cast<uint8_t*>(malloc(arena_size + kArenaAlignment));
  if (raw_arena == nullptr) {
    return Fail(result_path, &result, "read", "cannot allocate the arena");
  }
  uintptr_t base = reinterpret_cast<uintptr_t>(raw_arena);
  uint8_t* arena = raw_arena + (kArenaAlignment - base % kArenaAlignment) % kArenaAlignment;

  static AllOpsResolver resolver;
  tflite::RecordingMicroAllocator* allocator =
      tflite::RecordingMicroAllocator::Create(arena, arena_size);
  if (allocator == nullptr) {
    return Fail(result_path, &result, "allocate", "the arena is too small for the allocator");
  }
  int n_variables = CountResourceVariables(model);
  tflite::MicroResourceVariables* variables =
      n_variables > 0 ? tflite::MicroResourceVariables::Create(allocator, n_variables) : nullptr;
  ProbingInterpreter interpreter(model, resolver, allocator, variables);
  if (interpreter.AllocateTensors() != kTfLiteOk) {
    return Fail(result_path, &result, "allocate", "TFLM failed to allocate tensors");
  }

  AppendTensorSpecs(&result.body, "inputs", interpreter.inputs_size(), &ProbingInterpreter::input,
                    &interpreter);
  AppendTensorSpecs(&result.body, "outputs", interpreter.outputs_size(),
                    &ProbingInterpreter::output, &interpreter);

  // Every tensor's data address, as TFLM committed it, from the arena start.
  result.body += ",\n\"tensors\": [";
  tflite::SubgraphAllocations* allocations = interpreter.allocations();
  for (size_t sg = 0; sg < model->subgraphs()->size(); ++sg) {
    const tflite::SubGraph* subgraph = model->subgraphs()->Get(sg);
    size_t n_tensors = subgraph->tensors() == nullptr ? 0 : subgraph->tensors()->size();
    result.body += sg > 0 ? ",\n[" : "\n[";
    for (size_t i = 0; i < n_tensors; ++i) {
      const uint8_t* data = static_cast<const uint8_t*>(allocations[sg].tensors[i].data.data);
      long long offset = -1;
      if (data != nullptr && data >= arena && data < arena + arena_size) offset = data - arena;
      if (i > 0) result.body += ", ";
      AppendInt(&result.body, offset);
    }
    result.body += "]";
  }
  result.body += "]";

  size_t trial_bytes = 0;
  for (size_t i = 0; i < interpreter.inputs_size(); ++i) trial_bytes += interpreter.input(i)->bytes;
  if (trial_bytes == 0 ? !stream.empty() : stream.size() % trial_bytes != 0) {
    return Fail(result_path, &result, "inputs",
                "the inputs hold " + std::to_string(stream.size()) +
                    " bytes, not a whole number of trials of " + std::to_string(trial_bytes) +
                    " bytes");
  }
  // No input file: no trial (allocation only). A model without inputs: one trial.
  size_t n_trials = argc == 5 ? 0 : trial_bytes == 0 ? 1 : stream.size() / trial_bytes;

  FILE* outputs_file = fopen(argv[4], "wb");
  if (outputs_file == nullptr) {
    return Fail(result_path, &result, "read", std::string("cannot write ") + argv[4]);
  }
  const uint8_t* next = stream.data();
  for (size_t trial = 0; trial < n_trials; ++trial) {
    for (size_t i = 0; i < interpreter.inputs_size(); ++i) {
      TfLiteTensor* input = interpreter.input(i);
      if (input->bytes > 0) memcpy(input->data.raw, next, input->bytes);
      next += input->bytes;
    }
    if (interpreter.Invoke() != kTfLiteOk) {
      fclose(outputs_file);
      return Fail(result_path, &result, "invoke", "Interpreter invocation failed.");
    }
    for (size_t k = 0; k < interpreter.outputs_size(); ++k) {
      const TfLiteTensor* output = interpreter.output(k);
      if (output->bytes > 0 &&
          fwrite(output->data.raw, 1, output->bytes, outputs_file) != output->bytes) {
        fclose(outputs_file);
        return Fail(result_path, &result, "read", std::string("cannot write ") + argv[4]);
      }
    }
  }
  if (fclose(outputs_file) != 0) {
    return Fail(result_path, &result, "read", std::string("cannot write ") + argv[4]);
  }

  allocator->PrintAllocations();
  const tflite::RecordingSingleArenaBufferAllocator* memory =
      allocator->GetSimpleMemoryAllocator();
  result.body += ",\n\"trials\": ";
  AppendInt(&result.body, static_cast<long long>(n_trials));
  result.body += ",\n\"arena_size\": ";
  AppendInt(&result.body, static_cast<long long>(arena_size));
  result.body += ",\n\"head\": ";
  AppendInt(&result.body, static_cast<long long>(memory->GetNonPersistentUsedBytes()));
  result.body += ",\n\"tail\": ";
  AppendInt(&result.body, static_cast<long long>(memory->GetPersistentUsedBytes()));
  result.body += ",\n\"total\": ";
  AppendInt(&result.body, static_cast<long long>(memory->GetUsedBytes()));
  result.body += ",\n\"arena_used_bytes\": ";
  AppendInt(&result.body, static_cast<long long>(interpreter.arena_used_bytes()));
  result.body += ",\n\"pointer_bytes\": ";
  AppendInt(&result.body, static_cast<long long>(sizeof(void*)));
  if (!WriteResult(result_path, result)) {
    fprintf(stderr, "tflm_runner: cannot write %s\n", result_path);
    return 2;
  }
  return 0;
}
