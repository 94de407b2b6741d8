// traffic_runner: runs a .tflite model in TFLM (the library scripts/build_tflm.py
// builds) and, under the arenatraffic valgrind tool (native/traffic_tool.c),
// has every load and store of every operator counted per tensor, kernel
// scratch buffer and persistent block.
//
//   traffic_runner MODEL --layout OUT.json [--arena BYTES] [--seed N] [--warmup K]
//
// Writes OUT.json before the counted invoke: the address ranges (each with an
// id and a key naming what owns it) and the operators.  Then it runs K
// uncounted invokes and one counted invoke; around each operator's Invoke (the
// MicroProfiler's BeginEvent/EndEvent) it tells the tool which ranges are that
// operator's own (its input, output and intermediate tensors, its scratch
// buffers).  Persistent blocks (operator data, nodes, eval tensors, scratch
// handles, variable tensors) and the regions (model, arena head, arena tail)
// are given once.  Outside valgrind the client requests do nothing, so the
// runner also works as a plain TFLM runner.
//
// Keys: ["tensor", sg, t], ["scratch", sg, op, k],
// ["persistent", "op_data", sg, op] (every block a kernel allocated in its Init
// or Prepare), ["persistent", "node", sg, op] (its TfLiteNode and builtin
// options), ["persistent", "eval_tensor", sg, t], ["persistent",
// "scratch_handles"], ["persistent", "other"], ["model"] (flatbuffer bytes that
// are not the operator's tensors), ["arena", "head"] (head bytes that are not
// the operator's tensors or scratch buffers), ["other"] (id -1: stack, heap,
// globals).
//
// memcpy, memmove and memset are defined here, in plain C (words of 8 or 4
// bytes when both pointers are aligned to them, then bytes; memmove copies an
// overlapping tail-first range bytewise), so that the counts do not depend on
// which vector routine glibc picks for the machine.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "valgrind/valgrind.h"

// The runner reads the interpreter's and allocator's own bookkeeping (current
// operator, node and eval tensor arrays, scratch handles); it changes nothing.
#define private public
#define protected public
#include "tensorflow/lite/micro/micro_allocator.h"
#include "tensorflow/lite/micro/micro_interpreter.h"
#include "tensorflow/lite/micro/micro_interpreter_graph.h"
#include "python/tflite_micro/python_ops_resolver.h"
#include "tensorflow/lite/micro/arena_allocator/single_arena_buffer_allocator.h"
#include "tensorflow/lite/micro/memory_helpers.h"
#include "tensorflow/lite/micro/memory_planner/greedy_memory_planner.h"
#include "tensorflow/lite/micro/micro_profiler_interface.h"
#include "tensorflow/lite/schema/schema_generated.h"
#undef private
#undef protected
#include "traffic_requests.h"

// ---------------------------------------------------------------- libc

extern "C" {
#define AT_PLAIN __attribute__((optimize("no-tree-loop-distribute-patterns", "no-tree-vectorize")))

// The widest word both pointers are aligned to: 8, 4 or 1 bytes.
inline int WordOf(const void* a, const void* b) {
  uintptr_t x = reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b);
  return (x & 7) == 0 ? 8 : (x & 3) == 0 ? 4 : 1;
}

AT_PLAIN void* memcpy(void* dst, const void* src, size_t n) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  int w = WordOf(d, s);
  if (w == 8) {
    for (; n >= 8; n -= 8, d += 8, s += 8)
      *reinterpret_cast<uint64_t*>(d) = *reinterpret_cast<const uint64_t*>(s);
  } else if (w == 4) {
    for (; n >= 4; n -= 4, d += 4, s += 4)
      *reinterpret_cast<uint32_t*>(d) = *reinterpret_cast<const uint32_t*>(s);
  }
  for (; n > 0; n--) *d++ = *s++;
  return dst;
}

