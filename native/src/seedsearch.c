/* Seed search of a seeded shuffler (issue 40, docs/security.md).
 *
 * A shuffler that seeds a small generator from a timer, a clock or a counter deals a shoe
 * that is a function of the seed alone.  Given the declared generator, the scaling of its
 * draws to a range and the Fisher-Yates direction, this file replays the shuffle of every
 * seed of a range and keeps those whose shuffle deals the observed cards.
 *
 * Generators (each bit for bit the one of rig/rng/generators.py, the library of issue 39;
 * tests/security/test_seedsearch.py checks every one against it):
 *   glibc   x = (1103515245 x + 12345) mod 2^31, word x (31 bits); x0 = seed mod 2^32 (0 -> 1)
 *           mod 2^31 (glibc TYPE_0 srand/rand)
 *   msvc    x = 214013 x + 2531011 mod 2^32, word bits 16..30 (15 bits); x0 = seed mod 2^32
 *   java    x = 0x5DEECE66D x + 0xB mod 2^48, word bits 16..47 (32 bits, nextInt());
 *           x0 = (seed ^ 0x5DEECE66D) mod 2^48 (new java.util.Random(seed))
 *   mt19937 init_genrand(seed mod 2^32), 32-bit tempered words (Matsumoto and Nishimura 1998);
 *           the search fills the initial array lazily: word t < 227 reads only mt[t], mt[t+1]
 *           and mt[t+397], so a candidate rejected at its first card costs 398 steps of the
 *           seeding recurrence, not 624 plus a twist
 *   xs128p  xorshift128+ (Vigna 2017; shifts 23, 18, 5, word s0 + s1, 64 bits) with s0, s1 the
 *           first two SplitMix64 outputs of the seed
 *   chacha  ChaCha20 (RFC 8439) keyed by the seed's 32 little-endian bytes, nonce 0, block
 *           counter 0: the keystream's 32-bit little-endian words
 *
 * Scaling of a w-bit word x to 0..r-1: modulo (x mod r), multiply-shift (x r >> w, Lemire's
 * multiplication without the rejection), rejection (x redrawn while x >= 2^w - (2^w mod r),
 * then x mod r: unbiased).
 *
 * Shuffles of the ids 0..n-1 (factory order; a card's code is id mod 52), dealt from index 0:
 *   down: for i = n-1 .. 1, j = draw(i + 1), swap a[i], a[j] (Durstenfeld; Python's shuffle)
 *   up:   for i = 0 .. n-2, j = i + draw(n - i), swap a[i], a[j]
 * Either way step i settles position i for good (the other end's last position after the
 * loop), so a candidate is compared card by card as the shuffle settles them and dropped at
 * the first mismatch: with the cards settled first observed, most candidates cost one draw.
 */
#include <string.h>

#include "feltlab_core.h"
#include "internal.h"

#define MT_N 624
#define MT_M 397
#define SS_MAX_CARDS (FL_CARDS_PER_DECK * FL_MAX_DECKS)

typedef struct {
    uint64_t x;         /* LCG state, or xorshift s0 */
    uint64_t y;         /* xorshift s1 */
    uint32_t init[MT_N]; /* MT: init_genrand's array, filled up to `filled` */
    uint32_t next[MT_N]; /* MT: the array after the twists so far */
    uint32_t filled;
    uint32_t t;         /* words drawn (MT, ChaCha) */
    uint32_t key[16];   /* ChaCha20 input block */
    uint32_t block[16]; /* ChaCha20 current keystream block */
} ss_gen;

static uint32_t ss_width(int g) {
    switch (g) {
    case FL_SS_GLIBC: return 31;
    case FL_SS_MSVC: return 15;
    case FL_SS_XORSHIFT128P: return 64;
    default: return 32;
    }
}

