/* arenatraffic: a valgrind tool that counts every data load and store of the
 * client by address range and by operator.
 *
 * The client (native/traffic_runner.cc) tells the tool, with client requests,
 * which address ranges to count (each range has an integer id) and when an
 * operator begins and ends.  Between BEGIN and END every load and store the
 * simulated CPU makes is attributed by its start address: first to the
 * operator's own ranges (its tensors, scratch buffers and persistent blocks,
 * given with BEGIN), else to the coarse ranges given once with COARSE (the
 * arena, the model), else to id -1 ("other": stack, heap, globals).  At END
 * the tool writes, for every range the operator touched, one line per
 * direction with the number of accesses of each width (1, 2, 4, 8, 16, 32
 * bytes, other) and the bytes, then forgets the counts.
 *
 * Output (--out=FILE, text):
 *   B <op>                         an operator begins
 *   R <id> <L|S> n1 n2 n4 n8 n16 n32 nother bytes straddles
 *   E <op>                         it ends
 * A "straddle" is an access that starts in the range and ends beyond it.
 * With --trace-id=ID, each access to range ID (-1: "other") is also written,
 *   T <L|S> <address> <size> <instruction address>
 * (at most --trace-max of them), to find which code makes it.
 *
 * Built against the static libraries and headers of the installed valgrind
 * (Debian package valgrind: /usr/lib/x86_64-linux-gnu/valgrind, /usr/include/
 * valgrind) by scripts/build_traffic.py; run with VALGRIND_LIB pointing at a
 * directory holding this tool next to valgrind's own files.
 */

#include "pub_tool_basics.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_machine.h"
#include "pub_tool_vki.h"
#include "pub_tool_threadstate.h"

#include "traffic_requests.h"

#define N_WIDTHS 7 /* 1, 2, 4, 8, 16, 32, other */

typedef struct {
   Addr lo, hi; /* [lo, hi) */
   Long id;
} Range;

typedef struct {
   ULong n[2][N_WIDTHS]; /* [load/store][width class] */
   ULong bytes[2];
   ULong straddle[2];
   Long id;
   Bool touched;
} Counts;

static const HChar* clo_out = "arenatraffic.out";
static Long clo_trace_id = -2; /* --trace-id: print each access to that range (debugging) */
static Long clo_trace_max = 2000;
static Int out_fd = -1;

static Range* coarse = NULL;
static Int n_coarse = 0;
static Range* fine = NULL;
static Int n_fine = 0;
static Int cap_fine = 0;

/* counts[0 .. n_fine) for the fine ranges, then n_coarse, then one for "other" */
static Counts* counts = NULL;
static Int cap_counts = 0;
static Int* touched = NULL; /* indices of counts touched since BEGIN */
static Int n_touched = 0;

static Bool counting = False;
static Long current_op = -1;
static Addr watch_lo = 0, watch_hi = 0; /* hull of all ranges: fast rejection */

/* ---------------------------------------------------------------- output */

static HChar outbuf[1 << 16];
static Int outlen = 0;

static void out_flush(void)
{
   if (outlen > 0 && out_fd >= 0) {
      Int done = 0;
      while (done < outlen) {
         Int w = VG_(write)(out_fd, outbuf + done, outlen - done);
         if (w <= 0)
            break;
         done += w;
      }
   }
   outlen = 0;
}

static void out_line(const HChar* line)
{
   Int len = VG_(strlen)(line);
   if (outlen + len > (Int)sizeof(outbuf))
      out_flush();
   VG_(memcpy)(outbuf + outlen, line, len);
   outlen += len;
}

/* ---------------------------------------------------------------- counting */

static inline Int width_class(SizeT size)
{
   switch (size) {
   case 1: return 0;
   case 2: return 1;
   case 4: return 2;
   case 8: return 3;
   case 16: return 4;
   case 32: return 5;
   default: return 6;
   }
}

