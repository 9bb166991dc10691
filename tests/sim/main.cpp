// libsystemc defines main() and calls sc_main: the SystemC suites start GoogleTest from here. Every TEST runs
// in its own process (gtest_discover_tests), so each may elaborate one model.
#include <gtest/gtest.h>

#include <systemc>

extern "C" int sc_main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
