/*
 * The counting kernels of NIST SP 800-22 rev 1a's fifteen bitstream tests.
 *
 * Input: n_seq sequences of n bits, bit-packed most significant bit first
 * (numpy.packbits order), one row of `stride` bytes each (stride >= ceil(n/8);
 * the bits past n are ignored).  Each kernel walks every row and writes the
 * test's statistic or counts, from which feltlab.rig.rng.sp800_22 computes the
 * p-values (erfc and the regularised incomplete gamma from scipy.special).
 * The FFT of the spectral test is numpy's, in Python.
 *
 * Words: bits are read 64 at a time (bits_at: the 64 bits from a bit offset,
 * zero past the row's end), with popcounts for the frequency and run counts,
 * byte tables for the longest run, rows of up to 32 bits for the GF(2) ranks and bit
 * vectors of 64-bit words for Berlekamp-Massey.  Section numbers are SP 800-22's.
 */
#include <stdlib.h>
#include <string.h>

#include "feltlab_core.h"

static inline uint64_t bits_at(const uint8_t *row, uint64_t nbytes, uint64_t pos) {
    uint64_t byte = pos >> 3;
    unsigned off = (unsigned)(pos & 7);
    uint64_t w = 0;
    if (byte + 9 <= nbytes) {
        for (unsigned k = 0; k < 8; k++) w = (w << 8) | row[byte + k];
        if (off) w = (w << off) | (uint64_t)(row[byte + 8] >> (8 - off));
        return w;
    }
    for (unsigned k = 0; k < 9; k++) {
        uint64_t b = byte + k < nbytes ? row[byte + k] : 0;
        if (k < 8) {
            w = (w << 8) | b;
        } else if (off) {
            w = (w << off) | (b >> (8 - off));
        }
    }
    return w;
}

/* the ones among bits [start, start + len) */
static uint64_t ones_in(const uint8_t *row, uint64_t nbytes, uint64_t start, uint64_t len) {
    uint64_t c = 0, i = 0;
    for (; i + 64 <= len; i += 64) c += (uint64_t)__builtin_popcountll(bits_at(row, nbytes, start + i));
    if (i < len) {
        uint64_t w = bits_at(row, nbytes, start + i) >> (64 - (len - i));
        c += (uint64_t)__builtin_popcountll(w);
    }
    return c;
}

#define ROWS_CHECK()                                                          \
    do {                                                                      \
        if (n_seq && !data) return FL_ERR_NULL;                               \
        if (n < 1 || stride < (n + 7) / 8) return FL_ERR_RANGE;               \
    } while (0)

/* Bit loop: runs the body (the variadic arguments) with `b` (0/1) for bits i = 0..n-1 of `row`. */
#define FOR_BITS(row, nbytes, n, ...)                                        \
    for (uint64_t i_ = 0; i_ < (n); i_ += 64) {                               \
        uint64_t w_ = bits_at((row), (nbytes), i_);                           \
        unsigned c_ = (n) - i_ < 64 ? (unsigned)((n) - i_) : 64;              \
        for (unsigned k_ = 0; k_ < c_; k_++, w_ <<= 1) {                      \
            unsigned b = (unsigned)(w_ >> 63);                                \
            __VA_ARGS__                                                       \
        }                                                                     \
    }

fl_status fl_sts_frequency(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                           uint64_t *ones) {
    ROWS_CHECK();
    if (n_seq && !ones) return FL_ERR_NULL;
    for (size_t s = 0; s < n_seq; s++) ones[s] = ones_in(data + s * stride, stride, 0, n);
    return FL_OK;
}

