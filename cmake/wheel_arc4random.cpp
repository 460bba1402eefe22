// Linked into the wheel's binaries with -Wl,--wrap=arc4random (cmake/wheel.cmake): the static
// libstdc++ of Debian 12 implements std::random_device (io/output_path.cpp's temporary names) with
// glibc 2.36's arc4random, and that one reference would raise the wheel's manylinux tag from 2_34
// to 2_36.
// getrandom(2) is in glibc since 2.25.
#include <sys/random.h>

#include <cstdint>

extern "C" std::uint32_t __wrap_arc4random() {
  std::uint32_t word = 0;
  while (::getrandom(&word, sizeof word, 0) != sizeof word) {
  }
  return word;
}
