/* How NaN payloads travel through single-precision (float) code: the measurements behind the
 * README's "Single precision" facts. Each line: an operation, the result's bits, and whether
 * the input's tag (float payload 0x12345, input A; 0x2ABCD, input B) survived.
 *
 *   cc -O2 bench/nan_facts_f32.c -lm -o nan_facts_f32 && ./nan_facts_f32
 *
 * tests/nan_facts.rs compiles and runs it (at -O0 and -O2) and checks the facts nanprop relies
 * on. Volatile operands keep the compiler from folding the operations away. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static float f_of(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t bits(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static uint64_t bits64(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }

#define A_BITS 0x7FC12345u
#define B_BITS 0x7FC2ABCDu

static void row(const char *what, float r) {
    uint32_t b = bits(r), p = b & 0x3FFFFFu;
    const char *verdict = !isnan(r) ? "no NaN" : p == (A_BITS & 0x3FFFFFu) ? "A kept"
                          : p == (B_BITS & 0x3FFFFFu) ? "B kept" : p == 0 ? "default NaN" : "other";
    printf("%-28s %08x  %s\n", what, b, verdict);
}

int main(void) {
    volatile float a = f_of(A_BITS), b = f_of(B_BITS), one = 1.0f, zero = 0.0f, two = 2.0f;
    row("a + 1", a + one);
    row("1 + a", one + a);
    row("a * 0", a * zero);
    row("a - a", a - a);
    row("a + b", a + b);
    row("b + a", b + a);
    row("a * b", a * b);
    row("sinf(a)", sinf(a));
    row("expf(a)", expf(a));
    row("logf(a)", logf(a));
    row("sqrtf(a)", sqrtf(a));
    row("tanhf(a)", tanhf(a));
    row("powf(a, 2)", powf(a, two));
    row("powf(a, 0)", powf(a, zero));
    row("fminf(a, 1)", fminf(a, one));
    row("fabsf(-a)", fabsf(-a));
    row("(float)(double)a", (float)(double)a);
    row("(float)(a + 1.0)", (float)(a + 1.0));
    volatile double wide = a;
    printf("%-28s %016llx  %s\n", "(double)a", (unsigned long long)bits64(wide),
           (bits64(wide) >> 29 & 0x3FFFFFu) == (A_BITS & 0x3FFFFFu) ? "A kept, << 29" : "lost");
    volatile double tag = 0.0;
    uint64_t t = 0x7FF8000000000000ull | ((uint64_t)0x12345 << 29) | 0x1ABCDEFull;
    memcpy((void *)&tag, &t, 8);
    row("(float)tag64", (float)tag);
    row("0.0f / 0.0f", zero / zero);
    return 0;
}
