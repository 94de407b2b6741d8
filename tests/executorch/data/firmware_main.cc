// A firmware's use of arenaplan's ExecuTorch header (ARENAPLAN_HEADER, included with
// ARENAPLAN_DEFINE_POOLS): the program's pools and a method allocator of exactly
// ARENAPLAN_METHOD_ALLOCATOR_BYTES - ARENAPLAN_SHORT bytes. Loads METHOD and runs it
// once. Exit 0: it ran; 1: ExecuTorch refused (its error on stderr); 2: bad use.
//
//   firmware PROGRAM.pte METHOD
#include <cstdio>
#include <cstring>

#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#define ARENAPLAN_DEFINE_POOLS
#include ARENAPLAN_HEADER

#ifndef ARENAPLAN_SHORT
#define ARENAPLAN_SHORT 0
#endif

using namespace executorch::runtime;
using executorch::extension::FileDataLoader;

static uint8_t temp_room[1 << 20];  // the temporary allocator: not sized by the header

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  runtime_init();
  Result<FileDataLoader> loader = FileDataLoader::from(argv[1]);
  if (!loader.ok()) return 2;
  Result<Program> program = Program::load(&loader.get());
  if (!program.ok()) return 2;
  Span<uint8_t> pools[] = {
      {arenaplan_pool_1, ARENAPLAN_POOL_1_BYTES},
#if ARENAPLAN_POOL_COUNT > 1
      {arenaplan_pool_2, ARENAPLAN_POOL_2_BYTES},
#endif
  };
  HierarchicalAllocator planned({pools, ARENAPLAN_POOL_COUNT});
  MemoryAllocator method_allocator(ARENAPLAN_METHOD_ALLOCATOR_BYTES - ARENAPLAN_SHORT,
                                   arenaplan_method_allocator);
  MemoryAllocator temp_allocator(sizeof(temp_room), temp_room);
  MemoryManager memory(&method_allocator, &planned, &temp_allocator);
  Result<Method> method = program->load_method(argv[2], &memory);
  if (!method.ok()) {
    fprintf(stderr, "load_method: error 0x%x\n", (int)method.error());
    return 1;
  }
  for (size_t i = 0; i < method->inputs_size(); i++) {  // zeros in, as the runner does
    EValue& value = method->mutable_input(i);
    if (value.isTensor()) memset(value.toTensor().mutable_data_ptr(), 0, value.toTensor().nbytes());
  }
  Error e = method->execute();
  if (e != Error::Ok) {
    fprintf(stderr, "execute: error 0x%x\n", (int)e);
    return 1;
  }
  return 0;
}