/* 2.2: chi2 = 4 M sum_i (pi_i - 1/2)^2 over the N = n / M whole blocks. */
fl_status fl_sts_block_frequency(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                 uint64_t block, double *chi2) {
    ROWS_CHECK();
    if (n_seq && !chi2) return FL_ERR_NULL;
    if (block < 1 || block > n) return FL_ERR_RANGE;
    uint64_t blocks = n / block;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        double sum = 0.0;
        for (uint64_t j = 0; j < blocks; j++) {
            double pi = (double)ones_in(row, stride, j * block, block) / (double)block - 0.5;
            sum += pi * pi;
        }
        chi2[s] = 4.0 * (double)block * sum;
    }
    return FL_OK;
}

/* 2.13: the partial sums S_k of X = 2 eps - 1; out[3 s..] = S_n, max S_k, min S_k (k = 0..n,
 * S_0 = 0 included, which changes neither maximum excursion). */
fl_status fl_sts_cusum(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                       int64_t *out) {
    ROWS_CHECK();
    if (n_seq && !out) return FL_ERR_NULL;
    int8_t net[256], top[256], bottom[256]; /* a byte's sum and its prefix sums' extremes */
    for (unsigned v = 0; v < 256; v++) {
        int sum = 0, hi = -9, lo = 9;
        for (int k = 7; k >= 0; k--) {
            sum += (v >> k) & 1 ? 1 : -1;
            if (sum > hi) hi = sum;
            if (sum < lo) lo = sum;
        }
        net[v] = (int8_t)sum, top[v] = (int8_t)hi, bottom[v] = (int8_t)lo;
    }
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        int64_t sum = 0, hi = 0, lo = 0;
        uint64_t whole = n / 8;
        for (uint64_t j = 0; j < whole; j++) {
            unsigned v = row[j];
            if (sum + top[v] > hi) hi = sum + top[v];
            if (sum + bottom[v] < lo) lo = sum + bottom[v];
            sum += net[v];
        }
        for (uint64_t i = whole * 8; i < n; i++) {
            sum += (row[i / 8] >> (7 - i % 8)) & 1 ? 1 : -1;
            if (sum > hi) hi = sum;
            if (sum < lo) lo = sum;
        }
        out[3 * s] = sum;
        out[3 * s + 1] = hi;
        out[3 * s + 2] = lo;
    }
    return FL_OK;
}

/* 2.3: out[2 s] = ones, out[2 s + 1] = V_n = 1 + the bit changes. */
fl_status fl_sts_runs(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                      uint64_t *out) {
    ROWS_CHECK();
    if (n_seq && !out) return FL_ERR_NULL;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint64_t changes = 0;
        for (uint64_t i = 0; i + 1 < n; i += 63) {
            uint64_t w = bits_at(row, stride, i);
            uint64_t pairs = n - 1 - i < 63 ? n - 1 - i : 63; /* pairs (i+k, i+k+1), k < pairs */
            uint64_t x = (w ^ (w << 1)) >> 1;                 /* bit 62-k: b(i+k) != b(i+k+1) */
            x >>= 63 - pairs;
            changes += (uint64_t)__builtin_popcountll(x);
        }
        out[2 * s] = ones_in(row, stride, 0, n);
        out[2 * s + 1] = changes + 1;
    }
    return FL_OK;
}

/* 2.4: hist[s * (FL_STS_RUN_CAP + 1) + v] = blocks of `block` bits (a multiple of 8) whose
 * longest run of ones is v (v capped at FL_STS_RUN_CAP). */