static uint64_t ss_splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void ss_seed(ss_gen *s, int g, uint64_t seed) {
    switch (g) {
    case FL_SS_GLIBC: {
        uint32_t v = (uint32_t)seed;
        s->x = (v ? v : 1u) & 0x7fffffffu;
        break;
    }
    case FL_SS_MSVC: s->x = (uint32_t)seed; break;
    case FL_SS_JAVA: s->x = (seed ^ 0x5DEECE66DULL) & ((1ULL << 48) - 1); break;
    case FL_SS_MT19937:
        s->init[0] = (uint32_t)seed;
        s->filled = 1;
        s->t = 0;
        break;
    case FL_SS_XORSHIFT128P: {
        uint64_t x = seed;
        s->x = ss_splitmix(&x);
        s->y = ss_splitmix(&x);
        break;
    }
    default: /* FL_SS_CHACHA20 */
        s->key[0] = 0x61707865;
        s->key[1] = 0x3320646e;
        s->key[2] = 0x79622d32;
        s->key[3] = 0x6b206574;
        s->key[4] = (uint32_t)seed;
        s->key[5] = (uint32_t)(seed >> 32);
        for (int i = 6; i < 16; i++) s->key[i] = 0;
        s->t = 0;
        break;
    }
}

static inline void mt_fill(ss_gen *s, uint32_t upto) { /* init[0..upto-1] */
    uint32_t k = s->filled;
    uint32_t v = s->init[k - 1];
    for (; k < upto; k++) {
        v = 1812433253u * (v ^ (v >> 30)) + k;
        s->init[k] = v;
    }
    if (upto > s->filled) s->filled = upto;
}

static inline uint32_t mt_twist(uint32_t a, uint32_t b, uint32_t m) {
    uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
    return m ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
}

static inline uint32_t mt_next(ss_gen *s) {
    uint32_t t = s->t++;
    uint32_t i = t % MT_N, v;
    if (t < MT_N) { /* the first twist, read off init[] lazily */
        uint32_t need = t + MT_M + 1 < MT_N ? t + MT_M + 1 : MT_N;
        if (s->filled < need) mt_fill(s, need);
        uint32_t b = i + 1 < MT_N ? s->init[i + 1] : s->next[0];
        uint32_t m = i + MT_M < MT_N ? s->init[i + MT_M] : s->next[i + MT_M - MT_N];
        v = mt_twist(s->init[i], b, m);
    } else { /* later twists in place over next[] */
        v = mt_twist(s->next[i], s->next[(i + 1) % MT_N], s->next[(i + MT_M) % MT_N]);
    }
    s->next[i] = v;
    v ^= v >> 11;
    v ^= (v << 7) & 0x9d2c5680u;
    v ^= (v << 15) & 0xefc60000u;
    return v ^ (v >> 18);
}

static inline uint64_t ss_word(ss_gen *s, int g) {
    switch (g) {
    case FL_SS_GLIBC:
        s->x = (1103515245u * s->x + 12345u) & 0x7fffffffu;
        return s->x;
    case FL_SS_MSVC:
        s->x = (214013u * s->x + 2531011u) & 0xffffffffu;
        return (s->x >> 16) & 0x7fffu;
    case FL_SS_JAVA:
        s->x = (0x5DEECE66DULL * s->x + 0xBULL) & ((1ULL << 48) - 1);
        return s->x >> 16;
    case FL_SS_MT19937: return mt_next(s);
    case FL_SS_XORSHIFT128P: {
        uint64_t x = s->x, y = s->y, out = x + y;
        x ^= x << 23;
        s->x = y;
        s->y = x ^ y ^ (x >> 18) ^ (y >> 5);
        return out;
    }
    default: { /* FL_SS_CHACHA20 */
        uint32_t k = s->t++ & 15u;
        if (k == 0) {
            fl_chacha20_block(s->key, s->block);
            s->key[12]++; /* the block counter (never near 2^32 words here) */
        }
        return s->block[k];
    }
    }
}

/* A draw in 0..r-1 (r >= 1) by the declared scaling. */
static inline uint32_t ss_draw(ss_gen *s, int g, int scaling, uint32_t r) {
    uint32_t w = ss_width(g);
    uint64_t x = ss_word(s, g);
    if (scaling == FL_SS_MODULO) return (uint32_t)(x % r);
    if (scaling == FL_SS_MULSHIFT) return (uint32_t)(((fl_u128)x * r) >> w);
    /* rejection: 2^w mod r values at the top are redrawn */
    uint64_t rem, top; /* top = 2^w - 1 */
    if (w == 64) {
        top = ~0ULL;
        rem = (0 - (uint64_t)r) % r; /* (2^64 - r) mod r = 2^64 mod r */
    } else {
        top = (1ULL << w) - 1;
        rem = (1ULL << w) % r;
    }
    while (rem && x > top - rem) x = ss_word(s, g);
    return (uint32_t)(x % r);
}

