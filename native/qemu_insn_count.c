/* qemu_insn_count: a QEMU TCG plugin that counts the guest instructions a program
 * executes, for arenaplan.tflm.verify.instructions on the ARM builds (qemu-arm and
 * qemu-system-arm run them; callgrind counts the host builds').
 *
 * Each translated block adds its instruction count to one 64-bit counter every time
 * it runs (an inline add, no callback); at exit the plugin writes
 *   insns <count>
 * to the file given as its argument (out=FILE), or to QEMU's log. One vCPU, so one
 * counter. An exception inside a block (the semihosting call is a trap, which ends
 * its block) could count the rest of that block: none happens in TFLM's kernels.
 *
 * QEMU 7.2's plugin API (version 1), declared here by the documented signatures of
 * the entry points used (Debian ships no qemu-plugin.h). Built by
 * arenaplan.tflm.verify.instructions with the host's C compiler as a shared object.
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
typedef struct qemu_info_t qemu_info_t; /* read by nothing here */
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
                                    void *userdata);
void qemu_plugin_outs(const char *string);

#define EXPORT __attribute__((visibility("default")))

EXPORT int qemu_plugin_version = 1;

static uint64_t insns;         /* guest instructions executed */
static char out_path[4096];    /* where the count goes ("": QEMU's log) */

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &insns,
                                           qemu_plugin_tb_n_insns(tb));
}

static void on_exit_write(qemu_plugin_id_t id, void *userdata) {
  (void)id;
  (void)userdata;
  char line[64];
  snprintf(line, sizeof line, "insns %" PRIu64 "\n", insns);
  FILE *f = out_path[0] ? fopen(out_path, "w") : NULL;
  if (f == NULL) {
    qemu_plugin_outs(line);
    return;
  }
  fputs(line, f);
  fclose(f);
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