fl_status fl_sts_longest_run(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                             uint64_t block, uint32_t *hist) {
    ROWS_CHECK();
    if (n_seq && !hist) return FL_ERR_NULL;
    if (block < 8 || block % 8 || block > n) return FL_ERR_RANGE;
    uint8_t lead[256], trail[256], inner[256];
    for (unsigned v = 0; v < 256; v++) {
        unsigned l = 0, t = 0, best = 0, cur = 0;
        while (l < 8 && (v >> (7 - l)) & 1) l++;
        while (t < 8 && (v >> t) & 1) t++;
        for (int k = 7; k >= 0; k--) {
            cur = (v >> k) & 1 ? cur + 1 : 0;
            if (cur > best) best = cur;
        }
        lead[v] = (uint8_t)l, trail[v] = (uint8_t)t, inner[v] = (uint8_t)best;
    }
    uint64_t blocks = n / block, bytes = block / 8;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint32_t *h = hist + s * (FL_STS_RUN_CAP + 1);
        memset(h, 0, (FL_STS_RUN_CAP + 1) * sizeof *h);
        for (uint64_t j = 0; j < blocks; j++) {
            uint64_t cur = 0, best = 0;
            for (uint64_t k = 0; k < bytes; k++) {
                unsigned v = row[j * bytes + k];
                if (v == 0xFF) {
                    cur += 8;
                } else {
                    if (cur + lead[v] > best) best = cur + lead[v];
                    if (inner[v] > best) best = inner[v];
                    cur = trail[v];
                }
            }
            if (cur > best) best = cur;
            h[best > FL_STS_RUN_CAP ? FL_STS_RUN_CAP : best]++;
        }
    }
    return FL_OK;
}

/* GF(2) rank of `rows` rows of `cols` bits (the low bits of each word; rows, cols <= 32) by
 * Gauss-Jordan elimination, the pivot column from the most significant bit down. */
static unsigned gf2_rank(uint32_t *m, unsigned rows, unsigned cols) {
    unsigned rank = 0;
    for (int bit = (int)cols - 1; bit >= 0 && rank < rows; bit--) {
        uint32_t mask = (uint32_t)1 << bit;
        unsigned p = rank;
        while (p < rows && !(m[p] & mask)) p++;
        if (p == rows) continue;
        uint32_t t = m[p];
        m[p] = m[rank], m[rank] = t;
        for (unsigned r = 0; r < rows; r++)
            if (r != rank && (m[r] & mask)) m[r] ^= t;
        rank++;
    }
    return rank;
}

/* 2.5: out[3 s..] = M x Q matrices (M = rows, Q = cols, each row Q consecutive bits, M Q bits a
 * matrix, the remainder discarded) of full rank min(M, Q), of that rank - 1, of lower rank.
 * 1 <= M, Q <= 32 (SP 800-22 2.5.7 recommends M = Q = 32).  The 32 x 32 matrices are read
 * byte-aligned, 128 bytes each; other shapes through bits_at. */
fl_status fl_sts_rank(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                      unsigned rows, unsigned cols, uint32_t *out) {
    ROWS_CHECK();
    if (n_seq && !out) return FL_ERR_NULL;
    if (rows < 1 || rows > 32 || cols < 1 || cols > 32) return FL_ERR_RANGE;
    unsigned full = rows < cols ? rows : cols;
    uint64_t size = (uint64_t)rows * cols, mats = n / size;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint32_t c[3] = {0, 0, 0};
        for (uint64_t j = 0; j < mats; j++) {
            uint32_t m[32];
            for (unsigned r = 0; r < rows; r++) {
                if (rows == 32 && cols == 32) {
                    const uint8_t *p = row + j * 128 + 4 * r;
                    m[r] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
                } else {
                    m[r] = (uint32_t)(bits_at(row, stride, j * size + (uint64_t)r * cols) >>
                                      (64 - cols));
                }
            }
            unsigned rk = gf2_rank(m, rows, cols);
            c[rk == full ? 0 : rk + 1 == full ? 1 : 2]++;
        }
        memcpy(out + 3 * s, c, sizeof c);
    }
    return FL_OK;
}

/* 2.7: W[(s * n_templates + t) * blocks + j] = non-overlapping matches of template t in
 * block j (blocks of n / blocks bits).  index[v] = t for an m-bit window value v that is
 * template t, else -1 (2^m entries).  After a match the scan skips m bits for that template. */
