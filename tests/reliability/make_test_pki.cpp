// Writes the throw-away test PKI (test_certs.hpp) into a directory, for multi-process TLS jobs.
//   tdist_make_test_pki DIR
#include <cstdio>
#include <exception>

#include "test_certs.hpp"

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  try {
    tdist_test::make_pki(argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tdist_make_test_pki: %s\n", e.what());
    return 1;
  }
  return 0;
}
