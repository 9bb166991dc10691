// The tessera command. libsystemc defines main() and calls sc_main (DESIGN.md, "SystemC in practice"); this
// main() takes precedence so that it can silence SystemC's banner — the kernel reads the variable before
// sc_main runs — and then hands over to SystemC as its own main() would.
#include <cstdlib>
#include <systemc>

#include "cli/app.hpp"

extern "C" int sc_main(int argc, char** argv) {
  return tessera::cli::main(argc, argv);
}

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", /*overwrite=*/0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
