/*
 * feltlab C core: random number generators, bounded integers, Fisher-Yates
 * shuffles and blackjack hand evaluation.
 *
 * C11, no global mutable state: every function works only on the memory it is
 * handed, so cffi may release the GIL around every call.  Every function that
 * can fail validates its arguments and returns an fl_status instead of
 * crashing.
 *
 * Card model (shared with Python, see docs/design.md):
 *   code = rank * 4 + suit, rank 0..12 = A,2..10,J,Q,K, suit 0..3 = C,D,H,S
 *   id   = deck * 52 + code  (a physical card in a multi-deck shoe)
 */
#ifndef FELTLAB_CORE_H
#define FELTLAB_CORE_H

#include <stddef.h>
#include <stdint.h>

#define FL_CORE_VERSION "0.1.0"

#define FL_CARDS_PER_DECK 52
#define FL_MAX_DECKS 8
#define FL_NO_CARD 0xFF

typedef enum {
    FL_OK = 0,
    FL_ERR_NULL = 1,       /* a required pointer was NULL */
    FL_ERR_DECKS = 2,      /* decks outside 1..FL_MAX_DECKS */
    FL_ERR_RANGE = 3,      /* a bound or size outside its domain */
    FL_ERR_CARD = 4,       /* a card code outside 0..51 (and not FL_NO_CARD) */
    FL_ERR_KIND = 5,       /* the generator has an unknown kind */
    FL_ERR_EXHAUSTED = 6,  /* ChaCha20 stream exhausted (2^64 blocks) */
    FL_ERR_CARDS_OUT = 7   /* a round needed a card the shoe (or the machine) no longer held */
} fl_status;

/* ---------------------------------------------------------------- RNGs */

typedef enum { FL_RNG_XOSHIRO256SS = 1, FL_RNG_CHACHA20 = 2 } fl_rng_kind;

/* xoshiro256** 1.0 (Blackman and Vigna, 2018). */
typedef struct {
    uint64_t s[4];
} fl_xoshiro256ss;

/*
 * ChaCha20 keystream generator.  The state words are those of RFC 8439
 * section 2.3: constants, 256-bit key, 32-bit block counter (word 12) and
 * 96-bit nonce (words 13..15).  When the 32-bit block counter wraps it carries
 * into word 13, so a generator is a 64-bit block counter over a 64-bit stream
 * id (words 14..15): the original Bernstein layout.  For counters below 2^32
 * the output is exactly the RFC 8439 keystream.
 */
typedef struct {
    uint32_t input[16];   /* the next block's input state */
    uint32_t block[16];   /* the current keystream block */
    uint32_t pos;         /* bytes of `block` already used, 0..64 */
    uint32_t exhausted;   /* 1 once the 64-bit block counter has wrapped */
} fl_chacha20;

typedef struct {
    uint32_t kind; /* fl_rng_kind */
    uint32_t _pad;
    union {
        fl_xoshiro256ss xoshiro;
        fl_chacha20 chacha;
    } u;
} fl_rng;

/* Seeds xoshiro256** from a 64-bit seed through SplitMix64 (Vigna's advice). */
void fl_rng_seed_xoshiro(fl_rng *rng, uint64_t seed);
/* Sets the four state words directly; all-zero is rejected (FL_ERR_RANGE). */
fl_status fl_rng_set_xoshiro(fl_rng *rng, const uint64_t s[4]);
/* Advances by 2^128 (jump) or 2^192 (long_jump) outputs. */
fl_status fl_xoshiro_jump(fl_rng *rng);
fl_status fl_xoshiro_long_jump(fl_rng *rng);

/* Copies out the four state words. */
fl_status fl_xoshiro_get(const fl_rng *rng, uint64_t s[4]);

/* RFC 8439 key (32 bytes), 96-bit nonce (12 bytes), initial block counter. */
fl_status fl_rng_seed_chacha(fl_rng *rng, const uint8_t key[32], const uint8_t nonce[12],
                             uint32_t counter);
/* Positions the generator at byte `offset` (0..63) of 64-bit block `block`. */
fl_status fl_chacha_seek(fl_rng *rng, uint64_t block, uint32_t offset);
/* Reports the position of the next keystream byte. */
fl_status fl_chacha_tell(const fl_rng *rng, uint64_t *block, uint32_t *offset);
/* Copies out the key and the nonce words (words 13..15) of the next block. */
fl_status fl_chacha_get_key(const fl_rng *rng, uint8_t key[32], uint8_t nonce[12]);
/* The RFC 8439 section 2.3 block function: 16 words in, 16 words out. */
void fl_chacha20_block(const uint32_t in[16], uint32_t out[16]);
/* Raw keystream bytes (the RFC 8439 section 2.4 keystream). */
fl_status fl_chacha_keystream(fl_rng *rng, uint8_t *out, size_t n);

/* n raw 64-bit outputs (ChaCha20: 8 keystream bytes, little-endian). */
fl_status fl_rng_fill_u64(fl_rng *rng, uint64_t *out, size_t n);

/*
 * Unbiased integers in [0, bound) by Lemire's nearly-divisionless method
 * (D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS
 * 29(1), 2019).  bound must be >= 1.
 */
fl_status fl_rng_bounded(fl_rng *rng, uint64_t bound, uint64_t *out, size_t n);