static int ss_check(int g, int scaling, int direction, uint32_t n) {
    if (g < FL_SS_GLIBC || g > FL_SS_CHACHA20) return FL_ERR_KIND;
    if (scaling < FL_SS_MODULO || scaling > FL_SS_REJECTION) return FL_ERR_KIND;
    if (direction != FL_SS_DOWN && direction != FL_SS_UP) return FL_ERR_KIND;
    if (n < 2 || n > SS_MAX_CARDS || n % FL_CARDS_PER_DECK) return FL_ERR_DECKS;
    return FL_OK;
}

fl_status fl_ss_words(int generator, uint64_t seed, uint64_t *out, size_t n) {
    if (!out) return FL_ERR_NULL;
    if (generator < FL_SS_GLIBC || generator > FL_SS_CHACHA20) return FL_ERR_KIND;
    if (n > (1u << 24)) return FL_ERR_RANGE;
    static const ss_gen zero;
    ss_gen s = zero;
    ss_seed(&s, generator, seed);
    for (size_t i = 0; i < n; i++) out[i] = ss_word(&s, generator);
    return FL_OK;
}

fl_status fl_ss_shuffle(int generator, int scaling, int direction, uint64_t seed, uint32_t n,
                        uint16_t *out) {
    if (!out) return FL_ERR_NULL;
    int st = ss_check(generator, scaling, direction, n);
    if (st != FL_OK) return (fl_status)st;
    static const ss_gen zero;
    ss_gen s = zero;
    ss_seed(&s, generator, seed);
    for (uint32_t i = 0; i < n; i++) out[i] = (uint16_t)i;
    for (uint32_t k = 0; k + 1 < n; k++) {
        uint32_t i = direction == FL_SS_DOWN ? n - 1 - k : k;
        uint32_t j = direction == FL_SS_DOWN ? ss_draw(&s, generator, scaling, i + 1)
                                             : i + ss_draw(&s, generator, scaling, n - i);
        uint16_t tmp = out[i];
        out[i] = out[j];
        out[j] = tmp;
    }
    return FL_OK;
}

/* Undoes the first `done` swaps of a candidate's shuffle, last first. */
static inline void ss_undo(int direction, uint32_t n, uint8_t *a, const uint16_t *js,
                           uint32_t done) {
    while (done--) {
        uint32_t i = direction == FL_SS_DOWN ? n - 1 - done : done;
        uint8_t tmp = a[i];
        a[i] = a[js[done]];
        a[js[done]] = tmp;
    }
}

/* One candidate: 1 when its shuffle deals every known card of `obs`.  `a` holds the codes in
 * factory order and is restored before returning; `*steps` counts the shuffle steps made. */
static inline int ss_candidate(ss_gen *s, int g, int scaling, int direction, uint32_t n,
                               uint8_t *a, const uint8_t *obs, uint32_t n_known,
                               uint64_t *steps) {
    uint16_t js[SS_MAX_CARDS];
    uint32_t checked = 0;
    for (uint32_t k = 0; k + 1 < n; k++) {
        uint32_t i = direction == FL_SS_DOWN ? n - 1 - k : k;
        uint32_t j = direction == FL_SS_DOWN ? ss_draw(s, g, scaling, i + 1)
                                             : i + ss_draw(s, g, scaling, n - i);
        uint8_t tmp = a[i];
        a[i] = a[j];
        a[j] = tmp;
        js[k] = (uint16_t)j;
        if (obs[i] != FL_NO_CARD && (a[i] != obs[i] || ++checked == n_known)) {
            int match = a[i] == obs[i];
            *steps += k + 1;
            ss_undo(direction, n, a, js, k + 1);
            return match;
        }
    }
    uint32_t last = direction == FL_SS_DOWN ? 0 : n - 1; /* settled by the loop's end */
    int match = obs[last] == FL_NO_CARD || a[last] == obs[last];
    *steps += n - 1;
    ss_undo(direction, n, a, js, n - 1);
    return match;
}

