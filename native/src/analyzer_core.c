/* The combinatorial analyzer's hand and dealer DAGs, the dealer-distribution cache and the
 * main (unsplit) pass (method: analyzer.c's header comment). */
#include <stdlib.h>
#include <string.h>

#include "analyzer_internal.h"

int node_find(const an_ctx *c, const uint8_t *cnt) {
    uint64_t k = key_of(cnt) + 1;
    uint32_t h = hash64(k) & (HASH_SIZE - 1);
    while (c->hkeys[h]) {
        if (c->hkeys[h] == k) return c->hidx[h];
        h = (h + 1) & (HASH_SIZE - 1);
    }
    return -1;
}

int build_nodes(an_ctx *c) {
    memset(&c->nodes[0], 0, sizeof c->nodes[0]);
    c->nn = 1;
    {
        uint64_t k = key_of(c->nodes[0].cnt) + 1;
        uint32_t h = hash64(k) & (HASH_SIZE - 1);
        c->hkeys[h] = k;
        c->hidx[h] = 0;
    }
    for (int i = 0; i < c->nn; i++) {
        for (int v = 0; v < NV; v++) {
            an_node *a = &c->nodes[i];
            int hard = a->hard + v + 1;
            if (hard > 21) {
                a->child[v] = -1;
                continue;
            }
            uint8_t cnt[NV];
            memcpy(cnt, a->cnt, NV);
            cnt[v]++;
            int j = node_find(c, cnt);
            if (j < 0) {
                if (c->nn >= NODE_CAP) return 0;
                j = c->nn++;
                an_node *b = &c->nodes[j];
                memcpy(b->cnt, cnt, NV);
                b->n = (uint8_t)(a->n + 1);
                b->hard = (uint8_t)hard;
                uint64_t k = key_of(cnt) + 1;
                uint32_t h = hash64(k) & (HASH_SIZE - 1);
                while (c->hkeys[h]) h = (h + 1) & (HASH_SIZE - 1);
                c->hkeys[h] = k;
                c->hidx[h] = (int16_t)j;
            }
            c->nodes[i].child[v] = (int16_t)j;
        }
    }
    return 1;
}

static int dealer_stands(const fl_analyzer_rules *r, int hard, int ace) {
    int soft = ace && hard <= 11;
    int t = hard + (soft ? 10 : 0);
    return t > 17 || (t == 17 && !(soft && r->h17));
}

