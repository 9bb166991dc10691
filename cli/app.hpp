// The tessera command line (CLI11): parses arguments, loads the inputs, calls flow/, writes the output
// folder, prints, picks the exit code (0 ok, 1 numerics mismatch after writing the report, 2 bad input, 3
// internal fault).
#pragma once

namespace tessera::cli {

int main(int argc, char** argv);

}  // namespace tessera::cli