/*
 * One attempt of the batched bounded draw of Brackett-Rozinsky and Lemire
 * ("Batched Ranged Random Integer Generation", Software: Practice and
 * Experience 55(1), 2025) in a w-bit word (1 <= w <= 64): from the word x
 * (x < 2^w) it derives k indexes, index i uniform in [0, n - i), by k
 * successive w x w multiplications.  `bound` is any value >= the product
 * n (n-1) ... (n-k+1), which must itself be <= 2^w.  Returns 1 when the word
 * is accepted, 0 when it must be rejected and a fresh word drawn.  The 64-bit
 * shuffles use this very code with w = 64; exposing the width lets tests count
 * every word of a reduced width exactly.
 */
int fl_batch_draw_word(uint64_t x, unsigned w, uint64_t n, unsigned k, uint64_t bound,
                       uint64_t *indexes);

/* ---------------------------------------------------------------- cards */

/* The new-deck order of one deck as codes: A-K spades, A-K diamonds,
 * K-A clubs, K-A hearts (the order of a new US-made deck). */
void fl_new_deck_order(uint8_t out[52]);
/* A shoe of `decks` decks in new-deck order, as codes or ids. */
fl_status fl_new_shoe_codes(unsigned decks, uint8_t *out, size_t n_out);
fl_status fl_new_shoe_ids(unsigned decks, uint16_t *out, size_t n_out);

/* Fisher-Yates (Durstenfeld) shuffle in place, indexes batched per word. */
fl_status fl_shuffle_u8(fl_rng *rng, uint8_t *cards, size_t n);
fl_status fl_shuffle_u16(fl_rng *rng, uint16_t *cards, size_t n);

/*
 * Fills an (n_shoes, decks * 52) C-contiguous array with independent shuffled
 * shoes, each a Fisher-Yates shuffle of a new shoe, shoes drawn in row order
 * from the one generator.
 */
fl_status fl_shuffle_batch_codes(fl_rng *rng, unsigned decks, uint8_t *out, size_t n_shoes);
fl_status fl_shuffle_batch_ids(fl_rng *rng, unsigned decks, uint16_t *out, size_t n_shoes);

/* ---------------------------------------------------------------- shuffle models */

#define FL_MAX_MODEL_CARDS 4096
#define FL_MAX_SHELVES 256

/*
 * Physical shuffler models, in place, index 0 the top card, n <= 4096 cards
 * (see models.c for the sources).  `passes` repetitions (0 leaves the cards
 * as they are).
 *   GSR riffle: Bayer and Diaconis (1992).
 *   Shelf shuffler with `shelves` shelves (1..256): Diaconis, Fulman and
 *   Holmes (2013).
 */
fl_status fl_riffle_u8(fl_rng *rng, uint8_t *cards, size_t n, unsigned passes);
fl_status fl_riffle_u16(fl_rng *rng, uint16_t *cards, size_t n, unsigned passes);
fl_status fl_shelf_u8(fl_rng *rng, uint8_t *cards, size_t n, unsigned shelves, unsigned passes);
fl_status fl_shelf_u16(fl_rng *rng, uint16_t *cards, size_t n, unsigned shelves,
                       unsigned passes);

/*
 * The library of shuffle models (docs/certification.md, "The library of shuffle models";
 * models.c gives each mechanism and its source).  A stream holds one model and the state a
 * device keeps across shoes (the LCG's state, the power-up generator of `reboot`);
 * fl_model_shoes fills `n_shoes` rows of `n` input positions (row r, column c: the loaded
 * position of the card dealt c-th in shoe r), each shoe starting from the loaded order
 * 0..n-1, drawing from `rng` in row order.  `missing` writes n-1 positions and
 * FL_NO_POSITION in the last column.  Parameters, param[0..3], per kind:
 *   FISHER_YATES  -                      RIFFLE      k riffles (0..65536)
 *   SHELF         shelves 1..256, passes 0..65536
 *   OVERHAND      passes 0..65536, cut percent 0..100
 *   STRIP         cuts (0..n-1), passes 0..65536
 *   POSITION_BIAS pos (< n), stay percent 0..100, width
 *   NAIVE         -                      MODULO      bits 1..32
 *   LCG           shift 0..30            SHORT_SEED  bits 1..64
 *   REBOOT        every >= 1             STUCK, MISSING, DUPLICATE  pos (< n)
 * fl_model_init validates the kind and the parameters that do not depend on n (FL_ERR_KIND,
 * FL_ERR_RANGE); fl_model_shoes validates the rest, n <= FL_MAX_MODEL_CARDS and the
 * buffers, and returns FL_ERR_EXHAUSTED if a ChaCha20 stream runs out (rows written so far
 * are complete shoes).
 */
typedef enum {
    FL_MODEL_FISHER_YATES = 0,
    FL_MODEL_RIFFLE = 1,
    FL_MODEL_SHELF = 2,
    FL_MODEL_OVERHAND = 3,
    FL_MODEL_STRIP = 4,
    FL_MODEL_POSITION_BIAS = 5,
    FL_MODEL_NAIVE = 6,
    FL_MODEL_MODULO = 7,
    FL_MODEL_LCG = 8,
    FL_MODEL_SHORT_SEED = 9,
    FL_MODEL_REBOOT = 10,
    FL_MODEL_STUCK = 11,
    FL_MODEL_MISSING = 12,
    FL_MODEL_DUPLICATE = 13,
    FL_MODEL_KINDS = 14
} fl_model_kind;

