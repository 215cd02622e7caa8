// What the Verilator harnesses in tests/fp share: one clock period, a reset with the inputs idle, and
// the record files they stream (tests/fp/vharness.py compiles every harness with this header beside it).
#pragma once
#include <cstdint>
#include <cstdio>
#include <vector>

// One clock period of a Verilated top with a `clk` input.
template <class Top> static void tick(Top* t) {
    t->clk = 1;
    t->eval();
    t->clk = 0;
    t->eval();
}

// One cycle of reset with `valid` low, then out of reset.
template <class Top> static void reset_idle(Top* t) {
    t->valid = 0;
    t->rst = 1;
    tick(t);
    t->rst = 0;
}

// The records of `record_bytes` bytes in file `path`: their count in `n`, their uint32 words in
// `words`. False (after a message) when the file cannot be read.
static bool read_records(const char* path, size_t record_bytes, std::vector<uint32_t>& words, size_t& n) {
    FILE* f = fopen(path, "rb");
    if (!f) { perror(path); return false; }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    n = bytes / record_bytes;
    words.assign(n * record_bytes / 4, 0);
    bool ok = fread(words.data(), record_bytes, n, f) == n;
    if (!ok) perror("read");
    fclose(f);
    return ok;
}

// Write the first `count` uint32 words of `words` to `path`; false (after a message) on failure.
static bool write_words(const char* path, const std::vector<uint32_t>& words, size_t count) {
    FILE* f = fopen(path, "wb");
    if (!f) { perror(path); return false; }
    fwrite(words.data(), 4, count, f);
    fclose(f);
    return true;
}
