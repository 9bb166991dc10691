// Lets the few headers that the GPU reference runner shares with the host (encodings, input generator)
// compile under nvcc for both sides and under a plain C++ compiler.
#pragma once

#if defined(__CUDACC__)
#define TESSERA_HD __host__ __device__
#else
#define TESSERA_HD
#endif
