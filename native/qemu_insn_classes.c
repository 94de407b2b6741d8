/* qemu_insn_classes: a QEMU TCG plugin that counts the guest instructions a Thumb
 * program executes, in all and by class, for arenaplan.tflm.verify.instructions (one
 * invoke's instructions on the ARM builds; the per-kernel instruction tables of the
 * Cortex-M time model, scripts/gen_kernel_counts.py).
 *
 * Each instruction is classed once, when its block is translated, from its encoding
 * (ARMv7-M / ARMv8.1-M Thumb; capstone is not used: Debian's knows no MVE):
 *
 *   alu        data processing, moves, saturation, SIMD-in-register (SXTB16, QADD8)
 *   mul        multiplies and multiply-accumulates (MUL, MLA, SMLAD, SMULL, SMLAL)
 *   div        SDIV, UDIV
 *   load       a load or store-free load not following a load or store
 *   load_next  a load right after a load or store in the same block (pipelined)
 *   store      a single store
 *   multi      LDM, STM, PUSH, POP, LDRD, STRD (multi_regs: the registers they move)
 *   branch     a branch (B, BL, BX, CBZ, TBB, POP {pc}); taken: those that jumped
 *   lob        low-overhead loop instructions (WLS, DLS, LE, LETP)
 *   vload      MVE / FP loads and stores (VLDR, VSTR, VLDM, gathers)
 *   vop        other MVE / FP instructions (VMLADAV, VADD, VPST, VMOV)
 *
 * Counts are kept per translated block and added when the block runs (one
 * callback per executed block, which also sees whether the previous block's final
 * branch was taken: the block that runs next does not start at its fall-through).
 * At exit the plugin writes "<class> <count>" lines and "insns <total>" to the file
 * given as out=FILE. One vCPU. QEMU 7.2's plugin API (version 1), declared here by
 * the documented signatures of the entry points used (Debian ships no header).
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct qemu_info_t qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
void qemu_plugin_outs(const char *string);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

enum {
  ALU, MUL, DIV, LOAD, LOAD_NEXT, STORE, MULTI, MULTI_REGS, BRANCH, TAKEN, LOB, VLOAD, VOP,
  INSNS, NCLASS
};
static const char *NAMES[NCLASS] = {
    "alu", "mul", "div", "load", "load_next", "store", "multi", "multi_regs",
    "branch", "taken", "lob", "vload", "vop", "insns"};

typedef struct {
  uint64_t counts[NCLASS];  /* per run of the block (TAKEN stays 0) */
  uint64_t start;           /* the block's first address */
  uint64_t fall_through;    /* the address after its last instruction */
  int ends_in_branch;
} block_t;

static uint64_t totals[NCLASS];
static const block_t *previous; /* the block that ran last */
static char out_path[4096];

static int popcount16(unsigned v) { return __builtin_popcount(v & 0xFFFFu); }

/* The class of a 16-bit Thumb instruction; *regs: registers an LDM/STM/PUSH/POP moves. */
static int class16(unsigned h, int *regs) {
  if ((h & 0xFF00) == 0x4700) return BRANCH;                      /* BX, BLX register */
  if ((h & 0xFFC0) == 0x4340) return MUL;                         /* MULS */
  if ((h >> 11) == 0x09) return LOAD;                             /* LDR literal */
  if ((h >> 12) == 0x5) return ((h >> 9) & 7) >= 3 ? LOAD : STORE; /* register offset */
  if ((h >> 13) == 0x3 || (h >> 12) == 0x8 || (h >> 12) == 0x9)   /* immediate, SP */
    return (h & 0x0800) ? LOAD : STORE;
  if ((h >> 12) == 0xC) {                                         /* LDM, STM */
    *regs = popcount16(h & 0xFF);
    return MULTI;
  }
  if ((h & 0xFE00) == 0xB400 || (h & 0xFE00) == 0xBC00) {         /* PUSH, POP */
    *regs = popcount16(h & 0x1FF);
    return ((h & 0xFF00) == 0xBD00) ? BRANCH : MULTI;             /* POP {.., pc} */
  }
  if ((h & 0xF500) == 0xB100) return BRANCH;                      /* CBZ, CBNZ */
  if ((h >> 12) == 0xD && ((h >> 8) & 0xF) < 0xE) return BRANCH;  /* B<cond> */
  if ((h >> 11) == 0x1C) return BRANCH;                           /* B */
  return ALU;
}

