// libsystemc defines main() and calls sc_main: the SystemC suites start GoogleTest from sc_main. Every TEST
// runs in its own process (gtest_discover_tests), so each may elaborate one model. main() silences SystemC's
// banner before the kernel starts, as the tessera command does (cli/main.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <systemc>

extern "C" int sc_main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", /*overwrite=*/0);
  return sc_core::sc_elab_and_sim(argc, argv);
}
