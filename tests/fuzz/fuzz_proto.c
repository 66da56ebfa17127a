/*
 * fuzz_proto.c - libFuzzer target for the control protocol's request decoder.
 *
 * Not built by CMake (libFuzzer needs clang).  Build and run from the source root with:
 *
 *   clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
 *       tests/fuzz/fuzz_proto.c agent/proto.c policy/util.c \
 *       $(pkg-config --cflags --libs json-c) -lm -o fuzz_proto
 *   ./fuzz_proto -max_len=70000 tests/fuzz/corpus/proto
 *
 * Add any crash or interesting input it finds to tests/fuzz/corpus/proto/; the gcc build
 * replays that directory in every ctest run (tests/unit/test_fuzz_replay_proto.c).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_request req;
	struct proto_reply rep;
	char err[256];

	err[0] = '\0';
	if (proto_request_decode((const char *)data, size, &req, err, sizeof(err)) == PROTO_OK)
		proto_request_free(&req);
	else if (err[0] == '\0')
		abort(); /* every refusal carries a message */
	if (proto_reply_decode((const char *)data, size, &rep, err, sizeof(err)) == 0)
		proto_reply_free(&rep);
	return 0;
}
