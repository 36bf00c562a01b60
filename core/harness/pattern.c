/* The validation pattern: 64-bit words from a seed that depends on the
 * message size, the sending rank and the sample index, so a stale buffer,
 * a message from the wrong peer or a truncated copy all fail the check. */
#include <string.h>

#include "cs.h"

static inline uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t cs_seed(size_t size, int rank, long sample) {
  return mix(mix((uint64_t)size) ^ mix(((uint64_t)(unsigned)rank << 32) ^ (uint64_t)sample));
}

/* Message (or slot) m of one sample: its own pattern, so a message that
 * lands in the wrong slot, or twice, fails the check. */
uint64_t cs_msg_seed(size_t size, int rank, long sample, long m) {
  return m ? mix(cs_seed(size, rank, sample) ^ mix((uint64_t)m)) : cs_seed(size, rank, sample);
}

/* Word i of the pattern is seed + i * odd constant: cheap, and no two
 * words of one message are equal. */
static inline uint64_t word(uint64_t seed, size_t i) { return seed + (uint64_t)i * 0xD6E8FEB86659FD93ull; }

void cs_fill(void *buf, size_t n, uint64_t seed) {
  size_t nw = n / 8;
  uint64_t *w = buf;
  for (size_t i = 0; i < nw; i++) w[i] = word(seed, i);
  uint64_t last = word(seed, nw);
  memcpy((char *)buf + nw * 8, &last, n - nw * 8);
}

void cs_poison(void *buf, size_t n) { memset(buf, 0xA5, n); }

/* Returns -1 when the buffer holds the pattern, else the first bad byte. */
long cs_check(const void *buf, size_t n, uint64_t seed, unsigned *got, unsigned *want) {
  size_t nw = n / 8;
  const uint64_t *w = buf;
  size_t bad = (size_t)-1;
  for (size_t i = 0; i < nw; i++) {
    if (w[i] != word(seed, i)) {
      bad = i * 8;
      break;
    }
  }
  if (bad == (size_t)-1) {
    uint64_t last = word(seed, nw);
    if (memcmp((const char *)buf + nw * 8, &last, n - nw * 8) == 0) return -1;
    bad = nw * 8;
  }
  /* Narrow to the first differing byte for the message. */
  uint64_t expect[1];
  for (size_t b = bad; b < n; b++) {
    expect[0] = word(seed, b / 8);
    unsigned char e = ((unsigned char *)expect)[b % 8];
    unsigned char g = ((const unsigned char *)buf)[b];
    if (e != g) {
      *got = g;
      *want = e;
      return (long)b;
    }
  }
  return -1;
}