#define FL_MODEL_PARAMS 4
#define FL_MAX_MODEL_PASSES 65536
#define FL_NO_POSITION 0xFFFF
#define FL_LCG_MULTIPLIER 1103515245
#define FL_LCG_INCREMENT 12345

typedef struct {
    uint32_t kind;     /* fl_model_kind */
    uint32_t param[4]; /* FL_MODEL_PARAMS, see above */
    uint32_t started;  /* 1 once a stateful model drew its state (its first shoe) */
    uint32_t _pad;
    uint64_t shoes;    /* shoes drawn by this stream */
    uint64_t lcg;      /* LCG: the 31-bit state */
    fl_rng boot;       /* REBOOT: the generator as seeded at power-up */
    fl_rng gen;        /* REBOOT: the generator now */
} fl_model_stream;

fl_status fl_model_init(fl_model_stream *stream, uint32_t kind, const uint32_t *param,
                        size_t n_param);
fl_status fl_model_shoes(fl_model_stream *stream, fl_rng *rng, uint16_t *out, size_t n_shoes,
                         size_t n);

/* ---------------------------------------------------------------- battery kernels */

/* See stats.c.  perm: (n_shoes, n) uint16, rows are input positions. */
fl_status fl_check_permutations(const uint16_t *perm, size_t n_shoes, size_t n, size_t *bad_shoe,
                                size_t *bad_column, uint32_t *bad_value);
fl_status fl_battery_pass(const uint16_t *perm, size_t n_shoes, size_t n, uint16_t *rising,
                          uint16_t *turning, uint16_t *successions, uint16_t *guesses,
                          int64_t *position_counts, size_t *bad_shoe);
fl_status fl_adjacent_rank_pairs(const uint8_t *codes, size_t n_shoes, size_t n, int64_t *counts);
fl_status fl_successive_shoe_rho(const uint16_t *perm, size_t n_shoes, size_t n, double *rho);

/* ---------------------------------------------------------------- rule encodings */

/* The rule encodings of fl_sim_rules and fl_analyzer_rules (their uint32_t fields hold these
 * values); Python reads them from the compiled module, never repeating the numbers. */
typedef enum {
    FL_DOUBLE_ANY = 0,       /* any first two cards */
    FL_DOUBLE_HARD = 1,      /* hard totals only */
    FL_DOUBLE_HARD_9_11 = 2, /* hard 9, 10 and 11 */
    FL_DOUBLE_HARD_10_11 = 3 /* hard 10 and 11 */
} fl_double_on;
typedef enum {
    FL_SURRENDER_NONE = 0,
    FL_SURRENDER_LATE = 1, /* after the dealer's check (no hole card: lost to a blackjack) */
    FL_SURRENDER_EARLY = 2 /* before any blackjack check */
} fl_surrender;
typedef enum {                         /* no hole card: what a dealer blackjack takes */
    FL_TAKES_ORIGINAL = 0,             /* the original wager only (doubles, splits back) */
    FL_TAKES_ORIGINAL_AND_BUSTED = 1,  /* the original wager and every busted hand */
    FL_TAKES_ALL = 2                   /* every wager on the box */
} fl_dealer_takes;
typedef enum {                 /* a strategy table's action (fl_sim_rules hard, soft) */
    FL_ACT_HIT = 0,
    FL_ACT_STAND = 1,
    FL_ACT_DOUBLE_ELSE_HIT = 2,
    FL_ACT_DOUBLE_ELSE_STAND = 3
} fl_table_action;

/* ---------------------------------------------------------------- round simulator */

/*
 * Rules and strategy of the round simulator (sim.c), filled from
 * feltlab.Rules by the Python facade.  Strategy tables are indexed
 * [player total][dealer up-card value 1..10] with actions fl_table_action;
 * pair[rank index][up] is 1 to split.
 */
typedef struct {
    uint32_t decks;
    uint32_t h17;                 /* dealer hits soft 17 */
    uint32_t peek;                /* 1 peek, 0 European no-hole-card */
    uint32_t enhc_takes;          /* fl_dealer_takes */
    uint32_t bj_num, bj_den;      /* blackjack pays num to den (rule 5.4: 3 to 2) */
    uint32_t double_on;           /* fl_double_on */
    uint32_t double_after_split;
    uint32_t max_hands;           /* 1..4 */
    uint32_t resplit_aces;
    uint32_t split_aces_one_card;
    uint32_t cut_position;        /* shuffle after the round that dealt this many; 0: every round */
    int32_t stake;                /* cents */
    uint8_t hard[32][11];
    uint8_t soft[32][11];
    uint8_t pair[13][11];
    uint32_t surrender;           /* fl_surrender */
    uint8_t surr[32][11];         /* 1: surrender this hard two-card total (after the pair check) */
    uint32_t dealer_plays_out;    /* 1: the dealer completes the hand even when every hand of
                                   * the box has busted, surrendered or has a blackjack (a wager
                                   * like Buster Blackjack is in play); 0: as the round engine */
} fl_sim_rules;

/*
 * The round record of one box (record.c; feltlab.record.RECORD_DTYPE is the same layout):
 * the box's final hands in play order and the dealer's final hand.  Every field is a byte;
 * cards are codes (rank * 4 + suit), FL_NO_CARD past a hand's n_cards.  hand_total: the best
 * total (one ace as 11 when that stays <= 21); hand_blackjack: a two-card 21 not from a
 * split; dealer_suited: every dealer card of one suit; dealer_up: the first dealer card.
 */