/* the dealer's drawn-multiset DAG for up card value `up` (1..10), in BFS order */
int build_dealer(an_ctx *c, int up) {
    an_dstate *ds = c->ds;
    memset(&ds[0], 0, sizeof ds[0]);
    memset(c->dkeys, 0, sizeof(*c->dkeys) * DHASH_SIZE);
    int n = 1;
    for (int i = 0; i < n; i++) {
        int hard0 = up, ace0 = up == 1;
        for (int v = 0; v < NV; v++) {
            hard0 += ds[i].d[v] * (v + 1);
            ace0 |= v == 0 && ds[i].d[v];
        }
        for (int v = 0; v < NV; v++) {
            int hard = hard0 + v + 1, ace = ace0 || v == 0;
            if (ds[i].nd == 0 && ((up == 1 && v == 9) || (up == 10 && v == 0))) {
                ds[i].next[v] = -(1 + OUT_BJ);
                continue;
            }
            if (hard > 21) {
                ds[i].next[v] = -(1 + OUT_BUST);
                continue;
            }
            if (dealer_stands(c->r, hard, ace)) {
                int t = hard + (ace && hard <= 11 ? 10 : 0);
                ds[i].next[v] = (int16_t)(-(1 + (t - 17)));
                continue;
            }
            /* find or add the state d + v among states of nd + 1 cards (all after i) */
            uint8_t d[NV];
            memcpy(d, ds[i].d, NV);
            d[v]++;
            uint64_t key = key_of(d) + 1;
            uint32_t h = hash64(key) & (DHASH_SIZE - 1);
            int j = -1;
            while (c->dkeys[h]) {
                if (c->dkeys[h] == key) {
                    j = c->didx[h];
                    break;
                }
                h = (h + 1) & (DHASH_SIZE - 1);
            }
            if (j < 0) {
                if (n >= DSTATE_CAP) return 0;
                j = n++;
                memset(&ds[j], 0, sizeof ds[j]);
                memcpy(ds[j].d, d, NV);
                ds[j].nd = (uint8_t)(ds[i].nd + 1);
                c->dkeys[h] = key;
                c->didx[h] = (int16_t)j;
            }
            ds[i].next[v] = (int16_t)j;
        }
    }
    c->nds = n;
    c->dmax_nd = 0;
    for (int i = 0; i < n; i++)
        if (ds[i].nd > c->dmax_nd) c->dmax_nd = ds[i].nd;
    for (int s = 0; s < n; s++) { /* the passes' view of each state's edges */
        const an_dstate *st = &ds[s];
        an_dplan *pl = &c->dplan[s];
        memset(pl, 0, sizeof *pl);
        pl->nd = st->nd;
        pl->bust_lo = NV;
        while (pl->bust_lo > 0 && st->next[pl->bust_lo - 1] == -(1 + OUT_BUST)) pl->bust_lo--;
        for (int v = pl->bust_lo; v < NV; v++) pl->bust_d += st->d[v];
        for (int v = 0; v < pl->bust_lo; v++) {
            int nx = st->next[v];
            if (nx >= 0) {
                pl->next_v[pl->nnext] = (uint8_t)v;
                pl->next_s[pl->nnext++] = (int16_t)nx;
            } else {
                pl->stop_v[pl->nstop] = (uint8_t)v;
                pl->stop_o[pl->nstop++] = (uint8_t)(-nx - 1);
            }
        }
    }
    return c->dmax_nd < NODE_DEPTH;
}

/* dealer outcome distribution for composition comp (counts, total N): the pass of
 * dealer_pass_lanes on one lane (the same operations in the same order, so the same bits as
 * any of its lanes), hole-conditioned by c->hole_x */
static void dealer_pass_one(const an_ctx *c, int excl, const int32_t (*comp)[NV],
                            const int32_t *N, double *restrict work, double (*out)[N_OUT]);

void dealer_pass(an_ctx *c, const int32_t *comp, int32_t N, double out[N_OUT]) {
    dealer_pass_one(c, c->hole_x, (const int32_t(*)[NV])comp, &N, c->dwork,
                    (double(*)[N_OUT])out);
}

