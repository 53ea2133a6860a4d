/*
 * libfuzzer.c - the libFuzzer entry point of one fuzz target.
 *
 * `make fuzzbins` compiles this file once per target with
 * -DTKD_FUZZ_TARGET=tkd_fuzz_<name> and links it with fuzz_<name>.o and the
 * libraries into build/fuzz/fuzz_<name> (clang -fsanitize=fuzzer,...).
 * libFuzzer owns main(), the corpus, mutation and crash reporting; this
 * file only forwards each input.  A target returns 0 for every input and
 * aborts on a broken invariant, which libFuzzer reports as a crash and
 * saves under build/fuzz/crash-<name>-*.
 *
 * The generic object rule of the Makefile also compiles this file without
 * TKD_FUZZ_TARGET (that object is never linked): then it defines nothing.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"

#ifdef TKD_FUZZ_TARGET

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__asan_default_options(void);

/*
 * AddressSanitizer's defaults for these binaries ($ASAN_OPTIONS still wins).
 * clear_shadow_mmap_threshold: ASan zeroes the shadow of a freed or new big
 * block by mapping fresh pages over it once that shadow passes 64 KiB (a
 * 512 KiB block), and each such mmap flushes the TLB: the snapshot writer's
 * 1 MiB buffer made that most of the time of a small input.  Up to 4 MiB of
 * shadow (32 MiB blocks) is zeroed with memset instead.  Nothing that ASan
 * checks changes.
 */
const char *__asan_default_options(void) { return "clear_shadow_mmap_threshold=4194304"; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return TKD_FUZZ_TARGET(data, size); }

#endif