fl_status fl_sts_template_counts(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                 unsigned m, const int32_t *index, uint32_t n_templates,
                                 uint32_t blocks, uint32_t *counts) {
    ROWS_CHECK();
    if (n_seq && (!index || !counts)) return FL_ERR_NULL;
    if (m < 2 || m > 21 || blocks < 1 || n / blocks < m || n_templates < 1) return FL_ERR_RANGE;
    uint64_t bl = n / blocks, mask = ((uint64_t)1 << m) - 1;
    uint64_t *next = malloc(n_templates * sizeof *next);
    if (!next) return FL_ERR_RANGE;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint32_t *W = counts + (size_t)s * n_templates * blocks;
        memset(W, 0, (size_t)n_templates * blocks * sizeof *W);
        for (uint32_t j = 0; j < blocks; j++) {
            memset(next, 0, n_templates * sizeof *next);
            uint64_t v = 0, start = j * bl;
            uint64_t pos = 0; /* bits of the block read so far */
            for (uint64_t i = 0; i < bl; i += 64) {
                uint64_t w = bits_at(row, stride, start + i);
                unsigned c = bl - i < 64 ? (unsigned)(bl - i) : 64;
                for (unsigned k = 0; k < c; k++, w <<= 1) {
                    v = ((v << 1) | (w >> 63)) & mask;
                    pos++;
                    if (pos < m) continue;
                    int32_t t = index[v];
                    uint64_t at = pos - m; /* the window's first bit */
                    if (t >= 0 && at >= next[t]) {
                        W[(size_t)t * blocks + j]++;
                        next[t] = at + m;
                    }
                }
            }
        }
    }
    free(next);
    return FL_OK;
}

/* 2.8: nu[s * (K + 1) + k] = blocks of `block` bits (N = n / block) in which the m-bit
 * template of ones occurs k times, overlapping (k capped at K). */
fl_status fl_sts_overlapping(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                             unsigned m, uint64_t block, unsigned K, uint32_t *nu) {
    ROWS_CHECK();
    if (n_seq && !nu) return FL_ERR_NULL;
    if (m < 1 || m > 64 || block < m || block > n || K < 1 || K > 64) return FL_ERR_RANGE;
    uint64_t blocks = n / block;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint32_t *h = nu + s * (K + 1);
        memset(h, 0, (K + 1) * sizeof *h);
        for (uint64_t j = 0; j < blocks; j++) {
            /* bit 63 - i of x: the window of m bits from offset o + i is all ones */
            uint64_t hits = 0, starts = block - m + 1, base = j * block;
            for (uint64_t o = 0; o < starts; o += 64) {
                uint64_t x = ~(uint64_t)0;
                for (unsigned k = 0; k < m && x; k++) x &= bits_at(row, stride, base + o + k);
                unsigned c = starts - o < 64 ? (unsigned)(starts - o) : 64;
                if (c < 64) x &= ~(~(uint64_t)0 >> c);
                hits += (uint64_t)__builtin_popcountll(x);
            }
            h[hits > K ? K : hits]++;
        }
    }
    return FL_OK;
}

/* 2.9: dist[s * K + i] = the distance from the i-th of the K test blocks of L bits to the
 * last earlier block of the same value (Q initialisation blocks first; Q + K <= n / L), whose
 * mean log2 is Maurer's f_n (the logarithms are taken in Python: no libm here). */
fl_status fl_sts_universal(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                           unsigned L, uint64_t Q, uint64_t K, uint32_t *dist) {
    ROWS_CHECK();
    if (n_seq && !dist) return FL_ERR_NULL;
    /* Q > n / L first: Q + K wrapped past 2^64 (Q = 2^64 - 1, K = 2 passed as one block and
     * gave f_n from nothing) */
    if (L < 1 || L > 16 || Q < 1 || K < 1 || Q > n / L || K > n / L - Q || Q + K > UINT32_MAX)
        return FL_ERR_RANGE;
    uint32_t *T = malloc(((size_t)1 << L) * sizeof *T);
    if (!T) return FL_ERR_RANGE;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint32_t *out = dist + s * K;
        memset(T, 0, ((size_t)1 << L) * sizeof *T);
        for (uint64_t i = 1; i <= Q + K; i++) {
            uint64_t v = bits_at(row, stride, (i - 1) * L) >> (64 - L);
            if (i > Q) out[i - Q - 1] = (uint32_t)(i - T[v]);
            T[v] = (uint32_t)i;
        }
    }
    free(T);
    return FL_OK;
}