/* Seeds side by side: MT19937's seeding is a chain of dependent multiplications (more lanes
 * hide their latency: 64 measured 2x faster than 16), ChaCha20's block is wide already. */
#define MT_LANES 64
#define CC_LANES 16

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__)
#define SS_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SS_CLONES
#endif

/* The first words of MT19937 for the seeds seed .. seed + MT_LANES - 1, side by side: each
 * is temper(twist(mt[0], mt[1], mt[397])) of init_genrand's array, the lanes' recurrences
 * interleaved so that they run in vector registers (an AVX2 clone chosen at load time). */
SS_CLONES static void mt_first_words(uint64_t seed, uint32_t out[MT_LANES]) {
    uint32_t v[MT_LANES], m0[MT_LANES], m1[MT_LANES];
    for (int l = 0; l < MT_LANES; l++) {
        m0[l] = (uint32_t)(seed + (uint64_t)l);
        m1[l] = 1812433253u * (m0[l] ^ (m0[l] >> 30)) + 1u;
        v[l] = m1[l];
    }
    for (uint32_t k = 2; k <= MT_M; k++)
        for (int l = 0; l < MT_LANES; l++) v[l] = 1812433253u * (v[l] ^ (v[l] >> 30)) + k;
    for (int l = 0; l < MT_LANES; l++) {
        uint32_t y = mt_twist(m0[l], m1[l], v[l]);
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        out[l] = y ^ (y >> 18);
    }
}

#define SS_ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define SS_QR(a, b, c, d)                                                                          \
    for (int l = 0; l < CC_LANES; l++) {                                                           \
        x[a][l] += x[b][l];                                                                        \
        x[d][l] = SS_ROTL(x[d][l] ^ x[a][l], 16);                                                  \
        x[c][l] += x[d][l];                                                                        \
        x[b][l] = SS_ROTL(x[b][l] ^ x[c][l], 12);                                                  \
        x[a][l] += x[b][l];                                                                        \
        x[d][l] = SS_ROTL(x[d][l] ^ x[a][l], 8);                                                   \
        x[c][l] += x[d][l];                                                                        \
        x[b][l] = SS_ROTL(x[b][l] ^ x[c][l], 7);                                                   \
    }

/* The first keystream words of ChaCha20 keyed by the seeds seed .. seed + CC_LANES - 1
 * (block 0, nonce 0), the lanes' blocks computed side by side (RFC 8439 section 2.3). */
SS_CLONES static void chacha_first_words(uint64_t seed, uint32_t out[CC_LANES]) {
    static const uint32_t sigma[4] = {0x61707865, 0x3320646e, 0x79622d32, 0x6b206574};
    uint32_t x[16][CC_LANES];
    for (int l = 0; l < CC_LANES; l++) {
        for (int i = 0; i < 4; i++) x[i][l] = sigma[i];
        x[4][l] = (uint32_t)(seed + (uint64_t)l);
        x[5][l] = (uint32_t)((seed + (uint64_t)l) >> 32);
        for (int i = 6; i < 16; i++) x[i][l] = 0;
    }
    for (int r = 0; r < 10; r++) {
        SS_QR(0, 4, 8, 12)
        SS_QR(1, 5, 9, 13)
        SS_QR(2, 6, 10, 14)
        SS_QR(3, 7, 11, 15)
        SS_QR(0, 5, 10, 15)
        SS_QR(1, 6, 11, 12)
        SS_QR(2, 7, 8, 13)
        SS_QR(3, 4, 9, 14)
    }
    for (int l = 0; l < CC_LANES; l++) out[l] = x[0][l] + sigma[0];
}
#undef SS_QR
#undef SS_ROTL

/* The code of the card the first shuffle step settles, from its word x (w bits): a draw j
 * in 0..n-1 puts the factory card j (code j mod 52) at the settled position, either
 * direction.  Returns -1 when rejection sampling would redraw (the caller replays it). */
static inline int ss_first_code(uint64_t x, uint32_t w, int scaling, uint32_t n) {
    uint64_t j;
    if (scaling == FL_SS_MODULO) {
        j = x % n;
    } else if (scaling == FL_SS_MULSHIFT) {
        j = (uint64_t)(((fl_u128)x * n) >> w);
    } else {
        uint64_t rem = (1ULL << w) % n; /* w = 32 here */
        if (rem && x > ((1ULL << w) - 1) - rem) return -1;
        j = x % n;
    }
    return (int)(j % FL_CARDS_PER_DECK);
}