#define FL_REC_HANDS 4  /* the [4] dimensions below */
#define FL_REC_CARDS 24 /* the [24] dimensions below */
typedef struct {
    uint8_t n_hands;
    uint8_t hand_n_cards[4];
    uint8_t hand_total[4];
    uint8_t hand_bust[4];
    uint8_t hand_blackjack[4];
    uint8_t hand_doubled[4];
    uint8_t hand_surrendered[4];
    uint8_t hand_cards[4][24];
    uint8_t dealer_n_cards;
    uint8_t dealer_total;
    uint8_t dealer_bust;
    uint8_t dealer_blackjack;
    uint8_t dealer_up;
    uint8_t dealer_suited;
    uint8_t dealer_cards[24];
} fl_round_record;

/*
 * Simulates n_rounds rounds.  net[i]: the main wager's net result in cents.
 * initial (optional, n_rounds x 5): player card 1, card 2, dealer up card,
 * the player's third card (the next card of the shoe, always dealt), the
 * dealer's second card (when the dealer took none, the card it would have been).  trace (optional, n_rounds x
 * trace_cap) and trace_len: every card dealt in the round, in order.
 */
fl_status fl_simulate_rounds(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                             int32_t *net, uint8_t *initial, uint8_t *trace, size_t trace_cap,
                             uint8_t *trace_len);

/* As fl_simulate_rounds, and (when `records` is not NULL) each round's record in records[i]. */
fl_status fl_simulate_rounds_rec(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                                 int32_t *net, uint8_t *initial, uint8_t *trace,
                                 size_t trace_cap, uint8_t *trace_len, fl_round_record *records);

/*
 * The exact distribution of the dealer's final hand (dealer_final.c), drawn out to 17 from
 * a shoe of counts[v] cards of value v + 1 (counts[0] aces, counts[9] ten-valued) after the
 * up card (value index `up`, 0 ace .. 9 ten, already removed from counts) - the dealer
 * completes the hand whatever the players hold.  out[n * FL_DF_CLASSES + k]: probability of
 * a final hand of n cards (0 <= n <= FL_DF_MAX_CARDS) in class k: 0..9 totals 17..26, 10 a
 * blackjack.  Float64 sums of products (relative error below 1e-12).
 */
#define FL_DF_MAX_CARDS 24
#define FL_DF_CLASSES 11
fl_status fl_dealer_final(const uint32_t *counts, uint32_t up, uint32_t h17, double *out);

/*
 * Simulator version: what a seed reproduces.  Version 2 prepares shoes
 * FL_SIM_LANES at a time (their cards up to the cut fixed with the lanes'
 * draws interleaved) and plays them one after the other: shoe k of a call is
 * drawn from lane k % FL_SIM_LANES, whose xoshiro256** generator is the
 * caller's long-jumped (2^192 outputs) l times; on return the caller's
 * generator is long-jumped FL_SIM_LANES times (so a next call never
 * overlaps).  Under ChaCha20 the lanes draw in turn from the caller's stream.
 * Version 1 (feltlab 0.1) dealt one shoe at a time from the caller's generator.
 * Version 3: the same calls, which feltlab.simulation.run.simulate makes of
 * 200,000 rounds each (RECORD_BATCH) on every path, so a seed gives the same
 * rounds whatever the wagers' tables (version 2 dealt a chunk in one call when
 * every wager had a table, in 200,000-round calls otherwise).
 * Version 4: a shoe's positions are fixed six at a time, their Fisher-Yates draws
 * from one 64-bit word (Lemire's bounded integers batched, Brooks & Lemire 2024;
 * version 3 fixed two at a time from a 32-bit half-word): the same calls, other
 * shoes for a seed.
 */
#define FL_SIM_VERSION 4
#define FL_SIM_LANES 4

/*
 * Per-round inputs a side-wager table may index: 0..4 the initial cards of
 * fl_simulate_rounds' `initial` (P1, P2, D1, P3, D2), each as its card code
 * 0..51 or 52 for FL_NO_CARD (FL_SIDE_CARD_VALUES values); then the round
 * record's byte fields (fl_round_record, the play-decided wagers), the hand
 * arrays one input a hand (FL_IN_HAND_* + hand 0..3): fl_side_input_values(i)
 * is the number of values of input i (0 past the last).  The dealer's first
 * three cards are inputs by rank (FL_IN_DEALER_RANK + 0..2: rank index 0 ace ..
 * 12 king, 13 for no card; Bust Bonus's 8-8-8); the rest of the card arrays
 * (hand_cards, dealer_cards) are no inputs: a wager reading them is settled by
 * the batch path.
 */
#define FL_SIM_INPUTS 39
#define FL_IN_N_HANDS 5
#define FL_IN_HAND_N_CARDS 6
#define FL_IN_HAND_TOTAL 10
#define FL_IN_HAND_BUST 14
#define FL_IN_HAND_BLACKJACK 18
#define FL_IN_HAND_DOUBLED 22
#define FL_IN_HAND_SURRENDERED 26
#define FL_IN_DEALER_N_CARDS 30
#define FL_IN_DEALER_TOTAL 31
#define FL_IN_DEALER_BUST 32
#define FL_IN_DEALER_BLACKJACK 33
#define FL_IN_DEALER_UP 34
#define FL_IN_DEALER_SUITED 35
#define FL_IN_DEALER_RANK 36
#define FL_DEALER_RANK_INPUTS 3
#define FL_SIDE_CARD_VALUES 53
#define FL_SIDE_MAX_INPUTS 8
uint32_t fl_side_input_values(uint32_t input);
#define FL_SIDE_NOT_OFFERED 255
#define FL_SIDE_MAX_TABLES 64