/*
 * The dealer's pass for L compositions at once (L = AN_LANES, or 1 for dealer_pass), lane by
 * lane the same sums; the lanes are independent, so the compiler vectorises them, and on
 * x86-64 Linux an AVX2 clone is chosen at load time where the CPU has it.  No clamp: a state
 * off no card of a value has probability 0, so its negative "cards left" add 0.
 */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void dealer_pass_n(const an_ctx *c, int excl, const int32_t (*comp)[NV],
                                 const int32_t *N, double *restrict work, double (*out)[N_OUT],
                                 const int L) {
    const an_dstate *ds = c->ds;
    const an_dplan *plan = c->dplan;
    double cl[NV][AN_LANES], suf[NV + 1][AN_LANES], inv[NODE_DEPTH][AN_LANES];
    double o[N_OUT][AN_LANES];
    for (int v = 0; v < NV; v++)
        for (int l = 0; l < L; l++) cl[v][l] = (double)comp[l][v];
    for (int l = 0; l < L; l++) suf[NV][l] = 0.0;
    for (int v = NV - 1; v >= 0; v--)
        for (int l = 0; l < L; l++) suf[v][l] = suf[v + 1][l] + cl[v][l];
    for (int k = 0; k <= c->dmax_nd; k++)
        for (int l = 0; l < L; l++)
            inv[k][l] = N[l] - k > 0 ? 1.0 / (double)(N[l] - k) : 0.0;
    memset(o, 0, sizeof o);
    for (int l = 0; l < L; l++) work[l] = 1.0;
    for (int s = 0; s < c->nds; s++) {
        const an_dplan *pl = &plan[s];
        double *ps = work + (size_t)s * L;
        double sc[AN_LANES];
        int x = s == 0 ? excl : -1;
        if (x >= 0) /* the hole card: not the blackjack's (peek), 1 / (N - comp_x) */
            for (int l = 0; l < L; l++) {
                double den = (double)(N[l] - comp[l][x]);
                sc[l] = den > 0.0 ? ps[l] / den : 0.0;
            }
        else
            for (int l = 0; l < L; l++) sc[l] = ps[l] * inv[pl->nd][l];
        for (int l = 0; l < L; l++) ps[l] = 0.0; /* zero again for the next pass */
        for (int i = 0; i < pl->nnext; i++) {
            int v = pl->next_v[i];
            if (v == x) continue;
            double dv = (double)ds[s].d[v];
            double *row = work + (size_t)pl->next_s[i] * L;
            for (int l = 0; l < L; l++) row[l] += sc[l] * (cl[v][l] - dv);
        }
        for (int i = 0; i < pl->nstop; i++) {
            int v = pl->stop_v[i];
            if (v == x) continue;
            double dv = (double)ds[s].d[v];
            double *row = o[pl->stop_o[i]];
            for (int l = 0; l < L; l++) row[l] += sc[l] * (cl[v][l] - dv);
        }
        if (pl->bust_lo < NV) {
            double dx = x >= pl->bust_lo ? (double)ds[s].d[x] : 0.0;
            for (int l = 0; l < L; l++) {
                double left = suf[pl->bust_lo][l] - pl->bust_d;
                if (x >= pl->bust_lo) left -= cl[x][l] - dx;
                o[OUT_BUST][l] += sc[l] * left;
            }
        }
    }
    for (int k = 0; k < N_OUT; k++)
        for (int l = 0; l < L; l++) out[l][k] = o[k][l];
}

/* the pass with AN_LANES lanes (batches of compositions) and with one (a single composition:
 * dealer_pass); work then holds one double a state */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("avx2", "default")))
#endif
void dealer_pass_lanes(const an_ctx *c, int excl, const int32_t (*comp)[NV], const int32_t *N,
                       double *restrict work, double (*out)[N_OUT]) {
    dealer_pass_n(c, excl, comp, N, work, out, AN_LANES);
}

static void dealer_pass_one(const an_ctx *c, int excl, const int32_t (*comp)[NV],
                            const int32_t *N, double *restrict work, double (*out)[N_OUT]) {
    dealer_pass_n(c, excl, comp, N, work, out, 1);
}

const double *cached_dist(an_ctx *c, const uint8_t *removed_extra, int extra_v,
                          int extra_n) {
    /* composition: s0 less `removed_extra` (a node's counts) less extra_n cards of extra_v */
    uint8_t rem[NV];
    memcpy(rem, removed_extra, NV);
    if (extra_n) rem[extra_v] = (uint8_t)(rem[extra_v] + extra_n);
    return cached_dist_key(c, key_of(rem));
}

/* the cache slot of the removed cards' key_of (each count under 64), added when new (*fresh
 * set, the distribution not yet computed); -1 when out of memory (c->err set) */
