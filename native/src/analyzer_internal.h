/* Declarations shared by the combinatorial analyzer's translation units (analyzer.c: the
 * entry points; analyzer_core.c: the hand and dealer DAGs, the dealer-distribution cache
 * and the main (unsplit) pass; analyzer_split.c: the split and all-bust computations).
 * The method is in analyzer.c's header comment. */
#ifndef FELTLAB_ANALYZER_INTERNAL_H
#define FELTLAB_ANALYZER_INTERNAL_H

#include "feltlab_core.h"
#include "internal.h"

#define NV 10
#define NODE_CAP 3200 /* multisets of values 1..10 with sum <= 21: 3083 */
#define DSTATE_CAP 2048
#define HASH_BITS 13
#define HASH_SIZE (1u << HASH_BITS)
#define MAXK 10
#define NODE_DEPTH 32 /* more cards than any dealer's or hand's draw */
#define DHASH_SIZE 4096u
/* busting plays weighed in the all-bust term of a split played / of one not played (under
 * "original and busted", where the term could make it the better play) */
#define FL_AN_ALL_BUST_BUDGET 150000000L
#define FL_AN_ALL_BUST_BUDGET_UNPLAYED 2000000L
#define AN_LANES 8 /* compositions in one lane-parallel dealer pass */

typedef struct {
    uint8_t cnt[NV];
    uint8_t n, hard;
    int16_t child[NV]; /* -1: bust */
} an_node;

typedef struct {
    uint8_t d[NV];
    uint8_t nd;
    int16_t next[NV]; /* >= 0 state, < 0: -(1 + outcome) */
} an_dstate;

enum { OUT_BUST = 5, OUT_BJ = 6, N_OUT = 7 };

/* one dealer state's edges as the passes read them: to later states, to a final total (17..21,
 * blackjack) one card value each, and the bust as the range of values bust_lo.. (a hard total
 * busts on every card from some value up) */
typedef struct {
    uint8_t nd, nnext, nstop, bust_lo; /* bust_lo == NV: no bust */
    double bust_d;                     /* the state's own cards of values bust_lo.. */
    uint8_t next_v[NV], stop_v[NV], stop_o[NV];
    int16_t next_s[NV];
} an_dplan;

/* composition -> dealer distribution cache (per up card) */
typedef struct {
    uint64_t *keys;
    int32_t *slot;
    uint32_t cap; /* power of two */
    uint32_t used;
    double (*dist)[N_OUT];
    uint32_t dcap;
} an_cache;

typedef struct {
    const fl_analyzer_rules *r;
    an_node *nodes;
    int nn;
    uint64_t *hkeys;
    int16_t *hidx;
    an_dstate *ds;
    an_dplan *dplan; /* by dealer state, DSTATE_CAP */
    int nds;
    int dmax_nd; /* most cards drawn in a dealer state */
    uint64_t *dkeys;
    int16_t *didx;
    double *dwork; /* DSTATE_CAP x AN_LANES, zero between passes (dealer_pass_lanes) */
    uint64_t *keybuf; /* 2 x NODE_CAP: removed-card keys to fill ahead */
    uint8_t *seen;    /* NODE_CAP: nodes walked (analyzer_split.c) */
    an_cache cache;
    /* per up card */
    int up;          /* 1..10 */
    int hole_x;      /* excluded hole value index (peek), -1 none */
    int bj_x;        /* value index completing a dealer blackjack, -1 none */
    int32_t s0[NV];  /* shoe less the up card */
    int32_t n0;
    double *stand, *hit, *best, *dbl, *nobj, *pbj;
    double (*vec)[3];    /* the strategy's play of an unsplit hand: P(+1), P(0), P(-1) */
    double (*svec)[3];   /* standing */
    double (*hvec)[3];   /* hitting, then the strategy */
    double (*dvec)[4];   /* doubling, two-card hands: P(-2), P(-1), P(0), P(+2) */
    uint8_t *dec; /* 0 stand 1 hit 2 double (two-card nodes) */
    uint8_t *valid;
    /* split pass */
    double *vk;
    int32_t *stamp;
    int32_t cur_stamp;
    uint8_t *pdec;    /* CDP1 and CDP: the optimal split-hand play at k = 2, by node */
    int32_t *pstamp;  /* pdec valid where pstamp == cur_pstamp (one pair, one up card) */
    int32_t cur_pstamp;
    long ab_budget; /* busting plays left to weigh in the all-bust enumeration of a split */
    int ab_failed;  /* the enumeration ran out of budget: correction not added */
    int last_split_approx;
    int split_p;  /* pair value index */
    int split_k;  /* pair cards removed (including the hand's own) */
    struct dl_cache *dl_cache; /* analyzer_dist.c: the dealer's distributions of one up card */
    int err;
} an_ctx;

static inline uint64_t key_of(const uint8_t *cnt) {
    uint64_t k = 0;
    for (int i = 0; i < NV; i++) k |= (uint64_t)cnt[i] << (6 * i);
    return k;
}