/*
 * A side wager's outcome table: table[sum_j value(input[j]) * stride[j]] is
 * the outcome index of the round, FL_SIDE_NOT_OFFERED where the wager is not
 * on offer (or a role was never dealt); counts (256 counters, caller-owned,
 * added to) counts each index.  Every reachable index must lie below size.
 *
 * Optionally factored in two levels (n_pre > 0): the first n_pre inputs index
 * pre (pre_size entries, each a class below n_classes) and the class counts
 * class_stride entries of table, the remaining inputs their strides:
 * table[pre[sum_{j<n_pre} ...] * class_stride + sum_{j>=n_pre} ...].  Every
 * reachable index of both must lie within them (checked, pre scanned).
 */
typedef struct {
    const uint8_t *table;
    size_t size;
    uint32_t n_inputs;                  /* 1..FL_SIDE_MAX_INPUTS */
    uint32_t input[8];                  /* each < FL_SIM_INPUTS */
    uint32_t stride[8];
    uint64_t *counts;                   /* 256 counters */
    const uint16_t *pre;                /* NULL: one level */
    size_t pre_size;
    uint32_t n_pre;                     /* 0..n_inputs - 1 */
    uint32_t n_classes;
    uint32_t class_stride;
} fl_side_table;

/* Exact sums over rounds of the main wager's net result (cents) and its square, as
 * 128-bit integers (low word, high word; net two's complement). */
typedef struct {
    uint64_t rounds;
    uint64_t net_lo;
    uint64_t net_hi;
    uint64_t sq_lo;
    uint64_t sq_hi;
} fl_sim_sums;

/*
 * Simulates n_rounds rounds as fl_simulate_rounds does (the same rounds for
 * the same generator), keeping only sums (added to *sums) and each table's
 * outcome counts: no per-round arrays.  At most FL_SIDE_MAX_TABLES tables.
 */
fl_status fl_simulate_tally(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                            const fl_side_table *tables, size_t n_tables, fl_sim_sums *sums);

/*
 * fl_simulate_tally that also writes, when not NULL, each round's initial cards (n_rounds x
 * 5, as fl_simulate_rounds) and round record: for the wagers without a table, classified
 * from these arrays beside the tabled ones tallied here (the same rounds either way).
 */
fl_status fl_simulate_tally_out(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                                const fl_side_table *tables, size_t n_tables, fl_sim_sums *sums,
                                uint8_t *initial, fl_round_record *records);

/* ---------------------------------------------------------------- counting (sim.c) */

/*
 * A card count, bucketed at the moment of each bet (before the round's first card): the
 * cards seen are every card dealt in the earlier rounds since the shuffle (a continuous
 * shuffler never shuffles).  The value of a round is floor(count * resolution) - lowest,
 * clamped to 0..n_buckets - 1.
 *   FL_COUNT_TRUE: the running count (the sum of the seen cards' tags) per deck remaining,
 *     RC * 52 / cards_remaining (Griffin, The Theory of Blackjack, ch. 4; Wong, Professional
 *     Blackjack: the true count).
 *   FL_COUNT_RUNNING: the running count itself.
 *   FL_COUNT_WINDOW: the sum of the tags of the last `window` cards seen (fewer at the start):
 *     a continuous shuffler's count of the cards fed back (S. How, the ShuffleMaster 126).
 *   FL_COUNT_SUIT: the richest suit's excess per deck remaining, the largest over the suits
 *     s of (52 * unseen_s - 13 * unseen) / unseen (tags unused): a flush bet's count.
 *   FL_COUNT_SUIT_RANGE: E. Jacobson's suit count, the most abundant suit less the least
 *     abundant among the unseen cards, per deck remaining: 52 * (max_s unseen_s - min_s
 *     unseen_s) / unseen (tags unused).
 */
#define FL_COUNT_TRUE 0
#define FL_COUNT_RUNNING 1
#define FL_COUNT_WINDOW 2
#define FL_COUNT_SUIT 3
#define FL_COUNT_SUIT_RANGE 4
#define FL_COUNT_MAX_BUCKETS 256
#define FL_COUNT_MAX_RESOLUTION 64
#define FL_COUNT_MAX_TAG 1000 /* |tag| bound: a running count stays far inside int32 */
typedef struct {
    int16_t tags[52];    /* tag of each card code (rank * 4 + suit; rank 0 ace .. 12 king) */
    uint32_t mode;       /* FL_COUNT_* */
    uint32_t window;     /* FL_COUNT_WINDOW: cards, 1..FL_MAX_DECKS * 52 */
    uint32_t resolution; /* 1..FL_COUNT_MAX_RESOLUTION steps per unit of the count */
    int32_t lowest;      /* the bucket value of bucket 0; lower values fall into bucket 0 */
    uint32_t n_buckets;  /* 1..FL_COUNT_MAX_BUCKETS; higher values fall into the last */
} fl_count;