/* The loop over seeds with the generator a constant (each case of fl_ss_search inlines it). */
static inline void ss_loop(int g, int scaling, int direction, uint32_t n, const uint8_t *obs,
                           uint32_t n_known, uint64_t lo, uint64_t hi, uint64_t *found,
                           size_t max_found, size_t *n_found, uint64_t *steps) {
    static const ss_gen zero;
    ss_gen s = zero;
    uint8_t a[SS_MAX_CARDS];
    for (uint32_t i = 0; i < n; i++) a[i] = (uint8_t)(i % FL_CARDS_PER_DECK);
    uint64_t seed = lo;
    uint32_t first = direction == FL_SS_DOWN ? n - 1 : 0;
    if ((g == FL_SS_MT19937 || g == FL_SS_CHACHA20) && obs[first] != FL_NO_CARD) {
        /* MT19937's seeding and ChaCha20's block dominate: the first card of many seeds
         * at once, the few that match it (1 in 52) replayed in full. */
        uint32_t w[MT_LANES];
        uint64_t lanes = g == FL_SS_MT19937 ? MT_LANES : CC_LANES;
        for (; hi - seed >= lanes; seed += lanes) {
            if (g == FL_SS_MT19937)
                mt_first_words(seed, w);
            else
                chacha_first_words(seed, w);
            for (uint64_t l = 0; l < lanes; l++) {
                int code = ss_first_code(w[l], 32, scaling, n);
                if (code >= 0 && code != obs[first]) {
                    *steps += 1;
                    continue;
                }
                ss_seed(&s, g, seed + l);
                if (ss_candidate(&s, g, scaling, direction, n, a, obs, n_known, steps)) {
                    if (*n_found < max_found) found[*n_found] = seed + l;
                    ++*n_found;
                }
            }
        }
    }
    for (; seed < hi; seed++) {
        ss_seed(&s, g, seed);
        if (ss_candidate(&s, g, scaling, direction, n, a, obs, n_known, steps)) {
            if (*n_found < max_found) found[*n_found] = seed;
            ++*n_found;
        }
    }
}

fl_status fl_ss_search(int generator, int scaling, int direction, uint32_t n,
                       const uint8_t *observed, uint64_t lo, uint64_t hi, uint64_t *found,
                       size_t max_found, size_t *n_found, uint64_t *steps) {
    if (!observed || !n_found || !steps || (max_found && !found)) return FL_ERR_NULL;
    int st = ss_check(generator, scaling, direction, n);
    if (st != FL_OK) return (fl_status)st;
    if (hi < lo) return FL_ERR_RANGE;
    uint32_t n_known = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (observed[i] == FL_NO_CARD) continue;
        if (observed[i] >= FL_CARDS_PER_DECK) return FL_ERR_CARD;
        n_known++;
    }
    if (n_known == 0) return FL_ERR_RANGE;
    *n_found = 0;
    *steps = 0;
#define SS_CASE(G)                                                                                 \
    case G:                                                                                        \
        if (scaling == FL_SS_MODULO)                                                               \
            ss_loop(G, FL_SS_MODULO, direction, n, observed, n_known, lo, hi, found, max_found,    \
                    n_found, steps);                                                               \
        else if (scaling == FL_SS_MULSHIFT)                                                        \
            ss_loop(G, FL_SS_MULSHIFT, direction, n, observed, n_known, lo, hi, found, max_found,  \
                    n_found, steps);                                                               \
        else                                                                                       \
            ss_loop(G, FL_SS_REJECTION, direction, n, observed, n_known, lo, hi, found, max_found, \
                    n_found, steps);                                                               \
        break;
    switch (generator) {
        SS_CASE(FL_SS_GLIBC)
        SS_CASE(FL_SS_MSVC)
        SS_CASE(FL_SS_JAVA)
        SS_CASE(FL_SS_MT19937)
        SS_CASE(FL_SS_XORSHIFT128P)
        SS_CASE(FL_SS_CHACHA20)
    default: return FL_ERR_KIND;
    }
#undef SS_CASE
    return FL_OK;
}