static inline Int find(const Range* r, Int n, Addr a)
{
   Int lo = 0, hi = n - 1;
   while (lo <= hi) {
      Int mid = (lo + hi) >> 1;
      if (a < r[mid].lo)
         hi = mid - 1;
      else if (a >= r[mid].hi)
         lo = mid + 1;
      else
         return mid;
   }
   return -1;
}

static void count(Addr a, SizeT size, Int dir)
{
   Int slot;
   Addr hi;
   if (!counting)
      return;
   if (a >= watch_lo && a < watch_hi) {
      Int i = find(fine, n_fine, a);
      if (i >= 0) {
         slot = i;
         hi = fine[i].hi;
      } else {
         i = find(coarse, n_coarse, a);
         if (i >= 0) {
            slot = n_fine + i;
            hi = coarse[i].hi;
         } else {
            slot = n_fine + n_coarse;
            hi = ~(Addr)0;
         }
      }
   } else {
      slot = n_fine + n_coarse;
      hi = ~(Addr)0;
   }
   Counts* c = &counts[slot];
   if (clo_trace_id != -2 && clo_trace_max > 0) {
      Long id = slot < n_fine ? fine[slot].id
              : slot < n_fine + n_coarse ? coarse[slot - n_fine].id : -1;
      if (id == clo_trace_id) {
         HChar line[96];
         VG_(snprintf)(line, sizeof(line), "T %c %lx %lu %lx\n", dir ? 'S' : 'L', a, size,
                       VG_(get_IP)(VG_(get_running_tid)()));
         out_line(line);
         clo_trace_max--;
      }
   }
   if (!c->touched) {
      c->touched = True;
      touched[n_touched++] = slot;
   }
   c->n[dir][width_class(size)]++;
   c->bytes[dir] += size;
   if (a + size > hi)
      c->straddle[dir]++;
}

static VG_REGPARM(2) void at_load(Addr a, SizeT size) { count(a, size, 0); }
static VG_REGPARM(2) void at_store(Addr a, SizeT size) { count(a, size, 1); }

/* ---------------------------------------------------------------- requests */

static void update_hull(void)
{
   Int i;
   watch_lo = ~(Addr)0;
   watch_hi = 0;
   for (i = 0; i < n_fine; i++) {
      if (fine[i].lo < watch_lo) watch_lo = fine[i].lo;
      if (fine[i].hi > watch_hi) watch_hi = fine[i].hi;
   }
   for (i = 0; i < n_coarse; i++) {
      if (coarse[i].lo < watch_lo) watch_lo = coarse[i].lo;
      if (coarse[i].hi > watch_hi) watch_hi = coarse[i].hi;
   }
}

static void ensure_counts(void)
{
   Int need = n_fine + n_coarse + 1;
   if (need > cap_counts) {
      cap_counts = need * 2;
      counts = VG_(realloc)("arenatraffic.counts", counts, cap_counts * sizeof(Counts));
      touched = VG_(realloc)("arenatraffic.touched", touched, cap_counts * sizeof(Int));
   }
   VG_(memset)(counts, 0, need * sizeof(Counts));
   n_touched = 0;
}

/* Copy n ranges {lo, hi, id} (three 64-bit words each) from the client. */
static Range* copy_ranges(const ULong* words, Int n, Range* into, Int* cap)
{
   Int i;
   if (n > *cap) {
      *cap = n;
      into = VG_(realloc)("arenatraffic.ranges", into, n * sizeof(Range));
   }
   for (i = 0; i < n; i++) {
      into[i].lo = (Addr)words[3 * i];
      into[i].hi = (Addr)words[3 * i + 1];
      into[i].id = (Long)words[3 * i + 2];
      if (i > 0 && into[i].lo < into[i - 1].hi)
         VG_(tool_panic)("arenatraffic: ranges must be sorted and disjoint");
   }
   return into;
}