/*
 * A continuous shuffler (csm.c) the simulator deals from instead of a shoe: the machine holds
 * every card not on the table and not held back by its buffer.
 *   FL_CSM_IDEAL: the next card is uniform among the machine's cards.
 *   FL_CSM_SLOTS: `slots` slots; a card entering the machine goes to a uniformly chosen slot
 *     at a uniformly chosen depth; a deal takes the top card of a uniformly chosen non-empty
 *     slot (the bundled continuous profile's declared model).
 *     Loading inserts the decks' cards by the same rule, in order (csm.c).
 * Returned cards wait in a first-in first-out buffer of `buffer` cards: a card enters the
 * machine once `buffer` later cards have been returned.  policy: FL_CSM_RETURN_ROUND, the
 * round's cards go back after each round in pickup order (the order dealt);
 * FL_CSM_RETURN_BATCH, the cards of `batch` rounds are held (a discard rack) and go back
 * together, in the order dealt, at the end of every batch-th round.
 * Motivation: Stephen How's model of a ShuffleMaster 126 with a buffer of at least 16 cards,
 * in which a Hi-Lo count of the last 16 cards fed back makes a 6-deck round positive for the
 * player more than 8% of the time (issue 26; docs/csm-audit.md).
 */
#define FL_CSM_IDEAL 0
#define FL_CSM_SLOTS 1
#define FL_CSM_RETURN_ROUND 0
#define FL_CSM_RETURN_BATCH 1
typedef struct {
    uint32_t kind;   /* FL_CSM_* */
    uint32_t slots;  /* FL_CSM_SLOTS: 1..255 */
    uint32_t buffer; /* cards: buffer + the cards of the rounds held out < decks * 52 */
    uint32_t policy; /* FL_CSM_RETURN_* */
    uint32_t batch;  /* FL_CSM_RETURN_BATCH: rounds per batch, 1..64 */
} fl_csm_model;

/*
 * The card stream of a continuous shuffler, for the models' laws: the machine loaded with
 * `decks` decks; n_rounds rounds of `per_round` cards each dealt (written to
 * out[r * per_round + j], card codes) and returned by the model's policy.  Errors:
 * FL_ERR_NULL, FL_ERR_DECKS, FL_ERR_KIND (model kind or policy unknown, generator kind),
 * FL_ERR_RANGE (slots outside 1..255, batch outside 1..64, per_round 0, or a buffer, batch and
 * round that leave the machine without a card to deal: buffer + batch * per_round must stay
 * below decks * 52), FL_ERR_EXHAUSTED (ChaCha20 exhausted).
 */
fl_status fl_csm_stream(fl_rng *rng, const fl_csm_model *model, uint32_t decks, size_t n_rounds,
                        uint32_t per_round, uint8_t *out);

/* Checks a model for `decks` decks and rounds of at most `per_round` cards: FL_OK or the
 * fl_csm_stream error above. */
fl_status fl_csm_check(const fl_csm_model *model, uint32_t decks, uint32_t per_round);

/*
 * Simulates n_rounds rounds as fl_simulate_tally does (from a shoe and its cut card when csm
 * is NULL: the same rounds as fl_simulate_tally for the same generator), bucketing each round
 * by `count` (above).  sums: every round (added to).  bucket_sums[b] (n_buckets of them, added
 * to): the rounds of bucket b.  bucket_counts[(b * n_tables + k) * 256 + outcome] (added to):
 * side table k's outcome counts in bucket b (the tables' own `counts` are not written).
 * csm: deal from this continuous shuffler instead (rules->cut_position unused; the count's
 * mode FL_COUNT_WINDOW or FL_COUNT_RUNNING); its generator is the caller's, which is left
 * long-jumped once.  FL_ERR_CARDS_OUT when a round needs a card and the shoe or the machine
 * holds none; FL_ERR_RANGE for a running count off a continuous shuffler over more than 2^40 rounds (it never resets).
 * On an error status *sums is left as it was; the buckets hold the rounds played before it.
 */
fl_status fl_simulate_counted(fl_rng *rng, const fl_sim_rules *rules, size_t n_rounds,
                              const fl_side_table *tables, size_t n_tables,
                              const fl_count *count, const fl_csm_model *csm, fl_sim_sums *sums,
                              fl_sim_sums *bucket_sums, uint64_t *bucket_counts);

/* ---------------------------------------------------------------- hands */

#define FL_HAND_SOFT 1u      /* an ace counts 11 in `total` */
#define FL_HAND_BLACKJACK 2u /* exactly two cards: an ace and a ten-value card */
#define FL_HAND_BUST 4u      /* hard total above 21 */

/*
 * Evaluates n_hands hands stored row-wise in `cards` (n_hands x max_cards
 * codes; FL_NO_CARD pads a short hand and ends it).  For each hand writes the
 * hard total (aces as 1), the best total (one ace as 11 when that stays <= 21)
 * and FL_HAND_* flags.  On a bad code returns FL_ERR_CARD and stores the
 * offending flat index in *bad_index.
 */
fl_status fl_evaluate_hands(const uint8_t *cards, size_t n_hands, size_t max_cards,
                            uint8_t *hard_total, uint8_t *total, uint8_t *flags,
                            size_t *bad_index);

/* ---------------------------------------------------------------- combinatorial analyzer */

