// The tessera command. libsystemc defines main() and calls sc_main (DESIGN.md, "SystemC in practice"); this
// main() takes precedence so that it can silence SystemC's banner — the kernel reads the variable before
// sc_main runs — and then hands over to SystemC as its own main() would.
#include <malloc.h>

#include <cstdlib>
#include <systemc>

#include "cli/app.hpp"

extern "C" int sc_main(int argc, char** argv) {
  return tessera::cli::main(argc, argv);
}

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", /*overwrite=*/0);
  // tessera lowers and simulates programs of the same few sizes one after another (a layer's candidates):
  // keep freed memory for the next one rather than handing it back to the kernel and faulting it in again
  // (a 4096^3 GEMM's instruction vectors alone are tens of MB; glibc would mmap and unmap each).
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);
  return sc_core::sc_elab_and_sim(argc, argv);
}
