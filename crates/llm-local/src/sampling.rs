//! Choosing the next token from the model's scores: the highest score without a temperature
//! (greedy), else a draw from the softmax at that temperature, narrowed to the smallest set of
//! tokens whose probabilities reach `top_p` when one is given. Seeded, so a request with a
//! seed draws the same tokens every time. Own code rather than candle-transformers' sampler,
//! which would put that crate (a catalogue of models the engine does not use) in every build.

/// Temperatures below this are greedy: dividing by them would overflow the softmax.
const GREEDY_BELOW: f64 = 1e-7;

/// How the next token is picked, with the random state of its draws.
#[derive(Debug, Clone)]
pub(crate) struct Sampler {
    temperature: Option<f64>,
    top_p: Option<f64>,
    random: SplitMix64,
}

/// Every score was minus infinity or not a number: no token can be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("no token can be sampled: every score is -inf or NaN")]
pub(crate) struct NothingToSample;

impl Sampler {
    /// `temperature` `None` (or below 1e-7) samples greedily; `top_p` applies only with a
    /// temperature, and only inside (0, 1).
    pub(crate) fn new(seed: u64, temperature: Option<f64>, top_p: Option<f64>) -> Self {
        Self {
            temperature: temperature.filter(|t| *t >= GREEDY_BELOW),
            top_p: top_p.filter(|p| *p > 0.0 && *p < 1.0),
            random: SplitMix64(seed),
        }
    }

    /// The next token's index in `scores`.
    pub(crate) fn sample(&mut self, scores: &[f32]) -> Result<u32, NothingToSample> {
        let Some(temperature) = self.temperature else {
            return greedy(scores);
        };
        let mut weights = softmax(scores, temperature)?;
        if let Some(top_p) = self.top_p {
            keep_nucleus(&mut weights, top_p);
        }
        let total: f64 = weights.iter().sum();
        let mut target = self.random.unit() * total;
        let mut last = None;
        for (index, weight) in weights.iter().enumerate() {
            if *weight <= 0.0 {
                continue;
            }
            last = Some(index);
            if target < *weight {
                return Ok(index as u32);
            }
            target -= weight;
        }
        // Rounding can leave a sliver of `target` after the last weight: that token it is.
        last.map(|index| index as u32).ok_or(NothingToSample)
    }
}

/// The first of the highest scores (NaN never wins).
fn greedy(scores: &[f32]) -> Result<u32, NothingToSample> {
    let mut best: Option<(usize, f32)> = None;
    for (index, score) in scores.iter().enumerate() {
        if !score.is_nan() && best.is_none_or(|(_, top)| *score > top) {
            best = Some((index, *score));
        }
    }
    best.map(|(index, _)| index as u32).ok_or(NothingToSample)
}

/// Probabilities at `temperature`, in f64 so a 49k-token vocabulary sums without loss.
fn softmax(scores: &[f32], temperature: f64) -> Result<Vec<f64>, NothingToSample> {
    let top = scores
        .iter()
        .copied()
        .filter(|s| s.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    if top == f32::NEG_INFINITY {
        return Err(NothingToSample);
    }
    let top = f64::from(top);
    Ok(scores
        .iter()
        .map(|s| {
            if s.is_nan() {
                0.0
            } else {
                ((f64::from(*s) - top) / temperature).exp()
            }
        })
        .collect())
}

/// Zeroes every weight outside the smallest set of the most likely tokens whose share of the
/// total reaches `top_p` (the token that crosses it stays).
fn keep_nucleus(weights: &mut [f64], top_p: f64) {
    let total: f64 = weights.iter().sum();
    let mut order: Vec<usize> = (0..weights.len()).filter(|i| weights[*i] > 0.0).collect();
    order.sort_by(|a, b| weights[*b].total_cmp(&weights[*a]));
    let mut kept = 0.0;
    for index in order {
        if kept >= top_p * total {
            weights[index] = 0.0;
        } else {
            kept += weights[index];
        }
    }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a seeded generator small enough to own, and
/// plenty for drawing tokens (it is not for secrets).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1), from the top 53 bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_first_highest_score_and_skips_nan() {
        let mut sampler = Sampler::new(7, None, None);
        assert_eq!(sampler.sample(&[0.5, 2.0, 2.0, -1.0]), Ok(1));
        assert_eq!(sampler.sample(&[f32::NAN, 0.1, 0.3]), Ok(2));
        assert_eq!(sampler.sample(&[f32::NEG_INFINITY, -3.0]), Ok(1));
        assert_eq!(sampler.sample(&[f32::NAN]), Err(NothingToSample));
        assert_eq!(sampler.sample(&[]), Err(NothingToSample));
    }

    #[test]
    fn a_tiny_temperature_is_greedy() {
        let mut sampler = Sampler::new(7, Some(1e-9), Some(0.5));
        for _ in 0..20 {
            assert_eq!(sampler.sample(&[0.0, 0.1, 3.0, 2.9]), Ok(2));
        }
    }

    /// How often each of three tokens is drawn; a failed draw counts as the third.
    fn draw_counts(mut sampler: Sampler, scores: &[f32; 3], draws: usize) -> [usize; 3] {
        let mut counts = [0usize; 3];
        for _ in 0..draws {
            counts[sampler.sample(scores).unwrap_or(2) as usize] += 1;
        }
        counts
    }

    #[test]
    fn draws_follow_the_softmax() {
        // ln 3 apart: the second token is three times as likely as the first.
        let scores = [0.0, 3f32.ln(), f32::NEG_INFINITY];
        let counts = draw_counts(Sampler::new(42, Some(1.0), None), &scores, 40_000);
        assert_eq!(counts[2], 0, "a masked token was drawn");
        let share = counts[1] as f64 / 40_000.0;
        assert!(
            (share - 0.75).abs() < 0.01,
            "share of the likelier token {share}"
        );
    }

    #[test]
    fn top_p_keeps_only_the_nucleus() {
        // Probabilities 0.6, 0.3, 0.1 at temperature 1: top_p 0.7 keeps the first two.
        let scores = [0.6f32.ln(), 0.3f32.ln(), 0.1f32.ln()];
        let counts = draw_counts(Sampler::new(3, Some(1.0), Some(0.7)), &scores, 30_000);
        assert_eq!(counts[2], 0, "a token outside the nucleus was drawn");
        let share = counts[0] as f64 / 30_000.0;
        assert!(
            (share - 2.0 / 3.0).abs() < 0.01,
            "share of the first token {share}"
        );
    }

    #[test]
    fn the_same_seed_draws_the_same_tokens() {
        let scores: Vec<f32> = (0..50).map(|i| (i as f32 * 0.37).sin()).collect();
        let draws = |seed| {
            let mut sampler = Sampler::new(seed, Some(0.8), Some(0.9));
            (0..30)
                .map(|_| sampler.sample(&scores).unwrap_or(u32::MAX))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(11), draws(11));
        assert_ne!(draws(11), draws(12));
    }

    #[test]
    fn a_draw_is_never_a_masked_token_when_every_other_is_masked() {
        let mut scores = vec![f32::NEG_INFINITY; 100];
        scores[37] = -50.0;
        let mut sampler = Sampler::new(5, Some(2.0), Some(0.5));
        for _ in 0..100 {
            assert_eq!(sampler.sample(&scores), Ok(37));
        }
        assert_eq!(
            sampler.sample(&[f32::NEG_INFINITY; 4]),
            Err(NothingToSample)
        );
    }
}
