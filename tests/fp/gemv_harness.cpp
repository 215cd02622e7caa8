// Verilator harness for rtl/gemv_mac.py MacArray (top "gemvtop"); tests/fp/gemv_vharness.py builds it.
// The widths come from the model: BW = 32-bit words of the B port, NL = lanes (32-bit words of fin_data).
//
//   gemv_harness info                  Prints "bw=BW lanes=NL".
//   gemv_harness stream IN OUT EXTRA   IN: records of 2 + BW uint32, one per cycle: a, b[0..BW), ctrl with
//                                      ctrl = valid | acc_int << 1 | a_kind << 2 | b_kind << 5 | tag << 8.
//                                      After the records, EXTRA idle cycles (valid = 0, the last record's
//                                      kinds). OUT: per cycle (records + EXTRA) 1 + NL uint32: fin word
//                                      (fin_valid | fin_q << 1 | fin_bank << 7 | fin_last << 8), then
//                                      fin_data's lanes. Checking is left to the caller.
//   gemv_harness exh SIZE AKIND BKIND ACC LAT A_LO A_HI
//                                      Every pair (a, b) of SIZE-byte elements (SIZE 1 or 2), a in
//                                      [A_LO, A_HI) outer, b in [0, 2^(8 SIZE)) inner: one step per cycle,
//                                      a on `a`, the next U = min(NL, 4 BW / SIZE) b values in lanes 0..U-1,
//                                      tag real = first = final = last = 1, valid every cycle. Lane j's
//                                      fin_data LAT cycles later is compared with the expected uint32
//                                      results read on stdin (2^(8 SIZE) per a, b ascending); fin_valid is
//                                      checked on every cycle. Prints the first mismatches and
//                                      "mismatches=N pairs=M valid_errors=V".
#include "Vgemvtop.h"
#include "verilated.h"
#include "harness_io.h"
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static Vgemvtop* top;
static const int BW = sizeof(top->b) / 4;
static const int NL = sizeof(top->fin_data) / 4;

static void tick() { tick(top); }
static void reset() { reset_idle(top); }

static void set_b(const uint32_t* w) { memcpy(&top->b, w, sizeof(top->b)); }

static void get_fin(uint32_t* w) { memcpy(w, &top->fin_data, sizeof(top->fin_data)); }

static uint32_t fin_word() {
    return (uint32_t)top->fin_valid | (uint32_t)top->fin_q << 1 | (uint32_t)top->fin_bank << 7
           | (uint32_t)top->fin_last << 8;
}

static int stream(const char* inp, const char* outp, long extra) {
    const int R = 2 + BW, O = 1 + NL;
    size_t n;
    std::vector<uint32_t> rec;
    if (!read_records(inp, 4 * R, rec, n)) return 2;
    std::vector<uint32_t> res((size_t)O * (n + extra));
    reset();
    for (size_t i = 0; i < n + extra; i++) {
        if (i < n) {
            const uint32_t* r = &rec[(size_t)R * i];
            uint32_t c = r[1 + BW];
            top->a = r[0];
            set_b(r + 1);
            top->valid = c & 1;
            top->acc_int = (c >> 1) & 1;
            top->a_kind = (c >> 2) & 7;
            top->b_kind = (c >> 5) & 7;
            top->tag = (c >> 8) & 0x7FF;
        } else {
            top->valid = 0;
        }
        top->eval();
        uint32_t* o = &res[(size_t)O * i];
        o[0] = fin_word();
        get_fin(o + 1);
        tick();
    }
    if (!write_words(outp, res, (size_t)O * (n + extra))) return 2;
    return 0;
}

static int exh(int size, int akind, int bkind, int acc, int lat, uint32_t a_lo, uint32_t a_hi) {
    const uint32_t nb = 1u << (8 * size);
    const int U = NL < 4 * BW / size ? NL : 4 * BW / size;
    if (nb % U) { fprintf(stderr, "lanes %d do not divide %u\n", U, nb); return 2; }
    reset();
    top->acc_int = acc;
    top->a_kind = akind;
    top->b_kind = bkind;
    top->tag = 0xF;                     // real, first, final, last; q = bank = 0
    // expected results of the a values in flight (at most lat + 1 of them)
    const int D = lat + 2;
    std::vector<std::vector<uint32_t>> expect(D, std::vector<uint32_t>(nb));
    struct Step { uint32_t a, b0; };
    std::vector<Step> ring(lat + 1);
    std::vector<uint32_t> bw(BW), fin(NL);
    uint64_t mismatches = 0, pairs = 0, valid_errors = 0, cycle = 0;
    auto check = [&](uint64_t cyc, bool want_valid) {
        if ((bool)top->fin_valid != want_valid) {
            if (valid_errors < 5) printf("fin_valid=%d at cycle %llu\n", top->fin_valid, (unsigned long long)cyc);
            valid_errors++;
        }
        if (cyc < (uint64_t)lat) return;
        const Step& s = ring[(cyc - lat) % (lat + 1)];
        const std::vector<uint32_t>& e = expect[(s.a - a_lo) % D];
        get_fin(fin.data());
        for (int j = 0; j < U; j++) {
            uint32_t got = fin[j], want = e[s.b0 + j];
            pairs++;
            if (got != want) {
                if (mismatches < 20)
                    printf("mismatch a=%#x b=%#x got=%#010x want=%#010x\n", s.a, s.b0 + j, got, want);
                mismatches++;
            }
        }
    };
    for (uint32_t a = a_lo; a < a_hi; a++) {
        if (fread(expect[(a - a_lo) % D].data(), 4, nb, stdin) != nb) { fprintf(stderr, "short stdin\n"); return 2; }
        top->a = a;
        top->valid = 1;
        for (uint32_t b0 = 0; b0 < nb; b0 += U) {
            memset(bw.data(), 0, 4 * BW);
            for (int j = 0; j < U; j++) {
                uint32_t bit = (uint32_t)j * size * 8;
                bw[bit / 32] |= (b0 + j) << (bit % 32);
            }
            set_b(bw.data());
            ring[cycle % (lat + 1)] = Step{a, b0};
            // no eval here: fin_* come from registers (the kinds are constant), so the values after the
            // last tick are current; the posedge eval settles the new inputs first
            check(cycle, cycle >= (uint64_t)lat);
            tick();
            cycle++;
        }
    }
    top->valid = 0;
    for (int i = 0; i < lat; i++) {
        check(cycle, true);
        tick();
        cycle++;
    }
    top->eval();
    if (top->fin_valid) valid_errors++;     // nothing after the last step
    printf("mismatches=%llu pairs=%llu valid_errors=%llu\n", (unsigned long long)mismatches,
           (unsigned long long)pairs, (unsigned long long)valid_errors);
    return 0;
}

int main(int argc, char** argv) {
    top = new Vgemvtop;
    int rc = 2;
    if (argc == 2 && !strcmp(argv[1], "info")) {
        printf("bw=%d lanes=%d\n", BW, NL);
        rc = 0;
    } else if (argc == 5 && !strcmp(argv[1], "stream"))
        rc = stream(argv[2], argv[3], atol(argv[4]));
    else if (argc == 9 && !strcmp(argv[1], "exh"))
        rc = exh(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                 strtoul(argv[7], 0, 0), strtoul(argv[8], 0, 0));
    else
        fprintf(stderr, "usage: gemv_harness info | stream IN OUT EXTRA | exh SIZE AKIND BKIND ACC LAT A_LO A_HI\n");
    top->final();
    delete top;
    return rc;
}
