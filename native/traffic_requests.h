/* Client requests of the arenatraffic valgrind tool (native/traffic_tool.c),
 * shared by the tool and the client (native/traffic_runner.cc).
 *
 * A range list is an array of n records of three 64-bit words {lo, hi, id}:
 * [lo, hi) in the client's address space, sorted by lo and disjoint.
 */
#ifndef ARENAPLAN_TRAFFIC_REQUESTS_H_
#define ARENAPLAN_TRAFFIC_REQUESTS_H_

#define AT_USERREQ_BASE ((unsigned int)(('A' & 0xff) << 24 | ('T' & 0xff) << 16))

enum {
  /* arg1 = range list, arg2 = n: the fallback ranges, for the whole run */
  AT_USERREQ_COARSE = AT_USERREQ_BASE + 1,
  /* arg1 = operator id, arg2 = range list, arg3 = n: start counting */
  AT_USERREQ_BEGIN = AT_USERREQ_BASE + 2,
  /* stop counting, write the counts of the operator */
  AT_USERREQ_END = AT_USERREQ_BASE + 3,
};

#endif
