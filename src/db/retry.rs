//! Retrying a connection that failed for a reason that may pass: full-jitter exponential backoff
//! with a bounded number of attempts and a bounded total time.
//!
//! Full jitter (a delay drawn uniformly from zero to the capped exponential) keeps a fleet of
//! periodic jobs that failed together from retrying together: the expected retry rate stays flat
//! instead of arriving in waves that hit the server just as it recovers.

use std::time::Duration;

use rand::Rng;

/// When and how often to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first.
    pub retries: u32,
    /// The first backoff window.
    pub base: Duration,
    /// The largest backoff window.
    pub cap: Duration,
    /// No retry starts after this much time since the first attempt.
    pub budget: Duration,
}

impl Default for RetryPolicy {
    /// No retries.
    fn default() -> Self {
        Self::new(0)
    }
}

impl RetryPolicy {
    /// `retries` attempts after the first, within a minute in all.
    pub fn new(retries: u32) -> Self {
        Self {
            retries,
            base: Duration::from_millis(250),
            cap: Duration::from_secs(8),
            budget: Duration::from_secs(60),
        }
    }

    /// The backoff window before attempt `attempt` (1 for the first retry): base × 2^(attempt−1),
    /// capped.
    pub fn window(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.base.saturating_mul(factor).min(self.cap)
    }

    /// A full-jitter delay before attempt `attempt`: uniform in [0, window].
    pub fn delay(&self, attempt: u32, rng: &mut impl Rng) -> Duration {
        let window = self.window(attempt).as_secs_f64();
        Duration::from_secs_f64(rng.random_range(0.0..=window))
    }

    /// Whether attempt `attempt` may start, `elapsed` after the first one began, if it would
    /// first wait `delay`.
    pub fn allows(&self, attempt: u32, elapsed: Duration, delay: Duration) -> bool {
        attempt <= self.retries && elapsed + delay <= self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    #[test]
    fn windows_double_up_to_the_cap() {
        let p = RetryPolicy::new(10);
        assert_eq!(p.window(1), Duration::from_millis(250));
        assert_eq!(p.window(2), Duration::from_millis(500));
        assert_eq!(p.window(4), Duration::from_secs(2));
        assert_eq!(p.window(10), Duration::from_secs(8));
        assert_eq!(p.window(100), Duration::from_secs(8));
    }

    #[test]
    fn delays_are_spread_over_the_whole_window() {
        let p = RetryPolicy::new(10);
        let mut rng = StdRng::seed_from_u64(7);
        let delays: Vec<Duration> = (0..1000).map(|_| p.delay(4, &mut rng)).collect();
        assert!(delays.iter().all(|d| *d <= Duration::from_secs(2)));
        // Full jitter: some delays near zero, some near the window, mean near half of it.
        assert!(delays.iter().any(|d| *d < Duration::from_millis(100)));
        assert!(delays.iter().any(|d| *d > Duration::from_millis(1900)));
        let mean = delays.iter().sum::<Duration>().as_secs_f64() / delays.len() as f64;
        assert!((0.85..1.15).contains(&mean), "mean {mean}");
    }

    #[test]
    fn attempts_and_time_are_bounded() {
        let p = RetryPolicy::new(3);
        assert!(p.allows(3, Duration::ZERO, Duration::ZERO));
        assert!(!p.allows(4, Duration::ZERO, Duration::ZERO));
        assert!(!p.allows(1, Duration::from_secs(59), Duration::from_secs(2)));
        assert!(!RetryPolicy::new(0).allows(1, Duration::ZERO, Duration::ZERO));
    }
}