AT_PLAIN void* memmove(void* dst, const void* src, size_t n) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  if (d <= s || d >= s + n) return memcpy(dst, src, n);
  for (d += n, s += n; n > 0; n--) *--d = *--s;  // backwards, bytes (rare)
  return dst;
}

AT_PLAIN void* memset(void* dst, int c, size_t n) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  uint64_t w = 0x0101010101010101ull * static_cast<unsigned char>(c);
  int a = WordOf(d, d);
  if (a == 8) {
    for (; n >= 8; n -= 8, d += 8) *reinterpret_cast<uint64_t*>(d) = w;
  } else if (a == 4) {
    for (; n >= 4; n -= 4, d += 4) *reinterpret_cast<uint32_t*>(d) = static_cast<uint32_t>(w);
  }
  for (; n > 0; n--) *d++ = static_cast<unsigned char>(c);
  return dst;
}
}

namespace {

struct Range {
  uint64_t lo, hi;
  int64_t id;
};

struct Block {  // one persistent allocation
  uint64_t lo, hi;
  int sg, op;  // the operator whose Init or Prepare allocated it, or -1
};

tflite::MicroInterpreter* g_interp = nullptr;
std::vector<Block> g_blocks;

struct ScratchReq {
  int sg, op;
  size_t bytes;
};
std::vector<ScratchReq> g_scratch;  // by scratch buffer index

int CurrentOp(int* sg) {
  if (g_interp == nullptr) return -1;
  *sg = g_interp->graph_.current_subgraph_index_;
  uint32_t op = g_interp->graph_.current_operator_index_;
  return op == UINT32_MAX ? -1 : static_cast<int>(op);
}

// Every persistent allocation, tagged with the operator being initialised or
// prepared (-1 outside the Init and Prepare loops).
class LoggingPersistent : public tflite::IPersistentBufferAllocator {
 public:
  explicit LoggingPersistent(tflite::IPersistentBufferAllocator* inner) : inner_(inner) {}
  uint8_t* AllocatePersistentBuffer(size_t size, size_t alignment) override {
    uint8_t* p = inner_->AllocatePersistentBuffer(size, alignment);
    if (p != nullptr && size > 0) {
      int sg = -1;
      int op = CurrentOp(&sg);
      g_blocks.push_back({reinterpret_cast<uint64_t>(p), reinterpret_cast<uint64_t>(p) + size,
                          op < 0 ? -1 : sg, op});
    }
    return p;
  }
  size_t GetPersistentUsedBytes() const override { return inner_->GetPersistentUsedBytes(); }