/*
 * Exact expected values of the main wager of one box (analyzer.c), for any
 * shoe composition: counts[v] cards of value v + 1 (counts[0] aces, counts[9]
 * ten-valued cards), FL_AN_MIN_CARDS to FL_AN_MAX_CARDS cards in all.  strategy FL_AN_CDZ: the
 * composition-dependent optimum with the pre-split strategy reused after
 * splitting (CDZ-); FL_AN_CDP1 / FL_AN_CDP: the same before splitting, the split hands
 * played optimally for the shoe less the up card, the hand's cards and the pair cards
 * removed (CDP1: with two pair cards out, the first split hand's play, kept for every
 * hand; CDP: for each count of pair cards out) (E. Farmer's post-split strategies);
 * FL_AN_TABLE: the simulator's tables (fl_sim_rules' layout;
 * tables may not split ten-valued pairs; surr[hard total][up] 1 surrenders a
 * hard two-card hand).  surrender: fl_surrender (late: under no hole card the
 * surrendered half is lost with the rest to a dealer blackjack; early: half the wager
 * back before any blackjack check); enhc_takes fl_dealer_takes; double_on fl_double_on.
 */
/*
 * Analyzer version: the figures fl_analyze returns for given rules.  Raised whenever a
 * change alters any figure (to the bit), so that a figure cached on disk under the old
 * version (feltlab simulate's exact check) is computed again.
 */
#define FL_ANALYZER_VERSION 2
#define FL_AN_MIN_CARDS 26
#define FL_AN_MAX_CARDS 4096
#define FL_AN_TABLE 0
#define FL_AN_CDZ 1
#define FL_AN_CDP1 2
#define FL_AN_CDP 3
#define FL_AN_STAND 0
#define FL_AN_HIT 1
#define FL_AN_DOUBLE 2
#define FL_AN_SPLIT 3
#define FL_AN_SURRENDER 4
#define FL_AN_BLACKJACK 5
#define FL_AN_ACTIONS 5
#define FL_AN_SPLIT_NET0 8
#define FL_AN_SPLIT_NETS 17
#define FL_AN_MAX_HANDS_DIST 4
#define FL_AN_MAX_THREADS 10

typedef struct {
    uint32_t counts[10];
    uint32_t h17, peek, enhc_takes, bj_num, bj_den, double_on, double_after_split;
    uint32_t max_hands, resplit_aces, split_aces_one_card, surrender, strategy;
    uint32_t split_dist; /* 1: also the exact distribution of split rounds (split_net) */
    uint32_t threads;    /* up cards analysed side by side: 0 one thread per online CPU, at
                            most FL_AN_MAX_THREADS; the figures are the same for any count */
    uint8_t hard[32][11];
    uint8_t soft[32][11];
    uint8_t pair[13][11];
    uint8_t surr[32][11];
} fl_analyzer_rules;

/*
 * Results, per initial unit.  Two-card hands are indexed by value indexes
 * a <= b (0 ace .. 9 ten): index a * 10 - a (a - 1) / 2 + (b - a), 55 hands;
 * up cards 0 ace .. 9 ten.  prob: probability of the deal; value: the
 * hand's expectation under the strategy; action_ev: stand, hit, double,
 * split, surrender, unconditional (NaN where not allowed; a player blackjack
 * has only [0]); action: the strategy's choice (FL_AN_*, 255 impossible);
 * p_dealer_bj: probability of a dealer blackjack given the three cards;
 * dealer[up]: the dealer's final 17, 18, 19, 20, 21, bust, blackjack off the
 * shoe less the up card.  net_dist: probability of the round's net result -2, -1, -1/2,
 * 0, +1, +2, the blackjack pay, over the rounds without a split; p_split: probability of
 * a round that splits (and meets no peeked dealer blackjack), ev_split: those rounds'
 * contribution to ev (net_dist + p_split sums to 1).  With rules.split_dist set,
 * split_net[net + FL_AN_SPLIT_NET0] is the probability of a split round ending at net
 * -8..+8 units (exact: analyzer_dist.c; split_net sums to p_split), and
 * p_split_dist_approx the probability of the re-split rounds (3-4 hands) whose
 * distribution is approximated because their enumeration exceeds its budget.
 * ev_approx_bound: a bound on ev's error from the splits in p_split_approx, by the all-bust
 * term's bound (the share of blackjack cards left, times the stakes past one unit under
 * "original"; for a split not played, what it could gain over the play chosen).
 */
typedef struct {
    double ev;
    double net_dist[7];
    double p_split;
    double ev_split;
    double p_split_approx; /* splits whose all-bust term (no hole card) was left out */
    double ev_approx_bound; /* |ev - the exact ev| is at most this (0 when p_split_approx is) */
    double split_net[17]; /* FL_AN_SPLIT_NETS: split rounds by net -8..+8 (split_dist) */
    double p_split_dist_approx; /* re-split rounds whose distribution is approximated */
    double p_total;
    double prob[55][10];
    double value[55][10];
    double p_dealer_bj[55][10];
    double action_ev[55][10][5];
    uint8_t action[55][10];
    double dealer[10][7];
    uint32_t nodes;
} fl_analysis;

/* fl_analyze refuses (FL_ERR_RANGE) a shoe a round could run out of (fl_an_may_run_out). */
fl_status fl_analyze(const fl_analyzer_rules *rules, fl_analysis *out);

/* 1 when one round of one box (up to max_hands split hands, 1..4) and the dealer could
 * ask for a card with none left in the shoe `counts`, else 0.  A hand draws only below 21,
 * so its cards but the last hold at most hard 20, the dealer's at most hard 16; when the
 * shoe runs out, at most max_hands of them hold a last card.  So it can only if the shoe's
 * cards less its max_hands highest hold at most 20 max_hands + 16 pips (a necessary
 * condition: refusing on it is safe).  The analyzer's split values and distributions
 * assume no round runs out (26 twos split to 2 hands would: +2.0 a round, and a split
 * distribution summing to 0). */
