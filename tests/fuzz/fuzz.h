/* fuzz.h: shared helpers of flinklet's libFuzzer targets (tests/fuzz/fuzz_*.c).
 *
 * Each target is one fuzz_*.c linked with every object of src/ except main.c, all built by clang with
 * -fsanitize=fuzzer,address,undefined (the Makefile's fuzz targets, objects under build/fuzz/). */
#ifndef FLINKLET_TESTS_FUZZ_H
#define FLINKLET_TESTS_FUZZ_H

#include <stddef.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated copy of the fuzzer's bytes (most parsers here take C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Fails the run (libFuzzer saves the input) when an invariant of the code under test does not hold. */
#define FUZZ_ASSERT(cond)                                                                                              \
	do {                                                                                                           \
		if (!(cond))                                                                                           \
			__builtin_trap();                                                                              \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