static void write_counts(void)
{
   HChar line[400];
   Int k, dir;
   for (k = 0; k < n_touched; k++) {
      Int slot = touched[k];
      Counts* c = &counts[slot];
      Long id = slot < n_fine ? fine[slot].id
              : slot < n_fine + n_coarse ? coarse[slot - n_fine].id : -1;
      for (dir = 0; dir < 2; dir++) {
         if (c->bytes[dir] == 0)
            continue;
         VG_(snprintf)(line, sizeof(line),
                       "R %lld %c %llu %llu %llu %llu %llu %llu %llu %llu %llu\n",
                       id, dir == 0 ? 'L' : 'S', c->n[dir][0], c->n[dir][1],
                       c->n[dir][2], c->n[dir][3], c->n[dir][4], c->n[dir][5],
                       c->n[dir][6], c->bytes[dir], c->straddle[dir]);
         out_line(line);
      }
   }
}

static Bool at_client_request(ThreadId tid, UWord* arg, UWord* ret)
{
   HChar line[64];
   static Int cap_coarse = 0;
   if ((arg[0] & 0xffff0000) != AT_USERREQ_BASE)
      return False;
   switch (arg[0]) {
   case AT_USERREQ_COARSE:
      coarse = copy_ranges((const ULong*)arg[1], (Int)arg[2], coarse, &cap_coarse);
      n_coarse = (Int)arg[2];
      update_hull();
      break;
   case AT_USERREQ_BEGIN:
      if (counting)
         VG_(tool_panic)("arenatraffic: BEGIN inside an operator");
      fine = copy_ranges((const ULong*)arg[2], (Int)arg[3], fine, &cap_fine);
      n_fine = (Int)arg[3];
      update_hull();
      ensure_counts();
      current_op = (Long)arg[1];
      VG_(snprintf)(line, sizeof(line), "B %lld\n", current_op);
      out_line(line);
      counting = True;
      break;
   case AT_USERREQ_END:
      counting = False;
      write_counts();
      VG_(snprintf)(line, sizeof(line), "E %lld\n", current_op);
      out_line(line);
      out_flush();
      current_op = -1;
      break;
   default:
      return False;
   }
   *ret = 0;
   return True;
}

/* ---------------------------------------------------------------- instrumentation */

static void add_call(IRSB* sb, Int store, IRExpr* addr, Int size, IRExpr* guard)
{
   IRExpr** argv = mkIRExprVec_2(addr, mkIRExpr_HWord((HWord)size));
   IRDirty* di = store
      ? unsafeIRDirty_0_N(2, "at_store", VG_(fnptr_to_fnentry)(at_store), argv)
      : unsafeIRDirty_0_N(2, "at_load", VG_(fnptr_to_fnentry)(at_load), argv);
   if (guard)
      di->guard = guard;
   addStmtToIRSB(sb, IRStmt_Dirty(di));
}

