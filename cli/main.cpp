// The tessera command. libsystemc defines main() and calls sc_main (DESIGN.md, "SystemC in practice").
#include "cli/app.hpp"

// SystemC declares sc_main extern "C".
extern "C" int sc_main(int argc, char** argv) {
  return tessera::cli::main(argc, argv);
}