static int32_t cache_slot(an_ctx *c, uint64_t removed_key, int *fresh) {
    uint64_t k = removed_key + 1;
    an_cache *ca = &c->cache;
    *fresh = 0;
    uint32_t h = hash64(k) & (ca->cap - 1);
    while (ca->keys[h]) {
        if (ca->keys[h] == k) return ca->slot[h];
        h = (h + 1) & (ca->cap - 1);
    }
    if (ca->used * 2 >= ca->cap || ca->used >= ca->dcap) {
        /* grow both */
        uint32_t ncap = ca->cap * 2;
        uint64_t *nk = calloc(ncap, sizeof *nk);
        int32_t *ns = calloc(ncap, sizeof *ns);
        double(*nd)[N_OUT] = realloc(ca->dist, sizeof(*nd) * ncap);
        if (!nk || !ns || !nd) {
            free(nk);
            free(ns);
            if (nd) ca->dist = nd;
            c->err = 1;
            return -1;
        }
        ca->dist = nd;
        ca->dcap = ncap;
        for (uint32_t i = 0; i < ca->cap; i++)
            if (ca->keys[i]) {
                uint32_t j = hash64(ca->keys[i]) & (ncap - 1);
                while (nk[j]) j = (j + 1) & (ncap - 1);
                nk[j] = ca->keys[i];
                ns[j] = ca->slot[i];
            }
        free(ca->keys);
        free(ca->slot);
        ca->keys = nk;
        ca->slot = ns;
        ca->cap = ncap;
        h = hash64(k) & (ca->cap - 1);
        while (ca->keys[h]) h = (h + 1) & (ca->cap - 1);
    }
    uint32_t slot = ca->used++;
    ca->keys[h] = k;
    ca->slot[h] = (int32_t)slot;
    *fresh = 1;
    return (int32_t)slot;
}

void comp_of_key(const an_ctx *c, uint64_t removed_key, int32_t comp[NV], int32_t *N) {
    *N = 0;
    for (int v = 0; v < NV; v++) {
        comp[v] = c->s0[v] - (int32_t)((removed_key >> (6 * v)) & 63u);
        *N += comp[v];
    }
}

/* the same by the removed cards' key_of (each count under 64) */
const double *cached_dist_key(an_ctx *c, uint64_t removed_key) {
    int fresh;
    int32_t slot = cache_slot(c, removed_key, &fresh);
    if (slot < 0) return NULL;
    if (fresh) {
        int32_t comp[NV], N;
        comp_of_key(c, removed_key, comp, &N);
        dealer_pass(c, comp, N, c->cache.dist[slot]);
    }
    return c->cache.dist[slot];
}

void cached_dist_fill(an_ctx *c, const uint64_t *keys, int n) {
    int32_t lane_slot[AN_LANES], comp[AN_LANES][NV], N[AN_LANES];
    uint64_t lane_key[AN_LANES];
    double out[AN_LANES][N_OUT];
    int i = 0;
    while (i < n && !c->err) {
        int m = 0;
        for (; i < n && m < AN_LANES; i++) {
            int fresh;
            int32_t slot = cache_slot(c, keys[i], &fresh);
            if (slot < 0) return;
            if (!fresh) continue;
            lane_slot[m] = slot;
            lane_key[m++] = keys[i];
        }
        if (m == 0) break;
        for (int l = 0; l < AN_LANES; l++) comp_of_key(c, lane_key[l < m ? l : 0], comp[l], &N[l]);
        dealer_pass_lanes(c, c->hole_x, (const int32_t(*)[NV])comp, N, c->dwork, out);
        for (int l = 0; l < m; l++) memcpy(c->cache.dist[lane_slot[l]], out[l], sizeof out[l]);
    }
}

void cache_reset(an_cache *ca) {
    memset(ca->keys, 0, sizeof(*ca->keys) * ca->cap);
    ca->used = 0;
}

/* ------------------------------------------------------------ main (unsplit) pass */

