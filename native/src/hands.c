/* Blackjack hand evaluation over batches of hands. */
#include "feltlab_core.h"
#include "internal.h"

/* Declared in internal.h: A = 1 (promoted to 11 when soft), J/Q/K = 10, by card code. */
const uint8_t fl_card_value[52] = {
    1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7,
    7, 7, 8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10,
};

fl_status fl_evaluate_hands(const uint8_t *cards, size_t n_hands, size_t max_cards,
                            uint8_t *hard_total, uint8_t *total, uint8_t *flags,
                            size_t *bad_index) {
    if (n_hands && (!cards || !hard_total || !total || !flags)) return FL_ERR_NULL;
    if (max_cards < 1 || max_cards > 255) return FL_ERR_RANGE;
    for (size_t h = 0; h < n_hands; h++) {
        const uint8_t *row = cards + h * max_cards;
        unsigned hard = 0, n = 0, aces = 0, tens = 0;
        for (size_t j = 0; j < max_cards; j++) {
            uint8_t c = row[j];
            if (c == FL_NO_CARD) break;
            if (c >= 52) {
                if (bad_index) *bad_index = h * max_cards + j;
                return FL_ERR_CARD;
            }
            unsigned v = fl_card_value[c];
            hard += v;
            n++;
            aces += (v == 1);
            tens += (v == 10);
        }
        /* the rest of the row after the first FL_NO_CARD must be padding too */
        for (size_t j = n + 1; j < max_cards; j++) {
            if (row[j] != FL_NO_CARD) {
                if (bad_index) *bad_index = h * max_cards + j;
                return FL_ERR_CARD;
            }
        }
        unsigned best = hard;
        uint8_t f = 0;
        if (aces && hard + 10 <= 21) {
            best = hard + 10;
            f |= FL_HAND_SOFT;
        }
        if (n == 2 && aces == 1 && tens == 1) f |= FL_HAND_BLACKJACK;
        if (hard > 21) f |= FL_HAND_BUST;
        hard_total[h] = (uint8_t)(hard > 255 ? 255 : hard);
        total[h] = (uint8_t)(best > 255 ? 255 : best);
        flags[h] = f;
    }
    return FL_OK;
}