static IRSB* at_instrument(VgCallbackClosure* closure, IRSB* in,
                           const VexGuestLayout* layout, const VexGuestExtents* vge,
                           const VexArchInfo* archinfo_host, IRType gWordTy,
                           IRType hWordTy)
{
   Int i;
   IRSB* out;
   IRTypeEnv* tyenv = in->tyenv;
   if (gWordTy != hWordTy)
      VG_(tool_panic)("arenatraffic: host/guest word size mismatch");
   out = deepCopyIRSBExceptStmts(in);
   for (i = 0; i < in->stmts_used; i++) {
      IRStmt* st = in->stmts[i];
      if (!st || st->tag == Ist_NoOp)
         continue;
      switch (st->tag) {
      case Ist_WrTmp: {
         IRExpr* e = st->Ist.WrTmp.data;
         if (e->tag == Iex_Load)
            add_call(out, 0, e->Iex.Load.addr, sizeofIRType(e->Iex.Load.ty), NULL);
         break;
      }
      case Ist_Store: {
         IRType ty = typeOfIRExpr(tyenv, st->Ist.Store.data);
         add_call(out, 1, st->Ist.Store.addr, sizeofIRType(ty), NULL);
         break;
      }
      case Ist_StoreG: {
         IRStoreG* sg = st->Ist.StoreG.details;
         IRType ty = typeOfIRExpr(tyenv, sg->data);
         add_call(out, 1, sg->addr, sizeofIRType(ty), sg->guard);
         break;
      }
      case Ist_LoadG: {
         IRLoadG* lg = st->Ist.LoadG.details;
         IRType ty = Ity_INVALID, wide = Ity_INVALID;
         typeOfIRLoadGOp(lg->cvt, &wide, &ty);
         add_call(out, 0, lg->addr, sizeofIRType(ty), lg->guard);
         break;
      }
      case Ist_Dirty: {
         IRDirty* d = st->Ist.Dirty.details;
         if (d->mFx == Ifx_Read || d->mFx == Ifx_Modify)
            add_call(out, 0, d->mAddr, d->mSize, NULL);
         if (d->mFx == Ifx_Write || d->mFx == Ifx_Modify)
            add_call(out, 1, d->mAddr, d->mSize, NULL);
         break;
      }
      case Ist_CAS: {
         IRCAS* cas = st->Ist.CAS.details;
         Int size = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
         if (cas->dataHi != NULL)
            size *= 2;
         add_call(out, 0, cas->addr, size, NULL);
         add_call(out, 1, cas->addr, size, NULL);
         break;
      }
      case Ist_LLSC: {
         if (st->Ist.LLSC.storedata == NULL)
            add_call(out, 0, st->Ist.LLSC.addr,
                     sizeofIRType(typeOfIRTemp(tyenv, st->Ist.LLSC.result)), NULL);
         else
            add_call(out, 1, st->Ist.LLSC.addr,
                     sizeofIRType(typeOfIRExpr(tyenv, st->Ist.LLSC.storedata)), NULL);
         break;
      }
      default:
         break;
      }
      addStmtToIRSB(out, st);
   }
   return out;
}

/* ---------------------------------------------------------------- set-up */

static Bool at_process_cmd_line_option(const HChar* arg)
{
   if VG_STR_CLO(arg, "--out", clo_out) {}
   else if VG_INT_CLO(arg, "--trace-id", clo_trace_id) {}
   else if VG_INT_CLO(arg, "--trace-max", clo_trace_max) {}
   else
      return False;
   return True;
}

static void at_print_usage(void)
{
   VG_(printf)("    --out=FILE               where to write the counts [arenatraffic.out]\n");
   VG_(printf)("    --trace-id=ID            also write each access to range ID: T L|S addr size ip\n");
   VG_(printf)("    --trace-max=N            at most N of them [2000]\n");
}

static void at_print_debug_usage(void) {}

static void at_post_clo_init(void)
{
   out_fd = VG_(fd_open)(clo_out, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0644);
   if (out_fd < 0)
      VG_(tool_panic)("arenatraffic: cannot open the --out file");
   ensure_counts();
}

static void at_fini(Int exitcode)
{
   out_flush();
   if (out_fd >= 0)
      VG_(close)(out_fd);
}

static void at_pre_clo_init(void)
{
   VG_(details_name)("arenatraffic");
   VG_(details_version)("1");
   VG_(details_description)("loads and stores per address range and operator");
   VG_(details_copyright_author)("arenaplan");
   VG_(details_bug_reports_to)("arenaplan");
   VG_(details_avg_translation_sizeB)(400);
   VG_(basic_tool_funcs)(at_post_clo_init, at_instrument, at_fini);
   VG_(needs_command_line_options)(at_process_cmd_line_option, at_print_usage,
                                   at_print_debug_usage);
   VG_(needs_client_requests)(at_client_request);
}

VG_DETERMINE_INTERFACE_VERSION(at_pre_clo_init)
