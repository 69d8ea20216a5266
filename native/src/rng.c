/* Generators: xoshiro256** (Blackman and Vigna 2018) and ChaCha20 (RFC 8439). */
#include <string.h>

#include "feltlab_core.h"
#include "internal.h"

/* ------------------------------------------------------------ SplitMix64 */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------------ xoshiro256** */

void fl_rng_seed_xoshiro(fl_rng *rng, uint64_t seed) {
    if (!rng) return;
    memset(rng, 0, sizeof *rng);
    rng->kind = FL_RNG_XOSHIRO256SS;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) rng->u.xoshiro.s[i] = splitmix64(&x);
    /* SplitMix64 is a bijection of its counter, so four outputs are never all
     * zero; keep the check for the invariant anyway. */
    if (!(rng->u.xoshiro.s[0] | rng->u.xoshiro.s[1] | rng->u.xoshiro.s[2] | rng->u.xoshiro.s[3]))
        rng->u.xoshiro.s[0] = 1;
}

fl_status fl_rng_set_xoshiro(fl_rng *rng, const uint64_t s[4]) {
    if (!rng || !s) return FL_ERR_NULL;
    if (!(s[0] | s[1] | s[2] | s[3])) return FL_ERR_RANGE;
    memset(rng, 0, sizeof *rng);
    rng->kind = FL_RNG_XOSHIRO256SS;
    memcpy(rng->u.xoshiro.s, s, sizeof rng->u.xoshiro.s);
    return FL_OK;
}

fl_status fl_xoshiro_get(const fl_rng *rng, uint64_t s[4]) {
    if (!rng || !s) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_XOSHIRO256SS) return FL_ERR_KIND;
    memcpy(s, rng->u.xoshiro.s, sizeof rng->u.xoshiro.s);
    return FL_OK;
}

static fl_status xoshiro_jump_with(fl_rng *rng, const uint64_t poly[4]) {
    if (!rng) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_XOSHIRO256SS) return FL_ERR_KIND;
    uint64_t *s = rng->u.xoshiro.s;
    uint64_t t[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        for (int b = 0; b < 64; b++) {
            if (poly[i] & ((uint64_t)1 << b)) {
                t[0] ^= s[0];
                t[1] ^= s[1];
                t[2] ^= s[2];
                t[3] ^= s[3];
            }
            (void)fl_xoshiro_next(&rng->u.xoshiro);
        }
    }
    memcpy(s, t, sizeof t);
    return FL_OK;
}

fl_status fl_xoshiro_jump(fl_rng *rng) {
    static const uint64_t JUMP[4] = {0x180ec6d33cfd0abaULL, 0xd5a61266f0c9392cULL,
                                     0xa9582618e03fc9aaULL, 0x39abdc4529b1661cULL};
    return xoshiro_jump_with(rng, JUMP);
}

fl_status fl_xoshiro_long_jump(fl_rng *rng) {
    static const uint64_t LONG_JUMP[4] = {0x76e15d3efefdcbbfULL, 0xc5004e441c522fb3ULL,
                                          0x77710069854ee241ULL, 0x39109bb02acbe635ULL};
    return xoshiro_jump_with(rng, LONG_JUMP);
}

/* ------------------------------------------------------------ ChaCha20 */

#define ROTL32(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define QR(a, b, c, d)                                                                             \
    do {                                                                                           \
        a += b; d ^= a; d = ROTL32(d, 16);                                                         \
        c += d; b ^= c; b = ROTL32(b, 12);                                                         \
        a += b; d ^= a; d = ROTL32(d, 8);                                                          \
        c += d; b ^= c; b = ROTL32(b, 7);                                                          \
    } while (0)

void fl_chacha20_block(const uint32_t in[16], uint32_t out[16]) {
    uint32_t x[16];
    memcpy(x, in, sizeof x);
    for (int i = 0; i < 10; i++) { /* 20 rounds: 10 column + 10 diagonal */
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) out[i] = x[i] + in[i];
}