static inline uint32_t hash64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* draw probabilities of the next player card from comp (total N), hole-conditioned */
static inline void draw_probs(const an_ctx *c, const int32_t *comp, int32_t N,
                              double p[NV]) {
    int x = c->hole_x;
    if (x < 0 || N < 2 || N - comp[x] <= 0) {
        for (int v = 0; v < NV; v++) p[v] = N > 0 && comp[v] > 0 ? (double)comp[v] / N : 0.0;
        return;
    }
    double den = (double)(N - 1) * (double)(N - comp[x]);
    for (int v = 0; v < NV; v++) {
        double num = (double)comp[v] * (double)(N - 1 - comp[x] + (v == x));
        p[v] = comp[v] > 0 ? num / den : 0.0;
    }
}

static inline int best_total(int hard, int ace, int *soft) {
    int s = ace && hard <= 11;
    if (soft) *soft = s;
    return hard + (s ? 10 : 0);
}

static inline int node_total(const an_node *a, int *soft) {
    return best_total(a->hard, a->cnt[0] > 0, soft);
}

/* expectation per unit against the dealer's distribution, excluding a dealer blackjack */
static inline double stand_nobj(const double d[N_OUT], int t) {
    double ev = d[OUT_BUST];
    for (int o = 0; o < 5; o++) {
        int dt = 17 + o;
        if (t > dt)
            ev += d[o];
        else if (t < dt)
            ev -= d[o];
    }
    return ev;
}

static inline int may_double(const fl_analyzer_rules *r, const an_node *a) {
    if (a->n != 2) return 0;
    int soft, t = node_total(a, &soft);
    return fl_double_allowed(r->double_on, soft, (unsigned)t);
}

static inline int comp_of(const an_ctx *c, const an_node *a, int extra_v, int extra_n,
                          int32_t *comp) {
    int32_t N = 0;
    for (int v = 0; v < NV; v++) {
        comp[v] = c->s0[v] - a->cnt[v] - (v == extra_v ? extra_n : 0);
        if (comp[v] < 0) return -1;
        N += comp[v];
    }
    return N;
}

/* the strategy table's action (fl_table_action) for a hand: stand at 21 or more */
static inline int table_action(const an_ctx *c, const an_node *a) {
    int soft, t = node_total(a, &soft);
    if (t >= 21) return FL_ACT_STAND;
    return soft ? c->r->soft[t][c->up] : c->r->hard[t][c->up];
}

/* analyzer_core.c */
int node_find(const an_ctx *c, const uint8_t *cnt);
int build_nodes(an_ctx *c);
int build_dealer(an_ctx *c, int up);
void dealer_pass(an_ctx *c, const int32_t *comp, int32_t N, double out[N_OUT]);
/* the composition s0 less the removed cards of key_of `removed_key`, and its size */
void comp_of_key(const an_ctx *c, uint64_t removed_key, int32_t comp[NV], int32_t *N);
/* dealer_pass for AN_LANES compositions at once, the hole card's value excl (-1: none)
 * excluded at the first draw; work: nds x AN_LANES doubles, zero before and after */
void dealer_pass_lanes(const an_ctx *c, int excl, const int32_t (*comp)[NV], const int32_t *N,
                       double *restrict work, double (*out)[N_OUT]);
/* the cache filled for the n removed-card keys (the lane-parallel pass, hole-conditioned as
 * dealer_pass) ahead of their cached_dist_key lookups */
void cached_dist_fill(an_ctx *c, const uint64_t *keys, int n);
const double *cached_dist(an_ctx *c, const uint8_t *removed_extra, int extra_v, int extra_n);
const double *cached_dist_key(an_ctx *c, uint64_t removed_key);
void cache_reset(an_cache *ca);
void main_pass(an_ctx *c);

/* analyzer_split.c */
/* the split's value without the all-bust term (split_all_bust), which is added only where
 * split_needs_all_bust: no hole card, a dealer blackjack taking the original wager (and the
 * busted ones), a blackjack possible under the up card */
double split_ev(an_ctx *c, int P);
int split_needs_all_bust(const an_ctx *c);
/* the all-bust term of a split of pair value index P; c->last_split_approx set when its
 * enumeration weighed more than `budget` busting plays (0 returned) */
double split_all_bust(an_ctx *c, int P, long budget);
/* a split hand's play (split_action) */
enum { SPLIT_STAND = 0, SPLIT_HIT = 1, SPLIT_DOUBLE = 2 };
int split_action(const an_ctx *c, int i);

/* analyzer_dist.c */
/* frees the split distribution's dealer cache (analyzer_dist.c) */
void split_distribution_release(an_ctx *c);
void split_distribution(an_ctx *c, int P, double value, int value_exact,
                        double out[FL_AN_SPLIT_NETS], double *approx);

#endif
