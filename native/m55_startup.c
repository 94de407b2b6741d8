// m55_startup.c: what makes tflm_runner a bare-metal program for qemu-system-arm's
// mps3-an547 (Corstone-300, one Cortex-M55), linked with native/an547.ld and newlib's
// rdimon (semihosting: the command line, files, stderr and the exit status go to the
// host through qemu's -semihosting-config).
//
// Out of reset the CPU loads SP and PC from the vector table at address 0 (the ITCM).
// Reset_Handler grants full access to coprocessors 10 and 11, which the FPU and MVE
// (Helium) share, before any of their instructions runs: with CPACR's reset value of
// 0, the first one (CMSIS-NN's MVE code, or newlib's hard-float code) would raise a
// UsageFault (NOCP). It then jumps to newlib's _start (rdimon-crt0), which asks the
// host for the command line, clears .bss, runs the constructors and calls main.
//
// Two newlib hooks are replaced, so that memory is where an547.ld says whatever
// semihosting's SYS_HEAPINFO reports (qemu 7.2 reports the ITCM, the largest RAM it
// sees outside the memory protection controllers):
//  - _stack_init, which rdimon-crt0 calls right after setting SP from SYS_HEAPINFO
//    with nothing on the stack yet, moves SP to the linker script's __stack (DDR);
//  - _sbrk hands out [__heap_start__, __heap_end__) (DDR) and nothing beyond.
// Any fault prints its status registers to stderr and exits with status 1, so a
// crash is a failed run, not a hung qemu.

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

extern char __stack[];  // an547.ld: the stack's top (8-aligned)
extern char __heap_start__[];  // an547.ld: the heap, half-open
extern char __heap_end__[];
void _start(void);  // newlib's rdimon-crt0

#define CPACR_ADDRESS "0xE000ED88"  // Coprocessor Access Control Register
#define CFSR ((volatile uint32_t*)0xE000ED28)  // Configurable Fault Status Register
#define HFSR ((volatile uint32_t*)0xE000ED2C)  // HardFault Status Register

#define SYS_WRITE0 0x04  // semihosting: write a NUL-terminated string to the console
#define SYS_EXIT 0x18  // semihosting: stop, with a reason
#define ADP_STOPPED_RUN_TIME_ERROR 0x20023  // qemu exits with status 1

__attribute__((naked, noreturn)) void Reset_Handler(void) {
  __asm volatile(
      "ldr r0, =" CPACR_ADDRESS "\n"
      "ldr r1, [r0]\n"
      "orr r1, r1, #(0xF << 20)\n"  // CP10 and CP11: full access
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"  // the new access rights hold from the next instruction
      "b _start\n");
}

// Called by rdimon-crt0 with nothing on the stack: the stack moves to DDR.
__attribute__((naked)) void _stack_init(void) {
  __asm volatile(
      "ldr r0, =__stack\n"
      "mov sp, r0\n"
      "bx lr\n");
}

// The program break, within [__heap_start__, __heap_end__); ENOMEM beyond it.
void* _sbrk(ptrdiff_t increment) {
  static char* brk = __heap_start__;
  if (increment > __heap_end__ - brk || increment < __heap_start__ - brk) {
    errno = ENOMEM;
    return (void*)-1;
  }
  char* previous = brk;
  brk += increment;
  return previous;
}

static uint32_t Semihost(uint32_t operation, const void* argument) {
  register uint32_t r0 __asm("r0") = operation;
  register const void* r1 __asm("r1") = argument;
  __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

static void PutHex(char* at, uint32_t value) {  // 8 hex digits
  for (int i = 7; i >= 0; --i, value >>= 4) at[i] = "0123456789abcdef"[value & 0xF];
}

static void Fault(void) {
  char text[] = "tflm_runner: CPU fault, CFSR 0x........ HFSR 0x........\n";
  PutHex(text + 31, *CFSR);
  PutHex(text + 47, *HFSR);
  Semihost(SYS_WRITE0, text);
  Semihost(SYS_EXIT, (const void*)ADP_STOPPED_RUN_TIME_ERROR);
  for (;;) {
  }
}

typedef void (*Handler)(void);

// The exceptions of ARMv8-M up to SysTick; no interrupt is enabled.
__attribute__((section(".vectors"), used)) const Handler kVectors[16] = {
    (Handler)__stack,  // initial SP
    Reset_Handler,
    Fault,  // NMI
    Fault,  // HardFault
    Fault,  // MemManage
    Fault,  // BusFault
    Fault,  // UsageFault
    Fault,  // SecureFault
    0,
    0,
    0,
    Fault,  // SVCall
    Fault,  // DebugMonitor
    0,
    Fault,  // PendSV
    Fault,  // SysTick
};