/* 2.11, 2.12: counts[s * 2^w + v] = the cyclic windows of w bits (the sequence wrapped
 * around by its first w - 1 bits) of value v, n in all. */
fl_status fl_sts_pattern_counts(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                unsigned w, uint32_t *counts) {
    ROWS_CHECK();
    if (n_seq && !counts) return FL_ERR_NULL;
    if (w < 1 || w > 24 || w > n || n > UINT32_MAX) return FL_ERR_RANGE;
    size_t size = (size_t)1 << w;
    uint64_t mask = size - 1;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint32_t *c = counts + s * size;
        memset(c, 0, size * sizeof *c);
        uint64_t v = w > 1 ? bits_at(row, stride, 0) >> (65 - w) : 0;
        uint64_t head = bits_at(row, stride, 0); /* the first bits again, for the wrap */
        for (uint64_t i = w - 1; i < n + w - 1; i += 64) {
            uint64_t word = 0;
            if (i + 64 <= n) {
                word = bits_at(row, stride, i);
            } else {
                for (uint64_t k = 0; k < 64 && i + k < n + w - 1; k++) {
                    uint64_t p = i + k;
                    uint64_t b = p < n ? bits_at(row, stride, p) >> 63 : (head >> (63 - (p - n))) & 1;
                    word |= b << (63 - k);
                }
            }
            uint64_t cnt = n + w - 1 - i < 64 ? n + w - 1 - i : 64;
            for (uint64_t k = 0; k < cnt; k++, word <<= 1) {
                v = ((v << 1) | (word >> 63)) & mask;
                c[v]++;
            }
        }
    }
    return FL_OK;
}

/* 2.14, 2.15: the random walk S_k of X = 2 eps - 1 cut into cycles at its zeros (S_0 = 0 and
 * a zero appended after S_n).  cycles[s] = J; nu[(s * 8 + x) * 6 + k] = cycles visiting state
 * x (x = 0..7 for -4..-1, 1..4) exactly k times (k capped at 5); xi[s * 18 + x] = visits to
 * state x (x = 0..17 for -9..-1, 1..9) over the whole walk. */
fl_status fl_sts_excursions(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                            uint64_t *cycles, uint32_t *nu, uint64_t *xi) {
    ROWS_CHECK();
    if (n_seq && (!cycles || !nu || !xi)) return FL_ERR_NULL;
    for (size_t s = 0; s < n_seq; s++) {
        uint64_t visits[19] = {0}, total[19] = {0}; /* index S + 9 for |S| <= 9 */
        uint32_t *h = nu + s * 48;
        memset(h, 0, 48 * sizeof *h);
        int64_t sum = 0;
        uint64_t J = 0;
        FOR_BITS(data + s * stride, stride, n, {
            sum += b ? 1 : -1;
            if (sum == 0) {
                for (int x = 0; x < 8; x++) {
                    uint64_t v = visits[x < 4 ? x + 5 : x + 6];
                    h[x * 6 + (v > 5 ? 5 : v)]++;
                }
                for (int x = 0; x < 19; x++) total[x] += visits[x], visits[x] = 0;
                J++;
            } else if (sum >= -9 && sum <= 9) {
                visits[sum + 9]++;
            }
        })
        if (sum != 0) {
            for (int x = 0; x < 8; x++) {
                uint64_t v = visits[x < 4 ? x + 5 : x + 6];
                h[x * 6 + (v > 5 ? 5 : v)]++;
            }
            for (int x = 0; x < 19; x++) total[x] += visits[x];
            J++;
        }
        cycles[s] = J;
        for (int x = 0; x < 18; x++) xi[s * 18 + x] = total[x < 9 ? x : x + 1];
    }
    return FL_OK;
}