int fl_an_may_run_out(const uint32_t counts[10], uint32_t max_hands);

/* The dealer's final 17..21, bust, blackjack for up card value `up` (1..10, removed from
 * counts); peek: conditioned on no blackjack. */
fl_status fl_dealer_probabilities(const uint32_t counts[10], unsigned up, unsigned h17,
                                  unsigned peek, double out[7]);

/* ---------------------------------------------------------------- CAN bus timing */
/* Bits a classic CAN data frame occupies on the wire (ISO 11898-1), interframe space
 * included: SOF, identifier (11 bits, or 29 with SRR and IDE when `extended`), RTR, IDE/r0,
 * DLC, the `n` data bytes and the CRC-15, with one stuff bit after every five equal bits in
 * SOF..CRC, then the fixed 13 bits (CRC delimiter, ACK slot and delimiter, EOF, intermission).
 * 47 + 8n bits before stuffing for an 11-bit id.  Returns -1 when n > 8 or data is NULL with
 * n > 0. */
int fl_can_frame_bits(uint32_t arbitration_id, unsigned extended, const uint8_t *data, size_t n);

/* ---------------------------------------------------------------- NIST SP 800-22 rev 1a */
/* The counting kernels of the fifteen bitstream tests (native/src/sp800_22.c; the p-values
 * are computed in feltlab.rig.rng.sp800_22).  Every kernel reads n_seq rows of `stride` bytes,
 * each a sequence of n bits packed most significant bit first (stride >= ceil(n / 8)), and
 * returns FL_ERR_RANGE for n = 0, a short stride or a parameter outside its domain. */
#define FL_STS_RUN_CAP 63
fl_status fl_sts_frequency(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                           uint64_t *ones);
fl_status fl_sts_block_frequency(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                 uint64_t block, double *chi2);
fl_status fl_sts_cusum(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                       int64_t *out);
fl_status fl_sts_runs(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                      uint64_t *out);
fl_status fl_sts_longest_run(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                             uint64_t block, uint32_t *hist);
fl_status fl_sts_rank(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                      unsigned rows, unsigned cols, uint32_t *out);
fl_status fl_sts_template_counts(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                 unsigned m, const int32_t *index, uint32_t n_templates,
                                 uint32_t blocks, uint32_t *counts);
fl_status fl_sts_overlapping(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                             unsigned m, uint64_t block, unsigned K, uint32_t *nu);
fl_status fl_sts_universal(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                           unsigned L, uint64_t Q, uint64_t K, uint32_t *dist);
fl_status fl_sts_pattern_counts(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                unsigned w, uint32_t *counts);
fl_status fl_sts_excursions(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                            uint64_t *cycles, uint32_t *nu, uint64_t *xi);
fl_status fl_sts_linear_complexity(const uint8_t *data, size_t n_seq, size_t stride, uint64_t n,
                                   uint32_t block, uint32_t *hist);

/* ---------------------------------------------------------------- seed search */
/* The seed search of a seeded shuffler (native/src/seedsearch.c, docs/security.md): the
 * generators of the library of rig/rng/generators.py, a draw's scaling to a range, the
 * Fisher-Yates direction. */
typedef enum {
    FL_SS_GLIBC = 1,        /* glibc TYPE_0 rand(), 31-bit words */
    FL_SS_MSVC = 2,         /* MSVC rand(), 15-bit words */
    FL_SS_JAVA = 3,         /* java.util.Random nextInt(), 32-bit words */
    FL_SS_MT19937 = 4,      /* MT19937 init_genrand, 32-bit words */
    FL_SS_XORSHIFT128P = 5, /* xorshift128+ seeded by SplitMix64, 64-bit words */
    FL_SS_CHACHA20 = 6      /* ChaCha20 keyed by the seed, 32-bit words */
} fl_ss_generator;
typedef enum { FL_SS_MODULO = 1, FL_SS_MULSHIFT = 2, FL_SS_REJECTION = 3 } fl_ss_scaling;
typedef enum { FL_SS_DOWN = 1, FL_SS_UP = 2 } fl_ss_direction;
/* n raw words of `generator` seeded by `seed` (n <= 2^24). */
fl_status fl_ss_words(int generator, uint64_t seed, uint64_t *out, size_t n);
/* The shoe of n card ids (a whole number of decks, at most FL_MAX_DECKS) dealt by the
 * declared shuffle of the factory order 0..n-1 seeded by `seed`. */
fl_status fl_ss_shuffle(int generator, int scaling, int direction, uint64_t seed, uint32_t n,
                        uint16_t *out);
/* Every seed of lo..hi-1 whose shuffle deals the known cards of `observed` (n card codes in
 * dealt order, FL_NO_CARD where unknown, at least one known): the first max_found in
 * `found`, their number in *n_found, the shuffle steps replayed in *steps.  A candidate is
 * dropped at its first mismatching card (in the order the shuffle settles the positions). */
fl_status fl_ss_search(int generator, int scaling, int direction, uint32_t n,
                       const uint8_t *observed, uint64_t lo, uint64_t hi, uint64_t *found,
                       size_t max_found, size_t *n_found, uint64_t *steps);

/* ---------------------------------------------------------------- build info */
const char *fl_core_version(void);
const char *fl_core_compiler(void);
const char *fl_core_flags(void);

#endif