void main_pass(an_ctx *c) {
    const fl_analyzer_rules *r = c->r;
    int cdz = r->strategy != FL_AN_TABLE; /* CDZ-, CDP1, CDP: the same pre-split play */
    { /* every hand of two or more cards stands against the dealer somewhere: fill ahead */
        uint64_t *keys = c->keybuf;
        int n = 0;
        for (int i = c->nn - 1; i >= 1; i--) {
            const an_node *a = &c->nodes[i];
            int32_t comp[NV];
            if (a->n >= 2 && comp_of(c, a, 0, 0, comp) >= 0) keys[n++] = key_of(a->cnt);
        }
        cached_dist_fill(c, keys, n);
    }
    for (int i = c->nn - 1; i >= 1; i--) {
        const an_node *a = &c->nodes[i];
        int32_t comp[NV];
        int32_t N = comp_of(c, a, 0, 0, comp);
        c->valid[i] = N >= 0;
        if (N < 0 || a->n < 2) continue;
        int soft, t = node_total(a, &soft);
        const double *d = cached_dist(c, a->cnt, 0, 0);
        if (!d) return;
        c->nobj[i] = stand_nobj(d, t);
        c->pbj[i] = d[OUT_BJ];
        {
            double w = d[OUT_BUST], pu = 0.0;
            for (int o = 0; o < 5; o++) {
                if (t > 17 + o) w += d[o];
                if (t == 17 + o) pu += d[o];
            }
            c->svec[i][0] = w;
            c->svec[i][1] = pu;
            c->svec[i][2] = 1.0 - w - pu;
        }
        double st = c->nobj[i] - d[OUT_BJ]; /* an unsplit live hand loses one unit */
        c->stand[i] = st;
        double p[NV];
        draw_probs(c, comp, N, p);
        double hit = 0.0;
        double hv[3] = {0.0, 0.0, 0.0};
        if (t < 21) {
            for (int v = 0; v < NV; v++) {
                if (p[v] == 0.0) continue;
                int j = a->child[v];
                hit += p[v] * (j < 0 ? -1.0 : c->best[j]);
                if (j < 0) {
                    hv[2] += p[v];
                } else {
                    for (int k = 0; k < 3; k++) hv[k] += p[v] * c->vec[j][k];
                }
            }
        } else {
            hit = -2.0; /* never hit 21 */
            hv[2] = 1.0;
        }
        memcpy(c->hvec[i], hv, sizeof hv);
        c->hit[i] = hit;
        int take_hit;
        if (cdz) {
            take_hit = t < 21 && hit > st;
        } else {
            int act = table_action(c, a);
            take_hit = t < 21 && (act == FL_ACT_HIT || act == FL_ACT_DOUBLE_ELSE_HIT);
        }
        c->dec[i] = (uint8_t)take_hit;
        c->best[i] = take_hit ? hit : st;
        memcpy(c->vec[i], take_hit ? c->hvec[i] : c->svec[i], sizeof c->vec[i]);
        if (a->n == 2) {
            double ld = r->peek ? 0.0 : (r->enhc_takes == FL_TAKES_ALL ? -2.0 : -1.0);
            double dv = 0.0, dd[4] = {0.0, 0.0, 0.0, 0.0};
            for (int v = 0; v < NV; v++) {
                if (p[v] == 0.0) continue;
                int j = a->child[v];
                if (j < 0) {
                    dv += p[v] * -2.0;
                    dd[0] += p[v];
                } else {
                    int st2, t2 = node_total(&c->nodes[j], &st2);
                    const double *dj = cached_dist(c, c->nodes[j].cnt, 0, 0);
                    if (!dj) return;
                    dv += p[v] * (2.0 * stand_nobj(dj, t2) + dj[OUT_BJ] * ld);
                    double w = dj[OUT_BUST], pu = 0.0;
                    for (int o = 0; o < 5; o++) {
                        if (t2 > 17 + o) w += dj[o];
                        if (t2 == 17 + o) pu += dj[o];
                    }
                    double lose = 1.0 - w - pu - dj[OUT_BJ];
                    dd[3] += p[v] * w;
                    dd[2] += p[v] * pu;
                    dd[0] += p[v] * lose;
                    dd[ld == -1.0 ? 1 : 0] += p[v] * dj[OUT_BJ];
                }
            }
            c->dbl[i] = dv;
            memcpy(c->dvec[i], dd, sizeof dd);
        }
    }
}