/* The linear complexity of `len` bits (Berlekamp-Massey over GF(2)) starting at bit `start`.
 * C and B are connection polynomials as bit vectors (bit i = coefficient of x^i).  G holds
 * the block reversed (bit q = s_{len-1-q}), so that G shifted right by len - 1 - N has bit i =
 * s_{N-i} and the discrepancy is the parity of C AND that window (no per-step shifting). */
static unsigned bm_complexity(const uint8_t *row, uint64_t nbytes, uint64_t start, unsigned len,
                              uint64_t *C, uint64_t *B, uint64_t *G, uint64_t *T) {
    unsigned words = len / 64 + 2;
    memset(C, 0, words * 8), memset(B, 0, words * 8), memset(G, 0, (words + 1) * 8);
    for (unsigned p = 0; p < len; p += 64) {
        uint64_t w = bits_at(row, nbytes, start + p);
        unsigned c = len - p < 64 ? len - p : 64;
        for (unsigned k = 0; k < c; k++, w <<= 1) {
            unsigned q = len - 1 - (p + k);
            G[q / 64] |= (w >> 63) << (q % 64);
        }
    }
    C[0] = B[0] = 1;
    unsigned L = 0;
    int m_last = -1; /* the step of the last length change (Massey's m) */
    for (unsigned N = 0; N < len; N++) {
        unsigned o = len - 1 - N, ow = o / 64, ob = o % 64;
        uint64_t d = 0;
        unsigned lw = L / 64 + 1;
        for (unsigned k = 0; k < lw; k++) {
            uint64_t win = G[k + ow] >> ob;
            if (ob) win |= G[k + ow + 1] << (64 - ob);
            d ^= C[k] & win;
        }
        if (!(__builtin_popcountll(d) & 1)) continue;
        /* C = C + x^(N - m) B */
        unsigned shift = (unsigned)((int)N - m_last);
        unsigned ws = shift / 64, bs = shift % 64;
        int grow = 2 * L <= N;
        unsigned used = (N + 1) / 64 + 2 < words ? (N + 1) / 64 + 2 : words;
        if (grow) memcpy(T, C, used * 8);
        for (unsigned k = used; k-- > ws;) {
            uint64_t v = B[k - ws] << bs;
            if (bs && k > ws) v |= B[k - ws - 1] >> (64 - bs);
            C[k] ^= v;
        }
        if (grow) {
            L = N + 1 - L;
            m_last = (int)N;
            memcpy(B, T, used * 8);
        }
    }
    return L;
}

/* 2.10: hist[s * (block + 1) + L] = blocks of `block` bits (N = n / block) of linear
 * complexity L. */
fl_status fl_sts_linear_complexity(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                   uint32_t block, uint32_t *hist) {
    ROWS_CHECK();
    if (n_seq && !hist) return FL_ERR_NULL;
    if (block < 2 || block > 65536 || block > n) return FL_ERR_RANGE;
    unsigned words = block / 64 + 2;
    uint64_t *buf = malloc((4 * words + 1) * sizeof *buf);
    if (!buf) return FL_ERR_RANGE;
    uint64_t blocks = n / block;
    for (size_t s = 0; s < n_seq; s++) {
        const uint8_t *row = data + s * stride;
        uint32_t *h = hist + s * ((size_t)block + 1);
        memset(h, 0, ((size_t)block + 1) * sizeof *h);
        for (uint64_t j = 0; j < blocks; j++)
            h[bm_complexity(row, stride, j * block, block, buf, buf + words, buf + 2 * words,
                            buf + 3 * words + 1)]++;
    }
    free(buf);
    return FL_OK;
}