static uint32_t load32_le(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

fl_status fl_rng_seed_chacha(fl_rng *rng, const uint8_t key[32], const uint8_t nonce[12],
                             uint32_t counter) {
    if (!rng || !key || !nonce) return FL_ERR_NULL;
    memset(rng, 0, sizeof *rng);
    rng->kind = FL_RNG_CHACHA20;
    uint32_t *in = rng->u.chacha.input;
    in[0] = 0x61707865; /* "expand 32-byte k" */
    in[1] = 0x3320646e;
    in[2] = 0x79622d32;
    in[3] = 0x6b206574;
    for (int i = 0; i < 8; i++) in[4 + i] = load32_le(key + 4 * i);
    in[12] = counter;
    for (int i = 0; i < 3; i++) in[13 + i] = load32_le(nonce + 4 * i);
    rng->u.chacha.pos = 64; /* no block buffered yet */
    return FL_OK;
}

static void store32_le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

fl_status fl_chacha_get_key(const fl_rng *rng, uint8_t key[32], uint8_t nonce[12]) {
    if (!rng || !key || !nonce) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    for (int i = 0; i < 8; i++) store32_le(key + 4 * i, rng->u.chacha.input[4 + i]);
    for (int i = 0; i < 3; i++) store32_le(nonce + 4 * i, rng->u.chacha.input[13 + i]);
    return FL_OK;
}

/* Produces the next block into c->block and advances the 64-bit counter. */
static int chacha_refill(fl_chacha20 *c) {
    if (c->exhausted) return 0;
    fl_chacha20_block(c->input, c->block);
    c->pos = 0;
    if (++c->input[12] == 0 && ++c->input[13] == 0) c->exhausted = 1;
    return 1;
}

fl_status fl_chacha_seek(fl_rng *rng, uint64_t block, uint32_t offset) {
    if (!rng) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    if (offset > 63) return FL_ERR_RANGE;
    fl_chacha20 *c = &rng->u.chacha;
    c->input[12] = (uint32_t)block;
    c->input[13] = (uint32_t)(block >> 32);
    c->exhausted = 0;
    c->pos = 64;
    if (offset) {
        if (!chacha_refill(c)) return FL_ERR_EXHAUSTED;
        c->pos = offset;
    }
    return FL_OK;
}

fl_status fl_chacha_tell(const fl_rng *rng, uint64_t *block, uint32_t *offset) {
    if (!rng || !block || !offset) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    const fl_chacha20 *c = &rng->u.chacha;
    uint64_t next = (uint64_t)c->input[12] | ((uint64_t)c->input[13] << 32);
    if (c->pos < 64) { /* inside the block before `next` */
        *block = next - 1; /* wraps to 2^64-1 for the very last block */
        *offset = c->pos;
    } else {
        *block = next;
        *offset = 0;
    }
    return FL_OK;
}

fl_status fl_chacha_keystream(fl_rng *rng, uint8_t *out, size_t n) {
    if (!rng || (!out && n)) return FL_ERR_NULL;
    if (rng->kind != FL_RNG_CHACHA20) return FL_ERR_KIND;
    fl_chacha20 *c = &rng->u.chacha;
    while (n) {
        if (c->pos == 64 && !chacha_refill(c)) return FL_ERR_EXHAUSTED;
        const uint8_t *bytes = (const uint8_t *)c->block;
        size_t take = 64 - c->pos;
        if (take > n) take = n;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(out, bytes + c->pos, take);
#else
        for (size_t i = 0; i < take; i++) {
            uint32_t w = c->block[(c->pos + i) / 4];
            out[i] = (uint8_t)(w >> (8 * ((c->pos + i) % 4)));
        }
#endif
        (void)bytes;
        c->pos += (uint32_t)take;
        out += take;
        n -= take;
    }
    return FL_OK;
}

/* Slow path of fl_chacha_next: 8 bytes that may straddle a block boundary. */
int fl_chacha_next_slow(fl_chacha20 *c, uint64_t *out) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) {
        if (c->pos == 64 && !chacha_refill(c)) return 0;
        b[i] = (uint8_t)(c->block[c->pos / 4] >> (8 * (c->pos % 4)));
        c->pos++;
    }
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | b[i];
    *out = v;
    return 1;
}

fl_status fl_rng_fill_u64(fl_rng *rng, uint64_t *out, size_t n) {
    if (!rng || (!out && n)) return FL_ERR_NULL;
    switch (rng->kind) {
    case FL_RNG_XOSHIRO256SS:
        for (size_t i = 0; i < n; i++) out[i] = fl_xoshiro_next(&rng->u.xoshiro);
        return FL_OK;
    case FL_RNG_CHACHA20:
        for (size_t i = 0; i < n; i++)
            if (!fl_chacha_next(&rng->u.chacha, &out[i])) return FL_ERR_EXHAUSTED;
        return FL_OK;
    default:
        return FL_ERR_KIND;
    }
}
