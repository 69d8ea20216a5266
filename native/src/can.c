/* CAN bus timing: the exact bit length of a classic data frame (ISO 11898-1), used by the
 * simulated bus to advance simulated time by each frame's wire time. */
#include "feltlab_core.h"

/* Appends the `width` low bits of `value`, most significant first. */
static size_t put_bits(uint8_t *bits, size_t at, uint32_t value, unsigned width) {
    for (unsigned i = 0; i < width; i++) bits[at++] = (uint8_t)((value >> (width - 1 - i)) & 1u);
    return at;
}

int fl_can_frame_bits(uint32_t arbitration_id, unsigned extended, const uint8_t *data, size_t n) {
    /* SOF..CRC is at most 1 + 29 + 3 + 3 + 4 + 64 + 15 = 119 bits (extended, 8 bytes). */
    uint8_t bits[128];
    size_t len = 0;
    if (n > 8 || (n > 0 && data == NULL)) return -1;
    bits[len++] = 0; /* SOF */
    if (extended) {
        len = put_bits(bits, len, (arbitration_id >> 18) & 0x7FFu, 11);
        bits[len++] = 1; /* SRR */
        bits[len++] = 1; /* IDE */
        len = put_bits(bits, len, arbitration_id & 0x3FFFFu, 18);
        bits[len++] = 0; /* RTR */
        bits[len++] = 0; /* r1 */
        bits[len++] = 0; /* r0 */
    } else {
        len = put_bits(bits, len, arbitration_id & 0x7FFu, 11);
        bits[len++] = 0; /* RTR */
        bits[len++] = 0; /* IDE */
        bits[len++] = 0; /* r0 */
    }
    len = put_bits(bits, len, (uint32_t)n, 4);
    for (size_t i = 0; i < n; i++) len = put_bits(bits, len, data[i], 8);
    /* CRC-15, polynomial 0x4599, over SOF..data. */
    uint32_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t next = bits[i] ^ ((crc >> 14) & 1u);
        crc = (crc << 1) & 0x7FFFu;
        if (next) crc ^= 0x4599u;
    }
    len = put_bits(bits, len, crc, 15);
    /* Stuff bits: after five equal bits one of the opposite value, which starts a new run. */
    int stuff = 0;
    uint8_t run_bit = bits[0];
    int run = 1;
    for (size_t i = 1; i < len; i++) {
        if (bits[i] == run_bit) {
            if (++run == 5) {
                stuff++;
                run_bit = (uint8_t)(1u - bits[i]);
                run = 1;
            }
        } else {
            run_bit = bits[i];
            run = 1;
        }
    }
    return (int)len + stuff + 13;
}