 private:
  tflite::IPersistentBufferAllocator* inner_;
};

class TracingAllocator : public tflite::MicroAllocator {
 public:
  TracingAllocator(tflite::IPersistentBufferAllocator* p,
                   tflite::INonPersistentBufferAllocator* np, tflite::MicroMemoryPlanner* planner)
      : tflite::MicroAllocator(p, np, planner) {}
};

TfLiteStatus (*g_request_scratch)(TfLiteContext*, size_t, int*) = nullptr;

TfLiteStatus RequestScratch(TfLiteContext* ctx, size_t bytes, int* idx) {
  TfLiteStatus s = g_request_scratch(ctx, bytes, idx);
  if (s == kTfLiteOk) {
    int sg = -1;
    int op = CurrentOp(&sg);
    if (static_cast<size_t>(*idx) >= g_scratch.size()) g_scratch.resize(*idx + 1, {-1, -1, 0});
    g_scratch[*idx] = {sg, op, bytes};
  }
  return s;
}

// ---------------------------------------------------------------- ranges

struct Labelled {
  uint64_t lo, hi;
  std::string key;  // JSON array
};

std::vector<Labelled> g_labels;  // id -> key

int64_t Label(uint64_t lo, uint64_t hi, const std::string& key) {
  g_labels.push_back({lo, hi, key});
  return static_cast<int64_t>(g_labels.size() - 1);
}

// Sort, drop empty and duplicate ranges, cut partial overlaps (the first wins).
std::vector<Range> Disjoint(std::vector<Range> r) {
  std::stable_sort(r.begin(), r.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<Range> out;
  for (Range x : r) {
    if (!out.empty() && x.lo < out.back().hi) x.lo = out.back().hi;
    if (x.hi > x.lo) out.push_back(x);
  }
  return out;
}

// The parts of [lo, hi) not covered by the sorted disjoint ranges `fg`.
void Gaps(const std::vector<Range>& fg, uint64_t lo, uint64_t hi, int64_t id,
          std::vector<Range>* out) {
  uint64_t at = lo;
  for (const Range& r : fg) {
    if (r.hi <= at || r.lo >= hi) continue;
    if (r.lo > at) out->push_back({at, r.lo, id});
    at = std::max(at, r.hi);
  }
  if (at < hi) out->push_back({at, hi, id});
}

std::string Key(const char* a, int x = -1, int y = -1, const char* b = nullptr) {
  std::string k = "[\"";
  k += a;
  k += "\"";
  if (b != nullptr) {
    k += ",\"";
    k += b;
    k += "\"";
  }
  if (x >= 0) k += "," + std::to_string(x);
  if (y >= 0) k += "," + std::to_string(y);
  return k + "]";
}

struct OpInfo {
  int sg, op;
  std::string name;
  std::vector<Range> fine;  // words {lo, hi, id} for the tool
};

std::vector<OpInfo> g_ops;
std::vector<int> g_op_base;  // first global op id of each subgraph
std::vector<int> g_stack;    // operators being invoked (nested: control flow)
bool g_counting = false;

void Begin(int id) {
  const std::vector<Range>& f = g_ops[id].fine;
  VALGRIND_DO_CLIENT_REQUEST_STMT(AT_USERREQ_BEGIN, id, f.data(), f.size(), 0, 0);
}

void End() { VALGRIND_DO_CLIENT_REQUEST_STMT(AT_USERREQ_END, 0, 0, 0, 0, 0); }

class Markers : public tflite::MicroProfilerInterface {
 public:
  uint32_t BeginEvent(const char* tag) override {
    if (!g_counting) return 0;
    int sg = 0;
    int op = CurrentOp(&sg);
    if (op < 0) return 0;
    int id = g_op_base[sg] + op;
    if (!g_stack.empty()) End();
    g_stack.push_back(id);
    Begin(id);
    return 1;
  }
  void EndEvent(uint32_t handle) override {
    if (handle == 0 || g_stack.empty()) return;
    End();
    g_stack.pop_back();
    if (!g_stack.empty()) Begin(g_stack.back());
  }
};

uint64_t g_rng = 0x9E3779B97F4A7C15ull;
uint64_t Next() {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}

void FillRandom(TfLiteEvalTensor* t) {
  size_t bytes = 0;
  if (t == nullptr || t->data.raw == nullptr ||
      tflite::TfLiteEvalTensorByteLength(t, &bytes) != kTfLiteOk)
    return;
  if (t->type == kTfLiteFloat32) {
    float* f = t->data.f;
    for (size_t i = 0; i < bytes / 4; i++)
      f[i] = static_cast<float>((Next() >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
  } else if (t->type == kTfLiteBool) {
    for (size_t i = 0; i < bytes; i++) t->data.raw[i] = Next() & 1;
  } else {
    for (size_t i = 0; i < bytes; i++) t->data.raw[i] = static_cast<char>(Next() >> 56);
  }
}

int Usage() {
  std::fprintf(stderr,
               "usage: traffic_runner MODEL --layout OUT.json [--arena BYTES] [--seed N] "
               "[--warmup K]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  const char* model_path = argv[1];
  const char* layout_path = nullptr;
  size_t arena_size = 8u << 20;
  int warmup = 1;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (i + 1 >= argc) return Usage();
    if (a == "--layout") layout_path = argv[++i];
    else if (a == "--arena") arena_size = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--seed") g_rng ^= std::strtoull(argv[++i], nullptr, 10) * 0x2545F4914F6CDD1Dull;
    else if (a == "--warmup") warmup = std::atoi(argv[++i]);
    else return Usage();
  }
  if (layout_path == nullptr) return Usage();

  FILE* f = std::fopen(model_path, "rb");
  if (f == nullptr) {
    std::fprintf(stderr, "traffic_runner: cannot open %s\n", model_path);
    return 2;
  }
  std::fseek(f, 0, SEEK_END);
  size_t model_size = static_cast<size_t>(std::ftell(f));
  std::fseek(f, 0, SEEK_SET);
  uint8_t* model_data = static_cast<uint8_t*>(std::aligned_alloc(16, (model_size + 15) & ~size_t(15)));
  if (std::fread(model_data, 1, model_size, f) != model_size) return 2;
  std::fclose(f);
  const tflite::Model* model = tflite::GetModel(model_data);

  uint8_t* arena = static_cast<uint8_t*>(std::aligned_alloc(16, arena_size));
  std::memset(arena, 0, arena_size);
  tflite::SingleArenaBufferAllocator* single =
      tflite::SingleArenaBufferAllocator::Create(arena, arena_size);
  static LoggingPersistent logging(single);
  uint8_t* planner_buf = logging.AllocatePersistentBuffer(sizeof(tflite::GreedyMemoryPlanner),
                                                          alignof(tflite::GreedyMemoryPlanner));
  tflite::MicroMemoryPlanner* planner = new (planner_buf) tflite::GreedyMemoryPlanner();
  static TracingAllocator allocator(&logging, single, planner);
  static tflite::PythonOpsResolver resolver;
  static Markers markers;
  static tflite::MicroInterpreter interp(model, resolver, &allocator, nullptr, &markers);
  g_interp = &interp;
  g_request_scratch = interp.context_.RequestScratchBufferInArena;
  interp.context_.RequestScratchBufferInArena = RequestScratch;
  interp.graph_.current_operator_index_ = UINT32_MAX;  // outside the Init/Prepare loops
  if (interp.AllocateTensors() != kTfLiteOk) {
    std::fprintf(stderr, "traffic_runner: AllocateTensors failed\n");
    return 3;
  }

  // ---- ranges and their keys
  const int n_sg = static_cast<int>(model->subgraphs()->size());
  tflite::SubgraphAllocations* alloc = interp.graph_.GetAllocations();
  uint64_t arena_lo = reinterpret_cast<uint64_t>(arena);
  uint64_t arena_hi = arena_lo + arena_size;
  uint64_t tail_lo = arena_hi;
  for (const Block& b : g_blocks)
    if (b.lo >= arena_lo && b.lo < arena_hi) tail_lo = std::min(tail_lo, b.lo);

  std::vector<std::vector<int64_t>> tensor_id(n_sg);
  std::vector<std::vector<Range>> tensor_range(n_sg);
  std::vector<Range> coarse;
  for (int sg = 0; sg < n_sg; sg++) {
    int n = static_cast<int>(model->subgraphs()->Get(sg)->tensors()->size());
    tensor_id[sg].assign(n, -1);
    tensor_range[sg].assign(n, {0, 0, -1});
    for (int t = 0; t < n; t++) {
      TfLiteEvalTensor* e = &alloc[sg].tensors[t];
      size_t bytes = 0;
      if (e->data.raw != nullptr && tflite::TfLiteEvalTensorByteLength(e, &bytes) == kTfLiteOk &&
          bytes > 0) {
        uint64_t lo = reinterpret_cast<uint64_t>(e->data.raw);
        int64_t id = Label(lo, lo + bytes, Key("tensor", sg, t));
        tensor_id[sg][t] = id;
        tensor_range[sg][t] = {lo, lo + bytes, id};
        if (lo >= tail_lo && lo < arena_hi) coarse.push_back(tensor_range[sg][t]);  // variables
      }
      uint64_t elo = reinterpret_cast<uint64_t>(e);
      coarse.push_back({elo, elo + sizeof(TfLiteEvalTensor),
                        Label(elo, elo + sizeof(TfLiteEvalTensor),
                              Key("persistent", sg, t, "eval_tensor"))});
    }
  }
  // nodes and their builtin options; operator data blocks
  g_op_base.assign(n_sg, 0);
  for (int sg = 0; sg < n_sg; sg++) {
    g_op_base[sg] = static_cast<int>(g_ops.size());
    const tflite::SubGraph* sub = model->subgraphs()->Get(sg);
    int n_ops = sub->operators() ? static_cast<int>(sub->operators()->size()) : 0;
    for (int op = 0; op < n_ops; op++) {
      tflite::NodeAndRegistration* nr = &alloc[sg].node_and_registrations[op];
      uint64_t lo = reinterpret_cast<uint64_t>(nr);
      int64_t node_id = Label(lo, lo + sizeof(*nr), Key("persistent", sg, op, "node"));
      coarse.push_back({lo, lo + sizeof(*nr), node_id});
      for (const Block& b : g_blocks)
        if (b.lo == reinterpret_cast<uint64_t>(nr->node.builtin_data) && b.lo != 0)
          coarse.push_back({b.lo, b.hi, node_id});
      const char* name = "CUSTOM";
      const TFLMRegistration* reg = nr->registration;
      if (reg->builtin_code == tflite::BuiltinOperator_CUSTOM) {
        if (reg->custom_name != nullptr) name = reg->custom_name;
      } else {
        name = tflite::EnumNameBuiltinOperator(static_cast<tflite::BuiltinOperator>(reg->builtin_code));
      }
      g_ops.push_back({sg, op, name, {}});
    }
  }
  std::vector<int64_t> op_data_id(g_ops.size(), -1);
  for (const Block& b : g_blocks) {
    if (b.op < 0) continue;
    int id = g_op_base[b.sg] + b.op;
    if (op_data_id[id] < 0) op_data_id[id] = Label(0, 0, Key("persistent", b.sg, b.op, "op_data"));
    coarse.push_back({b.lo, b.hi, op_data_id[id]});
  }
  // scratch handles
  size_t n_scratch = g_scratch.size();
  if (interp.scratch_buffer_handles_ != nullptr && n_scratch > 0) {
    uint64_t lo = reinterpret_cast<uint64_t>(interp.scratch_buffer_handles_);
    uint64_t hi = lo + n_scratch * sizeof(tflite::ScratchBufferHandle);
    coarse.push_back({lo, hi, Label(lo, hi, "[\"persistent\",\"scratch_handles\"]")});
  }
  // the framework's own objects in the tail: the arena allocator, the planner, the
  // per-subgraph allocations array
  int64_t framework = Label(0, 0, "[\"persistent\",\"framework\"]");
  for (const Block& b : g_blocks)
    if (b.lo == reinterpret_cast<uint64_t>(alloc) || b.lo == reinterpret_cast<uint64_t>(planner_buf))
      coarse.push_back({b.lo, b.hi, framework});
  {
    uint64_t lo = reinterpret_cast<uint64_t>(single);
    coarse.push_back({lo, lo + sizeof(*single), framework});
  }
  coarse = Disjoint(coarse);
  int64_t other_persistent = Label(tail_lo, arena_hi, "[\"persistent\",\"other\"]");
  int64_t head = Label(arena_lo, tail_lo, "[\"arena\",\"head\"]");
  uint64_t model_lo = reinterpret_cast<uint64_t>(model_data);
  int64_t model_id = Label(model_lo, model_lo + model_size, "[\"model\"]");
  std::vector<Range> regions;
  Gaps(coarse, tail_lo, arena_hi, other_persistent, &regions);
  Gaps(coarse, arena_lo, tail_lo, head, &regions);
  Gaps(coarse, model_lo, model_lo + model_size, model_id, &regions);
  coarse.insert(coarse.end(), regions.begin(), regions.end());
  coarse = Disjoint(coarse);

  // each operator's own ranges: its tensors and scratch buffers
  std::vector<std::vector<Range>> scratch_of(g_ops.size());
  std::vector<int> scratch_k(g_ops.size(), 0);
  for (size_t i = 0; i < n_scratch; i++) {
    const ScratchReq& r = g_scratch[i];
    if (r.op < 0) continue;
    int id = g_op_base[r.sg] + r.op;
    uint64_t lo = reinterpret_cast<uint64_t>(interp.scratch_buffer_handles_[i].data);
    int64_t rid = Label(lo, lo + r.bytes,
                        "[\"scratch\"," + std::to_string(r.sg) + "," + std::to_string(r.op) +
                            "," + std::to_string(scratch_k[id]++) + "]");
    scratch_of[id].push_back({lo, lo + r.bytes, rid});
  }
  for (size_t id = 0; id < g_ops.size(); id++) {
    OpInfo& o = g_ops[id];
    TfLiteNode& node = alloc[o.sg].node_and_registrations[o.op].node;
    std::vector<Range> fine = scratch_of[id];
    for (const TfLiteIntArray* arr : {node.inputs, node.outputs, node.intermediates}) {
      if (arr == nullptr) continue;
      for (int k = 0; k < arr->size; k++) {
        int t = arr->data[k];
        if (t < 0 || t >= static_cast<int>(tensor_range[o.sg].size())) continue;
        if (tensor_range[o.sg][t].id >= 0) fine.push_back(tensor_range[o.sg][t]);
      }
    }
    o.fine = Disjoint(fine);
  }

  // ---- layout file
  FILE* out = std::fopen(layout_path, "w");
  if (out == nullptr) return 2;
  std::fprintf(out, "{\"model_base\": %llu, \"model_size\": %zu, \"arena_base\": %llu, ",
               static_cast<unsigned long long>(model_lo), model_size,
               static_cast<unsigned long long>(arena_lo));
  std::fprintf(out, "\"arena_size\": %zu, \"tail_base\": %llu, \"pointer_bytes\": %zu,\n",
               arena_size, static_cast<unsigned long long>(tail_lo), sizeof(void*));
  std::fprintf(out, "\"ops\": [");
  for (size_t id = 0; id < g_ops.size(); id++)
    std::fprintf(out, "%s\n {\"id\": %zu, \"subgraph\": %d, \"op\": %d, \"name\": \"%s\"}",
                 id ? "," : "", id, g_ops[id].sg, g_ops[id].op, g_ops[id].name.c_str());
  std::fprintf(out, "],\n\"ranges\": [");
  for (size_t id = 0; id < g_labels.size(); id++)
    std::fprintf(out, "%s\n {\"id\": %zu, \"key\": %s, \"lo\": %llu, \"hi\": %llu}",
                 id ? "," : "", id, g_labels[id].key.c_str(),
                 static_cast<unsigned long long>(g_labels[id].lo),
                 static_cast<unsigned long long>(g_labels[id].hi));
  std::fprintf(out, "]}\n");
  std::fclose(out);

  // ---- run
  for (size_t i = 0; i < interp.inputs_size(); i++)
    FillRandom(&alloc[0].tensors[interp.inputs().Get(i)]);
  for (int i = 0; i < warmup; i++) {
    if (interp.Invoke() != kTfLiteOk) {
      std::fprintf(stderr, "traffic_runner: Invoke failed\n");
      return 3;
    }
  }
  VALGRIND_DO_CLIENT_REQUEST_STMT(AT_USERREQ_COARSE, coarse.data(), coarse.size(), 0, 0, 0);
  g_counting = true;
  TfLiteStatus s = interp.Invoke();
  g_counting = false;
  if (s != kTfLiteOk) {
    std::fprintf(stderr, "traffic_runner: Invoke failed\n");
    return 3;
  }
  std::printf("ok %zu operators\n", g_ops.size());
  return 0;
}
