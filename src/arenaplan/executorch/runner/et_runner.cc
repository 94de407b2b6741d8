// arenaplan's runner of a .pte program in ExecuTorch's own C++ runtime (the
// executorch wheel's headers and libraries; no torch).
//
//   et_runner PROGRAM.pte METHOD CALLS OUT_DIR [INPUT.bin ...]
//
// Loads METHOD with pools this program owns (their sizes from the program), each
// filled with a poison byte and fenced by guard bytes, and a method allocator
// that counts. Copies INPUT i into input i before every call, runs CALLS calls,
// writes output i of call c to OUT_DIR/c.i.bin. Does it all twice, with two
// poison bytes, so that a byte the program writes equal to one poison is seen
// with the other. Prints, one per line, key=value:
//   pool=K size=BYTES highest=BYTE   (highest byte written, -1: none; memory id K+1)
//   method_allocator=BYTES           (the method allocator's bytes after the calls)
//   guards=ok|broken
// Exit 0 when all ran, 1 when ExecuTorch refused or failed (its error on stderr),
// 2 on bad arguments.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

using executorch::extension::FileDataLoader;
using executorch::runtime::Error;
using executorch::runtime::HierarchicalAllocator;
using executorch::runtime::MemoryAllocator;
using executorch::runtime::MemoryManager;
using executorch::runtime::Method;
using executorch::runtime::MethodMeta;
using executorch::runtime::Program;
using executorch::runtime::Result;
using executorch::runtime::Span;

namespace {

const size_t kGuard = 64;                   // bytes fenced on each side of a pool
const size_t kMethodBytes = 16 << 20;       // the method allocator's room
const size_t kTempBytes = 16 << 20;         // the temporary allocator's room
const unsigned char kPoison[2] = {0xA5, 0x5A};

std::vector<unsigned char> read_all(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(f), {});
}

int fail(const char* what, Error e) {
  fprintf(stderr, "%s failed: ExecuTorch error 0x%x\n", what, (int)e);
  return 1;
}

struct Pools {
  std::vector<std::vector<unsigned char>> bytes;  // guard, pool, guard
  std::vector<Span<uint8_t>> spans;
};

Pools make_pools(const MethodMeta& meta, unsigned char poison) {
  Pools p;
  size_t n = meta.num_memory_planned_buffers();
  p.bytes.resize(n);
  for (size_t i = 0; i < n; i++) {
    size_t size = (size_t)meta.memory_planned_buffer_size(i).get();
    p.bytes[i].assign(size + 2 * kGuard, poison);
    p.spans.emplace_back(p.bytes[i].data() + kGuard, size);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s PROGRAM.pte METHOD CALLS OUT_DIR [INPUT.bin ...]\n", argv[0]);
    return 2;
  }
  executorch::runtime::runtime_init();
  const char* name = argv[2];
  int calls = atoi(argv[3]);
  std::string out_dir = argv[4];
  Result<FileDataLoader> loader = FileDataLoader::from(argv[1]);
  if (!loader.ok()) return fail("reading the program", loader.error());
  Result<Program> program =
      Program::load(&loader.get(), Program::Verification::InternalConsistency);
  if (!program.ok()) return fail("Program::load", program.error());
  Result<MethodMeta> meta = program->method_meta(name);
  if (!meta.ok()) return fail("method_meta", meta.error());
  size_t n_pools = meta->num_memory_planned_buffers();
  std::vector<long long> highest(n_pools, -1);
  size_t method_used = 0;
  bool guards = true;
  for (int run = 0; run < 2; run++) {
    unsigned char poison = kPoison[run];
    Pools pools = make_pools(meta.get(), poison);
    HierarchicalAllocator planned({pools.spans.data(), pools.spans.size()});
    std::vector<unsigned char> method_room(kMethodBytes), temp_room(kTempBytes);
    MemoryAllocator method_allocator(method_room.size(), method_room.data());
    MemoryAllocator temp_allocator(temp_room.size(), temp_room.data());
    MemoryManager memory(&method_allocator, &planned, &temp_allocator);
    Result<Method> method = program->load_method(name, &memory);
    if (!method.ok()) return fail("load_method", method.error());
    for (int c = 0; c < calls; c++) {
      for (size_t i = 0; i < method->inputs_size(); i++) {
        auto value = method->mutable_input(i);
        if (!value.isTensor()) continue;
        auto tensor = value.toTensor();
        if ((int)(5 + i) >= argc) {
          fprintf(stderr, "input %zu: no file given\n", i);
          return 2;
        }
        std::vector<unsigned char> data = read_all(argv[5 + i]);
        if (data.size() != tensor.nbytes()) {
          fprintf(stderr, "input %zu: %zu bytes given, %zu wanted\n", i, data.size(),
                  (size_t)tensor.nbytes());
          return 2;
        }
        memcpy(tensor.mutable_data_ptr(), data.data(), data.size());
      }
      Error e = method->execute();
      if (e != Error::Ok) return fail("execute", e);
      for (size_t i = 0; run == 0 && i < method->outputs_size(); i++) {
        auto value = method->get_output(i);
        if (!value.isTensor()) continue;
        auto tensor = value.toTensor();
        std::string path = out_dir + "/" + std::to_string(c) + "." + std::to_string(i) + ".bin";
        FILE* f = fopen(path.c_str(), "wb");
        if (f == nullptr) return 2;
        fwrite(tensor.const_data_ptr(), 1, tensor.nbytes(), f);
        fclose(f);
      }
    }
    method_used = method_allocator.used_size() > method_used ? method_allocator.used_size()
                                                              : method_used;
    for (size_t i = 0; i < n_pools; i++) {
      const unsigned char* b = pools.spans[i].data();
      size_t size = pools.spans[i].size();
      for (size_t k = size; k-- > 0;) {
        if (b[k] != poison) {
          if ((long long)k > highest[i]) highest[i] = (long long)k;
          break;
        }
      }
      for (size_t k = 0; k < kGuard; k++) {
        if (pools.bytes[i][k] != poison || pools.bytes[i][kGuard + size + k] != poison) {
          guards = false;
        }
      }
    }
  }
  for (size_t i = 0; i < n_pools; i++) {
    printf("pool=%zu size=%zu highest=%lld\n", i, (size_t)meta->memory_planned_buffer_size(i).get(),
           highest[i]);
  }
  printf("method_allocator=%zu\n", method_used);
  printf("guards=%s\n", guards ? "ok" : "broken");
  return 0;
}