/* The class of a 32-bit Thumb instruction (first halfword a, second b). */
static int class32(unsigned a, unsigned b, int *regs) {
  if ((a & 0xEC00) == 0xEC00)                                     /* coprocessor: MVE, FP */
    return ((a & 0xEE00) == 0xEC00) ? VLOAD : VOP;
  if ((a & 0xF800) == 0xF000 && (b & 0xC001) == 0xC001 && (b & 0x1000) == 0 &&
      ((a & 0xFFC0) == 0xF000 || (a & 0xFFC0) == 0xF040))         /* WLS, DLS, LE, LETP */
    return LOB;
  if ((a & 0xF800) == 0xF000 && (b & 0x8000)) {                   /* branches, misc control */
    if ((b & 0x5000) == 0 && ((a >> 7) & 7) == 7) return ALU;     /* MSR, MRS, hints */
    return BRANCH;
  }
  if ((a & 0xFE00) == 0xE800) {                                   /* load/store multiple, dual */
    if ((a & 0xFFF0) == 0xE8D0 && (b & 0xFFE0) == 0xF000) return BRANCH; /* TBB, TBH */
    if ((a & 0xFE40) == 0xE840) {                                 /* LDRD, STRD, exclusives */
      *regs = 2;
      return MULTI;
    }
    *regs = popcount16(b);
    return MULTI;
  }
  if ((a & 0xFE00) == 0xF800) return (a & 0x0010) ? LOAD : STORE; /* single load/store */
  if ((a & 0xFFF0) == 0xFB90 || (a & 0xFFF0) == 0xFBB0) return DIV;
  if ((a & 0xFF00) == 0xFB00) return MUL;                         /* multiply, MAC, long */
  return ALU;
}

static void on_exec(unsigned int vcpu, void *userdata) {
  (void)vcpu;
  const block_t *blk = userdata;
  if (previous != NULL && previous->ends_in_branch && blk->start != previous->fall_through) {
    totals[TAKEN] += 1;
  }
  for (int c = 0; c < NCLASS; ++c) totals[c] += blk->counts[c];
  previous = blk;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  block_t *blk = calloc(1, sizeof *blk); /* lives as long as QEMU may run the block */
  if (blk == NULL) return;
  size_t n = qemu_plugin_tb_n_insns(tb);
  int after_memory = 0;
  blk->start = qemu_plugin_tb_vaddr(tb);
  for (size_t i = 0; i < n; ++i) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    const uint8_t *d = qemu_plugin_insn_data(insn);
    size_t size = qemu_plugin_insn_size(insn);
    unsigned a = (unsigned)d[0] | ((unsigned)d[1] << 8);
    int regs = 0;
    int c = ALU;
    if (size == 4) {
      unsigned b = (unsigned)d[2] | ((unsigned)d[3] << 8);
      c = class32(a, b, &regs);
    } else if (size == 2) {
      c = class16(a, &regs);
    }
    if (c == LOAD && after_memory) c = LOAD_NEXT;
    after_memory = (c == LOAD || c == LOAD_NEXT || c == STORE);
    blk->counts[c] += 1;
    blk->counts[MULTI_REGS] += (uint64_t)regs;
    blk->counts[INSNS] += 1;
    if (i + 1 == n) {
      blk->ends_in_branch = (c == BRANCH);
      blk->fall_through = qemu_plugin_insn_vaddr(insn) + size;
    }
  }
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS, blk);
}

static void on_exit_write(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  FILE *f = out_path[0] ? fopen(out_path, "w") : NULL;
  for (int c = 0; c < NCLASS; ++c) {
    char line[64];
    snprintf(line, sizeof line, "%s %" PRIu64 "\n", NAMES[c], totals[c]);
    if (f != NULL) {
      fputs(line, f);
    } else {
      qemu_plugin_outs(line);
    }
  }
  if (f != NULL) fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv) {
  (void)info;
  for (int i = 0; i < argc; ++i) {
    if (strncmp(argv[i], "out=", 4) == 0) {
      snprintf(out_path, sizeof out_path, "%s", argv[i] + 4);
    }
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_exit_write, NULL);
  return 0;
}
