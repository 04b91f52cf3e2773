/* Functions for selftest.py to run under emu.py. No libc: everything here is
 * self-contained (built with -nostdlib). Floats travel through memory, so every
 * argument is an integer or a pointer. */
#include <cpuid.h>
#include <immintrin.h>
#include <stdint.h>

/* y[i] = a * x[i] + y[i], 16 lanes at a time, masked tail for n % 16. */
void saxpy16(float *y, const float *x, const float *a, int n) {
    __m512 va = _mm512_set1_ps(*a);
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        __m512 vx = _mm512_maskz_loadu_ps(m, x + i);
        __m512 vy = _mm512_maskz_loadu_ps(m, y + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, vx, vy));
    }
}

/* Same kernel with a bug: the tail is read with full-width loads (reads past the end). */
void saxpy16_overread(float *y, const float *x, const float *a, int n) {
    __m512 va = _mm512_set1_ps(*a);
    for (int i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    }
}

/* IEEE binary16 -> binary32 with VCVTPH2PS zmm. The tail goes through a zero-padded
 * stack copy (masked 16-bit loads would need AVX512BW). */
void f16_to_f32(float *out, const uint16_t *in, int n) {
    int i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(in + i))));
    if (i < n) {
        uint16_t tmp[16] __attribute__((aligned(32)));
        for (int j = 0; j < 16; j++)
            tmp[j] = i + j < n ? in[i + j] : 0;
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(out + i, m, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)tmp)));
    }
}

/* Integer horizontal sum with a reduction (checks the return value path). */
int64_t sum_i32(const int32_t *v, int n) {
    __m512i acc = _mm512_setzero_si512();
    int i = 0;
    for (; i + 16 <= n; i += 16)
        acc = _mm512_add_epi32(acc, _mm512_loadu_si512(v + i));
    int64_t s = _mm512_reduce_add_epi32(acc);
    for (; i < n; i++)
        s += v[i];
    return s;
}

/* Checks argument order for all six integer argument registers. */
uint64_t args6(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e, uint64_t f) {
    return a + (b << 8) + (c << 16) + (d << 24) + (e << 32) + (f << 40);
}

/* CPUID as the emulated CPU reports it: out = {eax, ebx, ecx, edx}. */
void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t *out) {
    __cpuid_count(leaf, subleaf, out[0], out[1], out[2], out[3]);
}

/* Executes UD2. */
void trap(void) { __builtin_trap(); }

#ifndef NO_EXTERN
/* Calls a symbol nothing defines: must fail cleanly, naming it. */
extern void not_in_this_object(void);
void calls_missing(void) { not_in_this_object(); }
#endif
