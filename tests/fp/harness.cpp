// Verilator harness for the float units (tests/fp/vharness.py builds it against a generated top
// "fptop" holding several units behind a `sel` input; see that file).
//
//   harness stream SEL LATENCY IN OUT   IN: uint32 pairs (a, b); OUT: uint32 results, one per pair.
//                                       Operands go in one per cycle; the result of pair i is read
//                                       LATENCY cycles later and out_valid is checked all along.
//                                       Prints "valid_errors=N".
//   harness exh16 SEL [A_LO A_HI]       Every (a, b) in [0, 2^16)^2 (a in [A_LO, A_HI) if given),
//                                       a outer, b inner, LATENCY 0;
//                                       reads the expected uint16 results in that order on stdin,
//                                       prints the first mismatches and "mismatches=N pairs=M".
#include "Vfptop.h"
#include "verilated.h"
#include "harness_io.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static Vfptop* top;

static void tick() { tick(top); }

static int stream(int sel, int lat, const char* inp, const char* outp) {
    size_t n;
    std::vector<uint32_t> ab;
    if (!read_records(inp, 8, ab, n)) return 2;
    std::vector<uint32_t> res(n);
    top->sel = sel;
    top->en = 1;
    top->in_valid = 0;
    top->rst = 1;
    tick();
    top->rst = 0;
    long valid_errors = 0;
    for (size_t i = 0; i < n + lat; i++) {
        if (i < n) {
            top->a = ab[2 * i];
            top->b = ab[2 * i + 1];
            top->in_valid = 1;
        } else {
            top->in_valid = 0;
        }
        top->eval();
        bool want_valid = i >= (size_t)lat;
        if ((bool)top->out_valid != want_valid) valid_errors++;
        if (want_valid) res[i - lat] = top->result;
        if (lat) tick();
    }
    if (!write_words(outp, res, n)) return 2;
    printf("valid_errors=%ld\n", valid_errors);
    return 0;
}

static int exh16(int sel, uint32_t a_lo, uint32_t a_hi) {
    top->sel = sel;
    top->en = 1;
    top->in_valid = 1;
    top->rst = 0;
    std::vector<uint16_t> expect(65536);
    uint64_t mismatches = 0, pairs = 0;
    for (uint32_t a = a_lo; a < a_hi; a++) {
        if (fread(expect.data(), 2, 65536, stdin) != 65536) { fprintf(stderr, "short stdin\n"); return 2; }
        top->a = a;
        for (uint32_t b = 0; b < 65536; b++) {
            top->b = b;
            top->eval();
            uint16_t r = (uint16_t)top->result;
            pairs++;
            if (r != expect[b]) {
                if (mismatches < 20)
                    printf("mismatch a=%04x b=%04x got=%04x want=%04x\n", a, b, r, expect[b]);
                mismatches++;
            }
        }
    }
    printf("mismatches=%llu pairs=%llu\n", (unsigned long long)mismatches, (unsigned long long)pairs);
    return 0;
}

int main(int argc, char** argv) {
    top = new Vfptop;
    int rc = 2;
    if (argc == 6 && !strcmp(argv[1], "stream"))
        rc = stream(atoi(argv[2]), atoi(argv[3]), argv[4], argv[5]);
    else if (argc == 3 && !strcmp(argv[1], "exh16"))
        rc = exh16(atoi(argv[2]), 0, 65536);
    else if (argc == 5 && !strcmp(argv[1], "exh16"))
        rc = exh16(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
    else
        fprintf(stderr, "usage: harness stream SEL LATENCY IN OUT | harness exh16 SEL [A_LO A_HI]\n");
    top->final();
    delete top;
    return rc;
}
