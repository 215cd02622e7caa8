// Verilator harness for rtl/ew_lanes.py ElementwiseLanes with word_bytes=4 (one 32-bit slot, top "ewtop");
// tests/fp/ew_vharness.py builds it.
//
//   ew_harness stream LATENCY IN OUT   IN: records of three uint32 (a, b, ctrl) with
//                                      ctrl = dtype | op << 4 | keep_a << 8 | valid << 12, one per cycle;
//                                      OUT: the uint32 result word of each record (read LATENCY cycles
//                                      later). out_valid is checked on every cycle against valid.
//                                      Prints "valid_errors=N".
//   ew_harness exh16 LATENCY DTYPE OP A_LO A_HI
//                                      Every 16-bit pair (a, b), a in [A_LO, A_HI) outer, b inner; one
//                                      cycle carries (a, b) in element 0 and (a, b + 1) in element 1
//                                      (b even), pipelined. Reads the expected uint16 results (65536 per
//                                      a, b ascending) on stdin; prints the first mismatches and
//                                      "mismatches=N pairs=M valid_errors=V".
#include "Vewtop.h"
#include "verilated.h"
#include "harness_io.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static Vewtop* top;

static void tick() { tick(top); }
static void reset() { reset_idle(top); }

static int stream(int lat, const char* inp, const char* outp) {
    size_t n;
    std::vector<uint32_t> rec;
    if (!read_records(inp, 12, rec, n)) return 2;
    std::vector<uint32_t> res(n);
    reset();
    long valid_errors = 0;
    for (size_t i = 0; i < n + lat; i++) {
        if (i < n) {
            uint32_t c = rec[3 * i + 2];
            top->a = rec[3 * i];
            top->b = rec[3 * i + 1];
            top->dtype = c & 0xF;
            top->op = (c >> 4) & 0x7;
            top->keep_a = (c >> 8) & 0xF;
            top->valid = (c >> 12) & 1;
        } else {
            top->valid = 0;
        }
        top->eval();
        bool want_valid = i >= (size_t)lat && ((rec[3 * (i - lat) + 2] >> 12) & 1);
        if ((bool)top->out_valid != want_valid) valid_errors++;
        if (i >= (size_t)lat) res[i - lat] = top->result;
        tick();
    }
    if (!write_words(outp, res, n)) return 2;
    printf("valid_errors=%ld\n", valid_errors);
    return 0;
}

static int exh16(int lat, int dtype, int op, uint32_t a_lo, uint32_t a_hi) {
    reset();
    top->dtype = dtype;
    top->op = op;
    top->keep_a = 0;
    // expected results of two consecutive a values (the pipeline spans the boundary)
    std::vector<uint16_t> expect[2] = {std::vector<uint16_t>(65536), std::vector<uint16_t>(65536)};
    struct Slot { uint32_t a, b; };
    std::vector<Slot> ring(lat + 1);
    uint64_t mismatches = 0, pairs = 0, valid_errors = 0, cycle = 0;
    auto check = [&](uint64_t cyc) {
        if (cyc < (uint64_t)lat) return;
        bool want_valid = true;
        if ((bool)top->out_valid != want_valid) valid_errors++;
        const Slot& s = ring[(cyc - lat) % (lat + 1)];
        uint32_t r = top->result;
        for (int e = 0; e < 2; e++) {
            uint16_t got = (uint16_t)(r >> (16 * e));
            uint16_t want = expect[s.a & 1][s.b + e];
            pairs++;
            if (got != want) {
                if (mismatches < 20)
                    printf("mismatch a=%04x b=%04x got=%04x want=%04x\n", s.a, s.b + e, got, want);
                mismatches++;
            }
        }
    };
    for (uint32_t a = a_lo; a < a_hi; a++) {
        if (fread(expect[a & 1].data(), 2, 65536, stdin) != 65536) { fprintf(stderr, "short stdin\n"); return 2; }
        top->a = a | (a << 16);
        top->valid = 1;
        for (uint32_t b = 0; b < 65536; b += 2) {
            top->b = b | ((b + 1) << 16);
            ring[cycle % (lat + 1)] = Slot{a, b};
            top->eval();
            check(cycle);
            tick();
            cycle++;
        }
    }
    top->valid = 0;
    for (int i = 0; i < lat; i++) {
        top->eval();
        check(cycle);
        tick();
        cycle++;
    }
    printf("mismatches=%llu pairs=%llu valid_errors=%llu\n", (unsigned long long)mismatches,
           (unsigned long long)pairs, (unsigned long long)valid_errors);
    return 0;
}

int main(int argc, char** argv) {
    top = new Vewtop;
    int rc = 2;
    if (argc == 5 && !strcmp(argv[1], "stream"))
        rc = stream(atoi(argv[2]), argv[3], argv[4]);
    else if (argc == 7 && !strcmp(argv[1], "exh16"))
        rc = exh16(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
    else
        fprintf(stderr, "usage: ew_harness stream LATENCY IN OUT | ew_harness exh16 LATENCY DTYPE OP A_LO A_HI\n");
    top->final();
    delete top;
    return rc;
}
