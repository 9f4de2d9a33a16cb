//! The pseudo-random numbers of all test data: no dependency, the same sequence on every
//! machine, so the same seed always gives the same bytes.
//!
//! Two classic generators live here, because what the generators write (and which inputs the
//! mutation tests try) is fixed by the sequences each has always drawn:
//!
//! * [`Rng`], xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift
//!   generators, scrambled", 2016): the general one, used by the hprof and heap-dump
//!   generators, the DDM captures of the benchmarks and the mutation tests;
//! * [`SplitMix64`] (Steele, Lea and Flood, 2014), and its finaliser [`mix64`] as a hash: the
//!   heapprofd trace generator and the symbolize benchmark's addresses.

/// The golden-ratio increment of SplitMix64, `2^64 / φ`; also spreads small seeds.
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's finaliser: a 64-bit mixing function (every input bit changes about half of the
/// output bits).
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `x` scaled from `0..2^64` to `0..n` by a multiply-shift (Lemire): `(x * n) >> 64`, without
/// modulo bias worth caring about. 0 when `n` is 0.
#[inline]
pub fn scale(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// xorshift64*: 64 bits of state (the tuple field, which must not be 0), 64 bits per step.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// A generator whose state is `seed` spread by [`GOLDEN_GAMMA`] (and made odd, so never 0):
    /// small neighbouring seeds give unrelated sequences.
    pub fn seeded(seed: u64) -> Self {
        Rng(seed.wrapping_mul(GOLDEN_GAMMA) | 1)
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` by modulo (0 when `n` is 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// An index below `n` by modulo (0 when `n` is 0): [`Rng::below`] for `usize`.
    #[inline]
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// A number below `n` (at most `2^32`) from the high 32 bits by a multiply-shift:
    /// `((bits >> 32) * n) >> 32`.
    #[inline]
    pub fn below_hi32(&mut self, n: u64) -> u64 {
        ((self.next_u64() >> 32) * n) >> 32
    }
}

/// SplitMix64: a counter advanced by [`GOLDEN_GAMMA`] (the tuple field) and passed through
/// [`mix64`]; any state is valid.
#[derive(Debug, Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        mix64(self.0)
    }

    /// An index below `n` by [`scale`] (0 when `n` is 0).
    #[inline]
    pub fn scaled(&mut self, n: usize) -> usize {
        scale(self.next_u64(), n as u64) as usize
    }

    /// An index below `n` biased towards 0 (the product of two uniform 32-bit halves, scaled),
    /// so that some choices are much more frequent than others.
    #[inline]
    pub fn biased(&mut self, n: usize) -> usize {
        let x = self.next_u64();
        let p = (x & 0xffff_ffff) * (x >> 32);
        scale(p, n as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift64_star_reference_values() {
        // First outputs from state 1, as the published algorithm gives them.
        let mut r = Rng(1);
        assert_eq!(r.next_u64(), 0x47E4_CE4B_896C_DD1D);
        assert_eq!(Rng::seeded(0).0, 1);
        assert_eq!(Rng::seeded(1).0, GOLDEN_GAMMA);
        let mut r = Rng(42);
        assert!((0..1000).all(|_| r.below(7) < 7 && r.index(0) == 0 && r.below_hi32(10) < 10));
    }

    #[test]
    fn splitmix64_reference_values() {
        // The reference implementation's first outputs from seed 0.
        let mut s = SplitMix64(0);
        assert_eq!(s.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(s.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(scale(u64::MAX, 10), 9);
        assert_eq!(scale(0, 10), 0);
        assert!((0..1000).all(|_| s.scaled(5) < 5 && s.biased(8) < 8));
    }
}
